"""Each graph's roles retrained by ``distill``: SFT from ``single`` and ``hi_agent`` traces, a GRPO
adapter of the low level playing in ``hi_agent``, the single role's online RL in the ``single``
graph, and the combinations that do not apply.

The traces come from real runs of the graphs on SimPhone with scripted role models (GUI-Owl's
tool-call replies for ``single``; subgoals and action JSON for Hi-Agent's levels), judged by the
phone's own state, as ``agent-runtime eval`` labels its runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_runtime.cli import app
from agent_runtime.config import GraphConfig, ModelConfig, RoleConfig, RuntimeConfig
from agent_runtime.coords import CoordMapper, CoordSpace, ImageBudget
from agent_runtime.runtime import Runtime
from agent_runtime.simphone import SimPhone
from agent_runtime.traces import annotate_run, load_run
from tests.doubles import ScriptedChatModel
from tests.test_graph import LAUNCHER, SETTINGS, click_on, phone_with_wifi_off
from tests.test_trainers import one_torch_thread  # noqa: F401  (autouse)

runner = CliRunner()
GOAL = "Turn on Wi-Fi"
#: The tiny model's image budget (an image is 16 tokens): what its role config says in a run.
SMALL = ImageBudget(min_pixels=56 * 56, max_pixels=112 * 112)


def distill(*args: object):
    return runner.invoke(app, ["distill", *map(str, args)], terminal_width=200)


def said(res: Any) -> str:
    """The command's output with rich's line wrapping undone."""
    return " ".join(res.output.split())


# -- traces of the single and hi_agent graphs ---------------------------------------------------------


def next_click(phone: SimPhone) -> tuple[str, dict[str, Any] | None]:
    """The next step towards Wi-Fi on: (what it does, the action), or ("done", None)."""
    obs = phone.observe()
    labels = {e.label for e in obs.elements}
    if phone.app(SETTINGS).state.wifi:
        return "done", None
    if obs.app == LAUNCHER:
        return "Open Settings", click_on(phone, "Settings")
    if "Airplane mode" in labels:
        return "Turn the Wi-Fi switch on", click_on(phone, "Wi-Fi", "Switch")
    return "Open Network & internet", click_on(phone, "Network & internet")


def gui_owl_player(phone: SimPhone):
    """GUI-Owl's native reply: thinking, a ``mobile_use`` tool call, a conclusion."""

    def reply(call: Any) -> str:
        what, action = next_click(phone)
        arguments = action or {"action": "terminate", "status": "success"}
        tool = json.dumps({"name": "mobile_use", "arguments": arguments})
        return f"<thinking>{what}.</thinking><tool_call>{tool}</tool_call><conclusion>{what}</conclusion>"

    return reply


def hi_agent_players(phone: SimPhone) -> dict[str, Any]:
    """The high level names the next step; the low level carries it out as one action JSON."""

    def high(call: Any) -> str:
        what, _ = next_click(phone)
        instruction = "Report success" if what == "done" else what
        return f"<reasoning>Wi-Fi is off.</reasoning> <instruction>Instruction: {instruction}</instruction>"

    def low(call: Any) -> str:
        _, action = next_click(phone)
        return json.dumps(action or {"action": "terminate", "status": "success"})

    return {"high": high, "low": low}


def play(kind: str, script: dict[str, Any], phone: SimPhone, runs_dir: Path) -> Path:
    model = ScriptedChatModel(script=script)
    config = RuntimeConfig(graph=GraphConfig(kind=kind, max_steps=6))  # type: ignore[arg-type]
    result = Runtime(config, models=dict.fromkeys(script, model), runs_dir=runs_dir).run(GOAL, device=phone)
    assert result.status == "completed", result.reason
    # the phone's state is the verdict (as eval's task checker writes it)
    annotate_run(result.run_dir, eval={"task": "wifi_on", "task_success": phone.app(SETTINGS).state.wifi})
    return result.run_dir


@pytest.fixture(scope="module")
def graph_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("graph_runs")
    phone = phone_with_wifi_off()
    single = play("single", {"single": gui_owl_player(phone)}, phone, root / "single")
    phone = phone_with_wifi_off()
    play("hi_agent", hi_agent_players(phone), phone, root / "hi_agent")
    assert load_run(single).run.eval["task_success"]
    return {"single": root / "single", "hi_agent": root / "hi_agent"}


