"""SimPhone speed: in-process step latency and latency over the adb endpoint with real adbutils.

In-process: one step = ``execute`` a tap (alternating between launcher icons and the Home
button, so every step changes the screen) + a PNG screenshot + the uiautomator XML, at
1080×2400, pinned to one CPU core where the OS allows. The virtual clock moves a minute between
steps (untimed), so the status bar differs and no frame is an exact repeat. Target: median ≤ 10 ms.

Over adb: an ``AdbServer`` on a free port and an unmodified ``adbutils`` client. Each iteration
changes the screen with ``input tap`` (timed apart), then times ``device.screenshot()`` and
``device.dump_hierarchy()`` (``uiautomator dump`` + ``sync:`` RECV). Target: the sum's median ≤ 150 ms.

Scale: ``--instances`` phones (200 by default) live in one process. Per phone: the resident
memory it adds (RSS with all of them built and stepped, minus RSS before, over their number)
and its cold start (constructor to first PNG screenshot, in a process that has drawn a phone
already; a new Python process to its first screenshot is reported apart). Then steps (tap +
PNG + XML) round-robin over all of them, pinned to one core: steps/s/core. Targets: ≤ 30 MB and
≤ 150 ms per phone.

    python benchmarks/simphone.py [--steps 200] [--adb-iterations 30] [--instances 200] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

IN_PROCESS_TARGET_MS = 10.0
ADB_TARGET_MS = 150.0
RSS_TARGET_MB = 30.0
COLD_START_TARGET_MS = 150.0
WIDTH, HEIGHT = 1080, 2400


def _stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"median_ms": round(statistics.median(ordered), 2), "p95_ms": round(p95, 2), "n": len(ordered)}


def _tap_targets(phone: Any) -> list[tuple[int, int]]:
    """Launcher icons interleaved with the Home button: every tap changes the screen."""
    home = phone.find("Home")
    icons = [
        phone.find(label) for label in ("Clock", "Notes", "Settings", "Calendar", "Contacts", "Messages")
    ]
    points = []
    for icon in icons:
        if icon is None or home is None:
            raise RuntimeError("the SimPhone launcher no longer shows the benchmark's icons")
        points += [icon.bounds.center, home.bounds.center]
    return points


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def bench_in_process(steps: int) -> dict[str, Any]:
    from agent_runtime.actions import Click
    from agent_runtime.simphone import SimPhone

    pinned = _pin()
    phone = SimPhone(0, width=WIDTH, height=HEIGHT)
    targets = _tap_targets(phone)
    for point in targets:  # warm-up: fonts, band caches
        phone.execute(Click(coordinate=point))
        phone.screenshot_png()
        phone.ui_xml()
    step_ms, exec_ms, png_ms, xml_ms = [], [], [], []
    for i in range(steps):
        action = Click(coordinate=targets[i % len(targets)])
        phone.advance_time(60)
        t0 = time.perf_counter()
        result = phone.execute(action)
        t1 = time.perf_counter()
        phone.screenshot_png()
        t2 = time.perf_counter()
        phone.ui_xml()
        t3 = time.perf_counter()
        if not result.ok:
            raise RuntimeError(f"benchmark tap failed: {result.error}")
        exec_ms.append((t1 - t0) * 1000)
        png_ms.append((t2 - t1) * 1000)
        xml_ms.append((t3 - t2) * 1000)
        step_ms.append((t3 - t0) * 1000)
    elapsed = sum(step_ms) / 1000
    step = _stats(step_ms)
    return {
        "step": step,
        "execute": _stats(exec_ms),
        "screenshot_png": _stats(png_ms),
        "ui_xml": _stats(xml_ms),
        "steps_per_s": round(steps / elapsed, 1),
        "pinned_to_one_core": pinned,
        "target_median_ms": IN_PROCESS_TARGET_MS,
        "ok": step["median_ms"] <= IN_PROCESS_TARGET_MS,
    }


def _rss_mb() -> float:
    """This process's resident memory now (Linux /proc; elsewhere the peak, from getrusage)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _pin() -> bool:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        return True
    return False


