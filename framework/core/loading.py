"""Plugin discovery and loading: each plugin on its own; a broken one is reported and skipped."""

from __future__ import annotations

import difflib
import importlib.metadata
import importlib.util
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pluggy
import structlog
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version
from pydantic import BaseModel, ValidationError
from pydantic_settings import BaseSettings
from pydantic_settings import SettingsError as SourceError

from framework.core.contract import CONTRACT_VERSION, KNOWN_CONTRACT_VERSIONS, FailMode
from framework.core.hookspecs import PROJECT, HookSpecs
from framework.core.names import env_prefix, is_plugin_name
from framework.core.ports import Handler, On
from framework.core.registration import Registration, make_registration
from framework.core.settings import (
    CONFIG_FILE,
    UserError,
    explain,
    explain_source_error,
    unknown_key,
)

ENTRY_POINT_GROUP = "hookchain.plugins"
ACCESS_KINDS: frozenset[str] = frozenset({"files", "network", "subprocess"})
_log = structlog.get_logger("hookchain.loading")


@dataclass(frozen=True, slots=True)
class PluginInfo:
    """What a plugin module declares as `plugin = PluginInfo(...)`."""

    name: str
    contract: str
    options: type[BaseModel] | None = None
    description: str = ""
    access: frozenset[str] = frozenset()
    """What the plugin does itself, outside the engine port: "files", "network", "subprocess"."""

    def __post_init__(self) -> None:
        unknown = set(self.access) - ACCESS_KINDS
        if unknown:
            raise ValueError(
                f"plugin {self.name!r}: unknown access kinds {sorted(unknown)}; "
                f"declare any of {sorted(ACCESS_KINDS)}"
            )
        object.__setattr__(self, "access", frozenset(self.access))


Status = Literal["loaded", "failed", "incompatible", "disabled"]


@dataclass(slots=True)
class LoadedPlugin:
    """A plugin the host tried to load, with what happened."""

    name: str
    module: str
    distribution: str | None = None
    version: str | None = None
    contract: str | None = None
    description: str = ""
    status: Status = "loaded"
    error: str | None = None
    options: Any = None
    registrations: list[Registration] = field(default_factory=list)
    obj: Any = None

    def label(self) -> str:
        dist = f"dist {self.distribution} {self.version}" if self.distribution else "not installed"
        return f"plugin {self.name!r} ({dist})"


@dataclass(frozen=True, slots=True)
class Candidate:
    """A plugin to try: from an entry point or passed explicitly."""

    name: str
    module: str
    load: Callable[[], Any]
    distribution: str | None = None
    version: str | None = None


def entry_point_candidates() -> list[Candidate]:
    """Every `hookchain.plugins` entry point, sorted by name (install order never matters)."""
    found = []
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = entry.dist
        found.append(
            Candidate(
                name=entry.name,
                module=entry.value,
                load=entry.load,
                distribution=None if dist is None else dist.metadata["Name"],
                version=None if dist is None else dist.version,
            )
        )
    return sorted(found, key=lambda candidate: candidate.name)


def directory_candidates(folder: Path | None) -> list[Candidate]:
    """Every `*.py` file of a plugins folder (`HOOKCHAIN_PLUGINS_DIR`, `--plugins-dir`): the
    file `my_plugin.py` is plugin `my-plugin`. A missing folder is the person's error."""
    if folder is None:
        return []
    if not folder.is_dir():
        raise UserError(
            f"plugins folder {str(folder)!r} (HOOKCHAIN_PLUGINS_DIR or --plugins-dir) is not a "
            "folder; give a folder of single-file plugins"
        )
    found = []
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith(("_", ".")):
            continue
        found.append(
            Candidate(
                name=path.stem.replace("_", "-"),
                module=str(path),
                load=_file_loader(path),
            )
        )
    return found


def _file_loader(path: Path) -> Callable[[], Any]:
    def load() -> Any:
        name = f"hookchain_local_plugins.{path.stem}"
        if name in sys.modules:
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        return module

    return load


