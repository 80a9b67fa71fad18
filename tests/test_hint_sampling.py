"""Offline hint-guided rejection sampling (Mobile-Agent-v3 §2.2.3) on real oracle demonstrations.

The demonstrations come from the real ``simphone demos`` code path (compact prompts, ui_tree).
The tiny model almost never matches an action, so the accepting path is driven by test doubles
that read the hint the way a capable model would: one that also gets the answer right in fresh
replies to the unhinted prompt (accepted), one that gets it right only while it sees the hint
(rejected by the unhinted check), and ones whose reasoning restates the hint in some wording
(never kept). The real engine is exercised on the tiny Qwen2.5-VL.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_runtime.roles.manager import parse_manager
from agent_runtime.roles.worker import parse_worker
from agent_runtime.traces import iter_runs, load_run
from agent_runtime.trainers.data.hints import (
    HINT_KEY,
    EngineHintGenerator,
    HintStats,
    hint_guided,
    reasoning_of,
)
from agent_runtime.trainers.data.samples import NOT_A_TARGET, collect_samples
from agent_runtime.trainers.demos.traces import DemoOptions, write_demos

TASKS = "SettingsWifiNetworkQuestion,ClockStartTimer"
ROLES = ("worker", "manager")
_ACTION_HINT = re.compile(r"the right next action is (\{.*\})\.$", re.MULTILINE)
_SUBGOAL_HINT = re.compile(r'the right next subgoal is "(.*)"\.$', re.MULTILINE)


@pytest.fixture(scope="module")
def demos(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("demos")
    report = write_demos(DemoOptions(tasks=TASKS, prompts="compact", observation="ui_tree"), out)
    assert len(report.runs) == 2 and not report.skipped
    return sorted(Path(r) for r in report.runs)  # as iter_runs lists them


def _targets(runs: list[Path], roles: tuple[str, ...] = ROLES) -> list[Any]:
    return [c for r in runs for c in load_run(r).calls if c.role in roles and not c.extra.get(NOT_A_TARGET)]


def _texts(messages: list[dict[str, Any]]) -> str:
    parts = []
    for m in messages:
        content = m["content"]
        parts += [content] if isinstance(content, str) else [p.get("text", "") for p in content]
    return "\n".join(parts)


class HintReadingModelDouble:
    """A test double of a model that learns from the hint: the first reply of each hinted batch
    is wrong (a non-match that must be filtered out), the others give the hinted answer after
    reasoning of their own. Asked afresh without the hint (the unhinted check, which always
    follows the hinted request of the same call) it gives that answer again — it can do the
    step on its own."""

    name = "hint-reading-double"
    #: The reasoning before the answer section ({answer}: the hinted answer, {index}: its index).
    reasoning = "Looking at the screen, this is what the request needs next."

    def __init__(self) -> None:
        self.unhinted: list[list[dict[str, Any]]] = []
        self._answer_now = ""

    def sample(self, messages: list[dict[str, Any]], k: int) -> list[str]:
        last = messages[-1]["content"][-1].get("text", "")
        if "<hint>" not in last:
            assert "<hint>" not in _texts(messages) and "Hint (from" not in _texts(messages)
            self.unhinted.append(messages)
            return [self.unhinted_reply(self._answer_now) for _ in range(k)]
        assert last.startswith("\n\n<hint>\nHint (from a demonstration): ") and last.endswith("</hint>")
        action, subgoal = _ACTION_HINT.search(last), _SUBGOAL_HINT.search(last)
        if action is not None:
            answer = action.group(1)
            wrong = '### Thought ###\nWait.\n\n### Action ###\n{"action": "wait", "time": 1}\n'
        else:
            answer = subgoal.group(1) if subgoal is not None else "Finished"
            wrong = "### Thought ###\nStart over.\n\n### Plan ###\n1. Go home and start over\n"
        self._answer_now = answer
        index = json.loads(answer).get("index", "") if answer.startswith("{") else ""
        thought = self.reasoning.format(answer=answer, index=index)
        return [wrong] + [f"### Thought ###\n{thought}\n\n" + self._answer(answer)] * (k - 1)

    def unhinted_reply(self, answer: str) -> str:
        return "### Thought ###\nOn my own.\n\n" + self._answer(answer)

    @staticmethod
    def _answer(answer: str) -> str:
        if answer.startswith("{"):
            return f"### Action ###\n{answer}\n\n### Description ###\nDo what the screen needs next."
        plan = "Finished" if answer == "Finished" else f"1. {answer}"
        return f"### Historical Operations ###\nNone\n\n### Plan ###\n{plan}\n"


class HintOnlyModelDouble(HintReadingModelDouble):
    """A test double that matches only while it sees the hint: asked afresh without it, it
    answers something else."""

    name = "hint-only-double"

    def unhinted_reply(self, answer: str) -> str:
        if answer.startswith("{"):
            return '### Action ###\n{"action": "system_button", "button": "Home"}\n'
        return "### Plan ###\n1. Go home and start over\n"


class HintCitingModelDouble(HintReadingModelDouble):
    """A test double whose reasoning cites the hint: never accepted, whatever follows."""

    name = "hint-citing-double"
    reasoning = "As the hint says, this is what the request needs next."


#: Reasoning that restates the hinted answer, most of it without ever saying "hint".
RESTATEMENTS = [
    "The demonstration says the right next action is {answer}.",
    "As suggested, the next step is {answer}.",
    "The right move is to tap [{index}].",
    "I was told what comes next, so I follow it.",
    "According to what I know works here, I go on.",
    "Per the given answer: {answer}.",
]


class NudgingModelDouble(HintReadingModelDouble):
    """A test double that reads the hint but taps ``dx`` model pixels off the hinted point (and
    keeps the screenshots it is sent)."""

    name = "nudging-double"

    def __init__(self, dx: float) -> None:
        super().__init__()
        self.dx = dx
        self.images: list[dict[str, Any]] = []

    def sample(self, messages: list[dict[str, Any]], k: int) -> list[str]:
        if "<hint>" in _texts(messages):  # the hinted requests (the unhinted check sends them again)
            self.images += [p for p in messages[-1]["content"] if p["type"] == "image_url"]
        return [self._nudge(r) for r in super().sample(messages, k)]

    def _nudge(self, reply: str) -> str:
        return re.sub(
            r'"coordinate": \[([\d.]+),', lambda m: f'"coordinate": [{float(m.group(1)) + self.dx},', reply
        )


def test_reasoning_is_cut_at_the_answer_section_in_every_heading_style():
    assert (
        reasoning_of("worker", "### Thought ###\nTap.\n\n### Action ###\n{}") == "### Thought ###\nTap.\n\n"
    )
    assert reasoning_of("worker", "## Thought\nTap.\n**Action**\n{}") == "## Thought\nTap.\n"
    assert reasoning_of("worker", 'Thought: tap.\nAction: {"action": "wait"}') == "Thought: tap.\n"
    assert (
        reasoning_of("worker", "<thinking>tap</thinking><tool_call>{}</tool_call>")
        == "<thinking>tap</thinking>"
    )
    # "Action" opening a sentence is prose, not the heading; no heading at all: no reasoning.
    assert reasoning_of("worker", "Actions speak.\nAction needed now") == ""
    text = "### Thought ###\nok\n\n### Historical Operations ###\n- Open\n\n### Plan ###\nFinished"
    assert reasoning_of("manager", text) == "### Thought ###\nok\n\n### Historical Operations ###\n- Open\n\n"


def test_replies_that_hold_up_without_the_hint_replace_the_oracle_completions(demos, tmp_path):
    targets = _targets(demos)
    double = HintReadingModelDouble()
    advanced: list[int] = []
    stats = hint_guided(demos, tmp_path / "out", double, roles=ROLES, k=3, progress=advanced.append)
    n = len(targets)
    assert n == 17  # 8 Worker steps, 9 Manager calls (first plans and updates) in the two demos
    assert stats == HintStats(
        runs=2, calls=n, candidates=3 * n, hinted_matches=2 * n, fresh_samples=3 * n, fresh_matches=3 * n,
        verified=n,
    )  # fmt: skip
    assert advanced == [1] * n
    # The unhinted check asked fresh questions: the recorded prompt, no hinted reasoning in it.
    assert len(double.unhinted) == n
    assert all(m[-1]["role"] == "user" for m in double.unhinted)

    out_runs = list(iter_runs(tmp_path / "out"))
    assert sorted(r.name for r in out_runs) == sorted(r.name for r in demos)
    for copy in out_runs:
        source = next(r for r in demos if r.name == copy.name)
        run = load_run(copy)
        assert run.run.model_extra[HINT_KEY] == {
            "source": str(source),
            "model": "hint-reading-double",
            "roles": list(ROLES),
            "k": 3,
            "fallback": "oracle",
            "calls": len(_targets([source])),
            "verified": len(_targets([source])),
            "fell_back": 0,
            "dropped": 0,
        }
        assert run.run.eval == load_run(source).run.eval
        assert (copy / "steps.jsonl").read_bytes() == (source / "steps.jsonl").read_bytes()
        screens = sorted((source / "screens").iterdir())
        assert screens and all(os.path.samefile(s, copy / "screens" / s.name) for s in screens)

    samples = collect_samples(tmp_path / "out", ROLES).samples
    assert len(samples) == n
    for s in samples:
        assert s.completion.startswith(f"### Thought ###\n{HintReadingModelDouble.reasoning}\n\n")
        parser = parse_worker if s.role == "worker" else parse_manager
        assert s.valid and s.parsed == parser(s.completion).model_dump(mode="json")
    oracle = {(c.run_id, c.step, c.role): c for c in targets}
    for s in samples:  # the answer is the oracle's; only the reasoning around it is the model's
        before = oracle[(s.run_id, s.step, s.role)].parsed
        if s.role == "worker":
            assert s.parsed["action"] == before["action"]
        else:
            assert (s.parsed["plan"][:1], s.parsed["finished"]) == (before["plan"][:1], before["finished"])
    # The other roles' demonstrations are copied as they were.
    assert [s.completion for s in collect_samples(tmp_path / "out", ["reflector", "notetaker"]).samples] == [
        c.completion for c in _targets(demos, ("reflector", "notetaker"))
    ]

    pytest.importorskip("datasets")
    from agent_runtime.trainers.data.datasets import build_sft_dataset

    rows = build_sft_dataset(samples, text_only=True)
    assert [r["completion"][0]["content"] for r in rows] == [s.completion for s in samples]
    assert "<hint>" not in json.dumps(rows[0]["prompt"])


@pytest.mark.parametrize("double", [HintOnlyModelDouble, HintCitingModelDouble])
def test_replies_right_only_with_the_hint_fall_back_to_the_oracle_or_are_dropped(demos, tmp_path, double):
    targets = _targets(demos, ("worker",))
    n = len(targets)
    stats = hint_guided(demos, tmp_path / "oracle", double(), k=2, fallback="oracle")
    citing = double is HintCitingModelDouble
    leaked, fresh = (n, 0) if citing else (0, 2 * n)
    assert stats == HintStats(
        runs=2, calls=n, candidates=2 * n, hinted_matches=n, leaked=leaked,
        leaks={"reference": n} if citing else {}, fresh_samples=fresh, fell_back=n,
    )  # fmt: skip
    kept = collect_samples(tmp_path / "oracle", ["worker"]).samples
    assert [s.completion for s in kept] == [c.completion for c in targets]
    assert {load_run(r).calls_for("worker")[0].extra[HINT_KEY] for r in iter_runs(tmp_path / "oracle")} == {
        "oracle"
    }

    stats = hint_guided(demos, tmp_path / "drop", double(), k=2, fallback="drop")
    assert (stats.dropped, stats.fell_back, stats.verified) == (n, 0, 0)
    assert collect_samples(tmp_path / "drop", ["worker"]).samples == []
    # Dropped calls stay in the trace (the run replays the same), marked as no target.
    calls = [c for r in iter_runs(tmp_path / "drop") for c in load_run(r).calls_for("worker")]
    assert len(calls) == n and all(c.extra[NOT_A_TARGET] and c.extra[HINT_KEY] == "dropped" for c in calls)
    # The Manager was not asked for: its demonstrations are still targets.
    assert len(collect_samples(tmp_path / "drop", ["manager"]).samples) == len(_targets(demos, ("manager",)))


@pytest.mark.parametrize("restated", RESTATEMENTS)
def test_a_reply_that_restates_the_hinted_answer_in_any_wording_is_never_kept(demos, tmp_path, restated):
    """Each wording restates the answer (most never say "hint"); the double would pass the
    unhinted check, so only the leak check stands between these replies and the targets."""
    double = type("RestatingDouble", (HintReadingModelDouble,), {"reasoning": restated})()
    stats = hint_guided(demos, tmp_path / "out", double, roles=ROLES, k=3, fallback="drop")
    n = len(_targets(demos))
    assert (stats.hinted_matches, stats.leaked, stats.verified, stats.dropped) == (2 * n, 2 * n, 0, n)
    assert double.unhinted == []  # nothing clean was left to verify
    assert collect_samples(tmp_path / "out", ROLES).samples == []


def test_a_worker_reply_that_copies_the_hinted_action_is_never_kept(demos, tmp_path):
    """Reasoning that spells out the hinted action (which no unhinted prompt shows) copies it."""
    double = type("CopyingDouble", (HintReadingModelDouble,), {"reasoning": "So the step is {answer}."})()
    stats = hint_guided(demos, tmp_path / "out", double, k=2, fallback="drop")
    n = len(_targets(demos, ("worker",)))
    assert (stats.leaked, stats.leaks, stats.verified, stats.dropped) == (n, {"copied": n}, 0, n)


def test_a_task_list_keeps_no_hinted_reply_it_could_not_verify(demos, tmp_path):
    """Task-list demonstrations are the model's own replies, written with the task's hints in
    view: after unhinting, no call is a target, whatever the fallback, until hint-guided
    sampling verifies it from fresh unhinted replies."""
    from agent_runtime.trainers.evolve.tasklist import ListedTask, unhint_runs

    tasks = {
        load_run(r).run.eval["task"]: ListedTask(id="t", goal="g", split="train", hints=["Tap Clock"])
        for r in demos
    }
    unhinted = unhint_runs(demos, tasks, tmp_path / "unhinted")
    assert collect_samples(tmp_path / "unhinted").samples == []  # every role, as written: unverified

    stats = hint_guided(
        unhinted, tmp_path / "oracle", HintOnlyModelDouble(), roles=ROLES, k=2, fallback="oracle"
    )
    n = len(_targets(demos))
    assert (stats.calls, stats.verified, stats.fell_back, stats.dropped) == (n, 0, 0, n)
    assert collect_samples(tmp_path / "oracle").samples == []

    stats = hint_guided(unhinted, tmp_path / "verified", HintReadingModelDouble(), roles=ROLES, k=2)
    assert (stats.verified, stats.fell_back) == (n, 0)
    kept = collect_samples(tmp_path / "verified").samples
    assert len(kept) == n and {s.role for s in kept} == set(ROLES)  # the Reflector's replies: never
    assert all(s.completion.startswith(f"### Thought ###\n{HintReadingModelDouble.reasoning}") for s in kept)


def test_screenshot_demonstrations_match_taps_within_the_tolerance_in_screen_pixels(tmp_path):
    from agent_runtime.models.images import decode_data_url

    demo = write_demos(DemoOptions(tasks="ClockStartTimer", observation="screenshot"), tmp_path / "demos")
    runs = [Path(r) for r in demo.runs]
    workers = _targets(runs, ("worker",))
    taps = [c for c in workers if c.parsed["action"].get("coordinate")]
    assert len(workers) == 5 and len(taps) == 3

    near = NudgingModelDouble(dx=20.0)  # 20 model pixels ~ 20 screen pixels: within 40
    stats = hint_guided(runs, tmp_path / "near", near, k=2)
    assert (stats.verified, stats.fell_back) == (5, 0)
    # Each call was sent its screenshot, re-encoded at the size recorded for it.
    sizes = [decode_data_url(p["image_url"]["url"]).size for p in near.images]
    assert sizes == [tuple(c.messages[0]["content"][1]["size"]) for c in workers]

    far = NudgingModelDouble(dx=-300.0)
    stats = hint_guided(runs, tmp_path / "far", far, k=2)
    assert (stats.verified, stats.fell_back, stats.hinted_matches) == (2, 3, 2)
    kept = {s.step: s for s in collect_samples(tmp_path / "far", ["worker"]).samples}
    assert all(kept[c.step].completion == c.completion for c in taps)


@pytest.fixture
def one_thread() -> Iterator[None]:
    """One torch thread: on a shared 2-core box more threads make the tiny model ~20x slower."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.train
