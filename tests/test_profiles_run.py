"""Each official profile end to end: ``run --graph single`` over real HTTP to a scripted
OpenAI-compatible server that answers in that family's exact format, on a checked SimPhone task.

The script replays the SimPhone oracle's actions (screen pixels) converted into each family's
coordinate space and reply format; the run must end verified, and the requests the server
received must have the family's layout (PNG screenshots, its system turn, its history).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_runtime.coords import CoordMapper, ImageBudget, Size
from agent_runtime.profiles import PROFILES
from agent_runtime.traces import load_run
from tests.doubles import ScriptedOpenAIServer
from tests.test_graphs import SEED, TASK, nth, oracle_actions
from tests.test_run_cli import cli

SCREEN = Size(1080, 2400)


def to_model(name: str, action: dict[str, Any]) -> dict[str, Any]:
    """``action`` (screen pixels) in profile ``name``'s coordinate space."""
    p = PROFILES[name]
    mapper = CoordMapper(
        space=p.coords, screen=SCREEN, budget=ImageBudget(min_pixels=p.min_pixels, max_pixels=p.max_pixels)
    )
    if "coordinate" not in action:
        return action
    x, y = mapper.from_screen(*action["coordinate"])
    return {**action, "coordinate": [round(x), round(y)]}


def family_reply(name: str, action: dict[str, Any], i: int) -> str:
    """The reply a model of family ``name`` writes for ``action``."""
    action = to_model(name, action)
    arguments = {**action, "action": "open" if action["action"] == "open_app" else action["action"]}
    if name == "gui-owl":
        return (
            f"<thinking>\nstep {i}\n</thinking>\n<tool_call>\n"
            + json.dumps({"name": "mobile_use", "arguments": arguments})
            + f"\n</tool_call>\n<conclusion>\nDid step {i}.\n</conclusion>"
        )
    if name == "gui-owl-1.5":
        return (
            f"Action: Do step {i}.\n<tool_call>\n"
            + json.dumps({"name": "mobile_use", "arguments": arguments})
            + "\n</tool_call>"
        )
    calls = {
        "open_app": lambda a: f"open_app(app_name='{a['text']}')",
        "click": lambda a: f"click(start_box='({a['coordinate'][0]},{a['coordinate'][1]})')",
        "terminate": lambda a: "finished(content='')",
    }
    return f"Thought: Step {i}.\nAction: {calls[action['action']](action)}"


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_official_profile_completes_a_simphone_task_over_http(tmp_path: Path, name: str) -> None:
    actions = oracle_actions()
    script = {"single": nth([family_reply(name, a, i) for i, a in enumerate(actions)])}
    served = {"gui-owl": "mPLUG/GUI-Owl-7B", "gui-owl-1.5": "GUI-Owl-1.5-8B", "ui-tars-1.5": "UI-TARS-1.5-7B"}
    with ScriptedOpenAIServer(script, classify=lambda _: "single", model=served[name]) as srv:
        cfg = tmp_path / "c.toml"
        cfg.write_text(
            f'[models.default]\nbase_url = "{srv.base_url}"\nmodel = "auto"\nretries = 0\ntimeout_s = 10\n'
            "[roles.rag]\nenabled = false\n",
            encoding="utf-8",
        )
        args = [
            "--task-id",
            f"{TASK}/{SEED}",
            "--graph",
            "single",
            "--config",
            str(cfg),
            "--runs-dir",
            "runs",
        ]
        p = cli("run", *args, "--json", cwd=tmp_path)
        requests = list(srv.requests)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["status"] == "completed" and out["verified"] is True, out
    loaded = load_run(tmp_path / out["run_dir"])
    assert [c.extra.get("profile") for c in loaded.calls] == [name] * len(loaded.calls)  # chosen by `auto`
    last = requests[-1]["messages"]
    parts = [p for m in last if isinstance(m["content"], list) for p in m["content"]]
    urls = [p["image_url"]["url"] for p in parts if p.get("type") == "image_url"]
    assert urls and all(u.startswith("data:image/png;base64,") for u in urls)
    assert last[0]["role"] == "system"
    if name == "gui-owl":
        text = last[1]["content"][0]["text"]  # the official "Step 1: …; " history with its closing "."
        assert "device): Step 1: Did step 0.; Step 2: Did step 1.; .\n" in text
    else:  # multi-turn: every earlier reply comes back as an assistant turn, with its screenshot
        assert [m["role"] for m in last].count("assistant") == len(actions) - 1
        assert len(urls) == len(actions)
