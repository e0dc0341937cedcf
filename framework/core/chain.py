"""The chain: `call_next`, one coroutine per level, fail-open recovery and the audit of changes."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.lowlevel
from pydantic import BaseModel

from framework.core.contract import (
    CommandReply,
    ContextResult,
    ContractError,
    Event,
    PromptResult,
    ToolResult,
    TurnResult,
    refusal,
)
from framework.core.dispatch import Action, current_dispatch
from framework.core.registration import BudgetExceeded, Registration

if TYPE_CHECKING:
    from framework.core.engine import Engine

Terminal = Callable[[Any], Awaitable[Any]]
Run = tuple[tuple[Registration, "Engine"], ...]
"""A chain as one session runs it: each registration with the engine its handler is given,
closed by END_OF_CHAIN (whose engine, `NO_ENGINE`, is never handed to anyone)."""


async def _no_handler(engine: Any, event: Any, call_next: Any) -> Any:
    raise AssertionError("the end-of-chain marker is never called")


END_OF_CHAIN = Registration(
    plugin="",
    event="",
    handler=_no_handler,
    match=None,
    match_spec=None,
    order=0,
    fail="open",
    budget=None,
    sequence=-1,
)
"""Closes every chain the host runs, so finding the next handler needs no length check."""

NO_ENGINE: Engine = None  # type: ignore[assignment]
"""END_OF_CHAIN's place for an engine in a `Run`: the terminal is given none."""


# Frame states. _OVERRUN: the watchdog found the handler stuck before it called call_next.
_IDLE, _RUNNING, _DONE, _FAILED, _OVERRUN = 0, 1, 2, 3, 4
RUNNING = _RUNNING
"""A frame's state while its level runs (the host reads it on a dispatch left in the context)."""


class Runner(Protocol):
    """What a dispatch needs of the host's chain runner (`core.runner.ChainRunner`, the watchdog),
    which imports this module, not the other way round."""

    active: set[Dispatch]
    cancelled_tasks: dict[Dispatch, asyncio.Task[Any]]

    def valid(self, event: Event, result: Any) -> bool: ...

    def failed(self, reg: Registration, error: BaseException, phase: str) -> None: ...


