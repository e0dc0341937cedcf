"""The contract v1 (1.1): events, their results, provenance values and contract versions."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from framework.core.frozen import FrozenMap, freeze
from framework.core.tools import ToolAction, current_harness, describe_tool

CONTRACT_VERSION = "1.1"
"""The contract version this host speaks (and every earlier 1.x: minor versions only add)."""

KNOWN_CONTRACT_VERSIONS: tuple[str, ...] = ("1.0", "1.1")
"""Every contract version the host knows vectors for, oldest first."""

ENGINE_ORIGIN = "engine"
"""`call_next.origin` when the harness itself (the model) started the dispatch."""

PERSON_ORIGIN_KINDS: frozenset[str] = frozenset({"composer", "sdk", "bridge"})
"""Prompt origins that are the person speaking (a notification or a peer is not)."""

FailMode = Literal["open", "closed"]
SessionSource = Literal["startup", "resume", "clear", "compact"]
PromptOriginKind = Literal["composer", "sdk", "bridge", "notification", "peer", "schedule"]
ChunkKind = Literal["text", "thinking", "tool_use", "stop"]


class ContractError(Exception):
    """A plugin or caller broke the host contract; the message says who, where, what to change."""


ReadOnlyMap = Annotated[Mapping[str, Any], AfterValidator(freeze)]
"""A JSON-like mapping made deeply read-only on validation (`FrozenMap`s and tuples inside)."""


class _Value(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with `update` applied; changed mappings and lists are frozen like the rest."""
        if update:
            update = {name: freeze(value) for name, value in update.items()}
        return super().model_copy(update=update, deep=deep)


# -- provenance values: everything a handler adds carries the plugin's name in `by` ----------------


class Note(_Value):
    """A note for the model, appended to a tool result."""

    text: str
    by: str


class Denial(_Value):
    """A refusal of a tool call: the tool does not run and the model reads `reason`."""

    reason: str
    by: str


class Drop(_Value):
    """A prompt that is not sent to the model."""

    reason: str
    by: str


class ContextBlock(_Value):
    """A named block of context that goes to the model with a prompt."""

    name: str
    text: str
    by: str = "harness"


class Continue(_Value):
    """A request to keep the turn going (Claude Code's Stop block) with a reason for the model."""

    reason: str
    by: str


class StreamChunk(_Value):
    """One piece of a streamed model step; a step ends with a `stop` chunk with `stop_reason`."""

    kind: ChunkKind
    text: str = ""
    stop_reason: str | None = None
    data: ReadOnlyMap = Field(default_factory=FrozenMap)


StepStream = AsyncIterator[StreamChunk]
"""The result of `turn.step`: an async iterator (usually a generator) of chunks."""


# -- results -------------------------------------------------------------------------------------


class PromptResult(_Value):
    """The result of `prompt.submit`: the text that goes on, or a drop."""

    text: str
    drop: Drop | None = None

    def dropped(self, reason: str, *, by: str) -> PromptResult:
        return self.model_copy(update={"drop": Drop(reason=reason, by=by)})


class ContextResult(_Value):
    """The result of `prompt.context`: the blocks that go to the model, in order."""

    blocks: tuple[ContextBlock, ...] = ()

    def with_block(self, name: str, text: str, *, by: str) -> ContextResult:
        block = ContextBlock(name=name, text=text, by=by)
        return self.model_copy(update={"blocks": (*self.blocks, block)})


class TurnResult(_Value):
    """The result of `turn.complete`: optionally a request to continue the turn."""

    continuation: Continue | None = None

    def continued(self, reason: str, *, by: str) -> TurnResult:
        return self.model_copy(update={"continuation": Continue(reason=reason, by=by)})


class ToolResult(_Value):
    """The result of `tool.call`: the tool's output or error, a denial, notes and updated input."""

    output: Any = None
    is_error: bool = False
    denial: Denial | None = None
    notes: tuple[Note, ...] = ()
    updated_input: ReadOnlyMap | None = None

    def with_note(self, text: str, *, by: str) -> ToolResult:
        return self.model_copy(update={"notes": (*self.notes, Note(text=text, by=by))})

    @classmethod
    def denied(cls, reason: str, *, by: str) -> ToolResult:
        return cls(is_error=True, output=reason, denial=Denial(reason=reason, by=by))


