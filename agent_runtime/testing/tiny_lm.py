"""A tiny text-only Qwen2 causal LM built offline, for tests of the text-only model paths.

The counterpart of :mod:`.tiny_vlm` for roles that read the UI tree instead of a screenshot: the
same in-memory BPE tokenizer and chat template (so prompts tokenize to few ids), no vision tower,
a ~0.1M-parameter ``Qwen2ForCausalLM``. Deterministic for a seed; loads with
``AutoModelForCausalLM`` / ``AutoTokenizer`` and through every loader of
:mod:`agent_runtime.models` (``is_text_only`` is true for it).

Usage: ``python -m agent_runtime.testing.tiny_lm OUT_DIR [--seed N]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from agent_runtime.testing.tiny_vlm import CHAT_TEMPLATE, build_tokenizer


def build_tiny_lm(out_dir: str | Path, *, seed: int = 0) -> Path:
    """Write a loadable tiny text-only Qwen2 (model + tokenizer with a chat template) to ``out_dir``."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    tokenizer = build_tokenizer()
    tokenizer.chat_template = CHAT_TEMPLATE
    end, pad = tokenizer.convert_tokens_to_ids("<|im_end|>"), tokenizer.convert_tokens_to_ids("<|endoftext|>")
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=4096,
        bos_token_id=None,
        eos_token_id=end,
        pad_token_id=pad,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = end
    model.generation_config.pad_token_id = pad
    model.generation_config.bos_token_id = None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m agent_runtime.testing.tiny_lm", description=__doc__.split("\n")[0]
    )
    parser.add_argument("out_dir", type=Path, help="directory to write the model to")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights")
    args = parser.parse_args(argv)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    out = build_tiny_lm(args.out_dir, seed=args.seed)
    print(f"wrote tiny text-only Qwen2 to {out}")


if __name__ == "__main__":
    main()
