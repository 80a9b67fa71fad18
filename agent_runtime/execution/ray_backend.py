"""Episodes on a Ray cluster: actors own devices, traces come home, dead workers are retried.

* **Devices are resources.** A SimPhone worker is an actor with ``cpus_per_worker`` CPUs,
  spread over the nodes (``workers`` of them); each job builds its own phone in it. A real
  device is owned by one actor that asks for the custom resource named like the device spec —
  start the node it is plugged into with ``ray start --resources '{"adb:SERIAL": 1}'`` — so its
  episodes are scheduled where the phone is, one at a time. Device actors ask for no CPU: they
  wait on their phone and on models.
* **A phone nowhere is not waited for forever.** A worker that no node can hold (its phone's
  node was lost, or no node offers its resource) is given ``schedule_timeout_s`` (``[cluster]``,
  default 120 s); then its episode is recorded lost — the job's ``lost`` result, carrying a
  :class:`~agent_runtime.errors.ClusterError` that says why — and the batch goes on. A later
  episode on the same device is given only what is left of that wait. (A SimPhone worker that
  does not fit while others of its pool run is dropped instead: they play its episode.)
* **Models once per worker.** An actor lives for the whole batch (and the next ones of this
  backend): a model a job loads in-process stays loaded in it (the runtime's engines are
  process-wide), and :class:`~.jobs.Workplace` ``cache`` keeps whatever else a job caches.
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
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from agent_runtime.errors import ClusterError, ConfigError, DependencyError
from agent_runtime.execution.bundle import pack, unpack
from agent_runtime.execution.jobs import SCHEDULE_TIMEOUT_S, Job, Workplace, relocate, shareable

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
    ``retries`` counts the episodes played again and ``lost`` names those recorded lost (what a
    report or a test reads). ``schedule_timeout_s``: how long a job waits for a worker that can
    hold its device (module docstring).
    """

    def __init__(
        self,
        address: str,
        workers: int = 1,
        *,
        max_retries: int = MAX_RETRIES,
        cpus_per_worker: float = 1.0,
        schedule_timeout_s: float = SCHEDULE_TIMEOUT_S,
    ) -> None:
        if workers < 1:
            raise ConfigError(f"workers must be at least 1, got {workers}")
        if schedule_timeout_s <= 0:
            raise ConfigError(f"schedule_timeout_s must be positive, got {schedule_timeout_s}")
        self.schedule_timeout_s = schedule_timeout_s
        self.ray = ray_module()
        self.workers = workers
        self.max_retries = max_retries
        self.cpus_per_worker = cpus_per_worker
        self._owns_connection = connect(self.ray, address, workers)
        self._remote = self.ray.remote(max_restarts=0)(EpisodeActor)
        self._pools: dict[str, list[Any]] = {}
        #: Workers not known to be placed yet: their ``pid`` call (answered once placed), and
        #: since when their pool has waited for a worker it can place.
        self._placing: dict[Any, tuple[Any, float]] = {}
        self.placements: dict[str, str] = {}
        self.retries = 0
        self.lost: list[str] = []

    # -- workers ---------------------------------------------------------------------------------

    def _spawn(self, pool: str, since: float | None = None) -> Any:
        """A new worker of ``pool``; ``since``: when its pool began waiting for a placeable one
        (a replacement of a worker never placed inherits that wait; default: now)."""
        if pool == SIMPHONE_POOL:
            options: dict[str, Any] = {"num_cpus": self.cpus_per_worker, "scheduling_strategy": "SPREAD"}
        else:
            options = {"num_cpus": 0, "resources": {device_resource(pool): 1}}
        actor = self._remote.options(**options).remote()
        self._placing[actor] = (actor.pid.remote(), time.monotonic() if since is None else since)
        return actor

    def _replace(self, pool: str, actor: Any, idle: dict[str, deque[Any]]) -> None:
        """Drop ``actor`` and put a fresh worker of its pool among the idle ones."""
        since = self._placing[actor][1] if actor in self._placing else None
        self._drop(pool, actor)
        replacement = self._spawn(pool, since)
        self._pools.setdefault(pool, []).append(replacement)
        idle.setdefault(pool, deque()).append(replacement)

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
        self._placing.pop(actor, None)
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
                finished, _ = ray.wait(list(busy), num_returns=1, timeout=self._wait_s(busy))
                if not finished:  # a worker still unplaced may have waited long enough
                    for ref in self._unplaced(busy):
                        job, actor = busy.pop(ref)
                        pool = _pool_of(job.device)
                        if self._placed_peers(pool, actor):  # more workers asked for than fit
                            self._drop(pool, actor)  # the placed ones play its episode
                            queue.appendleft(job)
                            continue
                        self._replace(pool, actor, idle)
                        done += 1
                        yield job, self._lost(job, self._unplaceable(job))
                    continue
                [ref] = finished
                job, actor = busy.pop(ref)
                pool = _pool_of(job.device)
                try:
                    delivery = ray.get(ref)
                except (RayActorError, WorkerCrashedError) as exc:
                    deaths[job.key] += 1
                    self._replace(pool, actor, idle)
                    if deaths[job.key] > self.max_retries:
                        done += 1
                        yield job, self._lost(job, self._died(job, deaths[job.key], exc))
                        continue
                    self.retries += 1
                    queue.appendleft(job)  # played again, from scratch, under the same key
                    continue
                except RayTaskError as exc:  # the job raised: raise its own error here
                    cause = exc.cause
                    raise (cause if isinstance(cause, Exception) else exc) from None
                self._placing.pop(actor, None)  # it played: it is placed
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

    # -- episodes the cluster cannot play -----------------------------------------------------------

    def _wait_s(self, busy: dict[Any, tuple[Job[R], Any]]) -> float | None:
        """How long to wait for a result before looking at the unplaced workers again (None:
        every busy worker is placed — wait for the next result)."""
        since = [self._placing[actor][1] for _job, actor in busy.values() if actor in self._placing]
        if not since:
            return None
        return max(0.0, min(since) + self.schedule_timeout_s - time.monotonic())

    def _unplaced(self, busy: dict[Any, tuple[Job[R], Any]]) -> list[Any]:
        """The busy jobs whose worker has waited ``schedule_timeout_s`` for a node; the workers
        found placed meanwhile stop being watched."""
        now = time.monotonic()
        late = []
        for ref, (_job, actor) in busy.items():
            if not self._placed(actor) and now - self._placing[actor][1] >= self.schedule_timeout_s:
                late.append(ref)
        return late

    def _placed_peers(self, pool: str, actor: Any) -> bool:
        """Whether another worker of ``pool`` is placed (then ``actor`` is one too many for the
        cluster, not a device nowhere: its episode waits for the others instead)."""
        return any(a != actor and self._placed(a) for a in self._pools.get(pool, []))

    def _placed(self, actor: Any) -> bool:
        """Whether ``actor`` is placed on a node (known, or its ``pid`` call has answered)."""
        if actor not in self._placing:
            return True
        placed, _ = self.ray.wait([self._placing[actor][0]], num_returns=1, timeout=0)
        if placed:
            del self._placing[actor]
        return bool(placed)

    def _unplaceable(self, job: Job[R]) -> ClusterError:
        return ClusterError(
            f"episode {job.key}: no node could take a worker for device {job.device} within "
            f"{self.schedule_timeout_s:g} s (its node was lost, or no node offers it)",
            hint="check `ray status`: restart the device's node (ray start --resources "
            f"'{{\"{job.device}\": 1}}' for a real phone) or free CPUs; [cluster] "
            "schedule_timeout_s sets the wait",
            key=job.key,
        )

    def _died(self, job: Job[R], deaths: int, exc: BaseException) -> ClusterError:
        return ClusterError(
            f"episode {job.key}: its worker died {deaths} times ({exc})",
            hint="look for out-of-memory kills or lost nodes in `ray status` and the Ray logs; the "
            "episodes that finished are recorded",
            key=job.key,
        )

    def _lost(self, job: Job[R], error: ClusterError) -> R:
        """The job's lost result (the batch goes on), or ``error`` raised when it has none."""
        if job.lost is None:
            raise error
        logging.getLogger(__name__).warning("%s", error)
        self.lost.append(job.key)
        return job.lost(error)

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
        self._placing = {}
        if self._owns_connection:
            self.ray.shutdown()
            self._owns_connection = False


