"""Where the warm host sends a hook call of another harness: `<harness>:<Event>` on the wire.

Codex CLI and Gemini CLI run the same stdlib client with `codex:PreToolUse` / `gemini:BeforeTool`
as its event; their adapters (`framework.codex`, `framework.gemini`) translate to the payloads
this bridge maps and back to their own answers. They sit above this package (they import the
bridge), so they are named by module path, the way `_launch.DAEMON` names the daemon.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from importlib import import_module
from typing import Any, Protocol

from framework.claude_code import mapping as cmap
from framework.claude_code.bridge import ClaudeBridge
from framework.core.tools import from_harness

ADAPTERS: Mapping[str, str] = {
    "codex": "framework.codex.mapping",
    "gemini": "framework.gemini.mapping",
}
"""Harness prefix → module with `async answer(bridge, native_event, raw) -> HookAnswer`."""


class PayloadAnswerer(Protocol):
    """What answers a parsed Claude Code payload: one bridge, or the warm host's projects."""

    async def answer_payload(self, payload: dict[str, Any]) -> cmap.HookAnswer: ...


def is_native(event: str) -> bool:
    """Whether `event` is another harness's (`codex:PreToolUse`), not Claude Code's."""
    return ":" in event


async def answer(bridge: ClaudeBridge, event: str, raw: bytes) -> cmap.HookAnswer:
    """The answer to one hook call; `event` is `Event`, `harness:Event`, or `-` (from payload)."""
    if not is_native(event):
        return await bridge.answer(raw, None if event in ("", "-") else event)
    return await answer_native(bridge, event, raw)


async def answer_native(bridge: PayloadAnswerer, event: str, raw: bytes) -> cmap.HookAnswer:
    """The answer to one `harness:Event` hook call, through its harness's adapter."""
    harness, _, native = event.partition(":")
    module = ADAPTERS.get(harness)
    if module is None:
        known = ", ".join(sorted(ADAPTERS))
        if isinstance(bridge, ClaudeBridge):  # counted where status reads it
            bridge.served += 1
            bridge.payload_errors += 1
        return cmap.payload_error_answer(
            cmap.PayloadError(f"unknown harness {harness!r} (known: {known}, or none)")
        )
    adapter = import_module(module)
    result: cmap.HookAnswer = await adapter.answer(bridge, native, raw)
    return result


ToClaude = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
FromClaude = Callable[[str, cmap.HookAnswer], cmap.HookAnswer]


async def translated(
    bridge: PayloadAnswerer,
    harness: str,
    native_event: str,
    raw: bytes,
    to_claude: ToClaude,
    from_claude: FromClaude,
) -> cmap.HookAnswer:
    """One hook call of another harness: parse, translate to the payload this bridge maps, run
    it with events tagged `harness`, and translate the answer back for `native_event`."""
    try:
        payload = cmap.parse_payload(raw, native_event or None)
    except cmap.PayloadError as error:
        return cmap.payload_error_answer(error)
    native = payload["hook_event_name"]
    claude_payload = await to_claude(payload)
    with from_harness(harness):
        bridged = await bridge.answer_payload(claude_payload)
    return from_claude(native, bridged)


def answer_object(answer: cmap.HookAnswer) -> dict[str, Any] | None:
    """The answer's JSON object, or None when it has none."""
    if not answer.stdout:
        return None
    decoded = json.loads(answer.stdout)
    return decoded if isinstance(decoded, dict) else None


def with_object(answer: cmap.HookAnswer, value: Mapping[str, Any]) -> cmap.HookAnswer:
    """`answer` (exit code and stderr kept) answering `value` instead; nothing when empty."""
    stdout = json.dumps(value, ensure_ascii=False, separators=(",", ":")) if value else ""
    return cmap.HookAnswer(exit_code=answer.exit_code, stdout=stdout, stderr=answer.stderr)
