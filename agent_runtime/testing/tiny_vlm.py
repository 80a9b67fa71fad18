"""A tiny Qwen2.5-VL built offline, for tests and CPU demos.

No weights can be downloaded in CI, and the tiny test models on the Hub reuse the real Qwen
processor, so this builds everything from a config: a byte-level BPE tokenizer trained in memory
on the prompt vocabulary (so role prompts tokenize to few ids), Qwen's special tokens, a
Qwen-style chat template, the PIL image processor with a small pixel budget (an image becomes
~16 tokens) and a ~0.2M-parameter model. The result is deterministic for a seed and loads like
any checkpoint: ``AutoModelForImageTextToText.from_pretrained(dir)`` plus
:func:`agent_runtime.models.hf.load_processor`.

Usage: ``python -m agent_runtime.testing.tiny_vlm OUT_DIR [--seed N]``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Qwen's special tokens, in Qwen's order; each must stay a single id.
SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
)

#: Qwen2-VL's template, reduced to what agents send: string or list content, images as parts.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] in ('image', 'image_url') %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

_HEADINGS = (
    "Thought",
    "Plan",
    "Action",
    "Description",
    "Outcome",
    "Error Description",
    "Important Notes",
    "Historical Operations",
    "Last Action",
    "Last Action Description",
    "Potentially Stuck!",
    "User Request",
    "Overall Plan",
    "Current Subgoal",
    "Progress Status",
    "Guidelines",
    "Latest Action History",
    "Screenshot Difference",
    "Answer",
)
_ACTIONS = (
    '{"action": "click", "coordinate": [540, 1200]}',
    '{"action": "long_press", "coordinate": [100, 250]}',
    '{"action": "swipe", "coordinate": [540, 1800], "coordinate2": [540, 600]}',
    '{"action": "type", "text": "hello world"}',
    '{"action": "system_button", "button": "Back"}',
    '{"action": "system_button", "button": "Home"}',
    '{"action": "system_button", "button": "Enter"}',
    '{"action": "open_app", "text": "Settings"}',
    '{"action": "answer", "text": "42"}',
    '{"action": "key", "text": "Menu"}',
    '{"action": "wait", "time": 2}',
    '{"action": "terminate", "status": "success"}',
    '{"action": "terminate", "status": "failure"}',
)
_PROSE = (
    "The screen shows the home page. I should open the app and tap the search button.",
    "1. Open the Settings app. 2. Tap Wi-Fi. 3. Turn it on. Finished",
    "A: successful or partially successful. B: failed, wrong page. C: failed, no change.",
    "Action: click | Description: tap the button | Outcome: Successful | Feedback: None",
    "The user wants to send a message to Alice with the text hello.",
)


def corpus() -> list[str]:
    """The training text: section headings, action JSON, prose, digits."""
    lines = [f"### {h} ###" for h in _HEADINGS]
    lines += list(_ACTIONS) + list(_PROSE)
    lines += [" ".join(str(n) for n in range(start, start + 50)) for start in range(0, 1100, 50)]
    return lines * 4


def build_tokenizer(vocab_size: int = 512):
    """A Qwen2 BPE tokenizer trained on :func:`corpus` (unseen text still round-trips)."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import Qwen2Tokenizer
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer)
    return Qwen2Tokenizer(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", padding_side="left"
    )


def build_tiny_vlm(
    out_dir: str | Path, *, seed: int = 0, min_pixels: int = 56 * 56, max_pixels: int = 112 * 112
) -> Path:
    """Write a loadable tiny Qwen2.5-VL (model, processor, tokenizer) to ``out_dir``."""
    import torch
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    from agent_runtime.models.hf import ImageOnlyQwen2_5_VLProcessor, register_processors

    register_processors()
    tokenizer = build_tokenizer()
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    processor = ImageOnlyQwen2_5_VLProcessor(
        image_processor=Qwen2VLImageProcessorPil(min_pixels=min_pixels, max_pixels=max_pixels),
        tokenizer=tokenizer,
        chat_template=CHAT_TEMPLATE,
    )
    hidden = 64  # head_dim 32 = 2 * sum(mrope_section)
    config = Qwen2_5_VLConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": hidden,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "max_position_embeddings": 4096,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [4, 6, 6]},
            "bos_token_id": None,
            "eos_token_id": ids["<|im_end|>"],
            "pad_token_id": ids["<|endoftext|>"],
        },
        vision_config={
            "depth": 2,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_heads": 2,
            "out_hidden_size": hidden,
            "window_size": 112,
            "fullatt_block_indexes": [1],
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    torch.manual_seed(seed)
    model = Qwen2_5_VLForConditionalGeneration(config)
    return save_tiny(model, processor, out_dir, eos_id=ids["<|im_end|>"], pad_id=ids["<|endoftext|>"])


def save_tiny(model: Any, processing_class: Any, out_dir: str | Path, *, eos_id: int, pad_id: int) -> Path:
    """Give a freshly built tiny model its generation ids and save it with its processor/tokenizer."""
    model.generation_config.eos_token_id = eos_id
    model.generation_config.pad_token_id = pad_id
    model.generation_config.bos_token_id = None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    processing_class.save_pretrained(out)
    return out


def run_cli(
    module: str, doc: str | None, build: Callable[..., Path], what: str, argv: list[str] | None = None
) -> None:
    """``python -m MODULE OUT_DIR [--seed N]`` for a tiny-model builder."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=(doc or what).split("\n")[0])
    parser.add_argument("out_dir", type=Path, help="directory to write the model to")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights")
    args = parser.parse_args(argv)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    out = build(args.out_dir, seed=args.seed)
    print(f"wrote {what} to {out}")


def main(argv: list[str] | None = None) -> None:
    run_cli("agent_runtime.testing.tiny_vlm", __doc__, build_tiny_vlm, "tiny Qwen2.5-VL", argv)


if __name__ == "__main__":
    main()
