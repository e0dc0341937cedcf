"""Claude Code hook payloads to contract events, and contract results back to hook answers."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from pydantic import ValidationError

from framework import _launch as wire
from framework.core.contract import (
    Classic,
    ClassicResult,
    CommandReply,
    ContextResult,
    PromptContext,
    PromptResult,
    PromptSubmit,
    SessionEnd,
    SessionStart,
    ToolCall,
    ToolResult,
    TurnComplete,
    TurnResult,
)
from framework.core.engine import AgentInfo
from framework.replay.rebuild import error_reason, is_refusal_text, text_of, turn_reason

_log = structlog.get_logger("hookchain.claude")

TEXT_CAP = 10_000
"""Claude Code caps every output string at this many characters."""

CUT_MARKER = "\n[… cut by hookchain: over Claude Code's 10,000-character limit]"

MAX_PAYLOAD_BYTES = wire.MAX_PAYLOAD_BYTES
"""Larger stdin is refused: no real hook payload comes close, and the host must stay small."""

PERSON_ACTION_KINDS = frozenset({"toast", "transcript", "status"})
"""Actions for the person: they become `systemMessage`."""

MODEL_ACTION_KINDS = frozenset({"append"})
"""Actions for the model that are not already part of the result: they become context."""

TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure"})
STOP_EVENTS = frozenset({"Stop", "SubagentStop"})

_SESSION_SOURCES = {
    "startup": "startup",
    "resume": "resume",
    "clear": "clear",
    "compact": "compact",
    # Before 2.1.214 a fork arrived as `resume`; the contract has no separate value.
    "fork": "resume",
}


class PayloadError(ValueError):
    """Stdin that is not a hook payload this host can act on; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class HookAnswer:
    """What a command hook hands back to Claude Code: exit code, stdout (JSON or empty), stderr."""

    exit_code: int = 0
    stdout: str = ""
    stderr: str = ""


NO_ANSWER = HookAnswer()


# -- payloads --------------------------------------------------------------------------------------


def parse_payload(raw: bytes, event_hint: str | None = None) -> dict[str, Any]:
    """The payload object, with `hook_event_name` filled from the hint for pre-1.0.41 payloads."""
    if len(raw) > MAX_PAYLOAD_BYTES:
        raise PayloadError(f"hook payload of {len(raw)} bytes exceeds {MAX_PAYLOAD_BYTES}")
    if not raw.strip():
        raise PayloadError("empty hook payload on stdin; expected one JSON object")
    try:
        payload = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise PayloadError(f"hook payload is not JSON: {error}") from None
    if not isinstance(payload, dict):
        raise PayloadError("hook payload must be a JSON object")
    name = payload.get("hook_event_name")
    if name is None:
        if not event_hint:
            raise PayloadError("hook payload has no hook_event_name and no event was given")
        payload["hook_event_name"] = name = event_hint
    if not isinstance(name, str) or not name.isidentifier():
        raise PayloadError("hook_event_name must be an event name such as PreToolUse")
    if event_hint and event_hint != name:
        raise PayloadError(f"hook registered for {event_hint} received a {name} payload")
    session_id = payload.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        raise PayloadError("hook payload has no session_id")
    return payload


def _text(payload: Mapping[str, Any], key: str) -> str:
    value = payload.get(key)
    return value if isinstance(value, str) else ""


def _agent_id(payload: Mapping[str, Any]) -> str | None:
    value = payload.get("agent_id")
    return value if isinstance(value, str) and value else None


def _tool_input(payload: Mapping[str, Any]) -> dict[str, Any]:
    value = payload.get("tool_input", {})
    if not isinstance(value, dict):
        raise PayloadError("tool_input must be a JSON object")
    return value


SUBAGENT_TOOLS = frozenset({"Task", "Agent"})
"""The tool that starts a subagent: `Task` in older Claude Code, `Agent` in current docs."""


