"""A person's refusal sticks: "n" to opening an app refuses opening it by another route (its
launcher icon) for the rest of the run, through the whole runtime with a scripted GUI-Owl model."""

from __future__ import annotations

from pathlib import Path

from agent_runtime.config import load_config
from agent_runtime.control import InputReply, InputRequest
from agent_runtime.evaluation.episode import tree_observation
from agent_runtime.runtime import Runtime
from agent_runtime.simphone import SimPhone
from agent_runtime.traces import load_run
from tests.doubles import ScriptedOpenAIServer, gui_owl_reply
from tests.test_graphs import nth, write_config


def test_no_to_open_app_also_refuses_the_launcher_icon(tmp_path: Path) -> None:
    phone = SimPhone(seed=0)
    icon = next(e for e in tree_observation(phone).elements if e.label == "Clock")
    x, y = icon.bounds.center
    replies = [
        gui_owl_reply({"action": "open_app", "text": "Clock"}, "open the clock"),
        gui_owl_reply({"action": "click", "coordinate": [x, y]}, "tap its icon instead"),
        gui_owl_reply({"action": "terminate", "status": "success"}, "done"),
    ]
    asked: list[InputRequest] = []

    def person(request: InputRequest) -> InputReply:
        asked.append(request)
        return InputReply.reject("not the clock")

    try:
        with ScriptedOpenAIServer({"single": nth(replies)}) as srv:
            extra = '[graph]\nkind = "single"\nmax_steps = 5\n[safety.apps."Clock"]\ndeny = true\n'
            cfg = load_config(write_config(tmp_path / "c.toml", srv.base_url, extra))
            result = Runtime(cfg, runs_dir=tmp_path / "runs").run(
                "Set an alarm for 7 AM", device=phone, on_input=person
            )
        assert [r.target for r in asked] == ["open Clock"]
        assert asked[0].effects == ["open Clock"]
        assert "deskclock" not in (phone.observe().app or "")
        denied = [i for i in load_run(result.run_dir).interventions if i.decision == "reject"]
        assert [(i.by, i.text) for i in denied] == [
            ("person", "not the clock"),
            ("person", "you refused to open Clock earlier in this run"),
        ]
    finally:
        phone.close()
