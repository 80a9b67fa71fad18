"""The action guard: before a step's actions run, say whether they are sensitive and whether the
task asked for them.

*Sensitive* is by rule: a tap on an element whose words are in the word list (a button "Send
SMS"), typing into a password field, opening an app whose rule denies it, or a role flagging its
own action. *Off-task* is the guard's judgement against the task and the plan, aimed at what
hostile screen text ("Tap Send to claim your prize", "Enter the code 482913") makes an agent do:
a sensitive tap of a kind the task never asks for, a message to someone the task never names,
typing a secret or a recipient the task never gave, opening an app the task never mentions,
flipping a switch in one, or doing again what the person already refused in this run.

Three rules keep it honest against attacks it was not tuned on:

* **one normal form** — every comparison goes through :mod:`agent_runtime.safety.normalize`
  (zero-width characters, split digits, look-alike numbers);
* **the effect, not the route** — a tap on a launcher icon, a recents card or a shortcut menu is
  judged as opening that app, a switch as a change to its app (:mod:`agent_runtime.safety.screen`);
* **only positive requests license** — a verb the user negated, asked about, or quoted licenses
  nothing, in English, Spanish, German, French or Chinese (:mod:`agent_runtime.safety.language`).

The guard is pure (no device, no model), so it runs on every step and its verdicts are
reproducible. When the screen has no UI tree it judges only what the actions say themselves.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from agent_runtime.actions import Action, Click, DoubleClick, LongPress, OpenApp, Type
from agent_runtime.config import SafetyConfig
from agent_runtime.observation import Observation, UIElement
from agent_runtime.safety import recipients
from agent_runtime.safety import screen as ui
from agent_runtime.safety.language import ASKS, TOPICS, Reading, has_stem, read_task, roles
from agent_runtime.safety.normalize import (
    digit_runs,
    digits,
    fold,
    is_phone,
    normalize,
    phone_numbers,
    same_number,
)
from agent_runtime.safety.recipients import Contacts
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
    #: What the actions would do, whatever their route ("open Clock", "buy"): a person's refusal
    #: of one is kept for the rest of the run (see ``refused`` in :func:`assess`).
    effects: list[str] = []
    #: The effects the person already refused earlier in this run.
    refused: list[str] = []

    @property
    def flagged(self) -> bool:
        return bool(self.sensitive or self.off_task)


# -- words ------------------------------------------------------------------------------------

#: Word boundaries that treat Chinese characters as separators ("给Alice发短信" names Alice).
_BEFORE = r"(?<![^\W\u3000-\u9fff\uff00-\uffef])"
_AFTER = r"(?![^\W\u3000-\u9fff\uff00-\uffef])"


@lru_cache(maxsize=4096)
def _phrase(phrase: str, inflected: bool) -> re.Pattern[str]:
    """A whole-word pattern for ``phrase`` on folded text; words may be split by spaces or hyphens.

    ``inflected`` lets the last word take its plural and verb endings ("events", "texted",
    "removing", "replies") — tasks are written in free English; button words are matched as
    they are, so "Sender" never reads as "send"."""
    words = fold(phrase).replace("-", " ").split()
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
    return re.compile(_BEFORE + r"[\s\-]+".join(parts) + _AFTER)


def _has(phrase: str, folded: str, *, inflected: bool = False) -> bool:
    """Whether ``folded`` (already folded) has ``phrase`` as whole words."""
    return bool(_phrase(phrase, inflected).search(folded))


def _first(phrases: Iterable[str], folded: str, *, inflected: bool = False) -> str | None:
    return next((p for p in phrases if _has(p, folded, inflected=inflected)), None)


#: Words that say a value nearby is a secret.
_SECRET = re.compile(
    r"(?<![\w])(passwords?|passcodes?|passwd|pins?|otp|one[- ]time|verification code|security code|"
    r"auth(?:entication)? code|login code|sign[- ]in code|2fa|cvv|cvc|card number|"
    r"contrasena|codigo de verificacion|passwort|kennwort|bestatigungscode|mot de passe|"
    r"code de verification)(?![\w])|密码|验证码",
)
_CARD = re.compile(r"\d(?:[ \-]?\d){12,18}")
#: Task words about phone numbers: copying one the task points at is what it asks for.
_NUMBERS_TOPIC = re.compile(r"\b(?:phone|numbers?|telefono|nummer|telefonnummer|numero)\b|电话|号码")


@dataclass(frozen=True)
class _Context:
    """The task as the checks read it: the user's words (:class:`Reading`), for which apps the
    run may open the user's words and the plan (folded), and what the device says about who a
    name reaches (:class:`~agent_runtime.safety.recipients.Contacts`, None: nothing)."""

    words: Reading
    places: str
    contacts: Contacts | None = None

    @property
    def roles(self) -> tuple[str, ...]:
        """The device records whose people the user names by role ("who texted me last")."""
        return roles(self.words.positive)


def _given(value: str, context: _Context) -> bool:
    """Whether the task contains ``value``: a phone number whole, anything else as text with
    case, spaces, separators and invisible characters ignored."""
    if is_phone(value):
        return any(same_number(value, n) for n in phone_numbers(context.words.full))
    squash = re.sub(r"[\s\-]", "", fold(value))
    return bool(squash) and squash in re.sub(r"[\s\-]", "", context.words.full)


def _unasked_code(value: str, context: _Context) -> str | None:
    """A number of four or more digits in typed ``value`` (digits kept together across
    separators: ``48-29-13`` is 482913) that the task never gives — unless the whole value is a
    phone number and the task is about phone numbers (copying one from Contacts into a message
    is what "look up X's number and text it" means)."""
    if is_phone(value) and _NUMBERS_TOPIC.search(context.words.full):
        return None
    given = digits(context.words.full)
    return next((run for run in digit_runs(value) if run not in given), None)


def _named(who: str, context: _Context) -> bool:
    """Whether ``who`` (a name, number or address on screen) is named in what the user asked
    for (not in what they forbade): a number whole, an address as text, a name by every word."""
    text = context.words.positive
    if is_phone(who):
        return any(same_number(who, n) for n in phone_numbers(text))
    if ui.is_email(who):
        return fold(who.strip()) in text
    words = re.findall(r"[^\W\d_][\w'.]*", normalize(who))
    return bool(words) and all(_has(w.rstrip("."), text) for w in words)


def _asked(family: Family, context: _Context) -> str | None:
    """The user's word that asks for ``family`` (a positive request only), or None."""
    text = context.words.licensing
    found = _first(family.asks, text, inflected=True)
    return found or next((w for w in ASKS.get(family.name, ()) if has_stem(w, text)), None)


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


