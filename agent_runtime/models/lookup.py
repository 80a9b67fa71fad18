"""Draft tokens for lookup decoding: the continuation of the last few tokens where they occurred before.

A role's reply copies much of what it has seen: the subgoal into "The current subgoal is …", an
element's text and index into the action, the plan of the previous Manager call into the next, and
the fixed headings every reply of that role repeats. When the last ``n`` tokens of a sequence occurred
earlier — in its own prompt and reply, or in the replies the batcher finished recently — the tokens
that followed them there are a cheap guess at what comes next. The batcher feeds the guess to the
model in one forward and keeps the tokens the model itself picks (greedy), so the reply is the same
token for token, in fewer forwards (prompt lookup decoding; vLLM's n-gram speculator and llama.cpp's
lookup decoding do the same).

Pure Python, no torch.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

#: n-gram lengths a draft is looked up by, longest first (a 1-token match guesses too often wrong).
NGRAMS = (3, 2)
#: Finished replies kept to draft from (the most recent).
POOL = 8
#: Prompt tokens kept before a finished reply, so the reply's first tokens can be drafted too.
REPLY_CONTEXT = max(NGRAMS)


class NgramIndex:
    """A token list and, for each n-gram of :data:`NGRAMS`, where the token after its latest
    occurrence is. The list's own last n-grams have no follower yet, so a lookup of the list's
    suffix finds the occurrence before it."""

    def __init__(self, tokens: Iterable[int] = ()) -> None:
        self.tokens: list[int] = []
        self._after: dict[tuple[int, ...], int] = {}
        self.extend(tokens)

    def extend(self, tokens: Iterable[int]) -> None:
        for token in tokens:
            end = len(self.tokens)  # the new token's position: it follows the n-grams ending before it
            for n in NGRAMS:
                if end >= n:
                    self._after[tuple(self.tokens[end - n : end])] = end
            self.tokens.append(token)

    def follower(self, key: tuple[int, ...], k: int) -> list[int]:
        """Up to ``k`` tokens that followed ``key``'s latest occurrence ([] if it has none)."""
        at = self._after.get(key)
        return [] if at is None else self.tokens[at : at + k]


class Drafts:
    """The replies the batcher finished recently, to draft from beside a sequence's own tokens."""

    def __init__(self, size: int = POOL) -> None:
        self._pool: deque[NgramIndex] = deque(maxlen=size)

    def remember(self, prompt: list[int], reply: list[int]) -> None:
        self._pool.appendleft(NgramIndex([*prompt[-REPLY_CONTEXT:], *reply]))

    def draft(self, own: NgramIndex, k: int) -> list[int]:
        """Up to ``k`` tokens guessed to follow ``own``: its longest suffix n-gram that occurred
        before, in its own tokens first, then in the most recent replies."""
        if k <= 0:
            return []
        for n in NGRAMS:
            if len(own.tokens) < n:
                continue
            key = tuple(own.tokens[-n:])
            for index in (own, *self._pool):
                guess = index.follower(key, k)
                if guess:
                    return guess
        return []
