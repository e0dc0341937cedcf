"""Delivery to the person and the store, each channel isolated: a failure is one debug line."""

from __future__ import annotations

import itertools
import os
from collections.abc import Awaitable, Callable, Mapping

import anyio
from framework import Engine

from ._records import ORDER_KEY, append_key, record_fields, record_key, unique_evictions
from ._times import LocalReading, finite_ms, read_local


def debug(engine: Engine, text: str) -> None:
    """A debug line; the log channel failing must not cost anything else."""
    try:
        engine.ui.log(text, level="debug")
    except Exception:
        return


def deliver(engine: Engine, channel: str, send: Callable[[str], object], text: str) -> None:
    """Send one line through one channel; a failure is named in debug and goes no further."""
    try:
        send(text)
    except Exception as error:
        debug(engine, f"{channel}: delivery failed ({type(error).__name__})")


def local_reading(engine: Engine, source: Callable[[], object]) -> LocalReading:
    reading = read_local(source)
    if reading.problem is not None:
        debug(engine, f"clock: {reading.problem}")
    return reading


async def _engine_ms(engine: Engine, after_failure: str) -> float | None:
    """The engine clock's answer as milliseconds, or None with a `clock` debug line."""
    try:
        raw: object = await engine.clock.now()
    except Exception as error:
        debug(engine, f"clock: now() failed ({type(error).__name__}){after_failure}")
        return None
    moment = finite_ms(raw)
    if moment is None:
        debug(engine, f"clock: now() gave no finite number{after_failure}")
    return moment


async def engine_time(engine: Engine, fallback: LocalReading) -> float | None:
    """The engine clock's time; on failure a `clock` debug line and the local reading instead."""
    moment = await _engine_ms(engine, "; local time used")
    return fallback.ms if moment is None else moment


async def engine_time_only(engine: Engine) -> float | None:
    """The engine clock's time, or None (with a `clock` debug line) when it has none."""
    return await _engine_ms(engine, "")


class RecordLog:
    """Writes log records, one store key each, and keeps the newest `keep` in insertion order."""

    def __init__(self, *, keep: int, wait_ms: int) -> None:
        self._keep = keep
        self._wait_ms = wait_ms
        self._numbers = itertools.count(1)
        self._process = os.getpid()

    def _key(self, moment: float | None, label: str) -> str:
        return record_key(moment, f"{self._process}.{next(self._numbers)}", label)

    async def write(
        self, engine: Engine, label: str, moment: float | None, fields: Mapping[str, object]
    ) -> None:
        """Write a record and trim the oldest; store failures are debug lines."""
        key = self._key(moment, label)
        record = {"label": label, **record_fields(moment, fields)}
        try:
            await engine.store.set(key, record)
        except Exception as error:
            debug(engine, f"store: record not written ({type(error).__name__})")
            return
        evicted: list[str] = []
        kept: list[str] = []

        def push(order: object) -> list[str]:
            nonlocal evicted, kept
            kept, evicted = append_key(order, key, self._keep)
            return kept

        try:
            await engine.store.update(ORDER_KEY, push, default=[])
            for old in unique_evictions(evicted, kept):
                await engine.store.delete(old)
        except Exception as error:
            debug(engine, f"store: log not trimmed ({type(error).__name__})")

    async def wait_for(self, engine: Engine, job: Callable[[], Awaitable[None]]) -> None:
        """Run `job` (clock reading and record write) in the background; wait at most `wait_ms`."""
        finished = anyio.Event()

        async def run() -> None:
            try:
                await job()
            finally:
                finished.set()

        engine.spawn(run)
        problem: str | None = None
        async with anyio.create_task_group() as group:

            async def timer() -> None:
                nonlocal problem
                try:
                    await engine.clock.sleep(self._wait_ms)
                except Exception as error:
                    debug(engine, f"clock: sleep() failed ({type(error).__name__})")
                    problem = (
                        "the wait for the record write ended by a clock failure; "
                        "the record write is not confirmed"
                    )
                else:
                    problem = (
                        f"the record write took longer than {self._wait_ms} ms; "
                        "it finishes in the background"
                    )
                group.cancel_scope.cancel()

            group.start_soon(timer)
            try:
                await finished.wait()
            except anyio.get_cancelled_exc_class():
                if not finished.is_set() and problem is None:
                    debug(
                        engine,
                        "store: the wait for the record write ended by the dispatch's "
                        "cancellation; the record write is not confirmed",
                    )
                raise
            group.cancel_scope.cancel()
        if problem is not None and not finished.is_set():
            debug(engine, f"store: {problem}")
