"""``agent-runtime eval --graph``: graph kinds played on the same instances and compared.

The end-to-end test drives the real runtime over HTTP: a scripted OpenAI-compatible server
answers GUI-Owl's ``single`` role (it answers the product's catalogue price, read from the goal
in its prompt, then terminates) and Mobile-Agent-v3's roles (the Worker opens the Shop, then
the Manager declares the request finished without an answer), so the comparison has known
outcomes: ``single`` solves every instance, ``mobile_agent_v3`` none.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from agent_runtime import demo_model
from agent_runtime.cli import app as cli_app
from agent_runtime.cli.eval import build_policy, render_comparison
from agent_runtime.config import GRAPH_KINDS
from agent_runtime.errors import ConfigError
from agent_runtime.evaluation import AgentPolicy, EpisodeResult, EvalReport, compare_graphs
from agent_runtime.simphone.tasks import task_instances
from agent_runtime.traces import iter_runs, load_run
from tests.doubles import (
    ScriptCall,
    ScriptedOpenAIServer,
    gui_owl_reply,
    manager_reply,
    notetaker_reply,
    reflector_reply,
    worker_reply,
)

runner = CliRunner()
TASK = "ShopPriceQuestion"


def gui_owl_price(call: ScriptCall) -> str:
    """GUI-Owl: answer the catalogue price of the product in the query, then end the task."""
    from agent_runtime.simphone.apps.shop import product_by_name

    assert call.prompt.startswith("The user query: "), call.prompt[:200]
    if "Step1:" in call.prompt:  # the answer is given: end the task
        return gui_owl_reply({"action": "terminate", "status": "success"}, "answered")
    product = product_by_name(re.search(r"How much does the (.+?) cost", call.prompt)[1])  # type: ignore[index]
    return gui_owl_reply({"action": "answer", "text": f"It costs ${product.price_cents / 100:.2f}"}, "answer")


def manager(call: ScriptCall) -> str:
    """The Manager: plan to answer; after the Worker's step, declare the request finished
    (wrongly: the Worker only opened the app, so the check fails for want of an answer)."""
    if "make a high-level plan" in call.prompt:
        return manager_reply(["Answer with the price"])
    return manager_reply("Finished", completed=["Answered"])


SCRIPT = {
    "single": gui_owl_price,
    "manager": manager,
    "worker": worker_reply({"action": "open_app", "text": "Shop"}, "open the shop"),
    "reflector": reflector_reply("A"),
    "notetaker": notetaker_reply("- nothing"),
}


def write_config(path: Path, base_url: str, runs: Path) -> Path:
    path.write_text(
        f'[models.default]\nbase_url = "{base_url}"\nmodel = "scripted-http"\nretries = 0\ntimeout_s = 10\n'
        f'[roles.rag]\nenabled = false\n[runs]\ndir = "{runs}"\n',
        encoding="utf-8",
    )
    return path


def played(runs: Path) -> dict[str, list[tuple[str, int]]]:
    """Graph kind → the (task, seed) instances its runs played, from the traces."""
    out: dict[str, list[tuple[str, int]]] = {}
    for run_dir in iter_runs(runs):
        run = load_run(run_dir).run
        assert run.eval is not None
        out.setdefault(run.config["graph"]["kind"], []).append((run.eval["task"], run.eval["seed"]))
    return {kind: sorted(instances) for kind, instances in out.items()}


def test_eval_compares_graphs_on_the_same_instances_over_http(tmp_path: Path) -> None:
    instances = sorted((t.name, t.seed) for t in task_instances([TASK], split="test", episodes=2))
    with ScriptedOpenAIServer(SCRIPT) as srv:
        cfg = write_config(tmp_path / "c.toml", srv.base_url, tmp_path / "runs")
        res = runner.invoke(
            cli_app,
            ["eval", "--policy", "agent", "--graph", "single,mobile_agent_v3", "--tasks", TASK,
             "--episodes", "2", "-c", str(cfg), "--json"],
        )  # fmt: skip
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert played(tmp_path / "runs") == {"single": instances, "mobile_agent_v3": instances}
    single, team = data["graphs"]
    assert (single["kind"], team["kind"], data["baseline"]) == ("single", "mobile_agent_v3", "single")
    assert (single["successes"], single["n"], team["successes"], team["n"]) == (2, 2, 0, 2), data
    assert single["ci95"] == [0.3424, 1.0] and team["ci95"] == [0.0, 0.6576]  # Wilson at 2/2 and 0/2
    assert single["critical_calls_per_step"] == 1.0  # GUI-Owl: one call a step
    assert team["critical_calls_per_step"] == 3.0  # Worker, Reflector, Manager
    assert single["failures"] == [] and len(team["failures"]) == 2 and TASK in single["per_task"]
    [comparison] = data["comparisons"]
    assert comparison["kind"] == "mobile_agent_v3" and comparison["baseline"] == "single"
    assert (comparison["pairs"], comparison["gains"], comparison["losses"]) == (2, 0, 2)
    # Two discordant pairs, both losses: 2 · P(X ≥ 2), X ~ Bin(2, 1/2) = 0.5; one kind: Holm keeps it.
    assert comparison["p_two_sided"] == 0.5 and comparison["p_greater"] == 1.0 and comparison["p_holm"] == 0.5
    assert comparison["missing"] == []
    # Progress lines say which graph each episode belongs to.
    lines = [line for line in res.stderr.splitlines() if line.startswith("[")]
    assert [line.split()[0] for line in lines] == ["[single"] * 2 + ["[mobile_agent_v3"] * 2


def test_eval_with_one_graph_plays_that_graph(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(SCRIPT) as srv:
        cfg = write_config(tmp_path / "c.toml", srv.base_url, tmp_path / "runs")
        args = ["eval", "--policy", "agent", "--tasks", TASK, "--episodes", "1", "-c", str(cfg)]
        res = runner.invoke(cli_app, [*args, "--graph", "single", "--json"])
        tables = runner.invoke(cli_app, [*args, "-g", "single"], terminal_width=200)
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["graph"] == "single" and data["successes"] == 1 and "graphs" not in data
    assert set(played(tmp_path / "runs")) == {"single"}
    assert tables.exit_code == 0, tables.output
    assert "policy agent · graph single" in tables.stdout and "per task" in tables.stdout


def episodes(wins: list[bool], *, calls: int | None = None, steps: int = 2) -> list[EpisodeResult]:
    """Results with these outcomes at seeds 0, 1, …: ClockReachTab at even seeds, ShopPriceQuestion at odd."""
    return [
        EpisodeResult(
            task="ShopPriceQuestion" if i % 2 else "ClockReachTab",
            app="Shop" if i % 2 else "Clock",
            seed=i,
            split="test",
            goal="g",
            success=w,
            score=float(w),
            steps=steps,
            max_steps=9,
            status="completed" if w else "failed",
            critical_calls=calls,
        )
        for i, w in enumerate(wins)
    ]


def report(results: list[EpisodeResult]) -> EvalReport:
    return EvalReport.build(
        results,
        complexity={},
        suite="simphone",
        split="test",
        policy="agent",
        episodes=4,
        seed=0,
        workers=1,
        duration_s=1.0,
    )


T, F = True, False


def test_compare_graphs_hand_computed() -> None:
    """Baseline 5/8. ``x``: 5 losses, 0 gains → two-sided 2·P(X ≥ 5 | 5) = 2/32 = 0.0625.
    ``y``: 3 gains, 1 loss → two-sided 2·P(X ≥ 3 | 4) = 2·5/16 = 0.625, one-sided 5/16.
    Holm: 0.0625·2 = 0.125, then max(0.125, 0.625·1) = 0.625."""
    base = [T, T, T, T, T, F, F, F]
    x = [F, F, F, F, F, F, F, F]
    y = [T, T, T, T, F, T, T, T]
    comparison = compare_graphs(
        {
            "single": report(episodes(base, calls=2)),
            "x": report(episodes(x, calls=6)),
            "y": report(episodes(y)),
        }
    )
    assert comparison.baseline == "single"
    assert [g.critical_calls_per_step for g in comparison.graphs] == [1.0, 3.0, None]
    cx, cy = comparison.comparisons
    assert (cx.kind, cx.baseline) == ("x", "single")
    assert (cx.paired.pairs, cx.paired.gains, cx.paired.losses) == (8, 0, 5)
    assert (cx.paired.p_two_sided, cx.paired.p_greater, cx.p_holm) == (0.0625, 1.0, 0.125)
    assert (cy.paired.gains, cy.paired.losses) == (3, 1)
    assert (cy.paired.p_two_sided, cy.paired.p_greater, cy.p_holm) == (0.625, 0.3125, 0.625)
    shop = comparison.per_task["ShopPriceQuestion"]  # seeds 1, 3, 5, 7
    assert [(k, s.successes, s.n) for k, s in shop.items()] == [("single", 2, 4), ("x", 0, 4), ("y", 4, 4)]
    console = Console(width=200, record=True)
    render_comparison(comparison, console)
    text = console.export_text()
    assert "graphs on the same 8 instances" in text and "paired against single" in text
    assert re.search(r"x\s+│\s+8\s+│\s+0\s+│\s+5\s+│\s+0\.0625\s+│\s+0\.125\s+│\s+1", text), text
    assert re.search(r"ShopPriceQuestion\s+│\s+Shop\s+│\s+2/4\s+│\s+0/4\s+│\s+4/4", text), text


def test_compare_graphs_refuses_different_instances_and_a_single_kind() -> None:
    with pytest.raises(ConfigError, match="played other instances"):
        compare_graphs({"single": report(episodes([T, F])), "hi_agent": report(episodes([T, F, T]))})
    with pytest.raises(ConfigError, match="at least two graph kinds"):
        compare_graphs({"single": report(episodes([T]))})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--graph", "nope"], "unknown graph kind 'nope'"),
        (["--policy", "agent", "--graph", "single,nope"], "unknown graph kind 'nope'"),
        (["--graph", "single", "--policy", "oracle"], "--graph applies only to --policy agent"),
        (["--graph", "single", "-g", "single", "--policy", "agent"], "names a kind twice"),
    ],
)
def test_eval_graph_errors(args: list[str], message: str) -> None:
    res = runner.invoke(cli_app, ["eval", "--tasks", TASK, "--episodes", "1", *args])
    assert res.exit_code == 2, res.output
    assert message in " ".join(res.output.split()) and "Traceback" not in res.output


@pytest.fixture()
def unconfigured(fresh_user: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh user on a machine where the demo model is installable: the fallback applies."""
    monkeypatch.setattr(demo_model, "missing", lambda: None)
    return fresh_user


@pytest.mark.parametrize("kind", GRAPH_KINDS)
def test_the_demo_model_plays_the_graph_asked_for(unconfigured: Path, kind: str) -> None:
    policy = build_policy("agent", None, kind, announce=False)
    assert isinstance(policy, AgentPolicy)
    assert policy.config.graph.kind == kind
    assert {policy.config.model_for(role).model for role in policy.config.graph_roles()} == {
        demo_model.MODEL_REF
    }
