"""Hybrid retrieval: Okapi BM25 over the stored chunks, fused with the dense ranking by RRF.

MiniLM alone ranks by overall meaning, so two notes that are *about* the same thing (an alarm
that rings in the morning, a Do-Not-Disturb schedule that keeps the phone quiet until the
morning) score alike, and the one sharing the query's mood can win over the one sharing its
point. A lexical ranking rewards the rare words the two share with the query instead ("alarm",
"snooze", "timer"), so it fails in other places. Reciprocal rank fusion combines the two
orderings without calibrating their scores against each other: each list contributes
``1 / (k + rank)`` for every document it ranks, and documents are sorted by the sum.

References: S. Robertson and H. Zaragoza, "The Probabilistic Relevance Framework: BM25 and
Beyond" (2009) for BM25; G. V. Cormack, C. L. A. Clarke and S. Büttcher, "Reciprocal Rank
Fusion outperforms Condorcet and individual Rank Learning Methods", SIGIR 2009, for RRF and its
constant ``k = 60``.

Measured on the labelled paraphrase set (``benchmarks/memory.py``: 56 questions written to share
few words with the 28 notes that answer them), fusion *lowers* top-1 from 0.857 (dense) to 0.625
and MRR from 0.920 to 0.751: when a question avoids the note's words, BM25 mostly ranks the notes
that share its incidental words ("ring", "morning", "phone") and RRF gives that ranking the same
vote as the dense one. So fusion is not the default; it is offered as ``mode="hybrid"``, for
keyword-style queries (exact setting names, app names, error texts).

Sentence max-sim (``mode="maxsim"``, the store's default) is what did beat dense: a paraphrased
question usually restates *one* sentence of a note, and the whole-note vector averages that
sentence with the rest. So each sentence of a chunk gets its own vector too (stored beside the
chunks, pointing to them), and a chunk ranks by ``max(cos(q, chunk), max_s cos(q, sentence s))``.
Taking the max never ranks a chunk below its own whole-text similarity, so the whole-note
meaning still counts; a sentence only helps when it matches better. Chosen on the dev half of
the set (the first question per note), it measured top-1 0.893 / MRR 0.940 on the held-out half
against dense's 0.857 / 0.929 (all 56: 0.893 / 0.944 vs 0.857 / 0.920) — one more question right
out of 28, a small gain on a small set, not a large one. Sentences embedded *with* the heading
path scored the same on dev but lost on test (0.786), so the sentence text is embedded bare.

Everything here is pure Python over token lists; :mod:`agent_runtime.memory.store` builds the
index from a collection and keeps it until the collection changes.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

#: BM25 term-frequency saturation and length normalisation (the usual defaults).
K1 = 1.5
B = 0.75
#: The RRF constant from Cormack et al. (2009): damps the weight of the very first ranks.
RRF_K = 60

_WORD = re.compile(r"[a-z0-9]+")
#: A sentence ends at ``.``, ``!`` or ``?`` followed by white space, or at a blank line.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")
#: Function words that carry no topic; dropping them keeps "at"/"the" from deciding ties.
STOPWORDS = frozenset(
    "a an the and or of to in on at for with from by into onto my me i you your it its this that these "
    "those is are was be been do does did so as up can could would should will just how what when where "
    "which who want need".split()
)


def _stem(word: str) -> str:
    """A deliberately light stemmer: plurals and third-person ``-s`` only (alarms → alarm).

    Heavier stemming (``-ing``, ``-ed``) merges words that mean different things in phone
    settings ("ringing" vs "ring" is fine, "setting" vs "set" is not), and paraphrases are the
    dense ranking's job anyway.
    """
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens without stopwords, lightly stemmed.

    >>> tokenize("Set the Alarms: 6:30 in the morning")
    ['set', 'alarm', '6', '30', 'morning']
    """
    return [_stem(w) for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


class BM25:
    """Okapi BM25 over a fixed list of tokenised documents (an inverted index; scoring is sparse).

    ``score(q, d) = Σ_{t ∈ q} idf(t) · tf(t, d) · (k1 + 1) / (tf(t, d) + k1 · (1 − b + b · |d| / avgdl))``
    with ``idf(t) = ln(1 + (N − n(t) + 0.5) / (n(t) + 0.5))`` — the Lucene form, which stays
    positive for terms in more than half of the documents. Each distinct query term counts once.
    """

    def __init__(self, documents: Sequence[Sequence[str]], k1: float = K1, b: float = B) -> None:
        self.k1, self.b = k1, b
        self.n = len(documents)
        self.lengths = [len(d) for d in documents]
        self.avgdl = (sum(self.lengths) / self.n) if self.n else 0.0
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for index, doc in enumerate(documents):
            for term, tf in Counter(doc).items():
                self.postings.setdefault(term, []).append((index, tf))

    def idf(self, term: str) -> float:
        df = len(self.postings.get(term, ()))
        return math.log(1.0 + (self.n - df + 0.5) / (df + 0.5))

    def scores(self, query: Sequence[str]) -> dict[int, float]:
        """Document index → score, for the documents sharing at least one term with ``query``."""
        out: dict[int, float] = {}
        if not self.avgdl:
            return out
        for term in dict.fromkeys(query):
            postings = self.postings.get(term)
            if not postings:
                continue
            idf = self.idf(term)
            for index, tf in postings:
                norm = self.k1 * (1.0 - self.b + self.b * self.lengths[index] / self.avgdl)
                out[index] = out.get(index, 0.0) + idf * tf * (self.k1 + 1.0) / (tf + norm)
        return out

    def top(self, query: Sequence[str], n: int) -> list[int]:
        """The indices of the ``n`` best-scoring documents, best first (ties: earlier document)."""
        scored = self.scores(query)
        return sorted(scored, key=lambda i: (-scored[i], i))[:n]


def rrf(rankings: Iterable[Sequence[str]], k: int = RRF_K) -> dict[str, float]:
    """Reciprocal rank fusion: id → ``Σ 1 / (k + rank)`` over the rankings (rank 1 = best).

    >>> sorted(rrf([["a", "b"], ["b", "c"]]).items())
    [('a', 0.01639344262295082), ('b', 0.03252247488101534), ('c', 0.016129032258064516)]
    """
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, 1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + rank)
    return fused


