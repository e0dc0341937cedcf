"""write-guard: path-root write policy, protected files and a one-shot gate for dangerous git."""

from __future__ import annotations

from typing import Any

from framework import PluginInfo, hookimpl

from write_guard._options import Options
from write_guard._register import register
from write_guard._status import harness_settings, status_line

plugin = PluginInfo(
    name="write-guard",
    contract=">=1,<2",
    options=Options,
    description="denies writes outside allowed roots and to protected files; holds risky git",
    # bubblewrap is probed once per host, a work tree's git folders are read to mount them, and
    # git records a work tree's changes before a command.
    access=frozenset({"files", "subprocess"}),
)

__all__ = ["Options", "harness_settings", "plugin", "register", "register_cli", "status_line"]


@hookimpl
def register_cli(app: Any) -> None:
    """Add this plugin's `hookchain` commands. Their module (typer and the rest) is imported
    only here, when the command line is built: a host that only runs chains never loads it."""
    from write_guard._cli import register_cli as add_commands

    add_commands(app)
