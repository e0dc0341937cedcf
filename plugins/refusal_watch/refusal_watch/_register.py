"""Wires refusal-watch's events: each handler calls down the chain and hands over to `Watch`."""

from __future__ import annotations

from typing import Any

from framework import (
    CallNext,
    ContextResult,
    Engine,
    PromptContext,
    SessionEnd,
    SessionStart,
    StepStream,
    ToolCall,
    ToolResult,
    TurnComplete,
    TurnResult,
    TurnStep,
    hookimpl,
)

from ._options import Options
from ._runtime import Watch
from ._taskstop import TASK_STOP_TOOL


@hookimpl
def register(on: Any, options: Options | None) -> None:
    """Attach refusal-watch's handlers; a fresh register starts with fresh state."""
    watch = Watch(options if options is not None else Options())

    async def on_step(engine: Engine, event: TurnStep, call_next: CallNext) -> StepStream:
        stream: StepStream = await call_next(event)
        return watch.watch_step(engine, event, stream)

    async def on_complete(engine: Engine, event: TurnComplete, call_next: CallNext) -> TurnResult:
        book = watch.book(event.session_id)  # taken before downstream: a session may end there
        result: TurnResult = await call_next(event)
        report = watch.turn_completed(engine, event, book)
        if report is not None:
            await report
        return result

    async def on_task_stop(engine: Engine, event: ToolCall, call_next: CallNext) -> ToolResult:
        entry = await watch.task_stop_entry(engine, event)  # decided before the tool runs
        result: ToolResult = await call_next(event)
        if entry is not None:
            await watch.task_stopped(engine, event, entry, result)
        return result

    async def on_context(
        engine: Engine, event: PromptContext, call_next: CallNext
    ) -> ContextResult:
        result: ContextResult = await call_next(event)
        return watch.context(engine, result)

    async def on_session_start(engine: Engine, event: SessionStart, call_next: CallNext) -> None:
        await call_next(event)
        await watch.session_started(engine, event)

    async def on_session_end(engine: Engine, event: SessionEnd, call_next: CallNext) -> None:
        watch.session_ended(event.session_id)
        await call_next(event)

    waiting_budget = watch.waiting_budget
    on("turn.step", on_step)
    on("turn.complete", on_complete, budget=waiting_budget)
    on("tool.call", on_task_stop, match={"tool": TASK_STOP_TOOL}, budget=waiting_budget)
    on("prompt.context", on_context)
    on("session.start", on_session_start)
    on("session.end", on_session_end)
