"""Cost of one `tool.call` dispatch through the host, against pluggy and a hand-written onion.

Also the cost of making an event deeply read-only (`freeze_us`): building a `ToolCall` from a
typical nested input, against the same model with a plain (mutable) mapping field. Events are
made once per harness event, so this is paid once per event, not per handler.
"""

from __future__ import annotations

import contextlib
import resource
import sys
import time
import types
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pluggy
from pydantic import BaseModel, ConfigDict, Field

from framework import Host, HostSettings, PluginInfo, ToolCall, ToolResult, hookimpl

# Many short rounds, best of them: a round the machine's other work interrupts is dropped, as
# `timeit` keeps its best (the cases interleave, so load hits them alike).
ROUNDS = 40
CALLS = 5_000
EVENT = ToolCall(session_id="bench", tool_use_id="t1", tool="Bash", input={"command": "ls"})
RESULT = ToolResult(output="ok")
BUILDS = 5_000
# A MultiEdit's input: the nested shape freezing has to walk.
TOOL_INPUT: dict[str, Any] = {
    "file_path": "/work/project/src/module.py",
    "edits": [{"old_string": "x" * 40, "new_string": "y" * 40, "replace_all": False}] * 4,
}


class PlainToolCall(BaseModel):
    """`ToolCall`'s fields with a plain mapping: what an event cost before it was frozen."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    session_id: str = "default"
    tool_use_id: str
    tool: str
    input: dict[str, Any] = Field(default_factory=dict)
    agent_id: str | None = None


def passthrough_plugin(handlers: int) -> types.ModuleType:
    module = types.ModuleType("bench_passthrough")
    module.plugin = PluginInfo(name="bench", contract=">=1,<2")  # type: ignore[attr-defined]

    @hookimpl
    def register(on: Any, options: Any) -> None:
        for _ in range(handlers):

            async def handler(engine: Any, event: Any, call_next: Any) -> Any:
                return await call_next(event)

            on("tool.call", handler)

    module.register = register  # type: ignore[attr-defined]
    return module


def pluggy_call() -> Callable[[], Any]:
    spec = pluggy.HookspecMarker("bench")
    impl = pluggy.HookimplMarker("bench")

    class Specs:
        @spec
        def call(self, event: Any) -> Any: ...

    class Tool:
        @impl
        def call(self, event: Any) -> Any:
            return RESULT

    manager = pluggy.PluginManager("bench")
    manager.add_hookspecs(Specs)
    manager.register(Tool())
    for _ in range(4):

        class Wrapper:
            @impl(wrapper=True)
            def call(self, event: Any) -> Any:
                return (yield)

        manager.register(Wrapper())
    hook = manager.hook.call
    return lambda: hook(event=EVENT)


async def onion_call() -> Callable[[], Awaitable[Any]]:
    async def tool(event: Any) -> Any:
        return RESULT

    layer: Callable[[Any], Awaitable[Any]] = tool
    for _ in range(4):

        def wrap(inner: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Awaitable[Any]]:
            async def outer(event: Any) -> Any:
                return await inner(event)

            return outer

        layer = wrap(layer)
    final = layer
    return lambda: final(EVENT)


async def terminal(event: Any) -> Any:
    return RESULT


async def main() -> None:
    async with contextlib.AsyncExitStack() as stack:
        hosts: dict[str, Host] = {}
        for handlers in (0, 1, 4, 16):
            host = Host(
                plugins=[passthrough_plugin(handlers)],
                entry_points=False,
                settings=HostSettings(store="memory://"),
                config={},
            )
            hosts[f"host_{handlers}"] = await stack.enter_async_context(host)
        best = await measure(hosts)

    for name in ("host_0", "host_1", "host_4", "host_16", "pluggy_4", "onion_4"):
        print(f"{name:10s} {best[name]:7.2f} us/call")
    built = measure_builds()
    print(f"event_frozen {built['frozen']:7.2f} us/build")
    print(f"event_plain  {built['plain']:7.2f} us/build")
    print(f"freeze_us = {built['frozen'] - built['plain']:.2f} (once per event)")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak_rss_mb = {peak_mb:.1f}")
    print(f"python = {sys.version.split()[0]}")
    print(f"ratio host_4/pluggy_4 = {best['host_4'] / best['pluggy_4']:.2f}")


async def measure(hosts: dict[str, Host]) -> dict[str, float]:
    sync_cases: dict[str, Callable[[], Any]] = {"pluggy_4": pluggy_call()}
    onion = await onion_call()
    best: dict[str, float] = {}

    # Rounds interleave the cases so that load on the machine hits them alike; best of rounds.
    for _ in range(ROUNDS):
        for name, host in hosts.items():
            dispatch = host.dispatch
            started = time.perf_counter()
            for _ in range(CALLS):
                await dispatch(EVENT, terminal)
            record(best, name, started)
        for name, call in sync_cases.items():
            started = time.perf_counter()
            for _ in range(CALLS):
                call()
            record(best, name, started)
        started = time.perf_counter()
        for _ in range(CALLS):
            await onion()
        record(best, "onion_4", started)
    return best


def measure_builds() -> dict[str, float]:
    best: dict[str, float] = {}
    for _ in range(7):
        for name, model in (("frozen", ToolCall), ("plain", PlainToolCall)):
            started = time.perf_counter()
            for _ in range(BUILDS):
                model(session_id="bench", tool_use_id="t1", tool="MultiEdit", input=TOOL_INPUT)
            per_build = (time.perf_counter() - started) / BUILDS * 1e6
            best[name] = min(best.get(name, float("inf")), per_build)
    return best


def record(best: dict[str, float], name: str, started: float) -> None:
    per_call = (time.perf_counter() - started) / CALLS * 1e6
    best[name] = min(best.get(name, float("inf")), per_call)


if __name__ == "__main__":
    anyio.run(main)
