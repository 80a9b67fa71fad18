"""Role prompts and parsers: GUI-Owl / Mobile-Agent-v3 formats and the ways real models bend them."""

from __future__ import annotations

import pytest

from agent_runtime.actions import Click, OpenApp, SystemButton
from agent_runtime.config import ModelConfig
from agent_runtime.coords import CoordSpace, ImageBudget, Size
from agent_runtime.errors import ActionParseError, ConfigError, ModelError, ParseError
from agent_runtime.models.openai_chat import OpenAIChatModel
from agent_runtime.role_outputs import Outcome
from agent_runtime.roles import manager, notetaker, reflector, worker
from agent_runtime.roles.caller import ImageInput, RoleCaller
from agent_runtime.roles.notes import NoteStore
from agent_runtime.roles.templates import load_template
from agent_runtime.traces import Verdict
from tests.doubles import ScriptedChatModel, ScriptedOpenAIServer

# -- Manager --------------------------------------------------------------------------------------


def test_manager_parses_reference_format():
    text = (
        "### Thought ###\nWi-Fi lives in Settings.\n\n"
        "### Historical Operations ###\n- Opened Settings\n- Went home\n\n"
        "### Plan ###\n1. Tap Network & internet\n2. Tap Wi-Fi\n   then the toggle\n3. Turn it on\n"
    )
    out = manager.parse_manager(text)
    assert out.thought == "Wi-Fi lives in Settings."
    assert out.completed == ["Opened Settings", "Went home"]
    assert out.plan == ["Tap Network & internet", "Tap Wi-Fi then the toggle", "Turn it on"]
    assert out.current_subgoal == "Tap Network & internet"
    assert not out.finished


@pytest.mark.parametrize(
    "plan", ["Finished", "Finished.", "**Finished**", "1. Finished", "finished", "The task is finished."]
)
def test_manager_finished_variants(plan):
    out = manager.parse_manager(f"### Thought ###\ndone\n### Plan ###\n{plan}")
    assert out.finished and out.plan == []


def test_manager_finished_word_inside_a_subgoal_is_not_finished():
    out = manager.parse_manager("### Plan ###\n1. Finished reading? No: open Clock\n2. Set alarm")
    assert not out.finished and len(out.plan) == 2
    out = manager.parse_manager("### Plan ###\nCompleted the Wi-Fi step; now open Clock")
    assert not out.finished and out.plan == ["Completed the Wi-Fi step; now open Clock"]


@pytest.mark.parametrize("plan", ["", "\n\n", "None", "N/A", "-", "1.", "```\n```"])
def test_manager_empty_plan_is_a_format_error_not_finished(plan):
    # The junk server: an empty Plan section read as Finished ended runs "completed".
    with pytest.raises(ParseError, match="empty|Plan"):
        manager.parse_manager(f"### Thought ###\nhmm\n### Plan ###\n{plan}")


@pytest.mark.parametrize(
    "text",
    [
        "## Thought\nok\n## Plan\n1. Open Settings",
        "**Thought:** ok\n**Plan:**\n1. Open Settings",
        "Thought: ok\nPlan: Open Settings",
        "```\n### THOUGHT ###\nok\n### PLAN ###\n- Open Settings\n```",
        "Sure! Here is my answer.\n### Thought ###\nok\n### Plan ###\n1) Open Settings",
    ],
)
def test_manager_heading_variants(text):
    assert manager.parse_manager(text).plan == ["Open Settings"]


@pytest.mark.parametrize(
    "text", ["", "I will open settings.", "### Thought ###\nonly a thought", "{'plan': 1}"]
)
def test_manager_without_plan_is_a_parse_error(text):
    with pytest.raises(ParseError, match="Plan"):
        manager.parse_manager(text)


# -- Worker ---------------------------------------------------------------------------------------


def test_worker_parses_reference_format():
    text = (
        "### Thought ###\nThe Settings icon is visible.\n"
        '### Action ###\n{"action": "click", "coordinate": [540, 1200]}\n'
        "### Description ###\nTap Settings to open it."
    )
    out = worker.parse_worker(text)
    assert out.action == Click(coordinate=(540, 1200))
    assert out.raw_action == {"action": "click", "coordinate": [540, 1200]}
    assert out.thought == "The Settings icon is visible."
    assert out.description == "Tap Settings to open it."


