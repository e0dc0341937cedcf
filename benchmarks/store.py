"""Store throughput: get, set and update per second for memory, SQLite and Redis, in one run.

Run: `python benchmarks/store.py [OPS]`. Redis is a throwaway `redis-server` on a free loopback
port (Debian package `redis-server`). Operations run one at a time from one task, as a hook does.
The last line is exactly `redis_update_per_s = N`.
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from redis_server import RedisServer  # noqa: E402

from framework.stores.base import Store  # noqa: E402
from framework.stores.factory import open_backend  # noqa: E402


async def rate(ops: int, operation: Callable[[int], Awaitable[object]]) -> float:
    started = time.perf_counter()
    for index in range(ops):
        await operation(index)
    return ops / (time.perf_counter() - started)


async def measure(url: str, ops: int) -> dict[str, float]:
    backend = open_backend(url)
    store = Store(backend).namespace("bench")
    value = {"tool": "Bash", "count": 3, "seen": ["a", "b", "c"]}
    try:
        rates = {
            "set": await rate(ops, lambda i: store.set(f"k{i % 100}", value)),
            "get": await rate(ops, lambda i: store.get(f"k{i % 100}")),
            "update": await rate(
                ops, lambda i: store.update("counter", lambda n: n + 1, default=0)
            ),
        }
        if await store.get("counter") != ops:
            raise SystemExit(f"{url}: the counter is wrong; the benchmark is invalid")
        await store.clear()
    finally:
        await backend.aclose()
    return rates


def main() -> None:
    ops = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        results["memory"] = anyio.run(measure, "memory://", ops)
        results["sqlite"] = anyio.run(measure, f"sqlite:///{scratch}/bench.sqlite3", ops)
        with RedisServer(Path(scratch) / "redis") as server:
            results["redis"] = anyio.run(measure, server.url, ops)
    print(f"ops per measurement: {ops}")
    for name, rates in results.items():
        line = "  ".join(f"{kind} {per_s:>10,.0f}/s" for kind, per_s in rates.items())
        print(f"{name:<7} {line}")
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"peak RSS: {peak_kib / 1024:.1f} MiB")
    print(f"redis_update_per_s = {results['redis']['update']:.0f}")


if __name__ == "__main__":
    main()
