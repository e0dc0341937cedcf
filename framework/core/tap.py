"""`tap`: watch a model step's stream without changing, reordering or holding back a chunk."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any

import structlog

from framework.core.chain import RUNNING, Runner, position
from framework.core.contract import StreamChunk
from framework.core.dispatch import current_dispatch
from framework.core.registration import Registration

_log = structlog.get_logger("hookchain.tap")


class ChunkStream:
    """A step's stream of chunks already in hand (a replayed step's recorded chunks).

    Not an async generator: the event loop registers each new one in a weak set for shutdown,
    which costs a replayed step more than reading its chunks. It, and taps over it, can also be
    read with no await at all: see `drain`.
    """

    __slots__ = ("_chunks", "_next")

    def __init__(self, chunks: Sequence[StreamChunk]) -> None:
        self._chunks = chunks
        self._next = 0

    def __aiter__(self) -> ChunkStream:
        return self

    async def __anext__(self) -> StreamChunk:
        index = self._next
        if index >= len(self._chunks):
            raise StopAsyncIteration
        self._next = index + 1
        return self._chunks[index]

    async def aclose(self) -> None:
        self._next = len(self._chunks)


class Tap:
    """An async generator look-alike over a stream: chunks pass through at once, in order.

    `asend`, `athrow` and `aclose` are forwarded to the stream below when it has them. A callback
    that raises is switched off and the stream goes on; the failure is the tapping plugin's
    (counted in `Host.failures`, logged once per site), found when `tap` is called in a handler.
    """

    __slots__ = ("_below", "_ended", "_on_chunk", "_on_end", "_on_error", "_owner")

    def __init__(
        self,
        below: AsyncIterator[StreamChunk],
        on_chunk: Callable[[StreamChunk], Any] | None,
        on_end: Callable[[], Any] | None,
        on_error: Callable[[BaseException], Any] | None,
        owner: tuple[Runner, Registration] | None = None,
    ) -> None:
        self._below = below
        self._on_chunk = on_chunk
        self._on_end = on_end
        self._on_error = on_error
        self._ended = False
        self._owner = owner

    def __aiter__(self) -> Tap:
        return self

    async def __anext__(self) -> StreamChunk:
        # The common path, inlined: one await per chunk and no extra coroutine.
        try:
            chunk: StreamChunk = await self._below.__anext__()
        except StopAsyncIteration:
            self._finish()
            raise
        except Exception as error:
            self._failed(error)
            raise
        return self._passed(chunk)

    async def asend(self, value: Any) -> StreamChunk:
        asend = getattr(self._below, "asend", None)
        if asend is None:
            return await self.__anext__()
        return await self._step(asend(value))

    async def athrow(
        self,
        error: type[BaseException] | BaseException,
        value: object = None,
        traceback: TracebackType | None = None,
    ) -> StreamChunk:
        athrow = getattr(self._below, "athrow", None)
        if athrow is None:
            raise error if isinstance(error, BaseException) else error()
        return await self._step(athrow(error))

    async def aclose(self) -> None:
        aclose = getattr(self._below, "aclose", None)
        if aclose is not None:
            await aclose()

    async def _step(self, pull: Awaitable[StreamChunk]) -> StreamChunk:
        try:
            chunk = await pull
        except StopAsyncIteration:
            self._finish()
            raise
        except Exception as error:
            self._failed(error)
            raise
        return self._passed(chunk)

    def _passed(self, chunk: StreamChunk) -> StreamChunk:
        on_chunk = self._on_chunk
        if on_chunk is not None:
            try:
                on_chunk(chunk)
            except Exception as error:
                self._on_chunk = None
                self._broken("on_chunk", error)
        return chunk

    def _failed(self, error: Exception) -> None:
        on_error = self._on_error
        if on_error is not None:
            try:
                on_error(error)
            except Exception as callback_error:
                self._on_error = None
                self._broken("on_error", callback_error)

    def _finish(self) -> None:
        if not self._ended:
            self._ended = True
            on_end = self._on_end
            if on_end is not None:
                try:
                    on_end()
                except Exception as error:
                    self._broken("on_end", error)

    def _broken(self, name: str, error: Exception) -> None:
        """A callback raised and is switched off: the tapping plugin's failure; stream goes on."""
        owner = self._owner
        if owner is not None:
            runner, reg = owner
            runner.failed(reg, error, f"in tap {name}")
            return
        _log.warning(
            "stream tap callback failed; stream goes on without it",
            callback=name,
            error_type=type(error).__name__,
        )


def tap(
    stream: AsyncIterator[StreamChunk],
    *,
    on_chunk: Callable[[StreamChunk], Any] | None = None,
    on_end: Callable[[], Any] | None = None,
    on_error: Callable[[BaseException], Any] | None = None,
) -> Tap:
    """Wrap a `turn.step` stream: callbacks see each chunk right after it is pulled.

    The chunk is returned to the caller right after `on_chunk` returns; callbacks are synchronous
    so no chunk ever waits on a plugin's own async work (start that with `engine.spawn`).
    """
    owner = None
    dispatch = current_dispatch.get()
    # `running_dispatch()`, inline: a finished dispatch left in the context is none.
    if dispatch is not None and dispatch._state == RUNNING:
        # The handler running now is the one tapping: its failures are counted as its own.
        frame = position(dispatch)
        if frame is not None and frame.reg is not None:
            owner = (dispatch.runner, frame.reg)
    return Tap(stream, on_chunk, on_end, on_error, owner)


def drain(stream: object) -> bool:
    """Read taps over a ChunkStream (or a bare one) to the end and close it, with no await.

    What `async for` then `aclose` do, in the same order, without a coroutine per chunk and
    level: each chunk passes every tap from the innermost out, then each tap ends from the
    innermost out, and the ChunkStream is closed even when a callback's BaseException ends the
    read (as `aclose` in a `finally` would). The stream never waits, so nothing else could run
    between its chunks either way. False (nothing read): the stream is something else; read it
    with `async for`.
    """
    taps: list[Tap] = []
    below = stream
    while type(below) is Tap:
        taps.append(below)
        below = below._below
    if type(below) is not ChunkStream:
        return False
    chunks = below._chunks
    if taps:
        taps.reverse()
        try:
            while (index := below._next) < len(chunks):
                below._next = index + 1  # moved on before the callbacks see it, as __anext__
                chunk = chunks[index]
                for level in taps:
                    level._passed(chunk)
            for level in taps:
                level._finish()
        finally:
            below._next = len(chunks)
    else:
        below._next = len(chunks)
    return True
