"""One normal form for every comparison the action guard makes.

Hostile text wins when the guard compares one spelling and the device acts on another: a code
typed as ``48-29-13`` or with a zero-width space between its digits, a recipient number whose
digits are split by U+200B, ``+91 555-013-4567`` passing for ``+1 555-013-4567`` by its last
digits. So the guard never compares raw strings: text goes through :func:`normalize` (NFKC,
format characters dropped, every dash a hyphen, every digit an ASCII digit), words through
:func:`fold` (also case and accents), digit strings through :func:`digit_runs` (digits kept
together across separators) and phone numbers through :func:`phone_key` (whole, country code
included, never by suffix).
"""

from __future__ import annotations

import re
import unicodedata

#: The country code a number written without one is taken to have (SimPhone is a US phone).
DEFAULT_COUNTRY = "1"


def normalize(text: str) -> str:
    """``text`` as the device would show it: NFKC, format characters (category Cf: zero-width
    spaces and joiners, bidi marks, soft hyphens) removed, every dash a ``-``, every space and
    line separator a plain one, every decimal digit an ASCII digit.

    >>> normalize("4\u200b8\u200b2\u20139\uff11\u00a03")
    '482-91 3'
    """
    out = []
    for ch in unicodedata.normalize("NFKC", text):
        cat = unicodedata.category(ch)
        if cat == "Cf":
            continue
        if cat == "Pd":
            out.append("-")
        elif cat == "Zs":
            out.append(" ")
        elif cat in ("Zl", "Zp"):
            out.append("\n")
        elif cat == "Nd":
            out.append(str(unicodedata.decimal(ch)))
        else:
            out.append(ch)
    return "".join(out)


_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})


def fold(text: str) -> str:
    """:func:`normalize`, then case and accents folded away, for matching words.

    >>> fold("Envía un MENSAJE a Zoë")
    'envia un mensaje a zoe'
    """
    text = normalize(text).casefold().translate(_APOSTROPHES)
    decomposed = unicodedata.normalize("NFD", text)
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if unicodedata.category(c) != "Mn"))


def digits(text: str) -> str:
    """Every digit of ``text``, in order, nothing else."""
    return re.sub(r"\D", "", normalize(text))


#: Separators that may split one number: at most three characters, no letter, digit or line break.
_GAP = re.compile(r"[^\w\n]{0,3}")


def digit_runs(text: str, minimum: int = 4) -> list[str]:
    """The digit strings in ``text`` with at least ``minimum`` digits, separators dropped.

    Digit groups split by separators join into one number only where each group stands apart
    from letters: a digit glued to a word ("mp3", "A4", "330KB") belongs to that word, so
    "card.mp3: 330 KB" holds no "3330". A glued group is still a run of its own ("code482913").

    >>> digit_runs("code=48-29-13 or 4 8 2 9, call at 2:45")
    ['482913', '4829']
    """
    value = normalize(text)

    def glued(m: re.Match[str]) -> bool:
        before = value[m.start() - 1] if m.start() else ""
        after = value[m.end()] if m.end() < len(value) else ""
        return before.isalpha() or after.isalpha()

    runs: list[str] = []
    last: re.Match[str] | None = None
    for group in re.finditer(r"\d+", value):
        joins = (
            last is not None
            and not glued(last)
            and not glued(group)
            and _GAP.fullmatch(value, last.end(), group.start()) is not None
        )
        if joins:
            runs[-1] += group.group()
        else:
            runs.append(group.group())
        last = group
    return [r for r in runs if len(r) >= minimum]


_PHONE = re.compile(r"(?:\+|00)?\(?\d[\d\s\-().]{5,}\d")


def is_phone(text: str) -> bool:
    """Whether the whole of ``text`` is written like a phone number (seven digits or more)."""
    value = normalize(text).strip()
    return bool(_PHONE.fullmatch(value)) and len(digits(value)) >= 7


def phone_numbers(text: str) -> list[str]:
    """The phone numbers written in ``text`` (normalized first)."""
    return [m.group() for m in _PHONE.finditer(normalize(text)) if len(digits(m.group())) >= 7]


def phone_key(text: str) -> str:
    """The number a phone would dial, for comparing numbers whole: ``+`` and every digit with
    its country code, :data:`DEFAULT_COUNTRY` for a ten-digit national number, and a shorter
    local number as its bare digits (equal only to the same local number).

    >>> phone_key("(555) 013-4567"), phone_key("+91 555-013-4567"), phone_key("013-4567")
    ('+15550134567', '+915550134567', '0134567')
    """
    value = normalize(text).strip()
    number = digits(value)
    if value.startswith("+"):
        return "+" + number
    if value.startswith("00"):
        return "+" + number[2:]
    if len(number) == 10:
        return f"+{DEFAULT_COUNTRY}{number}"
    if len(number) == 10 + len(DEFAULT_COUNTRY) and number.startswith(DEFAULT_COUNTRY):
        return "+" + number
    return number


def same_number(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are the same phone number, compared whole (never by suffix)."""
    return is_phone(a) and is_phone(b) and phone_key(a) == phone_key(b)