def subagent_type(tool: str, tool_input: Mapping[str, Any]) -> str | None:
    """The subagent type a Task/Agent tool call starts (`subagent_type` of its input), else None.

    Pure, for both the live bridge and transcript readers."""
    if tool not in SUBAGENT_TOOLS:
        return None
    value = tool_input.get("subagent_type")
    return value if isinstance(value, str) and value else None


def payload_agent(payload: Mapping[str, Any]) -> tuple[str, str | None] | None:
    """The subagent a payload comes from: its `agent_id` and, when Claude Code sends it
    (SubagentStart, SubagentStop, events inside a subagent), its `agent_type`."""
    agent_id = _agent_id(payload)
    if agent_id is None:
        return None
    kind = payload.get("agent_type")
    return agent_id, kind if isinstance(kind, str) and kind else None


def input_key(session_id: str, tool: str, tool_input: Mapping[str, Any]) -> str:
    """A call's key for payloads without `tool_use_id` (before 2.0.43): session, tool and input."""
    canonical = json.dumps([session_id, tool, tool_input], sort_keys=True, separators=(",", ":"))
    return "input:" + hashlib.sha256(canonical.encode()).hexdigest()[:32]


def call_key(payload: Mapping[str, Any]) -> str:
    """The key that pairs a PreToolUse with its PostToolUse / PostToolUseFailure."""
    tool_use_id = payload.get("tool_use_id")
    if isinstance(tool_use_id, str) and tool_use_id:
        return tool_use_id
    return input_key(payload["session_id"], _text(payload, "tool_name"), _tool_input(payload))


def _validated(build: Any, **fields: Any) -> Any:
    try:
        return build(**fields)
    except ValidationError as error:
        raise PayloadError(f"hook payload does not fit the contract: {error}") from None


def tool_call(payload: Mapping[str, Any]) -> ToolCall:
    """PreToolUse (and the Post events, for replays) → `tool.call`."""
    tool = payload.get("tool_name")
    if not isinstance(tool, str) or not tool:
        raise PayloadError("tool event without tool_name")
    event: ToolCall = _validated(
        ToolCall,
        session_id=payload["session_id"],
        tool_use_id=call_key(payload),
        tool=tool,
        input=_tool_input(payload),
        agent_id=_agent_id(payload),
        permission_mode=_text(payload, "permission_mode") or None,
    )
    return event


def tool_outcome(payload: Mapping[str, Any]) -> ToolResult:
    """What the tool did, from PostToolUse (`tool_response`) or PostToolUseFailure (`error`)."""
    if payload["hook_event_name"] == "PostToolUseFailure":
        return ToolResult(output=payload.get("error", ""), is_error=True)
    return ToolResult(output=payload.get("tool_response"))


def session_start(payload: Mapping[str, Any]) -> SessionStart:
    source = _SESSION_SOURCES.get(_text(payload, "source") or "startup")
    if source is None:
        raise PayloadError(f"unknown SessionStart source {payload.get('source')!r}")
    model = payload.get("model")
    event: SessionStart = _validated(
        SessionStart,
        session_id=payload["session_id"],
        cwd=_text(payload, "cwd"),
        source=source,
        model=model if isinstance(model, str) and model else None,
    )
    return event


def session_end(payload: Mapping[str, Any]) -> SessionEnd:
    return SessionEnd(session_id=payload["session_id"], reason=_text(payload, "reason") or "other")


def prompt_submit(payload: Mapping[str, Any]) -> PromptSubmit:
    prompt = payload.get("prompt")
    if not isinstance(prompt, str):
        raise PayloadError("UserPromptSubmit without a prompt string")
    return PromptSubmit(session_id=payload["session_id"], text=prompt, origin_kind="composer")


def prompt_context(payload: Mapping[str, Any]) -> PromptContext:
    return PromptContext(session_id=payload["session_id"])


