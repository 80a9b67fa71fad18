"""A tiny text-only Qwen2 causal LM built offline, for tests of the text-only model paths.

The counterpart of :mod:`.tiny_vlm` for roles that read the UI tree instead of a screenshot: the
same in-memory BPE tokenizer and chat template (so prompts tokenize to few ids), no vision tower,
a ~0.1M-parameter ``Qwen2ForCausalLM``. Deterministic for a seed; loads with
``AutoModelForCausalLM`` / ``AutoTokenizer`` and through every loader of
:mod:`agent_runtime.models` (``is_text_only`` is true for it).

Usage: ``python -m agent_runtime.testing.tiny_lm OUT_DIR [--seed N]``.
"""

from __future__ import annotations

from pathlib import Path

from agent_runtime.testing.tiny_vlm import CHAT_TEMPLATE, build_tokenizer, run_cli, save_tiny


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
    return save_tiny(model, tokenizer, out_dir, eos_id=end, pad_id=pad)


def main(argv: list[str] | None = None) -> None:
    run_cli("agent_runtime.testing.tiny_lm", __doc__, build_tiny_lm, "tiny text-only Qwen2", argv)


if __name__ == "__main__":
    main()
