"""Wires the observer's events: each handler calls down the chain and hands over to `Observer`."""

from __future__ import annotations

from collections.abc import Callable

from framework import (
    ENGINE_ORIGIN,
    PERSON_ORIGIN_KINDS,
    CallNext,
    Engine,
    PromptResult,
    PromptSubmit,
    Registration,
    SessionEnd,
    SessionStart,
    ToolCall,
    ToolResult,
    TurnComplete,
    TurnResult,
    hookimpl,
)

from observer._options import Options
from observer._runtime import Observer

OUTERMOST = -1000
"""The observer's `tool.call` order: outside every guard (write-guard sits at -100), so it sees
each call the model made, the denied ones included; it only counts and never changes a call."""


@hookimpl
def register(on: Callable[..., Registration], options: Options) -> None:
    """Attach the observer's handlers."""
    observer = Observer(options)

    async def session_start(engine: Engine, event: SessionStart, call_next: CallNext) -> None:
        await call_next(event)
        await observer.session_started(engine, event)

    async def prompt_submit(
        engine: Engine, event: PromptSubmit, call_next: CallNext
    ) -> PromptResult:
        result: PromptResult = await call_next(event)
        if result.drop is None:
            await observer.prompt_submitted(engine, event)
        return result

    async def tool_call(engine: Engine, event: ToolCall, call_next: CallNext) -> ToolResult:
        result: ToolResult = await call_next(event)
        if call_next.origin == ENGINE_ORIGIN:  # calls a plugin dispatched are not the model's
            pending = observer.tool_called(engine, event)
            if pending is not None:
                await pending
        return result

    async def turn_complete(engine: Engine, event: TurnComplete, call_next: CallNext) -> TurnResult:
        result: TurnResult = await call_next(event)
        if result.continuation is not None:  # the turn goes on: its episode comes later
            return result
        return await observer.turn_completed(engine, event, result)

    async def session_end(engine: Engine, event: SessionEnd, call_next: CallNext) -> None:
        await observer.session_ended(engine)
        await call_next(event)

    on("session.start", session_start)
    # The filters keep the handlers from being entered for events they would only pass on.
    on("prompt.submit", prompt_submit, match={"origin_kind": PERSON_ORIGIN_KINDS})
    on("tool.call", tool_call, order=OUTERMOST)
    on("turn.complete", turn_complete, match={"agent_id": None})
    on("session.end", session_end)
