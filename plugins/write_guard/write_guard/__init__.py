"""write-guard: path-root write policy, protected files and a one-shot gate for dangerous git."""

from __future__ import annotations

from framework import PluginInfo

from write_guard._cli import register_cli
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
