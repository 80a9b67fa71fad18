"""Failure Curriculum Filtering (MobileRL §4.3.3): stop spending rollouts on tasks nobody solves.

Per task we keep ``f``, the number of consecutive *evaluated* epochs in which every rollout of
the task earned no reward (all rewards ≤ 0 — with TRPO's format penalty a failure can be
negative). Rules, with the paper's numbers as defaults:

* ``f`` reaching ``cooldown_after`` (2) starts a cooldown of ``cooldown_epochs`` (3) epochs during
  which the task is sampled with weight ``exp(−f)`` instead of 1;
* the task is removed for good at ``f ≥ remove_at`` (3) — ``removal="paper"`` — or at
  ``f > remove_at`` — ``removal="reference"``, what the public reference code does. The paper's
  rule is the default: it is the published definition, and the reference code's extra failure
  epoch only matters for tasks that have already failed three epochs in a row;
* any rollout with reward > 0 resets ``f`` to 0 and ends the cooldown;
* an epoch in which a task was not sampled says nothing about it: ``f`` stays, but the epoch
  still counts towards the cooldown (the cooldown is measured in epochs, as the paper says).

**What the weight means** (:meth:`FailureCurriculum.sample`). The paper reduces a cooling task's
"sampling probability" to ``w = exp(−f)``, relative to the weight 1 of every other task. When the
iteration plays every active task (the default: no ``--tasks-per-iteration``, or one at least as
large as the pool), a task of weight 1 is played with probability 1, so a cooling task is played
with probability ``w`` — an independent coin per task and epoch (f = 2: 13.5 % of the epochs).
Playing it always would make the cooldown a no-op. When ``k`` tasks are drawn from a larger pool,
they are drawn without replacement with probability ∝ weight. Should every coin come up tails
(all active tasks cooling), one task is drawn ∝ weight, so an iteration never has nothing to play.

"For stability, failure histories from previous training are retained": :meth:`FailureCurriculum.save`
writes the state to a JSON file atomically (temporary file + ``os.replace``, so a crash never
leaves half a history) and :meth:`FailureCurriculum.load` reads it back at the next run. Which
file, and when a fresh run forgets it, is the trainer's call (:mod:`.dgrpo_trainer`).
"""

from __future__ import annotations

import functools
import math
import os
import random
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from agent_runtime.errors import TrainingError

FCFRemoval = Literal["paper", "reference"]
HISTORY_VERSION = 1


class TaskHistory(BaseModel):
    """What FCF remembers about one task."""

    failures: int = Field(0, ge=0, description="f: consecutive evaluated epochs with no reward")
    cooldown_left: int = Field(0, ge=0, description="cooldown epochs still to run (0: not in cooldown)")
    removed: bool = Field(False, description="permanently out of the sampling pool")
    last_epoch: int | None = Field(None, description="the last epoch the task was evaluated in")


class CurriculumState(BaseModel):
    """The JSON file's content."""

    version: int = HISTORY_VERSION
    epoch: int = Field(0, ge=0, description="epochs recorded so far, over all runs")
    tasks: dict[str, TaskHistory] = Field(default_factory=dict)