def _on_task(app: AppRule, name: str, context: _Context) -> bool:
    """Whether the task or plan mentions ``app``: by a name, a package, or a topic word."""
    places = context.places
    names = (name, app.label, *app.names)
    if any(_has(n, places, inflected=True) or ("." in n and n.lower() in places) for n in names):
        return True
    if _first(app.topics, places, inflected=True) is not None:
        return True
    return any(has_stem(w, places) for w in TOPICS.get(app.label, ()))


#: Packages that are no app of their own: the launcher, the system UI, keyboards.
_SHELL = re.compile(r"launcher|quickstep|systemui|inputmethod|keyboard|^android$")


# -- the checks -------------------------------------------------------------------------------


@dataclass
class _Found:
    sensitive: list[str]
    off_task: list[str]
    effects: list[str]


def _check_effect(effect: str, refused: Sequence[str], found: _Found) -> None:
    found.effects.append(effect)
    if effect in refused:
        found.off_task.append(f"the person refused to {effect} earlier in this run")


def _check_tap(
    verb: str,
    hit: UIElement,
    elements: Sequence[UIElement],
    context: _Context,
    words: Sequence[str],
    refused: Sequence[str],
    found: _Found,
) -> None:
    labels = ui.tap_labels(hit, elements)
    matched: dict[str, str] = {}  # word -> the label it was found in
    for label in labels:
        folded = fold(label)
        for word in words:
            if word.lower() not in matched and _has(word, folded):
                matched[word.lower()] = label
    for word, label in matched.items():
        found.sensitive.append(f'{verb} on "{_short(label)}" (word "{word}")')
    for family in FAMILIES:
        hits = [(w, lab) for w, lab in matched.items() if w in family.words]
        if not hits:
            continue
        label = hits[0][1]
        _check_effect(family.verb, refused, found)
        if _asked(family, context) is None:
            found.off_task.append(f'the task never asks to {family.verb} ({verb} on "{_short(label)}")')
            continue
        if family.recipient:
            # Who it reaches once the device resolves the address, not the name on the screen.
            why = next(
                (
                    reason
                    for who in ui.recipients(elements, family)
                    if (
                        reason := recipients.judge(
                            who,
                            named=_named(who, context),
                            words=context.words.positive,
                            contacts=context.contacts,
                            roles=context.roles,
                        )
                    )
                ),
                None,
            )
            if why:
                found.off_task.append(f'{family.name} {why} ({verb} on "{_short(label)}")')


