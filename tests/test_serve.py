"""``agent-runtime serve`` as a real process with the tiny model, talked to over real HTTP."""

from __future__ import annotations

import asyncio
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from langchain_core.messages import HumanMessage

from agent_runtime.coords import ImageBudget
from agent_runtime.errors import ModelError
from agent_runtime.models import OpenAIChatModel, encode_screenshot

pytestmark = pytest.mark.train

SERVED = "tiny-vlm"


def _cli() -> list[str]:
    script = Path(sys.executable).with_name("agent-runtime")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from agent_runtime.cli import main; main()"]


@pytest.fixture(scope="module")
def server(tiny_vlm_dir: Path) -> Iterator[str]:
    """The server's /v1 URL; ``--port 0`` and the startup line avoid port races."""
    proc = subprocess.Popen(
        [
            *_cli(),
            "serve",
            "--model",
            str(tiny_vlm_dir),
            "--port",
            "0",
            "--served-model-name",
            SERVED,
            "--threads",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
    deadline = time.monotonic() + 120
    seen = []
    url = None
    while url is None:
        try:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            proc.kill()
            pytest.fail(f"server did not start: {''.join(seen)[-2000:]}")
        seen.append(line)
        if match := re.search(r"listening at (http://\S+/v1)", line):
            url = match.group(1)
            assert f"'{SERVED}'" in line and "transformers on cpu" in line
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def screenshot() -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (1080, 2400), (30, 160, 90)).save(buf, "PNG")
    return buf.getvalue()


def _prompt(screenshot: bytes) -> list[HumanMessage]:
    part = encode_screenshot(screenshot, ImageBudget()).part()
    return [HumanMessage(content=[part, {"type": "text", "text": "### User Request ### open Settings"}])]


def test_models_and_health(server: str) -> None:
    listed = httpx.get(f"{server}/models").json()
    assert listed["object"] == "list" and [m["id"] for m in listed["data"]] == [SERVED]
    assert httpx.get(server.removesuffix("/v1") + "/health").json()["status"] == "ok"


def test_chat_with_text_and_image_n2_and_usage(server: str, screenshot: bytes) -> None:
    model = OpenAIChatModel(base_url=server, max_tokens=12, temperature=1.0, seed=3)  # model="auto"
    one = model.invoke(_prompt(screenshot))
    assert one.response_metadata["model_name"] == SERVED
    assert one.usage_metadata["input_tokens"] > 16  # text + image tokens
    assert 1 <= one.usage_metadata["output_tokens"] <= 12
    assert one.response_metadata["finish_reason"] in ("stop", "length")
    two = model.sample(_prompt(screenshot), 2)
    assert len(two) == 2
    assert (
        sum(m.usage_metadata["output_tokens"] for m in two)
        == two[0].response_metadata["token_usage"]["completion_tokens"]
    )
    again = asyncio.run(model.ainvoke(_prompt(screenshot)))
    assert again.content == one.content  # same seed, same sample


def test_token_ids_and_logprobs_line_up(server: str, screenshot: bytes) -> None:
    model = OpenAIChatModel(
        base_url=server,
        model=SERVED,
        max_tokens=10,
        temperature=0.8,
        return_token_ids=True,
        logprobs=True,
        top_logprobs=2,
    )
    reply = model.invoke(_prompt(screenshot))
    meta = reply.response_metadata
    ids, lps = meta["token_ids"], meta["logprobs"]
    assert len(ids) == len(lps) == reply.usage_metadata["output_tokens"]
    assert len(meta["prompt_token_ids"]) == reply.usage_metadata["input_tokens"]
    assert all(lp["logprob"] <= 0 and len(lp["top_logprobs"]) == 2 for lp in lps)
    assert all(lp["logprob"] <= lp["top_logprobs"][0]["logprob"] + 1e-5 for lp in lps)


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        ({}, 400, "messages"),
        ({"messages": []}, 400, "messages"),
        ({"messages": [{"role": "user", "content": "hi"}], "temperature": 5}, 400, "temperature"),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "image_url", "image_url": {"url": "http://x/y.png"}}],
                    }
                ]
            },
            400,
            "only data:",
        ),
        ({"messages": [{"role": "user", "content": "hi"}], "stream": True}, 400, "stream"),
        ({"messages": [{"role": "user", "content": "hi"}], "model": "nope"}, 404, "does not exist"),
    ],
)
def test_bad_requests_get_openai_style_errors(server: str, body: dict, status: int, needle: str) -> None:
    resp = httpx.post(f"{server}/chat/completions", json=body)
    assert resp.status_code == status
    err = resp.json()["error"]
    assert needle in err["message"] and err["code"] == status


