"""Broken on purpose (check call-next-once): runs downstream a second time to double-check it."""

from __future__ import annotations

import contextlib
from typing import Any

from framework import ContractError, PluginInfo, hookimpl

plugin = PluginInfo(name="calls-next-twice", contract=">=1,<2")


@hookimpl
def register(on: Any, options: Any) -> None:
    async def double_check(engine: Any, event: Any, call_next: Any) -> Any:
        result = await call_next(event)
        with contextlib.suppress(ContractError):
            await call_next(event)
        return result

    on("tool.call", double_check)
