"""refusal-watch through the real host: steps, turn ends, TaskStop, the log and sessions."""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from framework import (
    Action,
    FakeClock,
    Host,
    Outcome,
    SessionEnd,
    StreamChunk,
    ToolCall,
    ToolResult,
    TurnComplete,
    TurnResult,
    TurnStep,
    open_backend,
)
from structlog.testing import capture_logs

import refusal_watch
from refusal_watch import _runtime

pytestmark = pytest.mark.anyio

T0 = 1_700_000_000_000
PLUGIN = "refusal-watch"
GOOD = {"message": "Successfully stopped task", "task_id": "b7", "task_type": "local_bash"}


class ScriptedClock(FakeClock):
    """A FakeClock whose `now` can fail, answer junk or hang, and whose `sleep` can fail."""

    def __init__(self) -> None:
        super().__init__(start_ms=T0)
        self.now_calls = 0
        self.now_error: Exception | None = None
        self.now_value: object = None
        self.hold = anyio.Event()
        self.holding = False
        self.sleep_error: Exception | None = None

    async def now(self) -> int:
        self.now_calls += 1
        if self.holding:
            await self.hold.wait()
        if self.now_error is not None:
            raise self.now_error
        if self.now_value is not None:
            return self.now_value  # type: ignore[return-value]
        return self.ms

    async def sleep(self, ms: float) -> None:
        if self.sleep_error is not None:
            raise self.sleep_error
        await super().sleep(ms)

    def hang(self) -> None:
        self.holding = True
        self.hold = anyio.Event()

    def release(self) -> None:
        self.holding = False
        self.hold.set()


class GatedBackend:
    """A memory backend whose record writes can hang on a gate or fail."""

    def __init__(self) -> None:
        self.inner: Any = open_backend("memory://")
        self.gate: anyio.Event | None = None
        self.waiting = 0
        self.fail_sets = 0

    async def get(self, key: str) -> Any | None:
        return await self.inner.get(key)

    async def set(self, key: str, value: Any, *, ttl: float | None = None) -> None:
        if ":log:" in key:
            if self.fail_sets:
                self.fail_sets -= 1
                raise OSError("disk full")
            if self.gate is not None:
                gate = self.gate
                self.waiting += 1
                await gate.wait()
                self.waiting -= 1
        await self.inner.set(key, value, ttl=ttl)

    async def delete(self, key: str) -> None:
        await self.inner.delete(key)

    async def keys(self, prefix: str = "") -> list[str]:
        return list(await self.inner.keys(prefix))

    async def update(self, key: str, fn: Callable[[Any], Any], *, ttl: float | None = None) -> Any:
        return await self.inner.update(key, fn, ttl=ttl)

    async def clear(self, prefix: str = "") -> int:
        return int(await self.inner.clear(prefix))

    async def aclose(self) -> None:
        await self.inner.aclose()


async def chunks_of(*reasons: str, text: str = "hello") -> AsyncGenerator[StreamChunk, None]:
    yield StreamChunk(kind="text", text=text)
    for reason in reasons:
        yield StreamChunk(kind="stop", stop_reason=reason)


class Rig:
    """One host with refusal-watch, a scripted clock, a gated store and a settable local clock."""

    def __init__(self, host: Host, clock: ScriptedClock, backend: GatedBackend) -> None:
        self.host = host
        self.clock = clock
        self.backend = backend
        self.local: Callable[[], object] = lambda: float(clock.ms)
        self.actions: list[Action] = []
        self.runtimes: list[Any] = []

    def gather(self, session: str = "s1") -> list[Action]:
        """Collect actions taken outside dispatches, also from runtimes of ended sessions."""
        runtime = self.host.sessions.get(session)
        if runtime is not None and all(runtime is not seen for seen in self.runtimes):
            self.runtimes.append(runtime)
        for seen in self.runtimes:
            self.actions += seen.pending
            seen.pending = []
        return self.actions

    def texts(self, kind: str, session: str = "s1") -> list[str]:
        return [action.text for action in self.gather(session) if action.kind == kind]

    async def idle(self, rounds: int = 30) -> None:
        for _ in range(rounds):
            await anyio.lowlevel.checkpoint()
        self.gather()

    async def dispatch(self, event: Any, terminal: Any = None) -> Outcome:
        self.gather()
        outcome = await self.host.dispatch(event, terminal=terminal)
        self.gather()
        self.actions += outcome.actions
        return outcome

    async def open_step(
        self, stream: AsyncIterator[StreamChunk], **fields: Any
    ) -> AsyncIterator[StreamChunk]:
        event = TurnStep.model_construct(**{**STEP_DEFAULTS, **fields})

        async def terminal(_: Any) -> AsyncIterator[StreamChunk]:
            return stream

        outcome = await self.dispatch(event, terminal)
        result: AsyncIterator[StreamChunk] = outcome.result
        return result

    async def step(self, *reasons: str, **fields: Any) -> list[StreamChunk]:
        stream = await self.open_step(chunks_of(*reasons), **fields)
        seen = [chunk async for chunk in stream]
        await self.idle()
        return seen

    async def complete(self, reason: object = "refusal", **fields: Any) -> Outcome:
        event = TurnComplete.model_construct(**{**COMPLETE_DEFAULTS, "reason": reason, **fields})
        outcome = await self.dispatch(event)
        await self.idle()
        return outcome

    async def task_stop(
        self, output: object = GOOD, *, is_error: bool = False, session: str = "s1", **extra: Any
    ) -> Outcome:
        result = ToolResult(output=output, is_error=is_error, **extra)

        async def terminal(_: Any) -> ToolResult:
            return result

        event = ToolCall(session_id=session, tool_use_id="u1", tool="TaskStop", input={})
        outcome = await self.dispatch(event, terminal)
        await self.idle()
        return outcome

    async def end(self, session: str = "s1") -> Outcome:
        outcome = await self.dispatch(SessionEnd(session_id=session))
        await self.idle()
        return outcome

    async def records(self) -> dict[str, Any]:
        store = self.host.store.namespace(PLUGIN)
        return {key: await store.get(key) for key in await store.keys("log:")}

    def status(self) -> str:
        statuses = self.texts("status")
        assert statuses, "no status line was set"
        return statuses[-1]


