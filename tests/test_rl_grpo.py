"""Hi-Agent single-step GRPO: oracle data, r_ℓ, TRL phases, the alternating loop, ``distill --method grpo``.

The tiny random model never writes a well-formed action or subgoal, so every reward would be 0
and GRPO would learn nothing checkable. :func:`grpo_base` warm-starts it with a few supervised
steps (our SFT trainer) on the oracle's answer step towards the right reply *and* a wrong one —
at both levels — so sampled groups have mixed rewards, as after a real SFT stage. The high level
learns a subgoal in its own words (not the oracle's instruction), two times in three: greedy, it
writes that subgoal, which eq. 5 then adds to the low level's data.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_runtime.cli import app
from agent_runtime.trainers.data.worker_prompts import PromptSettings
from agent_runtime.trainers.hi_agent.grpo_data import GRPORecord, build_records, prompt_text
from tests.doubles import ScriptedChatModel

TASK = "SettingsWifiNetworkQuestion"
ANSWER = 2  # the oracle's step answering "Apt 4B"
SETTINGS = PromptSettings(min_pixels=56 * 56, max_pixels=112 * 112)
runner = CliRunner()


@pytest.fixture(autouse=True)
def one_torch_thread(request):
    """One CPU thread for torch tests: on a busy 2-core box two threads spin against each other."""
    if request.node.get_closest_marker("train") is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> list[GRPORecord]:
    out = tmp_path_factory.mktemp("grpo_data")
    found, experts = build_records(out, SETTINGS, tasks=TASK, split="all", episodes=1, seed=0)
    assert experts.successful_episodes == 1
    return found


def right_action(r: GRPORecord) -> str:
    """The oracle action as the low level writes it, in its coordinate space (2 decimals)."""
    s = r.solution
    action: dict[str, object] = {"action": s.action_type}
    if s.touch_point is not None:
        action["coordinate"] = [
            round(s.touch_point[0] * r.image_size[0], 2),
            round(s.touch_point[1] * r.image_size[1], 2),
        ]
    if s.typed_text:
        action[{"system_button": "button", "terminate": "status"}.get(s.action_type, "text")] = s.typed_text
    return json.dumps(action)


def _image(r: GRPORecord):
    from agent_runtime.trainers.data.datasets import ImageLoader

    return ImageLoader().load(Path(r.image_path).parent, Path(r.image_path).name, r.image_seen)


def own_subgoal(r: GRPORecord) -> str:
    """A well-formed subgoal for ``r``'s step, worded unlike the oracle's instruction."""
    return f"<reasoning>Ok.</reasoning><instruction>Instruction: Reply {r.solution.typed_text}</instruction>"


@pytest.fixture(scope="module")
def grpo_base(
    records: list[GRPORecord], tiny_vlm_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The tiny model, SFT-warm-started to answer right about half the time (module docstring)."""
    import torch
    from datasets import Dataset

    from agent_runtime.trainers.data.datasets import ImageLoader, assistant, sft_features
    from agent_runtime.trainers.sft_config import SFTConfig
    from agent_runtime.trainers.sft_trainer import train_sft

    torch.set_num_threads(1)
    loader = ImageLoader()
    rows = []
    for r in records[ANSWER : ANSWER + 1]:
        image = loader.load(Path(r.image_path).parent, Path(r.image_path).name, r.image_seen)
        pairs = [
            ("low", right_action(r)),
            ("low", '{"action": "wait"}'),
            ("high", own_subgoal(r)),
            ("high", own_subgoal(r)),
            ("high", "Tap."),
        ]
        for level, reply in pairs:
            prompt = [
                {
                    "role": "user",
                    "content": [
                        {"type": "image", "text": None},
                        {"type": "text", "text": prompt_text(r, level)},
                    ],
                }
            ]
            rows.append({"prompt": prompt, "completion": assistant(reply), "images": [image]})
    out = tmp_path_factory.mktemp("grpo_base") / "base"
    cfg = SFTConfig(
        base=str(tiny_vlm_dir),
        output_dir=out,
        lora=False,
        max_steps=80,
        learning_rate=1e-2,
        batch_size=len(rows),  # the whole set each step
        progress=False,
    )
    train_sft(cfg, Dataset.from_list(rows, features=sft_features()))
    return out


