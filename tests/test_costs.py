"""Cost and latency per role (agent_runtime.costs): hand-computed totals from a hand-made trace,
budgets that end real scripted SimPhone runs, and the figures in run, traces show and eval."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from agent_runtime.cli import app
from agent_runtime.config import (
    BudgetConfig,
    GraphConfig,
    ModelConfig,
    RoleConfig,
    RuntimeConfig,
    load_config,
)
from agent_runtime.costs import RunCosts, run_costs
from agent_runtime.errors import ConfigError
from agent_runtime.events import RunFinished
from agent_runtime.runtime import Runtime
from agent_runtime.simphone import SimPhone
from agent_runtime.traces import CallRecord, RunRecord, StepRecord, TraceWriter, Usage, load_run
from tests.doubles import (
    ScriptedChatModel,
    ScriptedOpenAIServer,
    gui_owl_reply,
    manager_reply,
    notetaker_reply,
    reflector_reply,
    worker_reply,
)

runner = CliRunner()
WIDE = {"COLUMNS": "250"}

# -- a hand-made trace with known usage, latencies and prices ---------------------------------------
#: role -> (price in, price out) per million tokens; the Reflector and Notetaker have no prices.
PRICES = {"manager": (3.0, 15.0), "worker": (0.5, 4.0)}
#: (step, role, prompt tokens, completion tokens, latency ms)
CALLS = [
    (-1, "manager", 100_000, 20_000, 500.0),
    (0, "worker", 200_000, 10_000, 800.0),
    (0, "reflector", 150_000, 5_000, 300.0),
    (0, "notetaker", 10_000, 1_000, 400.0),
    (0, "manager", 120_000, 30_000, 600.0),
    (1, "worker", 300_000, 10_000, 700.0),
    (1, "worker", 300_000, 15_000, 900.0),  # a re-ask
]
STEPS = [
    # step 0: the Notetaker outlasted the Reflector by 100 ms (reflect_model = 300 + 100)
    {
        "worker": 800.0,
        "reflector": 300.0,
        "notetaker": 400.0,
        "notetaker_wait": 100.0,
        "reflect_model": 400.0,
        "manager": 600.0,
        "critical_path": 2000.0,
    },
    {"worker": 1600.0, "critical_path": 2000.0},
]


def hand_made_run(root: Path, run_id: str = "20260101-000000-abcdef") -> Path:
    run_dir = root / run_id
    models = {
        role: ModelConfig(
            model=f"{role}-model",
            price_input_per_mtok=PRICES[role][0] if role in PRICES else None,
            price_output_per_mtok=PRICES[role][1] if role in PRICES else None,
        ).public()
        for role in ("manager", "worker", "reflector", "notetaker")
    }
    with TraceWriter(run_dir) as w:
        w.write_run(
            RunRecord(run_id=run_id, task="t", status="completed", success=True, steps=2, models=models)
        )
        for i, (step, role, prompt, completion, ms) in enumerate(CALLS):
            w.append_call(
                CallRecord(
                    run_id=run_id,
                    step=step,
                    role=role,
                    attempt=int(i == 6),
                    usage=Usage(prompt_tokens=prompt, completion_tokens=completion),
                    latency_ms=ms,
                )
            )
        for i, timings in enumerate(STEPS):
            w.append_step(StepRecord(step=i, timings_ms=timings))
    return run_dir


def test_run_costs_are_hand_computed(tmp_path: Path) -> None:
    costs = run_costs(load_run(hand_made_run(tmp_path)))
    m, w, r, n = (costs.roles[k] for k in ("manager", "worker", "reflector", "notetaker"))
    assert (m.calls, m.prompt_tokens, m.completion_tokens, m.latency_ms) == (2, 220_000, 50_000, 1100.0)
    assert (w.calls, w.prompt_tokens, w.completion_tokens, w.latency_ms) == (3, 800_000, 35_000, 2400.0)
    assert (r.calls, r.total_tokens, n.calls, n.total_tokens) == (1, 155_000, 1, 11_000)
    # Critical paths sum to 4000 ms: worker 800 + 1600, manager 600 (its update ends step 0; the
    # first plan is on no step), reflector 300, notetaker only the 100 ms it outlasted the Reflector.
    assert costs.critical_path_ms == 4000.0
    assert (w.critical_ms, w.critical_share) == (2400.0, 0.6)
    assert (m.critical_ms, m.critical_share) == (600.0, 0.15)
    assert (r.critical_ms, r.critical_share) == (300.0, 0.075)
    assert (n.critical_ms, n.critical_share) == (100.0, 0.025)
    # Money: manager 220k x 3 + 50k x 15 per million = 0.66 + 0.75; worker 0.40 + 0.14.
    assert round(m.money, 2) == 1.41 and round(w.money, 2) == 0.54
    assert r.money is None and n.money is None and costs.unpriced == ["notetaker", "reflector"]
    t = costs.total
    assert (t.calls, t.prompt_tokens, t.completion_tokens, t.latency_ms) == (7, 1_180_000, 91_000, 4200.0)
    assert (t.critical_ms, t.critical_share, round(t.money, 2)) == (3400.0, 0.85, 1.95)
    assert costs.currency == "USD" and costs.model_dump(mode="json")["total"]["total_tokens"] == 1_271_000


def test_costs_over_several_runs_add_up_and_reweigh_shares(tmp_path: Path) -> None:
    one = run_costs(load_run(hand_made_run(tmp_path)))
    other = RunCosts.combine([])  # nothing played: zeros, no shares, no money
    assert other.total.calls == 0 and other.total.critical_share is None and other.total.money is None
    both = RunCosts.combine([one, one, other])
    assert both.roles["worker"].prompt_tokens == 1_600_000 and both.critical_path_ms == 8000.0
    assert both.roles["worker"].critical_share == 0.6 and round(both.total.money, 2) == 3.90
    assert both.unpriced == ["notetaker", "reflector"]


def test_an_unpriced_run_shows_no_money(tmp_path: Path) -> None:
    run_dir = tmp_path / "r"
    with TraceWriter(run_dir) as w:
        w.write_run(RunRecord(run_id="r", task="t", models={"single": ModelConfig().public()}))
        w.append_call(CallRecord(run_id="r", step=0, role="single", usage=Usage(prompt_tokens=7)))
    costs = run_costs(load_run(run_dir))
    assert not costs.priced and costs.roles["single"].money is None and costs.total.critical_share is None
    assert costs.unpriced == ["single"]


def cells(output: str) -> dict[str, list[str]]:
    """The rows of the "cost and latency per role" table, by role (its rows have 8+ cells)."""
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in output.splitlines() if line.count("│") > 7]
    return {row[0]: row for row in rows}


def test_traces_show_has_per_role_figures(tmp_path: Path) -> None:
    hand_made_run(tmp_path)
    res = runner.invoke(app, ["traces", "show", "20260101", "--runs-dir", str(tmp_path)], env=WIDE)
    assert res.exit_code == 0, res.output
    assert "cost and latency per role" in res.output
    rows = cells(res.output)
    assert rows["worker"] == ["worker", "3", "800000", "35000", "2.4 s", "2.4 s", "60%", "0.54 USD"]
    assert rows["reflector"][-3:] == ["0.3 s", "8%", "-"]  # no prices: no money
    assert rows["total"] == ["total", "7", "1180000", "91000", "4.2 s", "3.4 s", "85%", "1.95 USD"]
    assert "no prices for notetaker, reflector: not in the total" in " ".join(res.output.split())


# -- prices and budgets in the configuration --------------------------------------------------------
def test_prices_come_in_pairs_and_a_money_budget_needs_them(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="give both price_input_per_mtok and price_output_per_mtok"):
        ModelConfig(price_input_per_mtok=1.0)
    cfg = tmp_path / "c.toml"
    cfg.write_text('[models.default]\nmodel = "m"\n[roles.rag]\nenabled = false\n[budget]\nmoney = 2.5\n')
    with pytest.raises(
        ConfigError, match=r"budget.money needs prices .*manager, worker, reflector, notetaker"
    ):
        load_config(cfg)
    # A role's own prices override its model's: priced roles, a valid money budget.
    priced = RoleConfig(price_input_per_mtok=1.0, price_output_per_mtok=2.0)
    roles = {r: priced for r in ("manager", "worker", "reflector", "notetaker")}
    config = RuntimeConfig(roles={**roles, "rag": RoleConfig(enabled=False)}, budget=BudgetConfig(money=2.5))
    assert config.model_for("worker").priced and config.budget.money == 2.5
    with pytest.raises(ValidationError):
        BudgetConfig(tokens=0)


# -- budgets end real runs cleanly ------------------------------------------------------------------
LONG = "x" * 40_000  # 10 000 completion tokens in ScriptedChatModel's count (len // 4)
BUDGETS = {
    "tokens": (BudgetConfig(tokens=5000), r"token budget of 5000 spent \(\d+ tokens\)"),
    "money": (BudgetConfig(money=0.5), r"money budget of 0\.50 USD spent \(\d+\.\d\d USD\)"),
    "time": (BudgetConfig(time_s=4.0), r"time budget of 4 s spent \(\d+\.\d s\)"),
}
OPEN_SETTINGS = {"action": "open_app", "text": "Settings"}


def acting(kind: str, budget: str):
    """The deciding role's reply: a step of 10 000 completion tokens (tokens, money), or one that
    takes 5 s (time) — each more than the budget allows, so the run ends after step 0 (and the
    time before the first step, well under the 4 s, leaves step 0 to be played)."""

    def reply(call) -> str:  # noqa: ANN001
        if budget == "time":
            time.sleep(5.0)
        long = LONG if budget != "time" else "open it"
        if kind == "single":
            return gui_owl_reply(OPEN_SETTINGS, long)
        return worker_reply(OPEN_SETTINGS, "open Settings", thought=long)

    return reply


@pytest.mark.parametrize("kind", ["mobile_agent_v3", "single"])
@pytest.mark.parametrize("budget", list(BUDGETS))
def test_a_spent_budget_ends_the_run_after_the_step(tmp_path: Path, kind: str, budget: str) -> None:
    limit, reason = BUDGETS[budget]
    priced = ModelConfig(price_input_per_mtok=1.0, price_output_per_mtok=100.0)
    config = RuntimeConfig(
        models={"default": priced},
        roles={"rag": RoleConfig(enabled=False)},
        graph=GraphConfig(kind=kind, max_steps=10),
        budget=limit,
    )
    script = {
        "manager": manager_reply(["Open Settings", "Look around"]),
        "worker": acting(kind, budget),
        "single": acting(kind, budget),
        "reflector": reflector_reply("A"),
        "notetaker": notetaker_reply("- Settings opened"),
    }
    model = ScriptedChatModel(script=script)
    runtime = Runtime(
        config,
        models=dict.fromkeys(("manager", "worker", "reflector", "notetaker", "single"), model),
        runs_dir=tmp_path,
    )
    phone = SimPhone(seed=0)
    try:
        events = list(runtime.stream("Look around Settings", device=phone))
    finally:
        phone.close()
    final = events[-1]
    assert isinstance(final, RunFinished)
    assert final.status == "max_steps" and not final.success and final.steps == 1, final
    assert re.fullmatch(reason, final.reason), final.reason
    loaded = load_run(final.run_dir)
    assert loaded.run.status == "max_steps" and (loaded.run.model_extra or {})["reason"] == final.reason
    assert [s.step for s in loaded.steps] == [0] and not loaded.problems
    costs = run_costs(loaded)
    if kind == "mobile_agent_v3":
        # The Manager's first plan fitted the budget: the run ended on step 0's spending.
        first = loaded.calls[0]
        assert first.role == "manager" and first.step == -1 and first.usage.total_tokens < 5000
        assert set(costs.roles) == {"manager", "worker", "reflector", "notetaker"}
    # Every part of the step's model time on the critical path belongs to one role.
    assert sum(c.critical_ms for c in costs.roles.values()) == pytest.approx(
        loaded.steps[0].timings_ms["model_critical"], abs=0.01
    )


# -- the figures in run's summary and eval's report --------------------------------------------------
SERVER_SCRIPT = {
    "manager": [manager_reply(["Open Settings"]), manager_reply("Finished", completed=["Opened Settings"])],
    "worker": worker_reply(OPEN_SETTINGS, "open Settings"),
    "reflector": reflector_reply("A"),
    "notetaker": notetaker_reply("- Settings is open"),
}
#: ScriptedOpenAIServer reports 10 prompt + 5 completion tokens a call: 0.10 + 0.10 USD.
PRICED = "price_input_per_mtok = 10000\nprice_output_per_mtok = 20000\n"


def server_config(path: Path, base_url: str, runs: Path) -> Path:
    path.write_text(
        f'[models.default]\nbase_url = "{base_url}"\nmodel = "scripted-http"\nretries = 0\ntimeout_s = 10\n'
        f'{PRICED}[roles.rag]\nenabled = false\n[runs]\ndir = "{runs}"\n',
        encoding="utf-8",
    )
    return path


def test_run_json_and_summary_carry_per_role_figures(tmp_path: Path) -> None:
    outputs = []
    for extra in (["--json"], []):  # a fresh server each: its Manager script starts over
        with ScriptedOpenAIServer(SERVER_SCRIPT) as srv:
            cfg = server_config(tmp_path / "c.toml", srv.base_url, tmp_path / "runs")
            outputs.append(
                runner.invoke(app, ["run", "Open Settings", "--config", str(cfg), *extra], env=WIDE)
            )
    as_json, shown = outputs
    assert as_json.exit_code == 0, as_json.output
    costs = json.loads(as_json.stdout)["costs"]
    manager, total = costs["roles"]["manager"], costs["total"]
    assert (manager["calls"], manager["prompt_tokens"], manager["completion_tokens"]) == (2, 20, 10)
    assert round(manager["money"], 2) == 0.40 and 0 < manager["critical_share"] < 1
    assert (total["calls"], total["total_tokens"], round(total["money"], 2)) == (5, 75, 1.00)
    assert costs["currency"] == "USD" and costs["unpriced"] == []
    assert shown.exit_code == 0, shown.output
    summary = shown.stderr
    assert "cost and latency per role" in summary
    rows = cells(summary)
    assert rows["manager"][1:4] == ["2", "20", "10"] and rows["manager"][-1] == "0.40 USD"
    assert rows["total"][1:4] == ["5", "50", "25"] and rows["total"][-1] == "1.00 USD"


def test_eval_report_totals_roles_over_the_episodes(tmp_path: Path) -> None:
    script = SERVER_SCRIPT | {"worker": worker_reply({"action": "terminate", "status": "failure"}, "give up")}
    runs = tmp_path / "runs"
    with ScriptedOpenAIServer(script) as srv:
        cfg = server_config(tmp_path / "c.toml", srv.base_url, runs)
        args = ["eval", "--policy", "agent", "--tasks", "SettingsToggle", "--episodes", "2", "-c", str(cfg)]
        as_json = runner.invoke(app, [*args, "--json"], env=WIDE)
        played = [load_run(d) for d in runs.iterdir()]  # the --json evaluation's two runs
        shown = runner.invoke(app, args, env=WIDE)
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.stdout)
    assert {"per_task", "per_app", "failures", "success_rate"} <= set(data)  # the keys it had
    assert len(played) == 2
    calls = {
        role: sum(1 for r in played for c in r.calls if c.role == role) for role in ("manager", "worker")
    }
    roles = data["costs"]["roles"]
    assert roles["manager"]["calls"] == calls["manager"] and roles["worker"]["calls"] == calls["worker"]
    n = sum(len(r.calls) for r in played)
    total = data["costs"]["total"]
    assert (total["calls"], total["prompt_tokens"], round(total["money"], 2)) == (
        n,
        10 * n,
        round(0.2 * n, 2),
    )
    assert shown.exit_code == 0, shown.output
    assert "cost and latency per role over 2 episodes" in shown.stdout