def bench_scale(instances: int, steps: int) -> dict[str, Any]:
    import gc

    from agent_runtime.actions import Click
    from agent_runtime.simphone import SimPhone

    pinned = _pin()
    SimPhone(10_000, width=WIDTH, height=HEIGHT).screenshot_png()  # the process's fonts and masks
    gc.collect()
    before = _rss_mb()
    phones: list[Any] = []
    cold_ms = []
    for seed in range(instances):
        start = time.perf_counter()
        phone = SimPhone(seed, width=WIDTH, height=HEIGHT)
        phone.screenshot_png()
        cold_ms.append((time.perf_counter() - start) * 1000)
        phones.append(phone)
    gc.collect()
    rss_built = (_rss_mb() - before) / instances
    targets = _tap_targets(phones[0])
    step_ms = []
    for i in range(steps):
        phone = phones[i % instances]
        phone.advance_time(60)
        t0 = time.perf_counter()
        phone.execute(Click(coordinate=targets[(i // instances) % len(targets)]))
        phone.screenshot_png()
        phone.ui_xml()
        step_ms.append((time.perf_counter() - t0) * 1000)
    gc.collect()
    rss_per = max(rss_built, (_rss_mb() - before) / instances)  # after the steps: caches filled
    cold = _stats(cold_ms)
    return {
        "instances": instances,
        "rss_mb_per_instance": round(rss_per, 2),
        "rss_mb_per_instance_fresh": round(rss_built, 2),
        "rss_mb_process": round(_rss_mb(), 1),
        "cold_start": cold,
        "new_process_to_first_screenshot_ms": round(_process_cold_start_ms(), 1),
        "step": _stats(step_ms),
        "steps_per_s_per_core": round(len(step_ms) / (sum(step_ms) / 1000), 1),
        "instances_per_gb": int(1024 / rss_per) if rss_per > 0 else None,
        "pinned_to_one_core": pinned,
        "targets": {"rss_mb_per_instance": RSS_TARGET_MB, "cold_start_median_ms": COLD_START_TARGET_MS},
        "ok": rss_per <= RSS_TARGET_MB and cold["median_ms"] <= COLD_START_TARGET_MS,
    }


def _process_cold_start_ms() -> float:
    """A new Python process: import SimPhone, build one, take its first screenshot."""
    import subprocess
    import sys

    code = (
        "import time; t = time.perf_counter(); from agent_runtime.simphone import SimPhone; "
        f"SimPhone(0, width={WIDTH}, height={HEIGHT}).screenshot_png(); "
        "print((time.perf_counter() - t) * 1000)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def bench_adb(iterations: int) -> dict[str, Any]:
    os.environ["ADBUTILS_ADB_PATH"] = "/bin/true"  # never start a real adb server
    from agent_runtime.simphone import SimPhone
    from agent_runtime.simphone.adb import AdbServer

    phone = SimPhone(0, width=WIDTH, height=HEIGHT)
    targets = _tap_targets(phone)
    with AdbServer([phone]) as server:
        os.environ["ANDROID_ADB_SERVER_PORT"] = str(server.port)
        import adbutils

        device = adbutils.AdbClient(host="127.0.0.1", port=server.port).device(phone.serial)
        tap_ms, shot_ms, dump_ms, both_ms = [], [], [], []
        for i in range(iterations + 2):
            point = targets[i % len(targets)]
            tap = _timed(lambda p=point: device.click(*p))
            shot = _timed(device.screenshot)
            dump = _timed(device.dump_hierarchy)
            if i < 2:
                continue  # warm-up
            tap_ms.append(tap)
            shot_ms.append(shot)
            dump_ms.append(dump)
            both_ms.append(shot + dump)
    both = _stats(both_ms)
    return {
        "tap": _stats(tap_ms),
        "screenshot": _stats(shot_ms),
        "dump_hierarchy": _stats(dump_ms),
        "screenshot_plus_dump": both,
        "target_median_ms": ADB_TARGET_MS,
        "ok": both["median_ms"] <= ADB_TARGET_MS,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="in-process steps to time")
    parser.add_argument("--adb-iterations", type=int, default=30, help="adb screenshot+dump rounds to time")
    parser.add_argument("--instances", type=int, default=200, help="phones in one process for the scale part")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    if args.instances < 1:
        parser.error("--instances must be at least 1")
    # adb first: the in-process parts pin this process to one core.
    adb = bench_adb(args.adb_iterations)
    scale = bench_scale(args.instances, max(args.steps, args.instances))  # before: its first phone
    in_process = bench_in_process(args.steps)
    report = {
        "screen": [WIDTH, HEIGHT],
        "in_process": in_process,
        "adb": adb,
        "scale": scale,
        "load_average_1m": round(os.getloadavg()[0], 2),  # other work on the machine skews every number
        "ok": in_process["ok"] and adb["ok"] and scale["ok"],
    }
    if args.json:
        print(json.dumps(report))
        return
    rows = [
        ("in-process step (tap+PNG+XML)", in_process["step"], f"≤ {IN_PROCESS_TARGET_MS:g} ms"),
        ("  execute(tap)", in_process["execute"], ""),
        ("  screenshot_png", in_process["screenshot_png"], ""),
        ("  ui_xml", in_process["ui_xml"], ""),
        ("adb input tap", adb["tap"], ""),
        ("adb screenshot()", adb["screenshot"], ""),
        ("adb dump_hierarchy()", adb["dump_hierarchy"], ""),
        ("adb screenshot + dump", adb["screenshot_plus_dump"], f"≤ {ADB_TARGET_MS:g} ms"),
    ]
    print(f"SimPhone at {WIDTH}x{HEIGHT}")
    print(f"{'measure':<32}{'median ms':>11}{'p95 ms':>9}  target")
    for name, stats, target in rows:
        print(f"{name:<32}{stats['median_ms']:>11.2f}{stats['p95_ms']:>9.2f}  {target}")
    print(f"in-process steps/s on one core: {in_process['steps_per_s']}")
    print(
        f"{scale['instances']} phones in one process: {scale['rss_mb_per_instance']} MB each "
        f"(≤ {RSS_TARGET_MB:g}), cold start median {scale['cold_start']['median_ms']} ms "
        f"(≤ {COLD_START_TARGET_MS:g}; a new process to its first screenshot "
        f"{scale['new_process_to_first_screenshot_ms']} ms), "
        f"{scale['steps_per_s_per_core']} steps/s/core over all of them"
    )
    print(f"machine load average (1 min): {report['load_average_1m']}")
    print("all targets met" if report["ok"] else "TARGET MISSED")


if __name__ == "__main__":
    main()