def _cfg(base: Path, out: Path, **kw: object):
    from agent_runtime.trainers.hi_agent.grpo_config import GRPOConfig

    fields = {
        "base": str(base),
        "output_dir": out,
        "num_generations": 4,
        "batch_size": 4,
        "gradient_accumulation_steps": 1,
        "max_steps": 2,
        "max_new_tokens": 64,
        "temperature": 1.0,
        "learning_rate": 5e-3,
        "lora_r": 4,
        "lora_alpha": 8,
        "progress": False,
        **kw,
    }
    return GRPOConfig(**fields)


# -- data and rewards (no torch) --------------------------------------------------------------------


def test_records_carry_normalised_touch_points_at_the_oracle_element_centres(records, tmp_path) -> None:
    from agent_runtime.simphone.tasks import select, task_instances
    from agent_runtime.trainers.demos.experts import play_expert_episode

    assert [r.solution.action_type for r in records] == ["open_app", "click", "answer", "terminate"]
    assert records[0].instruction == "Open the Settings app." and records[0].solution.typed_text == "Settings"
    assert records[2].solution.typed_text == "Apt 4B" and records[3].solution.typed_text == "success"
    assert all(r.problem == records[0].problem and Path(r.image_path).is_file() for r in records)
    # The tap: its element is the one the instruction names, and the point is that element's centre.
    episode = play_expert_episode(task_instances(select(TASK), split="all", episodes=1, seed=0)[0], tmp_path)
    obs = episode.observations[1]
    label = records[1].instruction.split('"')[1]
    element = next(e for e in obs.elements if e.label == label)
    cx, cy = (element.bounds.x1 + element.bounds.x2) / 2, (element.bounds.y1 + element.bounds.y2) / 2
    w, h = obs.size
    tx, ty = records[1].solution.touch_point
    assert abs(tx * w - cx) <= 0.5 and abs(ty * h - cy) <= 0.5  # the centre, on the pixel grid
    assert records[1].solution.lift_point == records[1].solution.touch_point
    assert 0 < records[1].solution.touch_point[0] < 1 and records[1].image_size == (56.0, 140.0)


def test_low_level_reward_is_one_only_for_the_oracle_action(records) -> None:
    from agent_runtime.trainers.hi_agent.grpo_rewards import make_low_level_reward

    reward = make_low_level_reward(epsilon=0.002)
    tap, answer = records[1], records[2]

    def score(record: GRPORecord, replies: list[str]) -> list[float]:
        n = len(replies)
        return reward(
            replies,
            solution=[json.dumps(record.solution.model_dump(mode="json"))] * n,
            image_size=[list(record.image_size)] * n,
        )

    x, y = (c * e for c, e in zip(tap.solution.touch_point, tap.image_size, strict=True))
    assert score(
        tap,
        [
            right_action(tap),
            json.dumps({"action": "click", "coordinate": [x + 1, y]}),  # 1 px of 56: beyond epsilon
            json.dumps({"action": "long_press", "coordinate": [x, y]}),
            "tap it",
        ],
    ) == [1.0, 0.0, 0.0, 0.0]
    assert score(
        answer,
        [
            '{"action": "answer", "text": " apt  4b"}',
            '{"action": "answer", "text": "42"}',
            [{"role": "assistant", "content": right_action(answer)}],  # conversational completions too
        ],
    ) == [1.0, 0.0, 1.0]


