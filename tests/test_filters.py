"""Samples from hand-built traces, and each rejection-sampling filter with known expected keeps.

``write_run`` (also used by the critic and trainer tests) writes a run directory the way the
runtime does — run.json, steps.jsonl, calls.jsonl with ``image_ref`` messages, screens/ — from a
compact description of its steps.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from agent_runtime.traces import (
    CallRecord,
    RunRecord,
    StepRecord,
    TraceWriter,
    Verdict,
    Verification,
    load_run,
)
from agent_runtime.trainers.critics.labels import StepCriticLabel, TrajectoryCriticLabel, append_step_labels
from agent_runtime.trainers.data.filters import apply_filters
from agent_runtime.trainers.data.filters.consistency import check_consistency, filter_consistency
from agent_runtime.trainers.data.filters.dedup import filter_duplicates
from agent_runtime.trainers.data.filters.outcome import filter_outcome
from agent_runtime.trainers.data.filters.pipeline import FilterSettings, default_pipeline
from agent_runtime.trainers.data.filters.reflector import filter_reflector
from agent_runtime.trainers.data.filters.reweight import filter_reweight, success_rates
from agent_runtime.trainers.data.filters.validity import filter_valid
from agent_runtime.trainers.data.samples import collect_samples, samples_from_run

PALETTE = [
    (200, 30, 30),
    (30, 200, 30),
    (30, 30, 200),
    (200, 200, 30),
    (30, 200, 200),
    (200, 30, 200),
    (90, 90, 90),
]
TREE = (
    "TextView; ; Settings; [0,0][108,40]\nLinearLayout; clickable; Wi-Fi; [0,40][108,80]\n"
    "Switch; checkable clickable; Bluetooth; [0,80][108,120]"
)


def png(color: tuple[int, int, int], size: tuple[int, int] = (108, 240)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


def worker_text(thought: str, action: dict[str, Any], description: str = "do it") -> str:
    action_text = json.dumps(action)
    return f"### Thought ###\n{thought}\n### Action ###\n{action_text}\n### Description ###\n{description}"


def write_run(
    root: Path,
    run_id: str,
    steps: list[dict[str, Any]],
    *,
    task: str = "Turn on Wi-Fi",
    status: str = "completed",
    success: bool | None = True,
    eval_info: dict[str, Any] | None = None,
    critic: dict[str, Any] | None = None,
    roles: tuple[str, ...] = ("manager", "worker", "reflector", "notetaker"),
    tree: str = "",
    verified: bool = True,
) -> Path:
    """A run directory. Each step: ``screen`` (palette index of the screen before it, default =
    step index), ``thought``, ``action`` (model coords = screen coords here), ``outcome`` (A/B/C),
    optional ``bad_first`` (the Worker's first attempt did not parse) and ``completion``.

    A completed success is recorded as checked (``verified``; a SimPhone check passed), so that
    trainers label it a success; ``verified=False`` leaves it the agent's unverified claim."""
    d = root / run_id
    with TraceWriter(d) as w:
        w.write_run(
            RunRecord(
                run_id=run_id,
                task=task,
                status=status,
                success=success,
                steps=len(steps),
                eval=eval_info,
                critic=critic,
                verification=(
                    Verification(checked=True, success=True, by="simphone:Test/0")
                    if verified and success and status == "completed"
                    else None
                ),
            )
        )
        for i, s in enumerate(steps):
            before = w.save_screen(2 * i, png(PALETTE[s.get("screen", i) % len(PALETTE)]))
            after = w.save_screen(2 * i + 1, png(PALETTE[(s.get("screen", i) + 1) % len(PALETTE)]))
            outcome = s.get("outcome", "A")
            action = s.get("action", {"action": "click", "coordinate": [54, 60]})
            thought = s.get("thought", "Tap Wi-Fi to open it.")
            w.append_step(
                StepRecord(
                    step=i,
                    thought=thought,
                    description="do it",
                    action=action,
                    action_screen=action,
                    before_screen=before,
                    after_screen=after,
                    verdict=Verdict(outcome=outcome, success=outcome == "A"),
                )
            )
            image = {"type": "image_ref", "ref": before, "size": [56, 112]}
            prompt = [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": f"### User Request ###\n{task}\n{tree}"}, image],
                }
            ]
            if "worker" in roles:
                if s.get("bad_first"):
                    w.append_call(
                        CallRecord(
                            run_id=run_id,
                            step=i,
                            role="worker",
                            messages=prompt,
                            completion="no idea",
                            parse_error="no action JSON object found",
                        )
                    )
                completion = s.get("completion", worker_text(thought, action))
                w.append_call(
                    CallRecord(
                        run_id=run_id,
                        step=i,
                        role="worker",
                        attempt=1 if s.get("bad_first") else 0,
                        messages=prompt,
                        completion=completion,
                        parsed={
                            "thought": thought,
                            "action": action,
                            "raw_action": action,
                            "description": "do it",
                        },
                    )
                )
            if "manager" in roles:
                w.append_call(
                    CallRecord(
                        run_id=run_id,
                        step=i,
                        role="manager",
                        messages=prompt,
                        completion="### Thought ###\nok\n### Plan ###\n1. Turn on Wi-Fi",
                        parsed={"thought": "ok", "plan": ["Turn on Wi-Fi"]},
                    )
                )
            if "reflector" in roles:
                w.append_call(
                    CallRecord(
                        run_id=run_id,
                        step=i,
                        role="reflector",
                        messages=prompt,
                        completion=f"### Outcome ###\n{outcome}",
                        parsed={"outcome": outcome, "error_description": ""},
                    )
                )
            if "notetaker" in roles:
                w.append_call(
                    CallRecord(
                        run_id=run_id,
                        step=i,
                        role="notetaker",
                        messages=prompt,
                        completion="### Important Notes ###\nNone",
                        parsed={"notes": ""},
                    )
                )
    return d


