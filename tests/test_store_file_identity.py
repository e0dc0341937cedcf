"""The SQLite store against its real file: deleted or replaced under a host, expired rows."""

from __future__ import annotations

import sqlite3
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import anyio
import pytest
import structlog

import framework.stores.sqlite as sqlite_store
from framework.stores.sqlite import SQLiteBackend

pytestmark = pytest.mark.anyio


def _exists(path: Path) -> bool:
    return path.exists()


@pytest.fixture
def no_check_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_store, "IDENTITY_CHECK_S", 0.0)


def _remove(path: Path, *, replace: bool) -> None:
    """Delete the store file (as a person or a cleanup script does), or put another in its place."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    if replace:
        other = sqlite3.connect(path)
        other.execute(
            "CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT NOT NULL, expires_at REAL)"
        )
        other.execute("INSERT INTO kv VALUES ('theirs', '2', NULL)")
        other.commit()
        other.close()


@pytest.mark.parametrize("how", ["deleted", "replaced"])
async def test_a_store_file_removed_under_a_host_is_reopened_and_said(
    tmp_path: Path, how: str, no_check_delay: None
) -> None:
    path = tmp_path / "store.db"
    backend = SQLiteBackend(path)
    await backend.set("before", 1)
    _remove(path, replace=how == "replaced")
    with structlog.testing.capture_logs() as logs:
        await backend.set("after", 2)
    assert [entry["event"] for entry in logs if entry["log_level"] == "warning"] == [
        "SQLite store file was deleted or replaced under the host; reopening its path"
    ]
    # What this host writes now is what a new host (or the CLI) reads from the path.
    fresh = SQLiteBackend(path)
    assert await fresh.get("after") == 2
    assert await backend.get("theirs") == (2 if how == "replaced" else None)
    await fresh.aclose()
    await backend.aclose()


async def test_the_file_is_checked_at_a_bounded_rate(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    backend = SQLiteBackend(path)
    await backend.set("a", 1)
    _remove(path, replace=False)
    # Within IDENTITY_CHECK_S of the last check nothing is looked up again.
    backend._checked_at = time.monotonic()
    await backend.set("b", 2)
    assert not _exists(path)
    backend._checked_at = 0.0
    await backend.set("c", 3)
    assert _exists(path)
    await backend.aclose()


async def test_expired_rows_are_deleted_on_open_and_periodically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "store.db"
    backend = SQLiteBackend(path)
    await backend.set("short", 1, ttl=0.01)
    await backend.set("kept", 2)
    await anyio.sleep(0.02)

    def rows() -> list[str]:
        db = sqlite3.connect(path)
        try:
            return [row[0] for row in db.execute("SELECT key FROM kv ORDER BY key")]
        finally:
            db.close()

    assert rows() == ["kept", "short"]  # filtered on read, still in the file
    reopened = SQLiteBackend(path)
    assert rows() == ["kept"]

    await reopened.set("short2", 1, ttl=0.01)
    await anyio.sleep(0.02)
    await reopened.get("kept")
    assert rows() == ["kept", "short2"]  # not yet time for the periodic purge
    monkeypatch.setattr(sqlite_store, "PURGE_EVERY_S", 0.0)
    await reopened.get("kept")
    assert rows() == ["kept"]
    await reopened.aclose()
    await backend.aclose()


async def test_the_memory_store_drops_expired_entries_nobody_reads_again() -> None:
    from framework.stores.base import MemoryBackend

    backend = MemoryBackend()
    for index in range(50):
        await backend.set(f"session:{index}", index, ttl=0.01)
    await anyio.sleep(0.02)
    for index in range(60):
        await backend.set(f"kept:{index}", index)
    assert sorted(backend._data) == sorted(f"kept:{index}" for index in range(60))


def _open_after(start: float, path: str) -> str:
    time.sleep(max(0.0, start - time.time()))
    try:
        SQLiteBackend(Path(path))
    except Exception as error:  # reported to the parent, which asserts on it
        return f"{type(error).__name__}: {error}"
    return "ok"


def test_processes_opening_one_new_file_at_once_all_open_it(tmp_path: Path) -> None:
    # Replay workers sharing a store open the same new file at the same moment; switching it to
    # WAL is where SQLite said "database is locked" without waiting.
    for round_ in range(3):
        path = str(tmp_path / f"shared-{round_}.db")
        start = time.time() + 0.5
        with ProcessPoolExecutor(max_workers=6) as pool:
            answers = list(pool.map(_open_after, [start] * 6, [path] * 6))
        assert answers == ["ok"] * 6
