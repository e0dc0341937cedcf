"""Broken on purpose (check streams): re-yields the chunks from its own generator, so the
caller's aclose and athrow stop at that generator and never reach the stream below."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from framework import PluginInfo, StreamChunk, hookimpl

plugin = PluginInfo(name="wraps-stream-naively", contract=">=1,<2")


@hookimpl
def register(on: Any, options: Any) -> None:
    async def relay(engine: Any, event: Any, call_next: Any) -> Any:
        below = await call_next(event)

        async def relayed() -> AsyncIterator[StreamChunk]:
            async for chunk in below:
                yield chunk

        return relayed()

    on("turn.step", relay)