def test_malformed_json_is_400(server: str) -> None:
    resp = httpx.post(
        f"{server}/chat/completions", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert resp.status_code == 400 and "error" in resp.json()


def test_client_surfaces_server_400_as_model_error(server: str) -> None:
    model = OpenAIChatModel(base_url=server, model=SERVED)
    bad = [HumanMessage(content=[{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}])]
    with pytest.raises(ModelError, match="HTTP 400.*readable image") as info:
        model.invoke(bad)
    assert info.value.context["attempts"] == 1


def test_lora_adapter_load_use_unload(server: str, tiny_vlm_dir: Path, tmp_path: Path) -> None:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForImageTextToText

    base = AutoModelForImageTextToText.from_pretrained(tiny_vlm_dir)
    peft_model = get_peft_model(
        base, LoraConfig(r=4, lora_alpha=16, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    )
    peft_model.save_pretrained(tmp_path / "adapter")

    body = {
        "messages": [{"role": "user", "content": "### Thought ###"}],
        "max_tokens": 4,
        "temperature": 0,
        "logprobs": True,
    }

    def first_logprob(model: str) -> float:
        resp = httpx.post(f"{server}/chat/completions", json=body | {"model": model})
        assert resp.status_code == 200, resp.text
        assert resp.json()["model"] == model
        return resp.json()["choices"][0]["logprobs"]["content"][0]["logprob"]

    before = first_logprob(SERVED)
    load = {"lora_name": "policy-v1", "lora_path": str(tmp_path / "adapter")}
    resp = httpx.post(f"{server}/load_lora_adapter", json=load)
    assert resp.status_code == 200 and "policy-v1" in resp.text
    assert httpx.post(f"{server}/load_lora_adapter", json=load).status_code == 400  # vLLM: unload first
    listed = {m["id"]: m for m in httpx.get(f"{server}/models").json()["data"]}
    assert listed["policy-v1"]["parent"] == SERVED
    with_adapter = first_logprob("policy-v1")
    assert abs(with_adapter - before) > 1e-4
    assert first_logprob(SERVED) == pytest.approx(before, abs=1e-5)  # the base is untouched
    assert httpx.post(f"{server}/unload_lora_adapter", json={"lora_name": "policy-v1"}).status_code == 200
    assert httpx.post(f"{server}/unload_lora_adapter", json={"lora_name": "policy-v1"}).status_code == 404
    assert "policy-v1" not in {m["id"] for m in httpx.get(f"{server}/models").json()["data"]}
    bad = httpx.post(f"{server}/load_lora_adapter", json={"lora_name": "x", "lora_path": str(tmp_path)})
    assert bad.status_code == 400 and "adapter_config.json" in bad.json()["error"]["message"]


def test_serve_cli_errors_are_messages_not_tracebacks(tmp_path: Path) -> None:
    out = subprocess.run(
        [*_cli(), "serve", "--model", str(tmp_path / "missing")], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2
    assert "is not a directory" in " ".join(out.stderr.split()) and "Traceback" not in out.stderr


def test_prompt_beyond_the_context_is_400_counted_after_the_template(server: str) -> None:
    # The tiny model's context is 4096 tokens; its template and each "hi " word add tokens.
    long = {"messages": [{"role": "user", "content": "hi " * 4200}], "max_tokens": 4}
    resp = httpx.post(f"{server}/chat/completions", json=long)
    assert resp.status_code == 400, resp.text
    message = resp.json()["error"]["message"]
    assert "maximum context length is 4096 tokens" in message and "in the messages" in message
    budget = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 10**9}
    resp = httpx.post(f"{server}/chat/completions", json=budget)
    assert resp.status_code == 400 and "in the completion" in resp.json()["error"]["message"]


def test_huge_prompt_is_refused_at_once_and_blocks_no_one(server: str) -> None:
    start = time.perf_counter()
    huge = {"messages": [{"role": "user", "content": "x" * 20_000_000}], "max_tokens": 4}
    resp = httpx.post(f"{server}/chat/completions", json=huge, timeout=60)
    assert resp.status_code == 400 and "far more than fits" in resp.json()["error"]["message"]
    ok = httpx.post(
        f"{server}/chat/completions",
        json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2},
        timeout=60,
    )
    assert ok.status_code == 200
    assert time.perf_counter() - start < 15  # seconds, not the minutes it took to tokenize and run


def test_decompression_bomb_and_huge_seed_are_400_not_500(server: str) -> None:
    import base64
    import io
    import struct
    import zlib

    from PIL import Image

    buf = io.BytesIO()
    Image.new("L", (1, 1)).save(buf, "PNG")
    png = bytearray(buf.getvalue())
    png[16:24] = struct.pack(">II", 40_000, 40_000)
    png[29:33] = struct.pack(">I", zlib.crc32(bytes(png[12:29])))
    url = "data:image/png;base64," + base64.b64encode(bytes(png)).decode()
    bomb = {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]}
    resp = httpx.post(f"{server}/chat/completions", json=bomb)
    assert resp.status_code == 400 and "decompression bomb" in resp.json()["error"]["message"]
    seed = {"messages": [{"role": "user", "content": "hi"}], "seed": 2**70, "max_tokens": 2}
    resp = httpx.post(f"{server}/chat/completions", json=seed)
    assert resp.status_code == 400 and resp.json()["error"]["param"] == "seed"
