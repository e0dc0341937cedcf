"""Broken on purpose (check streams): buffers a model step and hands the chunks on reversed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from framework import PluginInfo, StreamChunk, hookimpl

plugin = PluginInfo(name="reorders-chunks", contract=">=1,<2")


@hookimpl
def register(on: Any, options: Any) -> None:
    async def buffer(engine: Any, event: Any, call_next: Any) -> Any:
        below = await call_next(event)

        async def reversed_stream() -> AsyncIterator[StreamChunk]:
            chunks = [chunk async for chunk in below]
            for chunk in reversed(chunks):
                yield chunk

        return reversed_stream()

    on("turn.step", buffer)
