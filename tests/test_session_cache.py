"""`SessionCache`: get-or-load per session, written back at once when cold, behind when warm."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from framework import EnginePort, SessionCache, Store, ToolCall, open_backend
from framework.testing import FakeEngine, MemoryStore, tool_call

pytestmark = pytest.mark.anyio

KEY = "counts"


def load(stored: Any) -> dict[str, int]:
    if stored is None:
        return {"calls": 0}
    if not isinstance(stored, dict) or not isinstance(stored.get("calls"), int):
        raise ValueError("not a count")
    return {"calls": stored["calls"]}


def dump(value: dict[str, int]) -> dict[str, int]:
    return dict(value)


def count(value: dict[str, int]) -> int:
    value["calls"] += 1
    return value["calls"]


def cache(**kwargs: Any) -> SessionCache[dict[str, int]]:
    return SessionCache(KEY, load=load, dump=dump, **kwargs)


def shared_memory() -> Store:
    return Store(open_backend("memory://"))  # a backend handed over: shared, not process-local


def local_memory() -> Store:
    return Store(open_backend("memory://"), process_local=True)


def sqlite_store(path: Path) -> Store:
    return Store(open_backend(f"sqlite:///{path}"))


def call(n: int) -> ToolCall:
    return tool_call(tool="Bash", input={"command": f"echo {n}"}, tool_use_id=f"t{n}")


async def test_a_cold_session_is_written_back_within_the_event_that_loaded_it() -> None:
    state = shared_memory()
    engine = FakeEngine("p", session_id="s1", state=state)
    sessions = cache()
    first = call(1)
    assert await sessions.use(engine, first, count) == 1
    assert await state.get(KEY) == {"calls": 1}
    # A second handler of the same event still counts as cold: written at once too.
    assert await sessions.use(engine, first, count) == 2
    assert await state.get(KEY) == {"calls": 2}


async def test_a_warm_session_changes_in_memory_until_write() -> None:
    state = shared_memory()
    engine = FakeEngine("p", session_id="s1", state=state)
    sessions = cache()
    await sessions.use(engine, call(1), count)
    assert sessions.warm(engine, call(2)) == {"calls": 1}
    assert await sessions.use(engine, call(3), count) == 2
    assert await state.get(KEY) == {"calls": 1}  # behind
    assert await sessions.write(engine) is True
    assert await state.get(KEY) == {"calls": 2}
    assert await sessions.write(engine) is False  # unchanged: no second write


async def test_a_new_host_loads_what_the_last_one_stored(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    first_host = FakeEngine("p", session_id="s1", state=sqlite_store(db))
    await cache().use(first_host, call(1), count)
    await first_host.state.backend.aclose()
    # Another process (a restarted host, the next hook call) sees the count in the real file.
    second_host = FakeEngine("p", session_id="s1", state=sqlite_store(db))
    later = cache()
    assert await later.use(second_host, call(2), count) == 2
    assert await second_host.state.get(KEY) == {"calls": 2}
    await second_host.state.backend.aclose()


async def test_warm_changes_reach_the_sqlite_file_at_the_write_behind_point(
    tmp_path: Path,
) -> None:
    db = tmp_path / "store.db"
    engine = FakeEngine("p", session_id="s1", state=sqlite_store(db))
    sessions = cache()
    for n in range(5):
        await sessions.use(engine, call(n), count)
    reader = sqlite_store(db)
    assert await reader.get(KEY) == {"calls": 1}
    await sessions.write(engine)
    assert await reader.get(KEY) == {"calls": 5}
    await reader.backend.aclose()
    await engine.state.backend.aclose()


async def test_a_process_local_store_is_written_only_when_a_session_leaves_memory() -> None:
    sessions = cache(max_sessions=2)
    engines = [FakeEngine("p", session_id=f"s{n}", state=local_memory()) for n in range(3)]
    await sessions.use(engines[0], call(0), count)
    await sessions.use(engines[0], call(1), count)
    assert await sessions.write(engines[0]) is False
    assert await engines[0].state.get(KEY) is None  # nobody else reads it
    await sessions.use(engines[1], call(2), count)
    await sessions.use(engines[2], call(3), count)  # s0, least recently used, leaves memory
    assert "s0" not in sessions
    assert len(sessions) == 2
    assert await engines[0].state.get(KEY) == {"calls": 2}
    # and comes back from the store with nothing lost
    assert await sessions.use(engines[0], call(4), count) == 3


async def test_flush_writes_every_changed_session_even_process_local_ones() -> None:
    sessions = cache()
    engine = FakeEngine("p", session_id="s1", state=local_memory())
    await sessions.use(engine, call(1), count)
    await sessions.flush()
    assert await engine.state.get(KEY) == {"calls": 1}


async def test_an_unreadable_stored_value_starts_over_and_is_said_once() -> None:
    sessions = cache()
    engines = [FakeEngine("p", session_id=f"s{n}", state=shared_memory()) for n in range(2)]
    for engine in engines:
        await engine.state.set(KEY, {"calls": "seven"})
        assert await sessions.use(engine, call(1), count) == 1
        assert await engine.state.get(KEY) == {"calls": 1}
    said = engines[0].recorder.of("log")
    assert len(said) == 1
    assert "'counts' was unreadable" in said[0]
    assert "seven" not in said[0]  # never the stored content
    assert engines[1].recorder.of("log") == []  # once per cache, not once per session


async def test_forget_drops_without_writing() -> None:
    sessions = cache()
    engine = FakeEngine("p", session_id="s1", state=shared_memory())
    await sessions.use(engine, call(1), count)
    await sessions.use(engine, call(2), count)
    sessions.forget(engine)
    assert "s1" not in sessions
    assert await engine.state.get(KEY) == {"calls": 1}
    assert await sessions.write(engine) is False


async def test_a_failed_eviction_keeps_the_session_in_memory() -> None:
    class Refusing(Store):
        async def set(self, key: str, value: Any, *, ttl: float | None = None) -> None:
            raise OSError("disk full")

    sessions = cache(max_sessions=1)
    doomed = FakeEngine(
        "p", session_id="s1", state=Refusing(open_backend("memory://"), process_local=True)
    )
    await sessions.use(doomed, call(1), count)
    with pytest.raises(OSError, match="disk full"):
        await sessions.use(FakeEngine("p", session_id="s2", state=MemoryStore()), call(2), count)
    assert "s1" in sessions
    assert sessions.warm(doomed, call(3)) == {"calls": 1}


def test_max_sessions_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_sessions"):
        cache(max_sessions=0)


async def test_leaving_gets_the_evicted_sessions_own_engine_before_its_write() -> None:
    seen: list[tuple[str, Any]] = []

    async def leaving(engine: EnginePort, value: dict[str, int]) -> None:
        # What loop-breaker does with its counts: add them to the plugin-wide store.
        seen.append((engine.session.id, await engine.state.get(KEY)))
        await engine.store.update("total", lambda total: total + value["calls"], default=0)

    sessions = SessionCache(KEY, load=load, dump=dump, max_sessions=1, leaving=leaving)
    plugin_store = MemoryStore()
    first = FakeEngine("p", session_id="s1", state=local_memory(), store=plugin_store)
    second = FakeEngine("p", session_id="s2", state=local_memory(), store=plugin_store)
    await sessions.use(first, call(1), count)
    await sessions.use(first, call(2), count)
    assert [engine.session.id for engine, _ in sessions.items()] == ["s1"]
    await sessions.use(second, call(3), count)
    assert seen == [("s1", None)]  # before the state write
    assert await first.state.get(KEY) == {"calls": 2}
    assert await plugin_store.get("total") == 2
    assert [(engine.session.id, value) for engine, value in sessions.items()] == [
        ("s2", {"calls": 1})
    ]


async def test_a_failing_leaving_keeps_the_session_in_memory_unwritten() -> None:
    async def leaving(engine: EnginePort, value: dict[str, int]) -> None:
        raise OSError("store down")

    sessions = SessionCache(KEY, load=load, dump=dump, max_sessions=1, leaving=leaving)
    first = FakeEngine("p", session_id="s1", state=local_memory())
    await sessions.use(first, call(1), count)
    with pytest.raises(OSError, match="store down"):
        await sessions.use(FakeEngine("p", session_id="s2", state=local_memory()), call(2), count)
    assert "s1" in sessions
    assert await first.state.get(KEY) is None


async def test_loaded_prepares_each_loaded_object_once_before_its_use() -> None:
    prepared: list[str] = []

    async def loaded(engine: EnginePort, value: dict[str, int]) -> None:
        # What loop-breaker does with its ignore list: read beside the session's own key.
        value["calls"] += int(await engine.store.get("bonus", 0))
        prepared.append(engine.session.id)

    sessions = SessionCache(KEY, load=load, dump=dump, loaded=loaded)
    engine = FakeEngine("p", session_id="s1", state=shared_memory())
    await engine.store.set("bonus", 10)
    assert await sessions.use(engine, call(1), count) == 11
    assert await sessions.use(engine, call(2), count) == 12
    assert prepared == ["s1"]


async def test_a_dump_of_none_deletes_the_key_and_an_absent_key_is_not_deleted_again() -> None:
    deletes: list[str] = []

    class Counting(Store):
        async def delete(self, key: str) -> None:
            deletes.append(key)
            await super().delete(key)

    state = Counting(open_backend("memory://"))
    engine = FakeEngine("p", session_id="s1", state=state)
    sessions: SessionCache[dict[str, int]] = SessionCache(
        KEY, load=load, dump=lambda value: dict(value) if value["calls"] else None
    )
    first = call(1)
    await sessions.use(engine, first, count)
    assert await state.get(KEY) == {"calls": 1}
    await sessions.use(engine, call(2), lambda value: value.update(calls=0))
    assert await sessions.write(engine) is True
    assert await state.get(KEY) is None
    assert deletes == [KEY]
    # Nothing stored and nothing to keep: no write at all.
    assert await sessions.write(engine) is False
    assert deletes == [KEY]
