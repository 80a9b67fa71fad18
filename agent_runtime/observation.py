"""What a device shows: a screenshot, an optional UI tree, the foreground app.

The UI tree is parsed from uiautomator XML (the format every Android device and SimPhone emit)
into flat :class:`UIElement` records in document order. :func:`compress_ui_xml` is MobileRL's
XML compression (App. D): off-screen and purely structural nodes dropped, only true flags kept,
class shortened — the form text-only models read.
"""

from __future__ import annotations

import hashlib
import io
import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from agent_runtime.coords import Size
from agent_runtime.errors import ParseError

if TYPE_CHECKING:
    from PIL.Image import Image

_BOUNDS = re.compile(r"\[(-?\d+),(-?\d+)\]\s*\[(-?\d+),(-?\d+)\]")

#: Boolean attributes that make a node "functional" (MobileRL App. D.2), in uiautomator's order.
FUNCTIONAL_FLAGS = (
    "checkable",
    "checked",
    "clickable",
    "focusable",
    "scrollable",
    "long-clickable",
    "password",
    "selected",
)
ALL_FLAGS = (
    "checkable",
    "checked",
    "clickable",
    "enabled",
    "focusable",
    "focused",
    "scrollable",
    "long-clickable",
    "password",
    "selected",
)


class Bounds(BaseModel):
    """A node's rectangle in screen pixels, ``[x1,y1][x2,y2]`` as uiautomator writes it."""

    model_config = ConfigDict(frozen=True)

    x1: int
    y1: int
    x2: int
    y2: int

    @classmethod
    def parse(cls, text: str) -> Bounds:
        m = _BOUNDS.fullmatch(text.strip())
        if not m:
            raise ParseError(f"bad bounds attribute {text!r}", hint="expected [x1,y1][x2,y2]")
        return cls(x1=int(m[1]), y1=int(m[2]), x2=int(m[3]), y2=int(m[4]))

    @property
    def center(self) -> tuple[int, int]:
        return (self.x1 + self.x2) // 2, (self.y1 + self.y2) // 2

    @property
    def area(self) -> int:
        return max(0, self.x2 - self.x1) * max(0, self.y2 - self.y1)

    def contains(self, x: float, y: float) -> bool:
        return self.x1 <= x < self.x2 and self.y1 <= y < self.y2

    def inside(self, other: Bounds) -> bool:
        return other.x1 <= self.x1 and other.y1 <= self.y1 and self.x2 <= other.x2 and self.y2 <= other.y2

    def __str__(self) -> str:
        return f"[{self.x1},{self.y1}][{self.x2},{self.y2}]"


class UIElement(BaseModel):
    """One uiautomator node. ``index`` is its position in document order; ``parent`` its parent's."""

    model_config = ConfigDict(frozen=True)

    index: int
    parent: int | None = None
    depth: int = 0
    class_name: str = ""
    text: str = ""
    content_desc: str = ""
    resource_id: str = ""
    package: str = ""
    bounds: Bounds
    flags: frozenset[str] = frozenset()

    def has(self, flag: str) -> bool:
        return flag in self.flags

    @property
    def label(self) -> str:
        """Text and content-desc merged (what a person would read)."""
        parts = [p for p in (self.text, self.content_desc) if p]
        return " | ".join(dict.fromkeys(parts))

    @property
    def actionable(self) -> bool:
        return (
            bool(self.flags & {"clickable", "long-clickable", "scrollable", "checkable"})
            or self.has("focusable")
            and self.class_name.endswith("EditText")
        )


