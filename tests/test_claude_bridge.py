"""The bridge in process: suspended tool calls, replays, timeouts, prompts, turns and sessions."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import claude_probe_plugin as probe
import pytest
from claude_e2e_kit import SESSION, payload_lines, pre
from structlog.testing import capture_logs

from framework import Host, HostSettings
from framework.claude_code import mapping as cmap
from framework.claude_code.bridge import ClaudeBridge


@pytest.fixture(autouse=True)
def _fresh_probe() -> None:
    probe.SEEN.clear()


@asynccontextmanager
async def bridged(
    suspend_timeout: float = 60.0, settings: HostSettings | None = None
) -> AsyncIterator[ClaudeBridge]:
    async with (
        Host(
            plugins=[probe], entry_points=False, store="memory://", env={}, settings=settings
        ) as host,
        anyio.create_task_group() as task_group,
    ):
        bridge = ClaudeBridge(host, task_group, suspend_timeout=suspend_timeout)
        try:
            yield bridge
        finally:
            bridge.cancel_all()


def post(of: dict[str, Any], failed: bool = False, **changes: Any) -> dict[str, Any]:
    payload = {**of, **changes}
    if failed:
        return {**payload, "hook_event_name": "PostToolUseFailure", "error": "Exit code 1"}
    return {**payload, "hook_event_name": "PostToolUse", "tool_response": {"stdout": "ok"}}


async def ask(bridge: ClaudeBridge, payload: dict[str, Any]) -> dict[str, Any]:
    answer = await bridge.answer(json.dumps(payload).encode())
    assert answer.exit_code == 0
    assert answer.stderr == ""
    return json.loads(answer.stdout) if answer.stdout else {}


def seen(kind: str) -> list[tuple[Any, ...]]:
    return [entry for entry in probe.SEEN if entry[0] == kind]


async def until(condition: Callable[[], bool]) -> None:
    for _ in range(500):
        if condition():
            return
        await anyio.sleep(0.01)
    raise AssertionError("condition not reached in 5 s")


def context_of(answer: dict[str, Any]) -> str:
    return str(answer["hookSpecificOutput"]["additionalContext"])


@pytest.mark.anyio
async def test_a_tool_call_is_suspended_at_the_terminal_until_its_result_arrives() -> None:
    async with bridged() as bridge:
        assert await ask(bridge, pre("ls")) == {}
        assert bridge.suspended_count == 1
        assert seen("tool") == []
        answer = await ask(bridge, post(pre("ls")))
        assert answer == {
            "hookSpecificOutput": {
                "hookEventName": "PostToolUse",
                "additionalContext": "[claude-probe] probe saw Bash (ok)",
            }
        }
        assert seen("tool") == [("tool", SESSION, "toolu_1", "Bash", False)]
        assert bridge.suspended_count == 0
        assert bridge.replays == 0


@pytest.mark.anyio
async def test_a_denial_answers_deny_and_leaves_nothing_suspended() -> None:
    async with bridged() as bridge:
        answer = await ask(bridge, pre("rm -rf /"))
        specific = answer["hookSpecificOutput"]
        assert specific["permissionDecision"] == "deny"
        assert specific["permissionDecisionReason"] == "[claude-probe] destructive command"
        assert bridge.suspended_count == 0


@pytest.mark.anyio
async def test_a_chain_that_answers_without_the_tool_is_not_run_again_for_its_result() -> None:
    async with bridged() as bridge:
        call = pre("SHORTCUT ls", tool_use_id="toolu_s")
        answer = await ask(bridge, call)
        assert answer["hookSpecificOutput"] == {
            "hookEventName": "PreToolUse",
            "additionalContext": "[claude-probe] served from cache",
        }
        assert bridge.suspended_count == 0
        assert await ask(bridge, post(call)) == {}
        assert bridge.replays == 0
        assert seen("shortcut") == [("shortcut", "toolu_s")]
        await ask(bridge, post(call))  # a second result for it is a call this host never saw
        assert bridge.replays == 1


@pytest.mark.anyio
async def test_a_changed_input_is_sent_back_and_an_old_payload_still_pairs() -> None:
    async with bridged() as bridge:
        first = pre("echo REWRITE please", tool_use_id=None)
        answer = await ask(bridge, first)
        assert answer["hookSpecificOutput"]["updatedInput"] == {"command": "echo rewritten"}
        result = await ask(bridge, post(first, tool_input={"command": "echo rewritten"}))
        assert "probe saw Bash (ok)" in context_of(result)
        assert bridge.replays == 0
        assert bridge.suspended_count == 0


@pytest.mark.anyio
async def test_a_failure_resumes_the_call_with_an_error_result() -> None:
    async with bridged() as bridge:
        await ask(bridge, pre("false"))
        answer = await ask(bridge, post(pre("false"), failed=True))
        assert answer["hookSpecificOutput"]["hookEventName"] == "PostToolUseFailure"
        assert "(error)" in context_of(answer)
        assert seen("tool")[0][-1] is True


@pytest.mark.anyio
async def test_parallel_calls_resume_in_any_order_with_their_own_results() -> None:
    async with bridged() as bridge:
        calls = [pre(f"cmd {i}", tool_use_id=f"toolu_{i}") for i in range(4)]
        async with anyio.create_task_group() as group:
            for call in calls:
                group.start_soon(ask, bridge, call)
        assert bridge.suspended_count == 4
        for index, call in reversed(list(enumerate(calls))):
            failed = index % 2 == 1
            answer = await ask(bridge, post(call, failed=failed))
            assert ("error" if failed else "ok") in context_of(answer)
        assert [entry[2] for entry in seen("tool")] == ["toolu_3", "toolu_2", "toolu_1", "toolu_0"]


@pytest.mark.anyio
async def test_a_result_for_an_unknown_call_replays_the_chain_around_it() -> None:
    async with bridged() as bridge:
        with capture_logs() as logs:
            answer = await ask(bridge, post(pre("ls", tool_use_id="toolu_unknown")))
        assert "probe saw Bash (ok)" in context_of(answer)
        assert bridge.replays == 1
        replayed = [entry for entry in logs if "replaying its chain" in entry["event"]]
        assert [(entry["log_level"], entry["tool"]) for entry in replayed] == [("debug", "Bash")]
        assert seen("tool") == [("tool", SESSION, "toolu_unknown", "Bash", False)]


@pytest.mark.anyio
async def test_a_call_never_resumed_is_cancelled_and_its_handlers_see_it() -> None:
    async with bridged(suspend_timeout=0.2) as bridge:
        await ask(bridge, pre("sleep", tool_use_id="toolu_lost"))
        await until(lambda: bridge.suspended_count == 0)
        assert seen("cancelled") == [("cancelled", "toolu_lost")]
        assert bridge.cancelled_calls == 1
        await ask(bridge, post(pre("sleep", tool_use_id="toolu_lost")))
        assert bridge.replays == 1


@pytest.mark.anyio
async def test_session_end_cancels_that_sessions_suspended_calls_only() -> None:
    async with bridged() as bridge:
        await ask(bridge, pre("a", tool_use_id="toolu_a", session="s1"))
        await ask(bridge, pre("b", tool_use_id="toolu_b", session="s2"))
        end = {"session_id": "s1", "hook_event_name": "SessionEnd", "reason": "other"}
        assert await ask(bridge, end) == {}
        await until(lambda: bridge.suspended_count == 1)
        assert seen("cancelled") == [("cancelled", "toolu_a")]
        assert seen("session.end") == [("session.end", "s1", "other")]
        answer = await ask(bridge, post(pre("b", tool_use_id="toolu_b", session="s2")))
        assert "ok" in context_of(answer)


@pytest.mark.anyio
async def test_what_handlers_record_before_the_tool_reaches_pre_tool_use_and_only_there() -> None:
    async with bridged() as bridge:
        call = pre("TOAST ls")
        before = await ask(bridge, call)
        assert before == {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "additionalContext": "[claude-probe] probe note before the tool",
            },
            "systemMessage": "[claude-probe] probe looked before the tool",
        }
        after = await ask(bridge, post(call))
        assert context_of(after) == "[claude-probe] probe saw Bash (ok)"
        assert after["systemMessage"] == "[claude-probe] probe looked after the tool"


@pytest.mark.anyio
async def test_a_replayed_call_reports_everything_its_handlers_recorded() -> None:
    async with bridged() as bridge:
        answer = await ask(bridge, post(pre("TOAST ls", tool_use_id="toolu_new")))
        assert "probe note before the tool" in context_of(answer)
        assert answer["systemMessage"].splitlines() == [
            "[claude-probe] probe looked before the tool",
            "[claude-probe] probe looked after the tool",
        ]


@pytest.mark.anyio
async def test_an_output_a_plugin_changed_replaces_the_tools_output() -> None:
    async with bridged() as bridge:
        redacted = pre("cat secrets REDACT", tool_use_id="toolu_r")
        await ask(bridge, redacted)
        answer = await ask(bridge, post(redacted))
        assert answer["hookSpecificOutput"]["updatedToolOutput"] == {"stdout": "[redacted]"}
        assert "updatedMCPToolOutput" not in answer["hookSpecificOutput"]
        replayed = await ask(bridge, post(pre("REDACT again", tool_use_id="toolu_unseen")))
        assert replayed["hookSpecificOutput"]["updatedToolOutput"] == {"stdout": "[redacted]"}
        mcp = {**pre("REDACT", tool_use_id="toolu_m"), "tool_name": "mcp__notes__read"}
        await ask(bridge, mcp)
        specific = (await ask(bridge, post(mcp)))["hookSpecificOutput"]
        assert specific["updatedToolOutput"] == {"stdout": "[redacted]"}
        assert specific["updatedMCPToolOutput"] == {"stdout": "[redacted]"}


@pytest.mark.anyio
async def test_an_output_of_another_shape_or_a_failure_is_never_rewritten() -> None:
    async with bridged() as bridge:
        flat = pre("FLATTEN", tool_use_id="toolu_f")
        await ask(bridge, flat)
        with capture_logs() as logs:
            answer = await ask(bridge, post(flat))
        assert "updatedToolOutput" not in answer["hookSpecificOutput"]
        assert [e["expected"] for e in logs if "not sent" in e["event"]] == ["object"]
        failed = pre("REDACT false", tool_use_id="toolu_x")
        await ask(bridge, failed)
        answer = await ask(bridge, post(failed, failed=True))
        assert "updatedToolOutput" not in answer["hookSpecificOutput"]


@pytest.mark.anyio
async def test_session_end_handlers_are_cut_at_the_shared_budget() -> None:
    assert HostSettings().session_end_budget == 1.5
    async with bridged(settings=HostSettings(session_end_budget=0.2)) as bridge:
        end = {"session_id": SESSION, "hook_event_name": "SessionEnd", "reason": "slow-probe"}
        assert await ask(bridge, end) == {}
        assert seen("session.end cut") == [("session.end cut", SESSION)]


@pytest.mark.anyio
async def test_prompts_are_dropped_or_get_context_and_start_one_turn() -> None:
    async with bridged() as bridge:
        prompt = {"session_id": SESSION, "hook_event_name": "UserPromptSubmit", "prompt": "hi"}
        answer = await ask(bridge, prompt)
        assert context_of(answer) == "probe context"
        blocked = await ask(bridge, {**prompt, "prompt": "please BLOCKME"})
        assert blocked["decision"] == "block"
        assert blocked["reason"] == "[claude-probe] blocked by probe"
        await ask(bridge, pre("ls"))
        assert seen("turn.start") == [("turn.start", SESSION, f"{SESSION}:1")]


@pytest.mark.anyio
async def test_session_start_gives_context_to_the_model_and_toasts_to_the_person() -> None:
    async with bridged() as bridge:
        start = {"session_id": SESSION, "hook_event_name": "SessionStart", "source": "startup"}
        answer = await ask(bridge, start)
        assert context_of(answer) == "probe context"
        assert answer["systemMessage"] == "[claude-probe] probe session started"
        assert seen("session.start") == [("session.start", SESSION, "startup")]
        assert seen("turn.start") == []


@pytest.mark.anyio
async def test_stop_continues_the_turn_once_and_then_respects_stop_hook_active() -> None:
    async with bridged() as bridge:
        stop = {
            "session_id": SESSION,
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": "I will KEEP GOING",
        }
        first = await ask(bridge, stop)
        assert first == {"decision": "block", "reason": "[claude-probe] keep going"}
        second = await ask(bridge, {**stop, "stop_hook_active": True})
        assert "decision" not in second
        assert "keep going" in second["systemMessage"]
        assert seen("chunk") == [("chunk", "text", None), ("chunk", "stop", "end_turn")] * 2
        assert len(seen("turn.start")) == 1
        prompt = {"session_id": SESSION, "hook_event_name": "UserPromptSubmit", "prompt": "x"}
        await ask(bridge, prompt)
        assert [entry[2] for entry in seen("turn.start")] == [f"{SESSION}:1", f"{SESSION}:2"]


@pytest.mark.anyio
async def test_a_refusal_in_the_transcript_tail_reaches_the_step_and_the_turn(
    tmp_path: Path,
) -> None:
    transcript = tmp_path / "session.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": "do the thing"}},
        {"type": "assistant", "message": {"content": [], "stop_reason": "refusal"}},
    ]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    async with bridged() as bridge:
        stop = {
            "session_id": SESSION,
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "transcript_path": str(transcript),
        }
        await ask(bridge, stop)
        assert seen("chunk") == [("chunk", "stop", "refusal")]
        assert seen("turn.complete") == [("turn.complete", SESSION, "refusal", None)]


@pytest.mark.anyio
async def test_subagent_stop_completes_the_agents_turn() -> None:
    async with bridged() as bridge:
        stop = {
            "session_id": SESSION,
            "hook_event_name": "SubagentStop",
            "stop_hook_active": False,
            "agent_id": "a46",
        }
        assert await ask(bridge, stop) == {}
        assert seen("turn.complete") == [("turn.complete", SESSION, "end_turn", "a46")]


@pytest.mark.anyio
async def test_other_events_are_classic_and_malformed_input_fails_open() -> None:
    async with bridged() as bridge:
        note = {"session_id": SESSION, "hook_event_name": "Notification", "message": "hi"}
        assert await ask(bridge, note) == {}
        assert seen("classic") == [("classic", "Notification")]
        bad = await bridge.answer(b"{not json", "PreToolUse")
        assert bad.exit_code == 0
        assert bad.stdout == ""
        assert "not JSON" in bad.stderr
        assert bridge.payload_errors == 1
        status = bridge.status()
        assert status["payload_errors"] == 1
        assert status["plugins"] == [
            {"name": "claude-probe", "version": None, "status": "loaded", "error": None}
        ]


@pytest.mark.anyio
async def test_every_real_payload_gets_a_valid_answer() -> None:
    payloads = [json.loads(line) for _, line in payload_lines()]
    longest = 0
    async with bridged() as bridge:
        for payload in payloads:
            answer = await bridge.answer(json.dumps(payload).encode(), payload["hook_event_name"])
            assert answer.exit_code == 0
            assert answer.stderr == "", payload["hook_event_name"]
            if answer.stdout:
                decoded = json.loads(answer.stdout)
                longest = max([longest, *map(len, _strings(decoded))])
                specific = decoded.get("hookSpecificOutput")
                if specific is not None:
                    assert specific["hookEventName"] == payload["hook_event_name"]
        assert bridge.dispatch_errors == 0
        assert bridge.payload_errors == 0
        assert len(seen("tool")) >= 18
    assert longest <= cmap.TEXT_CAP == 10_000


def _strings(value: Any) -> list[str]:
    """Every string in a decoded JSON answer, keys aside."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


