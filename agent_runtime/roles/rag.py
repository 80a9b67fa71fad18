"""The RAG step before the first plan (Algorithm 1, line 3): ``K_RAG ← RAG(I)``.

Retrieval lives in :mod:`agent_runtime.memory` (extra ``rag``: chromadb, web search, experience
from earlier runs). This module only connects it to the run: it hands memory a traced ``ask``
function (every query-writing/summarising call is recorded under role ``rag``) and turns "not
installed" or a retrieval failure into empty knowledge plus a notice for the event stream —
the agent still runs, it just plans without retrieved knowledge. Knowledge is data for the
Manager's prompt: nothing in it can end the prompt's ``<<<KNOWLEDGE`` block (see
:mod:`agent_runtime.memory.untrusted`). After a run ends on its own,
:func:`record_experience` hands the trace to memory so later runs of similar tasks plan with it.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

from agent_runtime.config import MemoryConfig
from agent_runtime.errors import AgentRuntimeError, ModelError
from agent_runtime.role_outputs import RagOutput

#: Packages the ``rag`` extra installs; without them retrieval is skipped.
RAG_PACKAGES = ("chromadb",)


def retrieve_knowledge(
    task: str, memory: MemoryConfig, ask: Callable[[str], str] | None
) -> tuple[RagOutput, str | None]:
    """Knowledge for ``task`` and, when there is none for a reason, a one-line notice why.

    A dead model endpoint (:class:`ModelError`) is an infrastructure error and propagates.
    """
    missing = [p for p in RAG_PACKAGES if importlib.util.find_spec(p) is None]
    if missing:
        return (
            RagOutput(),
            "retrieval skipped: the 'rag' extra is not installed (pip install 'agent-runtime[rag]')",
        )
    try:
        from agent_runtime.memory import build_knowledge  # type: ignore[attr-defined]
    except ImportError:
        return RagOutput(), "retrieval skipped: this build has no agent_runtime.memory.build_knowledge"
    try:
        out = build_knowledge(task, config=memory, ask=ask)
    except ModelError:
        raise
    except AgentRuntimeError as exc:
        return RagOutput(), f"retrieval failed, planning without knowledge: {exc.message}"
    if not isinstance(out, RagOutput):
        out = RagOutput.model_validate(out)
    return _sealed(out), None


def _sealed(out: RagOutput) -> RagOutput:
    """Knowledge that cannot end the Manager's ``<<<KNOWLEDGE`` block.

    Memory cleans each text it composes with :func:`~agent_runtime.memory.untrusted.as_data`;
    this is the backstop for knowledge from anywhere else (a replaced ``build_knowledge``): if it
    still holds something that could pass for the block's delimiter, all of it is cleaned.
    """
    from agent_runtime.memory.untrusted import as_data, has_delimiter

    if has_delimiter(out.knowledge, names=("KNOWLEDGE",)):
        return out.model_copy(update={"knowledge": as_data(out.knowledge)})
    return out


def record_experience(run_dir: Path, memory: MemoryConfig) -> str | None:
    """Store a finished run's guidance for later plans (``[memory] experience``).

    Returns a notice for the event stream, or None when there is nothing to say. Never raises:
    remembering is a side benefit and must not turn a finished run into a failed one.
    """
    if not memory.experience or any(importlib.util.find_spec(p) is None for p in RAG_PACKAGES):
        return None
    try:
        from agent_runtime.memory import record_run  # type: ignore[attr-defined]
        from agent_runtime.traces import load_run

        guidance = record_run(load_run(run_dir), memory)
    except (ImportError, AgentRuntimeError) as exc:
        return f"experience not recorded: {exc}"
    return "recorded this run's experience for future plans" if guidance is not None else None