class CommandReply(_Value):
    """The result of `command.run`: the reply shown to the person."""

    text: str
    by: str | None = None


class ClassicResult(_Value):
    """The result of a `classic.<Name>` event: the raw output for the harness, if any."""

    output: ReadOnlyMap | None = None


# -- events ----------------------------------------------------------------------------------------


class Event(_Value):
    """Base of every event. `session_id` picks the session whose state and engine a handler sees."""

    kind: ClassVar[str] = ""
    result_type: ClassVar[type | None] = None

    session_id: str = "default"
    harness: str = Field(default_factory=lambda: current_harness.get())
    """The harness the event came from (1.1): one of `HARNESSES` (`claude-code`, `gemini`, …)."""

    @property
    def name(self) -> str:
        return self.kind


class SessionStart(Event):
    """A session started (or resumed, cleared, compacted). Result: None."""

    kind: ClassVar[str] = "session.start"

    cwd: str = ""
    source: SessionSource = "startup"
    harness_version: str | None = None
    model: str | None = None


class SessionEnd(Event):
    """A session ended. Result: None. All handlers share one 1.5 s budget."""

    kind: ClassVar[str] = "session.end"

    reason: str = "other"


class PromptSubmit(Event):
    """A prompt is about to reach the model. Result: `PromptResult`."""

    kind: ClassVar[str] = "prompt.submit"
    result_type: ClassVar[type | None] = PromptResult

    text: str
    origin_kind: PromptOriginKind = "composer"


class PromptContext(Event):
    """The context blocks going to the model with a prompt. Result: `ContextResult`."""

    kind: ClassVar[str] = "prompt.context"
    result_type: ClassVar[type | None] = ContextResult

    blocks: tuple[ContextBlock, ...] = ()


class TurnStart(Event):
    """A turn of the main loop (agent_id None) or of a subagent started. Result: None."""

    kind: ClassVar[str] = "turn.start"

    turn_id: str
    agent_id: str | None = None


class TurnStep(Event):
    """One model step; the result is a `StepStream` of chunks ending in a stop chunk."""

    kind: ClassVar[str] = "turn.step"

    turn_id: str
    agent_id: str | None = None
    step_index: int = 0
    model: str | None = None


class TurnComplete(Event):
    """A turn ended. Result: `TurnResult` (set `continuation` to keep it going)."""

    kind: ClassVar[str] = "turn.complete"
    result_type: ClassVar[type | None] = TurnResult

    turn_id: str
    agent_id: str | None = None
    reason: str = "end_turn"
    stop_hook_active: bool = False
    last_message: str | None = None


class ToolCall(Event):
    """The model calls a tool. Result: `ToolResult`."""

    kind: ClassVar[str] = "tool.call"
    result_type: ClassVar[type | None] = ToolResult

    tool_use_id: str
    tool: str
    input: ReadOnlyMap = Field(default_factory=FrozenMap)
    agent_id: str | None = None
    permission_mode: str | None = None
    """The harness's permission mode for this call, as it sent it (Claude Code: `default`,
    `acceptEdits`, `plan`, `auto`, `dontAsk`, `bypassPermissions`); None when it did not say.
    Per call: the person can switch modes within a session."""

    @property
    def action(self) -> ToolAction:
        """What the call does whatever the harness names its tools (1.1): shell command, files
        written and read. Computed from `harness`, `tool` and `input`, so it follows a changed
        input."""
        return describe_tool(self.harness, self.tool, self.input)


class CommandRun(Event):
    """The person ran a slash command. Result: `CommandReply`."""

    kind: ClassVar[str] = "command.run"
    result_type: ClassVar[type | None] = CommandReply

    command: str
    arguments: str = ""


class Classic(Event):
    """A raw harness hook payload with no modern equivalent (`classic.<Name>`)."""

    kind: ClassVar[str] = "classic"
    result_type: ClassVar[type | None] = ClassicResult

    hook_name: str
    payload: ReadOnlyMap = Field(default_factory=FrozenMap)

    @property
    def name(self) -> str:
        return f"classic.{self.hook_name}"