@pytest.mark.anyio
async def test_every_payload_tells_the_session_where_it_works() -> None:
    """A host that starts mid-session never sees SessionStart: the cwd comes with each event."""
    async with bridged() as bridge:
        await ask(bridge, {**pre("ls", "toolu_cwd1"), "cwd": "/work/project-a"})
        assert bridge.host.engine("claude-probe", SESSION).session.cwd == "/work/project-a"
        await ask(bridge, {**pre("ls", "toolu_cwd2"), "cwd": "/work/project-a/sub"})
        assert bridge.host.engine("claude-probe", SESSION).session.cwd == "/work/project-a/sub"
        bridge.cancel_all()


def _corpus_payload(event: str, **has: str) -> dict[str, Any]:
    for _name, line in payload_lines():
        payload = json.loads(line)
        if payload["hook_event_name"] == event and all(
            payload.get(k) == v or (v == "*" and k in payload) for k, v in has.items()
        ):
            return dict(payload)
    raise AssertionError(f"no {event} payload with {has} in the corpus")


@pytest.mark.anyio
async def test_subagent_types_from_real_payloads_reach_write_guard_agent_presets(
    tmp_path: Path,
) -> None:
    import write_guard

    start = _corpus_payload("SubagentStart", agent_type="*")
    session, agent, kind = start["session_id"], start["agent_id"], start["agent_type"]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    options = {"write-guard": {"agent_presets": {kind: "read-only"}}}
    async with (
        Host(
            plugins=[write_guard],
            entry_points=False,
            store="memory://",
            env={"CLAUDE_PROJECT_DIR": str(workspace), "HOME": str(tmp_path)},
            options=options,
        ) as host,
        anyio.create_task_group() as task_group,
    ):
        bridge = ClaudeBridge(host, task_group)
        await bridge.answer(json.dumps({**start, "cwd": str(workspace)}).encode())
        write = {
            "session_id": session,
            "hook_event_name": "PreToolUse",
            "cwd": str(workspace),
            "tool_name": "Write",
            "tool_input": {"file_path": str(workspace / "f"), "content": "x"},
        }
        inside = await ask(bridge, {**write, "agent_id": agent, "tool_use_id": "w1"})
        assert inside["hookSpecificOutput"]["permissionDecision"] == "deny"
        main_loop = await ask(bridge, {**write, "tool_use_id": "w2"})
        assert "permissionDecision" not in main_loop.get("hookSpecificOutput", {})
        # Older Claude Code: no agent_type on the subagent's events; the Task call's input
        # `subagent_type` names it.
        task = _corpus_payload("PreToolUse", tool_name="Task")
        kind_of_task = task["tool_input"]["subagent_type"]
        await bridge.answer(json.dumps({**task, "session_id": session}).encode())
        later = await ask(bridge, {**write, "agent_id": "a-later", "tool_use_id": "w3"})
        agents = {a.id: a.type for a in await host.engine("write-guard", session).agents.list()}
        assert agents[agent] == kind
        assert agents["a-later"] == kind_of_task
        assert later.get("hookSpecificOutput", {}).get("permissionDecision") != "deny"
        bridge.cancel_all()


