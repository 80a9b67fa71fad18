"""Options made from config fields: the command line and a Python caller with the same values
hand the trainer the same arguments, and the rules between fields hold for both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from agent_runtime.cli import distill as distill_cli
from agent_runtime.cli import evolve as evolve_cli
from agent_runtime.trainers.data.filters.pipeline import FilterSettings
from agent_runtime.trainers.data.regenerate import RegenerationOptions
from agent_runtime.trainers.distill import DataOptions
from agent_runtime.trainers.dpo_config import DPOConfig
from agent_runtime.trainers.evolve import EvolveOptions
from agent_runtime.trainers.online.dgrpo_config import DGRPOConfig
from agent_runtime.trainers.online.loop import RLOptions
from agent_runtime.trainers.sft_config import SFTConfig


def parsed(module: Any, args: list[str]) -> dict[str, Any]:
    """The values the command's body receives for ``args``: click parses, nothing runs."""
    app = typer.Typer()
    module.register(app)
    command = typer.main.get_command(app)
    return dict(command.make_context("agent-runtime", args).params)


def distill_args(method: str, extra: str) -> dict[str, Any]:
    return parsed(distill_cli, ["--method", method, "--base", "base-dir", "--out", "out", *extra.split()])


def test_sft_from_the_command_line_is_sft_from_python() -> None:
    values = distill_args("sft", "--role manager,worker --runs-dir runs --lr 1e-3 --lora-r 4 --max-steps 2")
    config, data = distill_cli.distill_arguments("sft", values)
    assert config == SFTConfig(
        base="base-dir",
        output_dir=Path("out"),
        role="manager,worker",
        learning_rate=1e-3,
        lora_r=4,
        max_steps=2,
    )
    assert data == DataOptions(runs_dir=Path("runs"))
    assert config.lora_alpha == 8  # the config's rule, not the command line's


def test_dpo_regenerations_take_the_shared_sampling_options() -> None:
    values = distill_args(
        "dpo",
        "--role worker --tasks Clock* --regenerations 3 --temperature 0.7 --max-new-tokens 64 --beta 0.2 "
        "--any-outcome --skip-filter dedup --seed 5",
    )
    config, data = distill_cli.distill_arguments("dpo", values)
    assert config == DPOConfig(base="base-dir", output_dir=Path("out"), role="worker", beta=0.2, seed=5)
    assert data == DataOptions(
        tasks="Clock*",
        filters=FilterSettings(require_success=False, skip=["dedup"], seed=5),
        regenerate=RegenerationOptions(k=3, temperature=0.7, max_tokens=64),
    )


def test_dgrpo_rollouts_from_the_command_line_are_dgrpo_from_python() -> None:
    values = distill_args(
        "dgrpo", "--role worker --env simphone --tasks Clock* --group-size 4 --no-spa --iterations 2 --resume"
    )
    config, data = distill_cli.distill_arguments("dgrpo", values)
    assert config == DGRPOConfig(
        base="base-dir", output_dir=Path("out"), role="worker", num_generations=4, spa=False
    )
    assert data == DataOptions(tasks="Clock*", rl=RLOptions(tasks="Clock*", iterations=2, resume=True))


def test_evolve_from_the_command_line_is_evolve_from_python() -> None:
    values = parsed(
        evolve_cli,
        [
            "--out",
            "o",
            "-c",
            "rt.toml",
            "--recipe",
            "mobilerl",
            "--iterations",
            "3",
            "--no-hints",
            "--sft-lr",
            "1e-4",
        ],
    )
    assert values["as_json"] is False
    assert evolve_cli.evolve_options(values) == EvolveOptions(
        out=Path("o"), config=Path("rt.toml"), recipe="mobilerl", iterations=3, hints=False, sft_lr=1e-4
    )
    assert evolve_cli.evolve_options(values).rl == "dgrpo"  # the recipe's rule lives in the options


def test_lora_alpha_is_twice_the_rank_unless_given() -> None:
    assert SFTConfig(base="b", output_dir=Path("o")).lora_alpha == 32
    assert SFTConfig(base="b", output_dir=Path("o"), lora_r=8).lora_alpha == 16
    assert SFTConfig(base="b", output_dir=Path("o"), lora_r=8, lora_alpha=4).lora_alpha == 4
