"""A plugin for the Claude Code integration tests: it acts on marked inputs and records what it saw.

Records go to `SEEN` (in-process tests) and, when CLAUDE_PROBE_LOG names a file, to that file as
JSON lines (tests that run the host as its own process).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from typing import Any

import anyio

from framework import (
    CallNext,
    ContextResult,
    Engine,
    PluginInfo,
    PromptResult,
    PromptSubmit,
    ToolCall,
    ToolResult,
    TurnComplete,
    TurnResult,
    hookimpl,
    tap,
)

plugin = PluginInfo(name="claude-probe", contract=">=1,<2")
SEEN: list[tuple[Any, ...]] = []


def record(*entry: Any) -> None:
    SEEN.append(entry)
    path = os.environ.get("CLAUDE_PROBE_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")


def misbehave(text: str) -> None:
    """`RAISE <class>` raises what no plugin should; `KILLHOST` ends the host process."""
    if text.startswith("RAISE "):
        record("raise", text)
        kind = text.split()[1]
        if kind == "CancelledError":
            raise asyncio.CancelledError
        raise {"SystemExit": SystemExit, "KeyboardInterrupt": KeyboardInterrupt}[kind]()
    if text == "KILLHOST":
        record("killhost")
        os.kill(os.getpid(), signal.SIGKILL)


async def guard(engine: Engine, event: ToolCall, call_next: CallNext) -> ToolResult:
    command = str(event.input.get("command", ""))
    misbehave(command)
    if "rm -rf" in command:
        return ToolResult.denied("destructive command", by=plugin.name)
    if command.startswith("echo REWRITE"):
        event = event.model_copy(update={"input": {**event.input, "command": "echo rewritten"}})
    if "SHORTCUT" in command:
        record("shortcut", event.tool_use_id)
        return ToolResult(output="cached").with_note("served from cache", by=plugin.name)
    if "TOAST" in command:
        engine.ui.toast("probe looked before the tool")
        await engine.session.append("probe note before the tool")
    try:
        result: ToolResult = await call_next(event)
    except anyio.get_cancelled_exc_class():
        record("cancelled", event.tool_use_id)
        raise
    record("tool", event.session_id, event.tool_use_id, event.tool, result.is_error)
    if "TOAST" in command:
        engine.ui.toast("probe looked after the tool")
    if "REDACT" in command and isinstance(result.output, dict):
        result = result.model_copy(update={"output": {**result.output, "stdout": "[redacted]"}})
    if "FLATTEN" in command:
        result = result.model_copy(update={"output": "flattened"})
    state = "error" if result.is_error else "ok"
    return result.with_note(f"probe saw {event.tool} ({state})", by=plugin.name)


async def prompt(engine: Engine, event: PromptSubmit, call_next: CallNext) -> PromptResult:
    misbehave(event.text)
    result: PromptResult = await call_next(event)
    if "BLOCKME" in event.text:
        return result.dropped("blocked by probe", by=plugin.name)
    return result


async def context(engine: Engine, event: Any, call_next: CallNext) -> ContextResult:
    result: ContextResult = await call_next(event)
    return result.with_block("probe", "probe context", by=plugin.name)


async def started(engine: Engine, event: Any, call_next: CallNext) -> Any:
    record("session.start", event.session_id, event.source)
    engine.ui.toast("probe session started")
    return await call_next(event)


async def turn_start(engine: Engine, event: Any, call_next: CallNext) -> Any:
    record("turn.start", event.session_id, event.turn_id)
    return await call_next(event)


async def step(engine: Engine, event: Any, call_next: CallNext) -> Any:
    stream = await call_next(event)
    return tap(stream, on_chunk=lambda chunk: record("chunk", chunk.kind, chunk.stop_reason))


async def complete(engine: Engine, event: TurnComplete, call_next: CallNext) -> TurnResult:
    result: TurnResult = await call_next(event)
    record("turn.complete", event.session_id, event.reason, event.agent_id)
    if event.last_message and "KEEP GOING" in event.last_message:
        return result.continued("keep going", by=plugin.name)
    return result


async def classic(engine: Engine, event: Any, call_next: CallNext) -> Any:
    record("classic", event.hook_name)
    return await call_next(event)


async def ended(engine: Engine, event: Any, call_next: CallNext) -> Any:
    record("session.end", event.session_id, event.reason)
    if event.reason == "slow-probe":
        try:
            await anyio.sleep(60)
        except anyio.get_cancelled_exc_class():
            record("session.end cut", event.session_id)
            raise
    return await call_next(event)


@hookimpl
def register(on: Any, options: Any) -> None:
    on("tool.call", guard)
    on("prompt.submit", prompt)
    on("prompt.context", context)
    on("session.start", started)
    on("turn.start", turn_start)
    on("turn.step", step)
    on("turn.complete", complete)
    on("classic.Notification", classic)
    on("session.end", ended)
