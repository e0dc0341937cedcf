"""The store interface: `Store`, the backend protocol, shared encoding, the memory backend."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable


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


def encode_value(value: Any) -> str:
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
        self._writes = 0

    def _wrote(self) -> None:
        # Expired entries nobody reads again are dropped too: one sweep per half as many writes
        # as there are entries (at least 64), so a write pays for looking at two (amortised).
        self._writes += 1
        if self._writes >= max(64, len(self._data) // 2):
            self._writes = 0
            now = time.time()
            doomed = [
                k
                for k, (_, expires) in self._data.items()
                if expires is not None and expires <= now
            ]
            for key in doomed:
                del self._data[key]

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
        self._wrote()

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
        self._wrote()
        return new

    async def clear(self, prefix: str = "") -> int:
        doomed = [k for k in self._data if k.startswith(prefix)]
        for key in doomed:
            del self._data[key]
        return len(doomed)

    async def aclose(self) -> None:
        return None


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
