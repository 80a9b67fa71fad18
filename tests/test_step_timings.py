"""Step timings are typed (StepTimings) and still write the ``timings_ms`` dict traces always held."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agent_runtime.graphs.state import Step
from agent_runtime.traces import StepFields, StepRecord, StepTimings, Verdict


def test_unmeasured_parts_are_absent_and_measured_ones_keep_their_order():
    t = StepTimings(worker=12.34567, execute=3.0, observe=0.0)
    t.reflector = 5.0
    t.reflect_model = 5.0
    t.critical_path = 30.0
    assert t.as_ms() == {
        "worker": 12.346,
        "execute": 3.0,
        "observe": 0.0,  # measured as zero is still measured
        "reflector": 5.0,
        "reflect_model": 5.0,
        "critical_path": 30.0,
    }
    assert list(t.as_ms()) == ["worker", "execute", "observe", "reflector", "reflect_model", "critical_path"]
    assert t.ms("execute", "observe", "notetaker") == 3.0


def test_a_misspelt_part_is_refused_but_a_recorded_unknown_one_is_skipped():
    with pytest.raises(ValidationError):
        StepTimings(workr=1.0)  # type: ignore[call-arg]
    with pytest.raises(ValueError):
        StepTimings().execut = 1.0  # type: ignore[attr-defined]
    assert StepTimings.from_ms({"worker": 1.0, "future_part": 2.0}).as_ms() == {"worker": 1.0}


def test_the_step_record_is_derived_from_the_step_in_progress():
    step = Step(
        step=3,
        subgoal="Open Clock",
        before_screen="screens/0003.png",
        after_screen="screens/0004.png",
        action={"action": "click", "coordinate": [1, 2]},
        verdict=Verdict.of("A", source="reflector"),
        actor="single",
        graph="single",
        timings={"single": 40.0, "execute": 2.0},
    )
    assert isinstance(step.timings, StepTimings)
    record = step.record(notes="n", timings=step.timings)
    assert isinstance(record, StepRecord)
    for name in StepFields.model_fields:
        assert getattr(record, name) == getattr(step, name), name
    assert record.timings_ms == {"single": 40.0, "execute": 2.0}
    assert record.notes == "n"
