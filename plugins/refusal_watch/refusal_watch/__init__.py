"""refusal-watch: makes every model refusal visible the moment it streams."""

from __future__ import annotations

from framework import PluginInfo

from ._options import Options
from ._register import register

plugin = PluginInfo(
    name="refusal-watch",
    contract=">=1,<2",
    options=Options,
    description="Shows every refusal as it streams and asks the model not to drop its work.",
    # session.start reads the passport file and stats the harness binary; nothing else.
    access=frozenset({"files"}),
)

__all__ = ["Options", "plugin", "register"]
