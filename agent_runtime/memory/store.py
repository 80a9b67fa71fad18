"""The persistent memory store: chromadb collections embedded with the offline MiniLM model.

Two collections live under ``memory.dir``:

* ``knowledge`` — chunks of the user's documents (how-tos, app manuals), added with
  ``agent-runtime memory add``. Each chunk carries its source path and index; ids are derived
  from both, so adding a file again replaces its chunks instead of duplicating them.
* ``experience`` — guidance distilled from finished runs (see :mod:`.experience`).

A third, internal collection, ``knowledge_sentences``, holds one vector per sentence of each
knowledge chunk (metadata: the chunk's own plus ``parent``, the chunk id), written and deleted
with its chunks.

All use cosine space, and a hit's ``score`` is the cosine similarity (1 = same meaning) of the
record's whole text. The default ``mode="maxsim"`` ranks a knowledge chunk by the best of that
similarity and its sentences' (:mod:`.hybrid` explains why and what it measured);
``mode="dense"`` ranks by ``score`` alone, the store's ranking before; ``mode="hybrid"`` fuses the
dense ranking with a BM25 ranking by RRF. ``score`` is the whole-text cosine in every mode, so
similarity thresholds keep their meaning; ``rank_score`` holds what decided the order. A store
built before sentence vectors existed (or the experience collection, which has none) ranks the
same in ``maxsim`` as in ``dense`` until its documents are added again. The
embedding model that built a collection is recorded in its metadata: vectors of two models do
not mix, so opening a store with another model is refused with a hint rather than silently
returning nonsense. Every chromadb/sqlite/filesystem failure surfaces as
:class:`~agent_runtime.errors.MemoryStoreError`.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from agent_runtime.errors import ConfigError, DependencyError, MemoryStoreError
from agent_runtime.memory.chunking import chunk_text
from agent_runtime.memory.embeddings import get_embedder, model_identity
from agent_runtime.memory.hybrid import BM25, max_sim, rrf, sentences, tokenize

if TYPE_CHECKING:
    from agent_runtime.config import MemoryConfig

CollectionName = Literal["knowledge", "experience"]
SearchMode = Literal["maxsim", "hybrid", "dense"]
SEARCH_MODES: tuple[SearchMode, ...] = ("maxsim", "hybrid", "dense")
COLLECTIONS: tuple[CollectionName, ...] = ("knowledge", "experience")
#: The internal collection of sentence vectors of the knowledge chunks.
SENTENCES: Literal["knowledge_sentences"] = "knowledge_sentences"
_AnyCollection = Literal["knowledge", "experience", "knowledge_sentences"]
#: File types ``memory add`` ingests when walking a directory.
TEXT_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".text", ".rst"})
#: Rows per chromadb write: below its sqlite batch limit, and bounds embedding memory.
WRITE_BATCH = 512
#: Records each ranking (dense and BM25, per query) contributes to a hybrid search: deep enough
#: that a record ranked well by one list and badly by the other still gets fused.
CANDIDATES = 50

#: BM25 indices by (store directory, collection): (fingerprint, record ids, index).
_LEXICAL: dict[tuple[str, str], tuple[tuple[Any, ...], list[str], BM25]] = {}
#: Writes made through any MemoryStore of this process, by (store directory, collection).
_WRITES: dict[tuple[str, str], int] = {}
_LEXICAL_LOCK = threading.Lock()


class Hit(BaseModel):
    """One retrieved record."""

    id: str
    text: str
    score: float = Field(description="cosine similarity, higher is closer (in every search mode)")
    rank_score: float | None = Field(
        None,
        description="what ordered the search: the best cosine over the record and its sentences "
        "(maxsim) or the reciprocal-rank-fusion score (hybrid); None if dense",
    )
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def source(self) -> str:
        return str(self.metadata.get("source", ""))


class SourceInfo(BaseModel):
    source: str
    chunks: int


@contextlib.contextmanager
def _guard(doing: str) -> Iterator[None]:
    """Turn chromadb, sqlite, filesystem and embedding failures into MemoryStoreError."""
    from chromadb.errors import ChromaError

    try:
        yield
    except (ChromaError, sqlite3.Error, OSError, ValueError, RuntimeError) as exc:
        raise MemoryStoreError(f"memory store: {doing} failed: {type(exc).__name__}: {exc}") from exc


@functools.cache
def _embedding_function_class() -> type:
    """Build (once) the chromadb embedding function class; chromadb is imported only here."""
    from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
    from chromadb.utils.embedding_functions import register_embedding_function

    class SentenceTransformerEF(EmbeddingFunction[Documents]):
        """Wraps the shared :class:`~.embeddings.Embedder`; cheap to rebuild (the model is cached)."""

        def __init__(self, model: str | None = None) -> None:
            self.model = model

        def __call__(self, input: Documents) -> Embeddings:
            return list(get_embedder(self.model).encode_array(list(input)))

        @staticmethod
        def name() -> str:
            return "agent_runtime_sentence_transformer"

        def default_space(self) -> Space:
            return "cosine"

        def supported_spaces(self) -> list[Space]:
            return ["cosine", "ip", "l2"]

        def get_config(self) -> dict[str, Any]:
            return {"model": self.model}

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> SentenceTransformerEF:
            return SentenceTransformerEF(config.get("model"))

    return register_embedding_function(SentenceTransformerEF)


def source_id(source: str) -> str:
    """A short stable prefix for all chunk ids of one source."""
    return hashlib.sha1(source.encode("utf-8")).hexdigest()[:16]


def iter_text_files(paths: Sequence[Path]) -> list[Path]:
    """The files ``memory add`` would ingest: named files as given, directories walked (sorted).

    Hidden files and folders are skipped while walking. A path that does not exist is an error,
    so a typo never silently ingests nothing.
    """
    files: list[Path] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_file():
            files.append(path.resolve())
        elif path.is_dir():
            for found in sorted(path.rglob("*")):
                rel = found.relative_to(path)
                if any(part.startswith(".") for part in rel.parts):
                    continue
                if found.is_file() and found.suffix.lower() in TEXT_SUFFIXES:
                    files.append(found.resolve())
        else:
            raise ConfigError(f"{path} does not exist", hint="give Markdown/text files or directories")
    return list(dict.fromkeys(files))


class MemoryStore:
    """A chromadb ``PersistentClient`` at ``directory`` with the two memory collections.

    Opening is cheap; the embedding model loads on the first add or search. Thread-safe for use
    from one process (chromadb serialises its own writes; collection handles are created under a
    lock).
    """

    def __init__(self, directory: Path | str, embedding_model: str | None = None) -> None:
        self.dir = Path(directory).expanduser()
        self.embedding_model = embedding_model
        self.identity = model_identity(embedding_model)
        self._lock = threading.Lock()
        self._collections: dict[str, Any] = {}
        try:
            import chromadb
            from chromadb.config import Settings
        except ImportError:
            raise DependencyError("chromadb", "rag", "the memory store") from None
        with _guard(f"opening {self.dir}"):
            self.dir.mkdir(parents=True, exist_ok=True)
            self._client = chromadb.PersistentClient(
                path=str(self.dir), settings=Settings(anonymized_telemetry=False)
            )

    @classmethod
    def from_config(cls, config: MemoryConfig) -> MemoryStore:
        return cls(config.dir, config.embedding_model)

    # -- collections ------------------------------------------------------------------------
    def collection(self, name: _AnyCollection) -> Any:
        """The chromadb collection ``name``, created on first use, checked against our model."""
        if name not in (*COLLECTIONS, SENTENCES):
            raise ValueError(f"unknown collection {name!r}")
        with self._lock:
            col = self._collections.get(name)
            if col is None:
                ef = _embedding_function_class()(self.embedding_model)
                with _guard(f"opening collection {name!r}"):
                    col = self._client.get_or_create_collection(
                        name,
                        configuration={"hnsw": {"space": "cosine"}},
                        metadata={"embedding_model": self.identity},
                        embedding_function=ef,
                    )
                built_with = (col.metadata or {}).get("embedding_model")
                if built_with != self.identity:
                    raise ConfigError(
                        f"the memory store {self.dir} was built with embedding model {built_with!r}, "
                        f"but {self.identity!r} is configured; their vectors do not mix",
                        hint="set memory.embedding_model back, use another memory.dir, "
                        "or run 'agent-runtime memory clear --yes'",
                    )
                self._collections[name] = col
        return col

    def count(self, name: _AnyCollection) -> int:
        with _guard(f"counting {name}"):
            return int(self.collection(name).count())

    def upsert(
        self,
        name: _AnyCollection,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[dict[str, Any]],
    ) -> None:
        """Insert or replace records (embedded here, in batches)."""
        col = self.collection(name)
        for start in range(0, len(ids), WRITE_BATCH):
            end = start + WRITE_BATCH
            with _guard(f"writing to {name}"):
                col.upsert(
                    ids=list(ids[start:end]),
                    documents=list(texts[start:end]),
                    metadatas=list(metadatas[start:end]),
                )
        self._changed(name)

    def delete(self, name: CollectionName, *, where: dict[str, Any]) -> None:
        """Delete the records matching ``where`` (and, for knowledge, their sentence vectors)."""
        with _guard(f"deleting from {name}"):
            self.collection(name).delete(where=where)
            if name == "knowledge":
                self.collection(SENTENCES).delete(where=where)
        self._changed(name)

    def search_many(
        self,
        texts: Sequence[str],
        k: int,
        name: CollectionName = "knowledge",
        *,
        mode: SearchMode = "maxsim",
        min_score: float | None = None,
    ) -> list[Hit]:
        """The ``k`` best records for all query ``texts`` together, best first.

        ``dense`` ranks by cosine similarity alone (each record at its best score over the
        queries) — what the store did before hybrid search. ``maxsim`` (knowledge only; the
        experience collection has no sentence vectors and ranks as in dense) also takes, per
        query, the :data:`CANDIDATES` nearest sentences, and ranks each chunk by the best
        cosine over its whole text and its sentences, over all queries. Like the HNSW lookup
        itself this is approximate: a chunk outside both candidate lists is not ranked.
        ``hybrid`` takes, per query, the
        :data:`CANDIDATES` nearest records and the :data:`CANDIDATES` best BM25 matches over the
        same records, and orders the union by reciprocal rank fusion of all those rankings (see
        :mod:`.hybrid`). Either way a hit's ``score`` stays its best cosine similarity, so
        ``min_score`` (applied before the cut to ``k``) means what it always meant; in hybrid
        mode ``rank_score`` holds the fused score that decided the order.
        """
        if mode not in SEARCH_MODES:
            raise ValueError(f"unknown search mode {mode!r}; use one of {', '.join(SEARCH_MODES)}")
        texts = [t for t in texts if t.strip()]
        col = self.collection(name)
        if not texts or k <= 0:
            return []
        with _guard(f"searching {name}"):
            n = col.count()
            if n == 0:
                return []
            vectors = get_embedder(self.embedding_model).encode_array(texts)
            pool = min(k if mode == "dense" else max(k, CANDIDATES), n)
            res = col.query(
                query_embeddings=vectors.tolist(),
                n_results=pool,
                include=["documents", "metadatas", "distances"],
            )
        best: dict[str, Hit] = {}
        rankings: list[list[str]] = []
        for ids, docs, metas, dists in zip(
            res["ids"], res["documents"] or [], res["metadatas"] or [], res["distances"] or [], strict=True
        ):
            rankings.append(list(ids))
            for i, d, m, dist in zip(ids, docs, metas, dists, strict=True):
                score = round(1.0 - float(dist), 6)
                if i not in best or score > best[i].score:
                    best[i] = Hit(id=i, text=d or "", score=score, metadata=dict(m or {}))
        if mode == "maxsim":
            for hit in best.values():
                hit.rank_score = hit.score
            if name == "knowledge":
                self._sentence_scores(max(k, CANDIDATES), vectors, best)
        if mode == "hybrid":
            rankings += self._lexical_rankings(name, texts, pool, vectors, best)
            fused = rrf(rankings)
            for i, hit in best.items():
                hit.rank_score = round(fused.get(i, 0.0), 8)
        kept = [h for h in best.values() if min_score is None or h.score >= min_score]
        kept.sort(key=lambda h: (-(h.rank_score or 0.0), -h.score, h.id))
        return kept[:k]

    def _lexical_rankings(
        self, name: CollectionName, texts: Sequence[str], pool: int, vectors: Any, best: dict[str, Hit]
    ) -> list[list[str]]:
        """Each query's BM25 ranking (top ``pool``); adds the records only BM25 found to ``best``."""
        ids, index = self._lexical_index(name)
        rankings = [[ids[j] for j in index.top(tokenize(t), pool)] for t in texts]
        self._add_missing(name, {i for r in rankings for i in r}, vectors, best)
        return rankings

    def _sentence_scores(self, pool: int, vectors: Any, best: dict[str, Hit]) -> None:
        """Raise each chunk's ``rank_score`` to its best sentence cosine (the ``pool`` nearest per query).

        Chunks found only through a sentence are added to ``best`` with their whole-text cosine.
        """
        with _guard(f"searching {SENTENCES}"):
            n = self.count(SENTENCES)
            if n == 0:
                return
            res = self.collection(SENTENCES).query(
                query_embeddings=vectors.tolist(), n_results=min(pool, n), include=["metadatas", "distances"]
            )
        parts = [
            (str((m or {}).get("parent", "")), round(1.0 - float(dist), 6))
            for metas, dists in zip(res["metadatas"] or [], res["distances"] or [], strict=True)
            for m, dist in zip(metas, dists, strict=True)
        ]
        self._add_missing("knowledge", {parent for parent, _ in parts}, vectors, best)
        ranked = max_sim({i: hit.score for i, hit in best.items()}, parts)
        for i, hit in best.items():
            hit.rank_score = ranked[i]

    def _add_missing(self, name: CollectionName, ids: set[str], vectors: Any, best: dict[str, Hit]) -> None:
        """Add the records of ``ids`` not yet in ``best``, scored by their best cosine over the queries."""
        import numpy as np

        missing = sorted(ids - best.keys())
        if not missing:
            return
        with _guard(f"reading {name}"):
            got = self.collection(name).get(ids=missing, include=["documents", "metadatas", "embeddings"])
        if not got["ids"]:
            return
        embeddings = np.asarray(got["embeddings"], dtype=np.float32)
        cosines = (embeddings @ vectors.T).max(axis=1)
        for i, d, m, cos in zip(
            got["ids"], got["documents"] or [], got["metadatas"] or [], cosines, strict=True
        ):
            best[i] = Hit(id=i, text=d or "", score=round(float(cos), 6), metadata=dict(m or {}))

    def _lexical_index(self, name: CollectionName) -> tuple[list[str], BM25]:
        """The BM25 index of collection ``name``, rebuilt only when the collection changed.

        Shared by every store on the same directory in this process (the RAG node opens a fresh
        store per run). The fingerprint — record count, this process's write counter and the
        database file's mtime — catches writes from this process and from others.
        """
        key = (str(self.dir.resolve()), name)
        with _guard(f"reading {name}"):
            db = self.dir / "chroma.sqlite3"
            stamps = tuple(p.stat().st_mtime_ns for p in (db, db.with_name(db.name + "-wal")) if p.exists())
            fingerprint = (self.count(name), _WRITES.get(key, 0), stamps)
            with _LEXICAL_LOCK:
                cached = _LEXICAL.get(key)
            if cached is not None and cached[0] == fingerprint:
                return cached[1], cached[2]
            got = self.collection(name).get(include=["documents"])
        ids = list(got["ids"])
        index = BM25([tokenize(d or "") for d in got["documents"] or []])
        with _LEXICAL_LOCK:
            _LEXICAL[key] = (fingerprint, ids, index)
        return ids, index

    def _changed(self, name: str) -> None:
        key = (str(self.dir.resolve()), name)
        with _LEXICAL_LOCK:
            _WRITES[key] = _WRITES.get(key, 0) + 1

    # -- knowledge documents ----------------------------------------------------------------
    def add_file(self, path: Path) -> int:
        """Ingest one text file, replacing its earlier chunks. Returns the number of chunks."""
        source = str(Path(path).expanduser().resolve())
        try:
            text = Path(source).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ConfigError(
                f"{source} is not UTF-8 text", hint="memory add takes Markdown or text files"
            ) from None
        except OSError as exc:
            raise ConfigError(f"cannot read {source}: {exc}") from None
        chunks = chunk_text(text)
        self.delete("knowledge", where={"source": source})
        prefix = source_id(source)
        ids = [f"{prefix}-{c.index:05d}" for c in chunks]
        metadatas = [{"source": source, "chunk": c.index, "heading": c.heading} for c in chunks]
        self.upsert("knowledge", ids=ids, texts=[c.text for c in chunks], metadatas=metadatas)
        rows = [
            (f"{i}-s{j:03d}", sentence, {**meta, "parent": i})
            for i, c, meta in zip(ids, chunks, metadatas, strict=True)
            for j, sentence in enumerate(sentences(c.text, c.heading))
        ]
        if rows:
            self.upsert(SENTENCES, [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])
        return len(chunks)

    def add_paths(self, paths: Sequence[Path]) -> list[SourceInfo]:
        """Ingest files and directories (see :func:`iter_text_files`)."""
        return [SourceInfo(source=str(f), chunks=self.add_file(f)) for f in iter_text_files(paths)]

    def search(
        self,
        query: str,
        k: int = 3,
        name: CollectionName = "knowledge",
        *,
        mode: SearchMode = "maxsim",
        min_score: float | None = None,
    ) -> list[Hit]:
        """The ``k`` best records for one query; see :meth:`search_many`."""
        return self.search_many([query], k, name, mode=mode, min_score=min_score)

    def sources(self) -> list[SourceInfo]:
        """Ingested documents and their chunk counts, by path."""
        with _guard("listing sources"):
            metas = self.collection("knowledge").get(include=["metadatas"])["metadatas"] or []
        counts = Counter(str(m.get("source", "?")) for m in metas if m)
        return [SourceInfo(source=s, chunks=n) for s, n in sorted(counts.items())]

    def clear(self) -> None:
        """Delete both collections (documents and experience)."""
        with self._lock:
            with _guard("clearing"):
                existing = {c if isinstance(c, str) else c.name for c in self._client.list_collections()}
                for name in (*COLLECTIONS, SENTENCES):
                    if name in existing:
                        self._client.delete_collection(name)
            self._collections.clear()
        for name in COLLECTIONS:
            self._changed(name)
