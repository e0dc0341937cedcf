"""hookchain-observer: an append-only, PII-filtered evidence log of agent turns."""

from __future__ import annotations

from typing import Any

from framework import PluginInfo, hookimpl

from observer._options import Options
from observer._register import register

plugin = PluginInfo(
    name="observer",
    contract=">=1,<2",
    options=Options,
    description="Logs one PII-filtered episode per turn; routing-tag gate, status and dashboard.",
    # The episode log, STATUS.md and the read counter are files under engine.data_dir().
    access=frozenset({"files"}),
)

__all__ = ["Options", "plugin", "register", "register_cli"]


@hookimpl
def register_cli(app: Any) -> None:
    """Add this plugin's `hookchain` commands. Their module (typer and the rest) is imported
    only here, when the command line is built: a host that only runs chains never loads it."""
    from observer._cli import register_cli as add_commands

    add_commands(app)
