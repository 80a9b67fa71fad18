"""The expert's path length for a task instance: the reference an agent's step count is read against.

It plays a registered template on a fresh phone, so it sits above both the oracle (how the
expert plays) and the registry (which templates exist).
"""

from __future__ import annotations

from agent_runtime.actions import Answer, Terminate
from agent_runtime.observation import Observation
from agent_runtime.simphone.phone import SimPhone
from agent_runtime.simphone.tasks.oracle import OraclePolicy
from agent_runtime.simphone.tasks.registry import make_task


def expert_steps(name: str, seed: int) -> int | None:
    """How many steps the expert needs for instance ``(name, seed)`` on its own fresh phone, from
    the UI tree alone (milliseconds); None if it cannot solve it. Steps count as an episode counts
    them: every action, an answer included, until the expert terminates."""
    task = make_task(name, seed)
    phone = SimPhone(seed=seed)
    try:
        task.setup(phone)
        expert = OraclePolicy(task)
        answer: str | None = None
        for steps in range(task.max_steps + 1):
            package, activity = phone.current_focus()
            screen = Observation(
                screenshot=b"", size=phone.screen_size, ui_xml=phone.ui_xml(), app=package, activity=activity
            )
            action = expert(screen)
            if isinstance(action, Terminate):
                return steps if task.is_successful(phone, answer) >= 1.0 else None
            if steps == task.max_steps:
                break
            if isinstance(action, Answer):
                answer = action.text
            else:
                phone.execute(action)
        return None
    except Exception:  # an instance the expert cannot play has no reference length
        return None
    finally:
        phone.close()