def samples_of(root: Path, role: str = "worker"):
    return collect_samples(root, [role]).samples


# -- samples -----------------------------------------------------------------------------------


def test_every_call_becomes_a_labelled_sample(tmp_path):
    d = write_run(
        tmp_path, "r1", [{"outcome": "C", "screen": 0}, {"outcome": "A", "screen": 0, "bad_first": True}]
    )
    append_step_labels(
        d,
        [
            StepCriticLabel(step=0, annotation="HARMFUL", summary="tapped nothing"),
            StepCriticLabel(step=1, annotation="NEUTRAL"),
            StepCriticLabel(step=1, annotation="GOOD", summary="later label wins"),
        ],
    )
    samples = samples_from_run(load_run(d))
    assert [s.role for s in samples] == [
        "worker",
        "manager",
        "reflector",
        "notetaker",
        "worker",
        "worker",
        "manager",
        "reflector",
        "notetaker",
    ]
    w0, bad, good = (s for s in samples if s.role == "worker")
    assert w0.outcome == "success" and w0.outcome_source == "check" and w0.task_key == "Turn on Wi-Fi"
    assert w0.verdict.outcome == "C" and w0.critic_score == 0.0 and w0.critic["summary"] == "tapped nothing"
    assert good.critic_score == 1.0 and good.critic["summary"] == "later label wins"
    assert not bad.valid and good.valid and good.attempt == 1
    # same pixels before steps 0 and 1 -> same hash; the image ref resolves against the run dir
    assert w0.screen_hash == good.screen_hash and w0.image_hashes == [w0.screen_hash]
    assert Path(w0.image_root, w0.messages[0]["content"][1]["ref"]).is_file()


def test_eval_outcome_overrides_the_agents_claim(tmp_path):
    write_run(
        tmp_path,
        "r1",
        [{}],
        status="completed",
        success=True,
        eval_info={"task_name": "WifiOn", "seed": 3, "task_success": False},
    )
    write_run(
        tmp_path,
        "r2",
        [{}],
        status="max_steps",
        success=None,
        eval_info={"task": "WifiOn", "seed": 4, "task_success": None},
    )  # the eval harness's key
    write_run(tmp_path, "r3", [{}], status="running", success=None)
    found = collect_samples(tmp_path, ["worker"])
    by_run = {s.run_id: s for s in found.samples}
    assert by_run["r1"].outcome == "failure" and by_run["r1"].outcome_source == "eval"
    assert by_run["r1"].task_key == "simphone:WifiOn"
    assert by_run["r2"].outcome == "failure" and by_run["r2"].outcome_source == "agent"
    assert by_run["r2"].task_key == "simphone:WifiOn"
    assert found.runs == ["r1", "r2"] and list(found.skipped) == [str(tmp_path / "r3")]


