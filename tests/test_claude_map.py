"""Claude Code payload → contract events and results → answers, on every real payload."""

from __future__ import annotations

import json
from typing import Any

import pytest
from claude_e2e_kit import payload_lines

from framework import (
    Action,
    Classic,
    ClassicResult,
    ContextResult,
    PromptResult,
    SessionEnd,
    SessionStart,
    ToolCall,
    ToolResult,
    TurnResult,
)
from framework.claude_code import mapping as cmap


def corpus() -> list[dict[str, Any]]:
    return [json.loads(line) for _, line in payload_lines()]


def raw(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode()


def of(name: str) -> list[dict[str, Any]]:
    return [p for p in corpus() if p["hook_event_name"] == name]


def answer_json(answer: cmap.HookAnswer) -> dict[str, Any]:
    assert answer.exit_code == 0
    decoded = json.loads(answer.stdout)
    assert isinstance(decoded, dict)
    return decoded


def test_the_corpus_holds_every_payload_the_mapping_claims() -> None:
    names = {p["hook_event_name"] for p in corpus()}
    assert {"PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop", "SessionEnd"} <= names
    assert len(corpus()) == 49


def test_every_real_payload_parses_with_its_own_event_as_hint() -> None:
    for payload in corpus():
        parsed = cmap.parse_payload(raw(payload), payload["hook_event_name"])
        assert parsed == payload


def test_pre_tool_use_payloads_become_tool_calls_with_their_input() -> None:
    for payload in of("PreToolUse"):
        call = cmap.tool_call(payload)
        assert isinstance(call, ToolCall)
        assert call.tool == payload["tool_name"]
        assert dict(call.input) == payload["tool_input"]
        assert call.session_id == payload["session_id"]
        if "tool_use_id" in payload:
            assert call.tool_use_id == payload["tool_use_id"]
        else:
            assert call.tool_use_id.startswith("input:")


def test_the_permission_mode_of_each_call_reaches_the_tool_call_and_none_when_unsaid() -> None:
    modes = []
    for payload in of("PreToolUse"):
        call = cmap.tool_call(payload)
        assert call.permission_mode == payload.get("permission_mode")
        modes.append(call.permission_mode)
    # Real payloads of both kinds: recent ones say the mode, Claude Code 1.0.89's do not.
    assert "acceptEdits" in modes and None in modes
    unsaid = {**of("PreToolUse")[0], "permission_mode": ""}
    assert cmap.tool_call(unsaid).permission_mode is None


def test_old_payloads_pair_pre_and_post_by_session_tool_and_input() -> None:
    pre = next(p for p in of("PreToolUse") if "tool_use_id" not in p)
    post = {**pre, "hook_event_name": "PostToolUse", "tool_response": {"stdout": ""}}
    other_input = {**pre, "tool_input": {**pre["tool_input"], "extra": 1}}
    other_session = {**pre, "session_id": "another"}
    assert cmap.call_key(pre) == cmap.call_key(post)
    assert cmap.call_key(pre) != cmap.call_key(other_input)
    assert cmap.call_key(pre) != cmap.call_key(other_session)


def test_post_tool_use_payloads_carry_the_tool_response_as_output() -> None:
    for payload in of("PostToolUse"):
        result = cmap.tool_outcome(payload)
        assert result.output == payload["tool_response"]
        assert not result.is_error


def test_failures_become_error_results_with_the_error_text() -> None:
    for payload in of("PostToolUseFailure"):
        result = cmap.tool_outcome(payload)
        assert result.is_error
        assert result.output == payload["error"]


def test_lifecycle_payloads_map_to_their_events() -> None:
    for payload in of("SessionStart"):
        event = cmap.session_start(payload)
        assert isinstance(event, SessionStart)
        assert event.source == payload["source"]
        assert event.model == payload.get("model")
    for payload in of("SessionEnd"):
        end = cmap.session_end(payload)
        assert isinstance(end, SessionEnd)
        assert end.reason == payload["reason"]
    for payload in of("UserPromptSubmit"):
        assert cmap.prompt_submit(payload).text == payload["prompt"]
    for payload in of("Stop") + of("SubagentStop"):
        turn = cmap.turn_complete(payload, "t:1")
        assert turn.stop_hook_active is payload["stop_hook_active"]
        assert turn.reason == "end_turn"
    for payload in of("Notification") + of("PreCompact") + of("PermissionRequest"):
        classic = cmap.classic(payload)
        assert isinstance(classic, Classic)
        assert classic.name == f"classic.{payload['hook_event_name']}"
        assert dict(classic.payload) == payload


def test_subagent_stop_keeps_its_agent_and_stop_does_not() -> None:
    sub = next(p for p in of("SubagentStop") if "agent_id" in p)
    assert cmap.turn_complete(sub, "t").agent_id == sub["agent_id"]
    stop = {**of("Stop")[0], "agent_id": "a1"}
    assert cmap.turn_complete(stop, "t").agent_id is None


def test_a_fork_is_a_resume_and_an_unknown_source_is_refused() -> None:
    start = of("SessionStart")[0]
    assert cmap.session_start({**start, "source": "fork"}).source == "resume"
    with pytest.raises(cmap.PayloadError, match="unknown SessionStart source"):
        cmap.session_start({**start, "source": "teleport"})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty"),
        (b"not json", "not JSON"),
        (b"[1, 2]", "JSON object"),
        (b'{"hook_event_name": "PreToolUse"}', "session_id"),
        (b'{"session_id": "s"}', "no hook_event_name"),
        (b'{"session_id": "s", "hook_event_name": "a b"}', "event name"),
        (b'{"session_id": "s", "hook_event_name": "Stop"}', "received a Stop payload"),
    ],
)
def test_malformed_stdin_is_refused_with_a_clear_reason(data: bytes, message: str) -> None:
    with pytest.raises(cmap.PayloadError, match=message):
        cmap.parse_payload(data, "PreToolUse" if b"Stop" in data else None)