def test_high_level_subgoals_join_the_low_data_when_the_low_level_executes_them_as_the_oracle(
    records,
) -> None:
    """Eq. 5's low-level data: π_h's subgoal on each state, the state's oracle action its target.
    "env" keeps a subgoal only when π_ℓ (before the update) already answers it with that action."""
    from agent_runtime.trainers.hi_agent.grpo_subgoals import subgoal_records

    def fmt(instruction: str) -> str:
        return f"<reasoning>r</reasoning><instruction>Instruction: {instruction}</instruction>"

    tap, answer = records[1], records[2]
    writes = {  # π_h's reply per step: oracle wording, its own words (twice), malformed
        0: fmt(records[0].instruction.upper()),
        1: fmt("Tap the network entry"),
        2: fmt("Reply with the network name"),
        3: "done",
    }
    prompts: list[str] = []

    def high(row, prompt: str) -> str:
        prompts.append(prompt)
        assert row["image"].size == records[0].image_seen
        return writes[[prompt_text(r, "high") for r in records].index(prompt)]

    answers = {"Tap the network entry": '{"action": "click", "coordinate": [1, 1]}',  # not the oracle's point
               "Reply with the network name": right_action(answer)}  # fmt: skip
    executed: list[str] = []

    def low(row, instruction: str) -> str:
        executed.append(instruction)
        return answers[instruction]

    kept, stats = subgoal_records(records, high, low, subgoal_filter="env", epsilon=0.002)
    assert len(prompts) == 4 and executed == ["Tap the network entry", "Reply with the network name"]
    assert [(r.step, r.instruction, r.instruction_by) for r in kept] == [
        (2, "Reply with the network name", "high_level")
    ]
    assert kept[0].solution == answer.solution and kept[0].image_path == answer.image_path
    assert stats.model_dump() == {"states": 4, "well_formed": 3, "oracle_wording": 1, "kept": 1}
    kept, stats = subgoal_records(records, high, low, subgoal_filter="none", epsilon=0.002)
    assert [(r.step, r.solution) for r in kept] == [(1, tap.solution), (2, answer.solution)]
    assert stats.kept == 2


# -- TRL phases and the loop -------------------------------------------------------------------------


@pytest.mark.train
def test_one_low_level_phase_runs_through_trl_and_moves_the_lora_weights(
    records, grpo_base, tmp_path
) -> None:
    from safetensors.torch import load_file

    from agent_runtime.trainers.hi_agent.grpo_data import build_dataset
    from agent_runtime.trainers.hi_agent.grpo_rewards import make_low_level_reward
    from agent_runtime.trainers.hi_agent.grpo_trainer import run_phase

    dataset, dropped = build_dataset(records, "low")
    assert dropped == 0 and len(dataset) == 4 and dataset[0]["image"].size == records[0].image_seen
    dataset, _ = build_dataset(records[ANSWER : ANSWER + 1], "low")
    out = tmp_path / "phase"
    cfg = _cfg(grpo_base, out, level="low")
    result = run_phase(cfg, dataset, [make_low_level_reward()], reference=str(grpo_base))
    assert result.training.steps == 2 and len(result.training.losses) == 2
    assert all(math.isfinite(p.loss) for p in result.training.losses)
    assert set(result.rewards) == {"action_match"} and 0 < result.match_rate < 1, result.rewards
    lora_b = [t for k, t in load_file(str(out / "adapter_model.safetensors")).items() if "lora_B" in k]
    assert lora_b and max(float(t.abs().max()) for t in lora_b) > 0  # B starts at zero: it moved


def _random_adapter(base: Path, out: Path, seed: int) -> Path:
    """A LoRA adapter over ``base`` with random A *and* B: a policy unlike the base."""
    import torch
    from peft import LoraConfig, get_peft_model

    from agent_runtime.models.hf import load_model
    from agent_runtime.trainers.base_config import LANGUAGE_MODEL_LORA_TARGETS

    torch.manual_seed(seed)
    targets = LANGUAGE_MODEL_LORA_TARGETS
    config = LoraConfig(r=4, lora_alpha=8, target_modules=targets, init_lora_weights=False)
    get_peft_model(load_model(base, dtype="float32"), config).save_pretrained(out)
    return out


