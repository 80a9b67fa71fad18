"""Mobile-Agent-v3's four roles under the ``gui-owl`` profile: the official prompts and replies.

GUI-Owl was trained as Mobile-Agent-v3's Manager, Worker (the official *Executor*), Reflector
(*ActionReflector*) and Notetaker on the prompts of X-PLUG/MobileAgent's own agent. Of its two
variants this profile reproduces the real-phone one (@ 11cea575
``Mobile-Agent-v3/mobile_v3/utils/mobile_agent_e.py``, driven by ``mobile_v3/run_mobileagentv3.py``):
it is the one written for an adb phone, which is what the runtime drives; the AndroidWorld variant
(``android_world_v3/android_world/agents/mobile_agent_v3_agent.py``) adds the benchmark's app list,
``open_app`` and AndroidWorld-specific guidelines.

The prompts are the official texts kept as templates (``data/mobile_agent_v3/*.j2``) and filled
from a :class:`Pool` — the fields of the official ``InfoPool`` the prompts read, in the official
forms: the plan and historical operations as the Manager wrote them, flattened onto one line;
actions as Python dicts (``{'action': 'click', …}``); ``[add_info]`` where no knowledge was given;
the Worker's "Current Subgoal" cut from the plan exactly as the official code cuts it. Replies are
read by the runtime's parsers (which never guess a verdict or a plan from junk) and their texts
kept in the official flattened forms, so the next prompt shows what the official loop would.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

import jinja2
from pydantic import BaseModel, ConfigDict

from agent_runtime.errors import ConfigError, ParseError
from agent_runtime.role_outputs import ManagerOutput, NotetakerOutput, ReflectorOutput, WorkerOutput
from agent_runtime.roles.reflector import parse_reflector
from agent_runtime.roles.sections import split_sections
from agent_runtime.roles.worker import parse_worker

SOURCE = (
    "X-PLUG/MobileAgent @ 11cea575: Mobile-Agent-v3/mobile_v3/utils/mobile_agent_e.py "
    "(Manager, Executor, ActionReflector, Notetaker), mobile_v3/run_mobileagentv3.py"
)
#: Role -> template (``data/mobile_agent_v3/``); :attr:`Profile.roles` of ``gui-owl``.
ROLES: Mapping[str, str] = {
    "manager": "manager.j2",
    "worker": "worker.j2",
    "reflector": "reflector.j2",
    "notetaker": "notetaker.j2",
}
#: ``InfoPool.add_info_token``: what the Manager's Task-specific guidelines show with no knowledge.
ADD_INFO_TOKEN = "[add_info]"
#: ``INPUT_KNOW``: the real-phone script's Worker guidelines (``additional_knowledge_executor``).
INPUT_KNOW = (
    "If you've activated an input field, you'll see \"ADB Keyboard {on}\" at the bottom of the screen. "
    'This phone doesn\'t display a soft keyboard. So, if you see "ADB Keyboard {on}" at the bottom of the '
    "screen, it means you can type. Otherwise, you'll need to tap the correct input field to activate it."
)
#: The Manager's Historical Operations before it has written any (its first plan has none).
NO_COMPLETED = "No completed subgoal."
#: How the official loop records a Worker reply it could not use.
INVALID_ACTION = "{'action': 'invalid'}"
INVALID_FEEDBACK = "invalid action format, do nothing."
#: The atomic actions the official Worker prompt lists (``ATOMIC_ACTION_SIGNITURES_noxml``).
ACTIONS = ("answer", "click", "long_press", "type", "system_button", "swipe")
#: ``err_to_manager_thresh``: this many failed steps in a row show the Manager the stuck block.
STUCK_AFTER = 2
#: Steps of history the Worker prompt shows.
WORKER_HISTORY = 5
#: What a re-ask shows of each role's expected reply.
REPLY_FORMATS: Mapping[str, str] = {
    "manager": "### Thought ### … ### Historical Operations ### … ### Plan ### 1. … 2. … (or Finished)",
    "worker": (
        '### Thought ### … ### Action ### {"action": "click", "coordinate": [x, y]} ### Description ### …'
    ),
    "reflector": '### Outcome ### "A", "B" or "C" ### Error Description ### … (or None)',
    "notetaker": "### Important Notes ### …",
}


class Attempt(BaseModel):
    """One earlier step as the Worker's history and the stuck block show it."""

    model_config = ConfigDict(frozen=True)

    action: str
    summary: str
    success: bool
    error: str = ""


