"""What an action touches on the screen, for the action guard: the element a tap hits, the words
it acts on, who a message or payment on the screen goes to, and what a tap *does* whatever its
route — an app launch from a launcher icon, a recents card or a shortcut menu is an app launch,
a switch or checkbox is a state change.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from agent_runtime.actions import Action
from agent_runtime.observation import UIElement
from agent_runtime.safety.normalize import fold, is_phone
from agent_runtime.safety.rules import APPS, Family

_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


def is_email(text: str) -> bool:
    return bool(_EMAIL.fullmatch(text.strip()))


def rid(el: UIElement) -> str:
    """The resource id without its package ("com.x:id/send_button" -> "send_button")."""
    return el.resource_id.rsplit("/", 1)[-1].lower()


def is_keyboard(el: UIElement) -> bool:
    # The on-screen keyboard's "Delete" key erases a character, not data.
    return "inputmethod" in el.package or "keyboard" in el.package


def hit(elements: Sequence[UIElement], action: Action) -> UIElement | None:
    """The element an action touches: its index, or the smallest element holding its point."""
    index = getattr(action, "index", None)
    if index is not None:
        return elements[index] if 0 <= index < len(elements) else None
    point = getattr(action, "coordinate", None)
    if point is None:
        return None
    holding = [e for e in elements if e.bounds.area > 0 and e.bounds.contains(*point)]
    return min(holding, key=lambda e: (e.bounds.area, -e.depth), default=None)


def ancestors(el: UIElement, elements: Sequence[UIElement]) -> Iterable[UIElement]:
    parent = el.parent
    while parent is not None and 0 <= parent < len(elements):
        yield elements[parent]
        parent = elements[parent].parent


def button_of(el: UIElement, elements: Sequence[UIElement]) -> UIElement:
    """``el`` when it is clickable, else its nearest clickable ancestor (else ``el``)."""
    if "clickable" in el.flags or "long-clickable" in el.flags:
        return el
    return next((a for a in ancestors(el, elements) if "clickable" in a.flags), el)


def inside(button: UIElement, elements: Sequence[UIElement]) -> list[UIElement]:
    """The elements nested in ``button``."""
    return [
        e
        for e in elements
        if e.index != button.index and button.index in {a.index for a in ancestors(e, elements)}
    ]


#: A label longer than this is content (a message, a note), not a button's words.
_MAX_BUTTON_WORDS = 6
#: Resource ids of content shown inside a row (a snippet of a message is not a "Send" button).
_CONTENT_RID = re.compile(r"snippet|summary|subtitle|body|message_text|preview|description|content|text2")


def _own_buttons(button: UIElement, elements: Sequence[UIElement]) -> set[int]:
    """The indexes of the clickable nodes nested in ``button`` and of everything inside them: a
    tap that reaches ``button`` did not land on them, so their words say nothing of its effect
    (a call-log row opens the call's details; its trailing "Call Aiden" button is another tap)."""
    inner = {
        e.index for e in inside(button, elements) if "clickable" in e.flags or "long-clickable" in e.flags
    }
    return inner | {e.index for e in elements if inner & {a.index for a in ancestors(e, elements)}}


def tap_labels(el: UIElement, elements: Sequence[UIElement]) -> list[str]:
    """The words a tap on ``el`` acts on: its own label, and when it is not clickable itself the
    label of its clickable ancestor and of the short labelled nodes inside that ancestor (a
    button whose text is a child TextView) — not of the other buttons nested in it, which a tap
    on it does not press. Text fields are left out: tapping one only focuses it."""
    button = button_of(el, elements)
    others = _own_buttons(button, elements)
    nested = [
        e for e in inside(button, elements) if not _CONTENT_RID.search(rid(e)) and e.index not in others
    ]
    labels = []
    for node in (el, button, *nested):
        if not node.label or node.class_name.endswith("EditText") or is_keyboard(node):
            continue
        if node is not el and len(node.label.split()) > _MAX_BUTTON_WORDS:
            continue
        labels.append(node.label)
    return list(dict.fromkeys(labels))


# -- what a tap does --------------------------------------------------------------------------

#: Packages whose taps launch apps: launchers (home, drawer, recents) and the system UI.
_LAUNCHERS = re.compile(r"launcher|quickstep|nexuslauncher|trebuchet|lawnchair|systemui|recents")
#: Launcher elements that are an app: icons, recents cards, the shortcut menu's Open.
_APP_RID = re.compile(
    r"^(icon|app_icon|icon_view|bubble_text|snapshot|task_icon|task_view|task|shortcut_open|app_name_text)$"
)
#: Launcher elements that are not an app (the drawer's button and search box, the date).
_NOT_APP_RID = re.compile(
    r"all_apps|search|date|clock|widget|workspace|hotseat|back|home|recent_apps|app_info|scrim|cancel|^button\d"
)
_DIALOG_TITLE_RID = re.compile(r"^(alerttitle|dialog_title)$")
_TITLE_RID = re.compile(
    r"^(title|alerttitle|dialog_title|toolbar_title|action_bar_title|conversation_title|contact_name|name)$"
)


def _known_app(label: str) -> bool:
    key = label.strip().lower()
    return any(key in {n.lower() for n in (r.label, *r.names)} for r in APPS)


def launched_app(el: UIElement, elements: Sequence[UIElement]) -> str | None:
    """The app a tap on ``el`` opens when it is a launcher's icon, a recents card, a shortcut
    menu's Open or a notification naming its app; None for any other tap."""
    button = button_of(el, elements)
    if not _LAUNCHERS.search(button.package or el.package):
        return None
    if _NOT_APP_RID.search(rid(button)):
        return None
    if rid(button) == "shortcut_open":
        # The shortcut menu is a dialog titled with the app's label.
        titles = [
            e
            for e in elements
            if _DIALOG_TITLE_RID.match(rid(e)) and e.label and _LAUNCHERS.search(e.package)
        ]
        return titles[0].label if titles else None
    for node in (el, button, *inside(button, elements)):
        label = (node.content_desc or node.text).strip()
        if label and (_APP_RID.match(rid(node)) or _known_app(label)) and len(label.split()) <= 4:
            return label
    return None


def is_toggle(el: UIElement, elements: Sequence[UIElement]) -> bool:
    """Whether a tap on ``el`` flips a switch, checkbox or radio button (its own, or the one in
    the row it belongs to): a state change that carries no word at all ("Airplane mode")."""
    button = button_of(el, elements)
    return any("checkable" in n.flags for n in (el, button, *inside(button, elements)))


def toggle_name(el: UIElement, elements: Sequence[UIElement]) -> str:
    button = button_of(el, elements)
    return next((n.label for n in (el, button, *inside(button, elements)) if n.label), "a switch")


# -- who an action goes to --------------------------------------------------------------------

_BAR_RID = re.compile(r"toolbar|action_bar|app_bar|appbar|header")
_RECIPIENT_RID = re.compile(
    r"recipient|participant|contact_name|conversation_title|chip|payee|beneficiary|ship_to|deliver_to|^to$|^to_"
)
#: Fields that store a number later messages and calls go to (a contact's phone).
_NUMBER_FIELD_RID = re.compile(r"^(phone|phone_number|number|tel|mobile|phone_field)$")
_NAME = re.compile(r"[^\W\d_][\w'.\-]*(?: [^\W\d_][\w'.\-]*){0,3}")
_GENERIC_TITLES = {
    "messages",
    "chats",
    "chat",
    "inbox",
    "conversations",
    "contacts",
    "calls",
    "recents",
    "favorites",
    "phone",
    "checkout",
    "cart",
    "payment",
    "settings",
    "compose",
    "search",
}


def looks_like_party(text: str) -> bool:
    """A person's name (capitalised words), a phone number or an email address — not a hint
    ("Type a name or phone number") or a screen title ("Messages")."""
    text = text.strip()
    if is_phone(text) or is_email(text):
        return True
    return (
        bool(_NAME.fullmatch(text))
        and all(w[0].isupper() for w in text.split())
        and text.lower() not in _GENERIC_TITLES
        and not _known_app(text)
    )


def recipients(elements: Sequence[UIElement], family: Family) -> list[str]:
    """Who a message, call or payment on this screen goes to: recipient fields and chips by their
    resource id and, for messages and calls, the conversation's toolbar title."""
    found = []
    for el in elements:
        text = (el.text or el.content_desc).strip()
        if not text or "EditText" in el.class_name or not looks_like_party(text):
            continue
        by_id = bool(_RECIPIENT_RID.search(rid(el)))
        in_bar = bool(_TITLE_RID.match(rid(el))) and any(
            _BAR_RID.search(rid(a)) for a in list(ancestors(el, elements))[:3]
        )
        if by_id or (in_bar and not family.recipient_by_id_only):
            found.append(text)
    return list(dict.fromkeys(found))


def is_recipient_field(el: UIElement) -> bool:
    """A field whose value says where messages or calls go: a "To" field, or a contact's phone
    number (rewriting it redirects every later message to that contact)."""
    label = fold(el.label)
    return (
        bool(_RECIPIENT_RID.search(rid(el)))
        or ("EditText" in el.class_name and bool(_NUMBER_FIELD_RID.match(rid(el))))
        or bool(
            re.fullmatch(r"(to|recipients?)", label.strip())
            or re.search(r"name or phone|phone number or|name, phone|to:", label)
        )
    )
