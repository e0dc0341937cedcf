"""`drain`: a stream of chunks in hand, and taps over it, read with no await, give exactly what
`async for` then `aclose` give: the same callbacks in the same order on the same chunks, the same
failures counted, the same actions, the stream closed, an escaping BaseException the same."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hostkit import make_plugin

import framework.replay.runner as runner_module
from framework import Host, HostSettings, StreamChunk, TurnStep, tap
from framework.core.tap import ChunkStream, drain
from framework.replay.reader import read_transcripts
from framework.replay.runner import replay_paths

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus" / "transcripts"
REFUSALS = (
    REPO / "plugins" / "refusal_watch" / "tests" / "data" / "refusal_stop.jsonl",
    REPO / "tests" / "data" / "claude_code" / "refusal_then_task_stop.jsonl",
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Halt(BaseException):
    """A plugin's own BaseException: taps let it through, so it ends the read."""


@dataclass(frozen=True)
class Plan:
    """What one tapping plugin's callbacks do: fail at a chunk, fail at the end, halt."""

    raise_at: int | None = None
    end_raises: bool = False
    halt_at: int | None = None


def tapper(name: str, plan: Plan, log: list[Any]) -> Any:
    def register(on: Any) -> None:
        async def watch(engine: Any, event: Any, call_next: Any) -> Any:
            stream = await call_next(event)
            count = itertools.count()

            def on_chunk(chunk: StreamChunk) -> None:
                at = next(count)
                log.append((name, "chunk", at, id(chunk)))
                if chunk.kind == "stop":
                    engine.ui.toast(f"{name} saw {chunk.stop_reason}")
                if at == plan.halt_at:
                    raise Halt
                if at == plan.raise_at:
                    raise RuntimeError("on_chunk bug")

            def on_end() -> None:
                log.append((name, "end"))
                engine.transcript.line(f"{name} ended")
                if plan.end_raises:
                    raise ValueError("on_end bug")

            def on_error(error: BaseException) -> None:
                log.append((name, "error", type(error).__name__))

            return tap(stream, on_chunk=on_chunk, on_end=on_end, on_error=on_error)

        on("turn.step", watch)

    return make_plugin(name, register)


def host_for(plans: Sequence[Plan], log: list[Any]) -> Host:
    plugins = [tapper(f"tap-{index}", plan, log) for index, plan in enumerate(plans)]
    settings = HostSettings(store="memory://")
    return Host(plugins=plugins, entry_points=False, settings=settings, config={})


async def read_with_async_for(stream: Any) -> None:
    """What the replay did before `drain`, and does for a stream that is not ready."""
    try:
        async for _ in stream:
            pass
    finally:
        await stream.aclose()


async def read_once(
    host: Host, chunks: tuple[StreamChunk, ...], log: list[Any], fast: bool
) -> tuple[Any, ...]:
    """One step dispatched and read one way: everything the read did, in order."""
    log.clear()
    before = dict(host.failures)
    below = ChunkStream(chunks)

    async def terminal(event: Any) -> Any:
        return below

    outcome = await host.dispatch(TurnStep(session_id="s", turn_id="t"), terminal)
    escaped = None
    try:
        if fast:
            assert drain(outcome.result)
        else:
            await read_with_async_for(outcome.result)
    except Halt:
        escaped = "Halt"
    failed = {key: n - before.get(key, 0) for key, n in host.failures.items()}
    pending = [(a.by, a.kind, a.text) for a in host.take_pending("s")]
    left = [chunk async for chunk in below]  # nothing: read to the end, or closed
    return (list(log), failed, pending, escaped, left)


async def assert_same_reads(
    plans: Sequence[Plan], scripts: Sequence[tuple[StreamChunk, ...]]
) -> int:
    log: list[Any] = []
    async with host_for(plans, log) as host:
        for chunks in scripts:
            slow = await read_once(host, chunks, log, fast=False)
            fast = await read_once(host, chunks, log, fast=True)
            assert fast == slow, (plans, chunks)
    return len(scripts)


def stop(reason: str = "end_turn") -> StreamChunk:
    return StreamChunk(kind="stop", stop_reason=reason)


SCRIPTS = (
    (),
    (stop(),),
    (*(StreamChunk(kind="text", text=t) for t in "abcd"), stop("refusal")),
)
LEVEL_PLANS = (
    Plan(),
    Plan(raise_at=0),
    Plan(raise_at=2, end_raises=True),
    Plan(halt_at=1),
    Plan(end_raises=True),
)


async def test_every_plan_of_up_to_three_taps_reads_the_same_with_and_without_awaits() -> None:
    cases = 0
    for depth in range(4):
        for plans in itertools.product(LEVEL_PLANS, repeat=depth):
            cases += await assert_same_reads(plans, SCRIPTS)
    assert cases == len(SCRIPTS) * sum(len(LEVEL_PLANS) ** d for d in range(4))


def corpus_steps() -> list[tuple[StreamChunk, ...]]:
    transcripts = read_transcripts(sorted(CORPUS.glob("*.jsonl")))
    steps = [s.chunks for session in transcripts.sessions for s in session.walk() if s.chunks]
    assert len(steps) > 100, f"expected the shared transcripts under {CORPUS}"
    return steps


async def test_every_recorded_step_of_the_shared_transcripts_reads_the_same() -> None:
    steps = corpus_steps()
    for plans in ((), (Plan(),), (Plan(raise_at=1), Plan(end_raises=True, halt_at=3))):
        assert await assert_same_reads(plans, steps) == len(steps)


async def test_a_stream_that_is_not_ready_is_left_unread() -> None:
    read: list[str] = []

    async def generated() -> AsyncIterator[StreamChunk]:
        read.append("pulled")
        yield stop()

    for stream in (generated(), tap(generated()), tap(tap(generated()))):
        assert drain(stream) is False
    assert drain([stop()]) is False
    assert read == []
    # A tap over a ready stream is ready; one over a tap of a generator is not.
    assert drain(tap(tap(ChunkStream((stop(),)))))


def replayed(report: Any, failures: Any) -> Any:
    return report.to_json(), dict(failures)


async def test_replays_through_refusal_watch_and_taps_report_the_same_either_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import refusal_watch

    log: list[Any] = []
    plugins = [
        refusal_watch,
        tapper("tap-a", Plan(raise_at=1), log),
        tapper("tap-b", Plan(end_raises=True), log),
    ]
    paths = [*sorted(CORPUS.glob("*.jsonl")), *REFUSALS]

    async def replay() -> Any:
        log.clear()
        report = await replay_paths(paths, plugins=plugins, entry_points=False)
        # Each replay reads the files again: chunks are compared by place, not by identity.
        return report.to_json(), [entry[:3] for entry in log]

    fast = await replay()
    monkeypatch.setattr(runner_module, "drain", lambda stream: False)
    slow = await replay()
    assert fast == slow
    report, seen = fast
    kinds = {(a["by"], a["kind"]) for a in report["actions"]}
    assert ("refusal-watch", "toast") in kinds and ("tap-a", "toast") in kinds
    assert report["summary"]["handler_failures"]["tap-a/turn.step"] > 0
    assert any(entry[1] == "end" for entry in seen)