class Pool(BaseModel):
    """The official ``InfoPool`` fields the four prompts read, in their official forms."""

    model_config = ConfigDict(frozen=True)

    instruction: str
    knowledge: str = ""
    """``additional_knowledge_manager`` (the runtime's RAG knowledge); empty: ``[add_info]``."""
    plan: str = ""
    """The Manager's Plan section, flattened; empty before the first plan."""
    completed_plan: str = ""
    """The Manager's Historical Operations, flattened (``No completed subgoal.`` when it wrote none)."""
    progress_status: str = ""
    """``completed_plan`` as of the last judged step (the Worker's and Notetaker's Progress Status)."""
    important_notes: str = ""
    last_action: str = ""
    last_summary: str = ""
    history: tuple[Attempt, ...] = ()

    @property
    def stuck(self) -> bool:
        """``error_flag_plan``: the last :data:`STUCK_AFTER` steps all failed."""
        recent = self.history[-STUCK_AFTER:]
        return len(recent) == STUCK_AFTER and not any(a.success for a in recent)


def flatten(text: str) -> str:
    """A reply section as the official ``parse_response`` keeps it: on one line, no ``###``.

    >>> flatten("1. Open Clock\\n2. Tap  Alarm\\n")
    '1. Open Clock 2. Tap Alarm'
    """
    return text.replace("\n", " ").replace("  ", " ").replace("###", "").strip()


def action_text(action: Mapping[str, Any] | None) -> str:
    """An action as the official prompts print it: the Python dict (``str(dict)``).

    >>> action_text({"action": "click", "coordinate": [540, 1200]})
    "{'action': 'click', 'coordinate': [540, 1200]}"
    """
    return INVALID_ACTION if action is None else str(dict(action))


def current_subgoal(plan: str) -> str:
    """The Worker's "Current Subgoal": the official cut of the flattened plan (its first three
    items, or, with fewer, the plan less its last character — quirks included, since that is
    what the model saw).

    >>> current_subgoal("1. Open Clock 2. Tap Alarm 3. Turn on 7:00 4. Check it")
    '1. Open Clock 2. Tap Alarm 3. Turn on 7:00'
    >>> current_subgoal("1. Open Clock 2. Tap Alarm")
    '1. Open Clock 2. Tap Alar'
    """
    parts = re.split(r"(?<=\d)\. ", plan)
    return (". ".join(parts[:4]) + ".")[:-2].strip()


def manager_note(instruction: str) -> str:
    """The Manager's task-specific NOTE the official code adds for some requests."""
    if ".html" in instruction:
        return (
            "NOTE: The .html file may contain additional interactable elements, such as a drawing canvas "
            "or a game. Do not open other apps without completing the task in the .html file."
        )
    if "Audio Recorder" in instruction:
        return (
            "NOTE: The stop recording icon is a white square, located fourth from the left at the bottom. "
            "Please do not click the circular pause icon in the middle."
        )
    return ""


def worker_note(instruction: str) -> str:
    """The Worker's Task-specific line the official code adds for some requests."""
    if "exact duplicates" in instruction:
        return "Only two items with the same name, date, and details can be considered duplicates."
    if "Audio Recorder" in instruction:
        return (
            "The stop recording icon is a white square, located fourth from the left at the bottom. "
            "Please do not click the circular pause icon in the middle."
        )
    return ""


