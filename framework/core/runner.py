"""The chain runner: result checks, the once-per-site failure log, and the budget watchdog."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import structlog

from framework.core.chain import CallNext, Dispatch, mark_overrun, positions
from framework.core.contract import Event
from framework.core.registration import Registration

_log = structlog.get_logger("hookchain.chain")


class ChainRunner:
    """Shared machinery of a host's chains: result checks, failure log, the budget watchdog."""

    def __init__(self, *, default_budget: float, valid: Callable[[Event, Any], bool]) -> None:
        self.default_budget = default_budget
        self.valid = valid
        self.failures: dict[tuple[str, str], int] = {}
        self._logged: set[tuple[str, str, str]] = set()
        self.active: set[Dispatch] = set()
        self.cancelled_tasks: dict[Dispatch, asyncio.Task[Any]] = {}
        self._seen: dict[Dispatch, tuple[CallNext, float]] = {}
        self.armed = False
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

    def arm(self) -> None:
        """Start the watchdog's timer if it is not running (asyncio only: see docs/contract.md)."""
        if not self.armed:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return  # not on asyncio: budgets are not enforced
            self.armed = True
            loop.call_later(self.tick, self._check)

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
            for dispatch, (task, frame) in positions(self.active).items():
                if frame is None or frame.reg is None or dispatch.cancelling is not None:
                    continue
                first = seen.get(dispatch)
                if first is None or first[0] is not frame:
                    self._seen[dispatch] = (frame, now)
                    continue
                self._seen[dispatch] = first
                budget = frame.reg.budget or self.default_budget
                if now - first[1] >= budget:
                    self._cancel(dispatch, frame, task)
        if self.active:
            asyncio.get_running_loop().call_later(self.tick, self._check)
        else:
            self.armed = False


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
