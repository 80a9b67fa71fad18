"""Trainers on real runtime traces and SimPhone: datasets, SFT, DPO pairs and DPO, IRR.

Runs come from the product's :class:`~agent_runtime.runtime.Runtime` on SimPhone, its models a
``ScriptedChatModel`` whose Worker follows the task's oracle (one run also makes a wrong tap
first, so it holds a FAILURE → SUCCESS correction on the same screen). Training uses the tiny
offline Qwen2.5-VL (session fixture ``tiny_vlm_dir``), so every torch test stays in one process.
"""

from __future__ import annotations

import json
import random
import statistics
from pathlib import Path

import pytest

from agent_runtime.actions import Click
from agent_runtime.config import ModelConfig, RoleConfig, RuntimeConfig
from agent_runtime.coords import CoordMapper, CoordSpace
from agent_runtime.runtime import Runtime
from agent_runtime.simphone import SimPhone
from agent_runtime.simphone.tasks import OraclePolicy, make_task
from agent_runtime.traces import annotate_run, iter_runs, load_run
from agent_runtime.trainers.data.matching import actions_match
from agent_runtime.trainers.data.preferences import (
    Level,
    aligned_actions,
    invalid_taps,
    level_of,
    simphone_pairs,
    trace_pairs,
)
from agent_runtime.trainers.data.samples import collect_samples
from agent_runtime.trainers.data.worker_prompts import PromptSettings, format_worker_reply, to_model_space
from agent_runtime.trainers.demos.experts import collect_expert_steps, describe_action
from agent_runtime.trainers.irr_config import IRRConfig
from agent_runtime.trainers.irr_trainer import Candidate, judge_candidate, run_irr
from tests.doubles import ScriptedChatModel, manager_reply, notetaker_reply, reflector_reply
from tests.test_filters import write_run

BUDGET = {"min_pixels": 56 * 56, "max_pixels": 112 * 112}
PROMPT = PromptSettings(**BUDGET)
ROLES = ("manager", "worker", "reflector", "notetaker")


@pytest.fixture(autouse=True)
def one_torch_thread(request):
    """Torch tests here run on one CPU thread: the tiny model gains nothing from two, and on a
    busy 2-core machine two threads spin against each other (20 SFT steps: ~1 s vs ~45 s)."""
    if request.node.get_closest_marker("train") is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# -- runs written by the runtime ------------------------------------------------------------------


def oracle_agent(task, phone: SimPhone, *, wrong_first: bool = False) -> dict:
    """A per-role script: the Worker plays the task's oracle (optionally one wrong tap first)."""
    oracle = OraclePolicy(task)
    mapper = CoordMapper(space=CoordSpace.PIXELS_RESIZED, screen=phone.screen_size, budget=PROMPT.budget)
    state = {"wrong": wrong_first}

    def worker(call) -> str:
        obs = phone.observe()
        if state["wrong"]:
            state["wrong"] = False
            action = invalid_taps(obs.elements, obs.size, random.Random(0), 1)[0]
        else:
            action = oracle(obs).to_json()
        description = describe_action(action, obs.elements)
        return format_worker_reply(f"Next: {description}", to_model_space(action, mapper), description)

    def reflector(call) -> str:
        return (
            reflector_reply("C", "Nothing changed.")
            if "Tap the screen at" in call.prompt
            else reflector_reply("A")
        )

    def manager(call) -> str:
        return manager_reply("Finished") if task.is_successful(phone) >= 1.0 else manager_reply([task.goal])

    return {
        "manager": manager,
        "worker": worker,
        "reflector": reflector,
        "notetaker": notetaker_reply("- none"),
    }


def record_run(root: Path, name: str, seed: int, *, wrong_first: bool = False) -> Path:
    task = make_task(name, seed)
    phone = SimPhone(seed=seed)
    task.setup(phone)
    model = ScriptedChatModel(script=oracle_agent(task, phone, wrong_first=wrong_first))
    config = RuntimeConfig(
        models={"default": ModelConfig(**BUDGET)}, roles={"rag": RoleConfig(enabled=False)}
    )
    result = Runtime(config, models=dict.fromkeys(ROLES, model), runs_dir=root).run(task.goal, device=phone)
    # what `agent-runtime eval` records: SimPhone's own judgement of the episode
    annotate_run(
        result.run_dir, eval={"task": name, "seed": seed, "task_success": task.is_successful(phone) >= 1.0}
    )
    run = load_run(result.run_dir)
    return run.dir


