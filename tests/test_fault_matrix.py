"""The fault matrix: every event × fault kind × position × fail mode, through the public API.

One faulty plugin sits first, in the middle or last among three healthy pass-through plugins.
Each cell asserts how often the terminal ran, what the caller got (the terminal's own object, the
faulty plugin's refusal, or the exception/cancellation itself), how often each healthy handler ran,
and what `host.failures` and the log say. A change to the chain that loses or doubles a terminal,
swaps a result or hides a failure breaks a cell here.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel
import pytest
import structlog
from hostkit import make_plugin

from framework import (
    Classic,
    ClassicResult,
    CommandReply,
    CommandRun,
    ContextBlock,
    ContextResult,
    Event,
    Host,
    HostSettings,
    PromptContext,
    PromptResult,
    PromptSubmit,
    SessionEnd,
    SessionStart,
    StreamChunk,
    ToolCall,
    ToolResult,
    TurnComplete,
    TurnResult,
    TurnStart,
    TurnStep,
)

pytestmark = pytest.mark.anyio

FAULTY = "faulty"
HEALTHY = ("healthy-a", "healthy-b", "healthy-c")
HEALTHY_ORDERS = (10, 20, 30)
POSITIONS = {"first": 5, "middle": 25, "last": 35}
HANG_BUDGET = 0.05


class PluginBaseError(BaseException):
    """A BaseException subclass of a plugin's own (not an Exception)."""


async def _stream(label: str) -> AsyncIterator[StreamChunk]:
    yield StreamChunk(kind="text", text=label)
    yield StreamChunk(kind="stop", stop_reason="end_turn")


def _event_cases() -> dict[str, tuple[Callable[[], Event], Callable[[], Any]]]:
    """Event name → (a fresh event, a fresh result of its type that only the terminal makes)."""
    return {
        "session.start": (lambda: SessionStart(session_id="m"), lambda: None),
        "session.end": (lambda: SessionEnd(session_id="m"), lambda: None),
        "prompt.submit": (
            lambda: PromptSubmit(session_id="m", text="hi"),
            lambda: PromptResult(text="hi from the harness"),
        ),
        "prompt.context": (
            lambda: PromptContext(session_id="m"),
            lambda: ContextResult(blocks=(ContextBlock(name="h", text="harness"),)),
        ),
        "turn.start": (lambda: TurnStart(session_id="m", turn_id="t"), lambda: None),
        "turn.step": (lambda: TurnStep(session_id="m", turn_id="t"), lambda: _stream("harness")),
        "turn.complete": (
            lambda: TurnComplete(session_id="m", turn_id="t"),
            lambda: TurnResult(),
        ),
        "tool.call": (
            lambda: ToolCall(
                session_id="m", tool_use_id="u", tool="Write", input={"file_path": "/w/a"}
            ),
            lambda: ToolResult(output="written"),
        ),
        "command.run": (
            lambda: CommandRun(session_id="m", command="x"),
            lambda: CommandReply(text="harness reply"),
        ),
        "classic.Notification": (
            lambda: Classic(session_id="m", hook_name="Notification"),
            lambda: ClassicResult(output={"harness": True}),
        ),
    }


EVENTS = _event_cases()
REFUSABLE = ("tool.call", "prompt.submit")


def _own_result(name: str) -> Any:
    """A valid result of the event's type that the faulty plugin makes up itself."""
    return {
        "prompt.submit": PromptResult(text="pretend"),
        "prompt.context": ContextResult(),
        "turn.step": _stream("pretend"),
        "turn.complete": TurnResult(),
        "tool.call": ToolResult(output="pretend ok"),
        "command.run": CommandReply(text="pretend"),
        "classic.Notification": ClassicResult(),
    }.get(name)


# -- fault kinds ---------------------------------------------------------------------------------
#
# Each kind is a handler factory and what the cell expects. `before` kinds fail before the handler
# awaited call_next, `after` kinds after. `escapes` kinds pass their exception on to the caller.


@dataclass(frozen=True)
class Kind:
    name: str
    before: bool
    failures: int = 1  # counted for the faulty plugin
    escapes: type[BaseException] | None = None  # the caller gets this exception object
    caller_cancels: bool = False  # the caller cancels the dispatch
    cancel_in_terminal: bool = False  # ... while the terminal runs (else: in the faulty handler)
    hang: bool = False


def _raise(error: BaseException) -> None:
    raise error


async def _cancelled_elsewhere() -> None:
    """Await a task that another party cancelled: a CancelledError that nobody asked of us."""
    task = asyncio.get_running_loop().create_task(asyncio.sleep(10))
    await asyncio.sleep(0)
    task.cancel()
    await task