class CallNext:
    """The rest of the chain, handed to a handler. Await it at most once."""

    # `_outcome` holds downstream's result (_DONE) or exception (_FAILED); it is read only then.
    # `_child` is the frame this frame's level handed to its handler (unset while none was, or
    # when the level runs the terminal): the watchdog's registry, see `position`.
    __slots__ = ("_child", "_dispatch", "_event", "_index", "_outcome", "_state", "reg")
    _child: CallNext | None
    _dispatch: Dispatch
    _event: Event
    _index: int
    _outcome: Any
    _state: int
    reg: Registration | None

    @property
    def origin(self) -> str:
        """`"engine"` when the harness started this dispatch, else the dispatching plugin's name."""
        return self._dispatch.source

    @property
    def called(self) -> bool:
        return self._state not in (_IDLE, _OVERRUN)

    async def __call__(self, event: Event | None = None) -> Any:
        # One coroutine per level runs the next handler (with its recovery) or the terminal. The
        # root frame (the Dispatch itself, reg None) also keeps the dispatch's bookkeeping, so
        # that a dispatch costs no extra coroutine. Each level tells the watchdog where the
        # dispatch is by one slot store (`self._child`): see `position`.
        if self._state:
            raise self._refusal()
        if event is not self._event:
            if event is None:
                event = self._event
            elif type(event) is not type(self._event):
                raise self._misuse(
                    f"passed a {type(event).__name__} to call_next",
                    f"pass a {type(self._event).__name__} (or nothing)",
                )
        self._state = _RUNNING
        root = self.reg is None
        if root:
            # The root frame is its Dispatch. It keeps no reference to itself: a dispatch is
            # freed by reference counting when its caller lets go, never by the collector.
            dispatch: Dispatch = self  # type: ignore[assignment]
            token = current_dispatch.set(dispatch)
            dispatch.runner.active.add(dispatch)
        else:
            dispatch = self._dispatch
        chain = dispatch._chain
        index = self._index
        reg, engine = chain[index]
        while reg.match is not None and not reg.match(event):
            index += 1
            reg, engine = chain[index]
        try:
            if reg is END_OF_CHAIN:
                result = await dispatch.terminal(event)
            else:
                # No __init__: a bare CallNext() and slot stores cost less than an __init__ frame.
                frame = CallNext()
                frame._dispatch = dispatch
                frame._index = index + 1
                frame._event = event
                frame._state = _IDLE
                frame.reg = reg
                self._child = frame
                try:
                    result = await reg.handler(engine, event, frame)
                except Exception as error:
                    if frame._state == _FAILED and error is frame._outcome:
                        raise  # downstream's own exception, passed through unhandled
                    result = await _recover(dispatch, frame, event, error, engine)
                except BaseException as error:
                    # Cancellations, GeneratorExit, SystemExit and a plugin's own BaseException
                    # classes: the rules are in docs/contract.md ("Exceptions and cancellation").
                    result = await _base_failure(dispatch, frame, event, error, engine)
                else:
                    if dispatch.cancelling is frame:
                        result = await _recover(dispatch, frame, event, _overrun(reg), engine)
                    elif frame._state != _DONE or result is not frame._outcome:
                        # `_checked`'s common case, inline: no coroutine for a result that passes.
                        if (
                            frame._state != _FAILED
                            and not _caller_cancelled()
                            and dispatch.runner.valid(event, result)
                        ):
                            audit_change(dispatch, reg.plugin, frame, result)
                        else:
                            result = await _checked(dispatch, frame, event, result, engine)
        except BaseException as error:
            self._outcome = error
            self._state = _FAILED
            if root:
                dispatch._child = None  # see below
                dispatch.runner.active.discard(dispatch)
                if dispatch.depth:
                    current_dispatch.reset(token)
            raise
        self._outcome = result
        self._state = _DONE
        if root:
            # Frames point at the dispatch and the dispatch (through `_child`) at them: let go,
            # so that they go by reference counting, not by the garbage collector.
            dispatch._child = None
            dispatch.runner.active.discard(dispatch)
            if dispatch.depth:
                # A nested dispatch gives the context back to the one it runs in. One at depth 0
                # stays in it, finished, until the next: readers take a finished one for none
                # (`running_dispatch`), and the reset is saved.
                current_dispatch.reset(token)
            return dispatch  # the root hands the host the whole outcome
        return result

    def _refusal(self) -> Exception:
        if self._state == _OVERRUN:
            return BudgetExceeded(f"{self._owner} overran its budget before call_next")
        return self._misuse("called call_next twice", "await it at most once per handler call")

    @property
    def _owner(self) -> str:
        return "the host" if self.reg is None else f"plugin {self.reg.plugin!r}"

    def _misuse(self, what: str, fix: str) -> ContractError:
        event = self._event.name if self.reg is None else self.reg.event
        return ContractError(f"{self._owner} {what} on {event}; {fix}")

    async def _recovered(self) -> Any:
        """Downstream's outcome for recovery: run it if it never ran, else repeat what it gave."""
        if self._state in (_IDLE, _OVERRUN):
            self._state = _IDLE
            return await self()
        if self._state == _FAILED:
            raise self._outcome
        return self._outcome


