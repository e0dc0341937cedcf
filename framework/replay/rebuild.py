"""Rebuilds read transcript streams as contract events: turns, steps, tool calls, subagents."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any, Literal

from framework.core.contract import (
    Denial,
    Event,
    PromptOriginKind,
    PromptSubmit,
    SessionEnd,
    SessionStart,
    StreamChunk,
    ToolCall,
    ToolResult,
    TurnComplete,
    TurnStart,
    TurnStep,
)
from framework.core.frozen import freeze
from framework.core.turns import agent_turn_id, compaction_ends_turn, main_turn_id

Verdict = Literal[
    "ok",
    "failed",
    "invalid",
    "hook_block",
    "user_denied",
    "auto_denied",
    "interrupted",
    "unanswered",
]

RECORDED_BY_PREFIX = "claude-code:"
"""`by` of denials and Stop-hook continuations that Claude Code itself recorded (not a plugin)."""

SUBAGENT_TOOLS = frozenset({"Task", "Agent"})
SIDE_CHANNEL_AGENT_PREFIXES = ("acompact", "aprompt_suggestion")
"""Agents that summarise or suggest on the side; no hook fires for them, so no replay either."""

_DENIALS: tuple[tuple[re.Pattern[str], Verdict, str], ...] = (
    (re.compile(r"^\w+:[^\s]* hook error: "), "hook_block", "hook"),
    (
        re.compile(r"^The user doesn't want to (proceed with this tool use|take this action)"),
        "user_denied",
        "user",
    ),
    (
        re.compile(r"^(This command requires approval|Claude requested permissions to )"),
        "auto_denied",
        "permissions",
    ),
    (re.compile(r"^Permission to use \S+ has been auto-denied"), "auto_denied", "permissions"),
)
_INTERRUPTED = "[Request interrupted by user"
_STOP_FEEDBACK = re.compile(r"^(?:Subagent)?Stop hook feedback:\n?")
_NOT_PROMPT_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "Caveat: The messages below",
    "<user-memory-input>",
)
_WRAPPER_BLOCK = re.compile(r"^\s*<(ide_opened_file|ide_selection|system-reminder)>")
_NOTIFICATION_PREFIX = "<task-notification>"
REFUSAL_MARKERS = (
    "violate our Usage Policy",
    "unable to respond to this request",
    "safeguards flagged this message",
)
"""Phrases of the texts Claude Code shows (and records) when the service refused a request; 2.1.197
words it by the refusal's category (a general one, "… for a cybersecurity topic", …)."""


@dataclass(frozen=True, slots=True)
class RecordedResult:
    """What Claude Code recorded for one tool call, classified by its text."""

    verdict: Verdict
    content: str = ""
    structured: Any = None
    is_error: bool = False
    denied_by: str | None = None

    def to_tool_result(self) -> ToolResult:
        """What the harness returned: the structured output if the tool ran, else the text."""
        if self.denied_by is not None:
            return ToolResult(
                output=self.content,
                is_error=True,
                denial=Denial(reason=self.content, by=RECORDED_BY_PREFIX + self.denied_by),
            )
        if self.verdict == "unanswered":
            return ToolResult(output=None)
        if not self.is_error and isinstance(self.structured, Mapping):
            return ToolResult(output=dict(self.structured))
        return ToolResult(output=self.content, is_error=self.is_error)


UNANSWERED = RecordedResult(verdict="unanswered")


@dataclass(frozen=True, slots=True)
class Step:
    """One rebuilt event at its recorded time, with what the replay's terminal must return."""

    event: Event
    at_ms: int
    chunks: tuple[StreamChunk, ...] = ()
    recorded: RecordedResult = UNANSWERED
    subagent: tuple[Step, ...] = ()
    continuation: str | None = None


@dataclass(frozen=True, slots=True)
class Session:
    """A rebuilt session: its events in order and where they came from."""

    session_id: str
    path: str
    steps: tuple[Step, ...]
    first_ms: int
    last_ms: int
    merged_ids: tuple[str, ...] = ()

    def walk(self) -> Iterator[Step]:
        """Every step, subagent steps in place after the call that started them."""
        return _walk(self.steps)


