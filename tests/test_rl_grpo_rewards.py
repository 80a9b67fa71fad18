"""Hi-Agent's foresight reward functions (TRL signature) and the RL configs' paper defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from agent_runtime.errors import ParseError
from agent_runtime.trainers.data.matching import ForesightAction, foresight_match
from agent_runtime.trainers.hi_agent.grpo_config import GRPOConfig
from agent_runtime.trainers.hi_agent.grpo_rewards import (
    action_match_reward,
    foresight_reward_funcs,
    format_reward,
    make_env_reward,
    make_judge_reward,
    parse_judge_reply,
    parse_subgoal,
)
from agent_runtime.trainers.online.dgrpo_config import DGRPOConfig
from agent_runtime.trainers.online.trpo_config import TRPOConfig

GOOD = (
    "<reasoning>Chrome is on the home screen.</reasoning>\n<instruction>Instruction: tap Chrome</instruction>"
)
SOLUTION = {"action_type": "click", "touch_point": [0.25, 0.5], "lift_point": [0.25, 0.5], "typed_text": ""}


def test_format_reward_accepts_only_the_two_blocks() -> None:
    completions = [
        GOOD,
        [{"role": "assistant", "content": GOOD}],  # conversational completion
        [{"role": "assistant", "content": [{"type": "text", "text": GOOD}]}],
        "<reasoning>r</reasoning><instruction>tap Chrome</instruction>",  # no "Instruction:"
        "<instruction>Instruction: tap</instruction><reasoning>r</reasoning>",  # wrong order
        GOOD + " extra",  # trailing text
        "<reasoning> </reasoning><instruction>Instruction: tap</instruction>",  # empty reasoning
        "<reasoning>r</reasoning><instruction>Instruction:   </instruction>",  # empty instruction
    ]
    assert format_reward(completions) == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert parse_subgoal(GOOD) == "tap Chrome"


def test_foresight_match_by_hand() -> None:
    """ε = 0.002: (0.2512, 0.5009) is √(0.0012² + 0.0009²) = 0.0015 from (0.25, 0.5): match;
    (0.2516, 0.5013) is √(0.0016² + 0.0013²) = √4.25e−6 = 0.00206: no match.
    A swipe also compares the lift point; a point-free action matches on its type."""
    oracle = ForesightAction.coerce(SOLUTION)
    assert foresight_match(ForesightAction(action_type="click", touch_point=(0.2512, 0.5009)), oracle)
    assert not foresight_match(ForesightAction(action_type="click", touch_point=(0.2516, 0.5013)), oracle)
    assert not foresight_match(ForesightAction(action_type="long_press", touch_point=(0.25, 0.5)), oracle)
    assert foresight_match(
        ForesightAction(action_type="click", touch_point=(0.2516, 0.5013)), oracle, epsilon=0.01
    )
    swipe = ForesightAction(action_type="swipe", touch_point=(0.5, 0.8), lift_point=(0.5, 0.2))
    assert not foresight_match(
        ForesightAction(action_type="swipe", touch_point=(0.5, 0.8), lift_point=(0.5, 0.5)), swipe
    )
    assert foresight_match(
        ForesightAction(action_type="swipe", touch_point=(0.5, 0.8), lift_point=(0.5, 0.2)), swipe
    )
    assert not foresight_match(ForesightAction(action_type="swipe", touch_point=(0.5, 0.8)), swipe)
    back = ForesightAction.coerce({"action": "system_button", "button": "Back"})
    assert foresight_match(back, ForesightAction(action_type="SYSTEM-BUTTON"))


def test_coerce_normalises_pixels_and_rejects_garbage() -> None:
    """(270, 1200) on a 1080×2400 screen is (0.25, 0.5)."""
    a = ForesightAction.coerce('{"action": "click", "coordinate": [270, 1200]}', image_size=[1080, 2400])
    assert a.touch_point == pytest.approx((0.25, 0.5))
    with pytest.raises(ParseError, match="image_size"):
        ForesightAction.coerce({"action": "click", "coordinate": [270, 1200]})
    with pytest.raises(ParseError):
        ForesightAction.coerce("I would tap Chrome")
    with pytest.raises(ParseError):
        ForesightAction.coerce({"action_type": "click", "touch_point": "here"})


def test_low_level_match_reward_uses_the_solution_column() -> None:
    completions = [
        '{"action": "click", "coordinate": [271, 1201]}',  # (0.25093, 0.50042): 0.0010 away
        '{"action": "click", "coordinate": [280, 1200]}',  # 0.00926 away
        "no action here",
    ]
    kwargs = {"solution": [SOLUTION] * 3, "image_size": [[1080, 2400]] * 3, "trainer_state": object()}
    assert action_match_reward(completions, **kwargs) == [1.0, 0.0, 0.0]


class RecordingLowLevel:
    """Test double for π_ℓ: answers with a scripted action per instruction and records calls."""

    def __init__(self, answers: dict[str, object]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, str]] = []

    def __call__(self, row, instruction: str) -> object:
        self.calls.append((row["problem"], instruction))
        return self.answers[instruction]


def test_env_reward_executes_well_formed_subgoals_only() -> None:
    low = RecordingLowLevel(
        {
            "tap Chrome": {"action_type": "click", "touch_point": [0.2505, 0.5]},
            "tap Search": {"action": "click", "coordinate": [900, 200]},
        }
    )
    env = make_env_reward(low, epsilon=0.002)
    completions = [GOOD, GOOD.replace("tap Chrome", "tap Search"), "tap Chrome"]
    rows = {"problem": ["find hotels"] * 3, "solution": [SOLUTION] * 3, "image_size": [[1080, 2400]] * 3}
    assert env(completions, **rows) == [1.0, 0.0, 0.0]
    assert low.calls == [("find hotels", "tap Chrome"), ("find hotels", "tap Search")]
    assert env.__name__ == "env_reward"


def test_judge_reward_parses_the_verdict_and_scores_unreadable_ones_zero() -> None:
    prompts: list[str] = []
    replies = iter(['{"reward": 1}', '```json\n{"reward": 0}\n```', "I think it is fine"])

    def judge(row, prompt: str) -> str:
        prompts.append(prompt)
        return next(replies)

    reward = make_judge_reward(judge)
    completions = [GOOD, GOOD, GOOD, "not a subgoal"]
    assert reward(completions, problem=["find hotels"] * 4) == [1.0, 0.0, 0.0, 0.0]
    assert len(prompts) == 3  # the malformed subgoal never reaches the judge
    assert "Task: find hotels" in prompts[0] and "Instruction: tap Chrome" in prompts[0]
    assert "Target Existence" in prompts[0]
    with pytest.raises(ParseError):
        parse_judge_reply('{"reward": 2}')
    with pytest.raises(ParseError):
        parse_judge_reply('{"reward": true}')


def test_foresight_reward_weighted_sum_by_hand() -> None:
    """λ = (0.4, 0.3, 0.3): well-formed + executable + judged valid = 1.0; well-formed, wrong
    action, judged valid = 0.4 + 0.3 = 0.7; malformed = 0."""
    low = RecordingLowLevel(
        {"tap Chrome": SOLUTION, "tap Maps": {"action_type": "click", "touch_point": [0.9, 0.9]}}
    )
    funcs = foresight_reward_funcs(low, lambda row, prompt: '{"reward": 1}')
    completions = [GOOD, GOOD.replace("tap Chrome", "tap Maps"), "tap Chrome"]
    cols = {"problem": ["p"] * 3, "solution": [SOLUTION] * 3}
    per_func = [f(completions, **cols) for f in funcs]
    weights = GRPOConfig(base="b", output_dir=Path("o")).reward_weights
    total = [sum(w * r[i] for w, r in zip(weights, per_func, strict=True)) for i in range(3)]
    assert total == pytest.approx([1.0, 0.7, 0.0])


# -- configs: the papers' defaults ----------------------------------------------------------------


def test_config_defaults_come_from_the_papers(tmp_path: Path) -> None:
    d = DGRPOConfig(base="m", output_dir=tmp_path)
    assert (d.num_generations, d.learning_rate, d.clip_epsilon_low, d.beta, d.temperature, d.max_turns) == (
        16,
        1e-6,
        0.2,
        0.001,
        1.0,
        50,
    )
    assert (d.spa_alpha, d.spa_form, d.dapr_buffer_size, d.dapr_gamma, d.dapr_top_fraction) == (
        1.0,
        "paper",
        256,
        1.0,
        0.25,
    )
    assert (d.fcf_cooldown_after, d.fcf_cooldown_epochs, d.fcf_remove_at, d.fcf_removal) == (2, 3, 3, "paper")
    assert d.fcf_history_path() == tmp_path / "fcf_history.json"
    t = TRPOConfig(base="m", output_dir=tmp_path)
    assert (t.format_penalty, t.step_weighting, t.loss_aggregation, t.beta) == (
        -0.5,
        "inverse_length",
        "batch_token_mean",
        0.0,
    )
    g = GRPOConfig(base="m", output_dir=tmp_path)
    assert (g.num_generations, g.beta, g.learning_rate, g.temperature, g.top_k, g.reward_weights) == (
        6,
        0.04,
        1e-6,
        0.9,
        50,
        [0.4, 0.3, 0.3],
    )
    assert g.coord_epsilon == 0.002
    for cls in (DGRPOConfig, TRPOConfig, GRPOConfig):
        assert all(f.description for f in cls.model_fields.values()), cls.__name__


def test_grpo_config_pins_plain_k3_kl_and_the_advantage_epsilon(tmp_path: Path) -> None:
    """TRL 1.16 divides by std + 1e-4; ε = 1e-6 needs rewards × c = 1e-4/1e-6 = 100, so the
    weights (0.4, 0.3, 0.3) become (40, 30, 30): (100r − 100μ)/(100σ + 1e-4) = (r − μ)/(σ + 1e-6).
    The KL is the plain k3 (no importance-ratio factor), as in the TRL Hi-Agent used."""
    import trl

    high = trl.GRPOConfig(**GRPOConfig(base="m", output_dir=tmp_path, advantage_epsilon=1e-6).trl_kwargs())
    assert high.reward_weights == pytest.approx([40.0, 30.0, 30.0])
    assert high.multi_objective_aggregation == "sum_then_normalize"
    assert high.use_bias_correction_kl is False
    low = trl.GRPOConfig(**GRPOConfig(base="m", output_dir=tmp_path, level="low").trl_kwargs())
    assert low.reward_weights == [1.0] and low.use_bias_correction_kl is False  # default ε = TRL's 1e-4
    with pytest.raises(ValidationError):
        GRPOConfig(base="m", output_dir=tmp_path, advantage_epsilon=0.0)


def test_config_validation(tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        DGRPOConfig(base="m", output_dir=tmp_path, spa_alpha=1.5)
    with pytest.raises(ValidationError):
        DGRPOConfig(base="m", output_dir=tmp_path, fcf_removal="never")
    with pytest.raises(ValidationError):
        GRPOConfig(base="m", output_dir=tmp_path, reward_weights=[0.5, 0.5])
    with pytest.raises(ValidationError):
        TRPOConfig(base="m", output_dir=tmp_path, step_weighting="sqrt")