EVENT_TYPES: Mapping[str, type[Event]] = {
    cls.kind: cls
    for cls in (
        SessionStart,
        SessionEnd,
        PromptSubmit,
        PromptContext,
        TurnStart,
        TurnStep,
        TurnComplete,
        ToolCall,
        CommandRun,
        Classic,
    )
}
"""Event kind → event model. `classic.<Name>` events are all `Classic`."""


def event_type(name: str) -> type[Event]:
    """The model of an event name (`tool.call`, `classic.Stop`, …); a clear error otherwise."""
    if name.startswith("classic."):
        return Classic
    try:
        return EVENT_TYPES[name]
    except KeyError:
        known = ", ".join(sorted(EVENT_TYPES))
        raise ContractError(
            f"unknown event {name!r}; known events: {known}, classic.<Name>"
        ) from None


def build_event(name: str, payload: Mapping[str, Any]) -> Event:
    """Build an event from its name and a JSON-like payload (`hookchain try`, adapters)."""
    cls = event_type(name)
    if cls is Classic and "hook_name" not in payload:
        payload = {"hook_name": name.removeprefix("classic."), "payload": dict(payload)}
    return cls.model_validate(payload)


def is_valid_result(event: Event, result: object) -> bool:
    """Whether `result` is of the event's result type (a stream for `turn.step`, else None)."""
    expected = event.result_type
    if expected is not None:
        return isinstance(result, expected)
    if isinstance(event, TurnStep):
        return hasattr(result, "__anext__")
    return result is None


def neutral_result(event: Event, output: Any = "") -> Any:
    """What the harness does when nothing intervenes: the dry-run terminal of `hookchain try`."""
    kind = type(event)
    shared = _SHARED_NEUTRAL.get(kind, _NOT_SHARED)
    if shared is not _NOT_SHARED:
        return shared
    result = _neutral_of(event, output)
    shareable = result is None or result is _NEUTRAL_TURN or result is _NEUTRAL_REPLY
    if shareable or result is _NEUTRAL_CLASSIC:
        # Which branch answers depends on the event's class alone, so a class answered with a
        # shared result (or none) is always answered so, without the failing isinstance checks
        # of pydantic classes before its branch (a tenth of a dispatch without handlers).
        _SHARED_NEUTRAL[kind] = result
    return result


_NOT_SHARED = object()
_SHARED_NEUTRAL: dict[type[Event], Any] = {}
"""Event classes whose neutral result is a shared one (or None), learnt at their first call."""


def _neutral_of(event: Event, output: Any) -> Any:
    # Results are frozen, so the ones that carry nothing of the event are made once and shared.
    if isinstance(event, ToolCall):
        return ToolResult(output=output)
    if isinstance(event, PromptSubmit):
        return PromptResult(text=event.text)
    if isinstance(event, PromptContext):
        return ContextResult(blocks=event.blocks)
    if isinstance(event, TurnComplete):
        return _NEUTRAL_TURN
    if isinstance(event, CommandRun):
        return _NEUTRAL_REPLY
    if isinstance(event, Classic):
        return _NEUTRAL_CLASSIC
    if isinstance(event, TurnStep):
        return single_stop_stream("end_turn")
    return None


_NEUTRAL_TURN = TurnResult()
_NEUTRAL_REPLY = CommandReply(text="")
_NEUTRAL_CLASSIC = ClassicResult()


async def single_stop_stream(stop_reason: str) -> StepStream:
    """A step stream of one stop chunk (what a dry-run model step returns)."""
    yield StreamChunk(kind="stop", stop_reason=stop_reason)


def refusal(event: Event, reason: str, *, by: str) -> Any:
    """The event's refusal (a denial, a drop), or None when the event cannot be refused."""
    if isinstance(event, ToolCall):
        return ToolResult.denied(reason, by=by)
    if isinstance(event, PromptSubmit):
        return PromptResult(text=event.text, drop=Drop(reason=reason, by=by))
    return None


REFUSABLE_EVENTS: frozenset[str] = frozenset({ToolCall.kind, PromptSubmit.kind})
"""Events a `fail="closed"` registration may guard."""
