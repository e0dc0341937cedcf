"""Host guarantees around the chain: toasts, taps, the watchdog's registry, a blocked loop."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
import structlog
from hostkit import Terminal, bash, make_plugin

import framework.core.chain as chain_module
from framework import (
    Host,
    HostSettings,
    StreamChunk,
    ToolResult,
    TurnStep,
    tap,
)
from framework.core.chain import CallNext

pytestmark = pytest.mark.anyio


def host_with(*plugins: Any, budget: float = 2.0) -> Host:
    settings = HostSettings(store="memory://", handler_budget=budget)
    return Host(plugins=list(plugins), entry_points=False, settings=settings, config={})


async def test_toast_timeout_reaches_the_audit() -> None:
    def register(on: Any) -> None:
        async def toasts(engine: Any, event: Any, call_next: Any) -> Any:
            engine.ui.toast("slow down", timeout_ms=8000)
            engine.ui.toast("default")
            return await call_next(event)

        on("tool.call", toasts)

    async with host_with(make_plugin("toaster", register)) as host:
        outcome = await host.dispatch(bash(), Terminal())
    assert [(a.kind, a.text, a.timeout_ms) for a in outcome.actions] == [
        ("toast", "slow down", 8000),
        ("toast", "default", None),
    ]


async def test_a_bad_toast_timeout_is_the_plugins_failure_named() -> None:
    def register(on: Any) -> None:
        async def toasts(engine: Any, event: Any, call_next: Any) -> Any:
            engine.ui.toast("x", timeout_ms=-1)
            return await call_next(event)

        on("tool.call", toasts)

    terminal = Terminal()
    async with host_with(make_plugin("toaster", register)) as host:
        outcome = await host.dispatch(bash(), terminal)
        assert host.failures == {("toaster", "tool.call"): 1}
    assert outcome.result is terminal.result


async def _chunks() -> AsyncIterator[StreamChunk]:
    for text in ("a", "b", "c"):
        yield StreamChunk(kind="text", text=text)
    yield StreamChunk(kind="stop", stop_reason="end_turn")


async def test_tap_callback_failures_are_the_plugins_counted_and_logged_once_per_site() -> None:
    def register(on: Any) -> None:
        async def watch(engine: Any, event: Any, call_next: Any) -> Any:
            stream = await call_next(event)

            def on_chunk(chunk: StreamChunk) -> None:
                raise RuntimeError(f"secret {chunk.text}")

            return tap(stream, on_chunk=on_chunk)

        on("turn.step", watch)

    async def terminal(event: Any) -> Any:
        return _chunks()

    with structlog.testing.capture_logs() as logs:
        async with host_with(make_plugin("tapper", register)) as host:
            for step in range(2):
                outcome = await host.dispatch(
                    TurnStep(session_id="s", turn_id="t", step_index=step), terminal
                )
                texts = [chunk.text async for chunk in outcome.result]
                assert texts == ["a", "b", "c", ""]  # every chunk went on
            assert host.failures == {("tapper", "turn.step"): 2}
    warnings = [entry for entry in logs if entry["log_level"] == "warning"]
    assert len(warnings) == 1
    assert warnings[0]["plugin"] == "tapper" and "in tap on_chunk" in warnings[0]["site"]
    assert "secret" not in repr(warnings)


async def test_budgets_do_not_depend_on_the_chains_local_variable_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rename every local of a chain level: the watchdog still cuts a hang (it reads a registry)."""
    original = CallNext.__call__
    code = original.__code__
    renamed = tuple(
        name if index < code.co_argcount else f"renamed_{name}"
        for index, name in enumerate(code.co_varnames)
    )
    replacement = code.replace(co_varnames=renamed)
    monkeypatch.setattr(original, "__code__", replacement)
    monkeypatch.setattr(chain_module, "LEVEL_CODE", replacement)

    def register(on: Any) -> None:
        async def hangs(engine: Any, event: Any, call_next: Any) -> Any:
            await anyio.sleep(10)
            return await call_next(event)

        on("tool.call", hangs, budget=0.05)

    terminal = Terminal()
    async with host_with(make_plugin("hangs", register)) as host:
        with anyio.fail_after(2):
            outcome = await host.dispatch(bash(), terminal)
        assert host.failures == {("hangs", "tool.call"): 1}
    assert outcome.result is terminal.result


async def test_a_handler_blocking_the_event_loop_is_named_once_per_site_with_the_time() -> None:
    def register(on: Any) -> None:
        async def blocks(engine: Any, event: Any, call_next: Any) -> Any:
            time.sleep(0.35)  # noqa: ASYNC251 - the fault under test
            return await call_next(event)

        on("tool.call", blocks)

    with structlog.testing.capture_logs() as logs:
        async with host_with(make_plugin("blocker", register)) as host:
            for tool_use_id in ("t1", "t2"):
                outcome = await host.dispatch(bash(tool_use_id=tool_use_id), Terminal())
                assert outcome.result.output == "done"
                # The watch reports once the loop answers again.
                for _ in range(40):
                    await anyio.sleep(0.025)
                    if any(entry.get("plugin") == "blocker" for entry in logs):
                        break
    held = [entry for entry in logs if entry["event"].startswith("handler blocked")]
    assert len(held) == 1, logs
    assert held[0]["plugin"] == "blocker" and held[0]["event_name"] == "tool.call"
    assert held[0]["site"].startswith("test_core_guarantees.py:")
    assert held[0]["held_s"] >= 0.2
    assert not host.failures  # a blocked loop is slow, not a failed result


async def test_a_well_behaved_chain_is_never_reported_as_blocking() -> None:
    def register(on: Any) -> None:
        async def waits(engine: Any, event: Any, call_next: Any) -> Any:
            await anyio.sleep(0.3)
            return await call_next(event)

        on("tool.call", waits)

    with structlog.testing.capture_logs() as logs:
        async with host_with(make_plugin("waiter", register)) as host:
            await host.dispatch(bash(), Terminal())
    assert not [entry for entry in logs if entry["log_level"] == "warning"]


async def test_a_plain_asyncio_cancel_swallowed_after_call_next_still_reaches_the_caller() -> None:
    started = asyncio.Event()

    def register(on: Any) -> None:
        async def swallows(engine: Any, event: Any, call_next: Any) -> Any:
            try:
                return await call_next(event)
            except asyncio.CancelledError:
                return ToolResult(output="pretend ok")

        on("tool.call", swallows)

    async def terminal(event: Any) -> Any:
        started.set()
        await asyncio.sleep(10)
        return ToolResult(output="real")

    async with host_with(make_plugin("swallower", register)) as host:

        async def caller() -> Any:
            return await host.dispatch(bash(), terminal)

        task = asyncio.get_running_loop().create_task(caller())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert host.failures == {("swallower", "tool.call"): 1}


async def test_a_caller_that_never_yields_is_not_blamed_on_a_handler() -> None:
    """Dispatch after dispatch with no await that suspends: the loop is held, by the caller."""

    def register(on: Any) -> None:
        async def busy(engine: Any, event: Any, call_next: Any) -> Any:
            sum(range(3000))  # a little own work per call, far below any limit
            return await call_next(event)

        on("tool.call", busy)

    terminal = Terminal()
    with structlog.testing.capture_logs() as logs:
        async with host_with(make_plugin("quick", register)) as host:
            until = time.monotonic() + 0.8
            while time.monotonic() < until:
                await host.dispatch(bash(), terminal)
            await anyio.sleep(0.2)  # let the loop answer, so a report would be made now
    assert not [entry for entry in logs if entry["event"].startswith("handler blocked")]
