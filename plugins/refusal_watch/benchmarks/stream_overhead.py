"""Cost refusal-watch adds to a streamed step, a TaskStop call and prompt.context, via the host."""

from __future__ import annotations

import resource
import statistics
import time
from collections.abc import AsyncGenerator, Sequence
from typing import Any

import anyio
from framework import FakeClock, Host, PromptContext, StreamChunk, ToolCall, ToolResult, TurnStep

import refusal_watch

CHUNKS = 200
STEPS = 200
CALLS = 2000
REPEATS = 5


async def chunks(reason: str) -> AsyncGenerator[StreamChunk, None]:
    for index in range(CHUNKS - 1):
        yield StreamChunk(kind="text", text=f"t{index}")
    yield StreamChunk(kind="stop", stop_reason=reason)


def make_host(plugins: Sequence[Any]) -> Host:
    return Host(
        plugins=list(plugins),
        entry_points=False,
        store="memory://",
        clock=FakeClock(),
        env={"CLAUDE_REFUSAL_WATCH": "1"},
        config={},
    )


async def per_chunk_ns(plugins: Sequence[Any], reason: str) -> float:
    async with make_host(plugins) as host:
        started = time.perf_counter_ns()
        for index in range(STEPS):

            async def terminal(_: Any) -> AsyncGenerator[StreamChunk, None]:
                return chunks(reason)

            event = TurnStep(session_id="s", turn_id=f"t{index}", model="m")
            stream = (await host.dispatch(event, terminal=terminal)).result
            async for _ in stream:
                pass
        elapsed = time.perf_counter_ns() - started
    return elapsed / (STEPS * CHUNKS)


async def per_call_us(plugins: Sequence[Any], event: Any, terminal: Any) -> float:
    async with make_host(plugins) as host:
        started = time.perf_counter_ns()
        for _ in range(CALLS):
            await host.dispatch(event, terminal=terminal)
        elapsed = time.perf_counter_ns() - started
    return elapsed / CALLS / 1000


async def main() -> None:
    async def stopped(_: Any) -> ToolResult:
        return ToolResult(output={"message": "m", "task_id": "b1", "task_type": "local_bash"})

    stop = ToolCall(session_id="s", tool_use_id="u", tool="TaskStop")
    context = PromptContext(session_id="s")
    rows: list[tuple[str, str, list[float]]] = [
        ("step chunk, no plugin", "ns", []),
        ("step chunk, refusal-watch, end_turn", "ns", []),
        ("step chunk, refusal-watch, refusal", "ns", []),
        ("TaskStop outside window, no plugin", "us", []),
        ("TaskStop outside window, refusal-watch", "us", []),
        ("prompt.context with rule, refusal-watch", "us", []),
    ]
    for _ in range(REPEATS):
        rows[0][2].append(await per_chunk_ns([], "end_turn"))
        rows[1][2].append(await per_chunk_ns([refusal_watch], "end_turn"))
        rows[2][2].append(await per_chunk_ns([refusal_watch], "refusal"))
        rows[3][2].append(await per_call_us([], stop, stopped))
        rows[4][2].append(await per_call_us([refusal_watch], stop, stopped))
        rows[5][2].append(await per_call_us([refusal_watch], context, None))
    for label, unit, samples in rows:
        print(f"{label:42s} median {statistics.median(samples):9.2f} {unit}")
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"peak RSS {peak_kib / 1024:.1f} MiB")


if __name__ == "__main__":
    anyio.run(main)