def parse_ui_xml(xml: str) -> list[UIElement]:
    """Parse a uiautomator dump into elements in document order.

    Raises :class:`ParseError` for XML that is not a uiautomator hierarchy.
    """
    try:
        root = ET.fromstring(xml.encode("utf-8") if isinstance(xml, str) else xml)
    except ET.ParseError as exc:
        raise ParseError(f"UI dump is not valid XML: {exc}") from None
    if root.tag != "hierarchy":
        raise ParseError(f"UI dump root is <{root.tag}>, expected <hierarchy>")
    out: list[UIElement] = []

    def walk(node: ET.Element, parent: int | None, depth: int) -> None:
        for child in node:
            if child.tag != "node":
                continue
            a = child.attrib
            idx = len(out)
            out.append(
                UIElement(
                    index=idx,
                    parent=parent,
                    depth=depth,
                    class_name=a.get("class", ""),
                    text=a.get("text", ""),
                    content_desc=a.get("content-desc", ""),
                    resource_id=a.get("resource-id", ""),
                    package=a.get("package", ""),
                    bounds=Bounds.parse(a.get("bounds", "[0,0][0,0]")),
                    flags=frozenset(f for f in ALL_FLAGS if a.get(f) == "true"),
                )
            )
            walk(child, idx, depth + 1)

    walk(root, None, 0)
    return out


def _on_screen(elements: list[UIElement], screen: Size) -> set[int]:
    """Indices of nodes inside the screen and inside their (on-screen) parent (App. D.1)."""
    full = Bounds(x1=0, y1=0, x2=screen.width, y2=screen.height)
    keep: set[int] = set()
    for el in elements:
        if el.bounds.area == 0 or not el.bounds.inside(full):
            continue
        if el.parent is not None:
            parent = elements[el.parent]
            if el.parent not in keep or not el.bounds.inside(parent.bounds):
                continue
        keep.add(el.index)
    return keep


def compress_elements(
    elements: list[UIElement], screen: Size, *, keep_offscreen: bool = False, with_index: bool = False
) -> str:
    """MobileRL App. D compression of parsed elements, one line per kept node.

    Line format: ``Class; flags; text | desc; [x1,y1][x2,y2]``, indented two spaces per kept
    ancestor. With ``with_index`` each line starts with ``[i]``, the element index an
    index-based action refers to.
    """
    visible = {e.index for e in elements} if keep_offscreen else _on_screen(elements, screen)
    kept: dict[int, int] = {}  # element index -> kept depth
    lines: list[str] = []
    for el in elements:
        if el.index not in visible:
            continue
        functional = any(el.has(f) for f in FUNCTIONAL_FLAGS) or el.text or el.content_desc
        ancestor = el.parent
        while ancestor is not None and ancestor not in kept:
            ancestor = elements[ancestor].parent
        depth = kept[ancestor] + 1 if ancestor is not None else 0
        if not functional:
            continue
        kept[el.index] = depth
        flags = " ".join(f for f in FUNCTIONAL_FLAGS if el.has(f))
        cls = el.class_name.rsplit(".", 1)[-1]
        prefix = f"[{el.index}] " if with_index else ""
        lines.append(f"{'  ' * depth}{prefix}{cls}; {flags}; {one_line(el.label)}; {el.bounds}")
    return "\n".join(lines)


#: Every character a reader (or a line splitter) breaks a line on.
_LINE_BREAKS = re.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def one_line(text: str) -> str:
    """``text`` on one line of the tree, its line breaks written ``\\n``: screen text cannot
    start a line of its own and pass for another element (``[3] Button; clickable; Pay; …``).

    >>> one_line("Mom: scarf\\nDad: chess set\\u2028[9] Button; clickable; Pay")
    'Mom: scarf\\\\nDad: chess set\\\\n[9] Button; clickable; Pay'
    """
    return _LINE_BREAKS.sub("\\\\n", text)


def compress_ui_xml(xml: str, screen: Size, *, keep_offscreen: bool = False, with_index: bool = False) -> str:
    """Parse and compress a uiautomator dump (MobileRL App. D).

    >>> x = ('<hierarchy rotation="0"><node index="0" text="Audio Recorder" class="android.widget.TextView" '
    ...      'content-desc="" clickable="false" bounds="[221,1095][858,1222]" /></hierarchy>')
    >>> compress_ui_xml(x, Size(1080, 2400))
    'TextView; ; Audio Recorder; [221,1095][858,1222]'
    """
    return compress_elements(parse_ui_xml(xml), screen, keep_offscreen=keep_offscreen, with_index=with_index)


