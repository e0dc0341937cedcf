"""A host cut off from the person's environment: the one recipe every part of the kit uses."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from framework import Clock, FakeClock, Host, HostSettings, StoreBackend, load_settings

__all__ = ["isolated_settings", "make_host"]


def isolated_settings(**update: Any) -> HostSettings:
    """Host settings without the person's plugin choices (HOOKCHAIN_PLUGINS, hookchain.toml,
    HOOKCHAIN_PLUGINS_DIR)."""
    choices: dict[str, Any] = {"plugins": [], "disable_plugins": [], "plugins_dir": None}
    return load_settings({}).model_copy(update={**choices, **update})


def make_host(
    *plugins: Any,
    clock: Clock | None = None,
    env: Mapping[str, str] | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    store: str | StoreBackend = "memory://",
    sandbox: Path | None = None,
    settings: HostSettings | None = None,
) -> Host:
    """A host loading only `plugins`, isolated from the person's environment and hookchain.toml.

    Use it as `async with make_host(my_plugin) as host:`. With `sandbox` (a folder) the host is
    sandboxed: `engine.sandboxed` is true and every plugin's `engine.data_dir()` is in it.
    """
    return Host(
        plugins=list(plugins),
        entry_points=False,
        settings=settings if settings is not None else isolated_settings(),
        config={},
        store=store,
        clock=clock if clock is not None else FakeClock(),
        env=dict(env or {}),
        options=options,
        sandbox=sandbox,
    )
