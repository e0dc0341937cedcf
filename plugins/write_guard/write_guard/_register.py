"""Wire write-guard's handlers (kept in `_runtime`) to `session.start`, `session.end` and
`tool.call`."""

from __future__ import annotations

from typing import Any

from framework import CallNext, Engine, ToolCall, ToolResult, hookimpl

from write_guard._gitdir import aside_state, identities, put_back, undo, undone_text
from write_guard._gitlink import LinkWatch
from write_guard._options import Options
from write_guard._runtime import PLUGIN, RECORD_TTL_S, Guard, gated, is_shell_tool, is_write_tool
from write_guard._sandbox import redirect_surface

# After every other plugin's handler of a tool call (they order themselves well below this).
CONFINE_ORDER = 10_000

__all__ = ["PLUGIN", "RECORD_TTL_S", "Guard", "gated", "is_shell_tool", "is_write_tool", "register"]


@hookimpl
def register(on: Any, options: Options | None) -> None:
    guard = Guard(options if options is not None else Options())
    match = {"tool": is_write_tool}

    async def redirections(engine: Engine, event: ToolCall, call_next: CallNext) -> ToolResult:
        """The files that would redirect git, checked again when the command's result comes
        back (see _gitdir): undone where no wrapper ran; and what would run in a repository
        git enters through a gitlink (see _gitlink) moved aside; the person told."""
        if engine.sandboxed:  # a replay or a test host runs nothing
            result: ToolResult = await call_next(event)
            return result
        _context, policy, _resolved = await guard.paths(engine, event, guard.decision(event))
        roots = () if policy.preset == "read-only" else (policy.workspace_root, *policy.extra_roots)
        surface, writable = redirect_surface(roots)
        before, pinned = aside_state(surface.absent), identities(surface.pinned)
        links = LinkWatch.start(writable)
        result = await call_next(event)
        undone = [*put_back(pinned), *undo(surface.absent, before, writable)]
        said = [undone_text(undone)] if undone else []
        text = " ".join(part for part in [*said, links.finish()] if part)
        if not text:
            return result
        engine.ui.toast(text)
        return result.with_note(text, by=PLUGIN)

    # The preset and the git gate first (fail-open: they await the store), then the
    # fail-closed checks; the sandbox wraps the command last, so that every other plugin's
    # handler sees it as the model wrote it.
    on("tool.call", guard.enforce, match=match, order=-100)
    on("tool.call", guard.protect, match=match, order=-90, fail="closed")
    shell = {"tool": is_shell_tool}
    on("tool.call", redirections, match=shell, order=CONFINE_ORDER - 1, fail="closed")
    on("tool.call", guard.confine, match=shell, order=CONFINE_ORDER, fail="closed")
    on("tool.call", guard.learn, match={"tool": "AskUserQuestion"}, order=-90)
    on("session.start", guard.started)
    on("session.end", guard.ended)
