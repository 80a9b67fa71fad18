"""Where episodes run: this machine's threads and processes, or a Ray cluster.

>>> from agent_runtime.execution import open_backend
>>> backend = open_backend(None, workers=2)  # local threads; open_backend("auto") joins a Ray cluster
>>> backend.workers
2

See :mod:`.jobs` for what a job is and where it runs, :mod:`.backend` for the contract and
:mod:`.ray_backend` for devices as resources, traces coming home and retries; docs/scale-out.md
for running on a cluster.
"""

from agent_runtime.execution.backend import (
    Backend,
    Executor,
    LocalBackend,
    in_order,
    open_backend,
    share_cores,
)
from agent_runtime.execution.jobs import Job, Workplace, relocate, shareable

__all__ = [
    "Backend",
    "Executor",
    "Job",
    "LocalBackend",
    "Workplace",
    "in_order",
    "open_backend",
    "relocate",
    "share_cores",
    "shareable",
]