def test_the_tiny_model_is_sampled_through_the_engine(demos, tiny_vlm_dir, tmp_path, one_thread):
    from agent_runtime.models.engine import TransformersEngine

    engine = TransformersEngine(tiny_vlm_dir)
    generator = EngineHintGenerator(engine, max_new_tokens=12, seed=0)
    run = demos[0]
    stats = hint_guided([run], tmp_path / "out", generator, roles=ROLES, k=2)
    n = len(_targets([run]))
    assert (stats.calls, stats.candidates) == (n, 2 * n)
    assert stats.verified + stats.fell_back == n and stats.dropped == 0
    # Fresh unhinted replies are drawn only for calls with a clean matching hinted reply.
    assert stats.fresh_samples % 2 == 0 and stats.fresh_samples <= 2 * n
    assert len(collect_samples(tmp_path / "out", ROLES).samples) == n
    assert (
        load_run(next(iter_runs(tmp_path / "out"))).run.model_extra[HINT_KEY]["model"] == engine.served_name
    )


@pytest.mark.train
def test_a_lora_model_reference_samples_with_its_adapter(demos, tiny_vlm_dir, tmp_path, one_thread):
    from peft import LoraConfig, get_peft_model

    from agent_runtime.models.hf import load_model
    from agent_runtime.models.protocol import ChatCompletionRequest

    lora = LoraConfig(r=2, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    get_peft_model(load_model(tiny_vlm_dir), lora).save_pretrained(tmp_path / "adapter")
    generator = EngineHintGenerator.from_model_ref(
        f"transformers:{tiny_vlm_dir}?adapter={tmp_path / 'adapter'}", max_new_tokens=12, temperature=1e-6
    )
    engine = generator.engine
    assert list(engine.adapters.values()) == [str((tmp_path / "adapter").resolve())]
    assert generator.name.endswith(f"+{(tmp_path / 'adapter').resolve()}")
    # The same adapter named again is not loaded twice.
    assert EngineHintGenerator(engine, adapter=tmp_path / "adapter").adapter == generator.adapter

    messages = _targets(demos, ("worker",))[0].messages

    def greedy(model: str | None) -> str:
        request = {"model": model, "messages": messages, "temperature": 0.0, "max_tokens": 12}
        return engine.chat(ChatCompletionRequest.model_validate(request)).choices[0].message.content

    adapted, base = greedy(generator.adapter), greedy(None)
    assert adapted != base
    # Even right after the engine served the base model, sampling (near-greedy here) runs the adapter.
    assert generator.sample(messages, 1) == [adapted]
