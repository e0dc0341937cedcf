"""The chain: registrations, `call_next`, fail-open recovery, budgets, and the audit of changes."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any

import structlog

from framework._contract import (
    REFUSABLE_EVENTS,
    CommandReply,
    ContextResult,
    ContractError,
    Event,
    FailMode,
    PromptResult,
    ToolResult,
    TurnResult,
    event_type,
    refusal,
)
from framework._engine import Action

if TYPE_CHECKING:
    from framework._engine import Engine

Handler = Callable[[Any, Any, "CallNext"], Awaitable[Any]]
Fallback = Callable[[Any, Any, BaseException, Any], Awaitable[Any]]
Terminal = Callable[[Any], Awaitable[Any]]
Matcher = Callable[[Any], bool]

_log = structlog.get_logger("hookchain.chain")


class BudgetExceeded(Exception):
    """A handler spent more of its own time than its budget allows."""


class Registration:
    """One handler attached to one event by one plugin."""

    __slots__ = (
        "budget",
        "event",
        "fail",
        "fallback",
        "handler",
        "match",
        "match_spec",
        "order",
        "plugin",
        "sequence",
    )

    def __init__(
        self,
        *,
        plugin: str,
        event: str,
        handler: Handler,
        match: Matcher | None,
        match_spec: Mapping[str, Any] | None,
        order: int,
        fail: FailMode,
        budget: float | None,
        sequence: int,
    ) -> None:
        self.plugin = plugin
        self.event = event
        self.handler = handler
        self.match = match
        self.match_spec = match_spec
        self.order = order
        self.fail = fail
        self.budget = budget
        self.sequence = sequence
        self.fallback: Fallback | None = None

    def catch(self, fallback: Fallback) -> Registration:
        """Replace the default recovery with `fallback(engine, event, error, call_next)`."""
        self.fallback = fallback
        return self

    @property
    def sort_key(self) -> tuple[int, str, int]:
        return (self.order, self.plugin, self.sequence)

    @property
    def handler_name(self) -> str:
        return getattr(self.handler, "__qualname__", repr(self.handler))

    def __repr__(self) -> str:
        return (
            f"Registration({self.plugin}:{self.handler_name} on {self.event}, "
            f"order={self.order}, fail={self.fail})"
        )


def compile_match(plugin: str, event: str, spec: Mapping[str, Any] | None) -> Matcher | None:
    """Turn `{"tool": {"Bash"}}` into a predicate; unknown fields are a registration error."""
    if not spec:
        return None
    model = event_type(event)
    tests: list[tuple[str, Callable[[Any], bool]]] = []
    for field_name, wanted in spec.items():
        if field_name not in model.model_fields:
            fields = ", ".join(sorted(model.model_fields))
            raise ContractError(
                f"plugin {plugin!r}: on({event!r}, match=...) names unknown field {field_name!r}; "
                f"fields of {event}: {fields}"
            )
        if callable(wanted):
            tests.append((field_name, wanted))
        elif isinstance(wanted, Collection) and not isinstance(wanted, (str, bytes)):
            allowed = frozenset(wanted)
            tests.append((field_name, allowed.__contains__))
        else:
            tests.append((field_name, wanted.__eq__))

    if len(tests) == 1:
        ((name, test),) = tests
        return lambda event_value: bool(test(getattr(event_value, name)))
    return lambda event_value: all(test(getattr(event_value, name)) for name, test in tests)


def make_registration(
    *,
    plugin: str,
    event: str,
    handler: Handler,
    match: Mapping[str, Any] | None,
    order: int,
    fail: FailMode,
    budget: float | None,
    sequence: int,
) -> Registration:
    """Validate one `on(...)` call and build its registration."""
    event_type(event)  # unknown events are refused here, not at dispatch
    if not callable(handler):
        raise ContractError(f"plugin {plugin!r}: on({event!r}, ...) needs an async handler")
    if fail not in ("open", "closed"):
        raise ContractError(f"plugin {plugin!r}: fail={fail!r} on {event}; use 'open' or 'closed'")
    if fail == "closed" and event not in REFUSABLE_EVENTS:
        raise ContractError(
            f"plugin {plugin!r}: fail='closed' on {event!r} has no refusal to fall back to; "
            f"only {', '.join(sorted(REFUSABLE_EVENTS))} accept it"
        )
    if budget is not None and budget <= 0:
        raise ContractError(f"plugin {plugin!r}: budget on {event} must be positive seconds")
    return Registration(
        plugin=plugin,
        event=event,
        handler=handler,
        match=compile_match(plugin, event, match),
        match_spec=match,
        order=order,
        fail=fail,
        budget=budget,
        sequence=sequence,
    )


class Dispatch:
    """One run of a chain: origin, engines of the session, the terminal, and the audit."""

    __slots__ = (
        "actions",
        "cancelling",
        "current",
        "depth",
        "engines",
        "event_name",
        "origin",
        "phase",
        "runner",
        "seen",
        "seen_at",
        "task",
        "terminal",
    )

    def __init__(
        self,
        runner: ChainRunner,
        origin: str,
        engines: Mapping[str, Engine],
        terminal: Terminal,
        event_name: str,
        depth: int,
    ) -> None:
        self.runner = runner
        self.origin = origin
        self.engines = engines
        self.terminal = terminal
        self.actions: list[Action] | None = None
        self.event_name = event_name
        self.depth = depth
        self.task: asyncio.Task[Any] | None = None
        self.current: CallNext | None = None
        self.phase = 0
        self.cancelling: CallNext | None = None
        self.seen: tuple[CallNext | None, int] = (None, -1)
        self.seen_at = 0.0

    def add(self, by: str, kind: str, text: str) -> None:
        if self.actions is None:
            self.actions = []
        self.actions.append(Action(by=by, kind=kind, text=text, event=self.event_name))


_IDLE, _RUNNING, _DONE = 0, 1, 2


class CallNext:
    """The rest of the chain, handed to a handler. Await it at most once."""

    __slots__ = ("_chain", "_dispatch", "_error", "_event", "_index", "_result", "_state", "reg")

    def __init__(
        self,
        dispatch: Dispatch,
        chain: tuple[Registration, ...],
        index: int,
        event: Event,
        reg: Registration,
    ) -> None:
        self._dispatch = dispatch
        self._chain = chain
        self._index = index
        self._event = event
        self._state = _IDLE
        self._result: Any = None
        self._error: BaseException | None = None
        self.reg = reg

    @property
    def origin(self) -> str:
        """`"engine"` when the harness started this dispatch, else the dispatching plugin's name."""
        return self._dispatch.origin

    @property
    def called(self) -> bool:
        return self._state != _IDLE

    async def __call__(self, event: Event | None = None) -> Any:
        dispatch = self._dispatch
        if self._state != _IDLE:
            raise ContractError(
                f"plugin {self.reg.plugin!r} called call_next twice on {self.reg.event}; "
                "await it at most once per handler call"
            )
        if dispatch.cancelling is self:
            raise BudgetExceeded(f"{self.reg.plugin} overran its budget before call_next")
        if event is None:
            event = self._event
        elif type(event) is not type(self._event):
            raise ContractError(
                f"plugin {self.reg.plugin!r} passed a {type(event).__name__} to call_next on "
                f"{self.reg.event}; pass a {type(self._event).__name__} (or nothing)"
            )
        self._state = _RUNNING
        try:
            result = await run_chain(dispatch, self._chain, self._index, event)
        except BaseException as error:
            self._error = error
            self._state = _DONE
            dispatch.current = self
            dispatch.phase += 1
            raise
        self._result = result
        self._state = _DONE
        dispatch.current = self
        dispatch.phase += 1
        return result

    async def _recovered(self) -> Any:
        """Downstream's outcome for recovery: run it if it never ran, else repeat what it gave."""
        if self._state == _IDLE:
            return await self()
        if self._error is not None:
            raise self._error
        return self._result