STEP_DEFAULTS: Mapping[str, Any] = {
    "session_id": "s1",
    "turn_id": "t1",
    "agent_id": None,
    "step_index": 0,
    "model": "claude-test",
}
COMPLETE_DEFAULTS: Mapping[str, Any] = {
    "session_id": "s1",
    "turn_id": "t1",
    "agent_id": None,
    "stop_hook_active": False,
    "last_message": None,
}


@pytest.fixture
async def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Rig]:
    clock = ScriptedClock()
    backend = GatedBackend()
    options = {PLUGIN: {"passports_dir": str(tmp_path / "p"), "harness_dir": str(tmp_path / "v")}}
    host = Host(
        plugins=[refusal_watch],
        entry_points=False,
        store=backend,  # type: ignore[arg-type]
        clock=clock,
        env={},
        options=options,
        config={},
    )
    async with host:
        made = Rig(host, clock, backend)
        monkeypatch.setattr(_runtime, "local_clock", lambda: made.local())
        yield made
        if backend.gate is not None:
            backend.gate.set()
        clock.release()


def count_in(status: str) -> int:
    return int(status.split(" ", 1)[0])


def debug_lines(logs: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(entry["event"]) for entry in logs if entry.get("plugin") == PLUGIN]


# -- turn.step -------------------------------------------------------------------------------------


async def test_refusal_chunk_then_end_turn_toasts_once(rig: Rig) -> None:
    """T14: a refusal stop chunk followed by an end_turn stop gives exactly one toast."""
    await rig.step("refusal", "end_turn")
    assert len(rig.texts("toast")) == 1
    assert len(rig.texts("transcript")) == 1
    assert "turn t1" in rig.texts("toast")[0]


async def test_end_turn_is_silent(rig: Rig) -> None:
    """T14: a step that ends with end_turn gives no toast, line or status."""
    await rig.step("end_turn")
    assert rig.gather() == []


async def test_counter_grows_on_other_turns_and_after_clean_steps(rig: Rig) -> None:
    """T17: the count grows on another turn and after a clean step; a clock set back adds none."""
    await rig.step("refusal", turn_id="t1")
    await rig.step("end_turn", turn_id="t1")
    await rig.step("refusal", turn_id="t2")
    assert count_in(rig.status()) == 2
    rig.clock.set(T0 - 3_600_000)
    await rig.complete(turn_id="t2")
    assert count_in(rig.status()) == 2


async def test_two_concurrent_refusals_write_two_records(rig: Rig) -> None:
    """T20: two refusals at the same moment leave two records in the log."""
    first = await rig.open_step(chunks_of("refusal"), turn_id="a")
    second = await rig.open_step(chunks_of("refusal"), turn_id="b")
    await anext(first)
    await anext(second)
    await anext(first)
    await anext(second)
    await rig.idle()
    assert len(await rig.records()) == 2


async def test_clock_failure_keeps_toast_and_status_time(rig: Rig) -> None:
    """T21: a failing clock does not silence the toast; the status still shows HH:MM."""
    rig.clock.now_error = RuntimeError("clock down")
    with capture_logs() as logs:
        await rig.step("refusal")
    assert len(rig.texts("toast")) == 1
    assert "--:--" not in rig.status()
    assert any(line.startswith("clock:") for line in debug_lines(logs))


async def test_non_numeric_clock_opens_window_by_local_time(rig: Rig) -> None:
    """T22: a clock answering NaN opens the window by local time; the status shows no NaN."""
    rig.clock.now_value = math.nan
    await rig.step("refusal")
    assert "nan" not in rig.status().lower()
    records = list((await rig.records()).values())
    assert records[0]["time"] == str(T0)
    rig.clock.now_value = None
    await rig.task_stop()
    assert len(rig.texts("toast")) == 2


async def test_error_below_reaches_caller_as_same_object(rig: Rig) -> None:
    """T23: an error from the stream below after a refusal reaches the caller as the same object."""
    boom = ValueError("below")

    async def failing() -> AsyncGenerator[StreamChunk, None]:
        yield StreamChunk(kind="stop", stop_reason="refusal")
        raise boom

    stream = await rig.open_step(failing())
    await anext(stream)
    with pytest.raises(ValueError) as caught:
        await anext(stream)
    assert caught.value is boom
    assert len(rig.texts("toast")) == 1


async def test_close_from_above_closes_below(rig: Rig) -> None:
    """T24: closing the stream after a refusal keeps the toast and closes the stream below."""
    closed = anyio.Event()

    async def below() -> AsyncGenerator[StreamChunk, None]:
        try:
            yield StreamChunk(kind="stop", stop_reason="refusal")
            yield StreamChunk(kind="text", text="more")
        finally:
            closed.set()

    stream = await rig.open_step(below())
    await anext(stream)
    await stream.aclose()  # type: ignore[attr-defined]
    assert closed.is_set()
    assert len(rig.texts("toast")) == 1


async def test_throw_from_above_reaches_below(rig: Rig) -> None:
    """T25: an error thrown in from above reaches the generator below; its recovery comes back."""

    async def below() -> AsyncGenerator[StreamChunk, None]:
        try:
            yield StreamChunk(kind="text", text="a")
        except KeyError:
            yield StreamChunk(kind="text", text="recovered")

    stream = await rig.open_step(below())
    await anext(stream)
    recovered = await stream.athrow(KeyError("x"))  # type: ignore[attr-defined]
    assert recovered.text == "recovered"