def notetaker_guideline(instruction: str) -> str:
    """The Notetaker's Guideline the official code adds for some requests."""
    if "transactions" in instruction and "Simple Gallery" in instruction:
        return (
            "You can only record the transaction information in DCIM, because the other transactions are "
            "irrelevant to the task."
        )
    if "enter their product" in instruction:
        return (
            "Please record the number that appears each time so that you can calculate their product "
            "at the end."
        )
    return ""


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    """Templates keep every byte of the official text: only block-tag lines are dropped."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("agent_runtime.profiles", "data/mobile_agent_v3"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def _render(role: str, **variables: Any) -> str:
    try:
        return _environment().get_template(ROLES[role]).render(**variables)
    except jinja2.TemplateError as exc:
        raise ConfigError(f"the gui-owl {role} template failed to render: {exc}") from None


def manager_prompt(pool: Pool) -> str:
    """``Manager.get_prompt``: the first plan while the pool has none, else the update."""
    return _render(
        "manager",
        init=pool.plan == "",
        instruction=pool.instruction,
        task_note=manager_note(pool.instruction),
        knowledge=pool.knowledge or ADD_INFO_TOKEN,
        completed_plan=pool.completed_plan,
        plan=pool.plan,
        last_action=pool.last_action,
        last_summary=pool.last_summary,
        important_notes=pool.important_notes,
        stuck=pool.stuck,
        stuck_attempts=pool.history[-STUCK_AFTER:],
    )


def worker_prompt(pool: Pool) -> str:
    """``Executor.get_prompt`` with the real-phone script's guidelines (:data:`INPUT_KNOW`)."""
    return _render(
        "worker",
        instruction=pool.instruction,
        plan=pool.plan,
        current_subgoal=current_subgoal(pool.plan),
        progress_status=pool.progress_status,
        knowledge=INPUT_KNOW,
        task_note=worker_note(pool.instruction),
        history=pool.history[-WORKER_HISTORY:],
    )


def reflector_prompt(pool: Pool) -> str:
    """``ActionReflector.get_prompt``: the last action and its description as the expectation."""
    return _render(
        "reflector",
        instruction=pool.instruction,
        completed_plan=pool.completed_plan,
        last_action=pool.last_action,
        last_summary=pool.last_summary,
    )


def notetaker_prompt(pool: Pool) -> str:
    """``Notetaker.get_prompt``."""
    return _render(
        "notetaker",
        instruction=pool.instruction,
        progress_status=pool.progress_status,
        important_notes=pool.important_notes,
        guideline=notetaker_guideline(pool.instruction),
    )


PROMPTS: Mapping[str, Callable[[Pool], str]] = {
    "manager": manager_prompt,
    "worker": worker_prompt,
    "reflector": reflector_prompt,
    "notetaker": notetaker_prompt,
}


# -- replies --------------------------------------------------------------------------------------
def manager_texts(reply: str, output: ManagerOutput) -> tuple[str, str]:
    """``(plan, completed_plan)`` as the official ``Manager.parse_response`` keeps them.

    A reply whose headings are not the official ``### Plan`` (the runtime's parser also reads
    ``## Plan``, ``Plan:``) keeps the parsed items, numbered.
    """
    if "### Plan" in reply:
        plan = flatten(reply.split("### Plan")[-1])
    else:
        plan = "Finished" if output.finished else " ".join(f"{i}. {s}" for i, s in enumerate(output.plan, 1))
    if "### Historical Operations" in reply:
        completed = flatten(reply.split("### Historical Operations")[-1].split("### Plan")[0])
    else:
        completed = NO_COMPLETED
    return plan, completed


def parse_worker_reply(text: str) -> WorkerOutput:
    """A Worker reply: one of the official atomic actions, its description flattened (it is the
    Reflector's Expectation and the history's Description, as the official loop keeps it).

    >>> out = parse_worker_reply("### Thought ###\\nGo.\\n### Action ###\\n"
    ...     "{'action': 'click', 'coordinate': [980, 370]}\\n### Description ###\\nTap the\\nswitch.")
    >>> out.action.action, out.description
    ('click', 'Tap the switch.')
    """
    out = parse_worker(text, "mobile", indices=False, allowed=ACTIONS)
    return out.model_copy(update={"thought": flatten(out.thought), "description": flatten(out.description)})


def parse_reflector_reply(text: str) -> ReflectorOutput:
    """A Reflector reply: the official A/B/C, the error description flattened the official way."""
    out = parse_reflector(text)
    error = out.error_description.replace("\n", " ").replace("###", "").replace("  ", " ").strip()
    return out.model_copy(update={"error_description": error})


def parse_notetaker_reply(text: str) -> NotetakerOutput:
    """A Notetaker reply: its whole Important Notes section, flattened — the official notes are
    replaced by each reply, not merged."""
    sections = split_sections(text, ("Important Notes",))
    if "important notes" not in sections:
        raise ParseError(
            "the reply has no '### Important Notes ###' section", hint="write the notes under that heading"
        )
    return NotetakerOutput(notes=flatten(sections["important notes"]))