def test_an_unverified_claim_is_unlabeled_unless_a_critic_or_a_check_labels_it(tmp_path):
    write_run(tmp_path, "claim", [{}], verified=False)
    write_run(tmp_path, "checked", [{}])
    write_run(
        tmp_path, "refuted", [{}], verified=False, eval_info={"task": "X", "seed": 1, "task_success": False}
    )
    correct = TrajectoryCriticLabel(text="Correct", multimodal="Correct").to_run_field()
    write_run(tmp_path, "critic", [{}], verified=False, critic=correct)
    write_run(tmp_path, "gave-up", [{}], status="gave_up", success=False, verified=False)
    by_run = {s.run_id: s for s in collect_samples(tmp_path, ["worker"]).samples}
    labels = {run: (s.outcome, s.outcome_source) for run, s in by_run.items()}
    assert labels == {
        "claim": ("unknown", "agent"),
        "checked": ("success", "check"),
        "refuted": ("failure", "eval"),
        "critic": ("success", "critic"),
        "gave-up": ("failure", "agent"),
    }
    kept = filter_outcome(list(by_run.values()))
    assert {s.run_id for s in kept.samples} == {"checked", "critic"}
    assert kept.report.dropped["run outcome unknown (an unverified claim)"] == 1


# -- filters -----------------------------------------------------------------------------------


def test_validity_drops_unparsed_attempts(tmp_path):
    write_run(tmp_path, "r1", [{"bad_first": True}, {}])
    kept, rep = filter_valid(samples_of(tmp_path))
    assert [(s.step, s.attempt) for s in kept] == [(0, 1), (1, 0)]
    assert rep.before == 3 and rep.after == 2 and rep.dropped == {"parse error": 1}


def test_outcome_filter_success_critic_threshold_and_consensus(tmp_path):
    ok = write_run(tmp_path, "a-ok", [{}, {}, {}, {}])
    append_step_labels(
        ok,
        [
            StepCriticLabel(step=0, annotation="GOOD"),
            StepCriticLabel(step=1, annotation="NEUTRAL"),
            StepCriticLabel(step=2, annotation="HARMFUL"),
        ],
    )  # step 3: no label
    write_run(tmp_path, "b-failed", [{}], status="failed", success=False)
    incorrect = TrajectoryCriticLabel(text="Correct", multimodal="Incorrect").to_run_field()
    write_run(tmp_path, "c-judged-incorrect", [{}], critic=incorrect)
    samples = samples_of(tmp_path)

    kept, rep = filter_outcome(samples, critic_threshold=0.5)
    assert [(s.run_id, s.step) for s in kept] == [("a-ok", 0), ("a-ok", 1), ("a-ok", 3)]
    assert rep.dropped == {
        "run outcome failure": 1,
        "trajectory critic: Incorrect": 1,
        "critic score < 0.5": 1,
    }
    assert rep.kept == {"critic score >= 0.5": 2, "no critic label": 1}

    kept, _ = filter_outcome(samples, critic_threshold=0.75, missing_critic="drop")
    assert [(s.run_id, s.step) for s in kept] == [("a-ok", 0)]
    kept, _ = filter_outcome(
        samples, critic_threshold=0.0, require_success=False, require_trajectory_correct=False
    )
    assert len(kept) == len(samples)


@pytest.mark.parametrize(
    ("thought", "action", "ok", "reason"),
    [
        ("Tap the Wi-Fi row to open it.", {"action": "click", "coordinate": [54, 60]}, True, "consistent"),
        (
            "Tap Bluetooth.",
            {"action": "click", "coordinate": [54, 60]},
            False,
            "target element not in thought",
        ),
        ("Tap at (55, 61), the row I need.", {"action": "click", "coordinate": [54, 60]}, True, "consistent"),
        (
            "Scroll down to find it.",
            {"action": "click", "coordinate": [54, 60]},
            False,
            "thought does not name a click",
        ),
        ('Type "hello world" into the box.', {"action": "type", "text": "hello world"}, True, "consistent"),
        ("Type the greeting.", {"action": "type", "text": "hello world"}, False, "typed text not in thought"),
        (
            "Swipe left to see more.",
            {"action": "swipe", "coordinate": [50, 200], "coordinate2": [50, 50]},
            False,
            "swipe direction contradicts thought",
        ),
        (
            "Swipe up to scroll down.",
            {"action": "swipe", "coordinate": [50, 200], "coordinate2": [50, 50]},
            True,
            "consistent",
        ),
        ("Go back to the previous page.", {"action": "system_button", "button": "Back"}, True, "consistent"),
        ("The task is complete.", {"action": "terminate", "status": "success"}, True, "consistent"),
        (
            "The task is complete.",
            {"action": "terminate", "status": "failure"},
            False,
            "thought does not say the task failed",
        ),
    ],
)
def test_consistency_heuristic(thought, action, ok, reason):
    assert check_consistency(thought, action, prompt=TREE, action_screen=action) == (ok, reason)


