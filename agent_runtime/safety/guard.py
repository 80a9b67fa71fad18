"""The action guard: before a step's actions run, say whether they are sensitive and whether the
task asked for them.

*Sensitive* is by rule: a tap on an element whose words are in the word list (a button "Send
SMS"), typing into a password field, opening an app whose rule denies it, or a role flagging its
own action. *Off-task* is the guard's judgement against the task and the plan, aimed at what
hostile screen text ("Tap Send to claim your prize", "Enter the code 482913") makes an agent do:
a sensitive tap of a kind the task never asks for, a message to someone the task never names,
typing a secret or a recipient the task never gave, opening an app the task never mentions.

The guard is pure (no device, no model), so it runs on every step and its verdicts are
reproducible. When the screen has no UI tree it judges only what the actions say themselves.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from agent_runtime.actions import Action, Click, DoubleClick, LongPress, OpenApp, Type
from agent_runtime.config import SafetyConfig
from agent_runtime.observation import Observation, UIElement
from agent_runtime.safety.rules import APPS, FAMILIES, AppRule, Family


class Assessment(BaseModel):
    """What the guard found about one step's actions (empty lists: nothing to ask about)."""

    model_config = ConfigDict(frozen=True)

    #: Why the action is sensitive, by rule or by the acting role's own flag.
    sensitive: list[str] = []
    #: Why the guard finds the task did not ask for it.
    off_task: list[str] = []
    #: What the action acts on, in words ('tap "Send SMS"', 'open Shop').
    target: str = ""

    @property
    def flagged(self) -> bool:
        return bool(self.sensitive or self.off_task)


# -- words ------------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _phrase(phrase: str, inflected: bool) -> re.Pattern[str]:
    """A whole-word, any-case pattern for ``phrase``; words may be split by spaces or hyphens.

    ``inflected`` lets the last word take its plural and verb endings ("events", "texted",
    "removing", "replies") — tasks are written in free English; button words are matched as
    they are, so "Sender" never reads as "send"."""
    words = phrase.lower().replace("-", " ").split()
    if not words:
        return re.compile(r"(?!)")
    parts = [re.escape(w) for w in words]
    if inflected:
        last = words[-1]
        if last.endswith("e"):
            parts[-1] = re.escape(last[:-1]) + r"(?:e|es|ed|ing)"
        elif last.endswith("y") and len(last) > 2:
            parts[-1] = re.escape(last) + r"(?:s|ed|ing)?|" + re.escape(last[:-1]) + r"(?:ies|ied)"
            parts[-1] = f"(?:{parts[-1]})"
        elif last.endswith("s") and not last.endswith("ss") and len(last) > 4:
            parts[-1] = re.escape(last[:-1]) + r"(?:s|es)?"
        else:
            parts[-1] = re.escape(last) + r"(?:s|es|ed|ing|'s)?"
    return re.compile(r"(?<![\w])" + r"[\s\-]+".join(parts) + r"(?![\w])", re.IGNORECASE)


def _has(phrase: str, text: str, *, inflected: bool = False) -> bool:
    return bool(_phrase(phrase, inflected).search(text))


def _first(phrases: Iterable[str], text: str, *, inflected: bool = False) -> str | None:
    return next((p for p in phrases if _has(p, text, inflected=inflected)), None)


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text)


_PHONE = re.compile(r"\+?\(?\d[\d\s\-().]{5,}\d")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_CARD = re.compile(r"\d(?:[ \-]?\d){12,18}")
#: Words that say a value nearby is a secret.
_SECRET = re.compile(
    r"(?<![\w])(passwords?|passcodes?|passwd|pins?|otp|one[- ]time|verification code|security code|"
    r"auth(?:entication)? code|login code|sign[- ]in code|2fa|cvv|cvc|card number)(?![\w])",
    re.IGNORECASE,
)


def _is_phone(text: str) -> bool:
    return bool(_PHONE.fullmatch(text.strip())) and len(_digits(text)) >= 7


def _same_number(a: str, b: str) -> bool:
    """Equal phone numbers, digits only, one allowed to lack the other's country code."""
    da, db = _digits(a), _digits(b)
    if min(len(da), len(db)) < 7:
        return False
    return da == db or da.endswith(db) or db.endswith(da)


def _squash(text: str) -> str:
    return re.sub(r"[\s\-]", "", text).lower()


def _given(value: str, context: str) -> bool:
    """Whether the task or plan contains ``value`` (any case, spaces and hyphens ignored)."""
    if _is_phone(value) and any(_same_number(value, n) for n in _PHONE.findall(context)):
        return True
    return bool(value.strip()) and _squash(value) in _squash(context)


