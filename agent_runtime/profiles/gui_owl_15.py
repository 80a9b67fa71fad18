"""GUI-Owl-1.5 (Mobile-Agent-v3.5): its system prompt, multi-turn layout and "Action:" history.

Source: X-PLUG/MobileAgent @ 11cea575, ``Mobile-Agent-v3.5/mobile_use/utils.py`` —
``SYSTEM_PROMPT`` (kept verbatim in ``data/gui_owl_15_system.txt``: the tool block with
"The screen's resolution is 1000x1000." and the ``# Response format`` section) and
``build_messages`` (``history_n = 4``): the instruction with today's date and the earlier
actions' "Action:" sentences in the first user turn, then the last four steps' screenshots and
replies as alternating turns, then the current screenshot. Images are PNG, ``smart_resize``-d
with factor 28 and 3136..10035200 pixels (``image_to_base64``); coordinates are 0..1000 on both
axes, mapped onto the true screen.
"""

from __future__ import annotations

from typing import ClassVar

from agent_runtime.coords import DEFAULT_MAX_PIXELS, DEFAULT_MIN_PIXELS, CoordSpace, Size
from agent_runtime.profiles.base import Profile, Request, read_text
from agent_runtime.role_outputs import WorkerOutput
from agent_runtime.roles.caller import Turn
from agent_runtime.roles.gui_owl import parse_gui_owl

HISTORY_N = 4
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def action_sentence(reply: str) -> str:
    """What 1.5's history keeps of a reply: its "Action:" sentence (the whole reply when it has
    none, as the official code does)."""
    if "Action:" in reply and "<tool_call>" in reply:
        return reply.split("Action:")[1].split("<tool_call>")[0].strip()
    return reply


class GuiOwl15(Profile):
    name: ClassVar[str] = "gui-owl-1.5"
    source: ClassVar[str] = (
        "X-PLUG/MobileAgent: Mobile-Agent-v3.5/mobile_use/utils.py (SYSTEM_PROMPT, build_messages)"
    )
    coords: ClassVar[CoordSpace] = CoordSpace.RELATIVE_1000
    min_pixels: ClassVar[int] = DEFAULT_MIN_PIXELS
    max_pixels: ClassVar[int] = DEFAULT_MAX_PIXELS
    screens_kept: ClassVar[int] = HISTORY_N
    reply_format: ClassVar[str] = (
        'Action: …\n<tool_call>\n{"name": "mobile_use", "arguments": {"action": …}}\n</tool_call>'
    )

    def render(self, request: Request) -> list[Turn]:
        history = request.history
        start = max(0, len(history) - HISTORY_N)
        earlier = [f"Step {i + 1}: {history[i].summary}" for i in range(start)]
        today = request.today
        date_info = f"Today's date is: {today.strftime('%Y-%m-%d')} {_WEEKDAYS[today.weekday()]}."
        prompt = (
            "Please generate the next move according to the UI screenshot, instruction and previous "
            "actions.\n\n"
            f"Instruction: {date_info}{request.instruction}\n\n"
            f"Previous actions:\n{chr(10).join(earlier) if earlier else 'None'}"
        )
        turns = [Turn("system", (read_text("gui_owl_15_system.txt"),))]
        if not history:
            return [*turns, Turn("user", (prompt, request.image))]
        for idx, item in enumerate(history[start:]):
            if item.image is None:
                raise ValueError(f"step {start + idx + 1} is in the screenshot window but has no screenshot")
            turns.append(Turn("user", (prompt, item.image) if idx == 0 else (item.image,)))
            turns.append(Turn("assistant", (item.reply,)))
        return [*turns, Turn("user", (request.image,))]

    def parse(self, text: str, screen: Size) -> WorkerOutput:
        output = parse_gui_owl(text, "mobile", indices=False)
        return output.model_copy(update={"description": action_sentence(text)})

    def summary(self, reply: str, output: WorkerOutput) -> str:
        return action_sentence(reply)
