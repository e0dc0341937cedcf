"""Broken on purpose (check budget): waits on the store with no limit of its own."""

from __future__ import annotations

from typing import Any

from framework import PluginInfo, hookimpl

plugin = PluginInfo(name="hangs-on-store", contract=">=1,<2")


@hookimpl
def register(on: Any, options: Any) -> None:
    async def count(engine: Any, event: Any, call_next: Any) -> Any:
        await engine.store.update("calls", lambda n: n + 1, default=0)
        return await call_next(event)

    on("tool.call", count, budget=0.2)
