"""Codex CLI and Gemini CLI payloads through the warm host's bridge, in process: what plugins
see (harness, tool action, failures) and the answers each harness reads."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from hostkit import make_plugin

from framework import Host, ToolCall, ToolResult, TurnResult
from framework.claude_code import native
from framework.claude_code.bridge import ClaudeBridge

SEEN: list[tuple[str, str, Any]] = []


def _register(on: Any) -> None:
    async def tool(engine: Any, event: ToolCall, call_next: Any) -> ToolResult:
        SEEN.append(("call", engine.session.harness, event.action))
        if event.action.command and event.action.command.startswith("rm "):
            return ToolResult.denied("no rm here", by="probe")
        if any(path.startswith("/outside") for path in event.action.writes):
            return ToolResult.denied("outside the workspace", by="probe")
        result: ToolResult = await call_next(event)
        SEEN.append(("result", event.harness, (result.is_error, result.output)))
        if result.is_error:
            return result.with_note("that failed", by="probe")
        return result

    async def stop(engine: Any, event: Any, call_next: Any) -> TurnResult:
        result: TurnResult = await call_next(event)
        SEEN.append(("stop", event.harness, event.last_message))
        if event.last_message == "give up" and not event.stop_hook_active:
            return result.continued("keep going", by="probe")
        return result

    async def prompt(engine: Any, event: Any, call_next: Any) -> Any:
        result = await call_next(event)
        if event.text == "secret":
            return result.dropped("not that", by="probe")
        return result

    on("tool.call", tool)
    on("turn.complete", stop)
    on("prompt.submit", prompt)


PROBE = make_plugin("adapter-probe", _register)


@pytest.fixture(autouse=True)
def _fresh() -> None:
    SEEN.clear()


@asynccontextmanager
async def bridged() -> AsyncIterator[ClaudeBridge]:
    async with (
        Host(plugins=[PROBE], entry_points=False, store="memory://", env={}) as host,
        anyio.create_task_group() as task_group,
    ):
        bridge = ClaudeBridge(host, task_group, suspend_timeout=30)
        try:
            yield bridge
        finally:
            bridge.cancel_all()


async def ask(bridge: ClaudeBridge, event: str, payload: dict[str, Any]) -> dict[str, Any]:
    answer = await native.answer(bridge, event, json.dumps(payload).encode())
    assert answer.stderr == "", answer.stderr
    assert answer.exit_code == 0
    return json.loads(answer.stdout) if answer.stdout else {}


CODEX = {"session_id": "cx", "cwd": "/ws", "model": "gpt-5-codex", "turn_id": "t1"}


def codex(event: str, **fields: Any) -> dict[str, Any]:
    return {**CODEX, "hook_event_name": event, **fields}


def test_codex_deny_is_claude_shaped_and_names_the_harness() -> None:
    async def main() -> dict[str, Any]:
        async with bridged() as bridge:
            call = codex("PreToolUse", tool_name="Bash", tool_input={"command": "rm -rf /"})
            return await ask(bridge, "codex:PreToolUse", {**call, "tool_use_id": "call_1"})

    answer = anyio.run(main)
    specific = answer["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    assert specific["hookEventName"] == "PreToolUse"
    assert "no rm here" in specific["permissionDecisionReason"]
    assert "systemMessage" not in answer
    assert SEEN[0][:2] == ("call", "codex")


def _rollout(tmp_path: Path, call: str, code: int) -> str:
    path = tmp_path / "rollout.jsonl"
    item = {"type": "CommandExecution", "id": call, "exit_code": code, "status": "failed"}
    records = [
        {"type": "response_item", "payload": {"type": "function_call", "call_id": call}},
        {"type": "event_msg", "payload": {"type": "item_completed", "item": item}},
    ]
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))
    return str(path)


@pytest.mark.parametrize(
    ("output", "rollout_code", "failed"),
    [
        ("hi\n", 3, True),  # the exit code only the rollout file knows
        ("hi\n", 0, False),
        ("hi\n", None, False),
        ("Process exited with code 2\nOutput:\nno\n", None, True),
    ],
)
def test_codex_failures_are_read_from_the_rollout_then_the_text(
    tmp_path: Path, output: str, rollout_code: int | None, failed: bool
) -> None:
    extra = (
        {} if rollout_code is None else {"transcript_path": _rollout(tmp_path, "c9", rollout_code)}
    )

    async def main() -> dict[str, Any]:
        async with bridged() as bridge:
            call = codex("PreToolUse", tool_name="Bash", tool_input={"command": "make"}, **extra)
            await ask(bridge, "codex:PreToolUse", {**call, "tool_use_id": "c9"})
            done = {**call, "hook_event_name": "PostToolUse", "tool_response": output}
            return await ask(bridge, "codex:PostToolUse", {**done, "tool_use_id": "c9"})

    answer = anyio.run(main)
    results = [entry[2] for entry in SEEN if entry[0] == "result"]
    assert [is_error for is_error, _ in results] == [failed]
    if failed:
        assert answer["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
        assert "that failed" in answer["hookSpecificOutput"]["additionalContext"]
    else:
        assert answer == {}


GEMINI = {"session_id": "gm", "cwd": "/ws", "timestamp": "2026-12-01T00:00:00Z"}


def gemini(event: str, **fields: Any) -> dict[str, Any]:
    return {**GEMINI, "hook_event_name": event, **fields}


def test_gemini_deny_is_its_own_format() -> None:
    async def main() -> dict[str, Any]:
        async with bridged() as bridge:
            call = gemini(
                "BeforeTool", tool_name="write_file", tool_input={"file_path": "/outside/x"}
            )
            return await ask(bridge, "gemini:BeforeTool", call)

    answer = anyio.run(main)
    assert answer["decision"] == "deny"
    assert "outside the workspace" in answer["reason"]
    assert "permissionDecision" not in json.dumps(answer)
    kind, harness, action = SEEN[0]
    assert (kind, harness, action.kind, action.writes) == (
        "call",
        "gemini",
        "write",
        ("/outside/x",),
    )


def test_gemini_shell_failure_is_read_from_exit_code_and_pgid_dropped() -> None:
    text = (
        "<untrusted_context>\nOutput: no\nExit Code: 2\nProcess Group PGID: 4242\n"
        "</untrusted_context>"
    )

    async def main() -> dict[str, Any]:
        async with bridged() as bridge:
            call = gemini(
                "BeforeTool", tool_name="run_shell_command", tool_input={"command": "ls x"}
            )
            await ask(bridge, "gemini:BeforeTool", call)
            done = {**call, "hook_event_name": "AfterTool"}
            done["tool_response"] = {"llmContent": text, "returnDisplay": "no"}
            return await ask(bridge, "gemini:AfterTool", done)

    answer = anyio.run(main)
    [(is_error, output)] = [entry[2] for entry in SEEN if entry[0] == "result"]
    assert is_error and "PGID" not in output and "Exit Code: 2" in output
    assert answer["hookSpecificOutput"] == {
        "hookEventName": "AfterTool",
        "additionalContext": "[probe] that failed",
    }


def test_gemini_success_output_is_the_text_for_the_model() -> None:
    async def main() -> None:
        async with bridged() as bridge:
            call = gemini("BeforeTool", tool_name="run_shell_command", tool_input={"command": "ls"})
            await ask(bridge, "gemini:BeforeTool", call)
            done = {**call, "hook_event_name": "AfterTool"}
            done["tool_response"] = {"llmContent": "Output: a\nExit Code: 0\nProcess Group PGID: 7"}
            assert await ask(bridge, "gemini:AfterTool", done) == {}

    anyio.run(main)
    assert [entry[2] for entry in SEEN if entry[0] == "result"] == [
        (False, "Output: a\nExit Code: 0")
    ]


def test_gemini_after_agent_continuation_and_before_agent_drop_are_denials() -> None:
    async def main() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with bridged() as bridge:
            dropped = await ask(
                bridge, "gemini:BeforeAgent", gemini("BeforeAgent", prompt="secret")
            )
            stop = gemini(
                "AfterAgent", prompt="p", prompt_response="give up", stop_hook_active=False
            )
            continued = await ask(bridge, "gemini:AfterAgent", stop)
            again = await ask(bridge, "gemini:AfterAgent", {**stop, "stop_hook_active": True})
            return dropped, continued, again

    dropped, continued, again = anyio.run(main)
    assert dropped["decision"] == "deny" and "not that" in dropped["reason"]
    assert continued["decision"] == "deny" and "keep going" in continued["reason"]
    assert "decision" not in again  # a stop hook already continued this turn: never loop
    assert ("stop", "gemini", "give up") in SEEN


def test_an_unknown_harness_prefix_is_a_clear_payload_error() -> None:
    async def main() -> Any:
        async with bridged() as bridge:
            raw = json.dumps(gemini("BeforeTool")).encode()
            return await native.answer(bridge, "cursor:BeforeTool", raw), bridge.payload_errors

    answer, errors = anyio.run(main)
    assert answer.exit_code == 0 and "unknown harness 'cursor'" in answer.stderr
    assert errors == 1


def test_one_host_serves_every_harness_with_one_store() -> None:
    async def main() -> list[str]:
        async with bridged() as bridge:
            await ask(
                bridge, "SessionStart", {"session_id": "cc", "hook_event_name": "SessionStart"}
            )
            await ask(bridge, "codex:SessionStart", codex("SessionStart", source="startup"))
            await ask(bridge, "gemini:SessionStart", gemini("SessionStart", source="startup"))
            host = bridge.host
            return [host.engine("adapter-probe", sid).session.harness for sid in ("cc", "cx", "gm")]

    assert anyio.run(main) == ["claude-code", "codex", "gemini"]