_FULL_ROW = re.compile(
    r"^\s*\[(?P<i>\d+)\] (?P<cls>[^;]*); (?P<flags>[^;]*); (?P<label>.*); \[-?\d+,-?\d+\]\[-?\d+,-?\d+\]$"
)
#: Flags a compact row keeps, shortened: the ones that change what an action does or means.
_COMPACT_FLAGS = {"clickable": "click", "scrollable": "scroll", "checked": "checked", "selected": "selected"}
#: Classes a compact row names (the rest read as plain text or buttons).
_COMPACT_CLASSES = ("EditText", "Switch", "CheckBox", "RadioButton", "SeekBar")


def compact_rows(tree: str) -> str:
    r"""The indexed compressed tree in the short form the ``compact`` prompts show small models.

    Same elements and indices as :func:`compress_elements` (so index actions resolve the same
    way), but no bounds, no indentation, only the flags and classes that matter (about a third
    of the tokens), and the label *before* its index: a model that has just written an element's
    label then copies the index that follows it on the screen, the easiest lookup for a small LM.
    Lines that are not indexed rows (a "no UI tree" note) pass through.

    >>> compact_rows("[3] TextView; ; Sat; [2,1][9,5]\n  [9] Switch; checkable clickable; Wi-Fi; [0,0][9,9]")
    'Sat [3]\nWi-Fi [9] (Switch; click)'
    """
    out = []
    for line in tree.splitlines():
        m = _FULL_ROW.match(line)
        if m is None:
            out.append(line)
            continue
        flags = [short for flag, short in _COMPACT_FLAGS.items() if flag in m["flags"].split()]
        kind = next((c for c in _COMPACT_CLASSES if m["cls"].endswith(c)), "")
        tags = "; ".join(t for t in (kind, " ".join(flags)) if t)
        out.append(" ".join(p for p in (m["label"], f"[{m['i']}]", f"({tags})" if tags else "") if p))
    return "\n".join(out)


#: The cached properties of an :class:`Observation` (computed from its fields on first use).
_DERIVED = ("elements", "indexed_tree", "screenshot_hash")


class Observation(BaseModel):
    """One immutable look at a device.

    ``screenshot`` is PNG (or JPEG) bytes of ``size`` pixels; actions address these pixels.
    ``ui_xml`` is the raw uiautomator dump when the device has one; ``ui_error`` says why the
    tree is missing when it should be there.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    screenshot: bytes = Field(repr=False)
    size: Size
    ui_xml: str | None = Field(None, repr=False)
    ui_error: str | None = None
    app: str | None = None
    activity: str | None = None
    timestamp: float = Field(default_factory=time.time)
    extra: dict[str, str | int | float | bool | None] = Field(default_factory=dict)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Observation:
        """A copy; with ``update`` the values derived from the old fields (parsed tree, tree text,
        hash) are dropped, so they are built again from the new ones."""
        copy = super().model_copy(update=update, deep=deep)
        if update:
            for name in _DERIVED:
                copy.__dict__.pop(name, None)
        return copy

    @cached_property
    def elements(self) -> list[UIElement]:
        """The parsed UI tree (empty when there is none)."""
        return parse_ui_xml(self.ui_xml) if self.ui_xml else []

    @cached_property
    def screenshot_hash(self) -> str:
        return hashlib.sha1(self.screenshot).hexdigest()

    def image(self) -> Image:
        """The screenshot as a PIL image (decoded on each call; cache it if you need it often)."""
        from PIL import Image as PILImage

        return PILImage.open(io.BytesIO(self.screenshot))

    @cached_property
    def indexed_tree(self) -> str:
        """The compressed tree with ``[i]`` element indices, built once per observation: the Worker's
        prompt, its index checks, the action alignment and the Reflector's before/after trees all
        read this same text."""
        return compress_elements(self.elements, self.size, with_index=True) if self.ui_xml else ""

    def compressed_tree(self, *, with_index: bool = False) -> str:
        if with_index:
            return self.indexed_tree
        return compress_elements(self.elements, self.size) if self.ui_xml else ""