def turn_complete(
    payload: Mapping[str, Any], turn_id: str, transcript_tail: Sequence[bytes] = ()
) -> TurnComplete:
    """Stop / SubagentStop → `turn.complete`, its reason from the message or transcript tail."""
    last_message = last_assistant_message(payload, transcript_tail)
    return TurnComplete(
        session_id=payload["session_id"],
        turn_id=turn_id,
        agent_id=_agent_id(payload) if payload["hook_event_name"] == "SubagentStop" else None,
        reason=turn_reason(stop_reason(payload, transcript_tail)),
        stop_hook_active=payload.get("stop_hook_active") is True,
        last_message=last_message,
    )


def stop_failure(
    payload: Mapping[str, Any], turn_id: str, transcript_tail: Sequence[bytes] = ()
) -> TurnComplete:
    """StopFailure (2.1.78+: a turn ended by an API error, no Stop follows) → `turn.complete`.

    `error` names the kind (`rate_limit`, `invalid_request`, …) and `last_assistant_message` is
    Claude Code's own error text; a refusal arrives as `invalid_request` with a text worded by the
    refusal's category, while the transcript's `<synthetic>` message says `stop_reason: "refusal"`
    (when it is written in time). The reason is the one a replay of the same transcript gives.
    """
    message = payload.get("last_assistant_message")
    text = message if isinstance(message, str) else None
    recorded = stop_reason({}, transcript_tail) if transcript_tail else None
    return TurnComplete(
        session_id=payload["session_id"],
        turn_id=turn_id,
        agent_id=_agent_id(payload),
        reason=error_reason(payload.get("error"), stop_reason=recorded, text=text),
        last_message=text,
    )


def subagent(payload: Mapping[str, Any]) -> AgentInfo | None:
    """The agent a SubagentStart names (`agent_id`, `agent_type`), or None without an id."""
    agent_id = _agent_id(payload)
    if agent_id is None:
        return None
    agent_type = payload.get("agent_type")
    return AgentInfo(id=agent_id, type=agent_type if isinstance(agent_type, str) else None)


def classic(payload: Mapping[str, Any]) -> Classic:
    return Classic(
        session_id=payload["session_id"], hook_name=payload["hook_event_name"], payload=payload
    )


# -- the transcript tail at Stop -------------------------------------------------------------------


def _records_backwards(lines: Sequence[bytes]) -> Iterable[dict[str, Any]]:
    for line in reversed(lines):
        try:
            record = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            continue  # a partly written or sanitised line is normal in transcripts
        if isinstance(record, dict):
            yield record


def _assistant_text(record: Mapping[str, Any]) -> str | None:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    return text_of(content) or None


def last_assistant_message(
    payload: Mapping[str, Any], transcript_tail: Sequence[bytes] = ()
) -> str | None:
    """`last_assistant_message` (2.1.47+), else the last assistant text of the transcript tail."""
    message = payload.get("last_assistant_message")
    if isinstance(message, str):
        return message
    for record in _records_backwards(transcript_tail):
        if record.get("type") == "assistant" and not record.get("isSidechain"):
            text = _assistant_text(record)
            if text is not None:
                return text
    return None


def stop_reason(payload: Mapping[str, Any], transcript_tail: Sequence[bytes] = ()) -> str:
    """`refusal` when the payload or the transcript tail shows one, else `end_turn`.

    Transcripts write one record per content block, so a null `stop_reason` says nothing; only an
    explicit value, a `model_refusal*` system record or the policy text counts.
    """
    if is_refusal_text(_text(payload, "last_assistant_message")):
        return "refusal"
    for record in _records_backwards(transcript_tail):
        kind = record.get("type")
        if kind == "system" and str(record.get("subtype", "")).startswith("model_refusal"):
            return "refusal"
        if kind == "assistant" and not record.get("isSidechain"):
            message = record.get("message")
            reason = message.get("stop_reason") if isinstance(message, dict) else None
            if reason == "refusal" or is_refusal_text(_assistant_text(record)):
                return "refusal"
            if isinstance(reason, str):
                return reason
        if kind == "user" and not record.get("isMeta"):
            break  # the previous turn's records say nothing about this one
    return "end_turn"


