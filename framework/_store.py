"""Persistent key-value stores: one async interface, backends chosen by URL."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

import anyio
import anyio.to_thread


class StoreError(Exception):
    """A store could not be opened or could not answer; the message names backend and cause."""


@runtime_checkable
class StoreBackend(Protocol):
    """What a backend provides. Keys are plain strings; values are JSON-compatible."""

    url: str

    async def get(self, key: str) -> Any | None: ...

    async def set(self, key: str, value: Any, *, ttl: float | None = None) -> None: ...

    async def delete(self, key: str) -> None: ...

    async def keys(self, prefix: str = "") -> list[str]: ...

    async def update(
        self, key: str, fn: Callable[[Any | None], Any], *, ttl: float | None = None
    ) -> Any: ...

    async def clear(self, prefix: str = "") -> int: ...

    async def aclose(self) -> None: ...


def _encode(value: Any) -> str:
    try:
        return json.dumps(value, separators=(",", ":"), sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise StoreError(f"store values must be JSON-compatible: {error}") from None


# The memory backend's own encoder, built once: key order is irrelevant to a copy kept in this
# process (the persistent backends still sort theirs), and a circular or non-JSON value is
# still refused.
_memory_encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
_memory_decode = json.JSONDecoder().decode


def _memory_copy(value: Any) -> str:
    try:
        return _memory_encode(value)
    except (TypeError, ValueError) as error:
        raise StoreError(f"store values must be JSON-compatible: {error}") from None


class MemoryBackend:
    """A process-local store for tests and replays; values are copied in and out as JSON."""

    process_local = True
    """Values live in this process only: no other host reads them, none outlives the host."""

    def __init__(self) -> None:
        self.url = "memory://"
        self._data: dict[str, tuple[str, float | None]] = {}

    def _live(self, key: str) -> str | None:
        entry = self._data.get(key)
        if entry is None:
            return None
        text, expires = entry
        if expires is not None and expires <= time.time():
            del self._data[key]
            return None
        return text

    async def get(self, key: str) -> Any | None:
        text = self._live(key)
        return None if text is None else _memory_decode(text)

    async def set(self, key: str, value: Any, *, ttl: float | None = None) -> None:
        self._data[key] = (_memory_copy(value), None if ttl is None else time.time() + ttl)

    async def delete(self, key: str) -> None:
        self._data.pop(key, None)

    async def keys(self, prefix: str = "") -> list[str]:
        return sorted(k for k in list(self._data) if k.startswith(prefix) and self._live(k))

    async def update(
        self, key: str, fn: Callable[[Any | None], Any], *, ttl: float | None = None
    ) -> Any:
        # No await between read and write: atomic within the event loop.
        text = self._live(key)
        new = fn(None if text is None else _memory_decode(text))
        self._data[key] = (_memory_copy(new), None if ttl is None else time.time() + ttl)
        return new

    async def clear(self, prefix: str = "") -> int:
        doomed = [k for k in self._data if k.startswith(prefix)]
        for key in doomed:
            del self._data[key]
        return len(doomed)

    async def aclose(self) -> None:
        return None


_SCHEMA = """
CREATE TABLE IF NOT EXISTS kv (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    expires_at REAL
) WITHOUT ROWID
"""


class SQLiteBackend:
    """A SQLite file in WAL mode, safe for many processes at once; updates in BEGIN IMMEDIATE."""

    process_local = False

    def __init__(self, path: Path, *, busy_timeout_ms: int = 10_000) -> None:
        self.url = f"sqlite:///{path}"
        self.path = path
        self._lock = threading.Lock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fresh = not path.exists()
            # isolation_level=None: transactions are ours (BEGIN IMMEDIATE), not the module's.
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            if fresh:
                os.chmod(path, 0o600)
            self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as error:
            raise StoreError(f"cannot open SQLite store {path}: {error}") from error

    async def _run(self, fn: Callable[[], Any]) -> Any:
        def locked() -> Any:
            with self._lock:
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
        text = _encode(value)
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
                    (key, _encode(new), None if ttl is None else now + ttl),
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

        def remove() -> int:
            cursor = self._db.execute(
                "DELETE FROM kv WHERE expires_at IS NOT NULL AND expires_at <= ?", (time.time(),)
            )
            return cursor.rowcount

        count: int = await self._run(remove)
        return count

    async def aclose(self) -> None:
        await self._run(self._db.close)


def open_backend(url: str) -> StoreBackend:
    """Open the backend a URL names: `memory://`, `sqlite:///abs/path`, `redis://host:port/db`."""
    scheme = urlsplit(url).scheme
    if scheme == "memory":
        return MemoryBackend()
    if scheme == "sqlite":
        raw = url.removeprefix("sqlite://")
        if not raw or raw == "/":
            raise StoreError(f"store URL {url!r} has no path; use sqlite:///absolute/path.db")
        if raw.startswith("//"):
            # sqlite:////abs/path (the four-slash form) means the same file as sqlite:///abs/path.
            raw = "/" + raw.lstrip("/")
        path = Path(raw).expanduser()
        if not path.is_absolute():
            # A relative path would depend on whichever folder each hook process starts in.
            raise StoreError(f"store URL {url!r} is relative; use sqlite:///absolute/path.db")
        return SQLiteBackend(path)
    if scheme in {"redis", "rediss"}:
        try:
            from framework._redis_store import RedisBackend
        except ImportError as error:
            raise StoreError(
                f"the redis backend needs the 'redis' package ({error}); "
                "pip install 'hookchain[redis]'"
            ) from None
        return RedisBackend.from_url(url)
    raise StoreError(
        f"unknown store URL scheme {scheme!r} (from HOOKCHAIN_STORE or --store); "
        "accepted: memory://, sqlite:///path, redis://host:port/db"
    )


class Store:
    """A namespaced view of a backend: what `engine.store` and `engine.state` are."""

    __slots__ = ("_backend", "_prefix", "_process_local", "_ttl")

    def __init__(
        self,
        backend: StoreBackend,
        prefix: str = "",
        *,
        ttl: float | None = None,
        process_local: bool = False,
    ) -> None:
        self._backend = backend
        self._prefix = prefix
        self._ttl = ttl
        self._process_local = process_local

    @property
    def backend(self) -> StoreBackend:
        return self._backend

    @property
    def prefix(self) -> str:
        return self._prefix

    @property
    def process_local(self) -> bool:
        """True when the values live in this host only: it opened a `memory://` store itself, so
        no other host shares them and none outlives this one. A plugin that keeps a warm copy in
        memory and writes it behind for a restarted or another host has nobody to write it for
        then. A backend object handed to a host may outlive it or serve several: shared."""
        return self._process_local

    def namespace(self, name: str) -> Store:
        """A view whose keys live under `name:` inside this one."""
        return Store(
            self._backend,
            f"{self._prefix}{name}:",
            ttl=self._ttl,
            process_local=self._process_local,
        )

    async def get(self, key: str, default: Any = None) -> Any:
        value = await self._backend.get(self._prefix + key)
        return default if value is None else value

    async def set(self, key: str, value: Any, *, ttl: float | None = None) -> None:
        await self._backend.set(self._prefix + key, value, ttl=self._lifetime(ttl))

    async def delete(self, key: str) -> None:
        await self._backend.delete(self._prefix + key)

    async def keys(self, prefix: str = "") -> list[str]:
        cut = len(self._prefix)
        return [k[cut:] for k in await self._backend.keys(self._prefix + prefix)]

    async def update(
        self,
        key: str,
        fn: Callable[[Any], Any],
        *,
        default: Any = None,
        ttl: float | None = None,
    ) -> Any:
        """Atomically replace the value with `fn(current)`; `fn` may run more than once."""

        def apply(current: Any | None) -> Any:
            return fn(default if current is None else current)

        return await self._backend.update(self._prefix + key, apply, ttl=self._lifetime(ttl))

    def _lifetime(self, ttl: float | None) -> float | None:
        chosen = self._ttl if ttl is None else ttl
        if chosen is not None and chosen <= 0:
            raise StoreError(f"a ttl must be a positive number of seconds, not {chosen!r}")
        return chosen

    async def clear(self, prefix: str = "") -> int:
        return await self._backend.clear(self._prefix + prefix)
