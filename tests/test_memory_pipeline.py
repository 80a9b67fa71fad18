"""build_knowledge: queries, retrieval, budget, and degradation instead of errors."""

import logging
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from agent_runtime.config import MemoryConfig
from agent_runtime.errors import ModelError
from agent_runtime.memory import build_knowledge
from agent_runtime.memory.pipeline import _compose, _Item, heuristic_queries, parse_queries
from agent_runtime.memory.store import MemoryStore
from agent_runtime.memory.web import DELIMITER, PREAMBLE
from agent_runtime.role_outputs import RagOutput

ALARM_DOC = """\
# Clock app
## Alarms
Open the Clock app and switch to the Alarm tab. Tap the + button, choose the hour and the minutes,
give it a label and tap OK.
"""
SHOP_DOC = """\
# Shop app
## Checkout
Open Shop, tap the cart icon in the top right, review the items and tap Checkout. Payment uses the
saved card unless you choose another one.
"""
INSTRUCTION = "Wake me up at 6:15 tomorrow with an alarm called Flight"


class RecordingAsk:
    """A test double for the runtime's traced text-model call: canned replies, prompts kept."""

    def __init__(self, *replies: str | Exception) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


@pytest.fixture
def cfg(tmp_path: Path) -> MemoryConfig:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "clock.md").write_text(ALARM_DOC, encoding="utf-8")
    (docs / "shop.md").write_text(SHOP_DOC, encoding="utf-8")
    config = MemoryConfig(dir=tmp_path / "mem", k=2)
    MemoryStore.from_config(config).add_paths([docs])
    return config


def test_empty_store_and_no_web_asks_nothing(tmp_path):
    ask = RecordingAsk()
    out = build_knowledge(INSTRUCTION, config=MemoryConfig(dir=tmp_path / "empty"), ask=ask)
    assert out == RagOutput()
    assert ask.prompts == []


def test_without_a_model_documents_are_quoted_with_sources(cfg):
    out = build_knowledge(INSTRUCTION, config=cfg)
    assert out.queries == heuristic_queries(INSTRUCTION)
    assert out.knowledge.startswith("From the user's documents:\n[1] clock.md: Clock app > Alarms")
    assert "tap OK" in out.knowledge
    assert out.sources[0].startswith("doc:") and out.sources[0].endswith("clock.md#0")
    assert "Checkout" not in out.knowledge.split("[2]")[0]


def test_with_a_model_queries_and_summary_come_from_it(cfg):
    ask = RecordingAsk(
        '1. how to set an alarm in the Clock app\n- "alarm label android"\n'
        "3. how to set an alarm in the Clock app",
        "- Clock app > Alarm tab > + > set 6:15 > label Flight > OK",
    )
    out = build_knowledge(INSTRUCTION, config=cfg, ask=ask)
    assert out.queries == ["how to set an alarm in the Clock app", "alarm label android"]
    assert INSTRUCTION in ask.prompts[0]
    assert "[1] clock.md: Clock app > Alarms" in ask.prompts[1]
    assert (
        out.knowledge
        == "From the user's documents:\n- Clock app > Alarm tab > + > set 6:15 > label Flight > OK"
    )
    assert any(s.endswith("clock.md#0") for s in out.sources)


def test_model_saying_none_drops_the_documents(cfg):
    out = build_knowledge(INSTRUCTION, config=cfg, ask=RecordingAsk("alarm", "NONE."))
    assert out.knowledge == "" and out.sources == [] and out.queries == ["alarm"]


def test_a_failing_model_degrades_to_heuristics(cfg, caplog):
    ask = RecordingAsk(ModelError("server down"), ModelError("server down"))
    with caplog.at_level(logging.WARNING, logger="agent_runtime.memory.pipeline"):
        out = build_knowledge(INSTRUCTION, config=cfg, ask=ask)
    assert out.queries == heuristic_queries(INSTRUCTION)
    assert "[1] clock.md" in out.knowledge
    assert caplog.text.count("server down") == 2


def test_knowledge_respects_the_character_budget(cfg):
    from agent_runtime.memory.pipeline import build_knowledge as build

    full = build(INSTRUCTION, config=cfg)
    out = build(INSTRUCTION, config=cfg, budget_chars=150)
    assert len(full.knowledge) > 150
    assert 0 < len(out.knowledge) <= 150
    assert out.knowledge.endswith("…")
    assert len(out.sources) == 1


def test_web_blocks_are_never_cut_in_half():
    web = [
        _Item(
            f'<{DELIMITER} source="u{n}">\n' + "w" * 150 + f"\n</{DELIMITER}>", [f"web:u{n}"], cuttable=False
        )
        for n in range(3)
    ]
    text, sources = _compose([("Docs:", [_Item("d" * 100, ["doc:a#0"])]), (PREAMBLE, web)], 700)
    assert len(text) <= 700
    assert text.count(f"<{DELIMITER} source=") == text.count(f"</{DELIMITER}>") == len(sources) - 1 >= 1
    assert sources[0] == "doc:a#0"


def test_a_broken_store_is_a_warning_not_an_error(tmp_path, caplog):
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    with caplog.at_level(logging.WARNING, logger="agent_runtime.memory.pipeline"):
        out = build_knowledge(INSTRUCTION, config=MemoryConfig(dir=blocker / "mem"))
    assert out == RagOutput()
    assert "memory store unavailable" in caplog.text


def test_a_corrupt_database_is_a_warning_not_an_error(tmp_path, caplog):
    mem = tmp_path / "mem"
    mem.mkdir()
    (mem / "chroma.sqlite3").write_bytes(b"this is not a sqlite database" * 100)
    with caplog.at_level(logging.WARNING, logger="agent_runtime.memory.pipeline"):
        out = build_knowledge(INSTRUCTION, config=MemoryConfig(dir=mem))
    assert out == RagOutput()
    assert "RAG:" in caplog.text


def test_web_search_that_hangs_stays_within_its_bound(cfg, monkeypatch):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.append(srv.accept()[0]), daemon=True).start()
    monkeypatch.setenv("DDGS_PROXY", f"http://127.0.0.1:{srv.getsockname()[1]}")
    web_cfg = cfg.model_copy(update={"web_search": True, "web_timeout_s": 1.0})
    start = time.monotonic()
    out = build_knowledge(INSTRUCTION, config=web_cfg)
    elapsed = time.monotonic() - start
    srv.close()
    assert elapsed < 1.0 + 2.0  # the web bound plus local retrieval
    assert "[1] clock.md" in out.knowledge and DELIMITER not in out.knowledge
    assert held, "the search never reached the network layer"


def test_query_parsing_and_heuristics():
    assert parse_queries('["a b", "c"]') == ["a b", "c"]
    assert parse_queries("Query 1: alarm app\n\n* `wifi settings`\n2) Alarm App") == [
        "alarm app",
        "wifi settings",
    ]
    assert parse_queries("Here are the queries:\nwifi toggle") == ["wifi toggle"]
    assert parse_queries("") == []
    assert heuristic_queries("Turn off   the Wi-Fi") == ["Turn off the Wi-Fi", "Turn off Wi-Fi"]
    assert heuristic_queries("alarm") == ["alarm"]


def test_importing_memory_stays_light():
    code = (
        "import sys, agent_runtime.memory, agent_runtime.cli.memory;"
        "print([m for m in ('chromadb', 'sentence_transformers', 'torch', 'ddgs') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
