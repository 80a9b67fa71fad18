"""The offline tiny Qwen2.5-VL: builds, reloads like a checkpoint, generates from image + text."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from PIL import Image

pytestmark = pytest.mark.train


def test_reloads_and_generates_from_an_image_chat(tiny_vlm_dir: Path) -> None:
    import torch
    from transformers import AutoModelForImageTextToText

    from agent_runtime.models import load_processor
    from agent_runtime.models.hf import ImageOnlyQwen2_5_VLProcessor

    processor = load_processor(tiny_vlm_dir)
    assert isinstance(processor, ImageOnlyQwen2_5_VLProcessor)
    model = AutoModelForImageTextToText.from_pretrained(tiny_vlm_dir).eval()
    assert sum(p.numel() for p in model.parameters()) < 300_000

    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "### Thought ###"}]}]
    prompt = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert prompt.endswith("<|im_start|>assistant\n")
    assert "<|vision_start|><|image_pad|><|vision_end|>### Thought ###" in prompt
    inputs = processor(
        text=[prompt], images=[Image.new("RGB", (1080, 2400), (200, 30, 30))], return_tensors="pt"
    )
    image_tokens = int((inputs["input_ids"] == model.config.image_token_id).sum())
    assert 4 <= image_tokens <= 16  # the small pixel budget keeps images cheap
    with torch.inference_mode():
        out = model.generate(**inputs, max_new_tokens=8, do_sample=False)
    assert out.shape[1] > inputs["input_ids"].shape[1]
    assert isinstance(processor.batch_decode(out[:, inputs["input_ids"].shape[1] :])[0], str)


def test_tokenizer_keeps_qwen_specials_and_round_trips(tiny_vlm_dir: Path) -> None:
    from agent_runtime.models import load_processor
    from agent_runtime.testing.tiny_vlm import SPECIAL_TOKENS

    tok = load_processor(tiny_vlm_dir).tokenizer
    for special in SPECIAL_TOKENS:
        assert len(tok(special, add_special_tokens=False)["input_ids"]) == 1, special
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>" and tok.padding_side == "left"
    text = 'héllo 日本 ### Thought ### {"action": "click", "coordinate": [540, 1200]}'
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids) == text
    # the prompt vocabulary is learned: a heading is a handful of tokens, not one per byte
    assert len(tok("### Thought ###", add_special_tokens=False)["input_ids"]) <= 7  # 15 bytes


def test_build_is_deterministic_for_a_seed(tiny_vlm_dir: Path, tmp_path: Path) -> None:
    from agent_runtime.testing.tiny_vlm import main

    main([str(tmp_path / "again"), "--seed", "0"])
    for name in ("model.safetensors", "tokenizer.json", "config.json", "processor_config.json"):
        a = hashlib.sha256((tiny_vlm_dir / name).read_bytes()).hexdigest()
        b = hashlib.sha256((tmp_path / "again" / name).read_bytes()).hexdigest()
        assert a == b, name


def test_unregistered_auto_processor_pitfall_is_caught(tiny_vlm_dir: Path, tmp_path: Path) -> None:
    """A directory without an image processor is an error, never a silent bare tokenizer."""
    import shutil

    from agent_runtime.errors import ModelError
    from agent_runtime.models import load_processor

    tokenizer_only = tmp_path / "tokenizer-only"
    tokenizer_only.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tiny_vlm_dir / name, tokenizer_only / name)
    with pytest.raises(ModelError, match="no image processor|cannot load the processor"):
        load_processor(tokenizer_only)
    broken = tmp_path / "no-processor-config"
    shutil.copytree(tiny_vlm_dir, broken)
    (broken / "processor_config.json").unlink()
    with pytest.raises(ModelError, match="cannot load the processor"):
        load_processor(broken)
    with pytest.raises(ModelError, match="does not exist"):
        load_processor(tmp_path / "missing")
