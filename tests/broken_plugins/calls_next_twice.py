"""Broken on purpose (check call-next-once): runs downstream a second time to double-check it."""

from __future__ import annotations

from typing import Any

from framework import ContractError, PluginInfo, hookimpl

plugin = PluginInfo(name="calls-next-twice", contract=">=1,<2")


@hookimpl
def register(on: Any, options: Any) -> None:
    async def double_check(engine: Any, event: Any, call_next: Any) -> Any:
        result = await call_next(event)
        try:
            await call_next(event)
        except ContractError:
            pass
        return result

    on("tool.call", double_check)