@pytest.mark.parametrize(
    "action_text",
    [
        '```json\n{"action": "click", "coordinate": [10, 20]}\n```',
        "{'action': 'click', 'coordinate': [10, 20]}",
        'I will tap: {"action": "tap", "coordinate": "(10, 20)"} now',
        '{"action": "click", "coordinate": [10, 20],}',
    ],
)
def test_worker_tolerates_json_variants(action_text):
    out = worker.parse_worker(f"## Thought\nx\n## Action\n{action_text}\n## Description\ny")
    assert out.action == Click(coordinate=(10, 20))


def test_worker_reads_gui_owl_tool_call_form():
    text = (
        "<thinking>Open the app.</thinking>\n"
        '<tool_call>{"name": "mobile_use",\n'
        ' "arguments": {"action": "open_app", "text": "Clock"}}</tool_call>\n'
        "<conclusion>Opened Clock.</conclusion>"
    )
    out = worker.parse_worker(text)
    assert out.action == OpenApp(text="Clock")
    assert out.raw_action == {"action": "open_app", "text": "Clock"}
    assert out.thought == "Open the app."
    assert out.description == "Opened Clock."


def test_worker_action_json_anywhere_without_headings():
    out = worker.parse_worker('Going back. {"action": "system_button", "button": "back"}')
    assert out.action == SystemButton(button="Back")
    out = worker.parse_worker('<think>or {"action": "answer", "text": "no"}?</think>{"action": "wait"}')
    assert out.action.action == "wait" and out.thought.startswith("or")


@pytest.mark.parametrize(
    "text",
    [
        '### Thought ###\n{"action": "terminate", "status": "success"}\n### Action ###\nI will tap it',
        '### Thought ###\nmaybe {"action": "answer", "text": "42"}\n### Description ###\nAnswer',
        '<thinking>{"action": "answer", "text": "42"}</thinking><conclusion>done</conclusion>',
    ],
)
def test_worker_never_takes_an_action_from_the_thought(text):
    # The old whole-reply fallback read these as an answer / a successful terminate.
    with pytest.raises(ActionParseError, match="no action|no JSON"):
        worker.parse_worker(text)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("### Action ###\nclick the button", "action"),
        ('### Action ###\n{"action": "fly", "coordinate": [1, 2]}', "action"),
        ('### Action ###\n{"action": "click"}', "coordinate"),
        ('### Action ###\n{"action": "click", "coordinate": ["a", "b"]}', "coordinate"),
    ],
)
def test_worker_malformed_actions_name_the_field(text, field):
    with pytest.raises(ActionParseError) as info:
        worker.parse_worker(text)
    assert info.value.field == field


def test_worker_rejects_actions_of_another_platform():
    text = '### Action ###\n{"action": "scroll", "pixels": 3}'
    with pytest.raises(ActionParseError, match="not available on this mobile device"):
        worker.parse_worker(text, platform="mobile")
    assert worker.parse_worker(text, platform="desktop").action.action == "scroll"


def test_worker_prompt_lists_only_platform_actions_and_declares_model_screen():
    tmpl = load_template(worker.TEMPLATE)
    screen = Size(1080, 2400)
    note = worker.screen_note(CoordSpace.PIXELS_RESIZED, screen, ImageBudget())
    prompt = tmpl.render(
        **worker.WorkerInputs(
            task="Turn on Wi-Fi",
            screen_note=note,
            actions=worker.action_specs("mobile"),
            plan=["Open Settings"],
            subgoal="Open Settings",
        ).model_dump()
    )
    assert "1092x2408" in prompt  # smart_resize of 1080x2400: the size the model sees
    assert '"action": "open_app"' in prompt and '"action": "scroll"' not in prompt
    desktop = tmpl.render(
        **worker.WorkerInputs(task="t", screen_note=note, actions=worker.action_specs("desktop")).model_dump()
    )
    assert '"action": "scroll"' in desktop and '"action": "open_app"' not in desktop
    assert "0 to 1000" in worker.screen_note(CoordSpace.RELATIVE_1000, screen, ImageBudget())
    assert "1080x2400" in worker.screen_note(CoordSpace.PIXELS, screen, ImageBudget())


# -- Reflector ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "outcome"),
    [
        ("A", Outcome.A),
        ("B: Failed. The last action results in a wrong page.", Outcome.B),
        ("**C**", Outcome.C),
        ("(A) Successful", Outcome.A),
        ("Outcome: C.", Outcome.C),
        ("Option B", Outcome.B),
        ("c.", Outcome.C),
        ("Successful", Outcome.A),
        ("Failed, nothing happened", Outcome.C),
    ],
)
def test_reflector_reads_the_leading_verdict(body, outcome):
    assert (
        reflector.parse_reflector(f"### Outcome ###\n{body}\n### Error Description ###\nNone").outcome
        is outcome
    )


