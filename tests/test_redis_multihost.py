"""Hosts in separate processes sharing one Redis: exact counts, and surviving a Redis restart."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from redis_server import RedisServer, redis_client_module, require_module, start_or_explain
from store_worker import COUNTER_PLUGIN, counter_plugin, run_workers, start_workers

from framework import Host, Store, ToolCall, ToolResult
from framework.stores.base import StoreError
from framework.stores.factory import open_backend

redis = redis_client_module()

PASSWORD = "shared-team-secret"

pytestmark = pytest.mark.anyio


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    running = start_or_explain(tmp_path / "redis", password=PASSWORD)
    yield running
    running.stop()


def _machines(server: RedisServer, tmp_path: Path) -> list[dict[str, str]]:
    """Each "machine" has its own home and data dir; only the Redis URL and password are shared,
    and the password travels by environment, not in the URL."""
    machines = []
    for name in ("machine-a", "machine-b"):
        home = tmp_path / name
        home.mkdir()
        machines.append(
            {
                "HOOKCHAIN_STORE": f"redis://127.0.0.1:{server.port}/0",
                "HOOKCHAIN_STORE_PASSWORD": PASSWORD,
                "HOME": str(home),
                "XDG_DATA_HOME": str(home / "data"),
            }
        )
    return machines


def test_two_hosts_four_processes_count_exactly(server: RedisServer, tmp_path: Path) -> None:
    machines = _machines(server, tmp_path)
    made = run_workers(
        [machines[0], machines[0], machines[1], machines[1]],
        key="tool-calls",
        count=500,
        tasks=2,
        workdir=tmp_path,
        through="host",
    )
    assert made == [500] * 4
    raw = redis.Redis(port=server.port, password=PASSWORD, decode_responses=True)
    try:
        assert raw.get(f"hookchain:{COUNTER_PLUGIN}:tool-calls") == "2000"
    finally:
        raw.close()


async def _wait_for(condition: Any, what: str) -> None:
    for _ in range(3000):
        if condition():
            return
        await anyio.sleep(0.01)
    raise AssertionError(f"still waiting after 30 s for {what}")


async def test_a_redis_restart_mid_run_fails_open_then_recovers(server: RedisServer) -> None:
    url = server.url
    ran: list[ToolResult] = []
    store_errors: list[StoreError] = []
    direct = {"ok": 0, "tried": 0}

    async def terminal(event: Any) -> ToolResult:
        return ToolResult(output="ran")

    async with Host(plugins=[counter_plugin("calls")], entry_points=False, store=url) as host:
        backend = open_backend(url)

        def failed() -> int:
            return sum(host.failures.values())

        async def hook_traffic() -> None:
            index = 0
            while True:
                index += 1
                event = ToolCall(session_id="s1", tool_use_id=f"t{index}", tool="Bash")
                # Each call is bounded: a dead store must never stall the hook path.
                with anyio.fail_after(10):
                    outcome = await host.dispatch(event, terminal=terminal)
                ran.append(outcome.result)
                await anyio.sleep(0.002)

        async def direct_traffic() -> None:
            while True:
                direct["tried"] += 1
                try:
                    with anyio.fail_after(10):
                        await backend.update("direct", lambda value: (value or 0) + 1)
                    direct["ok"] += 1
                except StoreError as error:
                    store_errors.append(error)
                await anyio.sleep(0.002)

        async with anyio.create_task_group() as group:
            group.start_soon(hook_traffic)
            group.start_soon(direct_traffic)
            await _wait_for(lambda: len(ran) >= 20 and direct["ok"] >= 20, "traffic before")
            await anyio.to_thread.run_sync(server.stop)
            before_restart = len(ran)
            await _wait_for(lambda: failed() >= 3 and len(store_errors) >= 3, "errors while down")
            assert len(ran) > before_restart  # the hook path kept answering while Redis was down
            await anyio.to_thread.run_sync(server.start)
            failures_at_restart, ok_at_restart = failed(), direct["ok"]
            await _wait_for(lambda: direct["ok"] >= ok_at_restart + 20, "recovery")
            await anyio.sleep(0.2)
            calls_mark, failures_mark = len(ran), failed()
            await _wait_for(lambda: len(ran) >= calls_mark + 20, "hook traffic after")
            group.cancel_scope.cancel()

        # Once recovered, no more failures: every later call counted.
        assert failed() == failures_mark
        assert failures_mark >= failures_at_restart
        assert all(result.output == "ran" for result in ran)
        assert host.failures.get((COUNTER_PLUGIN, "tool.call"), 0) == failed()

        for error in store_errors:
            text = str(error)
            assert f"redis://:***@127.0.0.1:{server.port}/0" in text
            assert PASSWORD not in text
            assert "Error" in text

        # The data set survived the restart; every reported success is in the count (the call
        # cancelled at the end may or may not have counted).
        counted = await host.store.namespace(COUNTER_PLUGIN).get("calls")
        assert len(ran) - failed() <= counted <= len(ran) + 1
        direct_value = await backend.get("direct")
        assert isinstance(direct_value, int)
        assert direct["ok"] <= direct_value <= direct["tried"]
        await backend.aclose()


GATED = "git push --force origin main"


def test_an_approval_is_consumed_through_one_host_only(server: RedisServer, tmp_path: Path) -> None:
    require_module("write_guard", "the write-guard plugin (plugins/write_guard) is not installed")
    from write_guard._cli import approve_in

    rounds = 4
    go = tmp_path / "approval-go"
    machine_a, machine_b = _machines(server, tmp_path)
    workers = start_workers(
        [machine_a, machine_b], key=GATED, count=rounds, tasks=1, go=go, through="approval"
    )

    async def approve() -> None:
        backend = open_backend(server.url)
        try:
            # What `hookchain approve` does, from a third machine.
            await approve_in(Store(backend), GATED, int(time.time() * 1000))
        finally:
            await backend.aclose()

    try:
        for index in range(rounds):
            signal = tmp_path / f"approval-go-{index}"
            if index % 2 == 0:  # odd rounds: no approval at all, both hosts must refuse
                anyio.run(approve)
            signal.touch()
            verdicts = _collect(tmp_path, signal.name, workers)
            expected = ["denied", "ran"] if index % 2 == 0 else ["denied", "denied"]
            assert sorted(verdicts) == expected, f"round {index}: {verdicts}"
        for worker in workers:
            _out, err = worker.communicate(timeout=60)
            assert worker.returncode == 0, err[-3000:]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()


def _collect(folder: Path, name: str, workers: list[subprocess.Popen[str]]) -> list[str]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = sorted(folder.glob(f"{name}.*"))
        if len(found) == len(workers):
            # The writer may not have finished: wait for every verdict to be complete.
            verdicts = [path.read_text() for path in found]
            if all(verdict in {"ran", "denied"} for verdict in verdicts):
                return verdicts
        crashed = [worker for worker in workers if worker.poll() not in (None, 0)]
        if crashed:
            raise AssertionError(crashed[0].communicate()[1][-3000:])
        time.sleep(0.01)
    raise AssertionError(f"no verdicts for {name} within 60 s")
