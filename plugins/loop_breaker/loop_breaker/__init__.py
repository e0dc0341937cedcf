"""loop-breaker: notices an agent going round in circles and breaks the loop."""

from __future__ import annotations

from framework import PluginInfo

from ._options import Options
from ._register import register

plugin = PluginInfo(
    name="loop-breaker",
    contract=">=1,<2",
    options=Options,
    description="Notices repeated failures, cycles, thrashing edits and blocked stops; nudges, "
    "then alerts",
)

__all__ = ["Options", "plugin", "register"]