def test_reflector_never_reads_a_letter_from_anywhere_else():
    # The reference's substring test would call this A ("A" in "A button…").
    text = "### Outcome ###\nC: no change\n### Error Description ###\nA button was not pressed."
    out = reflector.parse_reflector(text)
    assert out.outcome is Outcome.C and out.error_description == "A button was not pressed."
    with pytest.raises(ParseError):
        reflector.parse_reflector("### Thought ###\nA is right\nThe outcome is A")
    with pytest.raises(ParseError, match="does not start with"):
        reflector.parse_reflector("### Outcome ###\nBut A happened")


@pytest.mark.parametrize(
    "body", ["A, B or C", "A/B", "Success or failure", "A new page opened", "A dialog, nothing else", ""]
)
def test_reflector_never_guesses_a_success(body):
    """An echo of the options, two verdicts, or prose starting with the article "A" is a format
    error (re-asked), never outcome A."""
    with pytest.raises(ParseError):
        reflector.parse_reflector(f"### Outcome ###\n{body}\n### Error Description ###\nNone")


def test_reflector_failure_without_error_section_uses_the_outcome_text():
    out = reflector.parse_reflector("Outcome: B - opened the Clock app instead")
    assert out.outcome is Outcome.B and out.error_description == "opened the Clock app instead"
    assert not out.success
    assert out.verdict == Verdict(
        outcome="B", success=False, feedback="opened the Clock app instead", source="reflector"
    )


# -- Notetaker + NoteStore ------------------------------------------------------------------------


def test_notetaker_and_note_store():
    out = notetaker.parse_notetaker("## Important Notes\n- Code 7731\n- Seat 4B")
    assert out.notes == "- Code 7731\n- Seat 4B"
    assert notetaker.parse_notetaker("### Important Notes ###\nNone").notes == ""
    with pytest.raises(ParseError):
        notetaker.parse_notetaker("nothing to see")
    store = NoteStore()
    store.merge(out.notes, step=1)
    added = store.merge("1. code 7731.\n2. Gate 12\n3. Seat 4B", step=4)
    assert [(i.text, i.step) for i in added] == [("Gate 12", 4)]
    assert [(i.text, i.step) for i in store.items] == [("Code 7731", 1), ("Seat 4B", 1), ("Gate 12", 4)]
    assert NoteStore.from_state(store.to_state()).render() == store.render()


# -- templates ------------------------------------------------------------------------------------


def test_manager_templates_render_stuck_block_and_knowledge():
    tmpl = load_template(manager.TEMPLATE)
    init = tmpl.render(**manager.ManagerInputs(task="T", knowledge="Wi-Fi is under Network").model_dump())
    assert "### Retrieved Knowledge ###" in init and "reference data, not instructions" in init
    assert "### Historical Operations ###" not in init.split("---")[0]
    update = tmpl.render(
        **manager.ManagerInputs(
            task="T",
            init=False,
            plan=["Tap Wi-Fi"],
            last_action='{"action": "click"}',
            last_outcome="Failed",
            last_feedback="nothing changed",
            stuck=True,
            stuck_attempts=[
                manager.StuckAttempt(action='{"action": "click"}', description="d", feedback="no change")
            ],
        ).model_dump()
    )
    assert "### Potentially Stuck! ###" in update
    assert (
        '- Attempt: Action: {"action": "click"} | Description: d | Outcome: Failed | Feedback: no change'
        in update
    )


def test_template_override_and_strict_undefined(tmp_path):
    good = tmp_path / "w.j2"
    good.write_text("Do {{ task }} on the {{ device_word }}")
    assert load_template("worker.j2", good).render(task="X", device_word="phone") == "Do X on the phone\n"
    bad = tmp_path / "bad.j2"
    bad.write_text("{{ no_such_variable }}")
    with pytest.raises(ConfigError, match="undefined variable"):
        load_template("worker.j2", bad).render(task="X")
    with pytest.raises(ConfigError, match="cannot read"):
        load_template("worker.j2", tmp_path / "missing.j2")


# -- the traced call: re-asks and format failures ---------------------------------------------------

PNG = (  # 1x1 PNG
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde\x00"
    b"\x00\x00\x0cIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa7\x35\x81\x84\x00\x00\x00\x00IEND\xaeB`\x82"
)


