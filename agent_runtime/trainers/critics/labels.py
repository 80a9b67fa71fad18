"""Critic labels and where they live in a run directory.

``agent-runtime judge`` never rewrites ``steps.jsonl`` (append-only, written by the runtime).
Step labels go to their own append-only file and the trajectory verdict into ``run.json``::

    RUNS_DIR/<run_id>/
        critic.jsonl    one StepCriticLabel per judged step; a later line for the same step wins
        run.json        RunRecord.critic = TrajectoryCriticLabel (both channels + consensus)

:func:`merge_step_labels` puts the latest label of each step on ``StepRecord.critic``, which is
how the trainers' dataset builder sees them. Scores map the paper's three annotations onto
``[0, 1]`` (GOOD 1.0, NEUTRAL 0.5, HARMFUL 0.0) so a threshold τ_c can filter steps
(Mobile-Agent-v3 §2.2.3: keep steps with CriticScore ≥ τ_c).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_runtime.errors import TraceError
from agent_runtime.traces import LoadedRun, StepRecord, annotate_run

CRITIC_FILE = "critic.jsonl"

StepAnnotation = Literal["GOOD", "NEUTRAL", "HARMFUL"]
TrajectoryVerdict = Literal["Correct", "Incorrect"]

#: CriticScore of each step annotation.
ANNOTATION_SCORES: dict[str, float] = {"GOOD": 1.0, "NEUTRAL": 0.5, "HARMFUL": 0.0}


class StepCriticLabel(BaseModel):
    """The step-level critic's judgement of one step (Mobile-Agent-v3 §6.3)."""

    model_config = ConfigDict(extra="allow")

    step: int
    annotation: StepAnnotation
    summary: str = Field("", description="at most 30 words")
    analysis: str = ""
    model: str = ""
    created_at: float = Field(default_factory=time.time)

    @property
    def score(self) -> float:
        return ANNOTATION_SCORES[self.annotation]

    def to_step_field(self) -> dict[str, object]:
        """The dict stored on ``StepRecord.critic`` (score included for readers without this module)."""
        return {**self.model_dump(mode="json"), "score": self.score}


class TrajectoryCriticLabel(BaseModel):
    """The trajectory-level critic: two channels and their consensus (paper eq. 4)."""

    model_config = ConfigDict(extra="allow")

    text: TrajectoryVerdict
    multimodal: TrajectoryVerdict
    text_reasoning: str = ""
    multimodal_reasoning: str = ""
    steps: dict[str, int] = Field(default_factory=dict, description="count of step annotations")
    models: dict[str, str] = Field(default_factory=dict, description="channel -> model id")
    created_at: float = Field(default_factory=time.time)

    @property
    def correct(self) -> bool:
        """Correct only if both channels say Correct."""
        return self.text == "Correct" and self.multimodal == "Correct"

    def to_run_field(self) -> dict[str, object]:
        return {**self.model_dump(mode="json"), "correct": self.correct}


def read_step_labels(run_dir: Path) -> dict[int, StepCriticLabel]:
    """The latest label per step from ``critic.jsonl`` (a torn last line is skipped)."""
    path = Path(run_dir) / CRITIC_FILE
    if not path.is_file():
        return {}
    labels: dict[int, StepCriticLabel] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            label = StepCriticLabel.model_validate_json(line)
        except ValidationError as exc:
            if n == len(lines):
                break
            raise TraceError(f"{path}:{n} is not a valid critic label: {exc.errors()[0]['msg']}") from None
        labels[label.step] = label
    return labels


def append_step_labels(run_dir: Path, labels: list[StepCriticLabel]) -> None:
    """Append labels to ``critic.jsonl``, flushing after each line like the other trace files."""
    with open(Path(run_dir) / CRITIC_FILE, "a", encoding="utf-8") as fh:
        for label in labels:
            fh.write(label.model_dump_json() + "\n")
            fh.flush()


def write_trajectory_label(run: LoadedRun, label: TrajectoryCriticLabel) -> None:
    """Set ``RunRecord.critic`` and rewrite ``run.json`` atomically."""
    run.run = annotate_run(run.dir, critic=label.to_run_field())


def merge_step_labels(run: LoadedRun) -> LoadedRun:
    """Copy of ``run`` whose steps carry their latest ``critic.jsonl`` label on ``StepRecord.critic``."""
    labels = read_step_labels(run.dir)
    if not labels:
        return run
    steps: list[StepRecord] = [
        s.model_copy(update={"critic": labels[s.step].to_step_field()}) if s.step in labels else s
        for s in run.steps
    ]
    return run.model_copy(update={"steps": steps})
