"""The in-process transformers backend answers exactly like the HTTP path."""

from __future__ import annotations

import asyncio
import io
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from agent_runtime.config import ModelConfig
from agent_runtime.coords import ImageBudget
from agent_runtime.errors import ModelError
from agent_runtime.models import OpenAIChatModel, TransformersChatModel, encode_screenshot, make_chat_model

pytestmark = pytest.mark.train


@pytest.fixture(scope="module")
def in_process(tiny_vlm_dir: Path) -> TransformersChatModel:
    model = make_chat_model(ModelConfig(model=f"transformers:{tiny_vlm_dir}", max_tokens=12, temperature=0.0))
    assert isinstance(model, TransformersChatModel)
    return model


@pytest.fixture(scope="module")
def http_url(in_process: TransformersChatModel) -> Iterator[str]:
    """The same engine behind our FastAPI app, served by uvicorn in a thread."""
    from agent_runtime.models.server import ServerThread, create_app

    with ServerThread(create_app(in_process.engine)) as url:
        yield url


def _prompt() -> list:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (720, 1280), (250, 250, 250)).save(buf, "PNG")
    part = encode_screenshot(buf.getvalue(), ImageBudget()).part()
    return [
        SystemMessage("You are a phone agent."),
        HumanMessage(content=[part, {"type": "text", "text": "### Current Subgoal ### open Settings"}]),
    ]


def test_same_reply_shape_in_process_and_over_http(in_process: TransformersChatModel, http_url: str) -> None:
    over_http = OpenAIChatModel(base_url=http_url, max_tokens=12, temperature=0.0)
    a = in_process.invoke(_prompt())
    b = over_http.invoke(_prompt())
    assert a.content == b.content  # greedy: the same tokens either way
    assert a.usage_metadata == b.usage_metadata and a.usage_metadata["input_tokens"] > 16
    assert set(a.response_metadata) == set(b.response_metadata)
    for key in ("model_name", "finish_reason", "attempts", "choice_index", "token_usage"):
        assert a.response_metadata[key] == b.response_metadata[key], key
    assert a.response_metadata["model_name"] == Path(in_process.path).name


def test_in_process_sampling_options(in_process: TransformersChatModel) -> None:
    outs = in_process.sample(_prompt(), 3, temperature=1.0, seed=7, return_token_ids=True, logprobs=True)
    assert len(outs) == 3
    assert [o.response_metadata["choice_index"] for o in outs] == [0, 1, 2]
    for o in outs:
        assert len(o.response_metadata["token_ids"]) == len(o.response_metadata["logprobs"])
        assert o.usage_metadata["output_tokens"] == len(o.response_metadata["token_ids"])
    again = in_process.sample(_prompt(), 3, temperature=1.0, seed=7)
    assert [o.content for o in again] == [o.content for o in outs]
    greedy = in_process.sample("### Thought ###", 2)  # temperature 0: n copies of one decode
    assert greedy[0].content == greedy[1].content


def test_async_and_concurrent_calls(in_process: TransformersChatModel) -> None:
    expected = in_process.invoke("### Plan ###").content
    assert asyncio.run(in_process.ainvoke("### Plan ###")).content == expected
    results: list[str] = []
    threads = [
        threading.Thread(target=lambda: results.append(in_process.invoke("### Plan ###").content))
        for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert results == [expected] * 3


def test_bad_input_is_a_model_error(in_process: TransformersChatModel, tiny_vlm_dir: Path) -> None:
    bad = [HumanMessage(content=[{"type": "image_url", "image_url": {"url": "file:///etc/passwd"}}])]
    with pytest.raises(ModelError, match="only data: image URLs"):
        in_process.invoke(bad)
    missing = TransformersChatModel(path=str(tiny_vlm_dir / "nope"))
    with pytest.raises(ModelError, match="does not exist"):
        missing.invoke("hi")


def test_stop_strings_cut_the_reply(in_process: TransformersChatModel) -> None:
    full = in_process.invoke("### Thought ###", max_tokens=24)
    text = full.content
    assert isinstance(text, str) and len(text) > 6
    stop = text[len(text) // 2 : len(text) // 2 + 2]
    cut = in_process.invoke("### Thought ###", max_tokens=24, stop=[stop])
    assert cut.content == text[: text.find(stop)]
    assert cut.response_metadata["finish_reason"] == "stop"