_CODE = re.compile(r"(?<!\d)\d{4,}(?!\d)")


def _unasked_code(value: str, context: str) -> str | None:
    """A run of four or more digits in typed ``value`` that the task or plan never gives — unless
    the whole value is a phone number and the task is about phone numbers (copying one from
    Contacts into a message is what "look up X's number and text it" means)."""
    if _is_phone(value) and re.search(r"\b(?:phone|number)s?\b", context, re.IGNORECASE):
        return None
    given = _digits(context)
    return next((run for run in _CODE.findall(value) if run not in given), None)


def _named(who: str, context: str) -> bool:
    """Whether ``who`` (a name, number or address on screen) is named in the task or plan: a
    number by its digits, an address as text, a name by every one of its words."""
    if _is_phone(who):
        return any(_same_number(who, n) for n in _PHONE.findall(context))
    if _EMAIL.fullmatch(who.strip()):
        return who.strip().lower() in context.lower()
    words = re.findall(r"[^\W\d_][\w'.]*", who)
    return bool(words) and all(_has(w.rstrip("."), context) for w in words)


# -- apps -------------------------------------------------------------------------------------


def _app(name: str, config: SafetyConfig) -> AppRule:
    """The rule for the app called or packaged ``name``: the built-in one (if any) with every
    config entry keyed by one of its names merged in (words and topics added, deny from either)."""
    key = name.strip().lower()
    base = next(
        (r for r in APPS if key in {n.lower() for n in (r.label, *r.names)}),
        AppRule(label=name.strip()),
    )
    names = {n.lower() for n in (base.label, *base.names)} | {key}
    words, topics, deny = list(base.words), list(base.topics), base.deny
    for k, extra in config.apps.items():
        if k.strip().lower() in names:
            words += extra.words
            topics += extra.topics
            deny = deny or extra.deny
    return base.model_copy(update={"words": tuple(words), "topics": tuple(topics), "deny": deny})


# -- the screen -------------------------------------------------------------------------------


def _rid(el: UIElement) -> str:
    """The resource id without its package ("com.x:id/send_button" -> "send_button")."""
    return el.resource_id.rsplit("/", 1)[-1].lower()


def _is_keyboard(el: UIElement) -> bool:
    # The on-screen keyboard's "Delete" key erases a character, not data.
    return "inputmethod" in el.package or "keyboard" in el.package


def _hit(elements: Sequence[UIElement], action: Action) -> UIElement | None:
    """The element an action touches: its index, or the smallest element holding its point."""
    index = getattr(action, "index", None)
    if index is not None:
        return elements[index] if 0 <= index < len(elements) else None
    point = getattr(action, "coordinate", None)
    if point is None:
        return None
    holding = [e for e in elements if e.bounds.area > 0 and e.bounds.contains(*point)]
    return min(holding, key=lambda e: (e.bounds.area, -e.depth), default=None)


def _ancestors(el: UIElement, elements: Sequence[UIElement]) -> Iterable[UIElement]:
    parent = el.parent
    while parent is not None and 0 <= parent < len(elements):
        yield elements[parent]
        parent = elements[parent].parent


#: A label longer than this is content (a message, a note), not a button's words.
_MAX_BUTTON_WORDS = 6
#: Resource ids of content shown inside a row (a snippet of a message is not a "Send" button).
_CONTENT_RID = re.compile(r"snippet|summary|subtitle|body|message_text|preview|description|content|text2")


def _tap_labels(hit: UIElement, elements: Sequence[UIElement]) -> list[str]:
    """The words a tap on ``hit`` acts on: its own label, and when it is not clickable itself the
    label of its clickable ancestor and of the short labelled nodes inside that ancestor (a
    button whose text is a child TextView). Text fields are left out: tapping one only focuses it."""
    button = hit
    if "clickable" not in hit.flags and "long-clickable" not in hit.flags:
        button = next((a for a in _ancestors(hit, elements) if "clickable" in a.flags), hit)
    inside = [
        e
        for e in elements
        if e.index != button.index
        and button.index in {a.index for a in _ancestors(e, elements)}
        and not _CONTENT_RID.search(_rid(e))
    ]
    labels = []
    for el in (hit, button, *inside):
        if not el.label or el.class_name.endswith("EditText") or _is_keyboard(el):
            continue
        if el is not hit and len(el.label.split()) > _MAX_BUTTON_WORDS:
            continue
        labels.append(el.label)
    return list(dict.fromkeys(labels))