async def run_chain(
    dispatch: Dispatch, chain: tuple[Registration, ...], index: int, event: Event
) -> Any:
    """Run `chain[index:]` then the terminal."""
    size = len(chain)
    while index < size:
        reg = chain[index]
        if reg.match is None or reg.match(event):
            break
        index += 1
    else:
        dispatch.current = None
        dispatch.phase += 1
        return await dispatch.terminal(event)

    frame = CallNext(dispatch, chain, index + 1, event, reg)
    dispatch.current = frame
    dispatch.phase += 1
    engine = dispatch.engines[reg.plugin]
    try:
        result = await reg.handler(engine, event, frame)
    except asyncio.CancelledError:
        if dispatch.cancelling is not frame:
            raise
        _consume_cancel(dispatch)
        return await _recover(dispatch, frame, event, BudgetExceeded(_overrun(reg)), engine)
    except Exception as error:
        if frame._state == _DONE and error is frame._error:
            raise  # downstream's own exception, passed through unhandled
        return await _recover(dispatch, frame, event, error, engine)
    if dispatch.cancelling is frame:
        await _settle_cancel(dispatch)
        return await _recover(dispatch, frame, event, BudgetExceeded(_overrun(reg)), engine)
    if frame._state == _DONE and result is frame._result:
        return result
    if not dispatch.runner.valid(event, result):
        wrong = ContractError(
            f"plugin {reg.plugin!r} returned {type(result).__name__} from its {reg.event} handler; "
            f"return the event's result type (or downstream's result)"
        )
        return await _recover(dispatch, frame, event, wrong, engine)
    audit_change(dispatch, reg.plugin, frame, result)
    return result