async def test_failing_next_does_not_close_below(rig: Rig) -> None:
    """T26: when the iterator below raises from its next, its close is not called."""

    class Below:
        closes = 0

        def __aiter__(self) -> Below:
            return self

        async def __anext__(self) -> StreamChunk:
            raise RuntimeError("pull failed")

        async def aclose(self) -> None:
            Below.closes += 1

    stream = await rig.open_step(Below())
    with pytest.raises(RuntimeError):
        await anext(stream)
    assert Below.closes == 0


async def test_dedup_record_ends_with_complete(rig: Rig) -> None:
    """T27: a turn's dedup record ends with its complete; a second complete counts again."""
    await rig.step("refusal")
    await rig.complete()
    assert count_in(rig.status()) == 1
    await rig.complete()
    assert count_in(rig.status()) == 2


async def test_status_has_model_and_time_and_toast_failure_goes_to_debug(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """T28: the status holds the model and local HH:MM; a failing toast is a debug line."""
    await rig.step("end_turn")
    ui_type = type(rig.host.engine(PLUGIN, "s1").ui)

    def broken(self: Any, text: str, *, timeout_ms: int | None = None) -> None:
        raise RuntimeError("ui gone")

    monkeypatch.setattr(ui_type, "toast", broken)
    with capture_logs() as logs:
        await rig.step("refusal")
    status = rig.status()
    assert "claude-test" in status
    assert _times_hhmm(T0) in status
    assert "toast: delivery failed (RuntimeError)" in debug_lines(logs)
    assert rig.texts("transcript")


def _times_hhmm(ms: float) -> str:
    from refusal_watch._times import hhmm

    return hhmm(ms)


async def test_session_end_resets_counter_and_passes_result(rig: Rig) -> None:
    """T29: session.end resets the session's counter and returns downstream's result."""
    await rig.step("refusal")
    outcome = await rig.end()
    assert outcome.result is None
    await rig.step("refusal")
    assert count_in(rig.status()) == 1


async def test_hung_write_releases_caller_after_five_seconds(rig: Rig) -> None:
    """T34: a hung write holds the caller at most 5 s of clock time; debug names the delay."""
    rig.backend.gate = anyio.Event()
    done = anyio.Event()
    with capture_logs() as logs:
        async with anyio.create_task_group() as group:

            async def call() -> None:
                await rig.dispatch(TurnComplete(session_id="s1", turn_id="t1", reason="refusal"))
                done.set()

            group.start_soon(call)
            await rig.idle()
            assert rig.backend.waiting == 1
            rig.clock.advance(4_999)
            await rig.idle()
            assert not done.is_set()
            rig.clock.advance(1)
            await rig.idle()
            assert done.is_set()
    assert any("longer than 5000 ms" in line for line in debug_lines(logs))
    rig.backend.gate.set()
    await rig.idle()
    assert len(await rig.records()) == 1


async def test_write_hanging_across_session_end_is_kept(rig: Rig) -> None:
    """T35: a write still hanging when the session ends is not lost; both records stay."""
    rig.backend.gate = anyio.Event()
    await rig.step("refusal", turn_id="a")
    await rig.end()
    gate = rig.backend.gate
    rig.backend.gate = None
    await rig.step("refusal", turn_id="b")
    gate.set()
    await rig.idle()
    assert len(await rig.records()) == 2


async def test_clock_back_does_not_sweep_other_dedup(rig: Rig) -> None:
    """T36: a clock set back does not remove another turn's dedup record."""
    await rig.step("refusal", turn_id="t1")
    await rig.step("refusal", turn_id="t2")
    rig.clock.set(T0 - 86_400_000)
    await rig.complete(turn_id="t1")
    assert count_in(rig.status()) == 2


async def test_asend_value_reaches_below(rig: Rig) -> None:
    """T37: a value sent from above reaches the generator below."""
    received: list[object] = []

    async def below() -> AsyncGenerator[StreamChunk, object]:
        got = yield StreamChunk(kind="text", text="a")
        received.append(got)
        yield StreamChunk(kind="stop", stop_reason="end_turn")

    stream = await rig.open_step(below())
    await anext(stream)
    await stream.asend("hello")  # type: ignore[attr-defined]
    assert received == ["hello"]


async def test_store_failure_spares_next_write(rig: Rig) -> None:
    """T38: a failing store write does not stop the next one; debug names the store channel."""
    rig.backend.fail_sets = 1
    with capture_logs() as logs:
        await rig.step("refusal", turn_id="a")
        await rig.step("refusal", turn_id="b")
    assert "store: record not written (OSError)" in debug_lines(logs)
    assert len(await rig.records()) == 1


async def test_no_task_stop_toast_after_session_end(rig: Rig) -> None:
    """T39: after session.end the TaskStop window is closed."""
    await rig.step("refusal")
    await rig.end()
    await rig.task_stop()
    assert len(rig.texts("toast")) == 1


async def test_task_stop_without_window_reads_no_clock(rig: Rig) -> None:
    """T41: a TaskStop with no window, refused or not, never reads the clock."""
    await rig.task_stop(is_error=True)
    await rig.task_stop()
    assert rig.clock.now_calls == 0
    assert rig.texts("toast") == []


async def test_non_numeric_clock_is_not_record_time(rig: Rig) -> None:
    """T42: a non-numeric clock answer is not the record's time; local time is."""
    rig.clock.now_value = "soon"
    rig.local = lambda: float(T0 + 7)
    await rig.step("refusal")
    (record,) = (await rig.records()).values()
    assert record["time"] == str(T0 + 7)


@pytest.mark.parametrize("output", [[GOOD], {}, {"message": "only"}])
async def test_only_task_stop_records_toast(rig: Rig, output: object) -> None:
    """T43: a list, an empty or an incomplete record gives no TaskStop toast."""
    await rig.step("refusal")
    await rig.task_stop(output)
    assert len(rig.texts("toast")) == 1


async def test_late_write_does_not_overwrite_passed_record(rig: Rig) -> None:
    """T44: a write that waited does not overwrite one that went through meanwhile."""
    rig.backend.gate = anyio.Event()
    await rig.step("refusal", turn_id="a")
    gate = rig.backend.gate
    rig.backend.gate = None
    await rig.step("refusal", turn_id="b")
    gate.set()
    await rig.idle()
    turns = sorted(record["turn"] for record in (await rig.records()).values())
    assert turns == ["a", "b"]


async def test_sleep_failure_releases_caller_at_once(rig: Rig) -> None:
    """T45: a failing clock sleep lets the caller go at once; the write ends in the background."""
    rig.backend.gate = anyio.Event()
    rig.clock.sleep_error = RuntimeError("no timers")
    with capture_logs() as logs:
        await rig.complete(turn_id="a")
    lines = debug_lines(logs)
    assert "clock: sleep() failed (RuntimeError)" in lines
    assert any("ended by a clock failure" in line and "not confirmed" in line for line in lines)
    rig.backend.gate.set()
    rig.backend.gate = None
    await rig.complete(turn_id="b")
    assert len(await rig.records()) == 2


async def test_wait_limit_counts_per_caller(rig: Rig) -> None:
    """T46: the 5 s limit runs from each caller's own start, not once per module."""
    rig.backend.gate = anyio.Event()
    first_done, second_done = anyio.Event(), anyio.Event()
    async with anyio.create_task_group() as group:

        async def call(turn: str, done: anyio.Event) -> None:
            await rig.dispatch(TurnComplete(session_id="s1", turn_id=turn, reason="refusal"))
            done.set()

        group.start_soon(call, "a", first_done)
        await rig.idle()
        rig.clock.advance(3_000)
        group.start_soon(call, "b", second_done)
        await rig.idle()
        rig.clock.advance(2_000)
        await rig.idle()
        assert first_done.is_set()
        assert not second_done.is_set()
        rig.clock.advance(3_000)
        await rig.idle()
        assert second_done.is_set()
    rig.backend.gate.set()


async def test_log_keeps_newest_hundred(rig: Rig) -> None:
    """T47: 105 records leave the newest 100; the first five keys are deleted."""
    for index in range(105):
        await rig.step("refusal", turn_id=f"t{index}")
    records = await rig.records()
    assert len(records) == 100
    turns = {record["turn"] for record in records.values()}
    assert turns == {f"t{index}" for index in range(5, 105)}


async def test_old_log_array_untouched_and_uncounted(rig: Rig) -> None:
    """T48: the old `log` array is neither changed nor read; new records use their own keys."""
    store = rig.host.store.namespace(PLUGIN)
    await store.set("log", [{"old": True}])
    for index in range(101):
        await rig.step("refusal", turn_id=f"t{index}")
    assert await store.get("log") == [{"old": True}]
    assert len(await rig.records()) == 100


async def test_old_log_outside_the_limit(rig: Rig) -> None:
    """T57: the old `log` key does not take one of the 100 places."""
    store = rig.host.store.namespace(PLUGIN)
    await store.set("log", ["x"] * 5)
    for index in range(100):
        await rig.step("refusal", turn_id=f"t{index}")
    assert len(await rig.records()) == 100
    assert "log" in await store.keys("log")


async def test_thousand_turns_and_one_complete(rig: Rig) -> None:
    """T51: 1001 refused turns and the first one's complete count 1001; only its key goes."""
    for index in range(1001):
        stream = await rig.open_step(chunks_of("refusal"), turn_id=f"t{index}")
        async for _ in stream:
            pass
    await rig.idle(200)
    await rig.complete(turn_id="t0")
    assert count_in(rig.status()) == 1001
    await rig.complete(turn_id="t1")
    assert count_in(rig.status()) == 1001
    await rig.complete(turn_id="t0")
    assert count_in(rig.status()) == 1002


async def test_is_error_gives_no_stop_toast(rig: Rig) -> None:
    """T53: a TaskStop answered with is_error gives no toast."""
    await rig.step("refusal")
    await rig.task_stop(is_error=True)
    assert len(rig.texts("toast")) == 1


async def test_no_output_gives_no_stop_toast(rig: Rig) -> None:
    """T55: a TaskStop with no output gives no toast."""
    await rig.step("refusal")
    await rig.task_stop(None)
    assert len(rig.texts("toast")) == 1


@pytest.mark.parametrize("output", [None, "Successfully stopped task b7"])
async def test_null_or_text_output_gives_no_stop_toast(rig: Rig, output: object) -> None:
    """T60: a TaskStop output of None or a string gives no toast."""
    await rig.step("refusal")
    await rig.task_stop(output)
    assert len(rig.texts("toast")) == 1


async def test_error_flag_decides_stop_toast(rig: Rig) -> None:
    """T61: a full record with is_error set gives no toast; with is_error False it does."""
    await rig.step("refusal")
    await rig.task_stop(is_error=True)
    assert len(rig.texts("toast")) == 1
    await rig.task_stop(is_error=False)
    toasts = rig.texts("toast")
    assert len(toasts) == 2
    assert "b7" in toasts[1]


async def test_denied_stop_gives_no_toast(rig: Rig) -> None:
    """T19: only a successful stop is announced, and the announcement names task and agent."""
    await rig.step("refusal")
    denied = ToolResult.denied("not allowed", by="someone")

    async def terminal(_: Any) -> ToolResult:
        return denied

    await rig.dispatch(ToolCall(session_id="s1", tool_use_id="u", tool="TaskStop"), terminal)
    assert len(rig.texts("toast")) == 1
    await rig.task_stop()
    toast = rig.texts("toast")[-1]
    assert "b7" in toast
    assert "main loop" in toast


async def test_toast_at_stop_chunk_before_stream_ends(rig: Rig) -> None:
    """T65: the toast comes with the stop chunk, before the stream below ends, and only once."""
    more = anyio.Event()

    async def below() -> AsyncGenerator[StreamChunk, None]:
        yield StreamChunk(kind="stop", stop_reason="refusal")
        await more.wait()
        yield StreamChunk(kind="stop", stop_reason="refusal")

    stream = await rig.open_step(below())
    await anext(stream)
    assert len(rig.texts("toast")) == 1
    more.set()
    async for _ in stream:
        pass
    assert len(rig.texts("toast")) == 1


async def test_two_refusal_chunks_one_toast(rig: Rig) -> None:
    """T71: two refusal stop chunks in one stream give exactly one toast."""
    await rig.step("refusal", "refusal")
    assert len(rig.texts("toast")) == 1
    assert count_in(rig.status()) == 1


async def test_toast_at_once_status_after_clock(rig: Rig) -> None:
    """T72: toast and transcript line come at the stop chunk; the status waits for the clock."""
    rig.clock.hang()
    stream = await rig.open_step(chunks_of("refusal"))
    await anext(stream)
    await anext(stream)
    await rig.idle()
    assert len(rig.texts("toast")) == 1
    assert len(rig.texts("transcript")) == 1
    assert rig.texts("status") == []
    rig.clock.release()
    await rig.idle()
    assert count_in(rig.status()) == 1


async def stop_while_hung(rig: Rig) -> None:
    """Run a TaskStop while the clock hangs; check its toast, then let the clock answer."""
    async with anyio.create_task_group() as group:
        group.start_soon(rig.task_stop)
        await rig.idle()
        rig.clock.advance(5_000)  # the stop's record waits on the hung clock; give up on it
        await rig.idle()
        assert len(rig.texts("toast")) == 2
        rig.clock.release()


async def test_hung_clock_does_not_hold_the_step(rig: Rig) -> None:
    """T73: a hung clock never holds the step's chunks; the window opens by local time meanwhile."""
    rig.clock.hang()
    seen = await rig.step("refusal")
    assert [chunk.kind for chunk in seen] == ["text", "stop"]
    await stop_while_hung(rig)


async def test_stop_while_window_opens(rig: Rig) -> None:
    """T74: a stop while the window is opening (clock not answered yet) gives its toast."""
    rig.clock.hang()
    await rig.step("refusal")
    rig.local = lambda: float(T0 + 1_799_999)
    await stop_while_hung(rig)


async def test_refusal_outliving_session_end(rig: Rig) -> None:
    """T76: a refusal settled after session.end holds no window and is not counted; it is logged."""
    rig.clock.hang()
    await rig.step("refusal")
    await rig.end()
    rig.clock.release()
    await rig.idle()
    assert rig.texts("status") == []
    await rig.task_stop()
    assert len(rig.texts("toast")) == 1
    assert len(await rig.records()) == 1


async def test_complete_wait_ends_with_cancellation(rig: Rig) -> None:
    """T77: turn.complete waits for the clock only while the dispatch is alive."""
    rig.clock.hang()
    with anyio.move_on_after(0.2) as scope:
        await rig.host.dispatch(TurnComplete(session_id="s1", turn_id="t1", reason="refusal"))
    assert scope.cancelled_caught
    rig.clock.release()


async def test_stop_begun_before_refusal(rig: Rig) -> None:
    """T80: a stop begun before a refusal is not judged by it; one begun after is."""
    answer = anyio.Event()

    async def slow(_: Any) -> ToolResult:
        await answer.wait()
        return ToolResult(output=GOOD)

    async with anyio.create_task_group() as group:
        group.start_soon(
            rig.dispatch, ToolCall(session_id="s1", tool_use_id="u", tool="TaskStop"), slow
        )
        await rig.idle()
        await rig.step("refusal")
        answer.set()
    await rig.idle()
    assert len(rig.texts("toast")) == 1
    await rig.task_stop()
    assert len(rig.texts("toast")) == 2


async def test_stop_without_window_never_reads_clock(rig: Rig) -> None:
    """T81: a stop entering without a window reads no clock, even if a window opens meanwhile."""
    answer = anyio.Event()

    async def slow(_: Any) -> ToolResult:
        await answer.wait()
        return ToolResult(output=GOOD)

    async with anyio.create_task_group() as group:
        group.start_soon(
            rig.dispatch, ToolCall(session_id="s1", tool_use_id="u", tool="TaskStop"), slow
        )
        await rig.idle()
        calls_before = rig.clock.now_calls
        assert calls_before == 0
        await rig.step("refusal")
        calls_after_step = rig.clock.now_calls
        answer.set()
    await rig.idle()
    assert rig.clock.now_calls == calls_after_step
    assert len(rig.texts("toast")) == 1


async def test_stop_outliving_session_end(rig: Rig) -> None:
    """T82: a stop that outlives session.end is not judged by the new session's window."""
    await rig.step("refusal")
    answer = anyio.Event()

    async def slow(_: Any) -> ToolResult:
        await answer.wait()
        return ToolResult(output=GOOD)

    async with anyio.create_task_group() as group:
        group.start_soon(
            rig.dispatch, ToolCall(session_id="s1", tool_use_id="u", tool="TaskStop"), slow
        )
        await rig.idle()
        await rig.end()
        await rig.step("refusal", turn_id="t2")
        answer.set()
    await rig.idle()
    assert len(rig.texts("toast")) == 2


async def test_complete_returning_after_session_end(rig: Rig) -> None:
    """T83: a complete answered after session.end toasts, with no status and no window."""
    answer = anyio.Event()

    async def slow(_: Any) -> TurnResult:
        await answer.wait()
        return TurnResult()

    async with anyio.create_task_group() as group:
        group.start_soon(
            rig.dispatch, TurnComplete(session_id="s1", turn_id="t1", reason="refusal"), slow
        )
        await rig.idle()
        await rig.end()
        answer.set()
    await rig.idle()
    assert len(rig.texts("toast")) == 1
    assert rig.texts("status") == []
    await rig.task_stop()
    assert len(rig.texts("toast")) == 1


async def test_step_begun_before_session_end(rig: Rig) -> None:
    """T84: a step begun before session.end sets no mark and no status in the new session."""
    stream = await rig.open_step(chunks_of("refusal"))
    await rig.end()
    async for _ in stream:
        pass
    await rig.idle()
    assert len(rig.texts("toast")) == 1
    assert rig.texts("status") == []
    await rig.task_stop()
    assert len(rig.texts("toast")) == 1
    assert len(await rig.records()) == 1


async def test_stop_returning_after_session_end_reads_no_clock(rig: Rig) -> None:
    """T94: a stop whose downstream returns after session.end reads no clock and gives no toast."""
    await rig.step("refusal")
    calls = rig.clock.now_calls
    answer = anyio.Event()

    async def slow(_: Any) -> ToolResult:
        await answer.wait()
        return ToolResult(output=GOOD)

    async with anyio.create_task_group() as group:
        group.start_soon(
            rig.dispatch, ToolCall(session_id="s1", tool_use_id="u", tool="TaskStop"), slow
        )
        await rig.idle()
        await rig.end()
        answer.set()
    await rig.idle()
    assert rig.clock.now_calls == calls
    assert len(rig.texts("toast")) == 1


async def stop_reading_clock(rig: Rig, *, end_meanwhile: bool) -> None:
    await rig.step("refusal")
    rig.local = lambda: float(T0 + 1_800_000)
    rig.clock.hang()
    async with anyio.create_task_group() as group:
        group.start_soon(rig.task_stop)
        await rig.idle()
        if end_meanwhile:
            await rig.end()
        rig.clock.release()
    await rig.idle()


async def test_stop_loses_toast_when_session_ends_during_clock(rig: Rig) -> None:
    """T95: a stop entering with an open window gives no toast if the session ends meanwhile."""
    await stop_reading_clock(rig, end_meanwhile=True)
    assert len(rig.texts("toast")) == 1


async def test_stop_reading_clock_toasts_once(rig: Rig) -> None:
    """T96: the same stop without session.end gives exactly one toast."""
    await stop_reading_clock(rig, end_meanwhile=False)
    assert len(rig.texts("toast")) == 2


async def test_stop_entered_inside_window_toasts_after_edge(rig: Rig) -> None:
    """T97: a stop entering inside the window toasts even when the core answers after the edge."""
    await rig.step("refusal")

    async def late(_: Any) -> ToolResult:
        rig.clock.advance(2 * 1_800_000)
        rig.local = lambda: float(T0 + 2 * 1_800_000)
        return ToolResult(output=GOOD)

    await rig.dispatch(ToolCall(session_id="s1", tool_use_id="u", tool="TaskStop"), late)
    await rig.idle()
    assert len(rig.texts("toast")) == 2


async def test_broken_local_clock_keeps_result(rig: Rig) -> None:
    """T99: a local clock that raises at the stop's entry does not take the call's result."""
    await rig.step("refusal")

    def broken() -> object:
        raise OSError("no time")

    rig.local = broken
    outcome = await rig.task_stop()
    assert isinstance(outcome.result, ToolResult)
    assert outcome.result.output == GOOD


async def test_broken_local_clock_keeps_mark_decision(rig: Rig) -> None:
    """T107: a local clock raising at the stop's entry does not undo the opening mark's verdict."""
    rig.clock.hang()
    await rig.step("refusal")

    def broken() -> object:
        raise OSError("no time")

    rig.local = broken
    await stop_while_hung(rig)


async def test_stop_inside_by_local_time_reads_no_clock(rig: Rig) -> None:
    """T108: a stop whose local entry time is inside toasts even if the clock would say outside."""
    await rig.step("refusal")
    calls = rig.clock.now_calls
    rig.clock.set(T0 + 5 * 1_800_000)
    rig.local = lambda: float(T0 + 60_000)
    await rig.dispatch(
        ToolCall(session_id="s1", tool_use_id="u", tool="TaskStop"),
        _answer(ToolResult(output=GOOD)),
    )
    assert rig.clock.now_calls == calls + 1, "only the log record after the toast reads it"
    assert len(rig.texts("toast")) == 2


def _answer(result: ToolResult) -> Callable[[Any], Any]:
    async def terminal(_: Any) -> ToolResult:
        return result

    return terminal


async def test_broken_local_clock_at_mark_keeps_toast(rig: Rig) -> None:
    """T116: a local clock raising while the mark is set does not cost the refusal's toast."""

    def broken() -> object:
        raise OSError("no time")

    rig.local = broken
    await rig.step("refusal")
    assert len(rig.texts("toast")) == 1
    assert count_in(rig.status()) == 1


async def test_unknown_time_shows_no_nan(rig: Rig) -> None:
    """T117: a refusal with no known time shows --:-- in the status, never NaN."""
    rig.clock.now_error = RuntimeError("down")
    rig.local = lambda: math.nan
    await rig.step("refusal")
    assert "--:--" in rig.status()
    assert "nan" not in rig.status().lower()


async def test_unknown_time_refusal_still_dedups(rig: Rig) -> None:
    """T118: a refusal with unknown time still merges its turn's complete."""
    rig.clock.now_error = RuntimeError("down")
    rig.local = lambda: math.inf
    await rig.step("refusal")
    await rig.complete()
    assert count_in(rig.status()) == 1


async def test_older_step_answering_late_keeps_dedup(rig: Rig) -> None:
    """T120: an older step of the turn whose clock answers later does not break the dedup."""
    rig.clock.hang()
    await rig.step("refusal", step_index=0)
    await rig.step("refusal", step_index=1)
    rig.clock.release()
    await rig.idle()
    await rig.complete()
    assert count_in(rig.status()) == 2


async def test_non_string_reason_text(rig: Rig) -> None:
    """T121: a complete whose last message is not text still announces the turn."""
    await rig.complete(last_message=12345)
    assert len(rig.texts("toast")) == 1


async def test_non_string_fields_still_give_texts(rig: Rig) -> None:
    """T122: non-string event fields still give toast and status text."""
    await rig.step("refusal", turn_id=4242, model=None)
    assert "turn 4242" in rig.texts("toast")[0]
    assert "model ?" in rig.status()


async def test_non_string_agent_name_toast(rig: Rig) -> None:
    """T133: a non-string agent id still gives the TaskStop toast text."""
    await rig.step("refusal")
    result = ToolResult(output=GOOD)
    fields: dict[str, Any] = {"tool_use_id": "u", "tool": "TaskStop", "input": {}, "agent_id": 77}
    event = ToolCall.model_construct(session_id="s1", **fields)
    await rig.dispatch(event, _answer(result))
    assert "agent 77" in rig.texts("toast")[-1]


async def test_task_stop_result_returned_as_is(rig: Rig) -> None:
    """T137: the core's TaskStop result comes back as the very same object."""
    await rig.step("refusal")
    result = ToolResult(output={"message": object()})
    outcome = await rig.dispatch(
        ToolCall(session_id="s1", tool_use_id="u", tool="TaskStop"), _answer(result)
    )
    assert outcome.result is result


async def test_chunks_pass_unchanged(rig: Rig) -> None:
    """T138: every chunk passes through as the same object, in order."""
    sent = [
        StreamChunk(kind="text", text="a", data={"odd": [1, 2]}),
        StreamChunk(kind="stop", stop_reason="refusal"),
    ]

    async def below() -> AsyncGenerator[StreamChunk, None]:
        for chunk in sent:
            yield chunk

    stream = await rig.open_step(below())
    seen = [chunk async for chunk in stream]
    assert all(a is b for a, b in zip(seen, sent, strict=True))


async def test_non_string_turn_id_transcript(rig: Rig) -> None:
    """T142: a turn id that is not text still gives the transcript line."""
    await rig.step("refusal", turn_id=("odd", 1))
    assert len(rig.texts("transcript")) == 1


async def test_non_numeric_local_time_named(rig: Rig) -> None:
    """T125: a local time that is not a number is a `clock` debug line."""
    rig.local = lambda: "noon"
    with capture_logs() as logs:
        await rig.step("refusal")
    assert "clock: local time is not a finite number" in debug_lines(logs)


async def test_infinite_local_time_named(rig: Rig) -> None:
    """T141: an infinite local time is a `clock` debug line."""
    rig.local = lambda: math.inf
    with capture_logs() as logs:
        await rig.step("refusal")
    assert "clock: local time is not a finite number" in debug_lines(logs)


async def test_local_and_clock_failure_named_once(rig: Rig) -> None:
    """T145: a broken local time and a failing clock name local time once per reading."""
    rig.local = lambda: math.nan
    rig.clock.now_error = RuntimeError("down")
    with capture_logs() as logs:
        await rig.complete()
    lines = debug_lines(logs)
    assert lines.count("clock: local time is not a finite number") == 2
    assert sum(line.startswith("clock: now() failed") for line in lines) == 1


async def test_merged_complete_before_step_clock(rig: Rig) -> None:
    """T146: a merged complete arriving before the step's clock answer shows the step's count."""
    rig.clock.hang()
    await rig.step("refusal")
    rig.clock.release()
    rig.clock.hang()
    async with anyio.create_task_group() as group:
        group.start_soon(rig.complete)
        await rig.idle()
        assert count_in(rig.status()) == 1
        rig.clock.release()


async def test_merged_complete_keeps_step_model(rig: Rig) -> None:
    """T128: a complete merged with its step shows the step's model in the status."""
    await rig.step("refusal", model="step-model")
    await rig.complete()
    assert "step-model" in rig.status()


async def test_a_refusal_its_step_reported_is_told_and_logged_once(rig: Rig) -> None:
    """Issue 22 (over T-list 'complete gives its own toast'): a refusal seen at its step and at
    its turn's complete is one toast, one transcript line and one log record; the complete only
    refreshes the status."""
    await rig.step("refusal")
    await rig.complete()
    assert len(rig.texts("toast")) == 1
    assert len(rig.texts("transcript")) == 1
    assert "seen at step" in rig.texts("toast")[0]
    assert [record["label"] for record in (await rig.records()).values()] == ["step"]
    assert count_in(rig.status()) == 1


async def test_a_refusal_seen_only_at_complete_is_told_and_logged_there(rig: Rig) -> None:
    """Issue 22: a complete whose step showed no refusal still tells, counts and logs it."""
    await rig.step("end_turn")
    await rig.complete()
    assert len(rig.texts("toast")) == 1
    assert "seen at complete" in rig.texts("toast")[0]
    assert [record["label"] for record in (await rig.records()).values()] == ["complete"]
    assert count_in(rig.status()) == 1


async def test_clean_step_rearms_complete(rig: Rig) -> None:
    """T129: a clean step of the turn makes its complete count again."""
    await rig.step("refusal")
    await rig.step("end_turn")
    await rig.complete()
    assert count_in(rig.status()) == 2


async def test_any_complete_clears_dedup(rig: Rig) -> None:
    """T130: a complete with any reason clears its turn's dedup record."""
    await rig.step("refusal")
    await rig.complete("end_turn")
    await rig.complete()
    assert count_in(rig.status()) == 2


async def test_other_agent_same_turn_counts(rig: Rig) -> None:
    """T131: the same turn id of another agent is another turn."""
    await rig.step("refusal", agent_id="a1")
    await rig.complete(agent_id=None)
    assert count_in(rig.status()) == 2


async def test_steps_answering_out_of_order_dedup(rig: Rig) -> None:
    """T132: steps of one turn answering the clock out of order still merge its complete."""
    rig.clock.hang()
    await rig.step("refusal", step_index=0, agent_id="a1")
    await rig.step("refusal", step_index=1, agent_id="a1")
    rig.clock.release()
    await rig.idle()
    await rig.complete(agent_id="a1")
    assert count_in(rig.status()) == 2


async def test_fields_stored_as_text(rig: Rig) -> None:
    """T134: log fields are stored as text."""
    await rig.step("refusal", step_index=3)
    (record,) = (await rig.records()).values()
    assert record["step"] == "3"
    assert record["count"] == "1"
    assert all(isinstance(value, str) for value in record.values())


async def test_step_ended_by_error_keeps_dedup(rig: Rig) -> None:
    """T148: a step of the turn ended by an exception does not clear its dedup record."""
    await rig.step("refusal")

    async def failing() -> AsyncGenerator[StreamChunk, None]:
        yield StreamChunk(kind="text", text="a")
        raise ValueError("cut")

    stream = await rig.open_step(failing())
    with pytest.raises(ValueError):
        async for _ in stream:
            pass
    await rig.complete()
    assert count_in(rig.status()) == 1


async def test_no_time_at_all_record_null(rig: Rig) -> None:
    """T149: with clock and local time both failing the record's time is null."""
    rig.clock.now_error = RuntimeError("down")
    rig.local = lambda: None
    await rig.step("refusal")
    (key, record), *_ = (await rig.records()).items()
    assert record["time"] is None
    assert key.startswith("log:null:")


async def test_step_without_turn_id_arms_nothing(rig: Rig) -> None:
    """T150: a step with no turn id arms no dedup; a complete with no turn id counts."""
    await rig.step("refusal", turn_id="")
    await rig.complete(turn_id="")
    assert count_in(rig.status()) == 2


async def test_infinite_step_number_as_text(rig: Rig) -> None:
    """T151: a non-finite step number is stored as text."""
    await rig.step("refusal", step_index=math.inf)
    (record,) = (await rig.records()).values()
    assert record["step"] == "inf"


async def test_unreadable_reason_keeps_dedup(rig: Rig) -> None:
    """T153: a complete whose reason is unreadable does not clear the dedup record."""
    await rig.step("refusal")
    await rig.complete(reason=404)
    await rig.complete()
    assert count_in(rig.status()) == 1


async def test_unreadable_agent_on_complete_keeps_main_dedup(rig: Rig) -> None:
    """T155: a complete with an unreadable agent id does not clear the main turn's record."""
    await rig.step("refusal")
    await rig.complete("end_turn", agent_id=12)
    await rig.complete()
    assert count_in(rig.status()) == 1


async def test_clean_step_with_unreadable_agent_keeps_main_dedup(rig: Rig) -> None:
    """T156: a clean step with an unreadable agent id does not clear the main turn's record."""
    await rig.step("refusal")
    await rig.step("end_turn", agent_id=12)
    await rig.complete()
    assert count_in(rig.status()) == 1


async def test_refusal_step_with_unreadable_agent_counts_alone(rig: Rig) -> None:
    """T157: a refusal step with an unreadable agent id arms nothing; its complete counts."""
    await rig.step("refusal", agent_id=12)
    await rig.complete(agent_id=12)
    assert count_in(rig.status()) == 2


async def test_refusal_complete_with_unreadable_agent_counts_alone(rig: Rig) -> None:
    """T158: a refusal complete with an unreadable agent id counts and clears no record."""
    await rig.step("refusal")
    await rig.complete(agent_id=12)
    assert count_in(rig.status()) == 2
    await rig.complete()
    assert count_in(rig.status()) == 2


async def test_budget_never_cancels_log_write(rig: Rig) -> None:
    """T34: the handler's own budget covers the 5 s wait, so the host never cancels it early."""
    registrations = rig.host.chain("turn.complete")
    assert registrations[0].budget is not None
    assert registrations[0].budget > 5.0


async def cancelled_while_writing(rig: Rig) -> list[str]:
    rig.backend.gate = anyio.Event()
    with capture_logs() as logs:
        with anyio.move_on_after(0.1):
            await rig.host.dispatch(TurnComplete(session_id="s1", turn_id="t1", reason="refusal"))
    rig.backend.gate.set()
    await rig.idle()
    return debug_lines(logs)


async def test_cancellation_releases_hung_write_and_names_itself(rig: Rig) -> None:
    """T78: cancelling the dispatch frees a caller stuck on a write and names the cancellation."""
    lines = await cancelled_while_writing(rig)
    waits = [line for line in lines if "wait for the record write" in line]
    assert len(waits) == 1
    assert "cancellation" in waits[0]
    assert not any(line.startswith("clock:") for line in lines)
    assert len(await rig.records()) == 1


async def test_cancellation_line_claims_no_background_write(rig: Rig) -> None:
    """T92: the cancellation line says the write is unconfirmed, not that it goes on."""
    lines = await cancelled_while_writing(rig)
    (wait,) = [line for line in lines if "wait for the record write" in line]
    assert "not confirmed" in wait
    assert "background" not in wait


async def test_sleep_failure_names_unconfirmed_write(rig: Rig) -> None:
    """T93: a failing sleep without cancellation names the write as unconfirmed."""
    rig.backend.gate = anyio.Event()
    rig.clock.sleep_error = OSError("timer")
    with capture_logs() as logs:
        await rig.complete()
    rig.backend.gate.set()
    (wait,) = [line for line in debug_lines(logs) if "wait for the record write" in line]
    assert "clock failure" in wait
    assert "not confirmed" in wait