def discovered_candidates(folder: Path | None = None) -> list[Candidate]:
    """The installed plugins (entry points) and those of a plugins folder, sorted by name; an
    installed plugin wins over a file of the same name."""
    installed = entry_point_candidates()
    names = {candidate.name for candidate in installed}
    local = [c for c in directory_candidates(folder) if c.name not in names]
    return sorted([*installed, *local], key=lambda candidate: candidate.name)


def load_failures(records: Iterable[LoadedPlugin]) -> list[LoadedPlugin]:
    """The plugins that were meant to load and did not (failed or incompatible), in order: what
    every command and the warm host's status show."""
    return [record for record in records if record.status in ("failed", "incompatible")]


def unknown_plugin_names(names: Iterable[str], candidates: Sequence[Candidate]) -> list[str]:
    """The names among `names` that no candidate has (a typo in HOOKCHAIN_PLUGINS, --plugins)."""
    known = {candidate.name for candidate in candidates}
    return [name for name in names if name not in known]


def unknown_names_message(
    names: Sequence[str], source: str, candidates: Sequence[Candidate]
) -> str:
    """One line for plugin names that match nothing, with the nearest and the installed ones."""
    known = sorted({candidate.name for candidate in candidates})
    hints = []
    for name in names:
        close = difflib.get_close_matches(name, known, n=1)
        hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return (
        f"no installed plugin named {', '.join(hints)} (from {source}); installed: "
        f"{', '.join(known) or 'none'} (see hookchain plugins; install with hookchain plugins "
        "install NAME)"
    )


def _constant(obj: Any) -> Callable[[], Any]:
    return lambda: obj


def explicit_candidates(objects: Iterable[Any]) -> list[Candidate]:
    candidates = []
    for obj in objects:
        info = getattr(obj, "plugin", None)
        name = info.name if isinstance(info, PluginInfo) else getattr(obj, "__name__", repr(obj))
        module = getattr(obj, "__name__", type(obj).__name__)
        candidates.append(Candidate(name=name, module=module, load=_constant(obj)))
    return candidates


class PluginLoadError(Exception):
    """Why one plugin was skipped."""

    status: Status = "failed"


class ContractMismatch(PluginLoadError):
    """The plugin's contract range excludes every contract version the host speaks."""

    status: Status = "incompatible"


def load_plugins(
    pm: pluggy.PluginManager,
    candidates: Sequence[Candidate],
    *,
    only: Sequence[str],
    disabled: Sequence[str],
    options: Mapping[str, Mapping[str, Any]],
    first_sequence: int = 0,
    options_source: str = CONFIG_FILE,
) -> list[LoadedPlugin]:
    """Load each candidate on its own; a failure skips that plugin and is recorded, never raised.

    A name in `only` that no candidate has is recorded as a failed plugin of that name, so a
    typo shows wherever load failures show. `options_source` names where `options` came from
    (the config file) in errors."""
    loaded: list[LoadedPlugin] = []
    names: set[str] = set()
    sequence = [first_sequence]
    for candidate in candidates:
        record = LoadedPlugin(
            name=candidate.name,
            module=candidate.module,
            distribution=candidate.distribution,
            version=candidate.version,
        )
        loaded.append(record)
        if (only and candidate.name not in only) or candidate.name in disabled:
            record.status = "disabled"
            continue
        try:
            _load_one(pm, candidate, record, names, options, sequence, options_source)
        except PluginLoadError as error:
            record.status = error.status
            record.error = str(error)
            record.registrations = []
            _log.error("plugin not loaded", plugin=record.name, reason=record.error)
    for name in unknown_plugin_names(only, candidates):
        loaded.append(
            LoadedPlugin(
                name=name,
                module="",
                status="failed",
                error=unknown_names_message([name], "the plugins setting", candidates),
            )
        )
    return loaded


