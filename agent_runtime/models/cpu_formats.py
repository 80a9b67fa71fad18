"""Which number format each kernel of the fast decoder uses, decided by what the processor can do.

The batched engine's ``fast`` weights (:mod:`agent_runtime.models.decoder`) were first tuned on a
processor with native bfloat16 (AVX-512 BF16 / AMX), where a bfloat16 prefill is about twice as fast
as float32. On a processor without it (AVX2 + FMA, a common cloud and laptop class; AVX-512 without
its BF16 extension) torch emulates bfloat16 products, and a prefill runs 5–80× slower than in float32.
So the engine asks here, once per process, and decides per kernel:

* ``matmul`` — the dense products (prompt prefill, and decode products of weights not on a 4-bit
  grid, the output layer among them): ``bfloat16`` where the processor has it natively, else
  ``float32`` (then the model's own float32 weights serve them: no second copy);
* ``int4_decode`` — decode steps multiply weights that lie on a GGUF 4-bit grid with torch's
  4-bit kernel (``_weight_int4pack_mm_for_cpu``, bfloat16 activations in, float32 sums inside) when
  that kernel exists and is not slower than a dense product; it reads 8× fewer bytes than float32,
  and decode is bound by memory traffic.

What the processor can do (:class:`CpuCapability`) comes from torch's CPU capability, the flags in
``/proc/cpuinfo`` and two microbenchmarks of a few milliseconds (a bfloat16 against a float32
product of a prefill's shape; the 4-bit kernel against a dense one at one row). Measuring takes
about a tenth of a second, so the result is cached per machine in the user cache
(``$XDG_CACHE_HOME/agent-runtime/cpu-formats.json``), keyed by the processor, its flags and the torch
version. The choice itself (:func:`choose`) is a pure function of the capability, so tests inject
a processor with and without native bfloat16, and a changed rule needs no re-measuring.
``agent-runtime doctor`` and ``benchmarks/demo_model.py`` print both.

This module imports torch lazily (only to measure).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

#: Bump when :class:`CpuCapability` changes shape or the measurements change meaning.
CACHE_FORMAT = 1
#: CPU flags that matter to the choice (x86 ``flags``, Arm ``Features``), the rest are not kept.
RELEVANT_FLAGS = (
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512_vnni",
    "avx512_bf16",
    "avx_vnni",
    "amx_tile",
    "amx_bf16",
    "asimd",
    "sve",
    "bf16",
)
#: Flags that mean bfloat16 products run natively (x86: AVX-512 BF16 or AMX; Arm: BF16).
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16", "bf16")
#: A bfloat16 product this many times slower than float32 counts as emulated, whatever the flags
#: say (a torch build without the native kernels). Native bfloat16 measures ≤ 1×; emulated 5–80×.
EMULATED_SLOWDOWN = 2.0
#: The 4-bit kernel is kept while one row through it costs at most this many dense float32 rows
#: of a weight already in cache (the dense product's best case: out of cache it reads 8× more).
INT4_MAX_RATIO = 2.0

MatmulFormat = Literal["float32", "bfloat16"]


class CpuCapability(BaseModel):
    """What this processor and torch build can do, as :func:`detect` measured it."""

    model_config = ConfigDict(frozen=True)

    machine: str
    """``platform.machine()``: ``x86_64``, ``aarch64`` …"""
    name: str
    """The processor's model name (``/proc/cpuinfo``), or ``platform.processor()``."""
    isa: str
    """``torch.backends.cpu.get_cpu_capability()``: ``AVX2``, ``AVX512``, ``DEFAULT`` …"""
    flags: tuple[str, ...] | None
    """The :data:`RELEVANT_FLAGS` the processor reports; None where no flags can be read."""
    bf16_slowdown: float | None = None
    """Time of a prefill-shaped bfloat16 product over the float32 one (None: not measured)."""
    int4_ratio: float | None = None
    """Time of one row through the 4-bit kernel over a dense float32 row (None: no such kernel)."""

    @property
    def native_bf16(self) -> bool | None:
        """Whether the flags say bfloat16 is native; None when no flags could be read."""
        if self.flags is None:
            return None
        return any(f in self.flags for f in NATIVE_BF16_FLAGS)

    def describe(self) -> str:
        """One line for ``doctor`` and the benchmark."""
        flags = "flags unknown" if self.flags is None else " ".join(self.flags) or "no relevant flags"
        measured = []
        if self.bf16_slowdown is not None:
            measured.append(f"bf16 product {self.bf16_slowdown:.1f}× the float32 time")
        measured.append(
            "no 4-bit kernel" if self.int4_ratio is None else f"4-bit row {self.int4_ratio:.2f}× a dense one"
        )
        return f"{self.name} ({self.machine}, torch {self.isa}; {flags}; {', '.join(measured)})"


class KernelFormats(BaseModel):
    """The number formats the fast decoder uses on this processor (module docstring)."""

    model_config = ConfigDict(frozen=True)

    matmul: MatmulFormat
    """Dense products: prefill, and decode products of weights off a 4-bit grid."""
    int4_decode: bool
    """Decode products of weights on a 4-bit grid use the 4-bit kernel."""
    reason: str
    """Why, in one sentence (printed by ``doctor`` and the benchmark)."""

    def describe(self) -> str:
        decode = "4-bit kernel where the weights are on a 4-bit grid" if self.int4_decode else self.matmul
        return f"products in {self.matmul}, decode {decode} ({self.reason})"


