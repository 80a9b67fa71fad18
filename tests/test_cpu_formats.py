"""The fast decoder's number formats follow the processor (agent_runtime.models.cpu_formats).

The choice is tested on injected capabilities (a processor with and without native bfloat16),
never on timings; the engine tests run the tiny model with each choice injected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_runtime.models.cpu_formats import CpuCapability, KernelFormats, choose

#: The issue's AMD EPYC: AVX2 + FMA, no AVX-512, no AMX; bfloat16 measured 80× slower.
AVX2_ONLY = CpuCapability(
    machine="x86_64",
    name="AMD EPYC 7B13",
    isa="AVX2",
    flags=("avx2", "fma", "f16c"),
    bf16_slowdown=80.0,
    int4_ratio=0.8,
)
#: A Sapphire Rapids Xeon: AMX and AVX-512 BF16.
NATIVE_BF16 = CpuCapability(
    machine="x86_64",
    name="Intel Xeon Platinum 8480+",
    isa="AVX512",
    flags=("avx2", "fma", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16"),
    bf16_slowdown=0.5,
    int4_ratio=0.5,
)


def test_float32_products_where_bfloat16_is_emulated_and_bfloat16_where_native():
    avx2 = choose(AVX2_ONLY)
    assert (avx2.matmul, avx2.int4_decode) == ("float32", True)
    assert "no native bfloat16" in avx2.reason
    native = choose(NATIVE_BF16)
    assert (native.matmul, native.int4_decode) == ("bfloat16", True)
    assert "amx_bf16" in native.reason
    # AVX-512 without its BF16 extension (this kind of Xeon) emulates it too
    avx512 = AVX2_ONLY.model_copy(update={"isa": "AVX512", "flags": ("avx2", "fma", "avx512f", "avx512bw")})
    assert choose(avx512).matmul == "float32"


def test_measurements_guard_and_stand_in_for_the_flags():
    # flags say native, but this torch build runs bfloat16 far slower than float32
    slow = NATIVE_BF16.model_copy(update={"bf16_slowdown": 12.0})
    assert choose(slow).matmul == "float32"
    assert "12.0× slower" in choose(slow).reason
    # no flags readable (not Linux): the measurement decides
    unknown = AVX2_ONLY.model_copy(update={"flags": None})
    assert choose(unknown).matmul == "float32"
    assert choose(unknown.model_copy(update={"bf16_slowdown": 0.6})).matmul == "bfloat16"
    assert choose(unknown.model_copy(update={"bf16_slowdown": None})).matmul == "float32"
    # the 4-bit kernel: kept where it exists and is not slower than a dense row
    assert choose(AVX2_ONLY.model_copy(update={"int4_ratio": None})).int4_decode is False
    assert choose(AVX2_ONLY.model_copy(update={"int4_ratio": 5.0})).int4_decode is False


def test_the_capability_is_measured_once_per_machine_and_cached(tmp_path, monkeypatch):
    from agent_runtime.models import cpu_formats

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calls: list[int] = []

    def measure() -> tuple[float, float | None]:
        calls.append(1)
        return 40.0, 0.7

    monkeypatch.setattr(cpu_formats, "_measure", measure)
    first = cpu_formats.detect()
    assert (first.bf16_slowdown, first.int4_ratio) == (40.0, 0.7)
    assert (tmp_path / "agent-runtime" / "cpu-formats.json").is_file()
    assert cpu_formats.detect() == first
    assert len(calls) == 1  # the second engine start read the cache
    # a corrupt cache is measured again, not an error
    (tmp_path / "agent-runtime" / "cpu-formats.json").write_text("{not json", encoding="utf-8")
    assert cpu_formats.detect() == first
    assert len(calls) == 2
    assert first.isa in first.describe()


# --- the engine with each choice injected ---------------------------------------------------------

PROMPTS = [
    "Open the clock app and set an alarm",
    "Type hello into the search box",
    "Go back to the home screen",
]


def _request(text: str) -> Any:
    from agent_runtime.models.protocol import ChatCompletionRequest

    body = {"messages": [{"role": "user", "content": text}], "temperature": 0.0, "max_tokens": 24}
    return ChatCompletionRequest.model_validate(body | {"return_token_ids": True})


@pytest.mark.train
def test_fast_engine_without_native_bf16_keeps_greedy_replies_and_one_weight_copy(tiny_lm_dir: Path):
    from agent_runtime.models.engine import TransformersEngine

    reference = TransformersEngine(tiny_lm_dir, batching=False)
    want = [reference.chat(_request(p)).choices[0].token_ids for p in PROMPTS]
    engine = TransformersEngine(tiny_lm_dir, precision="fast", formats=choose(AVX2_ONLY))
    got = [engine.chat(_request(p)).choices[0].token_ids for p in PROMPTS]
    assert got == want
    decoder = engine._batcher.decoder
    attn = decoder.layers[0].self_attn
    qkv = decoder._fast[None][0].qkv.base
    head = decoder._fast_head.base
    # the packs are the model's own float32 tensors: no second copy of the weights
    owners = [attn.q_proj, attn.k_proj, attn.v_proj]
    assert [w.data_ptr() for w in qkv.dense] == [m.weight.data_ptr() for m in owners]
    assert [w.data_ptr() for w in head.dense] == [decoder.lm.lm_head.weight.data_ptr()]
    # the model's own modules still compute what they did, on the shared weights
    import torch

    ids = torch.tensor([reference.tokenizer(PROMPTS[0])["input_ids"]])
    with torch.inference_mode():
        assert torch.equal(engine.model(input_ids=ids).logits, reference.model(input_ids=ids).logits)
    engine.close()


@pytest.mark.train
def test_fast_engine_with_native_bf16_packs_bfloat16(tiny_lm_dir: Path):
    import torch

    from agent_runtime.models.engine import TransformersEngine

    formats = choose(NATIVE_BF16)
    engine = TransformersEngine(tiny_lm_dir, precision="fast", formats=formats)
    assert engine.formats == formats
    engine.chat(_request(PROMPTS[0]))
    decoder = engine._batcher.decoder
    pack = decoder._fast[None][0].qkv.base
    assert [w.dtype for w in pack.dense] == [torch.bfloat16]  # one fused bfloat16 copy
    assert decoder.layers[0].self_attn.q_proj.weight.dtype == torch.float32  # the model is untouched
    engine.close()


def test_formats_are_a_frozen_boundary_type():
    formats = KernelFormats(matmul="float32", int4_decode=False, reason="test")
    with pytest.raises(ValueError):
        KernelFormats.model_validate({"matmul": "float16", "int4_decode": True, "reason": "x"})
    assert "float32" in formats.describe()


@pytest.mark.train
def test_doctor_prints_the_capability_and_the_choice(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from agent_runtime.cli import app
    from agent_runtime.models.cpu_formats import detect

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    res = CliRunner().invoke(app, ["doctor"], terminal_width=400)
    out = " ".join(res.output.split())
    cap = detect()  # read back from the cache doctor wrote
    assert (tmp_path / "cache" / "agent-runtime" / "cpu-formats.json").is_file()
    assert f"torch {cap.isa}" in out and f"products in {choose(cap).matmul}" in out, out
