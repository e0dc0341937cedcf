"""Event builders: one per v1 event, with defaults so a test names only what it cares about."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from framework import (
    Classic,
    CommandRun,
    ContextBlock,
    PromptContext,
    PromptSubmit,
    SessionEnd,
    SessionStart,
    ToolCall,
    TurnComplete,
    TurnStart,
    TurnStep,
)

__all__ = [
    "classic",
    "command_run",
    "prompt_context",
    "prompt_submit",
    "session_end",
    "session_start",
    "tool_call",
    "turn_complete",
    "turn_start",
    "turn_step",
]

_tool_use_counter = 0


def _next_tool_use_id() -> str:
    global _tool_use_counter
    _tool_use_counter += 1
    return f"toolu_test_{_tool_use_counter:04d}"


def session_start(*, cwd: str = "/project", source: str = "startup", **fields: Any) -> SessionStart:
    return SessionStart.model_validate({"cwd": cwd, "source": source, **fields})


def session_end(*, reason: str = "other", **fields: Any) -> SessionEnd:
    return SessionEnd.model_validate({"reason": reason, **fields})


def prompt_submit(
    text: str = "hello", *, origin_kind: str = "composer", **fields: Any
) -> PromptSubmit:
    return PromptSubmit.model_validate({"text": text, "origin_kind": origin_kind, **fields})


def prompt_context(*blocks: ContextBlock, **fields: Any) -> PromptContext:
    return PromptContext.model_validate({"blocks": blocks, **fields})


def turn_start(turn_id: str = "turn-1", **fields: Any) -> TurnStart:
    return TurnStart.model_validate({"turn_id": turn_id, **fields})


def turn_step(turn_id: str = "turn-1", *, step_index: int = 0, **fields: Any) -> TurnStep:
    return TurnStep.model_validate({"turn_id": turn_id, "step_index": step_index, **fields})


def turn_complete(
    turn_id: str = "turn-1", *, reason: str = "end_turn", **fields: Any
) -> TurnComplete:
    return TurnComplete.model_validate({"turn_id": turn_id, "reason": reason, **fields})


def tool_call(
    tool: str = "Bash", input: Mapping[str, Any] | None = None, **fields: Any
) -> ToolCall:
    """A tool call; `tool_use_id` is unique per call unless given."""
    if input is None:
        input = {"command": "true"} if tool == "Bash" else {}
    fields.setdefault("tool_use_id", _next_tool_use_id())
    return ToolCall.model_validate({"tool": tool, "input": input, **fields})


def command_run(command: str, arguments: str = "", **fields: Any) -> CommandRun:
    return CommandRun.model_validate({"command": command, "arguments": arguments, **fields})


def classic(hook_name: str, payload: Mapping[str, Any] | None = None, **fields: Any) -> Classic:
    return Classic.model_validate({"hook_name": hook_name, "payload": payload or {}, **fields})