@pytest.fixture(scope="session")
def simphone_runs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("simphone-runs")
    record_run(root, "SettingsToggle", 0)
    record_run(root, "ClockReachTab", 0, wrong_first=True)
    record_run(root, "SettingsReachPage", 1)
    return root


def test_runtime_traces_carry_labels(simphone_runs):
    runs = [load_run(d) for d in iter_runs(simphone_runs)]
    assert all(r.run.status == "completed" and r.run.eval["task_success"] for r in runs)
    samples = collect_samples(simphone_runs, ["worker"]).samples
    assert samples and all(s.outcome == "success" and s.outcome_source == "eval" for s in samples)
    assert {s.verdict.outcome for s in samples} == {"A", "C"}
    assert all(s.image_hashes and s.messages[0]["content"][-1]["type"] == "image_ref" for s in samples)


@pytest.mark.train
def test_samples_become_a_trl_vision_dataset(simphone_runs):
    from agent_runtime.trainers.data.datasets import build_sft_dataset

    samples = collect_samples(simphone_runs, ["worker", "manager"]).samples[:6]
    ds = build_sft_dataset(samples)
    assert ds.column_names == ["prompt", "completion", "images"] and len(ds) == len(samples)
    for row, s in zip(ds, samples, strict=True):
        parts = [p for m in row["prompt"] for p in m["content"]]
        refs = [
            p
            for m in s.messages
            for p in m["content"]
            if isinstance(p, dict) and p.get("type") == "image_ref"
        ]
        assert sum(p["type"] == "image" for p in parts) == len(row["images"]) == len(refs) >= 1
        # images as the role saw them: the recorded (smart_resize) size
        assert [list(img.size) for img in row["images"]] == [r["size"] for r in refs]
        assert row["completion"] == [
            {"role": "assistant", "content": [{"type": "text", "text": s.completion}]}
        ]


def test_trace_pairs_pair_a_failure_with_the_later_success_on_the_same_screen(simphone_runs):
    samples = collect_samples(simphone_runs, ["worker"]).samples
    pairs = trace_pairs(samples)
    assert len(pairs) == 1
    (pair,) = pairs
    failed = next(s for s in samples if s.verdict.outcome == "C")
    fixed = next(s for s in samples if s.run_id == failed.run_id and s.step == failed.step + 1)
    assert fixed.screen_hash == failed.screen_hash and fixed.verdict.success
    assert pair.rejected == failed.completion and pair.chosen == fixed.completion
    assert pair.messages == failed.messages and (pair.chosen_level, pair.rejected_level) == (
        "SUCCESS",
        "FAILURE",
    )


# -- ReachAgent levels on SimPhone ------------------------------------------------------------------


def test_levels_of_alternative_actions():
    task = make_task("ClockReachTab", 0)
    phone = SimPhone(seed=0)
    task.setup(phone)
    golden, observations = [], []
    policy = OraclePolicy(task)
    while True:
        obs = phone.observe()
        action = policy(obs)
        golden.append(action.to_json())
        observations.append(obs)
        if action.action == "terminate":
            break
        phone.execute(action)
    assert [a["action"] for a in golden] == ["open_app", "click", "terminate"]
    launcher = observations[0]
    icon = next(e for e in launcher.elements if e.label == "Clock" and e.actionable)
    settings = next(e for e in launcher.elements if e.label == "Settings" and e.actionable)
    tap_icon = Click(coordinate=icon.bounds.center).to_json()
    detour = Click(coordinate=settings.bounds.center).to_json()
    assert tap_icon in aligned_actions(launcher.elements, launcher.size)

    assert level_of("ClockReachTab", 0, golden, 0, golden[0], task.max_steps) is Level.GOLDEN
    # tapping the icon opens the app like open_app: an equally short flow
    assert level_of("ClockReachTab", 0, golden, 0, tap_icon, task.max_steps) is Level.GOLDEN
    # a detour through Settings still reaches the tab, later
    assert level_of("ClockReachTab", 0, golden, 0, detour, task.max_steps) is Level.LONGER
    # ... but not within a budget that leaves no room for it
    assert level_of("ClockReachTab", 0, golden, 0, detour, 2) is Level.INCOMPLETE
    for tap in invalid_taps(launcher.elements, launcher.size, random.Random(1), 5):
        assert tap not in aligned_actions(launcher.elements, launcher.size)
        assert not any(e.actionable and e.bounds.contains(*tap["coordinate"]) for e in launcher.elements)


