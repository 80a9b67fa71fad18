"""Recorder (``com.simphone.recorder``, label ``Recorder``): voice memos on the virtual clock.

State — :class:`RecorderState`:
    ``recordings``: list of :class:`Recording` (``id``, ``name``, ``seconds``, ``created``
    virtual datetime); ``recording_since``: when the running recording started (None when
    idle); ``playing``: the id of the recording being played, or None; ``next_id``. Helper:
    :meth:`RecorderApp.add_recording`.

A recording lasts as long as virtual time runs between Start and Stop (the ``wait`` action
advances it), so "record 20 seconds" is start, wait 20, stop.

Screens:
    * ``main`` "Recorder": recordings newest first (``recording_item``; title = name, summary =
      "1:05 · Mar 14, 2025"); while recording, the elapsed time (``elapsed``, "0:12"); a round
      button at the bottom, content-desc "Start recording" / "Stop recording"
      (``record_button``). Stopping saves "Recording N" and shows a toast.
    * ``recording`` (title = name): rows Duration and Recorded (``duration``, ``recorded_on``;
      the value is the row's title); a "Play"/"Pause" button (``play``); app-bar buttons
      "Rename" (dialog with ``input``, button "Rename") and "Delete" (confirm "Delete").
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from agent_runtime.simphone.app import App
from agent_runtime.simphone.apps.files import format_date, format_datetime
from agent_runtime.simphone.ui import dialogs
from agent_runtime.simphone.ui.view import View
from agent_runtime.simphone.ui.widgets import UI

_SEED = (("Lecture notes", 1284), ("Guitar riff", 47), ("Grocery reminder", 12), ("Interview practice", 605))


def format_duration(seconds: int) -> str:
    """``0:47``, ``21:24``, ``1:02:05`` — how recorders show a length.

    >>> format_duration(47), format_duration(1284), format_duration(3725)
    ('0:47', '21:24', '1:02:05')
    """
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@dataclass
class Recording:
    id: int
    name: str
    seconds: int
    created: dt.datetime = dt.datetime(2025, 1, 1)


@dataclass
class RecorderState:
    recordings: list[Recording] = field(default_factory=list)
    recording_since: dt.datetime | None = None
    playing: int | None = None
    next_id: int = 1


class RecorderApp(App):
    package = "com.simphone.recorder"
    label = "Recorder"
    activity = "com.simphone.recorder.RecorderActivity"

    def initial_state(self, rng: random.Random) -> RecorderState:
        state = RecorderState()
        now = self.phone.now
        for i, (name, seconds) in enumerate(rng.sample(_SEED, 3)):
            created = now - dt.timedelta(days=3 * i + rng.randint(1, 3), minutes=rng.randint(0, 600))
            state.recordings.append(Recording(state.next_id, name, seconds, created))
            state.next_id += 1
        return state

    def add_recording(self, name: str, seconds: int, created: dt.datetime) -> Recording:
        rec = Recording(self.state.next_id, name, seconds, created)
        self.state.next_id += 1
        self.state.recordings.append(rec)
        return rec

    def _get(self, rec_id: object) -> Recording | None:
        return next((r for r in self.state.recordings if r.id == rec_id), None)

    def _elapsed(self) -> int:
        since = self.state.recording_since
        return 0 if since is None else max(0, int((self.phone.now - since).total_seconds()))

    def _default_name(self) -> str:
        taken = {r.name for r in self.state.recordings}
        n = 1
        while f"Recording {n}" in taken:
            n += 1
        return f"Recording {n}"

    def toggle_recording(self) -> None:
        """Start, or stop and save (a recording lasts at least a second)."""
        s = self.state
        if s.recording_since is None:
            s.recording_since = self.phone.now
            s.playing = None
            return
        rec = self.add_recording(self._default_name(), max(1, self._elapsed()), s.recording_since)
        s.recording_since = None
        self.toast(f"Saved {rec.name}")

    def activity_name(self) -> str:
        return "com.simphone.recorder.PlaybackActivity" if self.screen.name == "recording" else self.activity

    # -- screens --------------------------------------------------------------------------------

    def build(self, ui: UI) -> View:
        if self.screen.name == "recording":
            rec = self._get(self.screen.params.get("id"))
            if rec is not None:
                return self._recording(ui, rec)
            self.pop_to_root()
        return self._main(ui)

    def _open(self, rec_id: int) -> Callable[[], None]:
        def run() -> None:
            self.push("recording", id=rec_id)

        return run

    def _main(self, ui: UI) -> View:
        recs = sorted(self.state.recordings, key=lambda r: (-r.created.timestamp(), -r.id))
        body: list[View | None] = []
        for r in recs:
            body.append(
                ui.list_item(
                    r.name,
                    f"{format_duration(r.seconds)} · {format_date(r.created)}",
                    self._open(r.id),
                    leading=ui.avatar(r.name[:1], (229, 57, 53)),
                    rid="recording_item",
                    desc=r.name,
                )
            )
        if not recs:
            body.append(ui.empty("No recordings yet"))
        active = self.state.recording_since is not None
        button = ui.icon_button(
            "ring" if active else "circle",
            "Stop recording" if active else "Start recording",
            self.toggle_recording,
            rid="record_button",
            size=72,
            color=(255, 255, 255),
            bg=(229, 57, 53),
        )
        footer = ui.col(
            ui.text(format_duration(self._elapsed()), 32, rid="elapsed", align="center") if active else None,
            button,
            align="center",
            gap=8,
            pad=(0, 8, 0, 16),
        )
        footer.h = ui.dp(168 if active else 104)
        return ui.page("Recorder", body, back=False, footer=footer, scroll_key="recordings")

    def _recording(self, ui: UI, rec: Recording) -> View:
        s = self.state

        def play() -> None:
            s.playing = None if s.playing == rec.id else rec.id

        def rename() -> None:
            def done(name: str) -> None:
                name = name.strip()
                if not name:
                    self.toast("Enter a name")
                else:
                    rec.name = name

            self.show(dialogs.prompt(self, "Rename recording", "Name", rec.name, done, ok_label="Rename"))

        def delete() -> None:
            def really() -> None:
                s.recordings = [r for r in s.recordings if r.id != rec.id]
                if s.playing == rec.id:
                    s.playing = None
                self.pop()
                self.toast("Recording deleted")

            self.show(
                dialogs.confirm(self, "Delete recording?", f"“{rec.name}” will be deleted.", "Delete", really)
            )

        when = format_datetime(rec.created)
        rows = (("Duration", format_duration(rec.seconds), "duration"), ("Recorded", when, "recorded_on"))
        playing = s.playing == rec.id
        body: list[View | None] = [ui.list_item(v, label, None, rid=rid) for label, v, rid in rows]
        body.append(
            ui.col(
                ui.button("Pause" if playing else "Play", play, rid="play"),
                pad=(16, 16, 16, 16),
            )
        )
        actions = [
            ui.icon_button("more", "Rename", rename, rid="rename"),
            ui.icon_button("delete", "Delete", delete, rid="delete"),
        ]
        return ui.page(rec.name, body, actions=actions, scroll_key="recording")