def test_a_payload_without_event_name_takes_the_registered_one() -> None:
    payload = cmap.parse_payload(b'{"session_id": "s", "prompt": "hi"}', "UserPromptSubmit")
    assert payload["hook_event_name"] == "UserPromptSubmit"


def test_tool_input_that_is_not_an_object_is_refused() -> None:
    payload = {**of("PreToolUse")[0], "tool_input": "rm"}
    with pytest.raises(cmap.PayloadError, match="tool_input"):
        cmap.tool_call(payload)


# -- answers ---------------------------------------------------------------------------------------


def call() -> ToolCall:
    return cmap.tool_call(of("PreToolUse")[0])


def test_a_denial_becomes_deny_with_the_plugins_reason() -> None:
    denied = ToolResult.denied("no deletes", by="write-guard")
    answer = answer_json(cmap.pre_tool_use_answer(call(), denied, None))
    specific = answer["hookSpecificOutput"]
    assert specific["hookEventName"] == "PreToolUse"
    assert specific["permissionDecision"] == "deny"
    assert specific["permissionDecisionReason"] == "[write-guard] no deletes"


def test_a_changed_input_becomes_the_whole_updated_input() -> None:
    event = call()
    changed = {**event.input, "command": "ls"}
    answer = answer_json(cmap.pre_tool_use_answer(event, None, changed))
    assert answer["hookSpecificOutput"]["updatedInput"] == changed
    assert "permissionDecision" not in answer["hookSpecificOutput"]


def test_reaching_the_terminal_unchanged_takes_no_decision() -> None:
    event = call()
    assert cmap.pre_tool_use_answer(event, None, event.input) == cmap.NO_ANSWER


def test_notes_after_the_tool_go_to_the_model_and_toasts_to_the_person() -> None:
    result = ToolResult(output="x").with_note("looping?", by="loop-breaker")
    actions = [
        Action(by="observer", kind="toast", text="saved", event="tool.call"),
        Action(by="loop-breaker", kind="note", text="looping?", event="tool.call"),
    ]
    answer = answer_json(cmap.post_tool_use_answer("PostToolUse", result, actions))
    assert answer["hookSpecificOutput"] == {
        "hookEventName": "PostToolUse",
        "additionalContext": "[loop-breaker] looping?",
    }
    assert answer["systemMessage"] == "[observer] saved"


def test_a_changed_output_of_the_same_json_kind_becomes_updated_tool_output() -> None:
    recorded = ToolResult(output={"stdout": "key=abc", "stderr": ""})
    changed = recorded.model_copy(update={"output": {"stdout": "key=***", "stderr": ""}})
    answer = answer_json(
        cmap.post_tool_use_answer("PostToolUse", changed, recorded=recorded, tool="Bash")
    )
    assert answer == {
        "hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "updatedToolOutput": {"stdout": "key=***", "stderr": ""},
        }
    }
    unchanged = cmap.post_tool_use_answer("PostToolUse", recorded, recorded=recorded, tool="Bash")
    assert unchanged == cmap.NO_ANSWER


@pytest.mark.parametrize(
    ("before", "after"),
    [({"stdout": "x"}, "x"), ("text", ["text"]), ([1], {"a": 1}), (1, True), ("a", None)],
)
def test_an_output_of_another_json_kind_is_not_sent(before: Any, after: Any) -> None:
    recorded = ToolResult(output=before)
    assert cmap.updated_tool_output(recorded, ToolResult(output=after), "Read") == {}