def _make_fault(kind: Kind, name: str, raised: list[BaseException]) -> Any:
    """The faulty handler for `kind` on event `name`; `raised` keeps what it raised."""

    def throw(error: BaseException) -> None:
        raised.append(error)
        raise error

    own = _own_result(name)
    fault = kind.name

    async def handler(engine: Any, event: Any, call_next: Any) -> Any:
        if fault == "raise_before":
            throw(RuntimeError("boom"))
        if fault == "wrong_before":
            return "not a result"
        if fault == "hang_before":
            await anyio.sleep(10)
        if fault in ("spurious_cancel_before", "cancelled_task_before"):
            if fault == "spurious_cancel_before":
                throw(asyncio.CancelledError())
            await _cancelled_elsewhere()
        if fault == "generator_exit_before":
            throw(GeneratorExit())
        if fault == "base_exception_before":
            throw(PluginBaseError())
        if fault == "system_exit_before":
            throw(SystemExit(3))
        if fault == "keyboard_interrupt_before":
            throw(KeyboardInterrupt())
        if fault == "fallback_raises":
            throw(RuntimeError("handler"))
        if fault.startswith("swallow_before"):
            engine_started.set()
            try:
                await anyio.sleep(10)
            except asyncio.CancelledError:
                if fault == "swallow_before_return":
                    return own
                # swallow_before_continue: carries on as if nothing happened
        if fault.startswith("swallow_after"):
            try:
                return await call_next(event)
            except asyncio.CancelledError:
                if fault == "swallow_after_raise":
                    raise RuntimeError("cleanup failed") from None
                return own

        result = await call_next(event)

        if fault == "twice":
            await call_next(event)
        if fault == "raise_after":
            throw(RuntimeError("late"))
        if fault == "wrong_after":
            return "not a result"
        if fault == "hang_after":
            await anyio.sleep(10)
        if fault == "spurious_cancel_after":
            throw(asyncio.CancelledError())
        if fault == "cancelled_task_after":
            await _cancelled_elsewhere()
        if fault == "generator_exit_after":
            throw(GeneratorExit())
        if fault == "base_exception_after":
            throw(PluginBaseError())
        if fault == "system_exit_after":
            throw(SystemExit(3))
        if fault == "keyboard_interrupt_after":
            throw(KeyboardInterrupt())
        return result

    engine_started = anyio.Event()
    handler.started = engine_started  # type: ignore[attr-defined]
    return handler


KINDS = [
    Kind("raise_before", before=True),
    Kind("raise_after", before=False),
    Kind("wrong_before", before=True),
    Kind("wrong_after", before=False),
    Kind("twice", before=False),
    Kind("hang_before", before=True, hang=True),
    Kind("hang_after", before=False, hang=True),
    Kind("spurious_cancel_before", before=True),
    Kind("spurious_cancel_after", before=False),
    Kind("cancelled_task_before", before=True),
    Kind("cancelled_task_after", before=False),
    Kind("generator_exit_before", before=True),
    Kind("generator_exit_after", before=False),
    Kind("base_exception_before", before=True),
    Kind("base_exception_after", before=False),
    Kind("system_exit_before", before=True, escapes=SystemExit),
    Kind("system_exit_after", before=False, escapes=SystemExit),
    Kind("keyboard_interrupt_before", before=True, escapes=KeyboardInterrupt),
    Kind("keyboard_interrupt_after", before=False, escapes=KeyboardInterrupt),
    Kind("fallback_raises", before=True, failures=2),
    # The caller cancels: the cancellation always reaches the caller.
    Kind("caller_cancel", before=False, failures=0, caller_cancels=True, cancel_in_terminal=True),
    Kind("swallow_after_return", before=False, caller_cancels=True, cancel_in_terminal=True),
    Kind("swallow_after_raise", before=False, caller_cancels=True, cancel_in_terminal=True),
    Kind("swallow_before_return", before=True, caller_cancels=True),
    # Caught in the handler's own code, then call_next as if nothing happened: the chain never
    # sees the cancellation (so it cannot count it); the caller's scope cancels downstream's
    # next await again and the cancellation still reaches the caller (docs/contract.md).
    Kind("swallow_before_continue", before=True, failures=0, caller_cancels=True),
]


def _cells() -> list[Any]:
    cells = []
    for event_name in EVENTS:
        modes = ("open", "closed") if event_name in REFUSABLE else ("open",)
        for mode in modes:
            for kind in KINDS:
                for position in POSITIONS:
                    cells.append(
                        pytest.param(
                            event_name,
                            kind,
                            position,
                            mode,
                            id=f"{event_name}-{kind.name}-{position}-{mode}",
                        )
                    )
    return cells


CELLS = _cells()


def _healthy(name: str, order: int, runs: dict[str, int]) -> Any:
    def register(on: Any) -> None:
        for event_name in EVENTS:

            async def passthrough(engine: Any, event: Any, call_next: Any) -> Any:
                runs[name] += 1
                return await call_next(event)

            on(event_name, passthrough, order=order)

    return make_plugin(name, register)


