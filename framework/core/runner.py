"""The chain runner: result checks, the once-per-site failure log, and the budget watchdog."""

from __future__ import annotations

import _thread
import asyncio
import sys
import threading
import time
from collections.abc import Callable, Iterable
from types import CodeType, FrameType
from typing import Any

import structlog

from framework.core.chain import LEVEL_CODE, CallNext, Dispatch, mark_overrun, position, task_of
from framework.core.contract import Event
from framework.core.logging import Once
from framework.core.registration import Registration

_log = structlog.get_logger("hookchain.chain")


class ChainRunner:
    """Shared machinery of a host's chains: result checks, failure log, the budget watchdog."""

    def __init__(self, *, default_budget: float, valid: Callable[[Event, Any], bool]) -> None:
        self.default_budget = default_budget
        self.valid = valid
        self.failures: dict[tuple[str, str], int] = {}
        self._logged = Once()
        self.active: set[Dispatch] = set()
        self.cancelled_tasks: dict[Dispatch, asyncio.Task[Any]] = {}
        self._seen: dict[Dispatch, tuple[CallNext, float]] = {}
        self.armed = False
        self.tick = 0.05
        self._watch: LoopWatch | None = None
        self._handlers: dict[CodeType, Registration] = {}

    def know(self, registrations: Iterable[Registration]) -> None:
        """The registrations the loop watch names a blocking handler by (from its code)."""
        self._handlers = {}
        for reg in registrations:
            code = getattr(reg.handler, "__code__", None)
            if isinstance(code, CodeType):
                self._handlers.setdefault(code, reg)

    def close(self) -> None:
        """Stop the loop watch (the host closed)."""
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.stop()

    def failed(self, reg: Registration, error: BaseException, phase: str) -> None:
        key = (reg.plugin, reg.event)
        self.failures[key] = self.failures.get(key, 0) + 1
        site = f"{phase} at {_site(error, reg)}"
        if not self._logged.first((reg.plugin, reg.event, site)):
            return
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

    def arm(self) -> None:
        """Start the watchdog's timer if it is not running (asyncio only: see docs/contract.md)."""
        if not self.armed:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return  # not on asyncio: budgets are not enforced
            self.armed = True
            loop.call_later(self.tick, self._check)
            watch = self._watch
            if watch is None or watch.loop is not loop:
                if watch is not None:
                    watch.stop()
                self._watch = LoopWatch(self, loop)

    def _cancel(self, dispatch: Dispatch, frame: CallNext, task: asyncio.Task[Any]) -> None:
        self.cancelled_tasks[dispatch] = task
        dispatch.cancelling = frame
        mark_overrun(frame)
        task.cancel()

    def _check(self) -> None:
        # A handler seen running its own code on two ticks at least a budget apart is stuck.
        # Own time is sampled, not timed: the hot path reads no clock and arms no timer.
        now = time.monotonic()
        seen = self._seen
        self._seen = {}
        if self.active:
            stuck: list[tuple[Dispatch, CallNext]] = []
            for dispatch in self.active:
                frame = position(dispatch)
                if frame is None or frame.reg is None or dispatch.cancelling is not None:
                    continue
                first = seen.get(dispatch)
                if first is None or first[0] is not frame:
                    self._seen[dispatch] = (frame, now)
                    continue
                self._seen[dispatch] = first
                budget = frame.reg.budget or self.default_budget
                if now - first[1] >= budget:
                    stuck.append((dispatch, frame))
            # Tasks are looked up only for a verdict: that is the costly part.
            for dispatch, frame in stuck:
                task = task_of(frame)
                if task is not None:
                    self._cancel(dispatch, frame, task)
        if self.active:
            asyncio.get_running_loop().call_later(self.tick, self._check)
        else:
            self.armed = False


BLOCK_WARN = 0.1
"""Seconds a handler may hold the event loop in one go before the loop watch logs it."""


class LoopWatch:
    """Notices a handler that blocks the event loop (`time.sleep`, a busy loop, blocking I/O).

    A daemon thread asks the loop for a reply (`call_soon_threadsafe`) every `BLOCK_WARN`
    seconds while dispatches run. When the reply is late, it reads the loop thread's stack
    (`sys._current_frames`): the frame right inside a chain level is the handler that holds the
    loop. When the loop answers again, the hold is logged once per (plugin, event, site) with
    the time held. The chain pays nothing for it; the loop one callback per interval.
    """

    def __init__(self, runner: ChainRunner, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._runner = runner
        self._loop_thread = threading.get_ident()
        self._stopped = threading.Event()
        self._answered = threading.Event()
        self._logged = Once()
        self._finished = threading.Event()
        self._ident: int | None = None
        # Not threading.Thread.start: it waits until the new thread has run, a context switch
        # every fresh host (each replay round, each test) would pay on a busy machine.
        _thread.start_new_thread(self._run, ())

    def stop(self) -> None:
        self._stopped.set()
        self._answered.set()
        if self._ident != threading.get_ident():
            self._finished.wait(timeout=1)

    def _run(self) -> None:
        self._ident = threading.get_ident()
        try:
            self._watch()
        finally:
            self._finished.set()

    def _watch(self) -> None:
        stopped = self._stopped
        loop = self.loop
        while not stopped.wait(BLOCK_WARN):
            if loop.is_closed():
                return  # the host was left open on a loop that ended: nothing left to watch
            if not self._runner.active or not loop.is_running():
                continue
            self._answered.clear()
            asked = time.monotonic()
            try:
                loop.call_soon_threadsafe(self._answered.set)
            except RuntimeError:
                return  # the loop closed
            if self._answered.wait(BLOCK_WARN):
                continue
            # Until the loop answers (or stops running: then nobody is held, it was left), sample
            # who runs. Only one handler call seen on every sample holds the loop: a caller that
            # runs dispatch after dispatch without yielding shows a different call each time.
            held: tuple[FrameType, tuple[str, str, str]] | None = None
            alone = True
            while not self._answered.wait(BLOCK_WARN / 4) and loop.is_running():
                found = self._holder()
                if found is None or (held is not None and found[0] is not held[0]):
                    alone = False
                held = found
            holder = held[1] if held is not None and alone else None
            del held
            if holder is not None and self._answered.is_set() and not stopped.is_set():
                self._report(holder, time.monotonic() - asked)

    def _holder(self) -> tuple[FrameType, tuple[str, str, str]] | None:
        """The frame of the handler call running on the loop thread now, with (plugin, event,
        site); None when no handler runs (the host's or the caller's code, or the terminal)."""
        frame: FrameType | None = sys._current_frames().get(self._loop_thread)
        inner: FrameType | None = None
        while frame is not None:
            if frame.f_code is LEVEL_CODE:
                break
            inner, frame = frame, frame.f_back
        if frame is None or inner is None:
            return None
        reg = self._runner._handlers.get(inner.f_code)
        if reg is None:
            return None  # the terminal (the harness's own code) or a handler we cannot name
        site = f"{inner.f_code.co_filename.rsplit('/', 1)[-1]}:{inner.f_lineno}"
        return inner, (reg.plugin, reg.event, site)

    def _report(self, holder: tuple[str, str, str], held: float) -> None:
        if not self._logged.first(holder):
            return
        plugin, event, site = holder
        _log.warning(
            "handler blocked the event loop; every other dispatch waited",
            plugin=plugin,
            event_name=event,
            site=site,
            held_s=round(held, 3),
            fix="await the slow work (anyio.to_thread.run_sync for blocking calls)",
        )


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