def test_rewritten_output_is_plain_json_capped_and_doubled_for_mcp_tools() -> None:
    recorded = ToolResult(output={"rows": ["a"], "text": "short"})
    changed = ToolResult(output={"rows": ("b",), "text": "z" * 20_000})
    fields = cmap.updated_tool_output(recorded, changed, "mcp__db__query")
    assert fields["updatedToolOutput"]["rows"] == ["b"]
    assert fields["updatedToolOutput"]["text"].endswith(cmap.CUT_MARKER)
    assert len(fields["updatedToolOutput"]["text"]) == cmap.TEXT_CAP
    assert fields["updatedMCPToolOutput"] == fields["updatedToolOutput"]
    failed = ToolResult(output="Exit code 1", is_error=True)
    assert cmap.updated_tool_output(failed, ToolResult(output="Exit code 0"), "Bash") == {}
    failure = cmap.post_tool_use_answer(
        "PostToolUseFailure", ToolResult(output="changed", is_error=True), recorded=failed
    )
    assert failure == cmap.NO_ANSWER


def test_a_failure_answer_names_its_own_event() -> None:
    result = ToolResult(output="Exit code 1", is_error=True).with_note("n", by="p")
    answer = answer_json(cmap.post_tool_use_answer("PostToolUseFailure", result))
    assert answer["hookSpecificOutput"]["hookEventName"] == "PostToolUseFailure"


def test_a_dropped_prompt_blocks_with_its_reason_and_context_is_added_otherwise() -> None:
    dropped = PromptResult(text="x").dropped("secret in prompt", by="guard")
    blocked = answer_json(cmap.prompt_answer(dropped, None))
    assert blocked == {"decision": "block", "reason": "[guard] secret in prompt"}
    context = ContextResult().with_block("a", "first", by="p").with_block("b", "second", by="q")
    added = answer_json(cmap.prompt_answer(PromptResult(text="x"), context))
    assert added["hookSpecificOutput"]["additionalContext"] == "first\n\nsecond"
    assert "decision" not in added


def test_session_start_context_blocks_become_additional_context() -> None:
    context = ContextResult().with_block("rules", "be brief", by="p")
    answer = answer_json(cmap.session_start_answer(context))
    assert answer["hookSpecificOutput"] == {
        "hookEventName": "SessionStart",
        "additionalContext": "be brief",
    }


def test_a_continuation_blocks_the_stop_unless_a_stop_hook_is_already_active() -> None:
    stop = of("Stop")[0]
    result = TurnResult().continued("tests fail", by="ci")
    turn = cmap.turn_complete({**stop, "stop_hook_active": False}, "t")
    assert answer_json(cmap.stop_answer("Stop", turn, result)) == {
        "decision": "block",
        "reason": "[ci] tests fail",
    }
    again = cmap.turn_complete({**stop, "stop_hook_active": True}, "t")
    answer = answer_json(cmap.stop_answer("Stop", again, result))
    assert "decision" not in answer
    assert "tests fail" in answer["systemMessage"]
    assert cmap.stop_answer("Stop", turn, TurnResult()) == cmap.NO_ANSWER


def test_classic_output_is_passed_through_with_strings_capped() -> None:
    long = "y" * 20_000
    result = ClassicResult(output={"hookSpecificOutput": {"retry": True, "x": long}})
    answer = answer_json(cmap.classic_answer(result))
    assert answer["hookSpecificOutput"]["retry"] is True
    assert len(answer["hookSpecificOutput"]["x"]) == cmap.TEXT_CAP
    assert cmap.classic_answer(ClassicResult()) == cmap.NO_ANSWER


def test_long_texts_are_cut_to_the_cap_with_a_marker() -> None:
    text = "x" * 25_000
    capped = cmap.cap(text)
    assert len(capped) == cmap.TEXT_CAP
    assert capped.endswith(cmap.CUT_MARKER)
    assert cmap.cap("short") == "short"
    result = ToolResult().with_note(text, by="p")
    answer = answer_json(cmap.post_tool_use_answer("PostToolUse", result))
    assert len(answer["hookSpecificOutput"]["additionalContext"]) == cmap.TEXT_CAP
    denied = ToolResult.denied(text, by="p")
    reason = answer_json(cmap.pre_tool_use_answer(call(), denied, None))["hookSpecificOutput"]
    assert reason["permissionDecisionReason"].endswith(cmap.CUT_MARKER)
    toast = Action(by="p", kind="toast", text=text, event="tool.call")
    shown = answer_json(cmap.pre_tool_use_answer(call(), None, None, [toast]))
    assert len(shown["systemMessage"]) == cmap.TEXT_CAP
    stop = cmap.turn_complete({**of("Stop")[0], "stop_hook_active": False}, "t")
    blocked = answer_json(cmap.stop_answer("Stop", stop, TurnResult().continued(text, by="p")))
    assert len(blocked["reason"]) == cmap.TEXT_CAP
    dropped = answer_json(cmap.prompt_answer(PromptResult(text="x").dropped(text, by="p"), None))
    assert dropped["reason"].endswith(cmap.CUT_MARKER)


