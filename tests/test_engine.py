"""The engine port: per-session state, the shared session.end budget, UI records, clock, tap."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from hostkit import Terminal, bash, make_plugin

from framework import (
    FakeClock,
    Host,
    HostSettings,
    SessionEnd,
    SessionStart,
    StreamChunk,
    TurnStep,
    tap,
)

pytestmark = pytest.mark.anyio


def host_with(*plugins: Any, **kwargs: Any) -> Host:
    settings = kwargs.pop("settings", HostSettings(store="memory://"))
    return Host(plugins=list(plugins), entry_points=False, settings=settings, config={}, **kwargs)


async def test_state_is_per_session_and_dropped_at_session_end_while_store_persists() -> None:
    def register(on: Any) -> None:
        async def count(engine: Any, event: Any, call_next: Any) -> Any:
            await engine.state.update("calls", lambda n: n + 1, default=0)
            await engine.store.update("calls", lambda n: n + 1, default=0)
            return await call_next(event)

        on("tool.call", count)

    async with host_with(make_plugin("counter", register)) as host:
        for session in ("s1", "s1", "s2"):
            await host.dispatch(bash(session_id=session), Terminal())
        assert await host.engine("counter", "s1").state.get("calls") == 2
        assert await host.engine("counter", "s2").state.get("calls") == 1
        await host.dispatch(SessionEnd(session_id="s1"))
        assert await host.store.backend.keys("session:s1:") == []
        assert await host.engine("counter", "s2").state.get("calls") == 1
        assert await host.engine("counter", "s3").store.get("calls") == 3


async def test_session_end_handlers_share_one_budget() -> None:
    finished: list[str] = []

    def slow(name: str) -> Any:
        def register(on: Any) -> None:
            async def handler(engine: Any, event: Any, call_next: Any) -> Any:
                await anyio.sleep(0.2)
                finished.append(name)
                return await call_next(event)

            on("session.end", handler, budget=5)

        return make_plugin(name, register)

    settings = HostSettings(store="memory://", session_end_budget=0.3)
    async with host_with(slow("a"), slow("b"), slow("c"), settings=settings) as host:
        started = anyio.current_time()
        with anyio.fail_after(2):
            await host.dispatch(SessionEnd(session_id="s1"))
        elapsed = anyio.current_time() - started
    assert finished == ["a"]
    assert elapsed < 1.0


async def test_session_start_sets_what_engine_session_reports() -> None:
    seen: list[tuple[str, str, str | None]] = []

    def register(on: Any) -> None:
        async def look(engine: Any, event: Any, call_next: Any) -> Any:
            seen.append((engine.session.id, engine.session.cwd, engine.session.harness_version))
            return await call_next(event)

        on("tool.call", look)

    async with host_with(make_plugin("look", register)) as host:
        await host.dispatch(SessionStart(session_id="s9", cwd="/work/x", harness_version="2.1.0"))
        await host.dispatch(bash(session_id="s9"), Terminal())
    assert seen == [("s9", "/work/x", "2.1.0")]


async def test_fake_clock_moves_only_when_told_and_stalls_on_request() -> None:
    clock = FakeClock(start_ms=1000)
    assert await clock.now() == 1000
    woke: list[int] = []

    async def sleeper() -> None:
        await clock.sleep(500)
        woke.append(await clock.now())

    async with anyio.create_task_group() as group:
        group.start_soon(sleeper)
        await anyio.sleep(0.01)
        clock.advance(400)
        await anyio.sleep(0.01)
        assert woke == []
        clock.advance(100)
    assert woke == [1500]
    clock.stall()
    with anyio.move_on_after(0.05) as scope:
        await clock.now()
    assert scope.cancelled_caught


async def test_commands_and_agents_are_visible_through_the_engine() -> None:
    listed: list[list[str]] = []

    def register(on: Any) -> None:
        async def look(engine: Any, event: Any, call_next: Any) -> Any:
            engine.commands.register("lookup", "show what was seen")
            listed.append([agent.id for agent in await engine.agents.list()])
            return await call_next(event)

        on("tool.call", look)

    async with host_with(make_plugin("look", register)) as host:
        call = bash().model_copy(update={"agent_id": "agent-7"})
        await host.dispatch(call, Terminal())
        assert host.commands["lookup"] == ("look", "show what was seen")
    assert listed == [["agent-7"]]


async def test_spawned_work_finishes_before_the_host_closes() -> None:
    done: list[str] = []

    def register(on: Any) -> None:
        async def later(engine: Any, event: Any, call_next: Any) -> Any:
            async def write() -> None:
                await anyio.sleep(0.02)
                done.append(event.tool_use_id)

            engine.spawn(write)
            return await call_next(event)

        on("tool.call", later)

    async with host_with(make_plugin("later", register)) as host:
        await host.dispatch(bash(), Terminal())
        assert done == []
    assert done == ["t1"]


async def chunks(*texts: str, stop: str = "end_turn") -> AsyncIterator[StreamChunk]:
    for text in texts:
        yield StreamChunk(kind="text", text=text)
    yield StreamChunk(kind="stop", stop_reason=stop)


async def test_tap_passes_every_chunk_in_order_and_isolates_a_raising_callback() -> None:
    seen: list[str] = []

    def on_chunk(chunk: StreamChunk) -> None:
        seen.append(chunk.kind)
        if len(seen) == 2:
            raise ValueError("callback bug")

    ended: list[bool] = []
    below = chunks("a", "b", "c")
    out = [
        chunk async for chunk in tap(below, on_chunk=on_chunk, on_end=lambda: ended.append(True))
    ]
    assert [chunk.text for chunk in out] == ["a", "b", "c", ""]
    assert out[-1].stop_reason == "end_turn"
    assert seen == ["text", "text"]  # switched off after it raised
    assert ended == [True]


async def test_tap_forwards_aclose_and_athrow_below() -> None:
    closed: list[str] = []

    async def below() -> AsyncIterator[StreamChunk]:
        try:
            while True:
                try:
                    yield StreamChunk(kind="text", text="x")
                except KeyError:
                    closed.append("thrown")
                    yield StreamChunk(kind="stop", stop_reason="error")
        finally:
            closed.append("closed")

    tapped = tap(below())
    await tapped.__anext__()
    chunk = await tapped.athrow(KeyError("up"))
    assert chunk.stop_reason == "error"
    await tapped.aclose()
    assert closed == ["thrown", "closed"]


async def test_tap_lets_an_error_from_below_through_as_the_same_object() -> None:
    boom = ConnectionError("stream broke")

    async def below() -> AsyncIterator[StreamChunk]:
        yield StreamChunk(kind="text", text="x")
        raise boom

    with pytest.raises(ConnectionError) as caught:
        async for _ in tap(below(), on_chunk=lambda chunk: None):
            pass
    assert caught.value is boom


async def test_toasts_while_a_stream_is_read_land_in_the_session_pending_list() -> None:
    def register(on: Any) -> None:
        async def watch(engine: Any, event: Any, call_next: Any) -> Any:
            stream = await call_next(event)

            def on_chunk(chunk: StreamChunk) -> None:
                if chunk.stop_reason == "refusal":
                    engine.ui.toast("refused")

            return tap(stream, on_chunk=on_chunk)

        on("turn.step", watch)

    async def terminal(event: Any) -> Any:
        return chunks("no", stop="refusal")

    async with host_with(make_plugin("watch", register)) as host:
        outcome = await host.dispatch(TurnStep(session_id="s1", turn_id="u1"), terminal)
        assert outcome.actions == []
        texts = [chunk.text async for chunk in outcome.result]
        assert texts == ["no", ""]
        pending = host.take_pending("s1")
    assert [(a.by, a.kind, a.text) for a in pending] == [("watch", "toast", "refused")]


async def test_actions_taken_outside_a_dispatch_are_not_lost_at_session_end() -> None:
    def register(on: Any) -> None:
        async def watch(engine: Any, event: Any, call_next: Any) -> Any:
            stream = await call_next(event)
            return tap(stream, on_end=lambda: engine.ui.toast("stream ended"))

        on("turn.step", watch)

    async def terminal(event: Any) -> Any:
        return chunks("x")

    async with host_with(make_plugin("watch", register)) as host:
        outcome = await host.dispatch(TurnStep(session_id="s1", turn_id="u1"), terminal)
        _ = [chunk async for chunk in outcome.result]
        ended = await host.dispatch(SessionEnd(session_id="s1"))
    assert [(a.by, a.text) for a in ended.actions] == [("watch", "stream ended")]


class StallingClear:
    """A store whose clear never answers, as a dead network store would behave."""

    def __init__(self) -> None:
        from framework import open_backend

        self.inner = open_backend("memory://")
        self.url = "memory://stalling"

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def clear(self, prefix: str = "") -> int:
        await anyio.sleep_forever()
        return 0


async def test_session_end_keeps_one_deadline_even_with_a_stalled_store() -> None:
    def register(on: Any) -> None:
        async def slow(engine: Any, event: Any, call_next: Any) -> Any:
            await anyio.sleep(0.2)
            return await call_next(event)

        on("session.end", slow)

    settings = HostSettings(store="memory://", session_end_budget=0.3)
    host = Host(
        plugins=[make_plugin("slow", register)],
        entry_points=False,
        settings=settings,
        config={},
        store=StallingClear(),  # type: ignore[arg-type]
    )
    async with host:
        started = anyio.current_time()
        with anyio.fail_after(2):
            await host.dispatch(SessionEnd(session_id="s1"))
        elapsed = anyio.current_time() - started
    assert 0.2 <= elapsed < 0.45


async def test_a_session_may_carry_its_own_environment_over_the_hosts() -> None:
    seen: list[tuple[str | None, str | None]] = []

    def register(on: Any) -> None:
        async def look(engine: Any, event: Any, call_next: Any) -> Any:
            seen.append((engine.env.get("HOME"), engine.env.get("SHELL")))
            return await call_next(event)

        on("tool.call", look)

    env = {"HOME": "/home/host-user", "SHELL": "/bin/sh"}
    async with host_with(make_plugin("look", register), env=env) as host:
        host.update_session("s1", env={"HOME": "/Users/recorded"}, cwd="/Users/recorded/app")
        await host.dispatch(bash(session_id="s1"), Terminal())
        await host.dispatch(bash(session_id="s2"), Terminal())
        assert host.engine("look", "s1").session.cwd == "/Users/recorded/app"
    assert seen == [("/Users/recorded", "/bin/sh"), ("/home/host-user", "/bin/sh")]


async def test_the_host_names_the_files_it_owns(tmp_path: Any) -> None:
    store = tmp_path / "store.sqlite3"
    config = tmp_path / "hookchain.toml"
    config.write_text("[hookchain]\n", encoding="utf-8")

    def register(on: Any) -> None:
        async def look(engine: Any, event: Any, call_next: Any) -> Any:
            owned.extend(engine.host_files)
            return await call_next(event)

        on("tool.call", look)

    owned: list[str] = []
    previous = os.environ.get("HOOKCHAIN_CONFIG")
    os.environ["HOOKCHAIN_CONFIG"] = str(config)
    try:
        # The four-slash form of an absolute path names the same file.
        plugins = [make_plugin("look", register)]
        host = Host(plugins=plugins, entry_points=False, store=f"sqlite:///{store}")
    finally:
        if previous is None:
            del os.environ["HOOKCHAIN_CONFIG"]
        else:
            os.environ["HOOKCHAIN_CONFIG"] = previous
    async with host:
        await host.dispatch(bash(), Terminal())
    assert str(store) in owned and f"{store}-wal" in owned
    assert str(config) in owned
