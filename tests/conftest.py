"""Shared pytest fixtures. Each block belongs to one area; append yours, don't rewrite others'."""

from __future__ import annotations

from pathlib import Path

import pytest

# --- models: the tiny Qwen2.5-VL --------------------------------------------------------------------


@pytest.fixture(scope="session")
def tiny_vlm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Qwen2.5-VL (model + processor + tokenizer) built once per pytest session.

    Loads with ``AutoModelForImageTextToText.from_pretrained(dir)`` and
    ``agent_runtime.models.load_processor(dir)``; an image is ~16 tokens. Tests using it
    import torch: mark them ``@pytest.mark.train``.
    """
    from agent_runtime.testing.tiny_vlm import build_tiny_vlm

    return build_tiny_vlm(tmp_path_factory.mktemp("tiny_vlm") / "tiny-vlm", seed=0)
