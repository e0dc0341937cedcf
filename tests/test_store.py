"""One store test suite, run against every backend: memory, SQLite and Redis."""

from __future__ import annotations

import math
import re
import socket
import stat
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from redis_server import RedisServer, redis_client_module, start_or_explain
from store_worker import run_workers

from framework.core.host import Host
from framework.stores.base import MemoryBackend, Store, StoreBackend, StoreError
from framework.stores.factory import open_backend
from framework.stores.sqlite import SQLiteBackend

BACKENDS = ["memory", "sqlite", "redis"]


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = start_or_explain(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture(params=BACKENDS)
async def backend(
    request: pytest.FixtureRequest, tmp_path: Path, anyio_backend: str
) -> AsyncIterator[StoreBackend]:
    opened: StoreBackend
    if request.param == "memory":
        opened = open_backend("memory://")
    elif request.param == "sqlite":
        opened = open_backend(f"sqlite:///{tmp_path / 'store.sqlite3'}")
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        # Each test gets a prefix of its own on the shared server.
        opened = open_backend(f"{server.url}?prefix=t-{request.node.name}:")
    yield opened
    await opened.clear()
    await opened.aclose()


pytestmark = pytest.mark.anyio


async def test_get_set_delete_round_trip(backend: StoreBackend) -> None:
    value = {"count": 3, "tags": ["a", "b"], "nested": {"ok": True, "none": None}, "f": 1.5}
    assert await backend.get("k") is None
    await backend.set("k", value)
    assert await backend.get("k") == value
    await backend.set("k", "replaced")
    assert await backend.get("k") == "replaced"
    await backend.delete("k")
    assert await backend.get("k") is None
    await backend.delete("k")  # deleting a missing key is not an error


async def test_values_come_back_as_copies(backend: StoreBackend) -> None:
    original = {"items": [1, 2]}
    await backend.set("k", original)
    original["items"].append(3)
    fetched = await backend.get("k")
    assert isinstance(fetched, dict)
    fetched["items"].append(4)
    assert await backend.get("k") == {"items": [1, 2]}


async def test_keys_by_prefix_in_key_order(backend: StoreBackend) -> None:
    names = ["b:2", "a:10", "a:2", "a:1", "ab", "a*x", "a?y", "a[z]", "a\\w", "é", "a:é", "z"]
    for index, name in enumerate(names):
        await backend.set(name, index)
    assert await backend.keys() == sorted(names)
    assert await backend.keys("a:") == ["a:1", "a:10", "a:2", "a:é"]
    # Pattern characters in a prefix are literal, never wildcards.
    assert await backend.keys("a*") == ["a*x"]
    assert await backend.keys("a?") == ["a?y"]
    assert await backend.keys("a[") == ["a[z]"]
    assert await backend.keys("a\\") == ["a\\w"]
    assert await backend.keys("nothing") == []


async def test_update_is_atomic_under_concurrent_tasks(backend: StoreBackend) -> None:
    store = Store(backend)

    async def increments() -> None:
        for _ in range(25):
            await store.update("counter", lambda value: value + 1, default=0)

    async with anyio.create_task_group() as group:
        for _ in range(12):
            group.start_soon(increments)
    assert await store.get("counter") == 300


async def test_update_returns_the_new_value_and_sees_the_old(backend: StoreBackend) -> None:
    seen: list[Any] = []

    def append(current: Any) -> Any:
        seen.append(current)
        return [*(current or []), len(seen)]

    assert await backend.update("log", append) == [1]
    assert await backend.update("log", append) == [1, 2]
    assert seen[0] is None
    assert seen[-1] == [1]


async def test_update_that_raises_leaves_the_value(backend: StoreBackend) -> None:
    await backend.set("k", 5)

    def explode(current: Any) -> Any:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        await backend.update("k", explode)
    assert await backend.get("k") == 5
    # The store is still usable afterwards (no transaction left open).
    assert await backend.update("k", lambda value: [value, value]) == [5, 5]


async def test_namespaces_keep_plugins_apart(backend: StoreBackend) -> None:
    root = Store(backend)
    alpha, beta = root.namespace("alpha"), root.namespace("beta")
    nested = alpha.namespace("session-1")
    await alpha.set("k", "from alpha")
    await beta.set("k", "from beta")
    await nested.set("k", "from alpha's session")
    assert await alpha.get("k") == "from alpha"
    assert await beta.get("k") == "from beta"
    assert await nested.get("k") == "from alpha's session"
    assert await backend.get("alpha:k") == "from alpha"
    assert await backend.get("alpha:session-1:k") == "from alpha's session"
    assert await beta.keys() == ["k"]
    assert await alpha.keys() == ["k", "session-1:k"]
    assert await alpha.get("missing", default=7) == 7
    assert await beta.update("n", lambda value: value + 1, default=41) == 42

    assert await nested.clear() == 1
    assert await alpha.keys() == ["k"]
    assert await beta.clear() == 2
    assert await root.keys() == ["alpha:k"]


async def test_ttl_expires_values(backend: StoreBackend) -> None:
    # A full second of life: the presence checks must hold on a loaded machine too.
    await backend.set("short", 1, ttl=1.0)
    await backend.set("long", 2)
    await backend.update("updated", lambda value: 3, ttl=1.0)
    assert await backend.get("short") == 1
    assert await backend.keys() == ["long", "short", "updated"]
    await anyio.sleep(1.2)
    assert await backend.get("short") is None
    assert await backend.get("updated") is None
    assert await backend.get("long") == 2
    assert await backend.keys() == ["long"]
    # An expired key starts afresh in update.
    assert await backend.update("short", lambda value: value) is None


async def test_store_default_ttl_is_a_backstop(backend: StoreBackend) -> None:
    state = Store(backend, "session-x:", ttl=0.3)
    await state.set("a", 1)
    await state.update("b", lambda value: 2)
    await state.set("kept", 3, ttl=60)
    await anyio.sleep(0.6)
    assert await state.keys() == ["kept"]


async def test_set_without_ttl_clears_an_earlier_ttl(backend: StoreBackend) -> None:
    await backend.set("k", 1, ttl=0.3)
    await backend.set("k", 2)
    await anyio.sleep(0.6)
    assert await backend.get("k") == 2


async def test_clear_by_prefix_counts_what_it_removed(backend: StoreBackend) -> None:
    for name in ["run:1", "run:2", "run:3", "runner", "other"]:
        await backend.set(name, name)
    assert await backend.clear("run:") == 3
    assert await backend.keys() == ["other", "runner"]
    assert await backend.clear("run:") == 0
    assert await backend.clear() == 2
    assert await backend.keys() == []


@pytest.mark.parametrize("value", [object(), {1, 2}, b"bytes", {"nested": [object()]}], ids=type)
async def test_only_json_values_are_stored(backend: StoreBackend, value: Any) -> None:
    with pytest.raises(StoreError, match="JSON"):
        await backend.set("k", value)
    assert await backend.get("k") is None


async def test_update_to_a_non_json_value_is_refused(backend: StoreBackend) -> None:
    await backend.set("k", [1])
    with pytest.raises(StoreError, match="JSON"):
        await backend.update("k", lambda value: object())
    assert await backend.get("k") == [1]


@pytest.mark.parametrize("value", [math.nan, math.inf])
async def test_non_finite_floats_are_refused(backend: StoreBackend, value: float) -> None:
    with pytest.raises(StoreError, match="JSON"):
        await backend.set("k", {"x": value})


# --- URLs --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.org/x", "unknown store URL scheme 'ftp'"),
        ("store.db", "unknown store URL scheme ''"),
        ("sqlite://", "has no path"),
        ("sqlite:///", "has no path"),
        ("sqlite://relative.db", "is relative"),
        ("redis://127.0.0.1:notaport/0", "port is not a number"),
        ("redis://127.0.0.1:6379/zero", "database must be a number"),
        ("redis:///0", "no host"),
        ("redis://127.0.0.1:6379/0?colour=blue", "unknown query argument 'colour'"),
        ("redis://127.0.0.1:6379/0?timeout=-1", "timeout must be a positive number"),
        ("redis://127.0.0.1:6379/0?timeout=soon", "timeout must be a positive number"),
    ],
)
def test_bad_urls_are_refused_clearly(url: str, message: str) -> None:
    with pytest.raises(StoreError, match=re.escape(message)):
        open_backend(url)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_unreachable_redis_names_the_url_without_the_password() -> None:
    redis_client_module()
    port = _closed_port()
    with pytest.raises(StoreError) as caught:
        open_backend(f"redis://admin:hunter2-secret@127.0.0.1:{port}/3")
    text = str(caught.value)
    assert f"redis://admin:***@127.0.0.1:{port}/3" in text
    assert "unreachable" in text
    assert "hunter2" not in text
    assert "hunter2" not in repr(caught.value.__cause__)


