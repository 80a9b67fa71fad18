"""``agent-runtime mcp``: serve the runtime as MCP tools over stdio (extra ``mcp``).

A client (an IDE, Claude Desktop, another agent) starts this command and speaks the Model Context
Protocol on its stdin/stdout: ``run_task``, ``list_devices``, ``screenshot``, ``get_run``
(see :mod:`agent_runtime.mcp_server`). The configuration is read as ``agent-runtime run`` reads
it; with no model configured and no server answering, runs use the offline demo model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agent_runtime.cli import guarded


def register(app: typer.Typer) -> None:
    @app.command()
    @guarded
    def mcp(
        config: Annotated[
            Path | None, typer.Option("--config", "-c", help="Config file (default: ./agent-runtime.toml).")
        ] = None,
        runs_dir: Annotated[
            Path | None,
            typer.Option("--runs-dir", help="Where run directories go (default: runs.dir in the config)."),
        ] = None,
    ) -> None:
        """Serve run_task, list_devices, screenshot and get_run as MCP tools over stdio.

        Add it to an MCP client as the command: agent-runtime mcp --config FILE
        """
        from agent_runtime.mcp_server import serve

        serve(config, runs_dir)