# -- the stop reason at Stop ---------------------------------------------------------------------


def record(kind: str, **fields: Any) -> bytes:
    return json.dumps({"type": kind, **fields}).encode()


def assistant(text: str, stop_reason: str | None = None, **extra: Any) -> bytes:
    message = {"content": [{"type": "text", "text": text}], "stop_reason": stop_reason}
    return record("assistant", message=message, **extra)


def test_a_refusal_is_read_from_the_transcript_tail() -> None:
    stop = of("Stop")[0]
    tail = [record("user", message={"content": "hi"}), assistant("", "refusal"), b"{broken"]
    assert cmap.stop_reason(stop, tail) == "refusal"
    assert cmap.turn_complete(stop, "t", tail).reason == "refusal"
    system = [record("system", subtype="model_refusal_no_fallback")]
    assert cmap.stop_reason(stop, system) == "refusal"


def test_a_refusal_is_read_from_the_last_assistant_message() -> None:
    stop = {
        **of("Stop")[0],
        "last_assistant_message": "API Error: … which appears to violate our Usage Policy …",
    }
    assert cmap.stop_reason(stop) == "refusal"
    assert cmap.stop_reason({**stop, "last_assistant_message": "Done."}) == "end_turn"


def test_an_earlier_turns_refusal_does_not_count() -> None:
    tail = [assistant("no", "refusal"), record("user", message={"content": "again"})]
    assert cmap.stop_reason(of("Stop")[0], tail) == "end_turn"


def test_the_last_message_comes_from_the_tail_when_the_payload_has_none() -> None:
    tail = [assistant("first"), assistant("side", isSidechain=True), b""]
    assert cmap.last_assistant_message(of("Stop")[0], [assistant("first"), tail[1]]) == "first"
    payload = {**of("Stop")[0], "last_assistant_message": "from payload"}
    assert cmap.last_assistant_message(payload, tail) == "from payload"


def test_the_tail_message_joins_text_blocks_and_skips_records_without_text() -> None:
    blocks = [
        {"type": "text", "text": "one"},
        {"type": "tool_use", "name": "Bash", "input": {}},
        {"type": "text", "text": "two"},
    ]
    tool_only = record("assistant", message={"content": [{"type": "tool_use", "name": "Bash"}]})
    tail = [record("assistant", message={"content": blocks}), tool_only]
    assert cmap.last_assistant_message(of("Stop")[0], tail) == "one\ntwo"
    plain = record("assistant", message={"content": "as a string"})
    assert cmap.last_assistant_message(of("Stop")[0], [plain, tool_only]) == "as a string"


def test_a_stop_after_a_tool_use_step_completes_the_turn_as_a_replay_would() -> None:
    tail = [
        json.dumps(
            {"type": "assistant", "message": {"stop_reason": "tool_use", "content": []}}
        ).encode()
    ]
    payload = {"session_id": "s", "hook_event_name": "Stop", "stop_hook_active": False}
    event = cmap.turn_complete(payload, "turn-1", tail)
    assert event.reason == "end_turn"
    assert cmap.stop_reason(payload, tail) == "tool_use"  # the step itself did stop for tools


def test_the_plugin_name_is_added_once_and_a_toast_and_line_alike_reach_the_person_once() -> None:
    alert = "[loop-breaker] repeat-failure: `make` failed 3 times"
    actions = [
        Action(by="loop-breaker", kind="toast", text=alert, event="tool.call"),
        Action(by="loop-breaker", kind="transcript", text=alert, event="tool.call"),
        Action(by="observer", kind="toast", text="episode saved", event="tool.call"),
    ]
    assert cmap.person_messages(actions) == [alert, "[observer] episode saved"]
    call = ToolCall(session_id="s", tool_use_id="t", tool="Write", input={"file_path": "/x"})
    denied = ToolResult.denied("[write-guard] denied this (outside-roots): /x", by="write-guard")
    answer = json.loads(cmap.pre_tool_use_answer(call, denied, None, actions).stdout)
    reason = answer["hookSpecificOutput"]["permissionDecisionReason"]
    assert reason == "[write-guard] denied this (outside-roots): /x"
    assert answer["systemMessage"] == f"{alert}\n[observer] episode saved"
    assert cmap.labelled("write-guard", "outside the workspace") == (
        "[write-guard] outside the workspace"
    )
