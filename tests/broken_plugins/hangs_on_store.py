"""Broken on purpose (check budget): when the store is slow it falls back to a blocking wait
longer than the budget it names."""

from __future__ import annotations

import time
from typing import Any

import anyio

from framework import PluginInfo, hookimpl

plugin = PluginInfo(name="hangs-on-store", contract=">=1,<2")


@hookimpl
def register(on: Any, options: Any) -> None:
    async def remember(engine: Any, event: Any, call_next: Any) -> Any:
        result = await call_next(event)
        with anyio.move_on_after(0.05) as slow_store:
            await engine.store.set("last-tool", event.tool)
        if slow_store.cancelled_caught:
            time.sleep(1.0)  # noqa: ASYNC251 (the bug: blocks the loop, no budget can stop it)
        return result

    on("tool.call", remember, budget=0.5)
