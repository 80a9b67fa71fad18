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
say which model it holds (:class:`DistillOutput`); the trainers own the full format.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal
from urllib.parse import parse_qs

from pydantic import BaseModel, ConfigDict, ValidationError

from agent_runtime.errors import AgentRuntimeError, ConfigError, TrainingError

TRANSFORMERS_PREFIX = "transformers:"
GGUF_PREFIX = "gguf:"
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


def _gguf_dir(spec: str) -> Path:
    """The converted cache directory of a ``gguf:`` base (converting it on first use)."""
    from agent_runtime.models.gguf import resolve_model_dir

    try:
        return resolve_model_dir(spec)
    except AgentRuntimeError as exc:
        raise TrainingError(f"cannot use the base {spec}: {exc.message}", hint=exc.hint) from None


def split_model_ref(spec: str | Path) -> tuple[str, str]:
    """A model reference's base part (``DIR`` or ``gguf:NAME``) and its query (``adapter=A``)."""
    path_part, _, query = str(spec).removeprefix(TRANSFORMERS_PREFIX).partition("?")
    return path_part, query


def resolve_model_ref(spec: str | Path) -> ResolvedModel:
    """Resolve a model reference (module docstring) to directories that exist.

    Raises :class:`ConfigError` for malformed references and :class:`TrainingError` for
    directories that are not models.
    """
    path_part, query = split_model_ref(spec)
    if path_part.startswith(GGUF_PREFIX):
        path_part = str(_gguf_dir(path_part))
    if not path_part:
        raise ConfigError(f"model reference {str(spec)!r} names no directory")
    options = parse_qs(query, keep_blank_values=True) if query else {}
    unknown = set(options) - {"adapter"}
    if unknown:
        raise ConfigError(
            f"unknown option(s) {', '.join(sorted(unknown))} in model reference {str(spec)!r}",
            hint="the only option is ?adapter=DIR",
        )
    path = Path(path_part).expanduser().resolve()
    if path.name == MANIFEST or (path / MANIFEST).is_file():
        if options:
            raise ConfigError(f"{path} is a distill output; it already names its adapter")
        resolved = _distill_output(path).resolved()
    else:
        adapter = options.get("adapter", [None])[0]
        resolved = ResolvedModel(base=path, adapter=Path(adapter).expanduser().resolve() if adapter else None)
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
    "resolve_model_ref",
    "split_model_ref",
]