class Dispatch(CallNext):
    """One run of a chain and its outcome: `result`, `actions` (the audit), `origin`.

    It is also the chain's root frame, which keeps a dispatch down to one object. `Host.dispatch`
    sets its fields (there is no __init__: dispatch is the host's hottest path).
    """

    __slots__ = (
        "_actions",
        "_chain",
        "cancelling",
        "depth",
        "runner",
        "source",
        "terminal",
    )
    _actions: list[Action] | None
    _chain: Run
    cancelling: CallNext | None
    depth: int
    runner: Runner
    source: str
    terminal: Terminal

    # The root frame's index and registration never change: class values, not per-dispatch stores.
    _index = 0
    reg = None

    @property
    def origin(self) -> str:
        return self.source

    @property
    def running(self) -> bool:
        """Whether the chain is still running (it has neither returned, raised nor been settled)."""
        return self._state == _RUNNING

    @property
    def result(self) -> Any:
        """What the chain returned (after the dispatch has run)."""
        if self._state != _DONE:
            raise RuntimeError("the dispatch has not completed")
        return self._outcome

    @property
    def event(self) -> Event:
        return self._event

    def settle(self, result: Any) -> None:
        """Record a result for a dispatch the host had to cut short."""
        self._outcome = result
        self._state = _DONE

    @property
    def event_name(self) -> str:
        return self._event.name

    @property
    def actions(self) -> list[Action]:
        """The audit: every action of a plugin during this dispatch, in order."""
        actions = self._actions
        if actions is None:
            # Made on first use: most dispatches record nothing, and this one is hot.
            actions = self._actions = []
        return actions

    def add(self, by: str, kind: str, text: str) -> None:
        self.actions.append(Action(by=by, kind=kind, text=text, event=self._event.name))

    def __repr__(self) -> str:
        shown = repr(self._outcome) if self._state == _DONE else "<not run>"
        return f"Outcome(result={shown}, actions={self.actions!r})"


Outcome = Dispatch
"""What `Host.dispatch` returns: `result`, `actions`, `origin`, `event`."""


async def _checked(
    dispatch: Dispatch, frame: CallNext, event: Event, result: Any, engine: Engine
) -> Any:
    """A handler decided something of its own: check the type, then audit the change."""
    reg = frame.reg
    assert reg is not None
    if frame._state == _FAILED and is_cancellation(frame._outcome):
        # The handler turned downstream's cancellation into a result: the cancellation goes on.
        dispatch.runner.failed(reg, frame._outcome, "swallowed a cancellation from call_next")
        raise frame._outcome
    if _caller_cancelled():
        # It caught the caller's cancellation in its own code and answered anyway.
        dispatch.runner.failed(reg, asyncio.CancelledError(), "swallowed the caller's cancellation")
        await _redeliver_cancel()
    if not dispatch.runner.valid(event, result):
        wrong = ContractError(
            f"plugin {reg.plugin!r} returned {type(result).__name__} from its {reg.event} handler; "
            f"return the event's result type (or downstream's result)"
        )
        return await _recover(dispatch, frame, event, wrong, engine)
    audit_change(dispatch, reg.plugin, frame, result)
    return result


async def _base_failure(
    dispatch: Dispatch, frame: CallNext, event: Event, error: BaseException, engine: Engine
) -> Any:
    """A handler raised a BaseException that is not an Exception: pass it on, or recover."""
    reg = frame.reg
    assert reg is not None
    if dispatch.cancelling is frame and isinstance(error, asyncio.CancelledError):
        _consume_cancel(dispatch)  # the watchdog's own cancel: the handler overran its budget
        return await _recover(dispatch, frame, event, _overrun(reg), engine)
    if frame._state == _FAILED and error is frame._outcome:
        raise error  # downstream's own (the caller's cancellation, a SystemExit), passed through
    if isinstance(error, (SystemExit, KeyboardInterrupt)):
        # The process is asked to stop: the chain does not outvote that, it records who asked.
        dispatch.runner.failed(reg, error, _phase(frame))
        raise error
    if is_cancellation(error) and _cancel_requested(error):
        raise error  # the caller's cancellation, delivered while the handler ran its own code
    # A CancelledError nobody asked for, GeneratorExit, a plugin's own BaseException: a failure.
    return await _recover(dispatch, frame, event, error, engine)


def is_cancellation(error: object) -> bool:
    """Whether `error` is a cancellation of asyncio or trio (the classes anyio cancels with)."""
    if isinstance(error, asyncio.CancelledError):
        return True
    kind = type(error)
    return kind.__name__ == "Cancelled" and kind.__module__.startswith("trio")


