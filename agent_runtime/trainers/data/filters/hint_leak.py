"""Hint leaks: reasoning that restates the answer a hint handed it.

Hint-guided sampling (:mod:`agent_runtime.trainers.data.hints`) shows the model the right answer
and keeps its reasoning only when that reasoning stands on its own. The trained model never sees
a hint, so a target whose reasoning leans on one — "the demonstration says the right next action
is …", "as suggested, tap [5]", "the right move is to tap [5]" — teaches it to assert answers it
was never given. Checking for the word "hint" alone misses nearly all of these, so
:func:`hint_leak` compares the reasoning against the hint itself, on three signals:

* ``reference`` — the reasoning names an outside source of the answer (a hint, a demonstration,
  a suggestion or recommendation, something it was told or given, "according to …");
* ``assertion`` — it asserts a known right answer ("the correct action is", "the right move",
  "the expected next step");
* ``copied`` — it repeats the hint's own words: a run of words (3 of the answer, 4 of the
  hint's framing) that is in the hint but nowhere in the unhinted prompt, so naming what the
  screen or the request shows is never counted, copying what only the hint said always is.

A leak is a reason string (for counts and logs); ``None`` means the reasoning is clean. The
check errs towards rejecting: a false alarm costs one sample, a missed leak teaches the model to
cite answers it cannot have.
"""

from __future__ import annotations

import re

__all__ = ["hint_leak", "words"]

_REFERENCE = re.compile(
    r"\bhint(?:s|ed|ing)?\b|\bdemonstrat\w*|\bdemos?\b|\bsuggest\w*|\brecommend\w*|\badvi[cs]\w*"
    r"|\bguidance\b|\bground[- ]truth\b|\bthe expert\b|\baccording to\b"
    r"|\b(?:i|we)(?:\s+(?:was|were|am|are|have|had)(?:\s+been)?)?\s+(?:told|given|shown|instructed)\b"
    r"|\bas (?:indicated|instructed|advised|hinted|noted above|stated above|given|provided)\b"
    r"|\b(?:given|provided|supplied|reference|known)\s+(?:answer|action|solution|move|step|subgoal|plan)s?\b",
    re.IGNORECASE,
)
_ASSERTION = re.compile(
    r"\b(?:right|correct|expected|intended|proper|required|prescribed|ideal)\s+(?:next\s+)?"
    r"(?:move|action|step|subgoal|answer|choice|option|plan|response|solution)s?\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W_]+")
#: Words of the answer, and of the hint's framing, that a copied run is made of.
_ANSWER_RUN, _FRAMING_RUN = 3, 4


def words(text: str) -> list[str]:
    """Lower-case words and numbers of ``text`` (punctuation, brackets and JSON syntax dropped).

    >>> words('tap [5]: {"action": "click", "index": 5}')
    ['tap', '5', 'action', 'click', 'index', '5']
    """
    return _WORD.findall(text.casefold())


def _runs(tokens: list[str], n: int) -> set[tuple[str, ...]]:
    n = min(n, len(tokens))
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)} if n >= 2 else set()


def hint_leak(reasoning: str, hint: str, *, answer: str = "", prompt: str = "") -> str | None:
    """Why ``reasoning`` restates ``hint`` (module docstring), or None when it does not.

    ``answer`` is the hinted answer as the hint words it (an action's JSON, a subgoal), so a
    short answer is matched at its own length; ``prompt`` is the text of the unhinted prompt,
    whose words never count as copied.

    >>> hint = 'Hint: the right next action is {"action": "click", "index": 5}.'
    >>> hint_leak("Target: Clock [5].", hint, answer='{"action": "click", "index": 5}')
    >>> hint_leak("The right move is to tap [5].", hint)
    "assertion: 'right move'"
    >>> hint_leak("So I click index 5.", hint, answer='{"action": "click", "index": 5}')
    "copied: 'click index 5'"
    """
    for name, pattern in (("reference", _REFERENCE), ("assertion", _ASSERTION)):
        found = pattern.search(reasoning)
        if found:
            return f"{name}: {found.group(0)!r}"
    said = words(reasoning)
    seen = words(prompt)
    answer_words = words(answer)
    framing = words(hint.replace(answer, " ")) if answer else words(hint)
    for tokens, n in ((answer_words, _ANSWER_RUN), (framing, _FRAMING_RUN)):
        width = min(n, len(tokens))
        if width < 2:
            continue
        copied = (_runs(tokens, n) - _runs(seen, width)) & _runs(said, width)
        if copied:
            return f"copied: {' '.join(min(copied))!r}"
    return None
