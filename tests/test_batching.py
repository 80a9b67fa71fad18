"""The batched engine (agent_runtime.models.batching / decoder) on a real tiny causal LM.

Every comparison is against transformers' own ``generate`` or the trainer's scoring forward on the
same weights: batched decoding must change nothing but the speed.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.train

PROMPTS = [
    "Open the clock app and set an alarm",
    "Open the clock app and read the time",
    "Type hello into the search box",
    "Go back to the home screen",
]


def _request(text: str, **kw: Any) -> Any:
    from agent_runtime.models.protocol import ChatCompletionRequest

    body = {"messages": [{"role": "user", "content": text}], "temperature": 0.0, "max_tokens": 24} | kw
    return ChatCompletionRequest.model_validate(body)


def _engine(path: Path, **kw: Any) -> Any:
    from agent_runtime.models.engine import TransformersEngine

    return TransformersEngine(path, **kw)


def _concurrently(fn: Any, items: list[Any]) -> list[Any]:
    """Run ``fn`` on every item at once (threads released together) and return results in order."""
    results: list[Any] = [None] * len(items)
    errors: list[BaseException] = []
    gate = threading.Barrier(len(items))

    def work(i: int) -> None:
        gate.wait()
        try:
            results[i] = fn(items[i])
        except BaseException as exc:  # re-raised below in the test thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(items))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    if errors:
        raise errors[0]
    return results


def _lora(model: Any, seed: int = 1) -> Any:
    """A PEFT LoRA on every projection with non-zero B, so the adapter changes the outputs."""
    import torch
    from peft import LoraConfig, get_peft_model

    peft = get_peft_model(
        model,
        LoraConfig(
            r=4,
            lora_alpha=8,
            lora_dropout=0.3,  # must not act while sampling: the engine samples in eval mode
            target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        ),
    )
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in peft.named_parameters():
            if "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=gen) * 0.5)
    return peft


def test_batched_greedy_is_generate_and_requests_share_forwards(tiny_lm_dir):
    reference = _engine(tiny_lm_dir, batching=False)
    want = [reference.chat(_request(p, return_token_ids=True)).choices[0] for p in PROMPTS]
    engine = _engine(tiny_lm_dir)
    got = _concurrently(lambda p: engine.chat(_request(p, return_token_ids=True)).choices[0], PROMPTS)
    assert [c.token_ids for c in got] == [c.token_ids for c in want]
    assert [c.message.content for c in got] == [c.message.content for c in want]
    assert [c.finish_reason for c in got] == [c.finish_reason for c in want]
    stats = engine._batcher.stats
    # several sequences advanced per forward: fewer decode steps than decoded tokens
    assert stats["decode_steps"] < stats["decoded_tokens"], stats
    engine.close()


def test_sequences_leaving_in_any_order_keep_their_rows(tiny_lm_dir):
    """Requests of different lengths join and leave mid-batch (rows move, prefixes are kept)."""
    reference = _engine(tiny_lm_dir, batching=False)
    engine = _engine(tiny_lm_dir, max_batch=3)  # more requests than places: some wait and join later
    asks = [(PROMPTS[i % 4], n) for i, n in enumerate([3, 20, 5, 12, 1, 8, 16, 2])]
    asks[3] = (" ".join(PROMPTS * 20), 12)  # longer than the cache's first allocation: it grows
    want = [
        reference.chat(_request(p, max_tokens=n, return_token_ids=True)).choices[0].token_ids for p, n in asks
    ]
    for _ in range(2):  # the second round starts from the prefixes the first left
        got = _concurrently(
            lambda a: (
                engine.chat(_request(a[0], max_tokens=a[1], return_token_ids=True)).choices[0].token_ids
            ),
            asks,
        )
        assert got == want
    assert engine._batcher.stats["reused_tokens"] > 0
    engine.close()


def test_a_shared_prefix_is_reused_and_changes_nothing(tiny_lm_dir):
    reference = _engine(tiny_lm_dir, batching=False)
    engine = _engine(tiny_lm_dir)
    for p in PROMPTS[:2]:  # the second starts like the first (same template and first words)
        want = reference.chat(_request(p, return_token_ids=True)).choices[0].token_ids
        assert engine.chat(_request(p, return_token_ids=True)).choices[0].token_ids == want
    assert engine._batcher.stats["reused_tokens"] > 0
    engine.close()


def test_requests_arriving_together_prefill_their_shared_prefix_once(tiny_lm_dir):
    reference = _engine(tiny_lm_dir, batching=False)
    prompts = PROMPTS[:2] * 2  # the two share the template and first words
    want = [reference.chat(_request(p, return_token_ids=True)).choices[0].token_ids for p in prompts]
    engine = _engine(tiny_lm_dir)
    batcher = engine._batcher_for_model()
    results: list[Any] = [None] * len(prompts)

    def call(i: int) -> None:
        results[i] = engine.chat(_request(prompts[i], return_token_ids=True)).choices[0].token_ids

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(prompts))]
    with engine._lock:  # the scheduler waits: every request is queued before the first is prefilled
        for t in threads:
            t.start()
        time.sleep(0.5)
    for t in threads:
        t.join(timeout=120)
    assert results == want
    # a fresh engine has no finished rows: the prefixes came from running sequences' prompts
    assert batcher.stats["reused_tokens"] >= 3 * 8, batcher.stats
    engine.close()


def test_rollout_logprobs_are_the_trainers_and_dropout_is_off(tiny_lm_dir):
    """On-policy: the engine's behaviour log-probs equal the trainer's scoring forward (ratio 1),
    with a LoRA adapter whose dropout would act in train mode."""
    import math

    from agent_runtime.trainers.online.policy_gradient import score_logprobs
    from agent_runtime.trainers.online.samples import StepTokens

    engine = _engine(tiny_lm_dir)
    model = _lora(engine.model)
    model.train()  # as a trainer leaves it after an update
    engine.model = model
    replies = _concurrently(
        lambda p: engine.chat(
            _request(p, temperature=1.0, seed=7, logprobs=True, return_token_ids=True, max_tokens=16)
        ),
        PROMPTS,
    )
    assert not model.training
    steps = [
        StepTokens(
            prompt_ids=tuple(r.prompt_token_ids),
            completion_ids=tuple(r.choices[0].token_ids),
            behaviour_logprobs=tuple(e.logprob for e in r.choices[0].logprobs.content),
        )
        for r in replies
    ]
    scored = score_logprobs(model, steps, temperature=1.0, micro_batch_size=4)
    for step, current in zip(steps, scored, strict=True):
        assert len(current) == len(step.behaviour_logprobs)
        for now, then in zip(current, step.behaviour_logprobs, strict=True):
            assert math.exp(now - then) == pytest.approx(1.0, abs=1e-4)  # the importance ratio
    engine.close()


def test_sampling_is_seeded_per_request_whatever_shares_the_batch(tiny_lm_dir):
    engine = _engine(tiny_lm_dir)
    sampled = {"temperature": 1.0, "seed": 11, "max_tokens": 20, "return_token_ids": True}
    alone = engine.chat(_request(PROMPTS[0], **sampled)).choices[0].token_ids
    crowd = _concurrently(
        lambda kw: engine.chat(_request(PROMPTS[0], **kw)).choices[0].token_ids,
        [sampled, sampled | {"seed": 12}, sampled | {"seed": 13}],
    )
    assert crowd[0] == alone
    # n choices of one request: each its own stream, reproducible
    two = engine.chat(_request(PROMPTS[1], n=3, **sampled)).choices
    again = engine.chat(_request(PROMPTS[1], n=3, **sampled)).choices
    assert [c.token_ids for c in two] == [c.token_ids for c in again]
    assert len({tuple(c.token_ids or []) for c in two}) > 1
    engine.close()


def test_max_tokens_stop_strings_and_top_k(tiny_lm_dir):
    engine = _engine(tiny_lm_dir)
    long = engine.chat(_request(PROMPTS[2], max_tokens=5, return_token_ids=True)).choices[0]
    reference = _engine(tiny_lm_dir, batching=False)
    want = reference.chat(_request(PROMPTS[2], max_tokens=5, return_token_ids=True)).choices[0]
    assert long.token_ids == want.token_ids
    assert long.finish_reason == want.finish_reason
    full = reference.chat(_request(PROMPTS[2], max_tokens=24)).choices[0].message.content
    if len(full) > 4:
        stop = full[2:4]
        cut = engine.chat(_request(PROMPTS[2], max_tokens=24, stop=[stop])).choices[0]
        assert cut.message.content == full[: full.find(stop)]
        assert cut.finish_reason == "stop"
    # top_k = 1 is greedy whatever the temperature
    greedy = reference.chat(_request(PROMPTS[3], return_token_ids=True)).choices[0].token_ids
    topk1 = engine.chat(_request(PROMPTS[3], temperature=1.5, top_k=1, seed=3, return_token_ids=True))
    assert topk1.choices[0].token_ids == greedy
    engine.close()


def _endless_in_thread(engine: Any, cancel: threading.Event, outcome: dict[str, Any]) -> threading.Thread:
    """A greedy request that would run to 3,000 tokens (the tiny LM repeats itself, never ends),
    under ``cancel``, on its own thread; ``outcome["a"]`` says how it ended."""
    from agent_runtime.models.cancel import RunCancelled, cancel_scope

    def endless() -> None:
        with cancel_scope(cancel):
            try:
                engine.chat(_request(PROMPTS[0], max_tokens=3000))
                outcome["a"] = "finished"
            except RunCancelled:
                outcome["a"] = "cancelled"

    worker = threading.Thread(target=endless)
    worker.start()
    return worker


def test_cancel_ends_one_request_and_the_batch_goes_on(tiny_lm_dir):
    engine = _engine(tiny_lm_dir)
    cancel = threading.Event()
    outcome: dict[str, Any] = {}
    worker = _endless_in_thread(engine, cancel, outcome)
    time.sleep(0.3)
    other = engine.chat(_request(PROMPTS[1], return_token_ids=True))
    cancel.set()
    worker.join(timeout=30)
    assert outcome == {"a": "cancelled"}
    assert other.choices[0].token_ids
    # the engine still answers afterwards
    assert engine.chat(_request(PROMPTS[2])).choices[0].finish_reason in ("stop", "length")
    engine.close()


def test_two_adapters_at_once_each_get_their_own_weights(tiny_lm_dir, tmp_path):
    from agent_runtime.models.engine import TransformersEngine

    dirs = []
    for seed in (1, 2):
        base = TransformersEngine(tiny_lm_dir, batching=False).model
        peft = _lora(base, seed)
        peft.save_pretrained(str(tmp_path / f"a{seed}"))
        dirs.append(str(tmp_path / f"a{seed}"))
    reference = _engine(tiny_lm_dir, batching=False)
    engine = _engine(tiny_lm_dir, precision="fast")
    exact = _engine(tiny_lm_dir)
    for e in (reference, engine, exact):
        e.load_adapter("one", dirs[0])
        e.load_adapter("two", dirs[1])
    names = ["one", "two", "one", "two", None]
    want = [reference.chat(_request(PROMPTS[0], model=n, return_token_ids=True)) for n in names]
    for e in (exact, engine):
        got = _concurrently(
            lambda n, e=e: e.chat(_request(PROMPTS[0], model=n, return_token_ids=True)), names
        )
        assert [g.model for g in got] == [w.model for w in want]
        if e is exact:
            assert [g.choices[0].token_ids for g in got] == [w.choices[0].token_ids for w in want]
    # the fast engine packed the base once: one pack per fused projection group, not per adapter
    decoder = engine._batcher.decoder
    assert len(decoder._fast) == 3  # "one", "two", no adapter
    assert len(decoder._packs) == 4 * len(decoder.layers) + 1  # qkv, o, gate_up, down per layer + lm_head
    # the two adapters really differ (else this test proves nothing)
    assert want[0].choices[0].token_ids != want[1].choices[0].token_ids
    for e in (engine, exact):
        e.close()


def test_fast_weights_keep_a_4bit_grid_and_stay_close_to_the_model(tiny_lm_dir):
    import torch

    from agent_runtime.models.cpu_formats import KernelFormats
    from agent_runtime.models.decoder import SlotDecoder, _Packed

    native = KernelFormats(matmul="bfloat16", int4_decode=True, reason="test")
    gen = torch.Generator().manual_seed(0)
    levels = torch.randint(0, 16, (48, 64), generator=gen).float()
    levels[:, 0::32], levels[:, 1::32] = 0, 15  # as GGUF's Q4_1: each group's minimum and maximum
    scale = torch.rand(48, 2, generator=gen) * 0.01 + 0.001
    low = -torch.rand(48, 2, generator=gen) * 0.05
    on_grid = (levels.view(48, 2, 32) * scale[..., None] + low[..., None]).view(48, 64)
    packed = _Packed([on_grid], None, native)
    assert packed.int4 is not None
    x = torch.randn(3, 64, generator=gen)
    exact = x @ on_grid.T
    got = packed(x)
    assert torch.allclose(got, exact, rtol=2e-2, atol=2e-2 * float(exact.abs().max()))
    assert _Packed([torch.randn(48, 64, generator=gen)], None, native).int4 is None  # off the grid
    assert _Packed([on_grid, torch.randn(16, 64, generator=gen)], None, native).int4 is None  # one off
    no_int4 = native.model_copy(update={"int4_decode": False})
    assert _Packed([on_grid], None, no_int4).int4 is None  # the formats said no 4-bit kernel

    engine = _engine(tiny_lm_dir, batching=False)
    ids = engine.tokenizer(PROMPTS[0])["input_ids"]
    with torch.inference_mode():
        want = engine.model(input_ids=torch.tensor([ids])).logits[0, -1].float()
    for precision, tolerance in (("exact", 1e-4), ("fast", 5e-2)):
        decoder = SlotDecoder(engine.model, precision, native)  # type: ignore[arg-type]
        got = decoder.prefill(0, ids, 0, None)
        assert float((got - want).abs().max()) <= tolerance * max(1.0, float(want.abs().max()))


def test_serve_decodes_concurrent_http_requests_together(tiny_lm_dir):
    import httpx

    from agent_runtime.models.server import ServerThread, create_app

    engine = _engine(tiny_lm_dir)
    reference = _engine(tiny_lm_dir, batching=False)
    with ServerThread(create_app(engine)) as url:

        def post(text: str) -> dict[str, Any]:
            body = {"messages": [{"role": "user", "content": text}], "temperature": 0, "max_tokens": 24}
            reply = httpx.post(f"{url}/chat/completions", json=body, timeout=60)
            assert reply.status_code == 200, reply.text
            return reply.json()

        replies = _concurrently(post, PROMPTS)
    want = [reference.chat(_request(p)).choices[0].message.content for p in PROMPTS]
    assert [r["choices"][0]["message"]["content"] for r in replies] == want
    assert engine._batcher.stats["decode_steps"] < engine._batcher.stats["decoded_tokens"]
    engine.close()


def test_the_cache_stays_within_its_bound_and_changes_no_reply(tiny_lm_dir):
    """Past ``max_cache_mb`` requests wait for a place instead of growing the cache; a request
    longer than the bound still runs (alone), and the cache it grew is dropped once idle."""
    from agent_runtime.models.decoder import KVRows

    reference = _engine(tiny_lm_dir, batching=False)
    asks = [PROMPTS[i % 4] + f" please {i}" for i in range(8)]
    want = [reference.chat(_request(p, return_token_ids=True)).choices[0].token_ids for p in asks]
    config = reference.model.config
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    shape = KVRows(config.num_hidden_layers, config.num_key_value_heads, head_dim, reference.model.dtype)
    four_rows = shape.bytes_for(4, 256)  # every prompt here and its 24-token reply fit 256 positions
    engine = _engine(tiny_lm_dir, max_cache_mb=four_rows / 2**20)

    def greedy(prompt: str) -> list[int]:
        return engine.chat(_request(prompt, return_token_ids=True)).choices[0].token_ids

    assert _concurrently(greedy, asks) == want
    batcher = engine._batcher
    assert 1 < batcher.stats["most_running"] <= 4, batcher.stats
    assert batcher.decoder.cache.bytes_for(0, 0) <= four_rows

    long = " ".join(PROMPTS * 12)  # more positions than the bound holds: admitted alone
    engine.chat(_request(long, max_tokens=4))
    assert batcher.decoder.cache.bytes_for(0, 0) > four_rows
    assert _concurrently(greedy, asks) == want
    assert batcher.decoder.cache.bytes_for(0, 0) <= four_rows  # dropped when idle, then grown within bound
    engine.close()


def test_lookup_decoding_changes_no_reply_and_saves_forwards(tiny_lm_dir):
    """A greedy request decoded alone checks drafts of several tokens per forward and keeps the
    tokens the model picks up to the first wrong guess: token ids, finish reasons and log-probs are
    those of ``generate`` (and of the engine without lookup), in fewer forwards than tokens —
    with right drafts, and with drafts whose second token is always wrong."""
    from agent_runtime.models.lookup import Drafts, NgramIndex

    class SecondWrong(Drafts):
        def draft(self, own: NgramIndex, k: int) -> list[int]:
            guess = super().draft(own, k)
            return guess[:1] + [(guess[1] + 1) % 50] + guess[2:] if len(guess) > 1 else guess

    reference = _engine(tiny_lm_dir, batching=False)
    asks = [(p, 48) for p in PROMPTS] + [(PROMPTS[0], 3), (" ".join(PROMPTS * 3), 40)]
    want = [reference.chat(_request(p, max_tokens=n, return_token_ids=True)).choices[0] for p, n in asks]
    plain = _engine(tiny_lm_dir, lookup_tokens=0)
    engines = [_engine(tiny_lm_dir, lookup_tokens=4), _engine(tiny_lm_dir, lookup_tokens=4)]
    for engine in engines:
        engine.chat(_request("warm up", max_tokens=1))  # starts the batcher
    engines[1]._batcher._drafts = SecondWrong()
    for _ in range(2):  # the second round also drafts from the first round's replies
        for (prompt, n), choice in zip(asks, want, strict=True):
            ask = _request(prompt, max_tokens=n, return_token_ids=True, logprobs=True)
            off = plain.chat(ask).choices[0]
            assert off.token_ids == choice.token_ids
            for engine in engines:
                got = engine.chat(ask).choices[0]
                assert got.token_ids == choice.token_ids
                assert got.finish_reason == choice.finish_reason
                got_lp = [t.logprob for t in got.logprobs.content]
                assert got_lp == pytest.approx([t.logprob for t in off.logprobs.content], abs=1e-4)
    right, wrong = (e._batcher.stats for e in engines)
    assert right["accepted_tokens"] > 0, right
    assert wrong["accepted_tokens"] < wrong["drafted_tokens"], wrong  # the wrong guesses were refused
    for stats in (right, wrong):
        assert stats["decode_steps"] + stats["accepted_tokens"] == stats["decoded_tokens"], stats
    assert plain._batcher.stats["drafted_tokens"] == 0
    for engine in (*engines, plain):
        engine.close()


def test_cancel_stops_a_request_decoded_alone_with_lookup(tiny_lm_dir):
    """The lookup steps of a lone greedy request are cancelled like any other step."""
    engine = _engine(tiny_lm_dir, lookup_tokens=4)
    cancel = threading.Event()
    outcome: dict[str, Any] = {}
    worker = _endless_in_thread(engine, cancel, outcome)
    deadline = time.monotonic() + 30
    while engine._batcher is None or engine._batcher.stats["accepted_tokens"] == 0:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    cancel.set()
    worker.join(timeout=30)
    assert outcome == {"a": "cancelled"}
    assert engine._batcher.stats["decoded_tokens"] < 2999  # stopped well before max_tokens
    assert engine.chat(_request(PROMPTS[2])).choices[0].finish_reason in ("stop", "length")
    engine.close()