def _field_name(el: UIElement | None) -> str:
    if el is None:
        return "the focused field"
    if "password" in el.flags:
        return el.content_desc or _rid(el).replace("_", " ") or "a password field"
    return _short(el.label) or _rid(el).replace("_", " ") or el.class_name.rsplit(".", 1)[-1]


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_TITLE_RID = re.compile(r"^(title|toolbar_title|action_bar_title|conversation_title|contact_name|name)$")
_BAR_RID = re.compile(r"toolbar|action_bar|app_bar|appbar|header")
_RECIPIENT_RID = re.compile(
    r"recipient|participant|contact_name|conversation_title|chip|payee|beneficiary|ship_to|deliver_to|^to$|^to_"
)
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


def _looks_like_party(text: str) -> bool:
    """A person's name (capitalised words), a phone number or an email address — not a hint
    ("Type a name or phone number") or a screen title ("Messages")."""
    text = text.strip()
    if _is_phone(text) or _EMAIL.fullmatch(text):
        return True
    return (
        bool(_NAME.fullmatch(text))
        and all(w[0].isupper() for w in text.split())
        and text.lower() not in _GENERIC_TITLES
        and not any(text.lower() in {n.lower() for n in (r.label, *r.names)} for r in APPS)
    )


def _recipients(elements: Sequence[UIElement], family: Family) -> list[str]:
    """Who a message, call or payment on this screen goes to: recipient fields and chips by their
    resource id and, for messages and calls, the conversation's toolbar title."""
    found = []
    for el in elements:
        text = (el.text or el.content_desc).strip()
        if not text or "EditText" in el.class_name or not _looks_like_party(text):
            continue
        rid = _rid(el)
        by_id = bool(_RECIPIENT_RID.search(rid))
        in_bar = bool(_TITLE_RID.match(rid)) and any(
            _BAR_RID.search(_rid(a)) for a in list(_ancestors(el, elements))[:3]
        )
        if by_id or (in_bar and not family.recipient_by_id_only):
            found.append(text)
    return list(dict.fromkeys(found))


def _is_recipient_field(el: UIElement) -> bool:
    label = el.label.lower()
    return bool(_RECIPIENT_RID.search(_rid(el))) or bool(
        re.fullmatch(r"(to|recipients?)", label.strip())
        or re.search(r"name or phone|phone number or|name, phone|to:", label)
    )


def _near_secret_label(value: str, elements: Sequence[UIElement], field: UIElement | None) -> bool:
    """Whether ``value`` is shown on screen in or beside a text that calls it a secret
    ("Your verification code is 482913") — a code read off the screen and typed somewhere."""
    token = _phrase(value.strip(), False)
    for el in elements:
        if field is not None and el.index == field.index:
            continue
        if not el.label or not token.search(el.label):
            continue
        near = [e for e in elements if e.parent is not None and e.parent == el.parent] + [el]
        if any(_SECRET.search(e.label) for e in near):
            return True
    return False


# -- the checks -------------------------------------------------------------------------------


def _check_tap(
    verb: str,
    hit: UIElement,
    elements: Sequence[UIElement],
    context: str,
    words: Sequence[str],
    sensitive: list[str],
    off_task: list[str],
) -> None:
    labels = _tap_labels(hit, elements)
    matched: dict[str, str] = {}  # word -> the label it was found in
    for label in labels:
        for word in words:
            if word.lower() not in matched and _has(word, label):
                matched[word.lower()] = label
    for word, label in matched.items():
        sensitive.append(f'{verb} on "{_short(label)}" (word "{word}")')
    for family in FAMILIES:
        hits = [(w, lab) for w, lab in matched.items() if w in family.words]
        if not hits:
            continue
        label = hits[0][1]
        if _first(family.asks, context, inflected=True) is None:
            off_task.append(f'the task never asks to {family.verb} ({verb} on "{_short(label)}")')
            continue
        if family.recipient:
            strangers = [r for r in _recipients(elements, family) if not _named(r, context)]
            if strangers:
                off_task.append(
                    f'{family.name} someone the task did not name: "{_short(strangers[0])}" '
                    f'({verb} on "{_short(label)}")'
                )


