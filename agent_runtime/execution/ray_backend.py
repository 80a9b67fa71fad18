"""Episodes on a Ray cluster: actors own devices, traces come home, dead workers are retried.

* **Devices are resources.** A SimPhone worker is an actor with ``cpus_per_worker`` CPUs,
  spread over the nodes (``workers`` of them); each job builds its own phone in it. A real
  device is owned by one actor that asks for the custom resource named like the device spec —
  start the node it is plugged into with ``ray start --resources '{"adb:SERIAL": 1}'`` — so its
  episodes are scheduled where the phone is, one at a time. Device actors ask for no CPU: they
  wait on their phone and on models.
* **Models once per worker.** An actor lives for the whole batch (and the next ones of this
  backend): a model a job loads in-process stays loaded in it (the runtime's engines are
  process-wide), and :class:`~.backend.Workplace` ``cache`` keeps whatever else a job caches.
  Better still, models are reached over HTTP (a shared vLLM or ``agent-runtime serve``).
* **Nothing lost, nothing twice.** A job writes its runs into a scratch directory on its node;
  the actor returns them packed with the result (:mod:`.bundle`) and the driver unpacks them
  into the job's home — no shared disk needed. When an actor dies mid-episode (its process
  killed, its node lost) the episode is played again from scratch on another actor, up to
  ``max_retries`` times, under the same key; the dead attempt's partial trace never left its
  node, so the episode is recorded once.
* **Ctrl-C** kills the actors in flight (their episodes stop), says on stderr how many episodes
  finished, and re-raises.

``ray`` is imported only here, only when Ray is asked for.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import sys
import tempfile
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from agent_runtime.errors import ClusterError, ConfigError, DependencyError
from agent_runtime.execution.backend import Job, Workplace, relocate, shareable
from agent_runtime.execution.bundle import pack, unpack

R = TypeVar("R")
#: How often an episode is played again after its worker died, by default.
MAX_RETRIES = 2
#: The pool of interchangeable SimPhone workers.
SIMPHONE_POOL = "simphone"


def ray_module() -> Any:
    """``ray``, or a :class:`~agent_runtime.errors.DependencyError` naming the extra."""
    try:
        import ray
    except ImportError:
        raise DependencyError("ray", "ray", "--ray (episodes on a Ray cluster)") from None
    return ray


def device_resource(device: str) -> str:
    """The Ray custom resource a real device's worker asks for: the device spec itself.

    >>> device_resource("adb:emulator-5554")
    'adb:emulator-5554'
    """
    kind, _, name = device.partition(":")
    if not name:
        raise ConfigError(
            f"on a cluster a {kind} device needs its name: {kind}:NAME",
            hint=f"e.g. {kind}:emulator-5554, and start its node with "
            f"ray start --resources '{{\"{kind}:emulator-5554\": 1}}'",
        )
    return device


def scratch_name(key: str) -> str:
    """A directory name for job ``key``: readable and unique.

    >>> scratch_name("ShopPriceQuestion/3")
    'ShopPriceQuestion_3-e3109d44'
    """
    digest = hashlib.sha256(key.encode()).hexdigest()[:8]
    return f"{re.sub(r'[^A-Za-z0-9_.-]', '_', key)[:80]}-{digest}"


@dataclass(frozen=True)
class Delivery(Generic[R]):
    """What an actor returns: the result, the traces it wrote (packed), where it ran."""

    result: R
    traces: bytes
    node: str
    scratch: str


class EpisodeActor:
    """The body of one worker actor: plays jobs in scratch directories and ships their traces."""

    def __init__(self) -> None:
        import ray

        self.node = ray.get_runtime_context().get_node_id()
        self.cache: dict[str, Any] = {}
        self.scratch = Path(tempfile.gettempdir()) / "agent-runtime-ray" / uuid.uuid4().hex[:12]

    def pid(self) -> int:
        """This worker's process id (tests kill it; operators find it)."""
        return os.getpid()

    def play(self, key: str, fn: Callable[[Workplace], Any]) -> Delivery[Any]:
        runs = self.scratch / scratch_name(key)
        shutil.rmtree(runs, ignore_errors=True)  # an earlier attempt on this worker: start clean
        runs.mkdir(parents=True)
        try:
            result = fn(Workplace(runs_dir=runs, cache=self.cache, node=self.node))
            return Delivery(result, pack(runs), self.node, str(runs))
        finally:
            shutil.rmtree(runs, ignore_errors=True)