@pytest.mark.train
def test_the_kl_reference_is_the_start_not_the_previous_iteration(records, tiny_vlm_dir, tmp_path) -> None:
    """Iteration 2 continues iteration 1's adapter; TRL alone would take that adapter as the KL
    reference. The reference TRL computes its log-probs with must be the start: the base (the
    adapters disabled), or the starting adapter."""
    import torch
    from trl.trainer.utils import use_adapter

    from agent_runtime.models.refs import resolve_model_ref
    from agent_runtime.trainers.hf import load_reference
    from agent_runtime.trainers.hi_agent.grpo_data import build_dataset
    from agent_runtime.trainers.hi_agent.grpo_rewards import make_low_level_reward
    from agent_runtime.trainers.hi_agent.grpo_trainer import make_trainer

    start = _random_adapter(tiny_vlm_dir, tmp_path / "start", seed=1)
    iter1 = _random_adapter(tiny_vlm_dir, tmp_path / "iter1", seed=2)
    dataset, _ = build_dataset(records[:1], "low")
    ids = torch.tensor([[5, 17, 42, 9, 77, 3]])

    def logits(model) -> torch.Tensor:
        with torch.no_grad():
            return model(input_ids=ids).logits

    for reference in (str(tiny_vlm_dir), f"transformers:{tiny_vlm_dir}?adapter={start}"):
        cfg = _cfg(f"transformers:{tiny_vlm_dir}?adapter={iter1}", tmp_path / "out", level="low", beta=0.04)
        model = make_trainer(cfg, dataset, [make_low_level_reward()], reference=reference).model
        with use_adapter(model, "ref" if "ref" in model.peft_config else None):  # as TRL scores the reference
            ref = logits(model)
        policy = logits(model)
        assert torch.allclose(ref, logits(load_reference(resolve_model_ref(reference))), atol=1e-5)
        assert not torch.allclose(ref, policy, atol=1e-3)  # iteration 1's policy is not the reference
        assert torch.allclose(policy, logits(load_reference(resolve_model_ref(cfg.base))), atol=1e-5)
        trainable = [n for n, p in model.named_parameters() if p.requires_grad]
        assert trainable and all(".default." in n for n in trainable)  # the reference stays frozen


@pytest.mark.train
def test_grpo_from_an_sft_adapter_with_dropout_scores_on_policy(records, tiny_vlm_dir, tmp_path) -> None:
    """GRPO from an SFT adapter with lora_dropout 0.05 (random A and B: dropout changes the
    function), the reference that same adapter, the model in train mode as TRL trains it. TRL's
    own scorer gives the old, the new and the reference log-probs: at policy = reference the
    ratio exp(new − old) is 1 and the k3 KL exp(ref − new) − (ref − new) − 1 is 0. With TRL's
    default (dropout on) each forward drew its own mask: KL ~1e-3 and ratios far from 1."""
    import torch
    from peft import LoraConfig, get_peft_model
    from trl.trainer.utils import use_adapter

    from agent_runtime.models.hf import load_model
    from agent_runtime.trainers.base_config import LANGUAGE_MODEL_LORA_TARGETS
    from agent_runtime.trainers.hi_agent.grpo_data import build_dataset
    from agent_runtime.trainers.hi_agent.grpo_rewards import make_low_level_reward
    from agent_runtime.trainers.hi_agent.grpo_trainer import make_trainer

    torch.manual_seed(3)
    sft = tmp_path / "sft"
    lora = LoraConfig(
        r=4,
        lora_alpha=8,
        lora_dropout=0.05,
        target_modules=LANGUAGE_MODEL_LORA_TARGETS,
        init_lora_weights=False,
    )
    get_peft_model(load_model(tiny_vlm_dir, dtype="float32"), lora).save_pretrained(sft)
    start = f"transformers:{tiny_vlm_dir}?adapter={sft}"
    dataset, _ = build_dataset(records[:1], "low")
    cfg = _cfg(start, tmp_path / "out", level="low", beta=0.04)
    trainer = make_trainer(cfg, dataset, [make_low_level_reward()], reference=start)
    model = trainer.model
    assert model.peft_config["default"].lora_dropout == 0.05  # the adapter keeps its setting …
    model.train()  # … and TRL trains in train mode
    ids = torch.randint(5, 200, (4, 24), generator=torch.Generator().manual_seed(0))
    mask = torch.ones_like(ids)

    def logps() -> torch.Tensor:
        with torch.no_grad():
            return trainer._get_per_token_logps_and_entropies(model, ids, mask, 12)[0]

    old, new = logps(), logps()
    with use_adapter(model, adapter_name="ref"):
        ref = logps()
    ratio = torch.exp(new - old)
    kl = torch.exp(ref - new) - (ref - new) - 1
    assert float((ratio - 1).abs().max()) <= 1e-4
    assert float(kl.max()) < 1e-8


