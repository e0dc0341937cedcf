"""Wire write-guard's handlers (kept in `_runtime`) to `session.start`, `session.end` and
`tool.call`."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from framework import CallNext, Engine, SessionEnd, ToolCall, ToolResult, TurnComplete, hookimpl

from write_guard._gitdir import aside_state, identities, put_back, undo, undone_text
from write_guard._gitlink import LinkState, LinkWatch
from write_guard._options import Options
from write_guard._runtime import PLUGIN, RECORD_TTL_S, Guard, gated, is_shell_tool, is_write_tool
from write_guard._sandbox import redirect_surface

# After every other plugin's handler of a tool call (they order themselves well below this).
CONFINE_ORDER = 10_000

GITLINK_CHECK_S = 1.0
"""How long the gitlink check may take, before and after a command (in a worker thread):
well under the hook client's 2 s, past which it gives up on the hook and the command would
run unsandboxed. Past it, the command is refused (before) or the person told (after)."""
GITLINK_OVERRUN = (
    f"write-guard could not check, within {GITLINK_CHECK_S:g} s, the gitlinks the workspace's "
    "git enters (an index that costs that much to read is not one git writes), so the command "
    "is refused: check `git ls-files -s | grep ^160000` and the size of `.git/index`"
)
GITLINK_UNFINISHED = (
    f"write-guard could not finish, within {GITLINK_CHECK_S:g} s, checking the gitlinks the "
    "command left: check `git ls-files -s | grep ^160000` (and each such repository's config "
    "and hooks) before running git in the workspace"
)
GITLINK_FAILED = (
    "write-guard failed checking the gitlinks the command left: check `git ls-files -s | "
    "grep ^160000` (and each such repository's config and hooks) before running git in the "
    "workspace"
)
LAST_KEPT = 64
"""Sessions (and roots) whose last gitlinks' state is kept (the least recently used goes)."""
_T = TypeVar("_T")

__all__ = ["PLUGIN", "RECORD_TTL_S", "Guard", "gated", "is_shell_tool", "is_write_tool", "register"]


@hookimpl
def register(on: Any, options: Options | None) -> None:
    guard = Guard(options if options is not None else Options())
    match = {"tool": is_write_tool}
    # One check at a time: one that ran over and was left to end in its thread makes the
    # next wait (and run over too) rather than threads pile up.
    busy = threading.Lock()
    # Per session and roots: the gitlinks' state the last command left (see LinkWatch.start),
    # and that command's watch, to check again at the turn's and the session's end.
    last: dict[tuple[str, tuple[str, ...]], tuple[LinkState, LinkWatch]] = {}

    def keep(seen: tuple[str, tuple[str, ...]], state: LinkState, watch: LinkWatch) -> None:
        last.pop(seen, None)
        if len(last) >= LAST_KEPT:
            del last[next(iter(last))]
        last[seen] = (state, watch)

    def serial(work: Callable[[], _T]) -> _T:
        if not busy.acquire(timeout=GITLINK_CHECK_S):
            raise TimeoutError
        try:
            return work()
        finally:
            busy.release()

    async def bounded(work: Callable[[], _T]) -> _T:
        """`work` in a worker thread, off the event loop; TimeoutError past GITLINK_CHECK_S."""
        with anyio.fail_after(GITLINK_CHECK_S):
            return await anyio.to_thread.run_sync(serial, work, abandon_on_cancel=True)

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
        seen = (event.session_id, tuple(writable))
        kept = last.get(seen)
        try:
            links = await bounded(
                lambda: LinkWatch.start(writable, None if kept is None else kept[0])
            )
        except TimeoutError:
            return ToolResult.denied(GITLINK_OVERRUN, by=PLUGIN)
        if links.refusal is not None:
            return ToolResult.denied(links.refusal, by=PLUGIN)
        result = await call_next(event)
        undone = [*put_back(pinned), *undo(surface.absent, before, writable)]
        said = [undone_text(undone)] if undone else []
        try:
            checked, state = await bounded(links.finish_with_state)
            keep(seen, state, links)
            said.append(checked)
        except TimeoutError:
            said.append(GITLINK_UNFINISHED)
        except Exception as error:  # said, never dropping what was undone
            said.append(f"{GITLINK_FAILED} ({type(error).__name__})")
        text = " ".join(part for part in said if part)
        if not text:
            return result
        engine.ui.toast(text)
        return result.with_note(text, by=PLUGIN)

    async def settled(session_id: str, end: bool) -> str:
        """What a command still running in the background left in the repositories git
        enters since the session's last command (see `redirections`), moved aside; what the
        person and the model are told."""
        said = []
        for seen in [seen for seen in last if seen[0] == session_id]:
            state, watch = last.pop(seen) if end else last[seen]
            since = dataclasses.replace(watch, before=state)
            try:
                checked, state = await bounded(since.finish_with_state)
                said.append(checked)
            except TimeoutError:
                said.append(GITLINK_UNFINISHED)
            except Exception as error:
                said.append(f"{GITLINK_FAILED} ({type(error).__name__})")
            if not end:
                keep(seen, state, watch)
        return " ".join(part for part in said if part)

    async def turn_done(engine: Engine, event: TurnComplete, call_next: CallNext) -> Any:
        """At a turn's end, before the person (handed the session) may run git."""
        result = await call_next(event)
        text = await settled(event.session_id, end=False)
        if text:
            engine.ui.toast(text)
            await engine.session.append(text)
        return result

    async def session_done(engine: Engine, event: SessionEnd, call_next: CallNext) -> Any:
        text = await settled(event.session_id, end=True)
        if text:
            engine.ui.toast(text)
        return await call_next(event)

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
    on("turn.complete", turn_done)
    on("session.end", session_done)