def _overrun(reg: Registration) -> str:
    return f"{reg.plugin} handler on {reg.event} overran its budget"


def _consume_cancel(dispatch: Dispatch) -> None:
    dispatch.cancelling = None
    task = dispatch.task
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
    if dispatch.cancelling is frame:
        await _settle_cancel(dispatch)
    phase = "after call_next" if frame._state == _DONE else "before call_next"
    dispatch.runner.failed(reg, error, phase)
    if reg.fallback is not None:
        try:
            result = await reg.fallback(engine, event, error, _FallbackNext(frame))
        except Exception as fallback_error:
            dispatch.runner.failed(reg, fallback_error, "in .catch fallback")
        else:
            if dispatch.runner.valid(event, result):
                if not (frame._state == _DONE and result is frame._result):
                    audit_change(dispatch, reg.plugin, frame, result)
                return result
            dispatch.runner.failed(
                reg,
                ContractError(f"fallback returned {type(result).__name__}"),
                "in .catch fallback",
            )
    if reg.fail == "closed" and frame._state == _IDLE:
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
    before = frame._result if frame._state == _DONE and frame._error is None else None
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


class ChainRunner:
    """Shared machinery of a host's chains: result checks, failure log, the budget watchdog."""

    def __init__(self, *, default_budget: float, valid: Callable[[Event, Any], bool]) -> None:
        self.default_budget = default_budget
        self.valid = valid
        self.failures: dict[tuple[str, str], int] = {}
        self._logged: set[tuple[str, str, str]] = set()
        self._active: set[Dispatch] = set()
        self._armed = False
        self.tick = 0.05

    def failed(self, reg: Registration, error: BaseException, phase: str) -> None:
        key = (reg.plugin, reg.event)
        self.failures[key] = self.failures.get(key, 0) + 1
        site = f"{phase} at {_site(error, reg)}"
        if (reg.plugin, reg.event, site) in self._logged:
            return
        self._logged.add((reg.plugin, reg.event, site))
        # Only the exception's type and where it happened: its message may hold call content.
        _log.warning(
            "handler failed; chain went on without it",
            plugin=reg.plugin,
            event_name=reg.event,
            handler=reg.handler_name,
            site=site,
            error_type=type(error).__name__,
            recovery="closed" if reg.fail == "closed" else "open",
        )

    # -- the watchdog: one timer for every running dispatch, no per-handler timers ----------

    def started(self, dispatch: Dispatch) -> None:
        try:
            dispatch.task = asyncio.current_task()
        except RuntimeError:
            return  # not on asyncio: budgets are measured by nobody; documented limitation
        self._active.add(dispatch)
        if not self._armed:
            self._armed = True
            asyncio.get_running_loop().call_later(self.tick, self._check)

    def finished(self, dispatch: Dispatch) -> None:
        self._active.discard(dispatch)

    def _check(self) -> None:
        now = time.monotonic()
        for dispatch in self._active:
            frame = dispatch.current
            if frame is None or dispatch.cancelling is not None:
                continue
            mark = (frame, dispatch.phase)
            if dispatch.seen != mark:
                dispatch.seen = mark
                dispatch.seen_at = now
                continue
            budget = frame.reg.budget or self.default_budget
            if now - dispatch.seen_at >= budget and dispatch.task is not None:
                dispatch.cancelling = frame
                dispatch.task.cancel()
        if self._active:
            asyncio.get_running_loop().call_later(self.tick, self._check)
        else:
            self._armed = False


def _site(error: BaseException, reg: Registration) -> str:
    traceback = error.__traceback__
    last = None
    while traceback is not None:
        last = traceback
        traceback = traceback.tb_next
    if last is None:
        return reg.handler_name
    code = last.tb_frame.f_code
    return f"{code.co_filename.rsplit('/', 1)[-1]}:{last.tb_lineno}"
