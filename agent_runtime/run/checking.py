"""What a run's device decides before the run starts: what checks the run, what the roles can see.

Only an in-process SimPhone the runtime builds itself can be set up for a task and judged at the
end (:mod:`agent_runtime.checks`); every other device leaves the run unchecked, with the reason
in its run.json. These are the questions the run asks of its device, kept here so that the
runtime's facade and the run's session know nothing of SimPhone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from agent_runtime.config import RuntimeConfig
from agent_runtime.device import Device
from agent_runtime.events import Notice
from agent_runtime.traces import RunRecord

if TYPE_CHECKING:
    from agent_runtime.checks import RunCheck
    from agent_runtime.roles.caller import RoleCaller


def new_run_check(
    task: str, device: Device | str | None, config: RuntimeConfig
) -> tuple[RunCheck | None, str]:
    """What judges a new run when the runtime builds an in-process SimPhone itself, on the
    phone the run asks for (see :mod:`agent_runtime.checks`); else None and why it
    cannot be checked."""
    if isinstance(device, Device):
        return None, "the device was handed to the runtime, which cannot set it up for a check"
    from agent_runtime.devices.registry import split_spec

    spec = device or config.device.spec
    kind, arg = split_spec(spec)
    if kind != "simphone":
        return None, f"only SimPhone tasks can be checked; this run's device is {spec}"
    seed = arg if arg is not None else config.device.options.get("seed")
    if seed is not None and not str(seed).isdigit():
        return None, ""  # the device refuses the spec with a usage error
    from agent_runtime.checks import plan_check

    return plan_check(task, None if seed is None else int(seed)), ""


def check_notice(check: RunCheck) -> Notice:
    """What a new run says of its check before it starts: a warning when only the phone's state
    change can judge it (no template expresses the task)."""
    from agent_runtime.checks import StateChangeCheck

    return Notice(message=check.notice, level="warning" if isinstance(check, StateChangeCheck) else "info")


def resumed_run_check(previous: RunRecord, device: Device, *, owned: bool) -> RunCheck | None:
    """A resumed run's check (named in its run.json), prepared on the fresh SimPhone the runtime
    built for it — before its steps are replayed — so that the replay and the check see the
    phone the run started with."""
    from agent_runtime.checks import resumed_check
    from agent_runtime.simphone import SimPhone

    if not (owned and isinstance(device, SimPhone)):
        return None
    check = resumed_check(previous.verification, previous.task, device.seed)
    if check is not None:
        check.prepare(device)
    return check


def check_tree(device: Device, callers: Mapping[str, RoleCaller]) -> None:
    """Before anything is written: roles that read the UI tree need a device that has one."""
    from agent_runtime.graphs.inputs import require_tree, tree_roles

    roles = tree_roles({role: caller.model_config for role, caller in callers.items()})
    if roles:
        require_tree(device, roles, device.observe())
