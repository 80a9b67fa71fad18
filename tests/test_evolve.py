"""``agent-runtime evolve``: promotion by a paired test, the recipes' stages, reasoning-free demos,
and the whole loop end to end with the tiny model (rollouts → hints → SFT → eval → promote, resume).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_runtime.config import GraphConfig, ModelConfig, RoleConfig, RuntimeConfig
from agent_runtime.errors import ConfigError, TrainingError
from agent_runtime.evaluation.report import EpisodeResult, EvalReport
from agent_runtime.trainers.evolve import Evolution, EvolveOptions, decide
from agent_runtime.trainers.evolve.reasoning import action_only


def _report(successes: dict[str, bool]) -> EvalReport:
    results = []
    for key, ok in successes.items():
        task, seed = key.split("/")
        results.append(
            EpisodeResult(
                task=task,
                app="Clock",
                seed=int(seed),
                split="test",
                goal="g",
                success=ok,
                score=float(ok),
                steps=2,
                max_steps=5,
                status="completed",
            )
        )
    return EvalReport.build(
        results, complexity={}, suite="simphone", split="test", policy="agent", episodes=1, seed=0,
        workers=1, duration_s=1.0,
    )  # fmt: skip


def test_promotion_needs_a_significant_paired_gain() -> None:
    keys = [f"T/{i}" for i in range(6)]
    best = _report(dict.fromkeys(keys, False))
    # 4 gained, 0 lost: one-sided p = 1/16 = 0.0625
    four = _report({k: i < 4 for i, k in enumerate(keys)})
    promoted, paired, _ = decide(best, four, alpha=0.1)
    assert promoted and (paired.gains, paired.losses, paired.p_greater) == (4, 0, 0.0625)
    assert not decide(best, four, alpha=0.05)[0]  # same gain, stricter level
    # 2 gained, 0 lost: p = 1/4, not enough at 0.2 ...
    two = _report({k: i < 2 for i, k in enumerate(keys)})
    assert decide(best, two, alpha=0.2)[2].startswith("gain not significant")
    # ... and a tie never promotes, whatever alpha
    mixed = _report({k: i in (0, 1) for i, k in enumerate(keys)})
    best_mixed = _report({k: i in (2, 3) for i, k in enumerate(keys)})
    promoted, paired, reason = decide(best_mixed, mixed, alpha=1.0)
    assert not promoted and (paired.gains, paired.losses) == (2, 2) and reason.startswith("no net gain")


def test_promotion_refuses_different_instances() -> None:
    with pytest.raises(TrainingError, match="different instances"):
        decide(_report({"T/1": False}), _report({"T/2": True}), alpha=1.0)


def test_recipes_list_their_stages() -> None:
    base = {"out": Path("x")}
    assert EvolveOptions(**base).stages(1) == ["rollouts", "hints", "sft", "eval", "promote"]
    full = EvolveOptions(**base, critic_model="critic", rl="dgrpo")
    assert full.stages(2) == ["rollouts", "critics", "hints", "sft", "rl", "eval", "promote"]
    mobilerl = EvolveOptions(**base, recipe="mobilerl")
    assert mobilerl.rl == "dgrpo"  # the recipe's chain ends in DGRPO
    assert mobilerl.stages(1) == ["demos", "sft", "irr", "rl", "eval", "promote"]
    assert mobilerl.stages(2) == ["rl", "eval", "promote"]


def test_action_only_drops_the_thought_and_still_parses() -> None:
    from agent_runtime.roles.worker import parse_worker

    reply = '### Thought ###\nTarget: Alarms [4].\n### Action ###\n{"action": "click", "index": 4}\n' \
        "### Description ###\nOpen the alarms tab"  # fmt: skip
    stripped = action_only(reply)
    assert stripped is not None and "Target" not in stripped
    parsed = parse_worker(stripped)
    assert parsed.raw_action == {"action": "click", "index": 4} and parsed.description == "Open the alarms tab"
    assert action_only("### Thought ###\nno action here") is None


def _tiny_runtime(tiny_lm_dir: Path, runs: Path) -> RuntimeConfig:
    tiny = ModelConfig(
        model=f"transformers:{tiny_lm_dir}",
        observation="ui_tree",
        prompts="compact",
        temperature=0.0,
        max_tokens=6,
        retries=0,
    )
    off = RoleConfig(enabled=False)
    return RuntimeConfig(
        models={"tiny": tiny},
        roles={
            "manager": RoleConfig(model="tiny"),
            "worker": RoleConfig(model="tiny"),
            "reflector": off,
            "notetaker": off,
            "rag": off,
        },
        graph=GraphConfig(max_steps=2, reask=0),
        runs={"dir": runs},
    )


def test_evolve_refuses_roles_that_do_not_share_the_model(tmp_path: Path, tiny_lm_dir: Path) -> None:
    runtime = _tiny_runtime(tiny_lm_dir, tmp_path / "runs")
    runtime.roles["worker"] = RoleConfig(model="other")
    with pytest.raises(ConfigError, match="does not run on the evolved model"):
        Evolution(EvolveOptions(out=tmp_path / "ev"), runtime)
    server = runtime.model_copy(update={"models": {"tiny": ModelConfig(base_url="http://x/v1", model="m")}})
    with pytest.raises(ConfigError, match="names a server"):
        Evolution(EvolveOptions(out=tmp_path / "ev", role="manager"), server)
