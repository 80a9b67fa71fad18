"""Offline hint-guided rejection sampling (Mobile-Agent-v3 §2.2.3) on real oracle demonstrations.

The demonstrations come from the real ``simphone demos`` code path (compact prompts, ui_tree).
The tiny model almost never matches an action, so the accepting path is driven by two test
doubles that read the hint the way a capable model would: one whose reasoning still leads to the
action without the hint (accepted), one that gets it right only while it sees the hint (rejected
by the hint-free check). The real engine is exercised on the tiny Qwen2.5-VL.
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
    """A test double of a model that learns from the hint: each reply names the hinted answer in
    its reasoning; the first of each batch is wrong (a non-match that must be filtered out).
    Without the hint it continues from the reasoning it is given — so it stays right."""

    name = "hint-reading-double"

    def __init__(self) -> None:
        self.greedy_prefixes: list[str] = []

    def sample(self, messages: list[dict[str, Any]], k: int) -> list[str]:
        last = messages[-1]["content"][-1]["text"]
        assert last.startswith("\n\n<hint>\nHint (from a demonstration): ") and last.endswith("</hint>")
        action, subgoal = _ACTION_HINT.search(last), _SUBGOAL_HINT.search(last)
        if action is not None:
            answer = action.group(1)
            wrong = '### Thought ###\nWait.\n\n### Action ###\n{"action": "wait", "time": 1}\n'
        else:
            answer = subgoal.group(1) if subgoal is not None else "Finished"
            wrong = "### Thought ###\nStart over.\n\n### Plan ###\n1. Go home and start over\n"
        reasoning = f"### Thought ###\nLooking at the screen, the step to take is: {answer}\n\n"
        return [wrong] + [reasoning + self._answer(answer)] * (k - 1)

    def continue_greedy(self, messages: list[dict[str, Any]], prefix: str) -> str:
        assert "<hint>" not in _texts(messages) and "Hint (from" not in _texts(messages)
        self.greedy_prefixes.append(prefix)
        return self._answer(prefix.rsplit("the step to take is: ", 1)[1].strip())

    @staticmethod
    def _answer(answer: str) -> str:
        if answer.startswith("{"):
            return f"### Action ###\n{answer}\n\n### Description ###\nDo what the screen needs next."
        plan = "Finished" if answer == "Finished" else f"1. {answer}"
        return f"### Historical Operations ###\nNone\n\n### Plan ###\n{plan}\n"


class HintOnlyModelDouble(HintReadingModelDouble):
    """A test double that matches only while it sees the hint: its hint-free continuation
    ignores the reasoning and answers something else."""

    name = "hint-only-double"

    def continue_greedy(self, messages: list[dict[str, Any]], prefix: str) -> str:
        assert "<hint>" not in _texts(messages)
        return self._wrong(prefix)

    @staticmethod
    def _wrong(prefix: str) -> str:
        if '"action"' in prefix:
            return '### Action ###\n{"action": "system_button", "button": "Home"}\n'
        return "### Plan ###\n1. Go home and start over\n"


class HintCitingModelDouble(HintReadingModelDouble):
    """A test double whose reasoning cites the hint: never accepted, whatever follows."""

    name = "hint-citing-double"

    def sample(self, messages: list[dict[str, Any]], k: int) -> list[str]:
        return [r.replace("Looking at the screen", "As the hint says") for r in super().sample(messages, k)]


class NudgingModelDouble(HintReadingModelDouble):
    """A test double that reads the hint but taps ``dx`` model pixels off the hinted point (and
    keeps the screenshots it is sent)."""

    name = "nudging-double"

    def __init__(self, dx: float) -> None:
        super().__init__()
        self.dx = dx
        self.images: list[dict[str, Any]] = []

    def sample(self, messages: list[dict[str, Any]], k: int) -> list[str]:
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
    assert stats == HintStats(runs=2, calls=n, candidates=3 * n, hinted_matches=2 * n, verified=n)
    assert advanced == [1] * n
    # Verification got the reasoning only — never an answer section.
    assert len(double.greedy_prefixes) == n
    assert all("### Action ###" not in p and "### Plan ###" not in p for p in double.greedy_prefixes)

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
        assert s.completion.startswith("### Thought ###\nLooking at the screen, the step to take is: ")
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
    leaked = n if double is HintCitingModelDouble else 0
    assert stats == HintStats(runs=2, calls=n, candidates=2 * n, hinted_matches=n, leaked=leaked, fell_back=n)
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
def test_the_tiny_model_is_sampled_and_continued_through_the_engine(
    demos, tiny_vlm_dir, tmp_path, one_thread
):
    from agent_runtime.models.engine import TransformersEngine
    from agent_runtime.models.protocol import ChatCompletionRequest

    engine = TransformersEngine(tiny_vlm_dir)
    generator = EngineHintGenerator(engine, max_new_tokens=12, seed=0)
    run = demos[0]
    stats = hint_guided([run], tmp_path / "out", generator, roles=ROLES, k=2)
    n = len(_targets([run]))
    assert (stats.calls, stats.candidates) == (n, 2 * n)
    assert stats.verified + stats.fell_back == n and stats.dropped == 0
    assert len(collect_samples(tmp_path / "out", ROLES).samples) == n
    assert (
        load_run(next(iter_runs(tmp_path / "out"))).run.model_extra[HINT_KEY]["model"] == engine.served_name
    )

    # The continuation picks up exactly where the engine's own greedy reply would go on.
    messages = _targets([run], ("worker",))[1].messages
    request = {"messages": messages, "temperature": 0.0, "max_tokens": 12, "return_token_ids": True}
    greedy = engine.chat(ChatCompletionRequest.model_validate(request)).choices[0]
    assert generator.continue_greedy(messages, "") == greedy.message.content
    prefix = engine.tokenizer.decode(greedy.token_ids[:4])
    assert (prefix + generator.continue_greedy(messages, prefix)).startswith(greedy.message.content)


@pytest.mark.train
def test_a_lora_model_reference_samples_and_continues_with_its_adapter(
    demos, tiny_vlm_dir, tmp_path, one_thread
):
    from peft import LoraConfig, get_peft_model

    from agent_runtime.models.hf import load_model
    from agent_runtime.models.protocol import ChatCompletionRequest

    lora = LoraConfig(r=2, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    get_peft_model(load_model(tiny_vlm_dir), lora).save_pretrained(tmp_path / "adapter")
    generator = EngineHintGenerator.from_model_ref(
        f"transformers:{tiny_vlm_dir}?adapter={tmp_path / 'adapter'}", max_new_tokens=12
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
    # Even right after the engine served the base model, the continuation runs the adapter.
    assert generator.continue_greedy(messages, "") == adapted