def test_simphone_pairs_are_golden_over_lower_levels(tmp_path):
    pairs, stats = simphone_pairs(tmp_path, PROMPT, tasks="ClockReachTab,SettingsToggle", max_candidates=4)
    assert stats.states == 7 and not stats.skipped
    assert pairs and all(p.chosen_level == "GOLDEN" for p in pairs)
    assert all(Level[p.rejected_level] < Level.GOLDEN for p in pairs)
    assert {p.rejected_level for p in pairs} >= {"LONGER", "INVALID"}
    assert sum(stats.pairs.values()) == len(pairs)
    # each state pairs the golden reply with at most one candidate per lower level
    per_state: dict[str, list[str]] = {}
    for p in pairs:
        per_state.setdefault(p.state, []).append(p.rejected_level)
        assert p.chosen != p.rejected and (Path(p.root) / p.messages[0]["content"][1]["ref"]).is_file()
    assert all(len(levels) == len(set(levels)) for levels in per_state.values())
    # the chosen reply is the golden action, written in the model's coordinate space
    first = pairs[0]
    action = json.loads(first.chosen.split("### Action ###")[1].split("### Description ###")[0])
    assert action["action"] in ("open_app", "click", "terminate")


# -- training -------------------------------------------------------------------------------------


def sft_config(base: Path, out: Path, **kw):
    from agent_runtime.trainers.sft_config import SFTConfig

    return SFTConfig(base=str(base), output_dir=out, progress=False, **kw)


@pytest.mark.train
def test_sft_two_steps_then_the_adapter_loads_and_generates(simphone_runs, tiny_vlm_dir, tmp_path):
    from agent_runtime.models.engine import TransformersEngine
    from agent_runtime.models.protocol import ChatCompletionRequest
    from agent_runtime.models.refs import resolve_model_ref
    from agent_runtime.trainers.data.datasets import build_sft_dataset
    from agent_runtime.trainers.sft_trainer import train_sft

    samples = collect_samples(simphone_runs, ["worker"]).samples
    summary = train_sft(sft_config(tiny_vlm_dir, tmp_path / "sft", max_steps=2), build_sft_dataset(samples))
    assert summary.steps == 2 and len(summary.losses) == 2
    assert (tmp_path / "sft" / "adapter_config.json").is_file()

    resolved = resolve_model_ref(f"transformers:{tiny_vlm_dir}?adapter={tmp_path / 'sft'}")
    engine = TransformersEngine(resolved.base)
    engine.load_adapter("worker-sft", str(resolved.adapter))
    reply = engine.chat(
        ChatCompletionRequest.model_validate(
            {
                "model": "worker-sft",
                "messages": [{"role": "user", "content": "### User Request ###\nOpen Settings"}],
                "max_tokens": 8,
                "temperature": 0,
            }
        )
    )
    assert reply.model == "worker-sft" and reply.usage.completion_tokens > 0


@pytest.mark.train
def test_sft_loss_decreases_on_a_fixed_set(tiny_vlm_dir, tmp_path):
    from agent_runtime.trainers.data.datasets import build_sft_dataset
    from agent_runtime.trainers.sft_trainer import train_sft

    # four short hand-built Worker calls (the runtime's prompts are long for a CPU loop of 20 steps)
    actions = [{"action": "click", "coordinate": [10 * i, 20]} for i in range(1, 5)]
    write_run(
        tmp_path / "runs",
        "fixed",
        [{"action": a, "thought": f"Tap item {i}."} for i, a in enumerate(actions)],
    )
    samples = collect_samples(tmp_path / "runs", ["worker"]).samples
    config = sft_config(tiny_vlm_dir, tmp_path / "fit", max_steps=20, learning_rate=1e-2, seed=0)
    losses = [p.loss for p in train_sft(config, build_sft_dataset(samples)).losses]
    assert len(losses) == 20
    first, last = statistics.mean(losses[:5]), statistics.mean(losses[-5:])
    assert last < first - 0.25, losses


@pytest.mark.train
def test_dpo_runs_two_steps_on_simphone_pairs(tiny_vlm_dir, tmp_path):
    from agent_runtime.trainers.data.datasets import build_dpo_dataset
    from agent_runtime.trainers.dpo_config import DPOConfig
    from agent_runtime.trainers.dpo_trainer import train_dpo

    pairs, _ = simphone_pairs(tmp_path / "data", PROMPT, tasks="ClockReachTab", max_candidates=2)
    ds = build_dpo_dataset(pairs[:4])
    assert ds.column_names == ["prompt", "chosen", "rejected", "images"]
    config = DPOConfig(base=str(tiny_vlm_dir), output_dir=tmp_path / "dpo", max_steps=2, progress=False)
    summary = train_dpo(config, ds)
    assert summary.steps == 2 and len(summary.losses) == 2
    assert summary.losses[0].loss == pytest.approx(0.6931, abs=1e-3)  # log 2: policy == reference at step 1
    assert (tmp_path / "dpo" / "adapter_model.safetensors").is_file()


