"""The SQLite backend: one file in WAL mode, shared safely by many processes."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import structlog

from framework.stores.base import StoreError, encode_value

_SCHEMA = """
CREATE TABLE IF NOT EXISTS kv (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    expires_at REAL
) WITHOUT ROWID
"""

_EXPIRY_INDEX = (
    "CREATE INDEX IF NOT EXISTS kv_expires ON kv (expires_at) WHERE expires_at IS NOT NULL"
)


IDENTITY_CHECK_S = 1.0
"""At most this often (seconds) a backend checks that its path still names the file it opened."""

PURGE_EVERY_S = 600.0
"""How often (seconds) expired rows are deleted, besides once on open."""

_log = structlog.get_logger("hookchain.store")


class SQLiteBackend:
    """A SQLite file in WAL mode, safe for many processes at once; updates in BEGIN IMMEDIATE.

    A store file deleted or replaced under a running host would leave it writing into an unlinked
    inode while every new host and the CLI read another file: before a call, at most once per
    `IDENTITY_CHECK_S`, the path's (device, inode) is compared with the open file's, and on a
    change the backend logs it and reopens the path. Expired rows are purged on open and every
    `PURGE_EVERY_S` (one indexed DELETE).
    """

    process_local = False

    def __init__(self, path: Path, *, busy_timeout_ms: int = 10_000) -> None:
        self.url = f"sqlite:///{path}"
        self.path = path
        self._busy_timeout_ms = int(busy_timeout_ms)
        self._lock = threading.Lock()
        self._checked_at = 0.0
        self._purged_at = 0.0
        self._db, self._identity = self._open()
        self._purge_now()

    def _open(self) -> tuple[sqlite3.Connection, tuple[int, int]]:
        path = self.path
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fresh = not path.exists()
            # isolation_level=None: transactions are ours (BEGIN IMMEDIATE), not the module's.
            db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            if fresh:
                os.chmod(path, 0o600)
            db.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
            self._set_up(db)
            found = os.stat(path)
        except (OSError, sqlite3.Error) as error:
            raise StoreError(f"cannot open SQLite store {path}: {error}") from error
        return db, (found.st_dev, found.st_ino)

    def _set_up(self, db: sqlite3.Connection) -> None:
        """WAL mode and the schema. Switching to WAL takes the file exclusively and SQLite answers
        "database is locked" at once, without waiting, when another process opens the same new
        file at that moment (replay workers sharing a store do): so the mode is read first, and
        a locked set-up is tried again within the busy timeout."""
        deadline = time.monotonic() + self._busy_timeout_ms / 1000
        while True:
            try:
                mode = db.execute("PRAGMA journal_mode").fetchone()[0]
                if str(mode).lower() != "wal":
                    db.execute("PRAGMA journal_mode = WAL")
                db.execute("PRAGMA synchronous = NORMAL")
                db.execute(_SCHEMA)
                db.execute(_EXPIRY_INDEX)
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)

    def _same_file(self) -> None:
        """Reopen the path if it no longer names the file we hold (deleted, replaced, moved)."""
        now = time.monotonic()
        if now - self._checked_at < IDENTITY_CHECK_S:
            return
        self._checked_at = now
        try:
            found = os.stat(self.path)
            identity: tuple[int, int] | None = (found.st_dev, found.st_ino)
        except FileNotFoundError:
            identity = None
        if identity == self._identity:
            return
        _log.warning(
            "SQLite store file was deleted or replaced under the host; reopening its path",
            path=str(self.path),
            found="missing" if identity is None else "another file",
        )
        old = self._db
        self._db, self._identity = self._open()
        old.close()

    def _purge_now(self) -> int:
        self._purged_at = time.monotonic()
        try:
            cursor = self._db.execute(
                "DELETE FROM kv WHERE expires_at IS NOT NULL AND expires_at <= ?", (time.time(),)
            )
        except sqlite3.Error as error:
            raise StoreError(f"SQLite store {self.path}: {error}") from error
        return cursor.rowcount

    async def _run(self, fn: Callable[[], Any]) -> Any:
        def locked() -> Any:
            with self._lock:
                self._same_file()
                if time.monotonic() - self._purged_at >= PURGE_EVERY_S:
                    self._purge_now()
                try:
                    return fn()
                except sqlite3.Error as error:
                    raise StoreError(f"SQLite store {self.path}: {error}") from error

        return await anyio.to_thread.run_sync(locked)

    async def get(self, key: str) -> Any | None:
        def read() -> Any | None:
            row = self._db.execute(
                "SELECT value FROM kv WHERE key = ? AND (expires_at IS NULL OR expires_at > ?)",
                (key, time.time()),
            ).fetchone()
            return None if row is None else json.loads(row[0])

        return await self._run(read)

    async def set(self, key: str, value: Any, *, ttl: float | None = None) -> None:
        text = encode_value(value)
        expires = None if ttl is None else time.time() + ttl
        await self._run(
            lambda: self._db.execute(
                "INSERT INTO kv (key, value, expires_at) VALUES (?, ?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value, "
                "expires_at = excluded.expires_at",
                (key, text, expires),
            )
        )

    async def delete(self, key: str) -> None:
        await self._run(lambda: self._db.execute("DELETE FROM kv WHERE key = ?", (key,)))

    async def keys(self, prefix: str = "") -> list[str]:
        def read() -> list[str]:
            rows = self._db.execute(
                "SELECT key FROM kv WHERE substr(key, 1, ?) = ? "
                "AND (expires_at IS NULL OR expires_at > ?) ORDER BY key",
                (len(prefix), prefix, time.time()),
            ).fetchall()
            return [row[0] for row in rows]

        result: list[str] = await self._run(read)
        return result

    async def update(
        self, key: str, fn: Callable[[Any | None], Any], *, ttl: float | None = None
    ) -> Any:
        def transact() -> Any:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                now = time.time()
                row = self._db.execute(
                    "SELECT value FROM kv WHERE key = ? AND (expires_at IS NULL OR expires_at > ?)",
                    (key, now),
                ).fetchone()
                new = fn(None if row is None else json.loads(row[0]))
                self._db.execute(
                    "INSERT INTO kv (key, value, expires_at) VALUES (?, ?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value, "
                    "expires_at = excluded.expires_at",
                    (key, encode_value(new), None if ttl is None else now + ttl),
                )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            return new

        return await self._run(transact)

    async def clear(self, prefix: str = "") -> int:
        def remove() -> int:
            cursor = self._db.execute(
                "DELETE FROM kv WHERE substr(key, 1, ?) = ?", (len(prefix), prefix)
            )
            return cursor.rowcount

        count: int = await self._run(remove)
        return count

    async def purge_expired(self) -> int:
        """Drop expired rows (the TTL backstop for per-session state)."""

        count: int = await self._run(self._purge_now)
        return count

    async def aclose(self) -> None:
        await self._run(lambda: self._db.close())
