"""A control: 0.6 s of synchronous set-up on its first call (inside its 2 s budget), then it
waits on the store and leaves giving up to the host's budget. Correct, so check budget passes."""

from __future__ import annotations

import time
from typing import Any

from framework import PluginInfo, hookimpl

plugin = PluginInfo(name="slow-first-call", contract=">=1,<2")

SET_UP_SECONDS = 0.6


@hookimpl
def register(on: Any, options: Any) -> None:
    ready: list[bool] = []

    async def remember(engine: Any, event: Any, call_next: Any) -> Any:
        if not ready:
            time.sleep(SET_UP_SECONDS)  # noqa: ASYNC251 (stands in for CPU-bound set-up)
            ready.append(True)
        await engine.store.set("last-tool", event.tool)
        return await call_next(event)

    on("tool.call", remember)
