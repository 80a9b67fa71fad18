"""Samples → Hugging Face datasets in TRL's conversational format, images as the role saw them.

A recorded message holds images as refs (``{"type": "image_ref", "ref": "screens/0003.png",
"size": [w, h]}``); here each becomes a ``{"type": "image"}`` placeholder and the screenshot,
resized to the recorded ``size`` (the size ``smart_resize`` gave the role), goes into the
``images`` column in the same order — what TRL's vision collators pair with the placeholders.

Columns: SFT ``prompt``, ``completion``, ``images``; DPO ``prompt``, ``chosen``, ``rejected``,
``images``. Rows are encoded in batches so a large dataset never holds all decoded screenshots.

Text is untrusted: a screen, a task or a sampled reply may spell out a vision placeholder
(``<|image_pad|>``), which the processor would expand into an image slot that no image fills —
the collator then fails, or pairs images with the wrong slots. In a vision-language row every text
part and every completion goes through :func:`~agent_runtime.models.hf.defuse_vision_text`, the
function the in-process server applies to the prompts it is sent, so training sees the tokens
serving sees and only ``{"type": "image"}`` parts make image slots.

A text-only base (``text_only=True``: a causal LM without a vision tower, such as a ``gguf:`` base)
gets no ``images`` column — TRL treats any dataset with one as a vision dataset — and plain-string
message contents, the text parts joined with newlines exactly as the in-process engine joins them
at inference (:func:`agent_runtime.models.engine.to_text_messages`), so the model is trained on the
prompts it will be served. Runs recorded in a screenshot observation mode hold images and cannot
train such a model; that is a :class:`TrainingError` naming the fix.

This module imports ``datasets`` and PIL lazily (inside the builders).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from agent_runtime.errors import TrainingError

if TYPE_CHECKING:
    from datasets import Dataset, Features
    from PIL.Image import Image

BATCH = 128
T = TypeVar("T")


def replay_counts(new: dict[str, int], pool: dict[str, int], ratio: float) -> dict[str, int]:
    """Rows to replay per role: ``ratio · new rows`` of that role (halves round up), at most its pool.

    Replay is per role so a role with much new data cannot crowd another's old data out, and
    a role with no new rows replays nothing (its adapter weights get no new gradient to undo).

    >>> replay_counts({"worker": 10, "manager": 3}, {"worker": 100, "manager": 2}, 1.5)
    {'manager': 2, 'worker': 15}
    >>> replay_counts({"worker": 0}, {"worker": 50, "reflector": 9}, 2.0)
    {'reflector': 0, 'worker': 0}
    """
    if ratio < 0:
        raise TrainingError(f"replay ratio {ratio} is negative", hint="use 0 (no replay) or more")
    return {role: min(pool[role], int(ratio * new.get(role, 0) + 0.5)) for role in sorted(pool)}


def mix_replay(
    new: Sequence[T], pool: Sequence[T], *, ratio: float, seed: int, role: Callable[[T], str]
) -> tuple[list[T], dict[str, int]]:
    """``new`` plus a seeded draw from ``pool`` (earlier data: what the start was trained on and
    earlier iterations' rows), :func:`replay_counts` rows per role; also the counts drawn.

    Continuing a converged adapter on a few templates alone moves every weight towards them and
    away from the rest (the forgetting issue 33 measured); mixing the old rows back keeps the
    gradient anchored to what the adapter already does. Rows keep their relative order.
    """
    by_role: dict[str, list[int]] = {}
    for i, row in enumerate(pool):
        by_role.setdefault(role(row), []).append(i)
    new_counts: dict[str, int] = {}
    for row in new:
        new_counts[role(row)] = new_counts.get(role(row), 0) + 1
    counts = replay_counts(new_counts, {r: len(ix) for r, ix in by_role.items()}, ratio)
    rng = random.Random(seed)
    drawn = sorted(i for r, ix in sorted(by_role.items()) for i in rng.sample(ix, counts[r]))
    return [*new, *(pool[i] for i in drawn)], counts


def split_validation(n: int, *, fraction: float, max_rows: int, seed: int) -> tuple[list[int], list[int]]:
    """(train, validation) row indices: ``min(max_rows, fraction · n)`` rows (halves round up) held aside by
    a seeded draw, never all of them (at least one row trains). ``fraction`` 0: no validation.

    >>> split_validation(10, fraction=0.2, max_rows=8, seed=0)[1].__len__()
    2
    >>> split_validation(10, fraction=0.5, max_rows=3, seed=0)[1].__len__()
    3
    >>> split_validation(1, fraction=0.5, max_rows=3, seed=0)
    ([0], [])
    """
    k = min(max_rows, int(fraction * n + 0.5), n - 1) if n > 1 else 0
    held = set(random.Random(seed).sample(range(n), max(k, 0)))
    return [i for i in range(n) if i not in held], sorted(held)


class PromptSource(Protocol):
    """Anything with recorded messages and the directory their image refs resolve against."""

    messages: list[dict[str, Any]]

    @property
    def image_root(self) -> str: ...


class ImageLoader:
    """Opens screenshots once per (file, size) while a dataset is being built."""

    def __init__(self, capacity: int = 64) -> None:
        self.capacity = capacity
        self._cache: dict[tuple[str, tuple[int, int] | None], Image] = {}

    def load(self, root: str | Path, ref: str, size: Sequence[int] | None) -> Image:
        from PIL import Image as PILImage
        from PIL import UnidentifiedImageError

        base = Path(root).resolve()
        path = (base / ref).resolve()
        if base not in path.parents:
            raise TrainingError(f"image ref {ref!r} points outside {base}")
        target = (int(size[0]), int(size[1])) if size else None
        key = (str(path), target)
        if key not in self._cache:
            try:
                with PILImage.open(path) as img:
                    rgb = img.convert("RGB")
            except (OSError, UnidentifiedImageError) as exc:
                raise TrainingError(f"cannot read screenshot {path}: {exc}") from None
            if target is not None and rgb.size != target:
                rgb = rgb.resize(target, PILImage.Resampling.BICUBIC)
            if len(self._cache) >= self.capacity:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = rgb
        return self._cache[key]


def to_conversational(
    messages: list[dict[str, Any]], root: str | Path, loader: ImageLoader
) -> tuple[list[dict[str, Any]], list[Image]]:
    """Recorded messages → (TRL messages with image placeholders, images in order); text defused."""
    from agent_runtime.models.hf import defuse_vision_text

    out: list[dict[str, Any]] = []
    images: list[Image] = []
    for message in messages:
        role = message.get("role")
        if role not in ("system", "user", "assistant"):
            raise TrainingError(f"recorded message has unsupported role {role!r}")
        content = message.get("content")
        parts: list[dict[str, Any]] = []
        if isinstance(content, str):
            parts.append({"type": "text", "text": defuse_vision_text(content)})
        for part in content if isinstance(content, list) else []:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                parts.append({"type": "text", "text": defuse_vision_text(str(part.get("text", "")))})
            elif kind == "image_ref":
                images.append(loader.load(root, str(part["ref"]), part.get("size")))
                parts.append({"type": "image", "text": None})
            else:
                raise TrainingError(
                    f"recorded message part of type {kind!r} cannot be turned into training data",
                    hint="traces store images as image_ref parts; was this run written by agent-runtime?",
                )
        out.append({"role": role, "content": parts})
    return out, images


def to_text_conversational(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Recorded messages → TRL messages with string contents, for a text-only model."""
    out: list[dict[str, str]] = []
    for message in messages:
        role = message.get("role")
        if role not in ("system", "user", "assistant"):
            raise TrainingError(f"recorded message has unsupported role {role!r}")
        content = message.get("content")
        if isinstance(content, str) or content is None:
            out.append({"role": role, "content": content or ""})
            continue
        texts: list[str] = []
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                texts.append(str(part.get("text", "")))
            elif kind == "image_ref":
                raise TrainingError(
                    "a recorded call holds a screenshot, but the base model is text-only",
                    hint="record the runs with observation = 'ui_tree' (agent-runtime simphone demos "
                    "--observation ui_tree), or train a vision-language base",
                )
            else:
                raise TrainingError(
                    f"recorded message part of type {kind!r} cannot be turned into training data",
                    hint="traces store images as image_ref parts; was this run written by agent-runtime?",
                )
        out.append({"role": role, "content": "\n".join(texts)})
    return out


def assistant(text: str, *, text_only: bool = False) -> list[dict[str, Any]]:
    """A completion in TRL's conversational form (string content for a text-only model; a
    vision-language model's text defused, see the module docstring)."""
    if text_only:
        return [{"role": "assistant", "content": text}]
    from agent_runtime.models.hf import defuse_vision_text

    return [{"role": "assistant", "content": [{"type": "text", "text": defuse_vision_text(text)}]}]


def _message_feature() -> Any:
    from datasets import List, Value

    return List(
        {"role": Value("string"), "content": List({"type": Value("string"), "text": Value("string")})}
    )


def _text_message_feature() -> Any:
    from datasets import List, Value

    return List({"role": Value("string"), "content": Value("string")})


def sft_features(*, text_only: bool = False) -> Features:
    from datasets import Features, Image, List

    if text_only:
        return Features({"prompt": _text_message_feature(), "completion": _text_message_feature()})
    return Features({"prompt": _message_feature(), "completion": _message_feature(), "images": List(Image())})


def dpo_features(*, text_only: bool = False) -> Features:
    from datasets import Features, Image, List

    if text_only:
        message = _text_message_feature()
        return Features({"prompt": message, "chosen": message, "rejected": message})
    return Features(
        {
            "prompt": _message_feature(),
            "chosen": _message_feature(),
            "rejected": _message_feature(),
            "images": List(Image()),
        }
    )


def _build(
    rows: Iterable[dict[str, Any]], features: Features, total: int, on_row: Callable[[], None] | None
) -> Dataset:
    from datasets import Dataset, concatenate_datasets

    parts: list[Dataset] = []
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if on_row is not None:
            on_row()
        if len(batch) == BATCH:
            parts.append(Dataset.from_list(batch, features=features))
            batch = []
    if batch or not parts:
        parts.append(Dataset.from_list(batch, features=features))
    if total == 0:
        raise TrainingError("no training samples", hint="loosen the filters or add runs")
    return parts[0] if len(parts) == 1 else concatenate_datasets(parts)


class SFTRecord(Protocol):
    messages: list[dict[str, Any]]
    completion: str

    @property
    def image_root(self) -> str: ...


def build_sft_dataset(
    records: Sequence[SFTRecord], *, on_row: Callable[[], None] | None = None, text_only: bool = False
) -> Dataset:
    """``prompt`` / ``completion`` / ``images`` rows, one per record (no ``images`` when text-only)."""
    loader = ImageLoader()

    def rows() -> Iterator[dict[str, Any]]:
        for r in records:
            if text_only:
                prompt = to_text_conversational(r.messages)
                yield {"prompt": prompt, "completion": assistant(r.completion, text_only=True)}
                continue
            prompt, images = to_conversational(r.messages, r.image_root, loader)
            yield {"prompt": prompt, "completion": assistant(r.completion), "images": images}

    return _build(rows(), sft_features(text_only=text_only), len(records), on_row)


class PreferenceRecord(Protocol):
    messages: list[dict[str, Any]]
    chosen: str
    rejected: str

    @property
    def image_root(self) -> str: ...


def build_dpo_dataset(
    records: Sequence[PreferenceRecord],
    *,
    on_row: Callable[[], None] | None = None,
    text_only: bool = False,
) -> Dataset:
    """``prompt`` / ``chosen`` / ``rejected`` / ``images`` rows, one per preference pair
    (no ``images`` when text-only)."""
    loader = ImageLoader()

    def rows() -> Iterator[dict[str, Any]]:
        for r in records:
            if text_only:
                yield {
                    "prompt": to_text_conversational(r.messages),
                    "chosen": assistant(r.chosen, text_only=True),
                    "rejected": assistant(r.rejected, text_only=True),
                }
                continue
            prompt, images = to_conversational(r.messages, r.image_root, loader)
            yield {
                "prompt": prompt,
                "chosen": assistant(r.chosen),
                "rejected": assistant(r.rejected),
                "images": images,
            }

    return _build(rows(), dpo_features(text_only=text_only), len(records), on_row)