@pytest.mark.train
def test_advantages_use_the_configured_epsilon_and_sampling_uses_top_k(records, grpo_base, tmp_path) -> None:
    """One group of G = 4 with rewards [1, 0, 0, 0]: mean 0.25, std (TRL's, unbiased)
    sqrt((0.75² + 3·0.25²)/3) = 0.5. With ε = 0.5: A = 0.75/(0.5 + 0.5) = 0.75 for the first,
    −0.25/1 = −0.25 for the others (TRL's own 1e-4 would give 1.4997 and −0.4999)."""
    from agent_runtime.trainers.hi_agent.grpo_data import build_dataset
    from agent_runtime.trainers.hi_agent.grpo_trainer import make_trainer

    def first_of_group(completions, **kwargs) -> list[float]:
        return [1.0 if i % 4 == 0 else 0.0 for i in range(len(completions))]

    dataset, _ = build_dataset(records[ANSWER : ANSWER + 1], "low")
    cfg = _cfg(grpo_base, tmp_path / "out", level="low", advantage_epsilon=0.5, max_steps=1, top_k=7)
    trainer = make_trainer(cfg, dataset, [first_of_group], reference=str(grpo_base))
    assert trainer.generation_config.top_k == 7 and trainer.generation_config.do_sample
    trainer.train()
    # TRL keeps the last batch's raw rewards and advantages for its completions table.
    assert list(trainer._logs["rewards"]["first_of_group"]) == [1.0, 0.0, 0.0, 0.0]
    assert list(trainer._logs["advantages"]) == pytest.approx([0.75, -0.25, -0.25, -0.25], abs=1e-6)


@pytest.mark.train
def test_alternating_loop_updates_low_then_high_and_resumes(grpo_base, tmp_path) -> None:
    from agent_runtime.trainers.hi_agent.grpo_data import load_records
    from agent_runtime.trainers.hi_agent.grpo_rewards import parse_subgoal
    from agent_runtime.trainers.hi_agent.grpo_trainer import (
        ChatHighLevel,
        ChatJudge,
        chat_model_for,
        train_grpo,
    )
    from agent_runtime.trainers.online.loop import RLOptions

    judge_model = ScriptedChatModel(script={"judge": ['{"reward": 1}', "not sure", '{"reward": 0}']})
    out = tmp_path / "alt"
    # 16 completions a step = all four oracle steps, G = 4 each; every well-formed subgoal of π_h
    # joins the low level's data (the r_env filter has its own test).
    cfg = _cfg(
        grpo_base, out, role="manager", alternate=True, max_steps=1, batch_size=16, subgoal_filter="none"
    )
    opts = RLOptions(tasks=TASK, split="all", iterations=1)
    lines: list[str] = []
    _, training, _ = train_grpo(cfg, opts, SETTINGS, judge=ChatJudge(judge_model), echo=lines.append)
    metrics = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    phases = metrics[0]["phases"]
    assert [(p["level"], p["role"]) for p in phases] == [("low", "worker"), ("high", "manager")]
    # Eq. 5: the low level also trained on the subgoals the high level (here the start) writes.
    it1 = out / "iter_0001"
    written = load_records(it1 / "low_level" / "subgoals.jsonl")
    assert written and all(r.instruction_by == "high_level" for r in written), metrics[0]["subgoals"]
    assert phases[0]["rows"] == 4 + len(written) and metrics[0]["subgoals"]["kept"] == len(written)
    pi_h = ChatHighLevel(chat_model_for(str(grpo_base), max_tokens=cfg.max_new_tokens))
    oracle = {r.step: r for r in build_records(tmp_path / "again", SETTINGS, tasks=TASK, split="all",
                                               episodes=1, seed=0)[0]}  # fmt: skip
    for r in written:
        assert r.instruction != oracle[r.step].instruction and r.solution == oracle[r.step].solution
        reply = pi_h({"image": _image(r)}, prompt_text(oracle[r.step], "high"))
        assert parse_subgoal(reply) == r.instruction  # what π_h writes on that state
    assert set(phases[1]["rewards"]) == {"format_reward", "env_reward", "judge_reward"}
    assert phases[1]["rewards"]["format_reward"] > 0  # the warm start writes subgoals: judge and π_ℓ ran
    calls = judge_model.calls_for("judge")
    assert calls and all(c.n_images == 1 and "Instruction:" in c.prompt for c in calls)
    assert json.loads((it1 / "manifest.json").read_text())["role"] == "manager"
    assert json.loads((it1 / "low_level" / "manifest.json").read_text())["role"] == "worker"
    # π_ℓ was saved before π_h's phase started: eq. 5's order.
    assert (it1 / "low_level" / "adapter_model.safetensors").stat().st_mtime <= (
        it1 / "adapter_model.safetensors"
    ).stat().st_mtime
    assert lines[-1].startswith("iter 1: worker reward") and "| manager reward" in lines[-1]
    assert training.steps == 2 and (out / "low_level" / "manifest.json").is_file()
    # --resume: iteration 2 only, from iteration 1's adapters.
    lines.clear()
    train_grpo(
        cfg,
        opts.model_copy(update={"iterations": 2, "resume": True}),
        SETTINGS,
        judge=ChatJudge(judge_model),
        echo=lines.append,
    )
    assert lines[0] == "resuming after iteration 1" and lines[1].startswith("iter 2:")
    manifest = json.loads((out / "iter_0002" / "manifest.json").read_text())
    assert [m["iteration"] for m in manifest["training"]["extra"]["iterations"]] == [1]
    metrics = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(metrics) == 2
    # Both levels' KL reference is still where RL started, not iteration 1's adapters.
    for m in metrics:
        assert [Path(p["reference"]).resolve() for p in m["phases"]] == [grpo_base.resolve()] * 2


