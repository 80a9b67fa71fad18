"""``agent-runtime distill --method trpo|dgrpo``: options, errors, and a run over real HTTP."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_runtime.cli import app
from tests.doubles import ScriptedOpenAIServer
from tests.rl_helpers import MANAGER_PLAN, SHORT_WORKER_PROMPT, TASKS, served

pytestmark = pytest.mark.train
runner = CliRunner()


def _config(tmp_path: Path, manager_url: str) -> Path:
    prompt = tmp_path / "worker_short.j2"
    prompt.write_text(SHORT_WORKER_PROMPT, encoding="utf-8")
    config = tmp_path / "runtime.toml"
    config.write_text(
        f"""
[models.scripted]
base_url = "{manager_url}"
model = "scripted-http"

[roles.manager]
model = "scripted"

[roles.worker]
prompt = "{prompt}"

[roles.reflector]
enabled = false

[roles.notetaker]
enabled = false

[roles.rag]
enabled = false

[graph]
reask = 1
""",
        encoding="utf-8",
    )
    return config


def _rl_args(base: Path, out: Path, method: str = "trpo") -> list[str]:
    return [
        "distill",
        "--method",
        method,
        "--role",
        "worker",
        "--base",
        str(base),
        "--out",
        str(out),
        "--env",
        "simphone",
        "--tasks",
        TASKS,
        "--split",
        "all",
        "--group-size",
        "4",
        "--iterations",
        "2",
        "--rollout-workers",
        "2",
        "--max-turns",
        "2",
        "--max-new-tokens",
        "32",
        "--lr",
        "0.05",
        "--lora-r",
        "4",
    ]


def test_rl_methods_are_listed_and_misuse_is_a_clear_error(tiny_vlm_dir: Path, tmp_path: Path) -> None:
    assert "trpo" in runner.invoke(app, ["distill", "--help"]).output
    args = [
        "distill",
        "--method",
        "dgrpo",
        "--role",
        "worker",
        "--base",
        str(tiny_vlm_dir),
        "--out",
        str(tmp_path),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code != 0 and "--env simphone" in result.output and "Traceback" not in result.output
    result = runner.invoke(app, [*args, "--env", "simphone", "--ray-address", "auto"])
    assert result.exit_code != 0 and "--server-url" in result.output
    result = runner.invoke(app, [*args[:4], "reflector", *args[5:], "--env", "simphone"])
    assert result.exit_code != 0 and "worker or the manager" in result.output
    # the supervised trainers' batch flags would be silently ignored by the online loop
    result = runner.invoke(app, [*args, "--env", "simphone", "--batch-size", "8", "--epochs", "2"])
    assert result.exit_code != 0
    assert "--epochs, --batch-size have no effect with --method dgrpo" in result.output
    assert "--micro-batch-size" in result.output and "Traceback" not in result.output


def test_ray_address_without_ray_names_the_extra(
    tiny_vlm_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(  # a machine without ray, even where the dev extra installed it
        importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real_find_spec(name, *a)
    )
    args = _rl_args(tiny_vlm_dir, tmp_path / "out")
    result = runner.invoke(app, [*args, "--ray-address", "auto", "--server-url", "http://127.0.0.1:9/v1"])
    assert result.exit_code != 0 and "needs the 'ray' package" in result.output
    assert "Loading" not in result.output  # refused before any model is loaded


@pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason="ray is not installed (pip install 'agent-runtime[ray]')"
)
def test_ray_rollout_actors(rl_policy_dir: Path, tmp_path: Path) -> None:
    with ScriptedOpenAIServer({"manager": MANAGER_PLAN}) as manager, served(rl_policy_dir) as url:
        config = _config(tmp_path, manager.base_url)
        args = [*_rl_args(rl_policy_dir, tmp_path / "out"), "--config", str(config), "--server-url", url]
        result = runner.invoke(app, [*args, "--iterations", "1", "--ray-address", "local"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "iter_0001" / "manifest.json").is_file()


def test_cli_trpo_over_http_writes_iterations_and_resumes(rl_policy_dir: Path, tmp_path: Path) -> None:
    import torch

    torch.set_num_threads(1)
    out = tmp_path / "out"
    with ScriptedOpenAIServer({"manager": MANAGER_PLAN}) as manager, served(rl_policy_dir) as url:
        config = _config(tmp_path, manager.base_url)
        args = [
            *_rl_args(rl_policy_dir, out),
            *("--config", str(config), "--server-url", url, "--micro-batch-size", "2"),
        ]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        assert "iter 1: success" in result.output and "iter 2: success" in result.output
        assert "done" in result.output
        again = runner.invoke(app, args)  # without --resume, existing iterations are not overwritten
        assert again.exit_code != 0 and "--resume" in again.output
        resumed = runner.invoke(
            app,
            [
                *args[: args.index("--iterations") + 1],
                "3",
                *args[args.index("--iterations") + 2 :],
                "--resume",
            ],
        )
        assert resumed.exit_code == 0, resumed.output
        assert "resuming after iteration 2" in resumed.output and "iter 3: success" in resumed.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["method"] == "trpo" and manifest["kind"] == "lora" and manifest["training"]["steps"] == 3
    assert manifest["hyperparameters"]["rl"]["server_url"] == url
    assert manifest["hyperparameters"]["micro_batch_size"] == 2
    for it in (1, 2, 3):
        assert json.loads((out / f"iter_{it:04d}" / "manifest.json").read_text())["output"].endswith(
            f"iter_{it:04d}"
        )
    assert manager.counts.get("manager", 0) >= 8  # the other role really talked HTTP to its own model
