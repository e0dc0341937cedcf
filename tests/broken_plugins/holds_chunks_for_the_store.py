"""Broken on purpose (check streams): saves each chunk to the store before passing it on, so a
slow store holds the model's output back (closing and throwing are forwarded correctly)."""

from __future__ import annotations

from typing import Any

from framework import PluginInfo, StreamChunk, hookimpl

plugin = PluginInfo(name="holds-chunks-for-the-store", contract=">=1,<2")


class _SavingStream:
    def __init__(self, engine: Any, below: Any) -> None:
        self._engine = engine
        self._below = below
        self._count = 0

    def __aiter__(self) -> _SavingStream:
        return self

    async def __anext__(self) -> StreamChunk:
        chunk: StreamChunk = await self._below.__anext__()
        self._count += 1
        await self._engine.state.set("chunks", self._count)  # the bug: waits before handing on
        return chunk

    async def athrow(self, error: BaseException) -> StreamChunk:
        chunk: StreamChunk = await self._below.athrow(error)
        return chunk

    async def aclose(self) -> None:
        await self._below.aclose()


@hookimpl
def register(on: Any, options: Any) -> None:
    async def save_each(engine: Any, event: Any, call_next: Any) -> Any:
        return _SavingStream(engine, await call_next(event))

    on("turn.step", save_each)