# -- the CLI ----------------------------------------------------------------------------------------


def _cli(base: Path, out: Path, *extra: str):
    args = [
        "distill", "--method", "grpo", "--base", str(base), "--out", str(out), "--env", "simphone",
        "--tasks", TASK, "--split", "all", "--min-pixels", "3136", "--max-pixels", "12544",
        "--group-size", "2", "--batch-size", "2", "--grad-accum", "1", "--max-new-tokens", "24", *extra,
    ]  # fmt: skip
    return runner.invoke(app, args, terminal_width=200)


@pytest.mark.train
def test_distill_grpo_worker_end_to_end(grpo_base, tmp_path) -> None:
    out = tmp_path / "cli"
    res = _cli(grpo_base, out, "--role", "worker", "--iterations", "1", "--max-steps", "1", "--lora-r", "4")
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())
    assert "oracle steps: 4 from 1/1 episodes" in said and "iter 1: worker reward" in said and "match" in said
    m = json.loads((out / "iter_0001" / "manifest.json").read_text())
    assert (m["method"], m["role"], m["kind"]) == ("grpo", "worker", "lora")
    assert m["hyperparameters"]["level"] == "low" and m["hyperparameters"]["num_generations"] == 2
    top = json.loads((out / "manifest.json").read_text())
    assert top["method"] == "grpo" and (out / "adapter_model.safetensors").is_file()
    res = _cli(grpo_base, out, "--role", "worker", "--iterations", "1")
    assert res.exit_code != 0 and "--resume" in res.output and "Traceback" not in res.output


def test_distill_grpo_misuse_is_a_clear_error(tmp_path) -> None:
    base = tmp_path / "no-model"
    for role, expected in (("reflector", "worker or the manager"), ("pilot", "unknown role")):
        res = _cli(base, tmp_path / "out", "--role", role)
        assert res.exit_code != 0 and expected in res.output and "Traceback" not in res.output
    res = runner.invoke(
        app,
        [
            "distill",
            "--method",
            "grpo",
            "--role",
            "worker",
            "--base",
            str(base),
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert res.exit_code != 0 and "--env simphone" in res.output
    assert "grpo" in runner.invoke(app, ["distill", "--help"]).output