def test_consistency_filter_checks_worker_calls_only(tmp_path):
    write_run(tmp_path, "r1", [{"thought": "Tap Wi-Fi."}, {"thought": "Open Bluetooth settings."}], tree=TREE)
    samples = collect_samples(tmp_path).samples
    kept, rep = filter_consistency(samples)
    assert [(s.role, s.step) for s in kept if s.role == "worker"] == [("worker", 0)]
    assert len(kept) == len(samples) - 1
    assert rep.dropped == {"target element not in thought": 1} and rep.kept["no action to check"] == 6


def test_reweight_by_task_success_rate(tmp_path):
    write_run(tmp_path, "a1", [{}, {}], task="always solved")
    write_run(tmp_path, "a2", [{}], task="always solved")
    write_run(tmp_path, "n1", [{}], task="never solved", status="failed", success=False)
    write_run(tmp_path, "h1", [{}], task="half solved")
    write_run(tmp_path, "h2", [{}], task="half solved", status="failed", success=False)
    samples = samples_of(tmp_path)
    rates = success_rates(samples)
    assert rates == {"always solved": 1.0, "half solved": 0.5, "never solved": 0.0}

    kept, rep = filter_reweight(samples, rates=rates, min_weight=0.0, max_weight=2.0)
    # always solved: weight 0 -> gone; never solved: weight 2 -> twice; half: weight 1 -> once
    assert sorted(s.run_id for s in kept) == ["h1", "h2", "n1", "n1"]
    assert rep.details["tasks"]["never solved"] == {
        "success_rate": 0.0,
        "weight": 2.0,
        "before": 1,
        "after": 2,
    }
    assert rep.after == 4 and rep.dropped == {"down-sampled (frequently solved task)": 3}

    # fractional weights are drawn per sample id: the same result whatever the order
    a, _ = filter_reweight(samples, rates=rates, seed=7)
    b, _ = filter_reweight(list(reversed(samples)), rates=rates, seed=7)
    assert sorted(s.id for s in a) == sorted(s.id for s in b)


def test_reflector_balancing_rule(tmp_path):
    # run "mixed": negatives at 1 (followed by A) and 4 (followed by A) are kept, 3 (followed by B) is not;
    # its positives are dropped because the trajectory has negatives. Run "clean" is all positive.
    write_run(tmp_path, "mixed", [{"outcome": o} for o in "ACABBA"], roles=("reflector",))
    write_run(tmp_path, "clean", [{"outcome": "A"}] * 3, roles=("reflector",))
    samples = samples_of(tmp_path, "reflector")

    kept, rep = filter_reflector(samples, balance=False)
    assert [(s.run_id, s.step) for s in kept] == [
        ("clean", 0),
        ("clean", 1),
        ("clean", 2),
        ("mixed", 1),
        ("mixed", 4),
    ]
    assert rep.dropped == {
        "positive in a trajectory with negatives": 3,
        "negative not followed by a positive": 1,
    }

    kept, rep = filter_reflector(samples, balance=True, seed=1)
    negatives = [s for s in kept if s.parsed["outcome"] != "A"]
    positives = [s for s in kept if s.parsed["outcome"] == "A"]
    assert len(negatives) == len(positives) == 2
    assert {(s.run_id, s.step) for s in negatives} == {("mixed", 1), ("mixed", 4)}
    assert all(s.run_id == "clean" for s in positives) and rep.dropped["balance: excess positives"] == 1


def test_dedup_compares_screens_by_content(tmp_path):
    write_run(tmp_path, "r1", [{}])
    write_run(tmp_path, "r2", [{}])  # byte-identical calls and screens
    write_run(tmp_path, "r3", [{"screen": 4}])  # same text, other screenshot
    kept, rep = filter_duplicates(samples_of(tmp_path))
    assert [s.run_id for s in kept] == ["r1", "r3"] and rep.dropped == {"duplicate": 1}


def test_default_pipeline_per_role(tmp_path):
    write_run(tmp_path, "r1", [{"outcome": "C"}, {"outcome": "A"}], tree=TREE)
    write_run(tmp_path, "r2", [{"outcome": "A"}], status="failed", success=False, tree=TREE)
    names = {role: [] for role in ("manager", "worker", "reflector", "notetaker")}
    for role in names:
        samples = samples_of(tmp_path, role)
        _, reports = apply_filters(samples, default_pipeline(role, FilterSettings(), success_rates(samples)))
        names[role] = [r.name for r in reports]
    assert names["worker"] == ["validity", "outcome", "consistency", "dedup", "reweight"]
    assert names["reflector"] == ["validity", "reflector", "dedup"]
    assert names["manager"] == names["notetaker"] == ["validity", "outcome", "dedup", "reweight"]
    skipped = default_pipeline("worker", FilterSettings(skip=["consistency", "reweight"]), {})
    assert len(skipped) == 3
