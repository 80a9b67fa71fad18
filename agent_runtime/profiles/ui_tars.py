"""UI-TARS-1.5 (ByteDance-Seed/UI-TARS-1.5-7B): its ``MOBILE_USE`` prompt and multi-turn layout.

Sources: the prompt is ``MOBILE_USE`` of bytedance/UI-TARS ``codes/prompts.py`` @ 0d218b69
(the ``start_box`` action space UI-TARS-1.5 was released with; kept verbatim in
``data/ui_tars_mobile.txt``, ``{language}`` = English). The layout is the UI-TARS agent of
OSWorld (``mm_agents/uitars_agent.py``): a system turn "You are a helpful assistant.", the
prompt as the first user turn, then every earlier reply as an assistant turn, the last
``history_n - 1 = 4`` of them each after their screenshot, then the current screenshot.
Coordinates are absolute pixels of the ``smart_resize``-d screenshot (factor 28,
100·28²..16384·28² pixels: the UI-TARS README's coordinate guide), images PNG.
"""

from __future__ import annotations

from typing import ClassVar

from agent_runtime.coords import CoordSpace, ImageBudget, Size
from agent_runtime.profiles.base import Profile, Request, read_text
from agent_runtime.profiles.ui_tars_parser import parse_ui_tars
from agent_runtime.role_outputs import WorkerOutput
from agent_runtime.roles.caller import Turn

#: OSWorld's UI-TARS agent sends the last 5 screenshots (the current one and 4 earlier).
HISTORY_N = 5
LANGUAGE = "English"


class UiTars15(Profile):
    name: ClassVar[str] = "ui-tars-1.5"
    source: ClassVar[str] = (
        "bytedance/UI-TARS: codes/prompts.py (MOBILE_USE); xlang-ai/OSWorld: mm_agents/uitars_agent.py"
    )
    coords: ClassVar[CoordSpace] = CoordSpace.PIXELS_RESIZED
    min_pixels: ClassVar[int] = 100 * 28 * 28
    max_pixels: ClassVar[int] = 16384 * 28 * 28
    screens_kept: ClassVar[int] = HISTORY_N - 1
    reply_format: ClassVar[str] = "Thought: …\nAction: click(start_box='(x1,y1)')"

    def render(self, request: Request) -> list[Turn]:
        prompt = read_text("ui_tars_mobile.txt").replace("{language}", LANGUAGE)
        prompt = prompt.replace("{instruction}", request.instruction)
        turns = [Turn("system", ("You are a helpful assistant.",)), Turn("user", (prompt,))]
        history = request.history
        for idx, item in enumerate(history):
            if idx + HISTORY_N > len(history):
                if item.image is None:
                    raise ValueError(f"step {idx + 1} is in the screenshot window but has no screenshot")
                turns.append(Turn("user", (item.image,)))
            turns.append(Turn("assistant", (item.reply,)))
        return [*turns, Turn("user", (request.image,))]

    def parse(self, text: str, screen: Size) -> WorkerOutput:
        extent = ImageBudget(min_pixels=self.min_pixels, max_pixels=self.max_pixels).resized(screen)
        return parse_ui_tars(text, extent)

    def summary(self, reply: str, output: WorkerOutput) -> str:
        return output.thought
