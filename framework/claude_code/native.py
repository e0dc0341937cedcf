"""Where the warm host sends a hook call of another harness: `<harness>:<Event>` on the wire.

Codex CLI and Gemini CLI run the same stdlib client with `codex:PreToolUse` / `gemini:BeforeTool`
as its event; their adapters (`framework.codex`, `framework.gemini`) translate to the payloads
this bridge maps and back to their own answers. They sit above this package (they import the
bridge), so they are named by module path, the way `_launch.DAEMON` names the daemon.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module

from framework.claude_code import mapping as cmap
from framework.claude_code.bridge import ClaudeBridge

ADAPTERS: Mapping[str, str] = {
    "codex": "framework.codex.mapping",
    "gemini": "framework.gemini.mapping",
}
"""Harness prefix → module with `async answer(bridge, native_event, raw) -> HookAnswer`."""


async def answer(bridge: ClaudeBridge, event: str, raw: bytes) -> cmap.HookAnswer:
    """The answer to one hook call; `event` is `Event`, `harness:Event`, or `-` (from payload)."""
    harness, prefixed, native = event.partition(":")
    if not prefixed:
        return await bridge.answer(raw, None if event in ("", "-") else event)
    module = ADAPTERS.get(harness)
    if module is None:
        known = ", ".join(sorted(ADAPTERS))
        bridge.served += 1
        bridge.payload_errors += 1
        return cmap.payload_error_answer(
            cmap.PayloadError(f"unknown harness {harness!r} (known: {known}, or none)")
        )
    adapter = import_module(module)
    result: cmap.HookAnswer = await adapter.answer(bridge, native, raw)
    return result
