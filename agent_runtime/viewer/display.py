"""How the viewer says times and paths to a person.

A run of a few minutes records ``total_ms: 295420``; a person reads "4 min 55 s". A trace
records where things were on the machine that ran it (a model adapter's directory, a config
file), which means nothing to the person the page is mailed to and tells them about the
machine it came from: the page shows such a path relative to the run directory when it is
inside it, else by its last parts only.
"""

from __future__ import annotations

import math
import re
from pathlib import PurePosixPath, PureWindowsPath

#: An absolute path at the start of a value, or after a space or ``=`` / ``:`` / ``(``: POSIX
#: (``/home/…``), home (``~/…``) or Windows (``C:\\…``).
_ABSOLUTE = re.compile(r"(?:(?<=^)|(?<=[\s=(:,]))(?:~?/(?!/)|[A-Za-z]:[\\/])[^\s,;()\"']*")


def duration(ms: float) -> str:
    """``ms`` milliseconds as a person says them, to the precision that matters at that size.

    >>> [duration(v) for v in (0, 420.4, 4210, 42_400, 295_420, 3_780_000, 90_061_000)]
    ['0 ms', '420 ms', '4.2 s', '42 s', '4 min 55 s', '1 h 3 min', '25 h 1 min']
    >>> duration(float("nan")), duration(-5)
    ('?', '0 ms')
    """
    if not math.isfinite(ms):
        return "?"
    ms = max(0.0, ms)
    if ms < 1000:
        return f"{ms:.0f} ms"
    if ms < 10_000:
        return f"{ms / 1000:.1f} s"
    seconds = round(ms / 1000)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s" if seconds else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


def shown_path(path: str, run_dir: str = "") -> str:
    """``path`` as the page shows it: relative to ``run_dir`` when inside it, else its last two
    parts (``…/adapters/worker-lora``); a relative path or a name stays as it is.

    >>> shown_path("/home/ana/runs/r1/screens/0001.png", "/home/ana/runs/r1")
    'screens/0001.png'
    >>> shown_path("/home/ana/models/adapters/worker-lora"), shown_path("Qwen/Qwen3-VL-2B")
    ('…/adapters/worker-lora', 'Qwen/Qwen3-VL-2B')
    >>> shown_path("C:\\\\Users\\\\ana\\\\lora"), shown_path("~/lora")
    ('…/ana/lora', '…/lora')
    """
    windows = re.match(r"[A-Za-z]:[\\/]", path) is not None
    if not (path.startswith(("/", "~")) or windows):
        return path
    if run_dir and not windows:
        inside = PurePosixPath(path)
        if inside.is_relative_to(run_dir):
            return inside.relative_to(run_dir).as_posix() or "."
    parts = [p for p in (PureWindowsPath(path) if windows else PurePosixPath(path)).parts[1:] if p != "~"]
    return "…/" + "/".join(parts[-2:]) if parts else "…"


def without_paths(text: str, run_dir: str = "") -> str:
    """``text`` with every absolute path in it shown as :func:`shown_path` shows it.

    >>> without_paths("local:/home/ana/ckpt/worker (adapter /home/ana/a/b/lora)")
    'local:…/ckpt/worker (adapter …/b/lora)'
    >>> without_paths("served at http://localhost:8000/v1")
    'served at http://localhost:8000/v1'
    """
    return _ABSOLUTE.sub(lambda m: shown_path(m.group(0), run_dir), text)