def sentences(text: str, heading: str = "") -> list[str]:
    r"""The sentences of a chunk's body, each on one line; the leading heading-path line is dropped.

    Lines wrapped inside a sentence are joined, so a sentence broken across two lines of a
    Markdown file is still one sentence. The heading is dropped because sentences embedded with
    it measured worse on held-out questions (see the module docstring).

    >>> sentences("Clock > Alarms\nTap the + button.\nPick the\nhour. Tap OK!", "Clock > Alarms")
    ['Tap the + button.', 'Pick the hour.', 'Tap OK!']
    """
    lines = text.split("\n")
    if heading and lines and lines[0].strip() == heading.strip():
        lines = lines[1:]
    body = "\n".join(lines)
    parts = (" ".join(p.split()) for p in _SENTENCE_END.split(body))
    return [p for p in parts if p]


def max_sim(whole: Mapping[str, float], parts: Iterable[tuple[str, float]]) -> dict[str, float]:
    """Record id → the best of its whole-text cosine and its parts' (``(parent id, cosine)`` pairs).

    A record with no part keeps its whole-text cosine; a part never lowers its record's score.

    >>> max_sim({"alarm": 0.6, "dnd": 0.8}, [("alarm", 0.96), ("dnd", -0.28)])
    {'alarm': 0.96, 'dnd': 0.8}
    """
    out = dict(whole)
    for parent, cosine in parts:
        out[parent] = max(out.get(parent, cosine), cosine)
    return out
