"""One run of a :class:`~agent_runtime.runtime.Runtime`, in parts the facade puts together.

* :mod:`~agent_runtime.run.request` — what a run is asked to do: a new task or a resume.
* :mod:`~agent_runtime.run.plan` — the request validated, its run directory and device picked,
  before anything is written.
* :mod:`~agent_runtime.run.checking` — what checks the run on its device (SimPhone only), and
  what its device must offer the roles.
* :mod:`~agent_runtime.run.callers` — the role callers a run plays with.
* :mod:`~agent_runtime.run.session` — the run's lifetime: the one object that owns what it opens.
* :mod:`~agent_runtime.run.signals` — Ctrl-C, cancel events and the runs in flight at exit.
"""