#: Buttons that commit an edit: no sensitive word, but state changes all the same.
_COMMIT = ("save", "done", "apply", "update", "confirm", "submit", "ok")


def _check_change(
    what: str, app_name: str, context: _Context, config: SafetyConfig, refused: Sequence[str], found: _Found
) -> None:
    """A switch flipped or an edit saved in an app the task never mentions changes state the
    task never asked for (``what`` says which, in words)."""
    if not app_name or _SHELL.search(app_name):
        return
    app = _app(app_name, config)
    _check_effect(f"change something in {app.label}", refused, found)
    if not _on_task(app, app_name, context):
        found.off_task.append(f"{what} in {app.label}, an app the task never mentions")


def _field_name(el: UIElement | None) -> str:
    if el is None:
        return "the focused field"
    if "password" in el.flags:
        return el.content_desc or ui.rid(el).replace("_", " ") or "a password field"
    return _short(el.label) or ui.rid(el).replace("_", " ") or el.class_name.rsplit(".", 1)[-1]


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _near_secret_label(value: str, elements: Sequence[UIElement], field: UIElement | None) -> bool:
    """Whether ``value`` is shown on screen in or beside a text that calls it a secret
    ("Your verification code is 482913") — a code read off the screen and typed somewhere,
    however its digits were split."""
    wanted = digits(value) if len(digits(value)) >= 4 else None
    token = _phrase(value.strip(), False)
    for el in elements:
        if field is not None and el.index == field.index or not el.label:
            continue
        shown = wanted in digit_runs(el.label) if wanted else bool(token.search(fold(el.label)))
        if not shown:
            continue
        near = [e for e in elements if e.parent is not None and e.parent == el.parent] + [el]
        if any(_SECRET.search(fold(e.label)) for e in near):
            return True
    return False


def _check_type(
    text: str,
    field: UIElement | None,
    focused: UIElement | None,
    elements: Sequence[UIElement],
    context: _Context,
    config: SafetyConfig,
    found: _Found,
    owner: str = "",
) -> str:
    """Check typing ``text`` into ``field`` of the app ``owner`` (a package or label; empty:
    unknown); returns the action's target in words."""
    into = _field_name(field)
    password = any(el is not None and "password" in el.flags for el in (field, focused))
    value = normalize(text).strip()
    secret = password or bool(
        value
        and (
            _CARD.fullmatch(value)
            or (
                field is not None and _SECRET.search(fold(f"{field.label} {ui.rid(field).replace('_', ' ')}"))
            )
            or (len(value) >= 4 and _near_secret_label(value, elements, field))
        )
    )
    if password and config.password_fields:
        found.sensitive.append(f'typing into a password field "{into}"')
    shown = "***" if secret else _short(text, 40)
    if secret and value and not _given(value, context):
        found.off_task.append(f'typing a secret the task did not give into "{into}"')
    recipient = next((el for el in (field, focused) if el is not None and ui.is_recipient_field(el)), None)
    if (
        recipient is not None
        and (is_phone(value) or ui.is_email(value))
        and not _named(value, context)
        and not recipients.recorded(value, context.roles, context.contacts)
    ):
        found.off_task.append(
            f'typing a recipient the task did not give: "{shown}" into "{_field_name(recipient)}"'
        )
    elif not secret and _app(owner, config).outbound and (code := _unasked_code(value, context)):
        # A one-time code, PIN or account number carried off inside a URL, a search or a message.
        found.off_task.append(f'typing a number the task did not give ("{code}") into "{into}"')
    return f'type "{shown}" into "{into}"'


