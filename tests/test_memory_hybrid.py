"""Retrieval modes: BM25, RRF and sentence max-sim by hand; dense vs maxsim vs hybrid on the labelled set.

The set (``tests/data/retrieval``) is ingested into a real chromadb store with the real offline
MiniLM model; ``benchmarks/memory.py --json`` reports the same numbers.
"""

import importlib.util
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from agent_runtime.cli import app
from agent_runtime.memory.hybrid import BM25, max_sim, rrf, sentences, tokenize
from agent_runtime.memory.store import SENTENCES, MemoryStore

ROOT = Path(__file__).resolve().parents[1]


def _benchmark():
    spec = importlib.util.spec_from_file_location("memory_benchmark", ROOT / "benchmarks" / "memory.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _benchmark()


def test_tokenize_lowercases_drops_stopwords_and_plurals():
    assert tokenize("Alarms ring in the Morning; batteries") == ["alarm", "ring", "morning", "battery"]
    assert tokenize("Wi-Fi settings: Press") == ["wi", "fi", "setting", "press"]


def test_bm25_scores_match_the_formula_by_hand():
    # N = 3, avgdl = (3 + 2 + 4) / 3 = 3, k1 = 1.5, b = 0.75.
    index = BM25([["alarm", "ring", "morning"], ["ring", "volume"], ["timer", "alarm", "alarm", "beep"]])
    idf_alarm = 0.47000362924573558  # ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln 1.6
    idf_volume = 0.98082925301172619  # ln(1 + (3 - 1 + 0.5) / (1 + 0.5)) = ln 8/3
    assert index.idf("alarm") == pytest.approx(idf_alarm)
    assert index.idf("ring") == pytest.approx(idf_alarm)
    assert index.idf("volume") == pytest.approx(idf_volume)
    assert index.idf("absent") == pytest.approx(math.log(1 + 3.5 / 0.5))

    # doc 0: tf 1, |d| = avgdl -> 2.5 / (1 + 1.5) = 1; doc 2: tf 2, |d| = 4 -> 5 / (2 + 1.875).
    assert index.scores(["alarm"]) == pytest.approx({0: idf_alarm * 1.0, 2: idf_alarm * 5 / 3.875})
    # doc 1: |d| = 2 -> norm 1.125, each term 2.5 / 2.125; a repeated query term counts once.
    assert index.scores(["ring", "volume", "volume"]) == pytest.approx(
        {0: idf_alarm, 1: (idf_alarm + idf_volume) * 2.5 / 2.125}
    )
    assert index.top(["alarm"], 5) == [2, 0]
    assert index.top(["ring", "volume"], 1) == [1]
    assert BM25([]).scores(["alarm"]) == {}


def test_rrf_fuses_by_reciprocal_rank():
    dense, lexical = ["a", "b", "c"], ["c", "a"]
    fused = rrf([dense, lexical])
    assert fused == pytest.approx({"a": 1 / 61 + 1 / 62, "b": 1 / 62, "c": 1 / 63 + 1 / 61})
    assert sorted(fused, key=lambda x: -fused[x]) == ["a", "c", "b"]
    # k only sets how fast the weight of a rank decays: with k = 0, a = 1 + 1/2, c = 1/3 + 1.
    small = rrf([dense, lexical], k=0)
    assert small == pytest.approx({"a": 1.5, "b": 0.5, "c": 1 / 3 + 1})


def test_max_sim_on_toy_vectors_by_hand():
    unit = lambda *v: np.asarray(v) / np.linalg.norm(v)  # noqa: E731
    q = unit(0.6, 0.8)
    whole = {"alarm": unit(1, 0), "dnd": unit(0, 1)}
    parts = [("alarm", unit(0.8, 0.6)), ("dnd", unit(0.6, -0.8)), ("timer", unit(-1, 0))]
    cos_whole = {i: float(q @ v) for i, v in whole.items()}
    cos_parts = [(i, float(q @ v)) for i, v in parts]
    # By hand: alarm 0.6, dnd 0.8; sentences 0.48 + 0.48 = 0.96, 0.36 - 0.64 = -0.28, -0.6.
    assert cos_whole == pytest.approx({"alarm": 0.6, "dnd": 0.8})
    assert [c for _, c in cos_parts] == pytest.approx([0.96, -0.28, -0.6])
    ranked = max_sim(cos_whole, cos_parts)
    # Dense puts dnd first; alarm's matching sentence lifts it above; dnd's poor sentence does
    # not lower dnd; a part whose whole record was not scored still ranks by its own cosine.
    assert ranked == pytest.approx({"alarm": 0.96, "dnd": 0.8, "timer": -0.6})
    assert sorted(ranked, key=lambda i: -ranked[i]) == ["alarm", "dnd", "timer"]
    assert max_sim(cos_whole, []) == cos_whole


def test_sentences_split_the_body_and_drop_the_heading_line():
    text = "Clock > Alarms\nOpen Clock. Tap +, pick the\nhour!\n\nRepeat weekly\nWhy? Because."
    assert sentences(text, "Clock > Alarms") == [
        "Open Clock.",
        "Tap +, pick the hour!",
        "Repeat weekly Why?",  # a line without an end mark is a wrapped sentence: joined
        "Because.",
    ]
    assert sentences("Clock > Alarms\nOne.", "") == ["Clock > Alarms One."]
    assert sentences("   \n\n ", "") == []


@pytest.fixture(scope="module")
def quality(tmp_path_factory):
    return bench.retrieval_quality(tmp_path_factory.mktemp("quality") / "mem")


def test_labelled_set_is_large_enough_and_consistent(quality):
    docs, cases = bench.load_retrieval_set()
    assert quality["documents"] == len(list(docs.glob("*.md"))) >= 20
    assert quality["queries"] == len(cases) >= 40
    assert {doc for _, doc in cases} == {p.stem for p in docs.glob("*.md")}


def test_halves_put_each_notes_first_question_in_dev():
    assert bench.halves([("q1", "a"), ("q2", "b"), ("q3", "a"), ("q4", "b")]) == [
        "dev",
        "dev",
        "test",
        "test",
    ]
    _, cases = bench.load_retrieval_set()
    split = bench.halves(cases)
    assert split.count("dev") == split.count("test") == len(cases) // 2


def test_paraphrase_quality_dense_vs_maxsim_vs_hybrid(quality):
    """Measured (top-1 / MRR), dev · held-out test · all 56:

    dense  0.857 / 0.911 · 0.857 / 0.929 · 0.857 / 0.920
    maxsim 0.893 / 0.946 · 0.893 / 0.940 · 0.893 / 0.944
    hybrid 0.429 / 0.632 · 0.821 / 0.870 · 0.625 / 0.751

    Floors sit a little under the measured values (the model is deterministic; this guards the
    set and the ranking code). maxsim beating dense on the held-out half is why it is the
    default: if a change makes it lose there, go back to dense and update the docs.
    """
    assert quality["default"] == "maxsim"
    dense, maxsim, hybrid = quality["dense"], quality["maxsim"], quality["hybrid"]
    assert dense["all"]["top1"] >= 0.83 and dense["all"]["mrr"] >= 0.9
    assert maxsim["test"]["top1"] >= 0.87 and maxsim["test"]["mrr"] >= 0.93
    assert maxsim["all"]["top1"] >= 0.87 and maxsim["all"]["mrr"] >= 0.93
    assert hybrid["all"]["top1"] >= 0.58 and hybrid["all"]["mrr"] >= 0.72
    for half in ("dev", "test", "all"):
        assert maxsim[half]["top1"] > dense[half]["top1"] and maxsim[half]["mrr"] > dense[half]["mrr"]
    assert dense["all"]["mrr"] > hybrid["all"]["mrr"]
    assert {m["half"] for m in maxsim["misses"]} <= {"dev", "test"}
    assert len(maxsim["misses"]) == round((1 - maxsim["all"]["top1"]) * quality["queries"])


@pytest.fixture(scope="module")
def notes_store(tmp_path_factory):
    docs, _ = bench.load_retrieval_set()
    store = MemoryStore(tmp_path_factory.mktemp("notes") / "mem")
    store.add_paths([docs])
    return store


def test_six_in_the_morning_finds_the_alarm_note_not_do_not_disturb(notes_store):
    hits = notes_store.search("make the phone ring at 6 in the morning", k=3)
    notes = [Path(h.source).stem for h in hits]
    assert notes[0] == "alarm"
    assert "do_not_disturb" in notes[1:]


def test_hybrid_hits_keep_cosine_scores_and_carry_the_fused_score(notes_store):
    query = "Pair new device"
    everything = notes_store.count("knowledge")
    dense = {h.id: h.score for h in notes_store.search(query, k=everything)}
    hybrid = notes_store.search(query, k=everything, mode="hybrid")
    assert Path(hybrid[0].source).stem == "bluetooth"
    assert all(h.rank_score is not None for h in hybrid)
    assert [h.rank_score for h in hybrid] == sorted((h.rank_score for h in hybrid), reverse=True)
    for h in hybrid:  # every record, found by BM25 or by the dense list, scores its true cosine
        assert h.score == pytest.approx(dense[h.id], abs=1e-4)
    assert all(h.rank_score is None for h in notes_store.search(query, k=2, mode="dense"))


def test_maxsim_keeps_cosine_scores_and_ranks_by_the_best_sentence(notes_store):
    query = "squeeze more hours out of the remaining power"
    everything = notes_store.count("knowledge")
    dense = {h.id: h.score for h in notes_store.search(query, k=everything, mode="dense")}
    hits = notes_store.search(query, k=everything)  # maxsim is the default
    assert len(hits) == everything
    for h in hits:
        assert h.score == pytest.approx(dense[h.id], abs=1e-4)
        assert h.rank_score is not None and h.rank_score >= h.score - 1e-6
    assert [h.rank_score for h in hits] == sorted((h.rank_score for h in hits), reverse=True)
    assert any(h.rank_score > h.score + 0.01 for h in hits)  # some sentence beat its whole note
    assert Path(hits[0].source).stem == "battery_saver"


def test_sentence_vectors_follow_their_documents(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    note = docs / "note.md"
    note.write_text(
        "# Garden\nWater the tomatoes. Prune them in May.\n\nHarvest in August.", encoding="utf-8"
    )
    store = MemoryStore(tmp_path / "mem")
    store.add_paths([docs])
    assert store.count("knowledge") == 1 and store.count(SENTENCES) == 3
    parent = store.search("tomatoes", k=1)[0].id
    got = store.collection(SENTENCES).get(include=["metadatas", "documents"])
    assert got["documents"] == ["Water the tomatoes.", "Prune them in May.", "Harvest in August."]
    assert {m["parent"] for m in got["metadatas"]} == {parent}
    note.write_text("# Garden\nPrune the zucchini in spring.", encoding="utf-8")
    store.add_paths([docs])  # re-adding replaces the sentences, too
    assert store.collection(SENTENCES).get()["documents"] == ["Prune the zucchini in spring."]
    store.delete("knowledge", where={"source": str(note.resolve())})
    assert store.count("knowledge") == 0 and store.count(SENTENCES) == 0
    store.add_paths([docs])
    store.clear()
    assert store.count(SENTENCES) == 0


def test_a_store_without_sentence_vectors_ranks_as_dense(tmp_path):
    store = MemoryStore(tmp_path / "mem")  # records written directly, as stores built before maxsim
    texts = ["Turn on Wi-Fi in Settings.", "Pair headphones over Bluetooth.", "Set an alarm in Clock."]
    store.upsert("knowledge", ["a", "b", "c"], texts, [{"source": f"{i}.md"} for i in "abc"])
    query = "wireless earbuds"
    dense = store.search(query, k=3, mode="dense")
    maxsim = store.search(query, k=3)
    assert [h.id for h in maxsim] == [h.id for h in dense]
    assert [h.rank_score for h in maxsim] == [h.score for h in dense]


def test_min_score_filters_before_the_cut_to_k(notes_store):
    query = "connect my new earbuds"
    top = notes_store.search(query, k=5, mode="hybrid")
    floor = sorted(h.score for h in top)[2]
    kept = notes_store.search(query, k=5, mode="hybrid", min_score=floor)
    assert kept and all(h.score >= floor for h in kept)
    assert len(notes_store.search(query, k=2, mode="hybrid", min_score=2.0)) == 0
    with pytest.raises(ValueError, match="unknown search mode 'sparse'; use one of maxsim"):
        notes_store.search(query, mode="sparse")  # type: ignore[arg-type]


def test_the_lexical_index_follows_the_collection(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    note = docs / "note.md"
    note.write_text("# Garden\nWater the tomatoes every evening.", encoding="utf-8")
    store = MemoryStore(tmp_path / "mem")
    store.add_paths([docs])
    assert "tomatoes" in store.search("tomatoes", k=1, mode="hybrid")[0].text
    note.write_text("# Garden\nPrune the zucchini in spring.", encoding="utf-8")
    store.add_paths([docs])  # same id, same count: the index must still be rebuilt
    hits = store.search("zucchini", k=1, mode="hybrid")
    assert "zucchini" in hits[0].text and hits[0].rank_score == pytest.approx(2 / 61)


def test_cli_memory_search_on_a_real_store(tmp_path):
    docs = tmp_path / "notes"
    shutil.copytree(bench.RETRIEVAL_SET / "docs", docs)
    runner = CliRunner(env={"COLUMNS": "250"})
    mem = str(tmp_path / "cli-mem")
    res = runner.invoke(app, ["memory", "add", str(docs), "--dir", mem])
    assert res.exit_code == 0, res.output
    res = runner.invoke(
        app, ["memory", "search", "make the phone ring at 6 in the morning", "--k", "2", "--dir", mem]
    )
    assert res.exit_code == 0, res.output
    assert "alarm.md" in res.output and "score" in res.output
    assert res.output.index("alarm.md") < res.output.find("do_not_disturb.md") or (
        "do_not_disturb.md" not in res.output
    )
    query = "squeeze more hours out of the remaining power"
    for mode, top in (("maxsim", "battery_saver.md"), ("dense", "bedtime.md")):
        res = runner.invoke(app, ["memory", "search", query, "--k", "1", "--mode", mode, "--dir", mem])
        assert res.exit_code == 0, res.output
        assert top in res.output, (mode, res.output)
    res = runner.invoke(app, ["memory", "search", query, "--mode", "sparse", "--dir", mem])
    assert res.exit_code == 2 and "sparse" in res.output and "maxsim" in res.output
