"""Check 7: with a clock and store that never answer, the plugin's chain still ends in budget.

Two ways to break a budget are told apart, neither by racing the chain against the wall clock:
a handler that ignores the budget's cancellation never ends (found with a generous deadline that
only a hang reaches), and a handler that blocks the event loop is timed step by step, counting
only its own synchronous code (the longest step must stay inside its budget).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from framework import FakeClock, Host
from framework.testing._checks import CheckResult
from framework.testing._fakes import StalledBackend
from framework.testing._isolated import isolated_settings, make_host
from framework.testing._scripts import ScriptedTerminal
from framework.testing._vectors import Vector

__all__ = ["CHECK_BUDGET", "HANG_GRACE", "StepTimer", "check_budget"]

CHECK_BUDGET = 0.25
"""The default handler budget while checking: the check is about giving up when told, not the
number, and a short one keeps `hookchain check` quick. Budgets a plugin names itself are kept."""

HANG_GRACE = 2.0
"""Seconds past the chain's budgets before it counts as hung. Only a hung chain waits this long,
so it is generous: a loaded machine delays the watchdog by ticks, never by seconds."""

# Per handler, on top of its budget: the watchdog samples own time every 50 ms and needs two
# samples a budget apart, so it cancels up to two ticks late; four leave room for a busy loop.
_WATCHDOG_SLACK = 0.2


@dataclass(slots=True)
class StepTimer:
    """The longest synchronous step of each timed handler, its nested handlers' steps excluded."""

    longest: dict[str, float] = field(default_factory=dict)
    # Time spent in nested timed steps, one entry per step running now (steps nest, never
    # interleave: a step is synchronous code inside one `send`).
    _nested: list[float] = field(default_factory=list)

    def wrap(self, name: str, handler: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
        """`handler` with every step of each call timed under `name`."""

        @functools.wraps(handler)
        async def timed(*args: Any) -> Any:
            return await _TimedSteps(self, name, handler(*args))

        return timed

    def run_step(self, name: str, step: Callable[[], Any]) -> Any:
        self._nested.append(0.0)
        started = time.perf_counter()
        try:
            return step()
        finally:
            spent = time.perf_counter() - started
            own = spent - self._nested.pop()
            if self._nested:
                self._nested[-1] += spent
            if own > self.longest.get(name, 0.0):
                self.longest[name] = own


class _TimedSteps:
    """Awaits a handler's coroutine, handing each step to the timer; everything else passes."""

    def __init__(self, timer: StepTimer, name: str, awaitable: Awaitable[Any]) -> None:
        self._timer = timer
        self._name = name
        self._inner = awaitable.__await__()

    def __await__(self) -> Generator[Any, Any, Any]:
        inner = self._inner
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            try:
                if thrown is None:
                    yielded = self._timer.run_step(self._name, functools.partial(inner.send, sent))
                else:
                    error = thrown
                    yielded = self._timer.run_step(
                        self._name, functools.partial(inner.throw, error)
                    )
            except StopIteration as done:
                return done.value
            try:
                sent, thrown = (yield yielded), None
            except GeneratorExit:
                inner.close()
                raise
            except BaseException as error:
                sent, thrown = None, error


async def check_budget(
    obj: Any, vectors: tuple[Vector, ...], check: CheckResult, *, sandbox: Path | None = None
) -> None:
    """Dispatch every vector the plugin handles through a host whose clock and store stall."""
    person = isolated_settings()
    clock = FakeClock()
    clock.stall()
    host = make_host(
        obj,
        settings=person.model_copy(update={"handler_budget": CHECK_BUDGET}),
        store=StalledBackend(),
        clock=clock,
        sandbox=sandbox,
    )
    # Background work spawned against the stalled store never ends: the host is closed under a
    # cancelled scope so that its task group stops waiting for it.
    with anyio.CancelScope() as closing:
        async with host:
            try:
                await _dispatch_all(host, vectors, check, person.handler_budget)
            finally:
                closing.cancel()


async def _dispatch_all(
    host: Host, vectors: tuple[Vector, ...], check: CheckResult, default_budget: float
) -> None:
    """Each vector through the chain: it must end, and no handler may block past its budget.

    Waiting on what never answers is cut off at the short `CHECK_BUDGET`; a blocking step is
    held to the budget the handler really has (its own, else the host's default), since that is
    what it would overrun in use.
    """
    timer = StepTimer()
    wrapped: set[int] = set()
    for vector in vectors:
        event = vector.event
        chain = [reg for reg in host.chain(event.name) if reg.match is None or reg.match(event)]
        if not chain:
            continue
        for reg in chain:
            if id(reg) not in wrapped:
                wrapped.add(id(reg))
                reg.handler = timer.wrap(f"{reg.event}:{reg.handler_name}", reg.handler)
        waits = [reg.budget or CHECK_BUDGET for reg in chain]
        limit = sum(budget + _WATCHDOG_SLACK for budget in waits) + HANG_GRACE
        budgets = {f"{reg.event}:{reg.handler_name}": reg.budget or default_budget for reg in chain}
        with anyio.move_on_after(limit) as waiting:
            await host.dispatch(event, terminal=ScriptedTerminal(vector.script()))
        # `cancel_called`, not `cancelled_caught`: the host may take the deadline's cancellation
        # for the budget's and recover, so the chain "ends" only because it was cut off.
        if waiting.cancel_called:
            check.failed(
                f"{vector.id}: the chain was still running {limit:.2g}s in with a stalled "
                "clock/store; a handler ignores its budget's cancellation"
            )
            return
        for name, budget in budgets.items():
            own = timer.longest.get(name, 0.0)
            if own > budget:
                check.failed(
                    f"{vector.id}: {name} held the event loop for {own:.2g}s in one step "
                    f"(budget {budget:g}s); blocking code cannot be cut off by the budget"
                )
                return
        check.passed()