def _pool_of(device: str) -> str:
    return SIMPHONE_POOL if shareable(device) else device


#: Seconds a cluster address gets to accept a TCP connection before ``connect`` gives up.
REACH_TIMEOUT_S = 5.0


def _check_reachable(address: str, timeout_s: float = REACH_TIMEOUT_S) -> None:
    """Fail fast on a ``HOST:PORT`` or ``ray://HOST:PORT`` nothing listens on: ``ray.init`` keeps
    retrying such an address for minutes before it says anything."""
    import socket

    match = re.fullmatch(r"(?:ray://)?\[?([^\]/]+?)\]?:(\d+)/?", address.strip())
    if match is None:  # local, auto: nothing to reach
        return
    host, port = match.group(1), int(match.group(2))
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return
    except OSError as exc:
        why = "nothing answered" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise ClusterError(
            f"cannot reach the Ray cluster at {address!r}: {why} within {timeout_s:g} s",
            hint="start one (ray start --head), check the address (HOST:PORT, ray://HOST:10001 or "
            "auto), or use --ray local",
        ) from None


def connect(ray: Any, address: str, workers: int) -> bool:
    """Join (or, for ``local``, start) the cluster; True when this call made the connection.

    A process already connected keeps its connection (and whoever made it closes it)."""
    if ray.is_initialized():
        return False
    if not address.strip():
        raise ConfigError("--ray needs local, auto or a cluster address", hint="e.g. --ray auto")
    options: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
    _check_reachable(address)
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
