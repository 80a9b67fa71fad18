"""Offline hint-guided rejection sampling (Mobile-Agent-v3 §2.2.3): the model's own reasoning for
the steps of a demonstration it cannot do yet.

A demonstration (:mod:`agent_runtime.trainers.demos.traces`) says what to do at each call, but
its reasoning is the oracle's template, not the model's. For each target call of a trained role:

1. the **hint** — the oracle's own answer for the call (the Worker's action; the Manager's next
   subgoal for the Worker, or Finished) — is appended to the last user message as a delimited
   ``<hint>`` block;
2. ``k`` replies are sampled from the current model with the hint (temperature > 0, seeded);
3. replies whose answer matches the oracle's are kept: a Worker action by
   :func:`~agent_runtime.trainers.data.matching.actions_match` in screen pixels, or — for
   element-index actions — the same element and otherwise the same action; a Manager plan by
   the same next subgoal, or both Finished;
4. a matching reply whose reasoning (the reply up to its Action, or Plan, section) restates the
   hint in any wording — names it or a demonstration, asserts "the right move", copies the hint's
   words (:func:`~agent_runtime.trainers.data.filters.hint_leak.hint_leak`) — is never kept: the
   trained model sees no hint, and a target that leans on one teaches it to assert answers it
   cannot have;
5. the rest are **verified without the hint**: ``k`` *fresh* replies are sampled from the
   unhinted prompt — never a continuation of the hinted reasoning, which would carry the answer
   in — and the call is verified when one of them gives the oracle's answer too. The first clean
   matching hinted reply then replaces the call's completion;
6. a call with no verified reply keeps the oracle's reply (``fallback="oracle"``) or is marked
   ``not_a_target`` (``fallback="drop"``). A demonstration whose own reply was written with
   hints in view (:data:`HINTED_REPLY`: a task list's hinted replay) is never a fallback: such
   a call is verified or it is no target.

Step 5 is the paper's test that "the reasoning alone leads the model to the ground-truth action",
made without letting the hinted text into the check. The result is a copy of each run
directory under ``out`` in the same layout (screenshots hard-linked where the file system allows),
so ``agent-runtime distill --method sft --runs-dir OUT`` reads it like any runs directory; each
run.json says where it came from under ``hint_guided``, each changed call under
``extra["hint_guided"]`` (``verified``, ``oracle`` or ``dropped``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, Field

from agent_runtime.actions import Action, to_screen
from agent_runtime.config import ModelConfig, shows_tree
from agent_runtime.coords import CoordMapper, Size
from agent_runtime.errors import ConfigError, ParseError, TraceError, TrainingError
from agent_runtime.role_outputs import ManagerOutput, WorkerOutput
from agent_runtime.roles.manager import parse_manager
from agent_runtime.roles.worker import parse_worker
from agent_runtime.traces import CallRecord, LoadedRun, dumps, load_run
from agent_runtime.trainers.data.filters.hint_leak import hint_leak
from agent_runtime.trainers.data.matching import actions_match
from agent_runtime.trainers.data.samples import NOT_A_TARGET

if TYPE_CHECKING:
    from agent_runtime.models.engine import TransformersEngine

__all__ = [
    "HINTED_REPLY",
    "HINT_KEY",
    "HINTED_ROLES",
    "EngineHintGenerator",
    "HintGenerator",
    "HintStats",
    "hint_answer",
    "hint_guided",
    "hint_text",
    "reasoning_of",
]

Fallback = Literal["oracle", "drop"]
#: Roles whose calls have an answer a hint can name and a match can check.
HINTED_ROLES = ("manager", "worker")
#: ``CallRecord.extra`` key saying what hint-guided sampling did with a call.
HINT_KEY = "hint_guided"
#: ``CallRecord.extra`` key of a demonstration reply written with hints in view (a task list's
#: hinted replay): unverified, so never a target unless hint-guided sampling verifies the call.
HINTED_REPLY = "hinted_reply"
#: The counts a run.json's provenance gives for that run alone.
_PER_RUN = ("calls", "verified", "fell_back", "dropped")
_HINT_ASK = (
    "Reason your way to it from the screen and the request in your own words, without mentioning "
    "this hint, and reply in the format asked above."
)


def _section_start(name: str) -> re.Pattern[str]:
    """A heading line of section ``name`` (``### Action ###``, ``## Action``, ``**Action**``,
    ``Action:``) — the markup :func:`~agent_runtime.roles.sections.split_sections` reads."""
    return re.compile(
        rf"^[ \t]*(?:\#{{1,6}}|\*\*)?[ \t]*{name}[ \t]*(?:\*\*|\#+)?[ \t]*(?::|$)",
        re.IGNORECASE | re.MULTILINE,
    )


_ANSWER_START = {
    "worker": re.compile(f"{_section_start('action').pattern}|<tool_call>", re.IGNORECASE | re.MULTILINE),
    "manager": _section_start("plan"),
}


class HintGenerator(Protocol):
    """The current model, as hint-guided sampling asks it."""

    @property
    def name(self) -> str:
        """The model, for the records (run.json provenance, a replaced call's ``model``)."""
        ...

    def sample(self, messages: list[dict[str, Any]], k: int) -> list[str]:
        """``k`` replies to an OpenAI chat request, sampled (temperature > 0, seeded afresh per
        request, so the unhinted check draws replies of its own)."""
        ...


class HintStats(BaseModel):
    """What :func:`hint_guided` did, over all runs."""

    runs: int = Field(0, description="run directories written")
    calls: int = Field(0, description="target calls of the hinted roles seen")
    candidates: int = Field(0, description="replies sampled with the hint")
    hinted_matches: int = Field(0, description="replies sampled with the hint that matched the oracle's")
    leaked: int = Field(0, description="matching replies whose reasoning restates the hint (never kept)")
    leaks: dict[str, int] = Field(default_factory=dict, description="leaked replies by signal")
    fresh_samples: int = Field(0, description="replies sampled afresh from the unhinted prompt")
    fresh_matches: int = Field(0, description="fresh unhinted replies that gave the oracle's answer")
    verified: int = Field(0, description="calls whose completion is now a reply verified without the hint")
    fell_back: int = Field(0, description="calls that kept the oracle's reply (fallback=oracle)")
    dropped: int = Field(0, description="calls marked not_a_target (fallback=drop)")


def hint_text(oracle: WorkerOutput | ManagerOutput) -> str:
    """The hint block for the oracle's answer (appended to the last user message).

    >>> from agent_runtime.role_outputs import ManagerOutput
    >>> print(hint_text(ManagerOutput(plan=["Open Clock"])).splitlines()[3])
    Hint (from a demonstration): the right next subgoal is "Open Clock".
    """
    if isinstance(oracle, WorkerOutput):
        answer = f"the right next action is {hint_answer(oracle)}"
    elif oracle.finished:
        answer = "every subgoal is done, so the right plan is Finished"
    else:
        answer = f'the right next subgoal is "{hint_answer(oracle)}"'
    return f"\n\n<hint>\nHint (from a demonstration): {answer}.\n{_HINT_ASK}\n</hint>"


def hint_answer(oracle: WorkerOutput | ManagerOutput) -> str:
    """The answer as :func:`hint_text` words it: the action's JSON, the next subgoal, or Finished."""
    if isinstance(oracle, WorkerOutput):
        return json.dumps(oracle.action.to_json(), ensure_ascii=False)
    return "Finished" if oracle.finished else oracle.current_subgoal


def with_hint(messages: list[dict[str, Any]], hint: str) -> list[dict[str, Any]]:
    """``messages`` with ``hint`` appended to the last user message (a copy)."""
    out = [dict(m) for m in messages]
    last = max(i for i, m in enumerate(out) if m.get("role") == "user")
    content = out[last].get("content")
    if isinstance(content, list):
        out[last]["content"] = [*content, {"type": "text", "text": hint}]
    else:
        out[last]["content"] = f"{content or ''}{hint}"
    return out


def reasoning_of(role: str, reply: str) -> str:
    """The reply up to its answer section (the Worker's Action or ``<tool_call>``, the Manager's
    Plan); the whole reply is answer when it has no such heading, so its reasoning is empty.

    >>> reasoning_of("worker", "### Thought ###\\nTap it.\\n\\n### Action ###\\n{}")
    '### Thought ###\\nTap it.\\n\\n'
    """
    found = _ANSWER_START[role].search(reply)
    return reply[: found.start()] if found else ""


class _RunView:
    """How one run's calls are parsed, compared and re-sent (its model settings and screen)."""

    def __init__(self, run: LoadedRun, tolerance: float) -> None:
        self.run = run
        self.tolerance = tolerance
        self.platform = "desktop" if run.run.device.get("kind") == "desktop" else "mobile"
        self._mapper: CoordMapper | None = None

    def model(self, role: str) -> ModelConfig:
        recorded = self.run.run.models.get(role, {})
        return ModelConfig.model_validate(
            {k: v for k, v in recorded.items() if k in ModelConfig.model_fields}
        )

    def parse(self, role: str, text: str) -> WorkerOutput | ManagerOutput:
        if role == "worker":
            return parse_worker(text, self.platform, indices=shows_tree(self.model(role).observation))
        return parse_manager(text)

    def matches(self, role: str, reply: str, oracle: WorkerOutput | ManagerOutput) -> bool:
        """Whether ``reply`` parses and gives the oracle's answer (module docstring, step 3)."""
        try:
            mine = self.parse(role, reply)
        except (ParseError, ValueError):  # ValueError: a parser bug is a non-match, not a crash
            return False
        if isinstance(mine, WorkerOutput) and isinstance(oracle, WorkerOutput):
            return self._same_action(mine.action, oracle.action)
        if isinstance(mine, ManagerOutput) and isinstance(oracle, ManagerOutput):
            if mine.finished or oracle.finished:
                return mine.finished == oracle.finished
            return _norm(mine.current_subgoal) == _norm(oracle.current_subgoal)
        return False

    def _same_action(self, mine: Action, oracle: Action) -> bool:
        if mine.by_index or oracle.by_index:
            # Both name elements of the same UI tree: the same element is the same target.
            return _canonical(mine) == _canonical(oracle)
        if not (mine.points() or oracle.points()):
            return actions_match(mine.to_json(), oracle.to_json())
        mapper = self.mapper()
        return actions_match(
            to_screen(mine, mapper).to_json(), to_screen(oracle, mapper).to_json(), tolerance=self.tolerance
        )

    def mapper(self) -> CoordMapper:
        """The Worker's model coordinates → screen pixels (touches are compared in pixels)."""
        if self._mapper is None:
            screen = self.run.run.device.get("screen")
            if not screen:
                raise TraceError(f"run {self.run.run.run_id} records no screen size (run.json device.screen)")
            cfg = self.model("worker")
            self._mapper = CoordMapper(space=cfg.coords, screen=Size(*screen), budget=cfg.budget)
        return self._mapper

    def request(self, role: str, recorded: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A recorded call's messages as an OpenAI request: screenshots as the role was sent them."""
        from agent_runtime.models.images import encode_for

        cfg = self.model(role)
        out = []
        for message in recorded:
            content = message.get("content")
            if isinstance(content, list):
                content = [
                    encode_for(self.run.screen(p["ref"]), cfg).part() if p.get("type") == "image_ref" else p
                    for p in content
                ]
            out.append({"role": message["role"], "content": content})
        return out


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def _canonical(action: Action) -> dict[str, Any]:
    data = action.to_json()
    if isinstance(data.get("text"), str):
        data["text"] = _norm(data["text"])
    return data


def hint_guided(
    runs: Sequence[Path | str],
    out: Path | str,
    generator: HintGenerator,
    *,
    roles: Sequence[str] = ("worker",),
    k: int = 4,
    fallback: Fallback = "oracle",
    tolerance: float = 40.0,
    progress: Callable[[int], None] | None = None,
) -> HintStats:
    """Hint-guided copies of the demonstration ``runs`` under ``out`` (module docstring).

    ``tolerance``: pixels a touch may miss the oracle's by (coordinate actions). ``progress`` is
    advanced by 1 after each call (a progress bar's ``advance``).
    """
    unknown = sorted(set(roles) - set(HINTED_ROLES))
    if unknown:
        raise ConfigError(
            f"hint-guided sampling cannot hint {unknown}", hint=f"roles: {', '.join(HINTED_ROLES)}"
        )
    if k < 1:
        raise ConfigError(f"k must be at least 1, not {k}")
    if fallback not in ("oracle", "drop"):
        raise ConfigError(f"unknown fallback {fallback!r}", hint="use oracle or drop")
    root = Path(out).expanduser()
    root.mkdir(parents=True, exist_ok=True)
    stats = HintStats()
    for run_dir in runs:
        run = load_run(run_dir)
        dest = root / run.dir.name
        if dest.exists():
            raise TrainingError(
                f"{dest} exists already", hint="write hint-guided runs into a fresh directory"
            )
        view = _RunView(run, tolerance)
        before = stats.model_copy()
        calls = []
        for call in run.calls:
            hinted = bool(call.extra.get(HINTED_REPLY)) and call.valid
            if call.role in roles and (hinted or not call.extra.get(NOT_A_TARGET)):
                call = _resample(call, view, generator, k, fallback, stats)
                if progress is not None:
                    progress(1)
            calls.append(call)
        stats.runs += 1
        provenance = {
            "source": str(run.dir),
            "model": generator.name,
            "roles": list(roles),
            "k": k,
            "fallback": fallback,
            **{f: getattr(stats, f) - getattr(before, f) for f in _PER_RUN},
        }
        _write_run(run, dest, calls, provenance)
    return stats


def _resample(
    call: CallRecord, view: _RunView, generator: HintGenerator, k: int, fallback: Fallback, stats: HintStats
) -> CallRecord:
    """The call with an accepted reply, the oracle's reply, or marked not_a_target."""
    try:
        oracle = view.parse(call.role, call.completion)
    except (ParseError, ValueError) as exc:
        raise TraceError(
            f"run {call.run_id}: the {call.role} reply at step {call.step} does not parse, so it "
            f"cannot be a hint: {exc}",
            hint="hint-guided sampling reads demonstrations (agent-runtime simphone demos)",
        ) from None
    stats.calls += 1
    messages = view.request(call.role, call.messages)
    hint = hint_text(oracle)
    replies = generator.sample(with_hint(messages, hint), k)
    stats.candidates += len(replies)
    matching = [r for r in replies if view.matches(call.role, r, oracle)]
    stats.hinted_matches += len(matching)
    clean = []
    prompt = _prompt_text(messages)
    for reply in matching:
        leak = hint_leak(reasoning_of(call.role, reply), hint, answer=hint_answer(oracle), prompt=prompt)
        if leak is None:
            clean.append(reply)
        else:
            stats.leaked += 1
            signal = leak.split(":", 1)[0]
            stats.leaks[signal] = stats.leaks.get(signal, 0) + 1
    if clean:
        # Fresh replies to the prompt the trained model will see: no hinted text goes in.
        fresh = generator.sample(messages, k)
        stats.fresh_samples += len(fresh)
        agreeing = sum(1 for r in fresh if view.matches(call.role, r, oracle))
        stats.fresh_matches += agreeing
        if agreeing:
            stats.verified += 1
            kept = clean[0]
            extra = {key: v for key, v in call.extra.items() if key not in (NOT_A_TARGET, HINTED_REPLY)}
            return call.model_copy(
                update={
                    "completion": kept,
                    "parsed": view.parse(call.role, kept).model_dump(mode="json"),
                    "parse_error": None,
                    "model": generator.name,
                    "extra": extra | {HINT_KEY: "verified"},
                }
            )
    if fallback == "oracle" and not call.extra.get(HINTED_REPLY):
        stats.fell_back += 1
        return call.model_copy(update={"extra": call.extra | {HINT_KEY: "oracle"}})
    stats.dropped += 1
    why = (
        "a reply written with hints in view that no fresh unhinted reply reproduced"
        if call.extra.get(HINTED_REPLY)
        else "no reply sampled with the hint held up without it (hint-guided fallback=drop)"
    )
    return call.model_copy(update={"extra": call.extra | {HINT_KEY: "dropped", NOT_A_TARGET: why}})


def _prompt_text(messages: list[dict[str, Any]]) -> str:
    """The text parts of a request (what the leak check never counts as copied from the hint)."""
    parts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts += [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]
    return "\n".join(parts)


def _write_run(run: LoadedRun, dest: Path, calls: list[CallRecord], provenance: dict[str, Any]) -> None:
    """The run under ``dest``: its files copied (screenshots linked), calls.jsonl rewritten, and
    run.json — last, so a half-written copy is never read as a run — with ``hint_guided``."""
    shutil.copytree(
        run.dir,
        dest,
        ignore=shutil.ignore_patterns("run.json", "calls.jsonl", "checkpoint.sqlite*", "*.tmp", "*.torn"),
        copy_function=_link_screen,
    )
    lines = "".join(dumps(c.model_dump(mode="json")) + "\n" for c in calls)
    (dest / "calls.jsonl").write_text(lines, encoding="utf-8")
    record = run.run.model_dump(mode="json") | {HINT_KEY: provenance}
    (dest / "run.json").write_text(dumps(record, indent=2), encoding="utf-8")


def _link_screen(src: str, dst: str) -> str:
    """Hard-link screenshots (never rewritten once saved); copy everything else, which a later
    tool may append to (a link would write through to the source run)."""
    if Path(src).parent.name == "screens":
        try:
            os.link(src, dst)
            return dst
        except OSError:  # another file system, or links not allowed
            pass
    return str(shutil.copy2(src, dst))


class EngineHintGenerator:
    """:class:`HintGenerator` over an in-process :class:`~agent_runtime.models.engine.TransformersEngine`.

    ``adapter`` (a LoRA adapter directory) is loaded into the engine unless it is there already,
    so a shared engine keeps its base model for its other users. Sampling goes through the
    engine's chat completions, seeded per request as IRR's
    :class:`~agent_runtime.trainers.irr_trainer.EngineGenerator` is, so the unhinted check's
    replies are drawn afresh, never those of the hinted request.
    """

    def __init__(
        self,
        engine: TransformersEngine,
        *,
        adapter: str | Path | None = None,
        temperature: float = 1.0,
        top_p: float = 0.95,
        max_new_tokens: int = 384,
        seed: int = 0,
    ) -> None:
        if temperature <= 0.0:
            raise ConfigError("hint-guided sampling needs a temperature above 0", hint="e.g. 1.0")
        self.engine = engine
        self.adapter = None if adapter is None else _loaded_adapter(engine, Path(adapter))
        self.temperature = temperature
        self.top_p = top_p
        self.max_new_tokens = max_new_tokens
        self.seed = seed
        self._calls = 0

    @classmethod
    def from_model_ref(cls, ref: str | Path, **sampling: Any) -> EngineHintGenerator:
        """A generator on a fresh engine for a model reference (a directory, ``gguf:…``,
        ``transformers:BASE?adapter=A``, a distill output); ``sampling``: the other options."""
        from agent_runtime.models.engine import TransformersEngine
        from agent_runtime.models.refs import resolve_model_ref

        resolved = resolve_model_ref(ref)
        return cls(TransformersEngine(resolved.base), adapter=resolved.adapter, **sampling)

    @property
    def name(self) -> str:
        if self.adapter is None:
            return self.engine.served_name
        return f"{self.engine.served_name}+{self.engine.adapters[self.adapter]}"

    def sample(self, messages: list[dict[str, Any]], k: int) -> list[str]:
        from agent_runtime.trainers.irr_trainer import sampling_request

        self._calls += 1
        request = sampling_request(
            self.adapter, messages, k, temperature=self.temperature, top_p=self.top_p,
            max_tokens=self.max_new_tokens, seed=self.seed, call=self._calls,
        )  # fmt: skip
        return [choice.message.content for choice in self.engine.chat(request).choices]


def _loaded_adapter(engine: TransformersEngine, path: Path) -> str:
    """The engine's name for the adapter at ``path``, loading it first when it is not loaded."""
    where = path.expanduser().resolve()
    for name, loaded in engine.adapters.items():
        if Path(loaded).resolve() == where:
            return name
    name = f"hint-guided:{where}"
    engine.load_adapter(name, str(where))
    return name
