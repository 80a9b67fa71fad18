"""Model references: the strings that name a local model, and how they resolve to directories.

Everywhere a model directory is accepted (``distill --base``, the in-process ``transformers:``
backend, GRPO's frozen models), these resolve with :func:`resolve_model_ref`:

* ``DIR`` / ``transformers:DIR`` — a model directory (``config.json``);
* ``transformers:BASE?adapter=ADAPTER`` — a base model plus a LoRA adapter directory;
* ``DIR`` / ``transformers:DIR`` where ``DIR/manifest.json`` exists — a ``distill`` output:
  base + adapter for LoRA outputs, the directory itself for full fine-tunes;
* ``.../manifest.json`` — the same, naming the manifest file;
* ``gguf:PACKAGE_OR_PATH`` (also with ``?adapter=ADAPTER``) — a GGUF base, converted once into
  the user cache (:func:`agent_runtime.models.resolve_model_dir`); the result names that cache
  directory, so a manifest's ``base_model`` is an ordinary model directory.

This lives with the models, not the trainers that write manifests: the backends resolve
references too, and models never import trainers. Of a manifest it reads only the fields that
say which model it holds (:class:`DistillOutput`); the trainers own the full format. The text
itself is parsed by :class:`~agent_runtime.models.model_ref.ModelRef`; this module adds what
touches the disk.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from agent_runtime.errors import AgentRuntimeError, ConfigError, TrainingError
from agent_runtime.models.gguf import resolve_model_dir
from agent_runtime.models.model_ref import GGUF_PREFIX, TRANSFORMERS_PREFIX, ModelRef, split_model_ref

#: The file that makes a directory a distill output.
MANIFEST = "manifest.json"


class ResolvedModel(BaseModel):
    """A base model directory and, for LoRA outputs, the adapter on top of it."""

    base: Path
    adapter: Path | None = None

    def reference(self) -> str:
        """The ``transformers:`` model string that names this model."""
        ref = f"{TRANSFORMERS_PREFIX}{self.base}"
        return f"{ref}?adapter={self.adapter}" if self.adapter else ref


class DistillOutput(BaseModel):
    """The fields of a distill manifest that name the model it holds (the rest is ignored here)."""

    model_config = ConfigDict(extra="ignore")

    kind: Literal["lora", "full"]
    base_model: str
    output: str

    def resolved(self) -> ResolvedModel:
        out = Path(self.output)
        return (
            ResolvedModel(base=Path(self.base_model), adapter=out)
            if self.kind == "lora"
            else ResolvedModel(base=out)
        )


def _distill_output(path: Path) -> DistillOutput:
    p = path / MANIFEST if path.is_dir() else path
    try:
        return DistillOutput.model_validate_json(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TrainingError(f"cannot read {p}: {exc}") from None
    except ValidationError as exc:
        raise TrainingError(f"{p} is not a distill manifest: {exc.errors()[0]['msg']}") from None


def _gguf_dir(ref: ModelRef) -> Path:
    """The converted cache directory of a ``gguf:`` base (converting it on first use)."""
    try:
        return resolve_model_dir(ref)
    except AgentRuntimeError as exc:
        raise TrainingError(f"cannot use the base {ref.base}: {exc.message}", hint=exc.hint) from None


def is_distill_output(ref: ModelRef) -> bool:
    """Whether a ``dir`` reference names a distill output (its directory or its manifest)."""
    return ref.kind == "dir" and (
        ref.location.endswith(MANIFEST) or (Path(ref.location).expanduser() / MANIFEST).is_file()
    )


def resolve_model_ref(spec: str | Path | ModelRef) -> ResolvedModel:
    """Resolve a model reference (module docstring) to directories that exist.

    Raises :class:`ConfigError` for malformed references (an endpoint included: it has no
    directory) and :class:`TrainingError` for directories that are not models.
    """
    ref = ModelRef.parse(spec)
    if ref.kind == "endpoint":
        raise ConfigError(f"{ref} is a server, not a local model", hint="name a model directory")
    path = _gguf_dir(ref) if ref.kind == "gguf" else Path(ref.location).expanduser().resolve()
    if path.name == MANIFEST or (path / MANIFEST).is_file():
        if ref.adapter is not None:
            raise ConfigError(f"{path} is a distill output; it already names its adapter")
        resolved = _distill_output(path).resolved()
    else:
        adapter = Path(ref.adapter).expanduser().resolve() if ref.adapter else None
        resolved = ResolvedModel(base=path, adapter=adapter)
    if not (resolved.base / "config.json").is_file():
        raise TrainingError(
            f"{resolved.base} is not a model directory (no config.json)",
            hint="pass a directory written by save_pretrained, or a distill output",
        )
    if resolved.adapter is not None and not (resolved.adapter / "adapter_config.json").is_file():
        raise TrainingError(f"{resolved.adapter} is not a LoRA adapter (no adapter_config.json)")
    return resolved


__all__ = [
    "GGUF_PREFIX",
    "MANIFEST",
    "TRANSFORMERS_PREFIX",
    "DistillOutput",
    "ResolvedModel",
    "is_distill_output",
    "resolve_model_ref",
    "split_model_ref",
]
