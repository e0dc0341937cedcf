"""Broken on purpose (check budget): catches the budget's cancellation, waits on the store again."""

from __future__ import annotations

from typing import Any

import anyio

from framework import PluginInfo, hookimpl

plugin = PluginInfo(name="ignores-budget-cancellation", contract=">=1,<2")


@hookimpl
def register(on: Any, options: Any) -> None:
    async def insist(engine: Any, event: Any, call_next: Any) -> Any:
        result = await call_next(event)
        try:
            await engine.store.set("last-tool", event.tool)
        except anyio.get_cancelled_exc_class():
            await engine.store.set("last-tool", event.tool)  # the bug: one more try, unbounded
        return result

    on("tool.call", insist)
