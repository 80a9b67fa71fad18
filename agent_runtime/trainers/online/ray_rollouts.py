"""Rollout workers as Ray actors (``distill --ray-address ADDR``), for rollouts beyond one machine.

Each actor owns its SimPhones and its runtime; it samples the trained role from the policy
server (:class:`~.policy.ServerPolicy` — in-process weights cannot be shared with actors),
converts its run to a trajectory itself (so run directories need not be on a shared disk) and
returns the :class:`~.rollouts.RolloutResult`. Requests are dealt round-robin over the actors.

``ray`` is imported only here and only when Ray is asked for; without it the error names the
``ray`` extra.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_runtime.errors import DependencyError
from agent_runtime.trainers.online.rollouts import RolloutRequest, RolloutResult


class RolloutActor:
    """The body of one Ray actor: plays requests with the policy and worker specs it is sent."""

    def __init__(self) -> None:
        self._processors: dict[str, Any] = {}

    def play(
        self, policy_spec: dict[str, Any], worker_spec: dict[str, Any], request: dict[str, Any]
    ) -> RolloutResult:
        from agent_runtime.config import RuntimeConfig
        from agent_runtime.models.hf import load_processor
        from agent_runtime.trainers.online.policy import server_chat_model
        from agent_runtime.trainers.online.rollouts import RolloutWorker

        base = worker_spec["base"]
        if base not in self._processors:
            self._processors[base] = load_processor(base)
        worker = RolloutWorker(
            RuntimeConfig.model_validate(worker_spec["config"]),
            worker_spec["role"],
            lambda seed: server_chat_model(policy_spec, seed),
            self._processors[base],
            Path(worker_spec["runs_dir"]),
            max_turns=worker_spec["max_turns"],
        )
        return worker.play(RolloutRequest.model_validate(request))


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise DependencyError("ray", "ray", "--ray-address (rollout workers as Ray actors)") from None
    return ray


class RayRollouts:
    """K Ray actors playing rollouts on the cluster at ``address`` (``"auto"`` or ``"local"`` work too)."""

    def __init__(self, address: str, workers: int) -> None:
        ray = _ray()
        self.ray = ray
        ray.init(address=None if address == "local" else address, ignore_reinit_error=True)
        remote = ray.remote(num_cpus=1)(RolloutActor)
        self.actors = [remote.remote() for _ in range(workers)]

    def play_remote(
        self, policy_spec: dict[str, Any], worker_spec: dict[str, Any], requests: Sequence[RolloutRequest]
    ) -> list[RolloutResult]:
        n = len(self.actors)
        futures = [
            self.actors[i % n].play.remote(policy_spec, worker_spec, r.model_dump(mode="json"))
            for i, r in enumerate(requests)
        ]
        return list(self.ray.get(futures))

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)
        self.actors = []
