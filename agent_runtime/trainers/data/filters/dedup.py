"""Exact de-duplication: the same role, prompt text, screenshots and completion train once.

Repeated episodes of a deterministic task (SimPhone with the same seed, a scripted model)
produce byte-identical calls; keeping all of them would weight those steps by how often they
were replayed. Screenshots compare by their SHA-1, so two runs that saw the same screen match
even though their image refs differ.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any

from agent_runtime.trainers.data.filters import Filtered, report
from agent_runtime.trainers.data.samples import Sample


def _canonical_messages(messages: list[dict[str, Any]], hashes: list[str]) -> list[Any]:
    """Messages with each image ref replaced by its screenshot hash (in order)."""
    it = iter(hashes)
    out: list[Any] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            content = [
                {"image": next(it, "?")} if isinstance(p, dict) and p.get("type") == "image_ref" else p
                for p in content
            ]
        out.append({"role": message.get("role"), "content": content})
    return out


def sample_key(sample: Sample) -> str:
    """The identity two duplicate samples share."""
    payload = json.dumps(
        [sample.role, _canonical_messages(sample.messages, sample.image_hashes), sample.completion],
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha1(payload.encode("utf-8")).hexdigest()


def filter_duplicates(samples: list[Sample]) -> Filtered:
    """Keep the first of each group of identical samples."""
    seen: set[str] = set()
    kept: list[Sample] = []
    why_kept: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    for s in samples:
        key = sample_key(s)
        if key in seen:
            dropped["duplicate"] += 1
            continue
        seen.add(key)
        why_kept["first occurrence"] += 1
        kept.append(s)
    return Filtered(kept, report("dedup", len(samples), why_kept, dropped))