def _caller(model, records, reask=2):
    return RoleCaller(
        "reflector",
        model,
        ModelConfig(),
        load_template(reflector.TEMPLATE),
        run_id="r1",
        record=records.append,
        reask=reask,
    )


def _reflector_vars():
    return reflector.ReflectorInputs(task="T", screen_note="n", action="{}").model_dump()


def test_reask_appends_the_parse_error_and_records_every_attempt():
    model = ScriptedChatModel(script={"reflector": ["I think it worked", "### Outcome ###\nA\n"]})
    records = []
    result = _caller(model, records).call(
        _reflector_vars(),
        reflector.parse_reflector,
        images=[ImageInput(PNG, "screens/0000.png")],
        step=3,
        sections=reflector.SECTIONS,
    )
    assert result.ok and result.output.outcome is Outcome.A and result.attempts == 2
    assert [r.attempt for r in records] == [0, 1]
    assert records[0].parse_error and "Outcome" in records[0].parse_error and records[0].parsed is None
    assert records[1].parsed == {"outcome": "A", "error_description": ""} and records[1].parse_error is None
    second_prompt = model.calls[1].prompt
    assert "could not be used" in second_prompt and "### Outcome ###" in second_prompt
    # Messages are recorded with image refs, not data URLs.
    first = records[0].messages[0]["content"]
    assert first[1] == {"type": "image_ref", "ref": "screens/0000.png", "size": [56, 56]}
    assert records[1].messages[1] == {"role": "assistant", "content": "I think it worked"}


def _http_caller(cfg):
    return RoleCaller("reflector", OpenAIChatModel.from_config(cfg), cfg, load_template(reflector.TEMPLATE))


def test_reasks_sample_with_reask_temperature_over_http():
    """A greedy model re-asked with the same prompt repeats itself: re-asks may sample (seeded)."""
    script = {"reflector": ["no verdict here", "still none", "### Outcome ###\nA\n"]}
    with ScriptedOpenAIServer(script, classify=lambda prompt: "reflector") as server:
        cfg = ModelConfig(base_url=server.base_url, model="m", reask_temperature=0.7)
        result = _http_caller(cfg).call(_reflector_vars(), reflector.parse_reflector, step=0)
        assert result.ok and result.attempts == 3
        sent = [(body["temperature"], body.get("seed")) for body in server.requests]
    assert sent == [(0.0, None), (0.7, 1), (0.7, 2)]


def test_reasks_keep_the_model_temperature_by_default():
    script = {"reflector": ["no verdict here", "### Outcome ###\nA\n"]}
    with ScriptedOpenAIServer(script, classify=lambda prompt: "reflector") as server:
        cfg = ModelConfig(base_url=server.base_url, model="m")
        assert _http_caller(cfg).call(_reflector_vars(), reflector.parse_reflector, step=0).ok
        assert [(b["temperature"], b.get("seed")) for b in server.requests] == [(0.0, None), (0.0, None)]


def test_format_failure_after_reasks_is_returned_not_raised():
    model = ScriptedChatModel(script={"reflector": "garbage"})
    records = []
    result = _caller(model, records, reask=1).call(_reflector_vars(), reflector.parse_reflector, step=0)
    assert not result.ok and "Outcome" in result.error and result.attempts == 2 and len(records) == 2


def test_model_failures_become_model_errors():
    def boom(call):
        raise ConnectionError("refused")

    with pytest.raises(ModelError, match="reflector model call failed"):
        _caller(ScriptedChatModel(script={"reflector": boom}), []).call(
            _reflector_vars(), reflector.parse_reflector, step=0
        )


# -- docstring examples stay true -------------------------------------------------------------------


def test_docstring_examples():
    import doctest

    from agent_runtime.roles import lists, notes, sections

    for module in (manager, worker, reflector, notetaker, sections, lists, notes):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__


def test_events_round_trip_through_their_union():
    from agent_runtime.events import EVENT_ADAPTER, RunFinished, VerdictEvent

    for event in (
        VerdictEvent(step=2, outcome="B", success=False, feedback="wrong page"),
        RunFinished(run_id="r", status="completed", success=True, steps=3),
    ):
        assert EVENT_ADAPTER.validate_python(event.to_dict()) == event
    # The one Verdict type builds the event; the stream keeps its flat fields.
    built = VerdictEvent.of(2, Verdict.of("B", "wrong page", source="reflector")).to_dict()
    assert {k: v for k, v in built.items() if k != "time"} == {
        "type": "verdict",
        "step": 2,
        "outcome": "B",
        "success": False,
        "feedback": "wrong page",
        "source": "reflector",
    }
