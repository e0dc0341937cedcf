"""Check 7: with a clock and store that never answer, the plugin's chain still ends in budget."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import anyio

from framework import FakeClock, Host, load_settings
from framework.testing._checks import CheckResult
from framework.testing._scripts import ScriptedTerminal
from framework.testing._vectors import Vector

__all__ = ["CHECK_BUDGET", "StalledBackend", "check_budget"]

CHECK_BUDGET = 0.25
"""The default handler budget while checking: the check is about giving up when told, not the
number, and a short one keeps `hookchain check` quick. Budgets a plugin names itself are kept."""

_HOST_SESSION_DROP = re.compile(r"session:[^:]+:")

# Room for the watchdog's tick and the recovery on top of the handlers' budgets.
_GRACE = 0.5


class StalledBackend:
    """A store backend that never answers (a locked database, a dead redis)."""

    url = "stalled://"

    async def get(self, key: str) -> Any:
        await anyio.sleep_forever()

    async def set(self, key: str, value: Any, *, ttl: float | None = None) -> None:
        await anyio.sleep_forever()

    async def delete(self, key: str) -> None:
        await anyio.sleep_forever()

    async def keys(self, prefix: str = "") -> list[str]:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def update(self, key: str, fn: Callable[[Any], Any], *, ttl: float | None = None) -> Any:
        await anyio.sleep_forever()

    async def clear(self, prefix: str = "") -> int:
        if _HOST_SESSION_DROP.fullmatch(prefix):
            return 0  # the host's own drop of a session at session.end: not the plugin's time
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        return None


async def check_budget(obj: Any, vectors: tuple[Vector, ...], check: CheckResult) -> None:
    """Dispatch every vector the plugin handles through a host whose clock and store stall."""
    settings = load_settings({}).model_copy(
        update={"plugins": [], "disable_plugins": [], "handler_budget": CHECK_BUDGET}
    )
    clock = FakeClock()
    clock.stall()
    host = Host(
        plugins=[obj],
        entry_points=False,
        settings=settings,
        config={},
        store=StalledBackend(),
        clock=clock,
        env={},
    )
    # Background work spawned against the stalled store never ends: the host is closed under a
    # cancelled scope so that its task group stops waiting for it.
    with anyio.CancelScope() as closing:
        async with host:
            try:
                await _dispatch_all(host, vectors, check)
            finally:
                closing.cancel()


async def _dispatch_all(host: Host, vectors: tuple[Vector, ...], check: CheckResult) -> None:
    for vector in vectors:
        event = vector.event
        chain = [reg for reg in host.chain(event.name) if reg.match is None or reg.match(event)]
        if not chain:
            continue
        limit = sum(reg.budget or CHECK_BUDGET for reg in chain) + _GRACE
        started = time.monotonic()
        with anyio.move_on_after(limit) as waiting:
            await host.dispatch(event, terminal=ScriptedTerminal(vector.script()))
        # A handler that blocks the event loop is never interrupted: the clock tells instead.
        if waiting.cancelled_caught or time.monotonic() - started > limit:
            check.failed(
                f"{vector.id}: the chain was still running {limit:.2g}s in with a stalled "
                "clock/store; a handler outlived its budget (it ignores cancellation or blocks)"
            )
            return
        check.passed()
