"""GUI-Owl (Mobile-Agent-v3's end-to-end model, 7B/32B): its own ``mobile_use`` request.

Sources (X-PLUG/MobileAgent @ 11cea575): the ``mobile_use`` function is
``Mobile-Agent-v3/mobile_v3/utils/function_call_mobile_answer.py`` (the real-phone definition:
the whole action space, ``key`` and ``answer`` included), rendered into the system message the
way ``qwen_agent``'s ``NousFnCallPrompt`` does; the user turn is ``build_user_messages`` of
``Mobile-Agent-v3/cookbook/end2end_usage.ipynb`` (thinking on); each history summary is cleaned
as ``android_world_v3/android_world/agents/gui_owl.py`` does. Coordinates are pixels of the
``smart_resize``-d screenshot (factor 28, 3136..10035200 pixels), sent as PNG.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from agent_runtime.coords import DEFAULT_MAX_PIXELS, DEFAULT_MIN_PIXELS, CoordSpace, ImageBudget, Size
from agent_runtime.profiles.base import Profile, Request, read_text
from agent_runtime.profiles.mobile_agent_v3 import ROLES
from agent_runtime.role_outputs import WorkerOutput
from agent_runtime.roles.caller import Turn
from agent_runtime.roles.gui_owl import REPLY_FORMAT, parse_gui_owl

#: qwen_agent's ``FN_CALL_TEMPLATE`` (qwen_agent/llm/fncall_prompts/nous_fncall_prompt.py).
FN_CALL_TEMPLATE = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{tool_descs}\n"
    "</tools>\n\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{{"name": <function-name>, "arguments": <args-json-object>}}\n</tool_call>'
)
SYSTEM = "You are a helpful assistant."
THINK = (
    "\nBefore answering, explain your reasoning step-by-step in <thinking></thinking> tags, and insert them "
    "before the <tool_call></tool_call> XML tags."
)
CONCLUDE = (
    "\nAfter answering, summarize your action in <conclusion></conclusion> tags, and insert them after the "
    "<tool_call></tool_call> XML tags."
)


def mobile_use(width: int, height: int) -> dict[str, Any]:
    """The official ``mobile_use`` function for a screenshot of ``width`` x ``height`` pixels."""
    function: dict[str, Any] = json.loads(read_text("gui_owl_mobile_use.json"))
    function["description"] = (
        function["description"].replace("{width}", str(width)).replace("{height}", str(height))
    )
    return function


def system_text(width: int, height: int) -> str:
    """The system message: qwen_agent appends the tool block to the system text after a blank line."""
    tool = json.dumps({"type": "function", "function": mobile_use(width, height)}, ensure_ascii=False)
    return SYSTEM + "\n\n" + FN_CALL_TEMPLATE.format(tool_descs=tool)


def clean_summary(text: str) -> str:
    """A conclusion as the official agent keeps it: no newlines, no double quotes."""
    return text.replace("\n", "").replace('"', "")


class GuiOwl(Profile):
    name: ClassVar[str] = "gui-owl"
    source: ClassVar[str] = (
        "X-PLUG/MobileAgent: Mobile-Agent-v3/mobile_v3/utils/function_call_mobile_answer.py, "
        "Mobile-Agent-v3/cookbook/end2end_usage.ipynb"
    )
    coords: ClassVar[CoordSpace] = CoordSpace.PIXELS_RESIZED
    min_pixels: ClassVar[int] = DEFAULT_MIN_PIXELS
    max_pixels: ClassVar[int] = DEFAULT_MAX_PIXELS
    reply_format: ClassVar[str] = REPLY_FORMAT
    #: Mobile-Agent-v3's Manager, Worker, Reflector and Notetaker (:mod:`.mobile_agent_v3`).
    roles: ClassVar[Mapping[str, str]] = ROLES

    def render(self, request: Request) -> list[Turn]:
        size = ImageBudget(min_pixels=self.min_pixels, max_pixels=self.max_pixels).resized(request.screen)
        steps = enumerate(request.history)
        history = "".join(f"Step {i + 1}: {clean_summary(h.summary)}; " for i, h in steps)
        user = (
            f"The user query: {request.instruction}"
            f"\nTask progress (You have done the following operation on the current device): {history}.\n"
            f"{THINK}{CONCLUDE}\n"
        )
        return [
            Turn("system", (system_text(size.width, size.height),)),
            Turn("user", (user, request.image)),
        ]

    def parse(self, text: str, screen: Size) -> WorkerOutput:
        return parse_gui_owl(text, "mobile", indices=False)

    def summary(self, reply: str, output: WorkerOutput) -> str:
        return output.description
