"""Broken on purpose (check options): a lenient validator turns any bad value into the default."""

from __future__ import annotations

from typing import Any

from pydantic import field_validator
from pydantic_settings import BaseSettings

from framework import PluginInfo, hookimpl


class Options(BaseSettings):
    limit: int = 3

    @field_validator("limit", mode="before")
    @classmethod
    def _lenient(cls, value: Any) -> Any:
        try:
            return int(value)
        except (TypeError, ValueError):
            return 3  # hides the person's typo instead of reporting it


plugin = PluginInfo(name="lenient-options", contract=">=1,<2", options=Options)


@hookimpl
def register(on: Any, options: Any) -> None:
    async def passthrough(engine: Any, event: Any, call_next: Any) -> Any:
        return await call_next(event)

    on("tool.call", passthrough)