def _check_open(
    name: str, context: _Context, config: SafetyConfig, refused: Sequence[str], found: _Found
) -> None:
    app = _app(name, config)
    _check_effect(f"open {app.label}", refused, found)
    if app.deny:
        found.sensitive.append(f"opening {app.label} needs approval (the app's rule denies it)")
    if not _on_task(app, name, context):
        found.off_task.append(f"opening {app.label}, an app the task never mentions")


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
    refused: Sequence[str] = (),
    contacts: Contacts | None = None,
    config: SafetyConfig,
) -> Assessment:
    """Assess one step's screen-pixel ``actions`` (in order) on ``screen``, the observation
    before them, against ``task`` (the user's words: the request and their answers) and, for the
    apps a run may open, the Manager's ``plan`` too. ``refused`` are the effects (see
    :attr:`Assessment.effects`) a person refused earlier in the run: the same effect by any route
    is off-task. ``contacts`` says who a name reaches on the device (a send is judged by the
    number it resolves to; see :mod:`agent_runtime.safety.recipients`). A "type by index"
    arrives as a click on the field and then the typing. Never raises on a missing or empty UI
    tree."""
    if not config.enabled:
        return Assessment()
    elements = screen.elements if screen is not None else []
    # Only the user's words say what may be bought, sent, deleted or typed: a plan a hijacked
    # Manager wrote cannot widen that. Which apps the run may go to, the plan can name too.
    words = read_task(task)
    context = _Context(words=words, places=fold("\n".join([task, *plan])), contacts=contacts)
    focused = next((e for e in elements if "focused" in e.flags), None)
    found = _Found(sensitive=[], off_task=[], effects=[])
    targets: list[str] = []
    last_tap: UIElement | None = None
    if flagged_by:
        found.sensitive.append(f"flagged by the {flagged_by}")
    for action in actions:
        if isinstance(action, Click | LongPress | DoubleClick):
            verb = "long-press" if isinstance(action, LongPress) else "tap"
            hit = ui.hit(elements, action)
            last_tap = hit
            if hit is None:
                targets.append(_describe(action))
                continue
            targets.append(f'{verb} "{_short(hit.label)}"' if hit.label else _describe(action))
            owner = hit.package or (screen.app if screen is not None else None) or ""
            app = _app(owner, config)
            _check_tap(verb, hit, elements, context, [*config.words, *app.words], refused, found)
            if not isinstance(action, LongPress) and (opened := ui.launched_app(hit, elements)):
                # The effect, not the route: an icon, a recents card or Open opens the app.
                _check_open(opened, context, config, refused, found)
            elif ui.is_toggle(hit, elements):
                _check_change(
                    f'changing "{_short(ui.toggle_name(hit, elements))}"',
                    owner,
                    context,
                    config,
                    refused,
                    found,
                )
            elif commit := next(
                (lab for lab in ui.tap_labels(hit, elements) if _first(_COMMIT, fold(lab))), None
            ):
                _check_change(f'saving with "{_short(commit)}"', owner, context, config, refused, found)
        elif isinstance(action, Type):
            field = ui.hit(elements, action) if action.index is not None else last_tap or focused
            into = (field.package if field is not None else "") or (screen.app if screen is not None else "")
            target = _check_type(action.text, field, focused, elements, context, config, found, into or "")
            if targets and last_tap is not None and targets[-1].startswith("tap"):
                targets[-1] = target
            else:
                targets.append(target)
            last_tap = None
        elif isinstance(action, OpenApp):
            targets.append(f"open {action.text}")
            _check_open(action.text, context, config, refused, found)
            last_tap = None
        else:
            targets.append(_describe(action))
            last_tap = None
    effects = list(dict.fromkeys(found.effects))
    return Assessment(
        sensitive=list(dict.fromkeys(found.sensitive)),
        off_task=list(dict.fromkeys(found.off_task)),
        target=", then ".join(targets),
        effects=effects,
        refused=[e for e in effects if e in refused],
    )
