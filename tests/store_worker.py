"""A separate process that hammers one store counter: `store_worker.py KEY COUNT TASKS GO [MODE]`.

The store comes from `HOOKCHAIN_STORE`; the worker waits for the file GO to exist so that all
workers start together, then runs COUNT atomic increments of KEY spread over TASKS tasks and
prints how many it made. With `host`, each increment is a plugin handler's `engine.store.update`
inside a `tool.call` dispatched through a real `Host`, as a hook process would run it. With
`approval`, the process is a host with write-guard that, in each of COUNT rounds, waits for the
file GO-<round>, tries the gated command KEY once and writes what happened to GO-<round>.<pid>.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from framework import CallNext, Engine, Host, PluginInfo, ToolCall, ToolResult, hookimpl
from framework.stores.base import Store
from framework.stores.factory import open_backend

COUNTER_PLUGIN = "store-worker"


async def hammer(key: str, count: int, tasks: int) -> int:
    backend = open_backend(os.environ["HOOKCHAIN_STORE"])
    store = Store(backend).namespace("store-worker")
    made = 0

    async def increments(share: int) -> None:
        nonlocal made
        for _ in range(share):
            await store.update(key, lambda value: value + 1, default=0)
            made += 1

    try:
        async with anyio.create_task_group() as group:
            for index in range(tasks):
                group.start_soon(increments, count // tasks + (index < count % tasks))
    finally:
        await backend.aclose()
    return made


def counter_plugin(key: str) -> types.ModuleType:
    """A plugin that counts every tool call in its store under `key`."""
    module = types.ModuleType("store_worker_counter")
    module.plugin = PluginInfo(name=COUNTER_PLUGIN, contract=">=1,<2")  # type: ignore[attr-defined]

    @hookimpl
    def register(on: Any, options: Any) -> None:
        async def count(engine: Engine, event: ToolCall, call_next: CallNext) -> Any:
            await engine.store.update(key, lambda value: value + 1, default=0)
            return await call_next(event)

        # Generous: contention on two shared cores must not turn into skipped increments.
        on("tool.call", count, budget=60)

    module.register = register  # type: ignore[attr-defined]
    return module


async def through_host(key: str, count: int, tasks: int) -> int:
    made = 0

    async def terminal(event: Any) -> ToolResult:
        return ToolResult(output="ran")

    async with Host(
        plugins=[counter_plugin(key)], entry_points=False, store=os.environ["HOOKCHAIN_STORE"]
    ) as host:

        async def calls(task: int, share: int) -> None:
            nonlocal made
            for index in range(share):
                event = ToolCall(
                    session_id=f"s{os.getpid()}-{task}",
                    tool_use_id=f"t{index}",
                    tool="Bash",
                    input={"command": "true"},
                )
                outcome = await host.dispatch(event, terminal=terminal)
                if outcome.result.output != "ran":
                    raise AssertionError(f"unexpected result {outcome.result!r}")
                made += 1

        async with anyio.create_task_group() as group:
            for index in range(tasks):
                group.start_soon(calls, index, count // tasks + (index < count % tasks))
        if host.failures:
            raise AssertionError(f"handler failures: {dict(host.failures)}")
    return made


async def approval_rounds(command: str, rounds: int, go: Path) -> int:
    import write_guard

    async def terminal(event: Any) -> ToolResult:
        return ToolResult(output="ran")

    async with Host(
        plugins=[write_guard], entry_points=False, store=os.environ["HOOKCHAIN_STORE"]
    ) as host:
        for index in range(rounds):
            signal = go.with_name(f"{go.name}-{index}")
            for _ in range(60_000):
                if signal.exists():
                    break
                await anyio.sleep(0.001)
            event = ToolCall(
                session_id=f"s{os.getpid()}",
                tool_use_id=f"t{index}",
                tool="Bash",
                input={"command": command},
            )
            outcome = await host.dispatch(event, terminal=terminal)
            verdict = "ran" if outcome.result.output == "ran" else "denied"
            signal.with_name(f"{signal.name}.{os.getpid()}").write_text(verdict)
    return rounds


def run_workers(
    hosts: Sequence[Mapping[str, str]],
    *,
    key: str,
    count: int,
    tasks: int,
    workdir: Path,
    through: str = "store",
) -> list[int]:
    """Start one worker per environment in `hosts`, release them together, return their counts."""
    go = workdir / f"go-{key}"
    procs = start_workers(hosts, key=key, count=count, tasks=tasks, go=go, through=through)
    go.touch()
    made = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        if proc.returncode != 0:
            raise AssertionError(f"worker failed ({proc.returncode}):\n{err[-3000:]}")
        made.append(int(out.strip()))
    return made


def start_workers(
    hosts: Sequence[Mapping[str, str]],
    *,
    key: str,
    count: int,
    tasks: int,
    go: Path,
    through: str,
) -> list[subprocess.Popen[str]]:
    """Start one worker per environment in `hosts`; they wait for the file `go`."""
    repo = Path(__file__).resolve().parent.parent
    procs = []
    for host_env in hosts:
        env = {**os.environ, **host_env}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo), env.get("PYTHONPATH")]))
        procs.append(
            subprocess.Popen(
                [sys.executable, __file__, key, str(count), str(tasks), str(go), through],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    return procs


def main() -> None:
    key, count, tasks, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
    mode = sys.argv[5] if len(sys.argv) > 5 else "store"
    if mode == "approval":
        print(anyio.run(approval_rounds, key, count, go), flush=True)
        return
    work = through_host if mode == "host" else hammer
    deadline = time.monotonic() + 60
    while not go.exists():
        if time.monotonic() > deadline:
            raise SystemExit("the start signal never came")
        time.sleep(0.005)
    print(anyio.run(work, key, count, tasks), flush=True)


if __name__ == "__main__":
    main()
