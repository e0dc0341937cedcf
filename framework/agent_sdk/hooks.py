"""In-process hooks for the Claude Agent SDK, through the same bridge as Claude Code's hooks.

The SDK hands each callback the same payload Claude Code writes to a command hook's stdin and
takes the same JSON back, so one `ClaudeBridge` in the program's own event loop serves it: the
same mapping, the same suspended `tool.call` chains, one `Host`, no daemon, no subprocess.

What differs: the SDK never calls SessionStart or SessionEnd callbacks, so a session opens on the
first callback that names it (a `session.start` with source `startup` and the payload's cwd) and
closes when the `hooks_for` block ends; and Python keywords come back renamed (`continue_`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import structlog

from framework.claude_code import mapping as cmap
from framework.claude_code.bridge import DEFAULT_SUSPEND_TIMEOUT_S, ClaudeBridge
from framework.claude_code.install import DEFAULT_EVENTS
from framework.core.host import Host
from framework.core.tools import CLAUDE_AGENT_SDK, from_harness

_log = structlog.get_logger("hookchain.agent_sdk")

SDK_EVENTS: tuple[str, ...] = tuple(
    event for event in DEFAULT_EVENTS if event not in ("SessionStart", "SessionEnd")
)
"""The events `hookchain install` hooks in Claude Code, less the two the SDK never calls back."""

SESSION_END_BUDGET_S = 2.0
_PYTHON_KEYS = {"continue": "continue_", "async": "async_"}
"""Answer keys that are Python keywords: the SDK takes them with a trailing underscore."""

Callback = Callable[[Any, str | None, Any], Awaitable[dict[str, Any]]]


def sdk_output(answer: cmap.HookAnswer, event_name: str) -> dict[str, Any]:
    """A bridge answer as the dict an SDK callback returns (`{}`: no opinion)."""
    if answer.stderr:
        _log.info("hook answered with a message", hook_event=event_name, text=answer.stderr[:200])
    if answer.exit_code == 2 and event_name == "PreToolUse":
        reason = answer.stderr.strip() or "blocked by hookchain"
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        }
    if not answer.stdout:
        return {}
    decoded = json.loads(answer.stdout)
    if not isinstance(decoded, dict):
        return {}
    return {_PYTHON_KEYS.get(str(key), str(key)): value for key, value in decoded.items()}


@dataclass
class SdkHooks:
    """The bridge for one SDK program, and the sessions its callbacks have opened."""

    bridge: ClaudeBridge
    sessions: dict[str, str] = field(default_factory=dict)
    """Open session id → its cwd."""

    async def answer(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """One callback's answer; a bad payload or a failing chain answers `{}` (fail open)."""
        raw = dict(payload)
        name = raw.get("hook_event_name")
        session_id = raw.get("session_id")
        if not isinstance(name, str) or not isinstance(session_id, str) or not session_id:
            _log.warning("SDK hook input without hook_event_name or session_id: ignored")
            return {}
        with from_harness(CLAUDE_AGENT_SDK):
            if session_id not in self.sessions:
                await self.open_session(session_id, raw.get("cwd"))
            answer = await self.bridge.answer_payload(raw)
        return sdk_output(answer, name)

    async def open_session(self, session_id: str, cwd: Any) -> None:
        self.sessions[session_id] = cwd if isinstance(cwd, str) else ""
        start = {
            "hook_event_name": "SessionStart",
            "session_id": session_id,
            "cwd": self.sessions[session_id],
            "source": "startup",
        }
        with from_harness(CLAUDE_AGENT_SDK):
            await self.bridge.answer_payload(start)

    async def close_sessions(self, reason: str = "other") -> None:
        """`session.end` for every session opened here (the SDK sends no SessionEnd)."""
        with from_harness(CLAUDE_AGENT_SDK), anyio.move_on_after(SESSION_END_BUDGET_S):
            for session_id in list(self.sessions):
                end = {"hook_event_name": "SessionEnd", "session_id": session_id, "reason": reason}
                await self.bridge.answer_payload(end)
                del self.sessions[session_id]

    def callback(self) -> Callback:
        async def hook(payload: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
            if not isinstance(payload, Mapping):
                return {}
            return await self.answer(payload)

        return hook

    def mapping(self, events: tuple[str, ...] = SDK_EVENTS, timeout: float = 60.0) -> Any:
        """The `hooks=` value for `ClaudeAgentOptions`: one matcher for every tool per event."""
        from claude_agent_sdk import HookMatcher

        callback: Any = self.callback()  # the SDK types inputs as TypedDicts; a Mapping reads them
        return {
            event: [HookMatcher(matcher=None, hooks=[callback], timeout=timeout)]
            for event in events
        }


@asynccontextmanager
async def hooks_for(
    host: Host,
    *,
    events: tuple[str, ...] = SDK_EVENTS,
    callback_timeout_s: float = 60.0,
    suspend_timeout: float = DEFAULT_SUSPEND_TIMEOUT_S,
) -> AsyncIterator[Any]:
    """The `hooks=` mapping for `ClaudeAgentOptions`, running every plugin of `host` in process.

    Use it around the SDK's `query`/`ClaudeSDKClient`; leaving the block ends the sessions it saw
    (`session.end`, reason `other`) and cancels tool calls whose result never came.
    """
    unknown = sorted(set(events) - set(SDK_EVENTS))
    if unknown:
        raise ValueError(
            f"hooks_for: {', '.join(unknown)} are not SDK events hookchain maps; "
            f"choose among {', '.join(SDK_EVENTS)}"
        )
    async with anyio.create_task_group() as task_group:
        hooks = SdkHooks(ClaudeBridge(host, task_group, suspend_timeout=suspend_timeout))
        try:
            yield hooks.mapping(events, callback_timeout_s)
        finally:
            with anyio.CancelScope(shield=True):
                await hooks.close_sessions()
            hooks.bridge.cancel_all()
