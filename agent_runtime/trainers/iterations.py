"""The ``OUT/iter_NNNN/`` folders of an iterative trainer: where a run starts, what it writes.

Online RL (:mod:`.online.loop`, TRPO and DGRPO) and Hi-Agent's GRPO
(:mod:`.hi_agent.grpo_trainer`) both run N iterations, and both leave the same kind of output,
which this module owns:

* ``OUT/iter_NNNN/`` — one folder per iteration, holding a LoRA adapter with its
  ``manifest.json`` (:func:`lora_manifest`: each folder is a complete distill output, so
  ``--base OUT/iter_0003`` works) and the trainer's state file, written last;
* resume — a run with ``resume`` continues after the last iteration whose folder holds every
  required file (its manifest and state), so one cut off while saving is replayed; a fresh run
  refuses to mix with earlier iterations unless told to overwrite them;
* ``OUT/metrics.jsonl`` — one JSON line per finished iteration;
* at the end, the last iteration's adapter is copied to ``OUT/`` itself, where ``distill``
  writes the run's manifest.

What an iteration does, and what its state file holds, stays with each trainer.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agent_runtime.errors import ConfigError
from agent_runtime.models.refs import MANIFEST, ResolvedModel
from agent_runtime.trainers.artifacts import DataSummary, Manifest, TrainingSummary, serve_info
from agent_runtime.trainers.base_config import TrainConfig
from agent_runtime.version import __version__

Echo = Callable[[str], None]
METRICS_FILE = "metrics.jsonl"
ITERATION_GLOB = "iter_[0-9][0-9][0-9][0-9]"
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")


def iteration_dir(out: Path, iteration: int) -> Path:
    return out / f"iter_{iteration:04d}"


def last_iteration(out: Path, required: tuple[str, ...]) -> int:
    """The last iteration whose folder holds every path in ``required`` (0 when none): an
    iteration cut off while saving is not one to resume from."""
    done = [
        int(p.name.removeprefix("iter_"))
        for p in out.glob(ITERATION_GLOB)
        if all((p / name).exists() for name in required)
    ]
    return max(done, default=0)


def clear_iterations(out: Path, *, overwrite: bool, what: str, also: tuple[str, ...]) -> None:
    """Before a fresh (not resumed) run: refuse to mix with earlier iterations in ``out`` unless
    ``overwrite``, then delete them and the run-level files and folders named in ``also``."""
    existing = sorted(out.glob(ITERATION_GLOB))
    if not existing:
        return
    if not overwrite:
        raise ConfigError(
            f"{out} already holds {what} iterations", hint="pass --resume to continue, or --overwrite"
        )
    for target in (*existing, *(out / name for name in also)):
        shutil.rmtree(target) if target.is_dir() else target.unlink(missing_ok=True)


def copy_adapter(src: Path, dst: Path) -> None:
    """Copy the LoRA adapter in ``src`` to ``dst`` (which must exist)."""
    for name in ADAPTER_FILES:
        shutil.copy2(src / name, dst / name)


class Iterations:
    """``OUT`` prepared for a run: cleared (fresh) or read for the iteration to resume after.

    ``state_file`` is the trainer's own state, written last in each iteration folder;
    ``required`` names further files an iteration must hold to count as finished, and ``also``
    the run-level files and folders a fresh run deletes besides the manifest and the metrics.
    """

    def __init__(
        self,
        out: Path,
        *,
        what: str,
        state_file: str,
        resume: bool,
        overwrite: bool,
        required: tuple[str, ...] = (),
        also: tuple[str, ...] = (),
    ) -> None:
        self.out = out
        if not resume:
            clear_iterations(out, overwrite=overwrite, what=what, also=(METRICS_FILE, MANIFEST, *also))
        self.start = last_iteration(out, (MANIFEST, state_file, *required)) if resume else 0
        out.mkdir(parents=True, exist_ok=True)

    def dir(self, iteration: int) -> Path:
        return iteration_dir(self.out, iteration)

    def remaining(self, iterations: int) -> range:
        """The iterations still to run, up to ``iterations`` in total."""
        return range(self.start + 1, iterations + 1)

    def last(self, iterations: int) -> Path:
        """The folder of the run's last iteration (the resumed one when none was left to run)."""
        return self.dir(max(self.start, iterations))

    def announce(self, echo: Echo) -> None:
        if self.start:
            echo(f"resuming after iteration {self.start}")

    def append_metrics(self, metrics: dict[str, Any]) -> None:
        with (self.out / METRICS_FILE).open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(metrics) + "\n")


def lora_manifest(
    method: str,
    cfg: TrainConfig,
    opts: BaseModel,
    resolved: ResolvedModel,
    output: Path,
    *,
    data: DataSummary,
    training: TrainingSummary,
    extra_hyperparameters: dict[str, Any] | None = None,
) -> Manifest:
    """The manifest of an iteration's adapter: trained by ``method`` from ``resolved`` with ``cfg``
    (the per-run paths left out) and the run options ``opts`` (under ``rl``, ``resume`` left out)."""
    return Manifest(
        kind="lora",
        method=method,
        role=cfg.role,
        base_model=str(resolved.base),
        init_adapter=str(resolved.adapter) if resolved.adapter else None,
        output=str(output),
        agent_runtime_version=__version__,
        data=data,
        hyperparameters={
            **cfg.model_dump(mode="json", exclude={"base", "output_dir", "progress"}),
            "rl": opts.model_dump(mode="json", exclude={"resume"}),
            **(extra_hyperparameters or {}),
        },
        training=training,
        serve=serve_info("lora", cfg.role, resolved.base, output, cfg.lora_r),
    )