def _load_one(
    pm: pluggy.PluginManager,
    candidate: Candidate,
    record: LoadedPlugin,
    names: set[str],
    options: Mapping[str, Mapping[str, Any]],
    sequence: list[int],
    options_source: str,
) -> None:
    label = record.label()
    try:
        obj = candidate.load()
    except Exception as error:
        raise PluginLoadError(
            f"error loading {label}: cannot import {candidate.module}: "
            f"{type(error).__name__}: {error}"
        ) from error
    info = getattr(obj, "plugin", None)
    if not isinstance(info, PluginInfo):
        raise PluginLoadError(
            f"error loading {label}: {candidate.module} has no `plugin = PluginInfo(...)`; "
            "declare the plugin's name and contract range"
        )
    record.name = info.name
    record.contract = info.contract
    record.description = info.description
    label = record.label()
    if not is_plugin_name(info.name):
        raise PluginLoadError(f"error loading {label}: the name must be kebab-case (my-plugin)")
    if info.name in names:
        raise PluginLoadError(f"error loading {label}: another plugin already has this name")
    try:
        supported = SpecifierSet(info.contract)
    except InvalidSpecifier:
        raise PluginLoadError(
            f"error loading {label}: contract range {info.contract!r} is not a version specifier "
            "(write e.g. '>=1,<2')"
        ) from None
    if not speaks(supported):
        spoken = ", ".join(KNOWN_CONTRACT_VERSIONS)
        raise ContractMismatch(
            f"error loading {label}: it supports contract {info.contract} but this host speaks "
            f"contract {spoken}; install a version of the plugin for contract "
            f"{CONTRACT_VERSION} or a hookchain that speaks {info.contract}"
        )
    record.options = _options(
        info, label, options.get(info.name, {}), f"{options_source} [{info.name}]"
    )
    try:
        pm.register(obj, name=info.name)
    except (pluggy.PluginValidationError, ValueError) as error:
        raise PluginLoadError(f"error loading {label}: {error}") from error
    registrations: list[Registration] = []

    def on(
        event: str,
        handler: Handler,
        *,
        match: Mapping[str, Any] | None = None,
        order: int = 0,
        fail: FailMode = "open",
        budget: float | None = None,
    ) -> Registration:
        registration = make_registration(
            plugin=info.name,
            event=event,
            handler=handler,
            match=match,
            order=order,
            fail=fail,
            budget=budget,
            sequence=sequence[0],
        )
        sequence[0] += 1
        registrations.append(registration)
        return registration

    bound: On = on
    try:
        for impl in pm.hook.register.get_hookimpls():
            if impl.plugin is obj:
                impl.function(on=bound, options=record.options)
    except Exception as error:
        pm.unregister(obj)
        raise PluginLoadError(
            f"error loading {label}: its register() raised {type(error).__name__}: {error}"
        ) from error
    names.add(info.name)
    record.registrations = registrations
    record.obj = obj


def _options(info: PluginInfo, label: str, overrides: Mapping[str, Any], where: str) -> Any:
    if info.options is None:
        if overrides:
            raise PluginLoadError(
                f"error loading {label}: it takes no options, but {where} sets "
                f"{', '.join(sorted(overrides))}; remove the table"
            )
        return None
    prefix = env_prefix(info.name)
    known = list(info.options.model_fields)
    for key in overrides:
        if key not in known:
            # Refuse: an option the person meant to set and the plugin never reads is silent.
            raise PluginLoadError(f"error loading {label}: {unknown_key(key, known, where)}")
    try:
        if issubclass(info.options, BaseSettings):
            # pydantic-settings takes the prefix at construction: the name decides it.
            return info.options(_env_prefix=prefix, **overrides)
        return info.options(**overrides)
    except ValidationError as error:
        explained = explain(error, prefix, table=overrides, where=where, known=known)
        raise PluginLoadError(f"error loading {label}: bad options: {explained}") from None
    except SourceError as error:
        raise PluginLoadError(
            f"error loading {label}: bad options: {explain_source_error(error, prefix)}"
        ) from None


def make_plugin_manager() -> pluggy.PluginManager:
    """A fresh manager per host: there is no global one."""
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(HookSpecs)
    return pm


def speaks(supported: SpecifierSet) -> bool:
    """Whether a plugin's contract range admits a version this host speaks.

    A minor version only adds (fields with defaults, new values), so a host of 1.1 still speaks
    1.0: a plugin declaring `>=1.0,<1.1` loads and simply never reads the 1.1 additions.
    """
    return any(Version(version) in supported for version in KNOWN_CONTRACT_VERSIONS)
