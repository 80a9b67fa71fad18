"""The knowledge store: a real persistent chromadb and the real offline MiniLM embeddings."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_runtime.cli import app
from agent_runtime.errors import ConfigError, MemoryStoreError
from agent_runtime.memory.embeddings import _offline, bundled_model_path, get_embedder
from agent_runtime.memory.store import MemoryStore, iter_text_files

DOCS = {
    "clock.md": """\
# Clock app

## Alarms
Open the Clock app and switch to the Alarm tab. Tap the + button, choose the hour and the
minutes on the dial, give it a label and tap OK. The alarm rings at that time every day.

## Stopwatch
The Stopwatch tab has a Start button. Tap Lap to record lap times, Reset to clear them.
""",
    "expenses.md": """\
# Expenses app
To record a purchase, open Expenses, tap "Add expense", type the amount, pick a category such
as Food or Transport, and tap Save. The total for the month is shown at the top.
""",
    "wifi.txt": """\
Wireless networks: open Settings, tap Network & internet, then Wi-Fi. Flip the switch to turn
the radio on or off; tap a network name and type its password to join it.
""",
    "contacts.md": """\
# Contacts
Add a person: open Contacts, tap Create contact, fill in first name, last name and phone number,
then tap Save. To call someone, open their entry and tap the phone icon.
""",
}

PARAPHRASES = [
    ("make the phone wake me up at half past six", "clock.md", "Clock app > Alarms"),
    ("log the money I spent on lunch today", "expenses.md", "Expenses app"),
    ("connect to my home wireless internet", "wifi.txt", ""),
    ("save a new friend's number in the address book", "contacts.md", "Contacts"),
    ("measure how long each lap of my run takes", "clock.md", "Clock app > Stopwatch"),
]


def write_docs(d: Path) -> Path:
    d.mkdir()
    for name, text in DOCS.items():
        (d / name).write_text(text, encoding="utf-8")
    (d / ".hidden").mkdir()
    (d / ".hidden" / "secret.md").write_text("# hidden\nnot ingested", encoding="utf-8")
    (d / "image.png").write_bytes(b"\x89PNG not text")
    return d


@pytest.fixture
def docs_dir(tmp_path: Path) -> Path:
    return write_docs(tmp_path / "docs")


@pytest.fixture
def store(tmp_path: Path, docs_dir: Path) -> MemoryStore:
    s = MemoryStore(tmp_path / "mem")
    s.add_paths([docs_dir])
    return s


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory) -> MemoryStore:
    """One ingested store for the read-only tests."""
    root = tmp_path_factory.mktemp("shared")
    s = MemoryStore(root / "mem")
    s.add_paths([write_docs(root / "docs")])
    return s


def test_embedder_is_offline_normalised_and_shared():
    assert (bundled_model_path() / "modules.json").is_file()
    e = get_embedder()
    assert get_embedder() is e
    v = e.encode(["hello world", "good morning"])
    assert len(v) == 2 and len(v[0]) == e.dimension == 384
    assert abs(sum(x * x for x in v[0]) - 1.0) < 1e-4


def test_loading_forbids_downloads_and_restores_the_environment(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")
    with _offline():
        assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["TRANSFORMERS_OFFLINE"] == "1"
    assert "HF_HUB_OFFLINE" not in os.environ
    assert os.environ["TRANSFORMERS_OFFLINE"] == "0"


def test_missing_custom_model_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError) as exc:
        get_embedder(str(tmp_path / "no-such-model"))
    assert "offline" in str(exc.value) and exc.value.hint


def test_walks_directories_skipping_hidden_and_non_text(docs_dir):
    files = iter_text_files([docs_dir])
    assert sorted(f.name for f in files) == sorted(DOCS)
    with pytest.raises(ConfigError):
        iter_text_files([docs_dir / "missing.md"])


@pytest.mark.parametrize(("query", "doc", "heading"), PARAPHRASES)
def test_paraphrased_queries_find_the_right_document(shared_store, query, doc, heading):
    hits = shared_store.search(query, k=3)
    assert hits, "no hits"
    top = hits[0]
    assert Path(top.source).name == doc, [(Path(h.source).name, h.score) for h in hits]
    assert top.metadata["heading"] == heading
    assert top.score > hits[-1].score or len(hits) == 1
    assert 0.2 < top.score <= 1.0


def test_readding_a_file_replaces_its_chunks(store, docs_dir):
    before = {s.source: s.chunks for s in store.sources()}
    clock = str((docs_dir / "clock.md").resolve())
    assert before[clock] == 2
    (docs_dir / "clock.md").write_text(
        "# Clock app\nOnly the world clock is described now.\n", encoding="utf-8"
    )
    store.add_paths([docs_dir / "clock.md"])
    after = {s.source: s.chunks for s in store.sources()}
    assert after[clock] == 1
    assert store.count("knowledge") == sum(after.values())
    assert all("Stopwatch" not in h.text for h in store.search("stopwatch lap times", k=5))


def test_store_survives_a_process_restart(shared_store):
    code = textwrap.dedent(
        f"""
        import json
        from agent_runtime.memory.store import MemoryStore
        s = MemoryStore({str(shared_store.dir)!r})
        hits = s.search("make the phone wake me up at half past six", k=1)
        print(json.dumps({{"n": s.count("knowledge"), "top": hits[0].source, "sources": len(s.sources())}}))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data["n"] == shared_store.count("knowledge")
    assert Path(data["top"]).name == "clock.md"
    assert data["sources"] == len(DOCS)