def _walk(steps: Iterable[Step]) -> Iterator[Step]:
    for step in steps:
        yield step
        if step.subagent:
            yield from _walk(step.subagent)


@dataclass(slots=True)
class Stream:
    """Records of one conversation, subagent or inline sidechain, in file order."""

    key: str
    path: str
    records: list[dict[str, Any]] = field(default_factory=list)
    claimed: bool = False
    agent_id: str | None = None


@dataclass(slots=True)
class Corpus:
    """Every stream read from the input, the recorded results by tool_use id, and the counts."""

    main: list[Stream] = field(default_factory=list)
    agents: dict[str, Stream] = field(default_factory=dict)
    inline: dict[str, list[tuple[int, Stream]]] = field(default_factory=dict)
    results: dict[str, RecordedResult] = field(default_factory=dict)
    inline_links: dict[str, Stream] = field(default_factory=dict)
    files: int = 0
    skipped: int = 0
    duplicates: int = 0
    side_channels: int = 0


def classify_result(block: Mapping[str, Any], structured: Any = None) -> RecordedResult:
    """Classify a `tool_result` block by its error flag and text (denials, hook blocks, …)."""
    text = text_of(block.get("content"))
    is_error = bool(block.get("is_error"))
    if not is_error:
        return RecordedResult("ok", text, structured, False)
    for pattern, verdict, by in _DENIALS:
        if pattern.match(text):
            return RecordedResult(verdict, text, structured, True, by)
    if text.startswith(_INTERRUPTED):
        return RecordedResult("interrupted", text, structured, True)
    if text.startswith("<tool_use_error>"):
        return RecordedResult("invalid", text, structured, True)
    return RecordedResult("failed", text, structured, True)


# -- phase 2: streams into events -----------------------------------------------------------------


def build_session(corpus: Corpus, stream: Stream) -> Session:
    first = stream.records[0] if stream.records else {}
    # a resumed conversation lives on under the id of its newest records
    session_id = (
        str(stream.records[-1].get("sessionId") or stream.key) if stream.records else stream.key
    )
    builder = _Builder(corpus, session_id, agent_id=None)
    merged = sorted({str(r.get("sessionId")) for r in stream.records if r.get("sessionId")})
    start = SessionStart(
        session_id=session_id,
        cwd=str(first.get("cwd") or ""),
        source="resume" if len(merged) > 1 else "startup",
        harness_version=first.get("version"),
        model=next((m for r in stream.records if (m := _model(r))), None),
    )
    builder.emit(start, stamp_ms(first.get("timestamp")))
    builder.run(stream.records)
    builder.emit(SessionEnd(session_id=session_id, reason="other"), builder.clock)
    return builder.session(stream.path, tuple(m for m in merged if m != session_id))


def build_orphan_agent(corpus: Corpus, stream: Stream) -> Session:
    """A subagent read without its parent is replayed as a session of its own."""
    first = stream.records[0] if stream.records else {}
    session_id = str(first.get("sessionId") or stream.key)
    builder = _Builder(corpus, session_id, agent_id=stream.key)
    start = SessionStart(
        session_id=session_id,
        cwd=str(first.get("cwd") or ""),
        harness_version=first.get("version"),
        model=next((m for r in stream.records if (m := _model(r))), None),
    )
    builder.emit(start, stamp_ms(first.get("timestamp")))
    builder.run(stream.records)
    builder.emit(SessionEnd(session_id=session_id, reason="other"), builder.clock)
    return builder.session(stream.path, ())