def choose(cap: CpuCapability) -> KernelFormats:
    """The formats for a processor: bfloat16 products only where they are native, the 4-bit decode
    kernel where it exists and is not slower than a dense product (module docstring)."""
    native = cap.native_bf16
    slow = cap.bf16_slowdown
    if native is None:
        native = slow is not None and slow < EMULATED_SLOWDOWN
        why = "no CPU flags readable; " + (
            "bfloat16 not measured" if slow is None else f"bfloat16 measured {slow:.1f}× float32"
        )
    elif native and slow is not None and slow >= EMULATED_SLOWDOWN:
        native = False
        why = f"flags say native bfloat16 but torch runs it {slow:.1f}× slower than float32"
    elif native:
        why = "native bfloat16 (" + ", ".join(f for f in NATIVE_BF16_FLAGS if f in (cap.flags or ())) + ")"
    else:
        why = "no native bfloat16 (no avx512_bf16 / amx_bf16): torch would emulate it"
    int4 = cap.int4_ratio is not None and cap.int4_ratio <= INT4_MAX_RATIO
    if cap.int4_ratio is None:
        why += "; no 4-bit kernel"
    elif not int4:
        why += f"; the 4-bit kernel is {cap.int4_ratio:.1f}× a dense row"
    return KernelFormats(matmul="bfloat16" if native else "float32", int4_decode=int4, reason=why)


# --- reading the processor ----------------------------------------------------------------------


def _cpuinfo() -> tuple[str, tuple[str, ...] | None]:
    """(model name, relevant flags) from ``/proc/cpuinfo``; flags None where it cannot be read."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.processor() or platform.machine(), None
    name, found = "", None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key in ("model name", "hardware", "cpu model") and not name:
            name = value.strip()
        elif key in ("flags", "features") and found is None:
            words = set(value.split())
            found = tuple(f for f in RELEVANT_FLAGS if f in words)
    return name or platform.processor() or platform.machine(), found


def _best(fn: Callable[[], object], repeats: int, stop_after: float | None = None) -> float:
    """The fastest of ``repeats`` timed calls after one warm-up (stop early past ``stop_after`` s)."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
        if stop_after is not None and best > stop_after:
            break
    return best


def _measure() -> tuple[float, float | None]:
    """(bfloat16 / float32 time of a 64×576 by 576×1536 product, 4-bit / dense time of one row)."""
    import torch

    # One thread: a per-core ratio. Two threads on a loaded machine measure the scheduler instead
    # (one thread descheduled, the other waiting for it).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _measure_one_thread()
    finally:
        torch.set_num_threads(threads)


def _measure_one_thread() -> tuple[float, float | None]:
    import torch
    import torch.nn.functional as F  # noqa: N812 - the usual name

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(64, 576, generator=gen)
    w = torch.randn(1536, 576, generator=gen)
    f32 = _best(lambda: F.linear(x, w), 5)
    xb, wb = x.bfloat16(), w.bfloat16()
    # an emulated product is 5–80× slower: one timed call past 10× float32 is enough to know
    bf16 = _best(lambda: F.linear(xb, wb), 3, stop_after=10 * f32)
    row = x[:1]
    dense = _best(lambda: F.linear(row, w), 20)
    try:
        levels = torch.randint(0, 16, (1536, 576), dtype=torch.int32, generator=gen)
        packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(levels, 1)
        scales = torch.rand(576 // 32, 1536, 2, generator=gen).bfloat16()
        rowb = row.bfloat16()
        int4 = _best(lambda: torch.ops.aten._weight_int4pack_mm_for_cpu(rowb, packed, 32, scales), 20)
    except (AttributeError, RuntimeError, NotImplementedError):
        return bf16 / f32, None
    return bf16 / f32, int4 / dense


def _cache_file() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "agent-runtime" / "cpu-formats.json"


def _machine_key(name: str, isa: str, flags: tuple[str, ...] | None) -> str:
    import torch

    raw = json.dumps([CACHE_FORMAT, platform.machine(), name, isa, flags, torch.__version__])
    return hashlib.sha1(raw.encode("utf-8")).hexdigest()[:16]


def _read_cache(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_cache(path: Path, data: dict[str, object]) -> None:
    """Atomically (a concurrent process reads the old file or the new one, never half of one);
    a read-only cache only costs re-measuring next time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".cpu-formats-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=1)
        os.replace(tmp, path)
    except OSError:
        pass


def detect(*, use_cache: bool = True) -> CpuCapability:
    """This machine's capability: read from the user cache, or measured once and stored there."""
    import torch

    name, flags = _cpuinfo()
    isa = torch.backends.cpu.get_cpu_capability()
    key = _machine_key(name, isa, flags)
    path = _cache_file()
    stored = _read_cache(path) if use_cache else {}
    if key in stored:
        try:
            return CpuCapability.model_validate(stored[key])
        except ValidationError:
            pass
    bf16_slowdown, int4_ratio = _measure()
    cap = CpuCapability(
        machine=platform.machine(),
        name=name,
        isa=isa,
        flags=flags,
        bf16_slowdown=round(bf16_slowdown, 2),
        int4_ratio=None if int4_ratio is None else round(int4_ratio, 2),
    )
    if use_cache:
        _write_cache(path, {**stored, key: cap.model_dump(mode="json")})
    return cap


@functools.lru_cache(maxsize=1)
def current() -> KernelFormats:
    """The formats for this machine (detected once per process, cached per machine)."""
    return choose(detect())
