"""Continuous batching: concurrent requests decoded together, one forward per token.

Callers (roles of several runs, episodes of an eval, rollouts of a group, requests to
``agent-runtime serve``) each block in :meth:`Batcher.generate` on their own thread; one
scheduler thread owns the :class:`~agent_runtime.models.decoder.SlotDecoder` and loops:

1. admit waiting requests while the batch has room — each is prefilled into a cache row, from
   the longest prefix a finished sequence left in a free row or a running sequence's prompt holds
   (the same role's instructions, the same task's prompt in a rollout group: requests that
   arrive together prefill what they share once), and a request for ``n`` choices is copied into
   ``n`` rows;
2. decode one token for every running sequence in one forward;
3. sample each sequence with its own parameters (temperature, top-p, top-k, suppressed tokens,
   its own seeded generator, so a request's sample does not depend on what else is in the batch)
   and retire those that ended (end token, ``max_tokens``, a stop string, a cancelled run),
   answering their callers.

A greedy sequence decoded alone takes several tokens per forward where it can (lookup decoding,
:mod:`agent_runtime.models.lookup`): the tokens that followed its last few tokens where they
occurred before — in its own prompt and reply or in a recent reply — are fed with its last token
in one forward, and the tokens the model picks at each place are kept up to the first that differs
from the guess. The reply is the one token-by-token decoding gives; a forward of a few tokens costs
far less than that many forwards (the weights are read once: 1.57× one token's for a 4-token draft
on 2 CPU cores), so a draft pays once about two of its tokens are right. Alone only: beside other
sequences each extra place costs almost a sequence's share of the forward on a CPU, more than the
guesses save.

Sequences of one batch share the active LoRA adapter: a request for another adapter waits until
the batch drains (the engine's adapter switch is global to the model).

Log-probabilities are those of the raw distribution (before suppression, temperature and
truncation), as vLLM reports them and as the trainer scores a completion at temperature 1.

This module imports torch at import time; import it lazily.
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import torch

from agent_runtime.models.cancel import CANCEL_POLL_S, RunCancelled
from agent_runtime.models.decoder import SlotDecoder
from agent_runtime.models.lookup import Drafts, NgramIndex

#: Every live batcher, closed at interpreter exit: a daemon thread killed inside a torch kernel
#: aborts the process ("terminate called without an active exception").
_LIVE: weakref.WeakSet[Batcher] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for batcher in list(_LIVE):
        batcher.close()


#: Sequences decoded together at most (more wait for a free place).
DEFAULT_MAX_BATCH = 16
#: Cache rows kept beyond the batch for finished sequences' prefixes.
SPARE_ROWS = 4
#: The key/value cache's size at most on the CPU, in MiB (None: no bound). The cache holds
#: every running sequence's prompt and reply in float32: for SmolLM2-135M 46 KB a position,
#: 0.7 GB for 16 prompts of ~900 tokens, more than the model itself. Requests past the bound wait
#: for a place instead of growing the process; on 2 cores that cost batch 16 4-15 % of its
#: tokens/s (docs/inference.md), for a peak RSS under 2 GB.
DEFAULT_CPU_CACHE_MB = 640
#: Draft tokens a greedy sequence decoded alone checks per forward (module docstring); 0: none.
#: Replayed over the 275 role calls of a recorded 25-episode eval of the demo model (evolve's
#: selection instances: it changes no reply, so no success rate depends on that choice), with the
#: measured cost of a forward by its rows, drafts of 2 / 3 / 4 / 6 tokens cut decode time 1.66 /
#: 1.76 / 1.82 / 1.88×: past 4 the gain is small and a wrong guess costs more (docs/inference.md).
DEFAULT_LOOKUP = 4


@dataclass(frozen=True)
class Sampling:
    """How one request samples; ``temperature == 0`` is greedy."""

    max_tokens: int
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int | None = None
    n: int = 1
    stop: tuple[str, ...] = ()
    suppress: tuple[int, ...] = ()
    logprobs: bool = False
    top_logprobs: int = 0


@dataclass
class Generated:
    """One finished choice: its tokens (the end token included) and, when asked, log-probs."""

    token_ids: list[int]
    finish_reason: str  # "stop" | "length"
    logprobs: list[float] | None = None
    top_logprobs: list[list[tuple[int, float]]] | None = None


@dataclass
class _Request:
    prompt: list[int]
    sampling: Sampling
    adapter: str | None
    cancel: threading.Event | None
    done: threading.Event = field(default_factory=threading.Event)
    results: list[Generated | None] = field(default_factory=list)
    error: BaseException | None = None
    left: int = 0


@dataclass
class _Seq:
    request: _Request
    choice: int
    generator: torch.Generator | None
    out: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    tops: list[list[tuple[int, float]]] = field(default_factory=list)
    pending: torch.Tensor | None = None  # logits for the next token
    finish: str | None = None
    index: NgramIndex | None = None  # prompt and reply, for lookup drafts (built when first used)

    @property
    def greedy(self) -> bool:
        """Its next token is the argmax (no generator: temperature 0)."""
        return self.request.sampling.temperature == 0.0 or self.generator is None

    @property
    def length(self) -> int:
        """Positions this sequence has in its cache row."""
        return len(self.request.prompt) + max(0, len(self.out) - 1)


def _seed_generator(seed: int | None, choice: int) -> torch.Generator:
    gen = torch.Generator()
    base = int.from_bytes(os.urandom(8), "little") if seed is None else seed
    gen.manual_seed((base + choice) % (2**64))
    return gen


class Batcher:
    """The scheduler thread and its queue (module docstring)."""

    def __init__(
        self,
        decoder: SlotDecoder,
        *,
        end_ids: set[int],
        decode_text: Callable[[list[int]], str],
        activate: Callable[[str | None], None] = lambda _adapter: None,
        lock: AbstractContextManager[Any] | None = None,
        max_batch: int = DEFAULT_MAX_BATCH,
        max_cache_mb: float | None = None,
        context_length: int | None = None,
        lookup: int = DEFAULT_LOOKUP,
        name: str = "model",
    ) -> None:
        self.decoder = decoder
        self.end_ids = end_ids
        self.decode_text = decode_text
        self.activate = activate
        #: Held around each admit-and-step: the engine's model lock (adapters load between steps).
        self.lock: AbstractContextManager[Any] = lock or threading.RLock()
        self.max_batch = max_batch
        #: The cache's bound in bytes (None: none): a request joins a running batch only while the
        #: cache, grown for every running sequence's prompt and longest reply, stays within it.
        self.max_cache_bytes = None if max_cache_mb is None else int(max_cache_mb * 2**20)
        self.context_length = context_length
        #: Draft tokens per forward for a greedy sequence decoded alone (0: lookup decoding off).
        self.lookup = lookup
        self._drafts = Drafts()
        self.name = name
        self._queue: deque[_Request] = deque()
        self._cond = threading.Condition()
        self._running: list[_Seq] = []  # row i of the cache holds _running[i]
        # (adapter, tokens) resident in rows len(_running) ..: a prefix only serves its own adapter
        self._free: list[tuple[str | None, list[int]]] = []
        self._adapter: str | None = None
        self._closed = False
        #: Counters for benchmarks and tests: forwards, tokens decoded, prefill tokens skipped, the
        #: most sequences decoded in one forward, lookup drafts checked and kept.
        self.stats = {
            "decode_steps": 0,
            "decoded_tokens": 0,
            "prefill_tokens": 0,
            "reused_tokens": 0,
            "most_running": 0,
            "drafted_tokens": 0,
            "accepted_tokens": 0,
        }
        self._thread = threading.Thread(target=self._loop, name=f"batcher-{name}", daemon=True)
        self._thread.start()
        _LIVE.add(self)

    # --- callers ----------------------------------------------------------------------------

    def generate(
        self,
        prompt: list[int],
        sampling: Sampling,
        *,
        adapter: str | None = None,
        cancel: threading.Event | None = None,
    ) -> list[Generated]:
        """Decode ``sampling.n`` choices for ``prompt`` (blocks; other callers batch with it).

        Raises :class:`RunCancelled` when ``cancel`` is set before the answer is complete, and
        re-raises an error the decoder hit while this request was in its batch.
        """
        if not prompt:
            raise ValueError("empty prompt")
        request = _Request(
            list(prompt), sampling, adapter, cancel, results=[None] * sampling.n, left=sampling.n
        )
        with self._cond:
            if self._closed:
                raise RuntimeError(f"the batcher of {self.name} is closed")
            self._queue.append(request)
            self._cond.notify()
        while not request.done.wait(CANCEL_POLL_S if cancel is not None else None):
            if cancel is not None and cancel.is_set():
                with self._cond:
                    self._cond.notify()
        if request.error is not None:
            raise request.error
        if cancel is not None and cancel.is_set():
            raise RunCancelled(f"generation by {self.name} was cancelled")
        return [r for r in request.results if r is not None]

    def forget_prefixes(self, adapter: str | None = None, *, everything: bool = False) -> None:
        """Stop reusing cached prefixes of ``adapter`` (or all, and the replies lookup drafts
        from: a cold start): its weights changed."""
        with self.lock:
            if everything:
                self._drafts = Drafts()
            self._free = [
                (None, []) if everything or owner == adapter else (owner, t) for owner, t in self._free
            ]

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(timeout=5)

    # --- the scheduler thread ---------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed and not self._queue and not self._running:
                    self._cond.wait()
                if self._closed:
                    self._fail_all(RuntimeError(f"the batcher of {self.name} closed"))
                    return
                admit = self._take_admissible()
            try:
                # inference mode for the whole iteration: the cache rows it moves are inference tensors
                with self.lock, torch.inference_mode():
                    self._shrink_when_idle()
                    for request in admit:
                        self._admit(request)
                    self._drop_cancelled()
                    if self._running:
                        self._step()
            except BaseException as exc:  # answer every caller in the batch, keep serving
                for seq in self._running:
                    self._fail(seq.request, exc)
                for request in admit:
                    self._fail(request, exc)
                self._running, self._free = [], []

    def _take_admissible(self) -> list[_Request]:
        """Requests that join now: FIFO, room in the batch, the batch's adapter (under the lock)."""
        taken: list[_Request] = []
        room = self.max_batch - len(self._running)
        adapter = self._running[0].request.adapter if self._running else None
        same = bool(self._running)
        while self._queue and room > 0:
            head = self._queue[0]
            if head.cancel is not None and head.cancel.is_set():
                self._queue.popleft()
                head.done.set()
                continue
            if same and head.adapter != adapter:
                break
            if head.sampling.n > room and (taken or self._running):
                break
            if (taken or self._running) and not self._fits([*taken, head]):
                break
            self._queue.popleft()
            taken.append(head)
            room -= head.sampling.n
            adapter, same = head.adapter, True
        return taken

    def _longest(self, request: _Request) -> int:
        """Positions a request's row may reach: its prompt and its longest reply."""
        longest = len(request.prompt) + request.sampling.max_tokens
        return longest if self.context_length is None else min(longest, self.context_length)

    def _fits(self, joining: list[_Request]) -> bool:
        """Whether the cache stays within its bound with ``joining`` admitted beside the running
        sequences (rows for each choice, positions for the longest prompt and reply)."""
        if self.max_cache_bytes is None:
            return True
        rows = len(self._running) + sum(r.sampling.n for r in joining)
        positions = max(
            [self._longest(s.request) for s in self._running] + [self._longest(r) for r in joining]
        )
        return self.decoder.cache.bytes_for(rows, positions) <= self.max_cache_bytes

    def _admit(self, request: _Request) -> None:
        if request.adapter != self._adapter or not self._running:
            self.activate(request.adapter)
            self._adapter = request.adapter
        first = len(self._running)
        reused = self._claim_row(request.prompt, request.adapter)
        logits = self.decoder.prefill(first, request.prompt, reused, request.adapter)
        self.stats["prefill_tokens"] += len(request.prompt) - reused
        self.stats["reused_tokens"] += reused
        sampling = request.sampling
        for choice in range(sampling.n):
            if choice:
                self._claim_row(None, request.adapter)
                self.decoder.cache.copy(first, len(self._running), len(request.prompt))
            generator = None if sampling.temperature == 0.0 else _seed_generator(sampling.seed, choice)
            self._running.append(_Seq(request, choice, generator, pending=logits))
        self._sample_pending()

    def _claim_row(self, prompt: list[int] | None, adapter: str | None) -> int:
        """Make row ``B`` (the next running place) the free row to fill; return how many
        leading positions of ``prompt`` it already holds.

        Rows ``B ..`` are free and keep finished sequences' tokens (``_free[k]`` is row
        ``B + k``). The row sharing the longest prefix with ``prompt`` is taken; without one, a
        new row while there is room for spares (so prefixes of other roles survive), else the
        free row finished longest ago. A running sequence whose prompt shares more (a request
        admitted with this one) lends it that prefix: its prompt positions are never rewritten.
        """
        running = len(self._running)
        best, shared = -1, 0
        for k, (owner, tokens) in enumerate(self._free if prompt is not None else []):
            n = _common_prefix(tokens, prompt or []) if owner == adapter else 0
            if n > shared:
                best, shared = k, n
        if best < 0:
            spare = running + len(self._free) < self.max_batch + SPARE_ROWS and self._spare_fits(running)
            if spare or not self._free:
                self._free.append((None, []))
                self.decoder.cache.reserve(running + len(self._free), 1)
            best = len(self._free) - 1
        if best:
            length = max(len(self._free[best][1]), len(self._free[0][1]))
            self.decoder.cache.swap(running + best, running, length)
            self._free[0], self._free[best] = self._free[best], self._free[0]
        self._free.pop(0)
        if prompt is None:
            return 0
        donor, lent = -1, shared
        for r, seq in enumerate(self._running):
            n = _common_prefix(seq.request.prompt, prompt) if seq.request.adapter == adapter else 0
            if n > lent:
                donor, lent = r, n
        if donor >= 0:
            self.decoder.cache.copy(donor, running, lent)
            shared = lent
        return min(shared, len(prompt) - 1)

    def _shrink_when_idle(self) -> None:
        """With nothing running, drop a cache grown past the bound (by a request longer than the
        bound admitted alone), so that it does not hold every later batch to one sequence."""
        cache = self.decoder.cache
        if self._running or self.max_cache_bytes is None or cache.bytes_for(0, 0) <= self.max_cache_bytes:
            return
        self._free = []
        cache.clear()

    def _spare_fits(self, running: int) -> bool:
        """Whether one more free row (a prefix kept for later) stays within the cache's bound."""
        if self.max_cache_bytes is None:
            return True
        rows = running + len(self._free) + 1
        return self.decoder.cache.bytes_for(rows, self.decoder.cache.cap) <= self.max_cache_bytes

    def _step(self) -> None:
        seqs = self._running
        if len(seqs) == 1 and self._step_with_draft(seqs[0]):
            return
        logits = self.decoder.decode([s.out[-1] for s in seqs], [s.length for s in seqs], self._adapter)
        self.stats["decode_steps"] += 1
        self.stats["decoded_tokens"] += len(seqs)
        self.stats["most_running"] = max(self.stats["most_running"], len(seqs))
        for seq, row in zip(seqs, logits, strict=True):
            seq.pending = row
        self._sample_pending()

    def _step_with_draft(self, seq: _Seq) -> bool:
        """One forward over ``seq``'s last token and a lookup draft after it, keeping the tokens
        the model picks up to the first that differs from the draft (module docstring). False
        when ``seq`` samples (its tokens are not the argmax) or there is no draft."""
        if self.lookup <= 0 or not seq.greedy:
            return False
        s = seq.request.sampling
        if seq.index is None:
            seq.index = NgramIndex([*seq.request.prompt, *seq.out])
        room = s.max_tokens - len(seq.out)
        if self.context_length is not None:
            room = min(room, self.context_length - seq.length - 2)
        draft = self._drafts.draft(seq.index, min(self.lookup, room - 1))
        if not draft:
            return False
        # out[-1] is fed at position seq.length, the draft after it
        ids = [*seq.request.prompt, *seq.out, *draft]
        logits = self.decoder.prefill(0, ids, seq.length, self._adapter, every=True)
        kept = 0
        for i, row in enumerate(logits):
            token = self._sample(seq, row)
            self._emit(seq, token)
            if seq.finish is not None or i == len(draft) or token != draft[i]:
                break
            kept += 1
        self.stats["decode_steps"] += 1
        self.stats["decoded_tokens"] += kept + 1
        self.stats["most_running"] = max(self.stats["most_running"], 1)
        self.stats["drafted_tokens"] += len(draft)
        self.stats["accepted_tokens"] += kept
        self._retire()
        return True

    def _sample_pending(self) -> None:
        """Sample every sequence that has fresh logits, then retire the finished ones."""
        for seq in self._running:
            if seq.pending is None:
                continue
            logits, seq.pending = seq.pending, None
            self._emit(seq, self._sample(seq, logits))
        self._retire()

    def _emit(self, seq: _Seq, token: int) -> None:
        seq.out.append(token)
        if seq.index is not None:
            seq.index.extend([token])
        self._check_end(seq, token)

    def _sample(self, seq: _Seq, logits: torch.Tensor) -> int:
        s = seq.request.sampling
        if s.logprobs:
            raw = torch.log_softmax(logits.float(), -1)
        scores = logits.float()
        if s.suppress:
            scores = scores.clone()
            scores[list(s.suppress)] = float("-inf")
        if seq.greedy:
            token = int(torch.argmax(scores))
        else:
            scores = scores / s.temperature
            if s.top_k and s.top_k < scores.shape[0]:
                kth = torch.topk(scores, s.top_k).values[-1]
                scores = scores.masked_fill(scores < kth, float("-inf"))
            probs = torch.softmax(scores, -1)
            if s.top_p < 1.0:
                sorted_p, order = torch.sort(probs, descending=True)
                # keep the smallest set whose mass reaches top_p (the first token always stays)
                drop = (sorted_p.cumsum(-1) - sorted_p) >= s.top_p
                sorted_p = sorted_p.masked_fill(drop, 0.0)
                probs = torch.zeros_like(probs).scatter_(0, order, sorted_p)
            # The seeded generator lives on the CPU (a sample must not depend on the device): draw there.
            token = int(torch.multinomial(probs.cpu(), 1, generator=seq.generator))
        if s.logprobs:
            seq.logprobs.append(float(raw[token]))
            if s.top_logprobs:
                top = torch.topk(raw, s.top_logprobs)
                seq.tops.append([(int(i), float(v)) for v, i in zip(top.values, top.indices, strict=True)])
            else:
                seq.tops.append([])
        return token

    def _check_end(self, seq: _Seq, token: int) -> None:
        s = seq.request.sampling
        if token in self.end_ids:
            seq.finish = "stop"
        elif s.stop and _hits_stop(self.decode_text(seq.out[-(_stop_window(s.stop)) :]), s.stop):
            seq.finish = "stop"
        elif len(seq.out) >= s.max_tokens:
            seq.finish = "length"
        elif self.context_length is not None and seq.length + 1 >= self.context_length:
            seq.finish = "length"

    def _drop_cancelled(self) -> None:
        for seq in self._running:
            cancel = seq.request.cancel
            if cancel is not None and cancel.is_set() and seq.finish is None:
                seq.finish = "cancelled"
        self._retire()

    def _retire(self) -> None:
        """Answer finished sequences; their rows join the free rows (prefix cache)."""
        i = 0
        while i < len(self._running):
            seq = self._running[i]
            if seq.finish is None:
                i += 1
                continue
            last = len(self._running) - 1
            self.decoder.cache.swap(i, last, max(seq.length, self._running[last].length))
            self._running[i], self._running[last] = self._running[last], self._running[i]
            self._running.pop()
            self._free.insert(0, (seq.request.adapter, seq.request.prompt + seq.out[:-1]))
            if self.lookup > 0 and seq.finish != "cancelled":
                self._drafts.remember(seq.request.prompt, seq.out)
            self._answer(seq)

    def _answer(self, seq: _Seq) -> None:
        request = seq.request
        if seq.finish != "cancelled":
            s = request.sampling
            request.results[seq.choice] = Generated(
                token_ids=list(seq.out),
                finish_reason=seq.finish or "length",
                logprobs=list(seq.logprobs) if s.logprobs else None,
                top_logprobs=list(seq.tops) if s.logprobs else None,
            )
        request.left -= 1
        if request.left <= 0:
            request.done.set()

    def _fail(self, request: _Request, exc: BaseException) -> None:
        if not request.done.is_set():
            request.error = exc
            request.done.set()

    def _fail_all(self, exc: BaseException) -> None:
        for seq in self._running:
            self._fail(seq.request, exc)
        while self._queue:
            self._fail(self._queue.popleft(), exc)
        self._running = []


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _stop_window(stops: tuple[str, ...]) -> int:
    """Tokens of the tail to decode when looking for a stop string (a token is ≥ 1 char)."""
    return max(len(s) for s in stops) + 2


def _hits_stop(tail: str, stops: tuple[str, ...]) -> bool:
    return any(s in tail for s in stops)