def _cancel_requested(error: BaseException) -> bool:
    """Whether `error` is a cancellation someone asked for: a pending asyncio cancel of this task,
    or a cancelled scope around it. A CancelledError nobody asked for is a plugin's failure."""
    try:
        task = asyncio.current_task()
    except RuntimeError:
        # Not on asyncio: trio makes its Cancelled only for a cancelled scope.
        return not isinstance(error, asyncio.CancelledError)
    if task is not None and task.cancelling():
        return True
    return _caller_cancelled()


def _caller_cancelled() -> bool:
    """Whether the caller's anyio/trio cancel scope is cancelled (a shielded one is not)."""
    try:
        task = asyncio.current_task()
    except RuntimeError:
        task = None  # not on asyncio
    if task is not None and not task.cancelling():
        # On asyncio a cancelled scope cancels its tasks (and counts it) before anything can
        # catch it: with none counted, no handler swallowed one. A third of the full check's cost.
        return False
    try:
        return anyio.current_effective_deadline() == -math.inf
    except Exception:
        return False


async def _redeliver_cancel() -> None:
    """Let the caller's cancel scope cancel us again: its own cancellation is the one it knows.

    anyio re-delivers a scope's cancellation at each checkpoint while the task is inside it
    (trio at the first); a plain CancelledError after that is only a backstop."""
    for _ in range(16):
        await anyio.lowlevel.checkpoint()
    raise asyncio.CancelledError("the caller cancelled this dispatch")


def _phase(frame: CallNext) -> str:
    return "before call_next" if frame._state in (_IDLE, _OVERRUN) else "after call_next"


def _overrun(reg: Registration) -> BudgetExceeded:
    return BudgetExceeded(f"{reg.plugin} handler on {reg.event} overran its budget")


def _consume_cancel(dispatch: Dispatch) -> None:
    dispatch.cancelling = None
    task = dispatch.runner.cancelled_tasks.pop(dispatch, None)
    if task is not None and task.cancelling():
        task.uncancel()


async def _settle_cancel(dispatch: Dispatch) -> None:
    """The watchdog's cancel may still be pending on the task: take it before running anything."""
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.sleep(0)
    _consume_cancel(dispatch)


async def _recover(
    dispatch: Dispatch, frame: CallNext, event: Event, error: BaseException, engine: Engine
) -> Any:
    reg = frame.reg
    assert reg is not None  # the root frame is never handed to a handler
    if dispatch.cancelling is frame:
        await _settle_cancel(dispatch)
    dispatch.runner.failed(reg, error, _phase(frame))
    if reg.fallback is not None:
        try:
            result = await reg.fallback(engine, event, error, _FallbackNext(frame))
        except Exception as fallback_error:
            dispatch.runner.failed(reg, fallback_error, "in .catch fallback")
        except BaseException as fallback_error:
            if isinstance(fallback_error, (SystemExit, KeyboardInterrupt)) or (
                is_cancellation(fallback_error) and _cancel_requested(fallback_error)
            ):
                raise
            dispatch.runner.failed(reg, fallback_error, "in .catch fallback")
        else:
            if dispatch.runner.valid(event, result):
                if not (frame._state == _DONE and result is frame._outcome):
                    audit_change(dispatch, reg.plugin, frame, result)
                return result
            dispatch.runner.failed(
                reg,
                ContractError(f"fallback returned {type(result).__name__}"),
                "in .catch fallback",
            )
    if reg.fail == "closed" and frame._state in (_IDLE, _OVERRUN):
        reason = (
            f"{reg.plugin} could not check this {reg.event} ({type(error).__name__}) and guards it "
            "fail-closed, so it is refused; retry, or ask the person to check the plugin"
        )
        result = refusal(event, reason, by=reg.plugin)
        audit_change(dispatch, reg.plugin, frame, result)
        return result
    return await frame._recovered()


class _FallbackNext:
    """`call_next` as a fallback sees it: runs downstream once, then repeats its outcome."""

    __slots__ = ("_frame",)

    def __init__(self, frame: CallNext) -> None:
        self._frame = frame

    @property
    def origin(self) -> str:
        return self._frame.origin

    async def __call__(self, event: Event | None = None) -> Any:
        return await self._frame._recovered()


