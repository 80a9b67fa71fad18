"""Rollout workers on Ray (``distill --ray ADDRESS``), for rollouts beyond one machine.

The rollouts run on the shared execution backend (:class:`~agent_runtime.execution.ray_backend.RayBackend`),
like ``eval``'s and ``evolve``'s episodes: each worker actor samples the trained role from the
policy server (:class:`~.policy.ServerPolicy` — in-process weights cannot be shared with actors),
converts its run to a trajectory itself, and the backend brings the run directory home to the
iteration's rollouts directory (no shared disk needed), plays an episode again when its worker
dies, and stops the cluster's work on Ctrl-C. A worker loads each base's processor once.

``ray`` is imported only when Ray is asked for; without it the error names the ``ray`` extra.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_runtime.execution.backend import Job, Workplace, in_order
from agent_runtime.trainers.online.rollouts import RolloutRequest, RolloutResult, lost_rollout, rollout_key


def play_rollout(
    policy_spec: dict[str, Any], worker_spec: dict[str, Any], request: dict[str, Any], place: Workplace
) -> RolloutResult:
    """One rollout as a backend job, with the policy and worker specs it is sent."""
    from agent_runtime.config import RuntimeConfig
    from agent_runtime.models.hf import load_processor
    from agent_runtime.trainers.online.policy import server_chat_model
    from agent_runtime.trainers.online.rollouts import RolloutWorker

    processors: dict[str, Any] = place.cache.setdefault("processors", {})
    base = worker_spec["base"]
    if base not in processors:
        processors[base] = load_processor(base)
    worker = RolloutWorker(
        RuntimeConfig.model_validate(worker_spec["config"]),
        worker_spec["role"],
        lambda seed: server_chat_model(policy_spec, seed),
        processors[base],
        place.runs_dir or Path(worker_spec["runs_dir"]),
        max_turns=worker_spec["max_turns"],
    )
    return worker.play(RolloutRequest.model_validate(request))


class RayRollouts:
    """K Ray workers playing rollouts on the cluster at ``address`` (``"auto"`` or ``"local"`` work too)."""

    def __init__(self, address: str, workers: int) -> None:
        from agent_runtime.execution.ray_backend import RayBackend

        self.backend = RayBackend(address, workers)

    def play_remote(
        self, policy_spec: dict[str, Any], worker_spec: dict[str, Any], requests: Sequence[RolloutRequest]
    ) -> list[RolloutResult]:
        """The requests' results, in the requests' order; their runs under ``worker_spec["runs_dir"]``."""
        home = Path(worker_spec["runs_dir"])
        jobs = [
            Job(
                rollout_key(r, i),
                functools.partial(play_rollout, policy_spec, worker_spec, r.model_dump(mode="json")),
                home=home,
                lost=functools.partial(lost_rollout, r),
            )
            for i, r in enumerate(requests)
        ]
        return in_order(self.backend, jobs)

    def close(self) -> None:
        self.backend.close()
