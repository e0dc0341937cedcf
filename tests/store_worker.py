"""A separate process that hammers one store counter: `python store_worker.py KEY COUNT TASKS GO`.

The store comes from `HOOKCHAIN_STORE`; the worker waits for the file GO to exist so that all
workers start together, then runs COUNT atomic increments of KEY spread over TASKS tasks and
prints how many it made.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio

from framework._store import Store, open_backend


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


def run_workers(
    hosts: Sequence[Mapping[str, str]], *, key: str, count: int, tasks: int, workdir: Path
) -> list[int]:
    """Start one worker per environment in `hosts`, release them together, return their counts."""
    repo = Path(__file__).resolve().parent.parent
    go = workdir / f"go-{key}"
    procs = []
    for host_env in hosts:
        env = {**os.environ, **host_env}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo), env.get("PYTHONPATH")]))
        procs.append(
            subprocess.Popen(
                [sys.executable, __file__, key, str(count), str(tasks), str(go)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    go.touch()
    made = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        if proc.returncode != 0:
            raise AssertionError(f"worker failed ({proc.returncode}):\n{err[-3000:]}")
        made.append(int(out.strip()))
    return made


def main() -> None:
    key, count, tasks, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
    deadline = time.monotonic() + 60
    while not go.exists():
        if time.monotonic() > deadline:
            raise SystemExit("the start signal never came")
        time.sleep(0.005)
    print(anyio.run(hammer, key, count, tasks), flush=True)


if __name__ == "__main__":
    main()