class FailureCurriculum:
    """FCF state plus the rules above; sample tasks with :meth:`sample`, report with :meth:`end_epoch`."""

    def __init__(
        self,
        state: CurriculumState | None = None,
        *,
        cooldown_after: int = 2,
        cooldown_epochs: int = 3,
        remove_at: int = 3,
        removal: FCFRemoval = "paper",
    ) -> None:
        if cooldown_after < 1 or cooldown_epochs < 0 or remove_at < 1:
            raise ValueError("cooldown_after and remove_at must be >= 1, cooldown_epochs >= 0")
        if removal not in ("paper", "reference"):
            raise ValueError(f"unknown FCF removal rule {removal!r} (use 'paper' or 'reference')")
        self.state = state or CurriculumState()
        self.cooldown_after = cooldown_after
        self.cooldown_epochs = cooldown_epochs
        self.remove_at = remove_at
        self.removal = removal

    # --- persistence ---------------------------------------------------------------------------

    @classmethod
    def load(
        cls,
        path: str | Path,
        *,
        cooldown_after: int = 2,
        cooldown_epochs: int = 3,
        remove_at: int = 3,
        removal: FCFRemoval = "paper",
    ) -> FailureCurriculum:
        """The curriculum saved at ``path``, or a fresh one when the file does not exist yet.

        Only the per-task history is stored; the rules come from the arguments, so a run may
        change them (e.g. switch ``removal``) and still keep what earlier runs learnt.
        """
        make = functools.partial(
            cls,
            cooldown_after=cooldown_after,
            cooldown_epochs=cooldown_epochs,
            remove_at=remove_at,
            removal=removal,
        )
        where = Path(path)
        if not where.exists():
            return make(None)
        try:
            state = CurriculumState.model_validate_json(where.read_text(encoding="utf-8"))
        except (OSError, ValidationError, ValueError) as exc:
            raise TrainingError(
                f"cannot read the FCF failure history {where}: {exc}",
                hint="fix the file, or delete it to start the curriculum from scratch",
            ) from None
        if state.version != HISTORY_VERSION:
            raise TrainingError(
                f"FCF history {where} has version {state.version}; this version reads {HISTORY_VERSION}",
                hint="delete the file to start the curriculum from scratch",
            )
        return make(state)

    def save(self, path: str | Path) -> Path:
        """Write the state to ``path`` atomically; returns the path."""
        where = Path(path)
        where.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{where.name}.", suffix=".tmp", dir=where.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(self.state.model_dump_json(indent=2))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, where)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return where

    # --- rules ---------------------------------------------------------------------------------

    def history(self, task_id: str) -> TaskHistory:
        return self.state.tasks.get(task_id, TaskHistory())

    def _removed_at(self, failures: int) -> bool:
        return failures >= self.remove_at if self.removal == "paper" else failures > self.remove_at

    def weight(self, task_id: str) -> float:
        """Sampling weight: 0 when removed, exp(−f) in cooldown, 1 otherwise."""
        h = self.history(task_id)
        if h.removed:
            return 0.0
        return math.exp(-h.failures) if h.cooldown_left > 0 else 1.0

    def end_epoch(self, rewards_by_task: Mapping[str, Sequence[float]]) -> None:
        """Record one epoch: every rollout reward of each task evaluated in it."""
        self.state.epoch += 1
        epoch = self.state.epoch
        for h in self.state.tasks.values():
            if h.cooldown_left > 0:
                h.cooldown_left -= 1
        for task_id, rewards in rewards_by_task.items():
            if not rewards:
                continue
            h = self.state.tasks.setdefault(task_id, TaskHistory())
            if h.removed:
                continue
            h.last_epoch = epoch
            if max(rewards) > 0.0:
                h.failures = 0
                h.cooldown_left = 0
                continue
            h.failures += 1
            if self._removed_at(h.failures):
                h.removed = True
                h.cooldown_left = 0
            elif h.failures >= self.cooldown_after and h.cooldown_left == 0:
                h.cooldown_left = self.cooldown_epochs

    def active(self, task_ids: Sequence[str]) -> list[str]:
        """The tasks still in the pool."""
        return [t for t in task_ids if not self.history(t).removed]

    def sample(self, task_ids: Sequence[str], k: int | None, rng: random.Random) -> list[str]:
        """The tasks to play this epoch, drawn with the weights (module docstring).

        ``k`` None or at least the number of active tasks: each active task is played with
        probability min(1, weight), in ``task_ids`` order. Smaller ``k``: ``k`` distinct tasks drawn
        without replacement with probability ∝ weight (Efraimidis–Spirakis keys u^(1/w)), so a task
        in cooldown is still picked, just rarely.
        """
        pool = [(t, self.weight(t)) for t in dict.fromkeys(task_ids)]
        pool = [(t, w) for t, w in pool if w > 0.0]
        if not pool:
            raise TrainingError(
                "every task has been removed by Failure Curriculum Filtering",
                hint="add tasks, delete the FCF history file, or turn FCF off",
            )
        if k is not None and k < len(pool):
            return self._draw(pool, k, rng)
        played = [t for t, w in pool if w >= 1.0 or rng.random() < w]
        return played or self._draw(pool, 1, rng)

    @staticmethod
    def _draw(pool: Sequence[tuple[str, float]], k: int, rng: random.Random) -> list[str]:
        keyed = sorted(pool, key=lambda tw: rng.random() ** (1.0 / tw[1]), reverse=True)
        return [t for t, _ in keyed[:k]]