class _Builder:
    """Walks one stream's records and emits turn, step, tool and stop events."""

    def __init__(self, corpus: Corpus, session_id: str, agent_id: str | None) -> None:
        self.corpus = corpus
        self.session_id = session_id
        self.agent_id = agent_id
        self.steps: list[Step] = []
        self.clock = 0
        self.first_ms: int | None = None
        self.turns = 0
        self.turn_id: str | None = None
        self.step_index = 0
        self.stop_hook_active = False
        self.last_text: str | None = None
        self.last_stop: str | None = None
        self.pending: list[dict[str, Any]] = []
        self.pending_id: object = None
        self.pending_at = 0
        self.permission_mode: str | None = None
        """The mode Claude Code last recorded (on a person's records, since 1.0.119): the one
        its PreToolUse payloads carried for the calls after it, until the next."""

    def session(self, path: str, merged: tuple[str, ...]) -> Session:
        return Session(
            self.session_id, path, tuple(self.steps), self.first_ms or 0, self.clock, merged
        )

    def emit(self, event: Event, at_ms: int, **extra: Any) -> None:
        self.clock = max(self.clock, at_ms)
        if self.first_ms is None and at_ms:
            self.first_ms = at_ms
        self.steps.append(Step(event=event, at_ms=self.clock, **extra))

    def run(self, records: list[dict[str, Any]]) -> None:
        for record in records:
            at_ms = stamp_ms(record.get("timestamp")) or self.clock
            kind = record.get("type")
            if kind == "assistant":
                self.assistant(record, at_ms)
            elif kind == "user":
                self.user(record, at_ms)
            elif kind == "system" and record.get("subtype") == "compact_boundary":
                self.flush()
                metadata = record.get("compactMetadata")
                if compaction_ends_turn(
                    metadata.get("trigger") if isinstance(metadata, dict) else None
                ):
                    self.complete(at_ms)
                self.emit(SessionStart(session_id=self.session_id, source="compact"), at_ms)
            elif kind == "system" and str(record.get("subtype", "")).startswith("model_refusal"):
                self.refused()
        self.flush()
        self.complete(self.clock)

    def assistant(self, record: dict[str, Any], at_ms: int) -> None:
        message = record.get("message")
        if not isinstance(message, dict):
            message = {}
        message_id = message.get("id") or record.get("requestId") or record.get("uuid")
        if self.pending and message_id != self.pending_id:
            self.flush()
        if self.turn_id is None:
            self.open_turn(at_ms)
        if not self.pending:
            self.pending_at = at_ms
        self.pending_id = message_id
        self.pending.append(record)

    def user(self, record: dict[str, Any], at_ms: int) -> None:
        mode = record.get("permissionMode")
        if type(mode) is str and mode and mode != self.permission_mode:
            self.flush()  # the calls of the steps before this record ran in the mode before it
            self.permission_mode = mode
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(is_result_block(b) for b in content):
            return
        text = text_of(content)
        feedback = _STOP_FEEDBACK.match(text)
        if feedback and self.turn_id is not None:
            self.flush()
            self.complete(at_ms, continuation=text[feedback.end() :].strip() or text)
            return
        if text.startswith(_INTERRUPTED):
            self.flush()
            self.complete(at_ms, reason="cancelled")
            return
        prompt = (
            None
            if record.get("isMeta") or record.get("isCompactSummary")
            else _prompt_text(content)
        )
        if prompt is None or self.agent_id is not None:
            return
        self.flush()
        self.complete(at_ms)
        origin: PromptOriginKind = (
            "notification"
            if prompt.startswith(_NOTIFICATION_PREFIX)
            else ("sdk" if str(record.get("entrypoint") or "").startswith("sdk") else "composer")
        )
        self.emit(PromptSubmit(session_id=self.session_id, text=prompt, origin_kind=origin), at_ms)
        self.open_turn(at_ms)

    def open_turn(self, at_ms: int) -> None:
        self.turns += 1
        self.turn_id = (
            main_turn_id(self.session_id, self.turns)
            if self.agent_id is None
            else agent_turn_id(self.session_id, self.agent_id)
        )
        self.step_index = 0
        self.stop_hook_active = False
        self.last_text = None
        self.last_stop = None
        self.emit(
            TurnStart(session_id=self.session_id, turn_id=self.turn_id, agent_id=self.agent_id),
            at_ms,
        )

    def complete(
        self, at_ms: int, *, reason: str | None = None, continuation: str | None = None
    ) -> None:
        if self.turn_id is None:
            return
        event = TurnComplete(
            session_id=self.session_id,
            turn_id=self.turn_id,
            agent_id=self.agent_id,
            reason=reason or turn_reason(self.last_stop),
            stop_hook_active=self.stop_hook_active,
            last_message=self.last_text,
        )
        self.emit(event, at_ms, continuation=continuation)
        if continuation is None:
            self.turn_id = None
        else:
            self.stop_hook_active = True

    def refused(self) -> None:
        """A `model_refusal*` system record: Claude Code gave up on the turn because the service
        refused it (2.1.197 writes it after its `<synthetic>` error message)."""
        self.flush()
        if self.turn_id is not None:
            self.last_stop = "refusal"

    def flush(self) -> None:
        if not self.pending or self.turn_id is None:
            return
        records, self.pending = self.pending, []
        chunks: list[StreamChunk] = []
        uses: list[tuple[dict[str, Any], Any]] = []
        stop_reason: str | None = None
        error: Any = None
        for record in records:
            message = record["message"]
            stop_reason = message.get("stop_reason") or stop_reason
            if record.get("isApiErrorMessage"):
                error = record.get("error") or "api_error"
            content = message.get("content")
            for block in content if isinstance(content, list) else ():
                if not isinstance(block, dict):
                    continue
                kind = block.get("type")
                if kind == "text":
                    text = str(block.get("text") or "")
                    chunks.append(StreamChunk(kind="text", text=text))
                    if text.strip():
                        self.last_text = text
                elif kind == "thinking":
                    chunks.append(
                        StreamChunk(kind="thinking", text=str(block.get("thinking") or ""))
                    )
                elif kind == "tool_use":
                    # Frozen once: the chunk and the call then share it instead of each
                    # freezing a copy of the whole input.
                    tool_input = freeze(block.get("input"))
                    data = {"id": block.get("id"), "name": block.get("name"), "input": tool_input}
                    chunks.append(StreamChunk(kind="tool_use", data=data))
                    uses.append((block, tool_input))
        if uses and stop_reason is None:
            stop_reason = "tool_use"
        if error is not None:
            texts = [chunk.text for chunk in chunks if chunk.kind == "text"]
            reason = error_reason(error, stop_reason=stop_reason, text="\n".join(texts))
            if reason == "refusal" and self.last_stop == "refusal":
                # Claude Code's own message about the refusal its model step just stopped with
                # (1.x/2.0 transcripts): no step of the model, and not a second refusal.
                return
            self.last_stop = reason
            if reason == "refusal":
                # The refusal is known only from this message (2.1.x writes no refused model
                # step): its step stops as a live StopFailure's does.
                stop_reason = reason
        else:
            self.last_stop = stop_reason
        data = {"error": error} if error is not None else {}
        chunks.append(
            _stop_chunk(stop_reason)
            if error is None and (stop_reason is None or type(stop_reason) is str)
            else StreamChunk(kind="stop", stop_reason=stop_reason, data=data)
        )
        step = TurnStep(
            session_id=self.session_id,
            turn_id=self.turn_id,
            agent_id=self.agent_id,
            step_index=self.step_index,
            model=_model(records[0]),
        )
        self.step_index += 1
        self.emit(step, self.pending_at, chunks=tuple(chunks))
        if uses:
            at_ms = stamp_ms(records[-1].get("timestamp")) or self.clock
            for block, tool_input in uses:
                self.tool_call(block, tool_input, at_ms)

    def tool_call(self, block: dict[str, Any], tool_input: Any, at_ms: int) -> None:
        tool_use_id = str(block.get("id"))
        call = ToolCall(
            session_id=self.session_id,
            tool_use_id=tool_use_id,
            tool=str(block.get("name")),
            input=tool_input if isinstance(tool_input, dict) else {},
            agent_id=self.agent_id,
            permission_mode=self.permission_mode,
        )
        recorded = self.corpus.results.get(tool_use_id, UNANSWERED)
        subagent: tuple[Step, ...] = ()
        child = self._child_stream(call.tool, tool_use_id, recorded)
        if child is not None:
            child.claimed = True
            nested = _Builder(self.corpus, self.session_id, agent_id=child.agent_id)
            nested.clock = at_ms
            nested.permission_mode = self.permission_mode  # a subagent runs in its parent's mode
            nested.run(child.records)
            subagent = tuple(nested.steps)
        self.emit(call, at_ms, recorded=recorded, subagent=subagent)

    def _child_stream(self, tool: str, tool_use_id: str, recorded: RecordedResult) -> Stream | None:
        if tool not in SUBAGENT_TOOLS:
            return None
        structured = recorded.structured
        if isinstance(structured, Mapping):
            stream = self.corpus.agents.get(str(structured.get("agentId")))
            if stream is not None and not stream.claimed:
                return stream
        return self.corpus.inline_links.get(tool_use_id)


