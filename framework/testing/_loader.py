"""Load one plugin through a fresh host and list its registrations as the checks need them."""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from framework.testing._isolated import make_host

__all__ = ["HandlerUnderTest", "InstalledPlugin", "PluginUnderTest", "installed_plugins", "load"]

ENTRY_POINT_GROUP = "hookchain.plugins"


@dataclass(frozen=True, slots=True)
class HandlerUnderTest:
    """One registration of the plugin: its handler and how the chain would call it."""

    plugin: str
    event: str
    handler: Callable[..., Any]
    match: Callable[[Any], bool] | None
    match_spec: Mapping[str, Any] | None
    order: int
    fail: str
    budget: float | None

    @property
    def name(self) -> str:
        return str(getattr(self.handler, "__qualname__", repr(self.handler)))

    def accepts(self, event: Any) -> bool:
        return self.match is None or bool(self.match(event))

    def signature(self) -> tuple[str, ...]:
        """What must be equal between two loads: handler identity by name, filter, order, mode."""
        module = str(getattr(self.handler, "__module__", ""))
        spec = "" if self.match_spec is None else _describe_spec(self.match_spec)
        return (self.event, module, self.name, spec, str(self.order), self.fail, str(self.budget))


def _describe_spec(spec: Mapping[str, Any]) -> str:
    parts = []
    for key in sorted(spec):
        wanted = spec[key]
        if callable(wanted):
            text = str(getattr(wanted, "__qualname__", type(wanted).__name__))
        elif isinstance(wanted, (set, frozenset)):
            text = repr(sorted(map(repr, wanted)))
        else:
            text = repr(wanted)
        parts.append(f"{key}={text}")
    return ",".join(parts)


@dataclass(frozen=True, slots=True)
class PluginUnderTest:
    """A plugin as loaded by the host: its declaration, status and registrations in their order."""

    name: str
    obj: Any
    info: Any
    distribution: str | None
    version: str | None
    status: str
    error: str | None
    handlers: tuple[HandlerUnderTest, ...]

    @property
    def loaded(self) -> bool:
        return self.status == "loaded"


@dataclass(frozen=True, slots=True)
class InstalledPlugin:
    """A `hookchain.plugins` entry point: name, module path and the distribution behind it."""

    name: str
    value: str
    distribution: str | None
    version: str | None

    def load(self) -> Any:
        """Import the entry point's object (an import error propagates to the caller)."""
        module_name, _, attribute = self.value.partition(":")
        obj: Any = importlib.import_module(module_name)
        for part in filter(None, attribute.split(".")):
            obj = getattr(obj, part)
        return obj


def installed_plugins(names: Iterable[str] = ()) -> list[InstalledPlugin]:
    """Installed plugins (entry-point name or distribution name in `names`; all when empty)."""
    wanted = set(names)
    found = []
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = entry.dist
        distribution = None if dist is None else str(dist.metadata["Name"])
        if wanted and entry.name not in wanted and distribution not in wanted:
            continue
        found.append(
            InstalledPlugin(
                name=entry.name,
                value=entry.value,
                distribution=distribution,
                version=None if dist is None else dist.version,
            )
        )
    return sorted(found, key=lambda plugin: plugin.name)


async def load(
    obj: ModuleType | Any,
    *,
    distribution: str | None = None,
    version: str | None = None,
) -> PluginUnderTest:
    """Load `obj` alone into a fresh host (memory store, fake clock) and read its registrations."""
    async with make_host(obj) as host:
        record = host.plugins[0]
        handlers = [
            HandlerUnderTest(
                plugin=reg.plugin,
                event=reg.event,
                handler=reg.handler,
                match=reg.match,
                match_spec=reg.match_spec,
                order=reg.order,
                fail=reg.fail,
                budget=reg.budget,
            )
            for reg in record.registrations
        ]
        return PluginUnderTest(
            name=record.name,
            obj=obj,
            info=getattr(obj, "plugin", None),
            distribution=distribution or record.distribution,
            version=version or record.version,
            status=record.status,
            error=record.error,
            handlers=tuple(handlers),
        )
