"""hookchain-observer: an append-only, PII-filtered evidence log of agent turns."""

from __future__ import annotations

from framework import PluginInfo

from observer._cli import register_cli
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