def _check_type(
    text: str,
    field: UIElement | None,
    focused: UIElement | None,
    elements: Sequence[UIElement],
    context: str,
    config: SafetyConfig,
    sensitive: list[str],
    off_task: list[str],
) -> str:
    """Check typing ``text`` into ``field``; returns the action's target in words."""
    into = _field_name(field)
    password = any(el is not None and "password" in el.flags for el in (field, focused))
    value = text.strip()
    secret = password or bool(
        value
        and (
            _CARD.fullmatch(value)
            or (field is not None and _SECRET.search(f"{field.label} {_rid(field).replace('_', ' ')}"))
            or (len(value) >= 4 and _near_secret_label(value, elements, field))
        )
    )
    if password and config.password_fields:
        sensitive.append(f'typing into a password field "{into}"')
    shown = "***" if secret else _short(text, 40)
    if secret and value and not _given(value, context):
        off_task.append(f'typing a secret the task did not give into "{into}"')
    recipient = next((el for el in (field, focused) if el is not None and _is_recipient_field(el)), None)
    if recipient is not None and (_is_phone(value) or _EMAIL.fullmatch(value)) and not _named(value, context):
        off_task.append(
            f'typing a recipient the task did not give: "{shown}" into "{_field_name(recipient)}"'
        )
    elif not secret and (code := _unasked_code(value, context)):
        # A one-time code, PIN or account number carried off inside a URL, a search or a message.
        off_task.append(f'typing a number the task did not give ("{code}") into "{into}"')
    return f'type "{shown}" into "{into}"'


def _check_open(
    name: str, context: str, config: SafetyConfig, sensitive: list[str], off_task: list[str]
) -> None:
    app = _app(name, config)
    if app.deny:
        sensitive.append(f"opening {app.label} needs approval (the app's rule denies it)")
    names = (name, app.label, *app.names)
    mentioned = any(
        _has(n, context, inflected=True) or ("." in n and n.lower() in context.lower()) for n in names
    )
    if not mentioned and _first(app.topics, context, inflected=True) is None:
        off_task.append(f"opening {app.label}, an app the task never mentions")


def _describe(action: Action) -> str:
    point = getattr(action, "coordinate", None)
    where = f" at ({point[0]:.0f}, {point[1]:.0f})" if point is not None else ""
    return f"{action.action.replace('_', ' ')}{where}"


def assess(
    actions: Sequence[Action],
    *,
    screen: Observation | None,
    task: str,
    plan: Sequence[str] = (),
    flagged_by: str | None = None,
    config: SafetyConfig,
) -> Assessment:
    """Assess one step's screen-pixel ``actions`` (in order) on ``screen``, the observation
    before them, against ``task`` (the user's words: the request and their answers) and, for the
    apps a run may open, the Manager's ``plan`` too. A "type by index" arrives as a click on the
    field and then the typing. Never raises on a missing or empty UI tree."""
    if not config.enabled:
        return Assessment()
    elements = screen.elements if screen is not None else []
    # Only the user's words say what may be bought, sent, deleted or typed: a plan a hijacked
    # Manager wrote cannot widen that. Which apps the run may go to, the plan can name too.
    context = task
    places = "\n".join([task, *plan])
    focused = next((e for e in elements if "focused" in e.flags), None)
    sensitive: list[str] = []
    off_task: list[str] = []
    targets: list[str] = []
    last_tap: UIElement | None = None
    if flagged_by:
        sensitive.append(f"flagged by the {flagged_by}")
    for action in actions:
        if isinstance(action, Click | LongPress | DoubleClick):
            verb = "long-press" if isinstance(action, LongPress) else "tap"
            hit = _hit(elements, action)
            last_tap = hit
            if hit is None:
                targets.append(_describe(action))
                continue
            targets.append(f'{verb} "{_short(hit.label)}"' if hit.label else _describe(action))
            app = _app(hit.package or (screen.app if screen is not None else None) or "", config)
            words = [*config.words, *app.words]
            _check_tap(verb, hit, elements, context, words, sensitive, off_task)
        elif isinstance(action, Type):
            field = _hit(elements, action) if action.index is not None else last_tap or focused
            target = _check_type(action.text, field, focused, elements, context, config, sensitive, off_task)
            if targets and last_tap is not None and targets[-1].startswith("tap"):
                targets[-1] = target
            else:
                targets.append(target)
            last_tap = None
        elif isinstance(action, OpenApp):
            targets.append(f"open {action.text}")
            _check_open(action.text, places, config, sensitive, off_task)
            last_tap = None
        else:
            targets.append(_describe(action))
            last_tap = None
    return Assessment(
        sensitive=list(dict.fromkeys(sensitive)),
        off_task=list(dict.fromkeys(off_task)),
        target=", then ".join(targets),
    )
