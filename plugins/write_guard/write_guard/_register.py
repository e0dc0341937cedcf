"""Wire write-guard's handlers (kept in `_runtime`) to `session.start`, `session.end` and
`tool.call`."""

from __future__ import annotations

from typing import Any

from framework import hookimpl

from write_guard._options import Options
from write_guard._runtime import PLUGIN, RECORD_TTL_S, Guard, gated, is_shell_tool, is_write_tool

# After every other plugin's handler of a tool call (they order themselves well below this).
CONFINE_ORDER = 10_000

__all__ = ["PLUGIN", "RECORD_TTL_S", "Guard", "gated", "is_shell_tool", "is_write_tool", "register"]


@hookimpl
def register(on: Any, options: Options | None) -> None:
    guard = Guard(options if options is not None else Options())
    match = {"tool": is_write_tool}
    # The preset and the git gate first (fail-open: they await the store), then the
    # fail-closed checks; the sandbox wraps the command last, so that every other plugin's
    # handler sees it as the model wrote it.
    on("tool.call", guard.enforce, match=match, order=-100)
    on("tool.call", guard.protect, match=match, order=-90, fail="closed")
    on(
        "tool.call",
        guard.confine,
        match={"tool": is_shell_tool},
        order=CONFINE_ORDER,
        fail="closed",
    )
    on("tool.call", guard.learn, match={"tool": "AskUserQuestion"}, order=-90)
    on("session.start", guard.started)
    on("session.end", guard.ended)
