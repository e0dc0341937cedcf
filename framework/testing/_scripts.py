"""Scripted terminals: downstream that returns, raises, stalls or streams, recording what it saw."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from framework import ENGINE_ORIGIN, ContractError, Event, StreamChunk

__all__ = [
    "ProbeCallNext",
    "RecordingStream",
    "Script",
    "ScriptedTerminal",
    "raises",
    "returns",
    "slow",
    "streams",
]

ScriptKind = Literal["result", "raise", "slow", "stream"]


@dataclass(frozen=True, slots=True)
class Script:
    """What downstream does: return `value`, raise `error`, answer after `delay` s, or stream."""

    kind: ScriptKind
    value: Any = None
    error: BaseException | None = None
    delay: float = 0.0
    chunks: tuple[StreamChunk, ...] = ()


def returns(value: Any) -> Script:
    """Downstream returns `value` (the same object every time)."""
    return Script("result", value=value)


def raises(error: BaseException) -> Script:
    """Downstream raises `error` (the same object every time)."""
    return Script("raise", error=error)


def slow(value: Any, delay: float) -> Script:
    """Downstream returns `value` after `delay` seconds of real time (`float("inf")`: never)."""
    return Script("slow", value=value, delay=delay)


def streams(chunks: Sequence[StreamChunk]) -> Script:
    """Downstream returns a fresh `RecordingStream` of `chunks` on each call."""
    return Script("stream", chunks=tuple(chunks))


class RecordingStream:
    """A step stream that records what was pulled, thrown into it and whether it was closed."""

    def __init__(self, chunks: Sequence[StreamChunk]) -> None:
        self.chunks = tuple(chunks)
        self.yielded: list[StreamChunk] = []
        self.thrown: list[BaseException] = []
        self.closed = False
        self._generator = self._run()

    async def _run(self) -> AsyncGenerator[StreamChunk, Any]:
        try:
            for chunk in self.chunks:
                self.yielded.append(chunk)
                try:
                    yield chunk
                except GeneratorExit:
                    raise
                except BaseException as error:
                    self.thrown.append(error)
                    raise
        finally:
            self.closed = True

    def __aiter__(self) -> RecordingStream:
        return self

    async def __anext__(self) -> StreamChunk:
        return await self._generator.__anext__()

    async def asend(self, value: Any) -> StreamChunk:
        return await self._generator.asend(value)

    async def athrow(self, error: BaseException) -> StreamChunk:
        return await self._generator.athrow(error)

    async def aclose(self) -> None:
        await self._generator.aclose()


@dataclass(slots=True)
class ScriptedTerminal:
    """`async def terminal(event)` playing a `Script`; records the events it saw and its streams."""

    script: Script
    events: list[Event] = field(default_factory=list)
    streams: list[RecordingStream] = field(default_factory=list)
    entered: anyio.Event = field(default_factory=anyio.Event)
    cancelled: bool = False

    async def __call__(self, event: Event) -> Any:
        self.events.append(event)
        self.entered.set()
        script = self.script
        if script.kind == "raise":
            assert script.error is not None
            raise script.error
        if script.kind == "stream":
            stream = RecordingStream(script.chunks)
            self.streams.append(stream)
            return stream
        if script.kind == "slow":
            try:
                await anyio.sleep(script.delay)
            except anyio.get_cancelled_exc_class():
                self.cancelled = True
                raise
        return script.value


class ProbeCallNext:
    """A `call_next` that counts its calls and runs a terminal, with the host's once-only rule."""

    def __init__(
        self, terminal: ScriptedTerminal, event: Event, *, plugin: str, origin: str = ENGINE_ORIGIN
    ) -> None:
        self.terminal = terminal
        self.origin = origin
        self.calls = 0
        self.result: Any = None
        self.error: BaseException | None = None
        self._event = event
        self._plugin = plugin

    @property
    def called(self) -> bool:
        return self.calls > 0

    async def __call__(self, event: Event | None = None) -> Any:
        self.calls += 1
        if self.calls > 1:
            raise ContractError(
                f"plugin {self._plugin!r} called call_next twice on {self._event.name}"
            )
        if event is None:
            event = self._event
        elif type(event) is not type(self._event):
            raise ContractError(
                f"plugin {self._plugin!r} passed a {type(event).__name__} to call_next"
            )
        try:
            self.result = await self.terminal(event)
        except BaseException as error:
            self.error = error
            raise
        return self.result