def audit_change(dispatch: Dispatch, plugin: str, frame: CallNext, result: Any) -> None:
    """Record what `plugin` changed relative to downstream's result (or decided on its own)."""
    if not isinstance(result, BaseModel):
        return  # a stream (turn.step) or None: nothing in it to audit
    before = frame._outcome if frame._state == _DONE else None
    add = dispatch.add
    if isinstance(result, ToolResult):
        old = before if isinstance(before, ToolResult) else None
        known = () if old is None else old.notes
        for note in result.notes:
            if note not in known:
                add(plugin, "note", note.text)
        if result.denial is not None and (old is None or old.denial != result.denial):
            add(plugin, "deny", result.denial.reason)
        if result.updated_input is not None and (
            old is None or old.updated_input != result.updated_input
        ):
            add(plugin, "input", "updated input")
        if old is not None and (old.output != result.output or old.is_error != result.is_error):
            add(plugin, "output", "changed output")
    elif isinstance(result, PromptResult):
        old_prompt = before if isinstance(before, PromptResult) else None
        if result.drop is not None and (old_prompt is None or old_prompt.drop != result.drop):
            add(plugin, "drop", result.drop.reason)
        elif old_prompt is not None and old_prompt.text != result.text:
            add(plugin, "input", "rewrote the prompt")
    elif isinstance(result, ContextResult):
        old_blocks = before.blocks if isinstance(before, ContextResult) else ()
        for block in result.blocks:
            if block not in old_blocks:
                add(plugin, "context", f"{block.name}: {block.text}")
        for block in old_blocks:
            if block not in result.blocks:
                add(plugin, "context", f"removed {block.name}")
    elif isinstance(result, TurnResult):
        old_turn = before if isinstance(before, TurnResult) else None
        if result.continuation is not None and (
            old_turn is None or old_turn.continuation != result.continuation
        ):
            add(plugin, "continue", result.continuation.reason)
    elif isinstance(result, CommandReply) and (before is None or before != result):
        add(plugin, "reply", result.text)


def mark_overrun(frame: CallNext) -> None:
    """The watchdog's verdict on a handler stuck before it called call_next."""
    if frame._state == _IDLE:
        frame._state = _OVERRUN


LEVEL_CODE = CallNext.__call__.__code__
"""The code of one chain level: the frame right inside it on a stack is a handler's (or the
terminal's). The loop watch finds who blocks the event loop by it."""


def position(dispatch: Dispatch) -> CallNext | None:
    """The frame whose handler runs its own code now (None: the terminal, or nothing runs).

    Read from what the levels record (each level's `_child` and every frame's state), never
    from a coroutine's local variables. From the root down: a running level has handed its
    handler a frame (its child) or runs the terminal (no child); that handler runs its own code
    unless the child's level is running too, in which case look one level further in.
    """
    level: CallNext = dispatch
    while level._state == _RUNNING:
        frame: CallNext | None = getattr(level, "_child", None)
        if frame is None:
            return None  # this level runs the terminal
        if frame._state != _RUNNING:
            return frame
        level = frame
    return None


def task_of(frame: CallNext) -> asyncio.Task[Any] | None:
    """The task whose await chain runs the handler `frame` was handed to, if any.

    For a verdict only (it walks the heap): the coroutines that hold `frame` are the handler's
    (its call_next argument) and its level's, whatever they call it; the task is the one whose
    await chain holds the level awaiting the handler. The hot path stores nothing for it."""
    holders = {id(holder) for holder in gc.get_referrers(frame)}
    fallback = None
    for task in asyncio.all_tasks():
        coro: Any = task.get_coro()
        while coro is not None:
            inner = getattr(coro, "cr_await", None)
            if id(coro) in holders:
                if id(inner) in holders:
                    return task  # the level awaiting the handler: both hold the frame
                fallback = fallback or task  # e.g. a task the handler gave its call_next to
            coro = inner
    return fallback