def test_a_store_built_with_another_model_is_refused(store, tmp_path):
    other = MemoryStore(tmp_path / "mem", embedding_model=str(bundled_model_path()))
    with pytest.raises(ConfigError) as exc:
        other.search("alarm")
    assert "all-MiniLM-L6-v2 (bundled)" in str(exc.value)
    assert "memory clear" in exc.value.hint


def test_unusable_directory_is_a_memory_store_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(MemoryStoreError):
        MemoryStore(blocker / "mem")


def test_clear_empties_both_collections(store):
    store.upsert("experience", ["r1"], ["some task"], [{"guidance": "g"}])
    store.clear()
    assert store.count("knowledge") == 0 and store.count("experience") == 0
    assert store.sources() == []


def test_cli_add_search_list_clear(tmp_path, docs_dir):
    runner = CliRunner(env={"COLUMNS": "250"})
    mem = str(tmp_path / "cli-mem")
    res = runner.invoke(app, ["memory", "add", str(docs_dir), "--dir", mem])
    assert res.exit_code == 0, res.output
    assert f"added {len(DOCS)} file(s)" in res.output

    res = runner.invoke(app, ["memory", "search", "log the money I spent on lunch", "--k", "2", "--dir", mem])
    assert res.exit_code == 0, res.output
    assert "expenses.md" in res.output and "score" in res.output

    res = runner.invoke(app, ["memory", "list", "--dir", mem])
    assert res.exit_code == 0 and "contacts.md" in res.output and f"{len(DOCS)} document(s)" in res.output

    res = runner.invoke(app, ["memory", "clear", "--dir", mem])
    assert res.exit_code == 2 and "--yes" in res.output
    assert MemoryStore(mem).count("knowledge") > 0

    res = runner.invoke(app, ["memory", "clear", "--yes", "--dir", mem])
    assert res.exit_code == 0
    res = runner.invoke(app, ["memory", "list", "--dir", mem])
    assert "no documents" in res.output


def test_cli_bad_path_is_a_message_not_a_traceback(tmp_path):
    res = CliRunner(env={"COLUMNS": "250"}).invoke(
        app, ["memory", "add", str(tmp_path / "nope.md"), "--dir", str(tmp_path / "m")]
    )
    assert res.exit_code == 2
    assert "does not exist" in res.output and "Traceback" not in res.output