# -- answers ---------------------------------------------------------------------------------------


def cap(text: str) -> str:
    """`text` cut to Claude Code's limit, with a marker saying so."""
    if len(text) <= TEXT_CAP:
        return text
    return text[: TEXT_CAP - len(CUT_MARKER)] + CUT_MARKER


def _cap_all(value: Any) -> Any:
    if isinstance(value, str):
        return cap(value)
    if isinstance(value, Mapping):
        return {key: _cap_all(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_cap_all(item) for item in value]
    return value


def labelled(by: str | None, text: str) -> str:
    """`text` with its plugin's name in front, once: a text that already starts with the label
    (`[my-plugin] …`) or the name as a heading (`my-plugin: …`) is left as it is. A text that merely
    begins with the same word (a plugin named `other` saying "other status") is still labelled."""
    name = by or "?"
    head = text.lstrip()
    if head.startswith((f"[{name}]", f"{name}:")):
        return text
    return f"[{name}] {text}"


def _kind_and_text(action: Any) -> tuple[str, str]:
    return str(getattr(action, "kind", "")), labelled(getattr(action, "by", None), action.text)


def person_messages(actions: Iterable[Any]) -> list[str]:
    """Texts for the person (toasts, transcript lines, status), each with its plugin's name.

    Claude Code has one place for all of them, `systemMessage`: a toast and a transcript line of
    the same text from the same plugin are one line there, not two, and a status is a value, so
    only each plugin's newest one is shown.
    """
    shown = [
        (kind, text, getattr(action, "by", "?"))
        for action in actions
        for kind, text in [_kind_and_text(action)]
        if kind in PERSON_ACTION_KINDS
    ]
    newest = {by: index for index, (kind, _, by) in enumerate(shown) if kind == "status"}
    texts = (
        text
        for index, (kind, text, by) in enumerate(shown)
        if kind != "status" or newest[by] == index
    )
    return list(dict.fromkeys(texts))


SPEAKING_EVENTS = frozenset(
    {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure"}
    | STOP_EVENTS
)
"""Events whose answer's `systemMessage` Claude Code shows; it ignores StopFailure's output and
discards SessionEnd's."""


def with_person_messages(
    event_name: str, answer: HookAnswer, lines: Sequence[str]
) -> HookAnswer | None:
    """`answer` with `lines` first in its `systemMessage`, or None when it cannot carry them (an
    event whose output Claude Code ignores, an exit-2 answer, stdout that is no JSON object):
    the caller then keeps `lines` for a later answer."""
    if event_name not in SPEAKING_EVENTS or answer.exit_code != 0:
        return None
    try:
        output = json.loads(answer.stdout) if answer.stdout.strip() else {}
    except ValueError:
        return None
    if not isinstance(output, dict):
        return None
    existing = output.get("systemMessage")
    shown = [*lines, existing] if isinstance(existing, str) and existing else list(lines)
    output["systemMessage"] = cap("\n".join(dict.fromkeys(shown)))
    text = json.dumps(output, ensure_ascii=False, separators=(",", ":"))
    return HookAnswer(stdout=text, stderr=answer.stderr)


def model_messages(actions: Iterable[Any]) -> list[str]:
    """Messages a plugin appended for the model, each with its plugin's name."""
    return [text for kind, text in map(_kind_and_text, actions) if kind in MODEL_ACTION_KINDS]


def _json(answer: Mapping[str, Any]) -> HookAnswer:
    if not answer:
        return NO_ANSWER
    return HookAnswer(stdout=json.dumps(answer, ensure_ascii=False, separators=(",", ":")))


def _envelope(
    event_name: str,
    *,
    context: Sequence[str] = (),
    person: Sequence[str] = (),
    specific: Mapping[str, Any] | None = None,
    top: Mapping[str, Any] | None = None,
) -> HookAnswer:
    answer: dict[str, Any] = {}
    if top:
        answer.update(top)
    fields: dict[str, Any] = dict(specific or {})
    if context:
        fields["additionalContext"] = cap("\n\n".join(context))
    if fields:
        answer["hookSpecificOutput"] = {"hookEventName": event_name, **fields}
    if person:
        answer["systemMessage"] = cap("\n".join(person))
    return _json(answer)


def _note_texts(result: ToolResult) -> list[str]:
    return [labelled(note.by, note.text) for note in result.notes]


def pre_tool_use_answer(
    call: ToolCall,
    result: ToolResult | None,
    final_input: Mapping[str, Any] | None,
    actions: Sequence[Any] = (),
) -> HookAnswer:
    """The PreToolUse answer once the chain reached its terminal (`result` None) or returned early.

    A denial becomes `deny` with its reason; an input changed on the way to the terminal becomes
    `updatedInput` (the whole input, as Claude Code requires); otherwise no decision is taken.
    """
    context = model_messages(actions)
    person = person_messages(actions)
    if result is not None:
        context = _note_texts(result) + context
        if result.denial is not None:
            reason = cap(labelled(result.denial.by, result.denial.reason))
            denial = {"permissionDecision": "deny", "permissionDecisionReason": reason}
            return _envelope("PreToolUse", context=context, person=person, specific=denial)
    specific: dict[str, Any] = {}
    if final_input is not None and dict(final_input) != dict(call.input):
        specific["updatedInput"] = dict(final_input)
    return _envelope("PreToolUse", context=context, person=person, specific=specific)


def _json_kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "null" if value is None else "other"


def _plain(value: Any) -> Any:
    """Frozen mappings and tuples as JSON objects and arrays."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def updated_tool_output(
    recorded: ToolResult | None, result: ToolResult, tool: str
) -> dict[str, Any]:
    """The `updatedToolOutput` fields when a plugin changed what the tool returned, else {}.

    Claude Code needs the replacement shaped like the tool's own output, so one of another JSON
    kind (an object turned into a string, say) is refused: the model then sees the real output.
    """
    if recorded is None or recorded.is_error or result.is_error:
        return {}
    if result.output == recorded.output:
        return {}
    if _json_kind(result.output) != _json_kind(recorded.output):
        _log.warning(
            "changed tool output not sent: Claude Code needs the tool's own shape",
            tool=tool,
            expected=_json_kind(recorded.output),
            got=_json_kind(result.output),
        )
        return {}
    output = _cap_all(_plain(result.output))
    fields: dict[str, Any] = {"updatedToolOutput": output}
    if tool.startswith("mcp__"):
        # Claude Code before 2.1.121 rewrites only MCP tools' output, through this field.
        fields["updatedMCPToolOutput"] = output
    return fields


def post_tool_use_answer(
    event_name: str,
    result: ToolResult,
    actions: Sequence[Any] = (),
    *,
    recorded: ToolResult | None = None,
    tool: str = "",
) -> HookAnswer:
    """PostToolUse / PostToolUseFailure: notes and appended messages go to the model; an output
    a plugin changed (compared with `recorded`, what the tool returned) replaces the tool's."""
    context = _note_texts(result) + model_messages(actions)
    specific = updated_tool_output(recorded, result, tool) if event_name == "PostToolUse" else {}
    return _envelope(
        event_name, context=context, person=person_messages(actions), specific=specific
    )


def prompt_answer(
    submitted: PromptResult | None,
    context: ContextResult | None,
    actions: Sequence[Any] = (),
) -> HookAnswer:
    """UserPromptSubmit: a drop blocks the prompt (reason to the person), blocks become context."""
    person = person_messages(actions)
    if submitted is not None and submitted.drop is not None:
        reason = cap(labelled(submitted.drop.by, submitted.drop.reason))
        return _envelope(
            "UserPromptSubmit", person=person, top={"decision": "block", "reason": reason}
        )
    texts = _block_texts(context) + model_messages(actions)
    return _envelope("UserPromptSubmit", context=texts, person=person)


def command_answer(
    name: str, reply: CommandReply | None, actions: Sequence[Any] = ()
) -> HookAnswer:
    """A plugin command's reply, for the person only: Claude Code shows a block's reason and
    sends nothing to the model (UserPromptSubmit and UserPromptExpansion alike)."""
    if reply is not None and reply.text:
        text = labelled(reply.by, reply.text)
    else:
        text = f"hookchain: /{name} gave no reply"
    person = person_messages(actions)
    return _json({"decision": "block", "reason": cap("\n".join([text, *person]))})


def _block_texts(context: ContextResult | None) -> list[str]:
    if context is None:
        return []
    return [block.text for block in context.blocks if block.text]


def session_start_answer(context: ContextResult | None, actions: Sequence[Any] = ()) -> HookAnswer:
    texts = _block_texts(context) + model_messages(actions)
    return _envelope("SessionStart", context=texts, person=person_messages(actions))


def stop_answer(
    event_name: str, turn: TurnComplete, result: TurnResult | None, actions: Sequence[Any] = ()
) -> HookAnswer:
    """Stop / SubagentStop: a continuation blocks the stop, unless a stop hook is already active.

    Claude Code sets `stop_hook_active` while a turn runs on because of a Stop hook; blocking again
    is how stop hooks loop forever, so the continuation is shown to the person instead.
    """
    person = person_messages(actions)
    continuation = None if result is None else result.continuation
    if continuation is None:
        return _envelope(event_name, person=person)
    reason = labelled(continuation.by, continuation.reason)
    if turn.stop_hook_active:
        note = f"{reason} (not continued: a stop hook already continued this turn)"
        return _envelope(event_name, person=[*person, note])
    return _envelope(event_name, person=person, top={"decision": "block", "reason": cap(reason)})


def classic_answer(result: ClassicResult | None, actions: Sequence[Any] = ()) -> HookAnswer:
    """A `classic.<Name>` result: its raw output, strings capped, plus messages for the person."""
    output: dict[str, Any] = dict(result.output) if result is not None and result.output else {}
    person = person_messages(actions)
    if person:
        existing = output.get("systemMessage")
        lines = [existing, *person] if isinstance(existing, str) and existing else person
        output["systemMessage"] = "\n".join(lines)
    return _json(_cap_all(output))


def skipped_answer(event: str | None, why: str, env: Mapping[str, str]) -> HookAnswer:
    """A call no guard has seen (`why`): skipped, or a tool call blocked when the session asked
    for HOOKCHAIN_UNREACHABLE=closed (the client's own rule for an unreachable host)."""
    if env.get("HOOKCHAIN_UNREACHABLE", "open") == "closed" and event == "PreToolUse":
        closed = "blocking this tool call because HOOKCHAIN_UNREACHABLE=closed"
        return HookAnswer(exit_code=2, stderr=f"hookchain: {why}; {closed}\n")
    return HookAnswer(stderr=f"hookchain: {why}; hook skipped\n")


def too_large_answer(event: str | None, size: int, env: Mapping[str, str]) -> HookAnswer:
    why = f"hook payload too large ({size} bytes; limit {MAX_PAYLOAD_BYTES >> 20} MiB)"
    return skipped_answer(event, why, env)


def payload_error_answer(error: PayloadError) -> HookAnswer:
    """Malformed stdin: a clear line on stderr, exit 0 so Claude Code goes on."""
    return HookAnswer(stderr=f"hookchain: ignored this hook call: {error}\n")
