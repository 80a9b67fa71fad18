"""Device driver speed: Android observe latency on SimPhone's adb endpoint, desktop screenshots under Xvfb.

Android: a SimPhone served on a free port, driven by ``AndroidDevice`` through real adbutils.
Each iteration changes the screen (Clock ↔ home, not timed) so nothing is served from a render
cache, then times the screenshot and the UI dump one after the other (target: their sum ≤ 150 ms,
median) and a full ``observe()`` (screenshot, dump and focus in parallel).

Desktop: a private 1920×1080 Xvfb showing a busy Tk window; times ``DesktopDevice.screenshot()``
(mss grab + JPEG, the default; target ≤ 20 ms median; its CPU time is reported too, since wall
time on a busy machine includes waiting for a core), the PNG variant and the raw grab.
Skipped (reported as such) when Xvfb is not installed.

    python benchmarks/devices.py [--iterations 30] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

ANDROID_TARGET_MS = 150.0
DESKTOP_TARGET_MS = 20.0

#: A window full of text and colour so that JPEG/PNG encoding has real work to do.
BUSY_WINDOW = """
import tkinter as tk
root = tk.Tk(); root.geometry("1920x1080+0+0")
canvas = tk.Canvas(root, width=1920, height=1080, bg="white", highlightthickness=0); canvas.pack()
for row in range(54):
    for col in range(6):
        x, y = col * 320, row * 20
        canvas.create_rectangle(x, y, x + 40, y + 18, fill="#%06x" % ((row * 7919 + col * 104729) % 0xFFFFFF))
        canvas.create_text(x + 46, y + 9, anchor="w", text=f"Row {row} col {col}: the quick brown fox 0123")
root.mainloop()
"""


def _median_ms(fn: Callable[[], Any], n: int, before: Callable[[], Any] | None = None) -> float:
    times = []
    for _ in range(n):
        if before is not None:
            before()
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _median_cpu_ms(fn: Callable[[], Any], n: int) -> float:
    """CPU time of this thread per call: the cost itself, whatever else the machine is running."""
    times = []
    for _ in range(n):
        start = time.thread_time()
        fn()
        times.append((time.thread_time() - start) * 1000)
    return statistics.median(times)


def bench_android(n: int) -> dict[str, Any]:
    from agent_runtime.actions import OpenApp, SystemButton
    from agent_runtime.devices.android.device import AndroidDevice, AndroidOptions
    from agent_runtime.simphone import SimPhone
    from agent_runtime.simphone.adb import AdbServer

    os.environ["ADBUTILS_ADB_PATH"] = "/bin/true"  # never start a real adb server
    with AdbServer([SimPhone(0)]) as server:
        device = AndroidDevice(
            None, AndroidOptions(adb_port=server.port, start_server=False, settle_timeout_s=0)
        )
        flip = [False]

        def change_screen() -> None:
            flip[0] = not flip[0]
            device.execute(OpenApp(text="Clock") if flip[0] else SystemButton(button="Home"))

        device.observe()  # warm up: thread pool, server version
        sums, shots, dumps = [], [], []
        for _ in range(n):
            change_screen()
            t0 = time.perf_counter()
            device.screenshot()
            t1 = time.perf_counter()
            xml, error = device.ui_dump()
            t2 = time.perf_counter()
            if xml is None:
                raise RuntimeError(f"UI dump failed: {error}")
            shots.append((t1 - t0) * 1000)
            dumps.append((t2 - t1) * 1000)
            sums.append((t2 - t0) * 1000)
        observe = _median_ms(device.observe, n, before=change_screen)
        device.close()
    median = statistics.median(sums)
    return {
        "android_screenshot_median_ms": round(statistics.median(shots), 2),
        "android_ui_dump_median_ms": round(statistics.median(dumps), 2),
        "android_screenshot_plus_xml_median_ms": round(median, 2),
        "android_observe_median_ms": round(observe, 2),
        "android_target_ms": ANDROID_TARGET_MS,
        "android_ok": median <= ANDROID_TARGET_MS,
    }


def bench_desktop(n: int) -> dict[str, Any]:
    if shutil.which("Xvfb") is None:
        return {"desktop_skipped": "Xvfb is not installed (apt-get install xvfb)", "desktop_ok": True}
    from agent_runtime.devices.desktop.device import DesktopDevice, DesktopOptions
    from agent_runtime.devices.desktop.xvfb import Xvfb

    with Xvfb(1920, 1080) as xvfb:
        env = {**os.environ, "DISPLAY": xvfb.display}
        window = subprocess.Popen([sys.executable, "-c", BUSY_WINDOW], env=env, stderr=subprocess.DEVNULL)
        try:
            time.sleep(1.5)  # let the window map and draw
            jpeg = DesktopDevice(xvfb.display, DesktopOptions(accessibility=False))
            png = DesktopDevice(xvfb.display, DesktopOptions(accessibility=False, image_format="png"))
            for dev in (jpeg, png):
                dev.screenshot()
            result = {
                "desktop_screen": f"{jpeg.screen_size.width}x{jpeg.screen_size.height}",
                "desktop_screenshot_jpeg_median_ms": round(_median_ms(jpeg.screenshot, n), 2),
                "desktop_screenshot_jpeg_cpu_median_ms": round(_median_cpu_ms(jpeg.screenshot, n), 2),
                "desktop_screenshot_png_median_ms": round(_median_ms(png.screenshot, n), 2),
                "desktop_grab_raw_median_ms": round(_median_ms(jpeg._grab, n), 2),
                "desktop_observe_median_ms": round(_median_ms(jpeg.observe, n), 2),
                "desktop_jpeg_bytes": len(jpeg.screenshot()),
            }
            jpeg.close()
            png.close()
        finally:
            window.terminate()
            window.wait(timeout=5)
    result["desktop_target_ms"] = DESKTOP_TARGET_MS
    result["desktop_ok"] = result["desktop_screenshot_jpeg_median_ms"] <= DESKTOP_TARGET_MS
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=30, help="timed repetitions per measurement")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {
        "benchmark": "devices",
        "iterations": args.iterations,
        "load_average_1m": round(os.getloadavg()[0], 2),  # other work on the machine skews wall times
    }
    result.update(bench_android(args.iterations))
    result.update(bench_desktop(args.iterations))
    result["ok"] = bool(result["android_ok"] and result["desktop_ok"])
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>40}: {value}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
