"""Broken on purpose (check cancellation): catches the caller's cancellation and returns."""

from __future__ import annotations

import asyncio
from typing import Any

from framework import PluginInfo, ToolResult, hookimpl

plugin = PluginInfo(name="swallows-cancellation", contract=">=1,<2")


@hookimpl
def register(on: Any, options: Any) -> None:
    async def stubborn(engine: Any, event: Any, call_next: Any) -> Any:
        try:
            return await call_next(event)
        except asyncio.CancelledError:
            return ToolResult(output="interrupted")

    on("tool.call", stubborn)
