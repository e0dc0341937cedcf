"""Gemini CLI hook payloads through the Claude Code bridge, and answers in Gemini's format.

Gemini CLI names its events and tools its own way and reads only its own answer format: it
blocks on `{"decision": "deny" | "block", "reason"}` (or exit 2) and ignores Claude Code's
`hookSpecificOutput.permissionDecision`. So each native event is renamed to the Claude Code
event the bridge maps (BeforeTool → PreToolUse, …), its fields moved to where the mapping reads
them, and the answer rewritten. Tools keep Gemini's names: `ToolCall.action` reads them through
the `gemini` table, tagged by `from_harness`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from framework.claude_code import mapping as cmap
from framework.claude_code import native
from framework.claude_code.bridge import ClaudeBridge
from framework.core.tools import GEMINI

HARNESS = GEMINI

TO_CLAUDE: Mapping[str, str] = {
    "SessionStart": "SessionStart",
    "SessionEnd": "SessionEnd",
    "BeforeAgent": "UserPromptSubmit",
    "BeforeTool": "PreToolUse",
    "AfterTool": "PostToolUse",
    "AfterAgent": "Stop",
}
"""Gemini event → the Claude Code event whose mapping serves it; others are `classic.<Name>`."""

EVENTS: tuple[str, ...] = tuple(TO_CLAUDE)
"""What `hookchain install --harness gemini` hooks. BeforeModel, AfterModel,
BeforeToolSelection, PreCompress (sent before every model call) and Notification are left out:
they map to no contract event and would only cost a round trip each."""

_EXIT = re.compile(r"(?:^|\n)Exit Code: (-?\d+)\b")
_PGID = re.compile(r"\nProcess Group PGID: \d+(?=\n|$)")
_SIGNAL = re.compile(r"(?:^|\n)Signal: (\S+)")
_SOURCES = {"startup": "startup", "resume": "resume", "clear": "clear", "compress": "compact"}


def _response_text(response: Any) -> str:
    """The text the model reads, without the shell's process-group line: it names a new
    process group on every call, so the same output would never compare equal."""
    if isinstance(response, Mapping):
        content = response.get("llmContent")
        if isinstance(content, str):
            return _PGID.sub("", content)
        return json.dumps(content, ensure_ascii=False) if content is not None else ""
    return _PGID.sub("", response) if isinstance(response, str) else ""


def tool_failure(tool_name: str, response: Any) -> str | None:
    """The error text when a tool failed, else None.

    A tool's `error` field says so for every tool; the shell tool reports a command's failure
    only as an `Exit Code: N` (or `Signal:`) line inside its output text.
    """
    if isinstance(response, Mapping):
        error = response.get("error")
        if error:
            return _response_text(response) or str(error)
    if tool_name != "run_shell_command":
        return None
    text = _response_text(response)
    codes = _EXIT.findall(text)
    if (codes and int(codes[-1]) != 0) or _SIGNAL.search(text):
        return text
    return None


def claude_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """A Gemini payload in the shape the Claude Code mapping reads (the native name kept)."""
    native = payload["hook_event_name"]
    event = TO_CLAUDE.get(native)
    if event is None:
        return payload
    moved: dict[str, Any] = {**payload, "hook_event_name": event, "gemini_event": native}
    if native == "SessionStart":
        moved["source"] = _SOURCES.get(str(payload.get("source") or "startup"), "startup")
    elif native == "AfterTool":
        response = payload.get("tool_response")
        error = tool_failure(str(payload.get("tool_name", "")), response)
        if error is not None:
            moved["hook_event_name"] = "PostToolUseFailure"
            moved["error"] = error
        else:
            moved["tool_response"] = _response_text(response)
    elif native == "AfterAgent":
        response = payload.get("prompt_response")
        if isinstance(response, str):
            moved["last_assistant_message"] = response
    return moved


def _reason(decoded: Mapping[str, Any], specific: Mapping[str, Any]) -> str | None:
    if specific.get("permissionDecision") == "deny":
        return str(specific.get("permissionDecisionReason") or "denied by hookchain")
    if decoded.get("decision") == "block":
        return str(decoded.get("reason") or "blocked by hookchain")
    return None


def gemini_answer(native_event: str, answer: cmap.HookAnswer) -> cmap.HookAnswer:
    """A bridge answer in Gemini's format: `decision: deny` + `reason`, context, message."""
    decoded = native.answer_object(answer)
    if decoded is None:
        return answer
    specific = decoded.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    out: dict[str, Any] = {}
    reason = _reason(decoded, specific)
    if reason is not None:
        # BeforeTool: the tool does not run; BeforeAgent: the prompt is dropped; AfterAgent: the
        # turn goes on with the reason as the next prompt (a Stop hook's continuation).
        out["decision"] = "deny"
        out["reason"] = reason
    context = specific.get("additionalContext")
    if isinstance(context, str) and context:
        out["hookSpecificOutput"] = {"hookEventName": native_event, "additionalContext": context}
    message = decoded.get("systemMessage")
    if isinstance(message, str) and message:
        out["systemMessage"] = message
    return native.with_object(answer, out)


async def _to_claude(payload: dict[str, Any]) -> dict[str, Any]:
    return claude_payload(payload)


async def answer(bridge: ClaudeBridge, native_event: str, raw: bytes) -> cmap.HookAnswer:
    """One Gemini CLI hook call: parse, bridge, answer in Gemini's format."""
    return await native.translated(bridge, HARNESS, native_event, raw, _to_claude, gemini_answer)
