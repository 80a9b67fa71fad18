"""Reasoning-free demonstrations (MobileRL §4.1): the expert's Worker replies without the thought.

MobileRL starts from SFT on expert actions alone and lets Iterative Reasoning Refinement write
the reasoning afterwards. Our oracle demonstrations carry a templated thought (``Target: …``);
:func:`strip_reasoning` copies demonstration runs and rewrites each Worker target reply to its
``### Action ###`` and ``### Description ###`` sections only, which the Worker parser accepts
as they are. Everything else in the runs (screens, steps, other roles' calls) is copied unchanged.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from agent_runtime.roles.sections import split_sections
from agent_runtime.traces import CallRecord, dumps, load_run

WORKER_SECTIONS = ("Thought", "Action", "Description")


def action_only(reply: str) -> str | None:
    """A Worker reply with its thought removed (None when it has no action section)."""
    sections = split_sections(reply, WORKER_SECTIONS)
    if not sections.get("action"):
        return None
    text = f"### Action ###\n{sections['action']}"
    if sections.get("description"):
        text += f"\n### Description ###\n{sections['description']}"
    return text


def _copy_file(src: str, dst: str) -> None:
    """Hard-link when the file system allows it: screenshots are most of a run's bytes."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def strip_reasoning(runs: Sequence[Path], out: Path, *, roles: Sequence[str] = ("worker",)) -> int:
    """Copy ``runs`` under ``out`` with the Worker's replies reasoning-free; return how many
    replies were rewritten. Only the Worker writes a thought before its action."""
    out.mkdir(parents=True, exist_ok=True)
    rewritten = 0
    for run_dir in runs:
        dst = out / run_dir.name
        shutil.copytree(run_dir, dst, copy_function=_copy_file)
        calls = load_run(run_dir).calls
        lines = []
        for call in calls:
            if call.role == "worker" and "worker" in roles and not call.extra.get("not_a_target"):
                stripped = action_only(call.completion)
                if stripped is not None and stripped != call.completion:
                    call = CallRecord.model_validate({**call.model_dump(), "completion": stripped})
                    rewritten += 1
            lines.append(dumps(call.model_dump(mode="json")) + "\n")
        target = dst / "calls.jsonl"
        target.unlink()  # a hard link: never write through it into the source run
        target.write_text("".join(lines), encoding="utf-8")
    return rewritten