def _faulty(event_name: str, order: int, mode: str, handler: Any, kind: Kind) -> Any:
    def register(on: Any) -> None:
        registration = on(
            event_name,
            handler,
            order=order,
            fail=mode,
            budget=HANG_BUDGET if kind.hang else None,
        )
        if kind.name == "fallback_raises":

            async def fallback(engine: Any, event: Any, error: Any, call_next: Any) -> Any:
                raise ValueError("fallback")

            registration.catch(fallback)

    return make_plugin(FAULTY, register)


@pytest.mark.parametrize(("event_name", "kind", "position", "mode"), CELLS)
async def test_cell(event_name: str, kind: Kind, position: str, mode: str) -> None:
    make_event, make_result = EVENTS[event_name]
    runs = dict.fromkeys(HEALTHY, 0)
    raised: list[BaseException] = []
    handler = _make_fault(kind, event_name, raised)
    terminal_runs = 0
    terminal_started = anyio.Event()
    produced: list[Any] = []

    async def terminal(event: Any) -> Any:
        nonlocal terminal_runs
        terminal_runs += 1
        if kind.cancel_in_terminal:
            terminal_started.set()
            await anyio.sleep(10)
        elif kind.caller_cancels:
            await anyio.lowlevel.checkpoint()  # a harness's terminal awaits something
        result = make_result()
        produced.append(result)
        return result

    plugins = [
        _healthy(name, order, runs) for name, order in zip(HEALTHY, HEALTHY_ORDERS, strict=True)
    ]
    plugins.append(_faulty(event_name, POSITIONS[position], mode, handler, kind))
    settings = HostSettings(store="memory://", handler_budget=2.0)
    got: list[Any] = []
    caught: list[BaseException] = []
    cancelled_caught: list[bool] = []
    with structlog.testing.capture_logs() as logs:
        async with Host(plugins=plugins, entry_points=False, settings=settings, config={}) as host:
            with anyio.fail_after(5):
                if kind.caller_cancels:
                    await _run_cancelled(
                        host,
                        make_event(),
                        terminal,
                        terminal_started if kind.cancel_in_terminal else handler.started,
                        got,
                        cancelled_caught,
                    )
                else:
                    try:
                        got.append(await host.dispatch(make_event(), terminal))
                    except BaseException as error:
                        caught.append(error)
            failures = dict(host.failures)

    refused = mode == "closed" and kind.before and kind.escapes is None and not kind.caller_cancels
    downstream_runs = 0 if (kind.before and (kind.escapes or refused)) else 1
    if kind.name == "swallow_before_return":
        downstream_runs = 0
    assert terminal_runs == downstream_runs, "terminal lost or run twice"

    # Healthy handlers outside the faulty one run once; inside it as often as the terminal.
    for name, order in zip(HEALTHY, HEALTHY_ORDERS, strict=True):
        expected = 1 if order < POSITIONS[position] else downstream_runs
        assert runs[name] == expected, f"{name} ran {runs[name]} times"

    if kind.caller_cancels:
        assert cancelled_caught == [True], "the caller's cancellation did not reach the caller"
        assert got == []
    elif kind.escapes is not None:
        assert got == []
        assert len(caught) == 1 and caught[0] is raised[0], "not the plugin's own exception object"
        assert isinstance(caught[0], kind.escapes)
    else:
        assert caught == [], f"the caller got {caught!r}"
        result = got[0].result
        if refused:
            expected_by = FAULTY
            if event_name == "tool.call":
                assert isinstance(result, ToolResult) and result.denial is not None
                assert result.denial.by == expected_by
            else:
                assert isinstance(result, PromptResult) and result.drop is not None
                assert result.drop.by == expected_by
        else:
            assert len(produced) == 1 and result is produced[0], "not the terminal's own result"

    counted = failures.get((FAULTY, event_name), 0)
    assert counted == kind.failures, f"host.failures counted {counted}"
    assert not any(plugin in HEALTHY for plugin, _ in failures), "a healthy plugin was blamed"
    warnings = [entry for entry in logs if entry["log_level"] == "warning"]
    named = [entry for entry in warnings if entry.get("plugin") == FAULTY]
    assert len(named) == kind.failures, f"logged {len(named)} times: {warnings!r}"
    assert not any(entry.get("plugin") in HEALTHY for entry in warnings)


async def _run_cancelled(
    host: Host,
    event: Event,
    terminal: Any,
    started: anyio.Event,
    got: list[Any],
    cancelled_caught: list[bool],
) -> None:
    """Dispatch in a task of its own and cancel it, as a caller does, once `started` is set."""
    scope = anyio.CancelScope()

    async def caller() -> None:
        with scope:
            got.append(await host.dispatch(event, terminal))
        cancelled_caught.append(scope.cancelled_caught)

    async with anyio.create_task_group() as group:
        group.start_soon(caller)
        await started.wait()
        scope.cancel()


def test_matrix_size() -> None:
    """The matrix keeps every event, kind, position and mode (a shrunk matrix hides regressions)."""
    assert len(EVENTS) == 10 and len(KINDS) == 25 and len(POSITIONS) == 3
    assert len(CELLS) == 10 * 25 * 3 + 2 * 25 * 3
