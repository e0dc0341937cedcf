"""`SessionCache`: a per-session object kept in memory while the host is warm, written behind.

Opt-in, for plugins whose session state is costly to read and write on every event: the object
is loaded from `engine.state` once, changed in memory, and written back only when it matters.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from framework.core.logging import Once
from framework.core.ports import EnginePort

T = TypeVar("T")
R = TypeVar("R")

__all__ = ["SessionCache"]


@dataclass(slots=True)
class _Entry(Generic[T]):
    value: T
    loaded_for: object | None
    """The event it was loaded for, until the session's next event: while set, the host may live
    for this one call only (a hook process), so every change is written back at once."""
    engine: EnginePort
    """The engine of the session that loaded it: its `state` takes the value when it leaves
    memory, and `leaving` gets it."""
    stored: Any
    """What `engine.state` holds under the key, as last read or written here."""


class SessionCache(Generic[T]):
    """Get-or-load one object per session from `engine.state[key]`, with write-behind.

    `load(stored)` builds the object from what the store holds (None for a new session) and may
    raise `ValueError` for an unreadable value: the session then starts over from `load(None)`,
    said once in the plugin's log. `dump(value)` gives the JSON-compatible form to store: a
    fresh value each call (it is compared with the last one stored to skip needless writes), or
    None for an object with nothing to keep (what `load(None)` gives): the key is then deleted,
    as a store answers None for a key it lacks. The object itself is never None.

    A miss (a new session, a restarted host, or a host that lives for one hook call) loads the
    object, and `use` writes every change made while handling that same event back at once, so a
    short-lived host loses nothing. From the session's second event on the host is warm: `use`
    changes the object in memory only, and `write(engine)` (e.g. at turn end) stores it when it
    changed. On a process-local store (`store.process_local`) nobody else reads the copy, so both
    skip the write; a session is written when it leaves memory (the least recently used beyond
    `max_sessions`) and `flush()` writes all. `forget(engine)` drops a session without a write
    (at `session.end`, when the host drops its state anyway).

    `loaded(engine, value)`, if given, runs after each load, before the object is used: for what
    the object needs beside its own key (e.g. a plugin-wide list from `engine.store`).
    `leaving(engine, value)`, if given, runs when a session is about to leave memory, with that
    session's own engine, before its object is written: for what a plugin kept beside it (counts
    for its `engine.store`, a second key). `items()` lists the sessions in memory with their
    engines, for such work across all of them.

    One cache per host: create it in `register(on, options)`, never at module level.
    """

    def __init__(
        self,
        key: str,
        *,
        load: Callable[[Any], T],
        dump: Callable[[T], Any],
        max_sessions: int = 256,
        loaded: Callable[[EnginePort, T], Awaitable[None]] | None = None,
        leaving: Callable[[EnginePort, T], Awaitable[None]] | None = None,
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"SessionCache({key!r}): max_sessions must be at least 1")
        self.key = key
        self.max_sessions = max_sessions
        self._load = load
        self._dump = dump
        self._loaded = loaded
        self._leaving = leaving
        self._entries: OrderedDict[str, _Entry[T]] = OrderedDict()
        self._said = Once()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._entries

    def items(self) -> list[tuple[EnginePort, T]]:
        """Every session in memory, least recently used first, with the engine that loaded it."""
        return [(entry.engine, entry.value) for entry in self._entries.values()]

    def warm(self, engine: EnginePort, event: object) -> T | None:
        """The session's object when it is in memory and needs no write after `event`; found
        without a coroutine (the fast path of a hot handler). None when `use`/`get` must load."""
        session_id = engine.session.id
        entry = self._entries.get(session_id)
        if entry is None:
            return None
        if entry.loaded_for is not None:
            if entry.loaded_for is event:
                return None
            entry.loaded_for = None
        self._entries.move_to_end(session_id)
        return entry.value

    async def get(self, engine: EnginePort, event: object) -> T:
        """The session's object, loaded from `engine.state` on a miss (changes are the caller's
        to write: prefer `use`)."""
        value = self.warm(engine, event)
        if value is not None:
            return value
        return (await self._entry(engine, event)).value

    async def use(self, engine: EnginePort, event: object, change: Callable[[T], R]) -> R:
        """Run `change(value)` on the session's object and answer what it returns; written back at
        once when the object was loaded for this very event (and the store is shared)."""
        value = self.warm(engine, event)
        if value is not None:
            return change(value)
        entry = await self._entry(engine, event)
        outcome = change(entry.value)
        if not entry.engine.state.process_local:
            await self._store(entry)
        return outcome

    async def write(self, engine: EnginePort) -> bool:
        """The write-behind point: store the session's object if it changed since last stored
        (skipped on a process-local store). True when it wrote."""
        entry = self._entries.get(engine.session.id)
        if entry is None or entry.engine.state.process_local:
            return False
        return await self._store(entry)

    def forget(self, engine: EnginePort) -> None:
        """The session ended: its object leaves memory without a write."""
        self._entries.pop(engine.session.id, None)

    async def flush(self) -> None:
        """Store every session's object that changed, process-local stores included (before a
        reader of the store, or when the host closes)."""
        for entry in list(self._entries.values()):
            await self._store(entry)

    async def _entry(self, engine: EnginePort, event: object) -> _Entry[T]:
        session_id = engine.session.id
        entry = self._entries.get(session_id)
        if entry is not None:
            return entry
        stored = await engine.state.get(self.key)
        try:
            value = self._load(stored)
        except ValueError as error:
            if self._said.first("unreadable"):
                engine.ui.log(
                    f"{engine.plugin}: stored session state {self.key!r} was unreadable "
                    f"({type(error).__name__}); the session starts over",
                    level="warning",
                )
            value, stored = self._load(None), None
        if self._loaded is not None:
            await self._loaded(engine, value)
        # A concurrent handler of the same session may have loaded it meanwhile: keep the first.
        entry = self._entries.setdefault(session_id, _Entry(value, event, engine, stored))
        self._entries.move_to_end(session_id)
        while len(self._entries) > self.max_sessions:
            await self._evict()
        return entry

    async def _evict(self) -> None:
        """The least recently used session leaves memory, with its last changes written."""
        session_id, entry = self._entries.popitem(last=False)
        try:
            if self._leaving is not None:
                await self._leaving(entry.engine, entry.value)
            await self._store(entry)
        except BaseException:
            # Still in memory: the session's next event finds it, and a later eviction retries.
            self._entries[session_id] = entry
            self._entries.move_to_end(session_id, last=False)
            raise

    async def _store(self, entry: _Entry[T]) -> bool:
        dumped = self._dump(entry.value)
        if dumped == entry.stored:
            return False
        if dumped is None:
            await entry.engine.state.delete(self.key)
        else:
            await entry.engine.state.set(self.key, dumped)
        entry.stored = dumped
        return True