def test_a_redis_that_never_answers_fails_within_the_timeout() -> None:
    redis_client_module()
    # A listener that accepts connections and never replies: the worst case for a client.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        outcome: list[BaseException] = []

        def attempt() -> None:
            try:
                open_backend(f"redis://127.0.0.1:{port}/0?timeout=0.3")
            except BaseException as error:
                outcome.append(error)

        worker = threading.Thread(target=attempt, daemon=True)
        worker.start()
        # Generous against a loaded machine, yet far below a hang.
        worker.join(10)
        assert not worker.is_alive(), "opening a silent Redis hung"
    assert len(outcome) == 1
    assert isinstance(outcome[0], StoreError)
    assert f"127.0.0.1:{port}" in str(outcome[0])


# --- SQLite specifics ---------------------------------------------------------------------------


async def test_sqlite_files_are_private(tmp_path: Path) -> None:
    path = tmp_path / "fresh" / "store.sqlite3"
    sqlite = SQLiteBackend(path)
    try:
        await sqlite.set("secret", "value")
        await sqlite.update("n", lambda value: 1)
        files = [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]
        for file in files:
            assert file.exists(), file
            assert stat.S_IMODE(file.stat().st_mode) == 0o600, file
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    finally:
        await sqlite.aclose()


async def test_sqlite_keeps_data_across_reopen(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    first = open_backend(url)
    await first.set("k", {"v": 1})
    await first.aclose()
    second = open_backend(url)
    try:
        assert await second.get("k") == {"v": 1}
    finally:
        await second.aclose()


def test_sqlite_unopenable_path_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    with pytest.raises(StoreError, match="cannot open SQLite store"):
        open_backend(f"sqlite:///{blocker / 'store.sqlite3'}")


def test_sqlite_increments_from_four_processes_add_up(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.sqlite3'}"
    made = run_workers(
        [{"HOOKCHAIN_STORE": url}] * 4, key="hits", count=500, tasks=4, workdir=tmp_path
    )
    assert made == [500] * 4

    async def total() -> Any:
        backend = open_backend(url)
        try:
            return await backend.get("store-worker:hits")
        finally:
            await backend.aclose()

    assert anyio.run(total) == 2000


def test_memory_backend_is_what_memory_urls_open() -> None:
    assert isinstance(open_backend("memory://"), MemoryBackend)


async def test_a_ttl_that_is_not_positive_is_refused(backend: StoreBackend) -> None:
    store = Store(backend).namespace("plugin")
    with pytest.raises(StoreError, match="positive"):
        await store.set("k", 1, ttl=0)
    with pytest.raises(StoreError, match="positive"):
        await store.update("k", lambda value: 1, ttl=-5)
    assert await store.get("k") is None


async def test_a_store_is_process_local_only_when_its_host_opened_memory_itself(
    tmp_path: Path,
) -> None:
    # Plugins skip write-behind copies when this is True: a store another host can read (a
    # backend object handed in, a file) saying so would lose their state.
    assert Store(MemoryBackend()).process_local is False
    assert Store(MemoryBackend(), process_local=True).namespace("p").process_local is True
    cases = [
        ("memory://", True),
        (MemoryBackend(), False),
        (f"sqlite:///{tmp_path / 'store.sqlite3'}", False),
    ]
    for spec, expected in cases:
        async with Host(store=spec, entry_points=False) as host:
            assert host.store.process_local is expected
            assert host.session_store("s1").namespace("p").process_local is expected
