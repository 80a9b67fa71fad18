"""``agent-runtime memory add|search|list|clear``: manage the RAG knowledge store."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from agent_runtime.memory.store import CollectionName, MemoryStore

ConfigOpt = Annotated[
    Path | None, typer.Option("--config", "-c", help="Config file (default: ./agent-runtime.toml).")
]
DirOpt = Annotated[
    Path | None, typer.Option("--dir", help="Memory store directory (default: memory.dir from the config).")
]


class Mode(StrEnum):
    """``memory search --mode``: the store's search modes (see agent_runtime.memory.store)."""

    maxsim = "maxsim"
    dense = "dense"
    hybrid = "hybrid"


def open_store(config: Path | None, directory: Path | None) -> MemoryStore:
    from agent_runtime.config import load_config
    from agent_runtime.memory.store import MemoryStore

    mem = load_config(config).memory
    return MemoryStore(directory or mem.dir, mem.embedding_model)


def register(app: typer.Typer) -> None:
    from agent_runtime.cli import guarded

    memory = typer.Typer(
        help="Documents and run experience the RAG node retrieves from.", no_args_is_help=True
    )
    app.add_typer(memory, name="memory")

    @memory.command()
    @guarded
    def add(
        paths: Annotated[list[Path], typer.Argument(help="Markdown/text files or directories (walked).")],
        directory: DirOpt = None,
        config: ConfigOpt = None,
    ) -> None:
        """Ingest documents (re-adding a file replaces its chunks)."""
        store = open_store(config, directory)
        added = store.add_paths(paths)
        for info in added:
            print(f"{info.chunks:5d} chunks  {info.source}")
        print(f"added {len(added)} file(s), {sum(i.chunks for i in added)} chunk(s) to {store.dir}")

    @memory.command()
    @guarded
    def search(
        query: Annotated[str, typer.Argument(help="What to look for (matched by meaning).")],
        k: Annotated[int, typer.Option("--k", "-k", min=1, max=50, help="Number of hits.")] = 3,
        experience: Annotated[
            bool, typer.Option("--experience", help="Search guidance from past runs instead of documents.")
        ] = False,
        mode: Annotated[
            Mode,
            typer.Option(
                "--mode",
                help="maxsim: best of a chunk's and its sentences' similarity (default); "
                "dense: whole-chunk similarity only; hybrid: dense fused with BM25 keywords.",
            ),
        ] = Mode.maxsim,
        directory: DirOpt = None,
        config: ConfigOpt = None,
    ) -> None:
        """Show the stored chunks closest to QUERY, with their similarity (score: whole-chunk cosine)."""
        store = open_store(config, directory)
        name: CollectionName = "experience" if experience else "knowledge"
        hits = store.search(query, k, name=name, mode=mode.value)
        if not hits:
            print(f"no {name} stored in {store.dir}" if store.count(name) == 0 else "no hits")
            return
        table = Table(title=f"{name} hits for {query!r}")
        table.add_column("score", justify="right")
        table.add_column("source", overflow="fold")
        table.add_column("text", overflow="fold")
        for h in hits:
            where = f"{h.source}#{h.metadata.get('chunk')}" if name == "knowledge" else h.id
            text = h.text if name == "knowledge" else str(h.metadata.get("guidance", h.text))
            # Stored text is data: rich must not read "[...]" in it as markup.
            table.add_row(f"{h.score:.3f}", escape(where), escape(text[:400]))
        Console().print(table)

    @memory.command("list")
    @guarded
    def list_(directory: DirOpt = None, config: ConfigOpt = None) -> None:
        """List ingested documents with their chunk counts, and the number of experience records."""
        store = open_store(config, directory)
        sources = store.sources()
        experience = store.count("experience")
        if not sources:
            print(f"no documents in {store.dir}, {experience} experience record(s)")
            return
        table = Table(title=f"memory store {store.dir}")
        table.add_column("source", overflow="fold")
        table.add_column("chunks", justify="right")
        for info in sources:
            table.add_row(escape(info.source), str(info.chunks))
        Console().print(table)
        print(f"{len(sources)} document(s), {experience} experience record(s)")

    @memory.command()
    @guarded
    def clear(
        yes: Annotated[
            bool, typer.Option("--yes", help="Really delete all documents and experience.")
        ] = False,
        directory: DirOpt = None,
        config: ConfigOpt = None,
    ) -> None:
        """Delete every document and experience record in the store."""
        if not yes:
            Console(stderr=True).print(
                "[red]error:[/] this deletes all stored documents and experience; pass --yes to confirm"
            )
            raise typer.Exit(2)
        store = open_store(config, directory)
        store.clear()
        print(f"cleared {store.dir}")
