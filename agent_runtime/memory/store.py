"""The persistent memory store: chromadb collections embedded with the offline MiniLM model.

Two collections live under ``memory.dir``:

* ``knowledge`` — chunks of the user's documents (how-tos, app manuals), added with
  ``agent-runtime memory add``. Each chunk carries its source path and index; ids are derived
  from both, so adding a file again replaces its chunks instead of duplicating them.
* ``experience`` — guidance distilled from finished runs (see :mod:`.experience`).

Both use cosine space, and a hit's ``score`` is the cosine similarity (1 = same meaning). The
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

if TYPE_CHECKING:
    from agent_runtime.config import MemoryConfig

CollectionName = Literal["knowledge", "experience"]
COLLECTIONS: tuple[CollectionName, ...] = ("knowledge", "experience")
#: File types ``memory add`` ingests when walking a directory.
TEXT_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".text", ".rst"})
#: Rows per chromadb write: below its sqlite batch limit, and bounds embedding memory.
WRITE_BATCH = 512


class Hit(BaseModel):
    """One retrieved record."""

    id: str
    text: str
    score: float = Field(description="cosine similarity, higher is closer")
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
    def collection(self, name: CollectionName) -> Any:
        """The chromadb collection ``name``, created on first use, checked against our model."""
        if name not in COLLECTIONS:
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

    def count(self, name: CollectionName) -> int:
        with _guard(f"counting {name}"):
            return int(self.collection(name).count())

    def upsert(
        self,
        name: CollectionName,
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

    def delete(self, name: CollectionName, *, where: dict[str, Any]) -> None:
        with _guard(f"deleting from {name}"):
            self.collection(name).delete(where=where)

    def query(self, name: CollectionName, texts: Sequence[str], k: int) -> list[list[Hit]]:
        """For each query text, its ``k`` nearest records, best first."""
        col = self.collection(name)
        if not texts:
            return []
        with _guard(f"searching {name}"):
            n = col.count()
            if n == 0:
                return [[] for _ in texts]
            res = col.query(
                query_texts=list(texts), n_results=min(k, n), include=["documents", "metadatas", "distances"]
            )
        out: list[list[Hit]] = []
        for ids, docs, metas, dists in zip(
            res["ids"], res["documents"] or [], res["metadatas"] or [], res["distances"] or [], strict=True
        ):
            out.append(
                [
                    Hit(id=i, text=d or "", score=round(1.0 - float(dist), 6), metadata=dict(m or {}))
                    for i, d, m, dist in zip(ids, docs, metas, dists, strict=True)
                ]
            )
        return out

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
        self.upsert(
            "knowledge",
            ids=[f"{prefix}-{c.index:05d}" for c in chunks],
            texts=[c.text for c in chunks],
            metadatas=[{"source": source, "chunk": c.index, "heading": c.heading} for c in chunks],
        )
        return len(chunks)

    def add_paths(self, paths: Sequence[Path]) -> list[SourceInfo]:
        """Ingest files and directories (see :func:`iter_text_files`)."""
        return [SourceInfo(source=str(f), chunks=self.add_file(f)) for f in iter_text_files(paths)]

    def search(self, query: str, k: int = 3, name: CollectionName = "knowledge") -> list[Hit]:
        return self.query(name, [query], k)[0]

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
                for name in COLLECTIONS:
                    if name in existing:
                        self._client.delete_collection(name)
            self._collections.clear()
