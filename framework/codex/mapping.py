"""Codex CLI hook payloads through the Claude Code bridge, and its answers in Codex's format.

Codex's hook payloads are Claude-shaped (`hook_event_name`, `session_id`, `tool_name: "Bash"`,
`tool_input.command`, `tool_use_id`) and it honours a Claude-format PreToolUse deny, so the
shared bridge answers them once two differences are bridged:

- PostToolUse's `tool_response` is only the output string: no exit code, and Codex has no
  PostToolUseFailure. Codex writes the command's exit code to the session's rollout file
  (`transcript_path`) before it runs the hook (an `item_completed` event whose item id is the
  call's `tool_use_id`), so the adapter reads it from the file's tail; where the file says
  nothing, from an `Exit code: N` / `Process exited with code N` line of the output. A non-zero
  code makes the call a PostToolUseFailure for the bridge.
- An answer names the event Codex sent (`PostToolUse`, never `PostToolUseFailure`), and
  `systemMessage` is dropped: Codex accepts it but shows it nowhere in `codex exec`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

from framework.claude_code import mapping as cmap
from framework.claude_code import native
from framework.claude_code.bridge import ClaudeBridge
from framework.core.tools import CODEX

HARNESS = CODEX
EVENTS: tuple[str, ...] = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "SessionEnd",
)
"""What `hookchain install --harness codex` hooks: every Codex event that maps to the contract."""

MAPPED: Mapping[str, str] = {
    "SessionStart": "session.start",
    "UserPromptSubmit": "prompt.submit + prompt.context",
    "PreToolUse": "tool.call (until the tool runs)",
    "PostToolUse": "tool.call (its result; a failure from the output text)",
    "Stop": "turn.step + turn.complete",
    "SubagentStop": "turn.complete (agent_id)",
    "SessionEnd": "session.end",
}
"""Codex event → contract event; every other Codex event is `classic.<Name>`."""

_EXIT = re.compile(
    r"(?:^|\n)\s*(?:Exit code|exit code|Process exited with code|exited with code)[: ]+(-?\d+)\b"
)


def failed_exit_code(output: Any) -> int | None:
    """The non-zero exit code Codex's shell output reports, or None (success or not said)."""
    if not isinstance(output, str):
        return None
    codes = _EXIT.findall(output)
    if not codes:
        return None
    code = int(codes[-1])
    return code if code != 0 else None


ROLLOUT_TAIL_BYTES = 256 * 1024


def rollout_exit_code(payload: Mapping[str, Any]) -> int | None:
    """The exit code the session's rollout file records for this call, or None."""
    path, call = payload.get("transcript_path"), payload.get("tool_use_id")
    if not isinstance(path, str) or not path.endswith(".jsonl") or not isinstance(call, str):
        return None
    try:
        with Path(path).open("rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - ROLLOUT_TAIL_BYTES))
            tail = handle.read()
    except OSError:
        return None
    needle = f'"id":"{call}"'.encode()
    for line in reversed(tail.splitlines()):
        if needle not in line or b"exit_code" not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        item = record.get("payload", {}).get("item") if isinstance(record, dict) else None
        if isinstance(item, dict) and item.get("id") == call:
            code = item.get("exit_code")
            return code if isinstance(code, int) else None
    return None


def claude_payload(payload: dict[str, Any], exit_code: int | None = None) -> dict[str, Any]:
    """A Codex payload in the shape the Claude Code mapping reads (`exit_code` from the
    rollout file, when it has one)."""
    if payload.get("hook_event_name") != "PostToolUse":
        return payload
    output = payload.get("tool_response")
    code = exit_code if exit_code is not None else failed_exit_code(output)
    if not code:
        return payload
    text = output if isinstance(output, str) else json.dumps(output)
    error = f"{text.rstrip()}\nExit code: {code}" if exit_code is not None else text
    return {**payload, "hook_event_name": "PostToolUseFailure", "error": error}


def codex_answer(native_event: str, answer: cmap.HookAnswer) -> cmap.HookAnswer:
    """A bridge answer as Codex reads it: the event it sent, no person-only message."""
    decoded = native.answer_object(answer)
    if decoded is None:
        return answer
    decoded.pop("systemMessage", None)
    specific = decoded.get("hookSpecificOutput")
    if isinstance(specific, dict):
        specific["hookEventName"] = native_event
        specific.pop("updatedToolOutput", None)  # Codex cannot replace a tool's output
        specific.pop("updatedMCPToolOutput", None)
        if len(specific) == 1:
            del decoded["hookSpecificOutput"]
    return native.with_object(answer, decoded)


async def _to_claude(payload: dict[str, Any]) -> dict[str, Any]:
    code = None
    if payload["hook_event_name"] == "PostToolUse":
        code = await anyio.to_thread.run_sync(rollout_exit_code, payload)
    return claude_payload(payload, code)


async def answer(bridge: ClaudeBridge, native_event: str, raw: bytes) -> cmap.HookAnswer:
    """One Codex hook call: parse, bridge as Claude Code's, answer in Codex's format."""
    return await native.translated(bridge, HARNESS, native_event, raw, _to_claude, codex_answer)
