"""Broken on purpose (check passthrough): decides nothing but hands back a copy of the result."""

from __future__ import annotations

from typing import Any

from framework import PluginInfo, hookimpl

plugin = PluginInfo(name="copies-result", contract=">=1,<2")


@hookimpl
def register(on: Any, options: Any) -> None:
    async def copy(engine: Any, event: Any, call_next: Any) -> Any:
        result = await call_next(event)
        return result.model_copy()

    on("prompt.submit", copy)