class DatasetSpy:
    """Keeps the dataset ``distill`` hands the SFT trainer, then trains on it for real."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from agent_runtime.trainers import sft_trainer

        self.rows: list[dict[str, Any]] = []
        real = sft_trainer.train_sft

        def train(cfg: Any, dataset: Any) -> Any:
            self.rows = list(dataset)
            return real(cfg, dataset)

        monkeypatch.setattr(sft_trainer, "train_sft", train)


def recorded_calls(runs_dir: Path, role: str) -> list[dict[str, Any]]:
    return [
        c
        for f in sorted(runs_dir.glob("*/calls.jsonl"))
        for c in map(json.loads, f.read_text().splitlines())
        if c["role"] == role
    ]


def text_of(message: dict[str, Any]) -> str:
    return "".join(p["text"] for p in message["content"] if p["type"] == "text")


@pytest.mark.train
def test_sft_of_the_single_role_trains_on_its_system_message_and_tool_call_replies(
    graph_runs, tiny_vlm_dir, tmp_path, monkeypatch
):
    spy = DatasetSpy(monkeypatch)
    out = tmp_path / "single-sft"
    res = distill(
        "--role", "single", "--method", "sft", "--runs-dir", graph_runs["single"], "--base", tiny_vlm_dir,
        "--out", out, "--max-steps", "1", "--lora-r", "4", "--skip-filter", "reweight",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    calls = recorded_calls(graph_runs["single"], "single")
    assert len(spy.rows) == len(calls) == 4  # three taps and the terminate
    for row, call in zip(spy.rows, calls, strict=True):
        system, user = row["prompt"]
        assert system["role"] == "system" and "mobile_use" in text_of(system)
        assert text_of(system) == call["messages"][0]["content"][0]["text"]
        assert user["role"] == "user" and GOAL in text_of(user)
        assert [p["type"] for p in user["content"]].count("image") == len(row["images"]) == 1
        assert text_of(row["completion"][0]) == call["completion"] and "<tool_call>" in call["completion"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert (manifest["method"], manifest["role"], manifest["training"]["steps"]) == ("sft", "single", 1)
    assert '[roles.single]\nmodel = "single_distilled"' in manifest["serve"]["config_toml"]


@pytest.mark.train
@pytest.mark.parametrize("role", ["low", "high"])
def test_sft_of_hi_agent_levels_keeps_the_screenshot_before_the_text(
    role, graph_runs, tiny_vlm_dir, tmp_path, monkeypatch
):
    spy = DatasetSpy(monkeypatch)
    out = tmp_path / f"{role}-sft"
    res = distill(
        "--role", role, "--method", "sft", "--runs-dir", graph_runs["hi_agent"], "--base", tiny_vlm_dir,
        "--out", out, "--max-steps", "1", "--lora-r", "4", "--skip-filter", "reweight",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    calls = recorded_calls(graph_runs["hi_agent"], role)
    assert len(spy.rows) == len(calls) == 4
    for row, call in zip(spy.rows, calls, strict=True):
        (user,) = row["prompt"]
        assert user["role"] == "user" and [p["type"] for p in user["content"]] == ["image", "text"]
        assert text_of(user) == call["messages"][0]["content"][1]["text"]
        assert text_of(row["completion"][0]) == call["completion"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert (manifest["method"], manifest["role"], manifest["training"]["steps"]) == ("sft", role, 1)


# -- a GRPO adapter of the low level plays in hi_agent ------------------------------------------------


@pytest.mark.train
def test_a_grpo_adapter_of_the_low_level_is_loaded_and_plays_in_hi_agent(tiny_vlm_dir, tmp_path):
    from agent_runtime.roles.hi_agent import low_text

    out = tmp_path / "grpo-low"
    res = distill(
        "--method", "grpo", "--role", "low", "--base", tiny_vlm_dir, "--out", out, "--env", "simphone",
        "--tasks", "SettingsWifiNetworkQuestion", "--split", "all", "--min-pixels", SMALL.min_pixels,
        "--max-pixels", SMALL.max_pixels, "--group-size", "2", "--batch-size", "2", "--grad-accum", "1",
        "--max-new-tokens", "8", "--iterations", "1", "--max-steps", "1", "--lora-r", "4",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "single-step GRPO of the low level: 1 iterations" in said(res)
    for manifest in (out / "manifest.json", out / "iter_0001" / "manifest.json"):
        m = json.loads(manifest.read_text())
        assert (m["method"], m["role"]) == ("grpo", "low") and m["hyperparameters"]["level"] == "low"
        assert '[roles.low]\nmodel = "low_distilled"' in m["serve"]["config_toml"]

    # [roles.low] = the distill output, in-process; the high level scripted
    instruction = "Open Settings"
    subgoal = f"<reasoning>Start.</reasoning> <instruction>Instruction: {instruction}</instruction>"
    high = ScriptedChatModel(script={"high": subgoal})
    low = ModelConfig(
        base_url=None,
        model=f"transformers:{out}",
        min_pixels=SMALL.min_pixels,
        max_pixels=SMALL.max_pixels,
        max_tokens=8,
    )
    config = RuntimeConfig(
        models={"grpo_low": low},
        roles={"low": RoleConfig(model="grpo_low")},
        graph=GraphConfig(kind="hi_agent", max_steps=2, reask=0),
    )
    phone = SimPhone(seed=0)
    screen = phone.observe().size
    result = Runtime(config, models={"high": high}, runs_dir=tmp_path / "runs").run(GOAL, device=phone)
    assert result.status in ("max_steps", "gave_up"), result.reason  # the tiny model writes no action

    run = load_run(result.run_dir)
    assert run.run.models["low"]["model"] == f"transformers:{out}"
    calls = run.calls_for("low")
    assert len(calls) == 2 and {c.model for c in calls} == {f"adapter:{out.resolve()}"}
    size = CoordMapper(space=CoordSpace.PIXELS_RESIZED, screen=screen, budget=SMALL).from_screen(
        screen.width, screen.height
    )
    for call in calls:
        (user,) = call.messages
        image, text = user["content"]
        assert image["type"] == "image_ref" and text == {"type": "text", "text": low_text(size, instruction)}
    assert [s.timings_ms["critical_calls"] for s in run.steps] == [2, 2]
    assert {(s.graph, s.actor) for s in run.steps} == {("hi_agent", "low")}


# -- the single role's online RL plays the single graph -----------------------------------------------


@pytest.mark.train
def test_dgrpo_of_the_single_role_plays_its_rollouts_in_the_single_graph(tiny_vlm_dir, tmp_path):
    from agent_runtime.trainers.online.dgrpo_config import DGRPOConfig
    from agent_runtime.trainers.online.loop import RLOptions, train_online

    cfg = DGRPOConfig(
        base=str(tiny_vlm_dir),
        output_dir=tmp_path / "rl",
        role="single",
        num_generations=2,
        max_new_tokens=8,
        max_turns=2,
        lora_r=4,
        lora_alpha=8,
    )
    opts = RLOptions(tasks="SettingsWifiNetworkQuestion", split="all", iterations=1)
    # a config written for the team: the rollouts must still play the graph that calls "single"
    runtime = RuntimeConfig(graph=GraphConfig(kind="mobile_agent_v3", reask=0))
    _, _, extra = train_online("dgrpo", cfg, opts, runtime=runtime)
    assert extra == {"iterations": 1}
    (metrics,) = map(json.loads, (tmp_path / "rl" / "metrics.jsonl").read_text().splitlines())
    assert metrics["rollouts"] == 2 and metrics["rollout_errors"] == 0
    assert metrics["mean_policy_calls"] == 2  # one StepTokens per single-role call, two steps each
    rollouts = tmp_path / "rl" / "rollouts" / "iter_0001"
    for run_dir in rollouts.iterdir():
        run = load_run(run_dir)
        assert {(s.graph, s.actor) for s in run.steps} == {("single", "single")}
        assert {c.role for c in run.calls} == {"single"}
        assert all(c.messages[0]["role"] == "system" and c.extra["rl"]["token_ids"] for c in run.calls)


def test_rollout_config_plays_the_graph_of_the_trained_role() -> None:
    from agent_runtime.errors import ConfigError
    from agent_runtime.trainers.online.rollouts import rollout_config

    team = RuntimeConfig(graph=GraphConfig(kind="auto", max_steps=7))
    assert rollout_config(team, "single").graph.kind == "single"
    assert rollout_config(team, "single").graph.max_steps == 7
    for role in ("worker", "manager"):
        assert rollout_config(RuntimeConfig(graph=GraphConfig(kind="single")), role).graph.kind == (
            "mobile_agent_v3"
        )
    with pytest.raises(ConfigError, match="online RL does not train the low"):
        rollout_config(team, "low")  # hi_agent's levels are single-step GRPO's


# -- combinations that do not apply -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "role", "message", "hint"),
    [
        ("grpo", "single", "grpo trains the worker or the manager, Hi-Agent's two levels", "--method dgrpo"),
        ("grpo", "reflector", "not the reflector", "--method sft"),
        ("dgrpo", "low", "not the low", "--method grpo --role low|high"),
        ("trpo", "high", "not the high", "--method grpo --role low|high"),
        ("dpo", "single", "trains the worker", "--role worker"),
        ("irr", "low", "trains the worker", "--role worker"),
    ],
)
def test_methods_that_do_not_apply_to_a_graph_role_say_which_do(method, role, message, hint, tmp_path):
    res = distill(
        "--method", method, "--role", role, "--base", tmp_path, "--out", tmp_path / "o", "--env", "simphone",
    )  # fmt: skip
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert message in said(res) and hint in said(res)