class RayBackend:
    """Jobs on Ray actors: ``workers`` SimPhone workers, plus one worker per real device.

    ``address``: ``local`` (start a cluster on this machine), ``auto`` (the cluster this machine
    belongs to: ``RAY_ADDRESS`` or the one ``ray start`` began here), or ``HOST:PORT`` /
    ``ray://HOST:PORT``. ``placements`` maps each finished job's key to the node it ran on and
    ``retries`` counts the episodes played again (what a report or a test reads).
    """

    def __init__(
        self, address: str, workers: int = 1, *, max_retries: int = MAX_RETRIES, cpus_per_worker: float = 1.0
    ) -> None:
        if workers < 1:
            raise ConfigError(f"workers must be at least 1, got {workers}")
        self.ray = ray_module()
        self.workers = workers
        self.max_retries = max_retries
        self.cpus_per_worker = cpus_per_worker
        self._owns_connection = connect(self.ray, address, workers)
        self._remote = self.ray.remote(max_restarts=0)(EpisodeActor)
        self._pools: dict[str, list[Any]] = {}
        self.placements: dict[str, str] = {}
        self.retries = 0

    # -- workers ---------------------------------------------------------------------------------

    def _spawn(self, pool: str) -> Any:
        if pool == SIMPHONE_POOL:
            options: dict[str, Any] = {"num_cpus": self.cpus_per_worker, "scheduling_strategy": "SPREAD"}
        else:
            options = {"num_cpus": 0, "resources": {device_resource(pool): 1}}
        return self._remote.options(**options).remote()

    def _pool(self, pool: str) -> list[Any]:
        if pool not in self._pools:
            size = self.workers if pool == SIMPHONE_POOL else 1
            self._pools[pool] = [self._spawn(pool) for _ in range(size)]
        return self._pools[pool]

    def worker_pids(self) -> list[int]:
        """The process ids of the SimPhone workers (starting them if need be)."""
        return list(self.ray.get([a.pid.remote() for a in self._pool(SIMPHONE_POOL)]))

    def _drop(self, pool: str, actor: Any) -> None:
        self.ray.kill(actor, no_restart=True)
        if actor in self._pools.get(pool, []):
            self._pools[pool].remove(actor)

    # -- playing ---------------------------------------------------------------------------------

    def run(self, jobs: Sequence[Job[R]]) -> Iterator[tuple[Job[R], R]]:
        ray = self.ray
        from ray.exceptions import RayActorError, RayTaskError, WorkerCrashedError

        queue: deque[Job[R]] = deque(jobs)
        idle = {pool: deque(self._pool(pool)) for pool in {_pool_of(j.device) for j in jobs}}
        busy: dict[Any, tuple[Job[R], Any]] = {}
        deaths: Counter[str] = Counter()
        done = 0
        try:
            while queue or busy:
                for job in list(queue):
                    free = idle[_pool_of(job.device)]
                    if free:
                        actor = free.popleft()
                        busy[actor.play.remote(job.key, job.fn)] = (job, actor)
                        queue.remove(job)
                [ref], _ = ray.wait(list(busy), num_returns=1)
                job, actor = busy.pop(ref)
                pool = _pool_of(job.device)
                try:
                    delivery = ray.get(ref)
                except (RayActorError, WorkerCrashedError) as exc:
                    deaths[job.key] += 1
                    if deaths[job.key] > self.max_retries:
                        raise ClusterError(
                            f"episode {job.key}: its worker died {deaths[job.key]} times ({exc})",
                            hint="look for out-of-memory kills or lost nodes in `ray status` and the "
                            "Ray logs; the episodes that finished are recorded",
                            key=job.key,
                        ) from None
                    self.retries += 1
                    self._drop(pool, actor)
                    replacement = self._spawn(pool)
                    self._pools.setdefault(pool, []).append(replacement)
                    idle[pool].append(replacement)
                    queue.appendleft(job)  # played again, from scratch, under the same key
                    continue
                except RayTaskError as exc:  # the job raised: raise its own error here
                    cause = exc.cause
                    raise (cause if isinstance(cause, Exception) else exc) from None
                idle[pool].append(actor)
                done += 1
                self.placements[job.key] = delivery.node
                yield job, self._deliver(job, delivery)
        except BaseException as exc:
            for _job, actor in busy.values():  # stop the cluster's work in flight
                self._drop(_pool_of(_job.device), actor)
            if isinstance(exc, KeyboardInterrupt):
                sys.stderr.write(
                    f"interrupted: stopped the episodes running on the cluster; {done} of {len(jobs)} "
                    f"finished and are recorded, {len(busy)} were cut short, {len(queue)} never started\n"
                )
            raise

    def _deliver(self, job: Job[R], delivery: Delivery[R]) -> R:
        if not delivery.traces:
            return delivery.result
        if job.home is None:
            logging.getLogger(__name__).warning("job %s wrote traces but has no home: dropped", job.key)
            return delivery.result
        unpack(delivery.traces, job.home)
        return relocate(delivery.result, Path(delivery.scratch), job.home)

    def close(self) -> None:
        """Stop the workers (and the cluster, when this backend started it)."""
        for pool, actors in list(self._pools.items()):
            for actor in list(actors):
                self._drop(pool, actor)
        self._pools = {}
        if self._owns_connection:
            self.ray.shutdown()
            self._owns_connection = False


def _pool_of(device: str) -> str:
    return SIMPHONE_POOL if shareable(device) else device


def connect(ray: Any, address: str, workers: int) -> bool:
    """Join (or, for ``local``, start) the cluster; True when this call made the connection.

    A process already connected keeps its connection (and whoever made it closes it)."""
    if ray.is_initialized():
        return False
    if not address.strip():
        raise ConfigError("--ray needs local, auto or a cluster address", hint="e.g. --ray auto")
    options: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
    try:
        if address == "local":
            ray.init(
                address="local",
                num_cpus=max(workers, os.cpu_count() or 1),
                include_dashboard=False,
                **options,
            )
        else:
            ray.init(address=address, **options)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise ClusterError(
            f"cannot reach the Ray cluster at {address!r}: {exc}",
            hint="start one (ray start --head), check the address (HOST:PORT, ray://HOST:10001 or "
            "auto), or use --ray local",
        ) from None
    return True