@pytest.mark.anyio
@pytest.mark.parametrize("event", ["UserPromptSubmit", "UserPromptExpansion"])
async def test_a_plugin_slash_command_is_answered_for_the_person_and_starts_no_turn(
    event: str,
) -> None:
    import loop_breaker

    async with (
        Host(plugins=[loop_breaker, probe], entry_points=False, store="memory://", env={}) as host,
        anyio.create_task_group() as task_group,
    ):
        bridge = ClaudeBridge(host, task_group)
        typed = "/loop-breaker"
        payload: dict[str, Any] = {"session_id": SESSION, "hook_event_name": event}
        if event == "UserPromptSubmit":
            payload["prompt"] = typed
        else:
            payload.update(
                expansion_type="slash_command",
                command_name="loop-breaker",
                command_args="",
                prompt=typed,
            )
        answer = await ask(bridge, payload)
        assert answer["decision"] == "block"
        # The reply names its plugin itself, so the host adds no second name.
        assert answer["reason"].startswith("loop-breaker: on")
        assert "Commands: /loop-breaker" in answer["reason"]
        assert seen("turn.start") == []  # no model turn for a command
        other = await ask(bridge, {**payload, "prompt": "/unknown-thing x", "command_name": "x"})
        assert other.get("decision") != "block"
        bridge.cancel_all()