class ScriptedCandidates:
    """Test double of IRR's candidate generator: fixed replies per expert step."""

    def __init__(self, settings: PromptSettings) -> None:
        self.settings = settings
        self.adapters: list[tuple[Path, str]] = []

    def use_adapter(self, path: Path, name: str) -> None:
        self.adapters.append((Path(path), name))

    def propose(self, step, messages, k):
        assert messages[0]["content"][-1]["type"] == "image_url"
        mapper = self.settings.mapper(step.screen)
        right = to_model_space(step.action, mapper)
        replies = [
            Candidate(
                text=format_worker_reply("A long and winding reason to do it", right, "do it"),
                mean_logprob=-2,
            ),
            Candidate(text=format_worker_reply("Short reason", right, "do it"), mean_logprob=-1.0),
            Candidate(text="I am not sure what to do", mean_logprob=-0.5),
        ]
        if step.action["action"] == "click":
            x1, y1, _, _ = step.target_bounds
            off = to_model_space({"action": "click", "coordinate": [x1 - 5, y1 - 5]}, mapper)
            replies.append(Candidate(text=format_worker_reply("Tap it", off, "tap"), mean_logprob=-0.1))
        return replies[:k]


@pytest.mark.train
def test_irr_keeps_only_matching_candidates_and_stops_when_saturated(tiny_vlm_dir, tmp_path):
    experts = collect_expert_steps(tmp_path / "data", tasks="ClockReachTab,SettingsToggle")
    assert experts.successful_episodes == 2 and len(experts.steps) == 7
    generator = ScriptedCandidates(PROMPT)
    config = IRRConfig(
        base=str(tiny_vlm_dir),
        output_dir=tmp_path / "irr",
        prompt=PROMPT,
        k=4,
        max_rounds=3,
        max_steps=2,
        progress=False,
    )
    # what a round keeps: exactly the replies whose action matches the expert's
    for step in experts.steps:
        judged = [
            judge_candidate(c, step, PROMPT, config.match_tolerance)
            for c in generator.propose(step, [{"content": [{"type": "image_url"}]}], 4)
        ]
        assert [j.matched for j in judged][:3] == [True, True, False]
        if step.action["action"] == "click":
            assert judged[3].action is not None and not judged[3].matched
        for j in judged:
            if j.action is not None:
                assert j.matched == actions_match(j.action, step.action, target_bounds=step.target_bounds)

    result = run_irr(config, experts.steps, generator)
    first, second = result.rounds
    assert first.match_rate == 1.0 and first.rows == 2 * len(experts.steps)  # stage 0: both matches per step
    assert first.matched_candidates == 2 * len(experts.steps) and first.unparsed_candidates == len(
        experts.steps
    )
    assert second.match_rate == 1.0 and second.training is None  # no gain: saturated, not retrained
    assert result.stopped == "saturated" and result.final_round == 0
    assert generator.adapters == [(tmp_path / "irr" / "rounds" / "round-0", "irr-round-0")]
    assert (tmp_path / "irr" / "adapter_config.json").is_file()


@pytest.mark.train
def test_irr_samples_a_real_tiny_model(tiny_vlm_dir, tmp_path):
    from agent_runtime.models.engine import TransformersEngine
    from agent_runtime.trainers.irr_trainer import EngineGenerator, sample_round

    experts = collect_expert_steps(tmp_path / "data", tasks="ClockReachTab")
    config = IRRConfig(
        base=str(tiny_vlm_dir), output_dir=tmp_path / "irr", prompt=PROMPT, k=3, max_new_tokens=24
    )
    generator = EngineGenerator(
        TransformersEngine(tiny_vlm_dir), temperature=1.0, top_p=1.0, max_new_tokens=24
    )
    judged = sample_round(generator, experts.steps[:2], config)
    assert [len(js) for js in judged] == [3, 3]
    for step, js in zip(experts.steps[:2], judged, strict=True):
        for j in js:
            assert j.candidate.mean_logprob is not None and j.candidate.mean_logprob <= 0
            if j.action is None:
                assert not j.matched and j.error
            else:
                assert j.matched == actions_match(j.action, step.action, target_bounds=step.target_bounds)
