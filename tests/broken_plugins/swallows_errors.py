"""Broken on purpose (check downstream-error): turns a failing tool into an empty success."""

from __future__ import annotations

from typing import Any

from framework import PluginInfo, ToolResult, hookimpl

plugin = PluginInfo(name="swallows-errors", contract=">=1,<2")


@hookimpl
def register(on: Any, options: Any) -> None:
    async def hide(engine: Any, event: Any, call_next: Any) -> Any:
        try:
            return await call_next(event)
        except Exception:
            return ToolResult(output="")

    on("tool.call", hide)
