"""``--ray``: the one option that sends a command's episodes to a Ray cluster.

``eval``, ``evolve``, ``distill`` (online RL) and ``run --tasks`` play many episodes; each takes
this same option, so its values, help and default read alike everywhere: ``local`` starts a
cluster on this machine, ``auto`` joins the one this machine belongs to, anything else is a
cluster address; without it the config's ``[cluster] ray_address`` decides, else this machine
(:func:`agent_runtime.execution.open_backend`, docs/scale-out.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from agent_runtime.config import RuntimeConfig

RAY_METAVAR = "local|auto|ADDRESS"
RAY_HELP = (
    "Play the episodes on Ray: local (a cluster on this machine), auto (the cluster this machine "
    "joined) or HOST:PORT; the command's workers run there. Default: [cluster] ray_address of the "
    "config, else this machine (docs/scale-out.md)."
)

#: The ``--ray`` parameter of every command that plays many episodes.
RayOption = Annotated[str | None, typer.Option("--ray", metavar=RAY_METAVAR, help=RAY_HELP)]


def ray_address(flag: str | None, config: RuntimeConfig | None) -> str | None:
    """Where ``--ray`` says episodes run, else ``config``'s ``[cluster] ray_address`` (None: here)."""
    if flag is not None:
        return flag
    return config.cluster.ray_address if config is not None else None
