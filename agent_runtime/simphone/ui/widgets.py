"""Builders for the widgets apps are made of (Material-like app bars, list items, fields…).

Every builder returns a :class:`View` with the Android class, flags and handlers a real widget
has, styled from the current :class:`Theme`. A :class:`UI` is created per frame for one field
owner (a screen or a dialog), so fields read their text and focus from the right place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agent_runtime.simphone.ui.fields import FieldHost, FieldOwner
from agent_runtime.simphone.ui.theme import Color, Theme
from agent_runtime.simphone.ui.view import Handler, View


class UI:
    """Widget factory bound to a theme, the phone (focus, Back) and the field owner being built."""

    def __init__(self, theme: Theme, phone: FieldHost, owner: FieldOwner) -> None:
        self.t = theme
        self.phone = phone
        self.owner = owner

    # -- basics -----------------------------------------------------------------------------

    def dp(self, v: float) -> int:
        return self.t.dp(v)

    def text(
        self,
        text: str,
        size: float = 16,
        *,
        muted: bool = False,
        bold: bool = False,
        rid: str = "",
        lines: int = 1,
        align: str = "start",
        color: Color | None = None,
        pad: tuple[float, float, float, float] = (0, 0, 0, 0),
        h: float | None = None,
        desc: str = "",
    ) -> View:
        return View(
            kind="text",
            cls="android.widget.TextView",
            text=text,
            desc=desc,
            rid=rid,
            size=self.t.sp(size),
            bold=bold,
            fg=color or (self.t.muted if muted else self.t.on_bg),
            lines=lines,
            align=align,
            pad=self._pad(pad),
            h=self.dp(h) if h is not None else None,
        )

    def _pad(self, pad: tuple[float, float, float, float]) -> tuple[int, int, int, int]:
        return (self.dp(pad[0]), self.dp(pad[1]), self.dp(pad[2]), self.dp(pad[3]))

    def col(
        self,
        *children: View | None,
        gap: float = 0,
        pad: tuple[float, float, float, float] = (0, 0, 0, 0),
        **kw: object,
    ) -> View:
        v = View(cls="android.widget.LinearLayout", direction="col", gap=self.dp(gap), pad=self._pad(pad))
        for k, val in kw.items():
            setattr(v, k, val)
        return v.add(*children)

    def row(
        self,
        *children: View | None,
        gap: float = 0,
        pad: tuple[float, float, float, float] = (0, 0, 0, 0),
        **kw: object,
    ) -> View:
        v = View(
            cls="android.widget.LinearLayout",
            direction="row",
            gap=self.dp(gap),
            pad=self._pad(pad),
            align="center",
        )
        for k, val in kw.items():
            setattr(v, k, val)
        return v.add(*children)

    def spacer(self, h: float = 0, weight: float = 0.0, w: float | None = None) -> View:
        return View(
            cls="android.view.View",
            h=self.dp(h) if not weight else None,
            weight=weight,
            w=self.dp(w) if w is not None else None,
            in_xml=False,
        )

    def divider(self) -> View:
        return View(cls="android.view.View", h=max(1, self.dp(1)), bg=self.t.divider, pad=(0, 0, 0, 0))

    def scroll(
        self,
        key: str,
        children: Sequence[View | None],
        gap: float = 0,
        pad: tuple[float, float, float, float] = (0, 0, 0, 0),
        rid: str = "",
        start_at_end: bool = False,
    ) -> View:
        """A vertical list; ``start_at_end`` opens it scrolled to the bottom (chat history)."""
        v = View(
            kind="scroll",
            cls="androidx.recyclerview.widget.RecyclerView",
            rid=rid or key,
            scroll_key=key,
            scroll_y=self.owner.scroll.get(key, 1 << 30 if start_at_end else 0),
            owner=self.owner,
            gap=self.dp(gap),
            pad=self._pad(pad),
            weight=1.0,
        )
        return v.add(*children)

    # -- controls ---------------------------------------------------------------------------

    def button(
        self,
        label: str,
        on_click: Handler,
        *,
        rid: str = "",
        style: str = "filled",
        w: float | None = None,
        enabled: bool = True,
        desc: str = "",
        color: Color | None = None,
    ) -> View:
        t = self.t
        fg = {
            "filled": t.on_primary,
            "tonal": t.on_bg,
            "text": color or t.primary,
            "outlined": color or t.primary,
        }[style]
        bg = {"filled": t.primary, "tonal": t.primary_soft, "text": None, "outlined": None}[style]
        v = View(
            kind="text",
            cls="android.widget.Button",
            text=label,
            desc=desc,
            rid=rid,
            size=t.sp(14),
            bold=True,
            fg=fg if enabled else t.muted,
            bg=bg if enabled or bg is None else t.divider,
            border=(t.divider if style == "outlined" else None),
            radius=self.dp(20),
            h=self.dp(40),
            w=self.dp(w) if w is not None else None,
            pad=(self.dp(16), 0, self.dp(16), 0),
            align="center",
            clickable=True,
            focusable=True,
            enabled=enabled,
            on_click=on_click,
        )
        return v

    def icon_button(
        self,
        shape: str,
        desc: str,
        on_click: Handler | None,
        *,
        rid: str = "",
        color: Color | None = None,
        size: float = 48,
        bg: Color | None = None,
    ) -> View:
        return View(
            kind="icon",
            cls="android.widget.ImageButton",
            shape=shape,
            desc=desc,
            rid=rid,
            fg=color or self.t.on_bg,
            bg=bg,
            radius=self.dp(size / 2),
            w=self.dp(size),
            h=self.dp(size),
            pad=(self.dp(12),) * 4,
            clickable=on_click is not None,
            focusable=on_click is not None,
            on_click=on_click,
        )

    def icon(self, shape: str, color: Color | None = None, size: float = 24, desc: str = "") -> View:
        return View(
            kind="icon",
            cls="android.widget.ImageView",
            shape=shape,
            desc=desc,
            fg=color or self.t.muted,
            w=self.dp(size),
            h=self.dp(size),
        )

    def avatar(self, letter: str, color: Color, size: float = 40) -> View:
        v = View(
            kind="text",
            cls="android.widget.TextView",
            text=letter[:1].upper(),
            size=self.t.sp(size * 0.45),
            bold=True,
            fg=(255, 255, 255),
            bg=color,
            radius=self.dp(size / 2),
            w=self.dp(size),
            h=self.dp(size),
            align="center",
        )
        return v

    def edit(
        self,
        key: str,
        hint: str,
        *,
        rid: str = "",
        on_submit: Handler | None = None,
        multiline: bool = False,
        input_type: str = "text",
        h: float | None = None,
        size: float = 16,
        boxed: bool = True,
        password: bool = False,
        w: float | None = None,
    ) -> View:
        t = self.t
        owner, phone = self.owner, self.phone
        focused = owner.focus == key
        v = View(
            kind="edit",
            cls="android.widget.EditText",
            text=owner.fields.get(key, ""),
            hint=hint,
            hint_fg=t.muted,
            rid=rid or key,
            size=t.sp(size),
            fg=t.on_bg,
            bg=t.surface if boxed else None,
            border=(t.primary if focused else t.divider) if boxed else None,
            radius=self.dp(6),
            h=self.dp(h) if h is not None else (None if multiline else self.dp(56)),
            w=self.dp(w) if w is not None else None,
            pad=(self.dp(16), self.dp(12), self.dp(16), self.dp(12)),
            lines=0 if multiline else 1,
            multiline=multiline,
            accent=t.primary,
            clickable=True,
            focusable=True,
            long_clickable=True,
            focused=focused,
            password=password,
            field_key=key,
            input_type=input_type,
            on_submit=on_submit,
        )
        v.on_click = lambda: phone.focus_field(owner, key, input_type)
        return v

    def switch(
        self, checked: bool, on_toggle: Handler, *, desc: str = "", rid: str = "switch_widget"
    ) -> View:
        t = self.t
        return View(
            kind="switch",
            cls="android.widget.Switch",
            desc=desc,
            rid=rid,
            checked=checked,
            checkable=True,
            clickable=True,
            focusable=True,
            fg=t.on_bg,
            accent=t.primary,
            accent2=t.on_primary,
            w=self.dp(68),
            h=self.dp(48),
            pad=(0, 0, self.dp(8), 0),
            on_click=on_toggle,
        )

    def checkbox(
        self, checked: bool, on_toggle: Handler, *, desc: str = "", radio: bool = False, rid: str = ""
    ) -> View:
        t = self.t
        return View(
            kind="radio" if radio else "check",
            cls="android.widget.RadioButton" if radio else "android.widget.CheckBox",
            desc=desc,
            rid=rid,
            checked=checked,
            checkable=True,
            clickable=True,
            focusable=True,
            fg=t.muted,
            accent=t.primary,
            w=self.dp(48),
            h=self.dp(48),
            pad=(0, 0, self.dp(14), 0),
            on_click=on_toggle,
        )

    def seek(
        self, desc: str, value: float, on_seek: Callable[[float], None], *, rid: str = "seekbar"
    ) -> View:
        t = self.t
        return View(
            kind="seek",
            cls="android.widget.SeekBar",
            text=str(round(value * 100)),
            desc=desc,
            rid=rid,
            value=value,
            accent=t.primary,
            h=self.dp(48),
            pad=(self.dp(24), 0, self.dp(24), 0),
            clickable=True,
            focusable=True,
            on_seek=on_seek,
        )

    def chip(self, label: str, selected: bool, on_click: Handler, *, rid: str = "chip") -> View:
        t = self.t
        return View(
            kind="text",
            cls="android.widget.CompoundButton",
            text=label,
            rid=rid,
            size=t.sp(14),
            fg=t.on_bg,
            bg=t.primary_soft if selected else None,
            border=t.primary if selected else t.divider,
            radius=self.dp(8),
            h=self.dp(36),
            pad=(self.dp(14), 0, self.dp(14), 0),
            align="center",
            checkable=True,
            checked=selected,
            selected=selected,
            clickable=True,
            focusable=True,
            on_click=on_click,
        )

    # -- composites ---------------------------------------------------------------------------

    def app_bar(
        self, title: str, *, back: bool = True, actions: Sequence[View] = (), rid: str = "toolbar"
    ) -> View:
        t = self.t
        bar = View(
            cls="android.view.ViewGroup",
            rid=rid,
            direction="row",
            align="center",
            h=self.dp(64),
            bg=t.bg,
            pad=(self.dp(4), 0, self.dp(12 if actions else 4), 0),
            gap=self.dp(4),
        )
        if back:
            bar.add(self.icon_button("arrow_left", "Navigate up", self.phone.back, rid="up"))
        else:
            bar.add(self.spacer(w=12))
        title_v = self.text(title, 22, rid="title")
        title_v.weight = 1.0
        bar.add(title_v, *actions)
        return bar

    def page(
        self,
        title: str,
        body: Sequence[View | None],
        *,
        back: bool = True,
        actions: Sequence[View] = (),
        fab: View | None = None,
        scroll_key: str = "list",
        footer: View | None = None,
        header: View | None = None,
        gap: float = 0,
        start_at_end: bool = False,
    ) -> View:
        """The standard screen: app bar, optional header, a scrolling body, optional footer and FAB."""
        content = self.col(
            self.app_bar(title, back=back, actions=actions),
            header,
            self.scroll(scroll_key, body, gap=gap, start_at_end=start_at_end),
            footer,
        )
        content.weight = 1.0
        if fab is None:
            content.bg = self.t.bg
            return content
        if footer is not None and footer.h is not None:
            fab.lift = footer.h  # keep the FAB above a bottom bar
        root = View(cls="android.widget.FrameLayout", direction="stack", bg=self.t.bg)
        root.add(content, fab)
        return root

    def fab(
        self, desc: str, on_click: Handler, *, shape: str = "plus", label: str = "", rid: str = "fab"
    ) -> View:
        """A floating action button in the bottom-right corner of the content area."""
        t = self.t
        size = self.dp(56)
        w = size if not label else self.dp(32 + 24 + 8) + int(len(label) * t.sp(14) * 0.62)
        return View(
            kind="icon" if not label else "text",
            cls="android.widget.ImageButton" if not label else "android.widget.Button",
            shape=shape,
            text=label,
            desc=desc,
            rid=rid,
            size=t.sp(14) if label else 0,
            bold=True,
            fg=t.on_primary,
            bg=t.primary,
            radius=self.dp(16),
            w=w,
            h=size,
            pad=(self.dp(16),) * 4 if not label else (self.dp(20), 0, self.dp(20), 0),
            align="center",
            clickable=True,
            focusable=True,
            on_click=on_click,
            gravity="bottom_end",
            margin=self.dp(16),
        )

    def list_item(
        self,
        title: str,
        subtitle: str = "",
        on_click: Handler | None = None,
        *,
        leading: View | None = None,
        trailing: View | None = None,
        rid: str = "",
        on_long_click: Handler | None = None,
        desc: str = "",
        title_size: float = 16,
        selected: bool = False,
    ) -> View:
        t = self.t
        texts = self.col(
            self.text(title, title_size, rid="title"),
            self.text(subtitle, 14, muted=True, rid="summary") if subtitle else None,
        )
        texts.weight = 1.0
        texts.justify = "center"
        item = self.row(leading, texts, trailing, gap=16, pad=(16, 8, 16 if trailing is None else 8, 8))
        item.h = self.dp(72 if subtitle or leading is not None else 56)
        item.rid = rid
        item.desc = desc
        item.selected = selected
        if selected:
            item.bg = t.primary_soft
        if on_click is not None:
            item.clickable = item.focusable = True
            item.on_click = on_click
        if on_long_click is not None:
            item.long_clickable = True
            item.on_long_click = on_long_click
        return item

    def switch_row(
        self, title: str, checked: bool, on_toggle: Handler, *, summary: str = "", rid: str = ""
    ) -> View:
        sw = self.switch(checked, on_toggle, desc=title)
        return self.list_item(title, summary, on_toggle, trailing=sw, rid=rid)

    def section(self, title: str) -> View:
        return self.text(title, 14, bold=True, color=self.t.primary, pad=(16, 16, 16, 8))

    def empty(self, message: str) -> View:
        return self.text(message, 16, muted=True, align="center", lines=3, pad=(24, 48, 24, 24))

    def tabs(self, items: Sequence[tuple[str, bool, Handler]]) -> View:
        t = self.t
        bar = View(
            cls="android.widget.LinearLayout", direction="row", h=self.dp(56), bg=t.surface, rid="tabs"
        )
        for label, selected, handler in items:
            tab = View(
                kind="text",
                cls="android.widget.TextView",
                text=label,
                desc=label,
                size=t.sp(14),
                bold=selected,
                fg=t.primary if selected else t.muted,
                weight=1.0,
                align="center",
                clickable=True,
                focusable=True,
                selected=selected,
                on_click=handler,
                bg=t.primary_soft if selected else None,
                radius=self.dp(16),
            )
            bar.add(tab)
        return bar