@lru_cache(maxsize=64)
def _stop_chunk(stop_reason: str | None) -> StreamChunk:
    """The stop chunk of a step that stopped without an error: a frozen value, one per reason,
    shared by every step that stopped so (most steps), instead of one validated per step."""
    return StreamChunk(kind="stop", stop_reason=stop_reason, data={})


# -- small helpers --------------------------------------------------------------------------------


def is_result_block(block: object) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_result"


def content_blocks(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text") or "")
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def _prompt_text(content: Any) -> str | None:
    """The person's words in a user record, or None when the record is not a typed prompt."""
    if isinstance(content, str):
        parts = [content]
    elif isinstance(content, list):
        if not all(isinstance(b, dict) and b.get("type") in ("text", "image") for b in content):
            return None
        parts = [str(b.get("text") or "") for b in content if b.get("type") == "text"]
        if not parts and content:
            return ""
    else:
        return None
    kept = [p for p in parts if not _WRAPPER_BLOCK.match(p)]
    text = "\n".join(kept).strip()
    if not kept or text.startswith(_NOT_PROMPT_PREFIXES) or text.startswith(_INTERRUPTED):
        return None
    return text


def prompt_key(record: Mapping[str, Any]) -> str:
    message = record.get("message")
    return normalised_text(text_of(message.get("content") if isinstance(message, dict) else None))


def normalised_text(text: str) -> str:
    return " ".join(text.split())


def _model(record: Mapping[str, Any]) -> str | None:
    message = record.get("message")
    model = message.get("model") if isinstance(message, dict) else None
    return model if isinstance(model, str) and model != "<synthetic>" else None


def turn_reason(stop_reason: str | None) -> str:
    """A turn's reason from its last model stop reason: a step that stopped for tools is not the
    end of a turn, so when a turn nonetheless ends there (or the reason is unknown) it ended."""
    if stop_reason in (None, "tool_use", "end_turn"):
        return "end_turn"
    return stop_reason


def is_refusal_text(text: object) -> bool:
    """Whether `text` is Claude Code's message for a request the service refused."""
    return isinstance(text, str) and any(marker in text for marker in REFUSAL_MARKERS)


def error_reason(error: object, *, stop_reason: object = None, text: object = None) -> str:
    """The reason of a turn that ended in an API error: a transcript's `isApiErrorMessage` record
    or a live StopFailure (`error` = its kind). Claude Code reports a refusal as the kind
    `invalid_request` with its Usage Policy text, so the text (or the recorded stop reason)
    decides; an output cut at the token limit is `max_tokens`, any other error `api_error`."""
    if stop_reason == "refusal" or is_refusal_text(text):
        return "refusal"
    if error == "max_output_tokens":
        return "max_tokens"
    return "api_error"


def stamp_ms(stamp: object) -> int:
    """A record's ISO timestamp as milliseconds since the epoch; 0 when missing or unreadable."""
    if not isinstance(stamp, str):
        return 0
    try:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return 0
