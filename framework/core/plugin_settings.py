"""Plugins' settings (the `harness_settings` hook) merged into a settings file, and taken out.

What install wrote is recorded beside the settings file, in `<name>.hookchain.json` (for
`.claude/settings.local.json`: `.claude/settings.local.hookchain.json`): each value with the
plugin that asked for it, and the objects install had to create. Uninstall removes exactly
those, and only while they still hold what install wrote; a value the person changed since is
theirs. A key the person set before install is never overwritten: it is kept and reported.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LEDGER_SUFFIX = ".hookchain.json"
LEDGER_VERSION = 1
RESERVED = ("hooks",)
"""Top-level keys no plugin may contribute: hookchain's own hooks live there."""

Key = tuple[str, ...]


class PluginSettingsError(Exception):
    """Plugins asked for settings that cannot be merged; the message names them and the key."""


@dataclass(frozen=True, slots=True)
class Kept:
    """A key the person set, kept over what a plugin asked for."""

    plugin: str
    key: Key
    theirs: Any
    wanted: Any
    where: str | None = None
    """The other settings file the person's value is in (None: the file install writes)."""

    def describe(self) -> str:
        place = f" in {self.where}" if self.where else ""
        return (
            f"kept your {dotted(self.key)} = {json.dumps(self.theirs)}{place} "
            f"({self.plugin} asked for {json.dumps(self.wanted)})"
        )


@dataclass(slots=True)
class Merged:
    """Settings after plugins' values were merged in (or taken out), and what happened."""

    settings: dict[str, Any]
    ledger: dict[str, Any] | None
    """What to record beside the settings file (None: nothing of hookchain's is left)."""
    added: list[tuple[str, Key]] = field(default_factory=list)
    kept: list[Kept] = field(default_factory=list)
    removed: list[tuple[str, Key]] = field(default_factory=list)
    left: list[tuple[str, Key]] = field(default_factory=list)
    """Values install wrote that the person changed since: left as they are."""


def dotted(key: Key) -> str:
    return ".".join(key)


def ledger_path(settings_path: Path) -> Path:
    """Where install records what it wrote into `settings_path`."""
    stem = settings_path.name.removesuffix(".json")
    return settings_path.with_name(stem + LEDGER_SUFFIX)


def read_ledger(path: Path) -> dict[str, Any]:
    """The record beside a settings file; an absent one is empty. An unreadable one is an
    error: without it uninstall could not tell hookchain's values from the person's."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        ledger = json.loads(text)
    except ValueError as error:
        raise PluginSettingsError(
            f"{path} is not valid JSON ({error}); it records what hookchain install wrote: "
            "fix it or delete it (then hookchain's values in the settings count as yours)"
        ) from None
    if not isinstance(ledger, dict) or not isinstance(ledger.get("written", []), list):
        raise PluginSettingsError(f"{path} does not hold hookchain's record; delete it")
    return ledger


def render_ledger(ledger: Mapping[str, Any]) -> str:
    return json.dumps(ledger, indent=2, ensure_ascii=False) + "\n"


def leaves(value: Mapping[str, Any], prefix: Key = ()) -> Iterator[tuple[Key, Any]]:
    """Each key of a nested mapping down to its values (an empty mapping is a value)."""
    for name, item in value.items():
        key = (*prefix, str(name))
        if isinstance(item, Mapping) and item:
            yield from leaves(item, key)
        else:
            yield key, copy.deepcopy(item if not isinstance(item, Mapping) else {})


_MISSING = object()


def _get(settings: Mapping[str, Any], key: Key) -> Any:
    """The value at `key`; `_MISSING` when absent; a non-object on the way counts as there
    (the person's value in the way is kept)."""
    node: Any = settings
    for name in key:
        if not isinstance(node, Mapping):
            return node
        if name not in node:
            return _MISSING
        node = node[name]
    return node


def _set(settings: dict[str, Any], key: Key, value: Any, created: set[Key]) -> None:
    node = settings
    for depth, name in enumerate(key[:-1]):
        if name not in node:
            node[name] = {}
            created.add(key[: depth + 1])
        node = node[name]
    node[key[-1]] = value


def _delete(settings: dict[str, Any], key: Key, created: set[Key]) -> None:
    """Delete `key`, then every object install created on its way that is now empty."""
    trail = [settings]
    for name in key[:-1]:
        trail.append(trail[-1][name])
    del trail[-1][key[-1]]
    for depth in range(len(key) - 1, 0, -1):
        parent, child = trail[depth - 1], key[depth - 1]
        if key[:depth] in created and not parent[child]:
            del parent[child]
        else:
            break


def _written(ledger: Mapping[str, Any]) -> dict[Key, tuple[str, Any]]:
    found: dict[Key, tuple[str, Any]] = {}
    for entry in ledger.get("written", []):
        if isinstance(entry, dict) and isinstance(entry.get("key"), list):
            found[tuple(str(part) for part in entry["key"])] = (
                str(entry.get("plugin", "")),
                entry.get("value"),
            )
    return found


def _created(ledger: Mapping[str, Any]) -> set[Key]:
    return {
        tuple(str(part) for part in key)
        for key in ledger.get("created", [])
        if isinstance(key, list)
    }


def _ledger(written: Mapping[Key, tuple[str, Any]], created: set[Key]) -> dict[str, Any] | None:
    if not written:
        return None
    return {
        "version": LEDGER_VERSION,
        "about": "what hookchain install wrote into the settings file beside this one; "
        "hookchain uninstall removes exactly these",
        "written": [
            {"plugin": plugin, "key": list(key), "value": value}
            for key, (plugin, value) in sorted(written.items())
        ],
        "created": [list(key) for key in sorted(created)],
    }


def _wanted(contributions: Mapping[str, Mapping[str, Any]]) -> dict[Key, tuple[str, Any]]:
    """Every key the plugins ask for, refusing two plugins asking for one key (or one inside
    another's value) and any key under `hooks`."""
    wanted: dict[Key, tuple[str, Any]] = {}
    for plugin in sorted(contributions):
        for key, value in leaves(contributions[plugin]):
            if key[0] in RESERVED:
                raise PluginSettingsError(
                    f"plugin {plugin!r} asks for settings key {dotted(key)!r}: `{key[0]}` is "
                    "hookchain's own; a plugin's harness_settings() must leave it out"
                )
            for other, (owner, _) in wanted.items():
                if other[: len(key)] == key or key[: len(other)] == other:
                    raise PluginSettingsError(
                        f"plugins {owner!r} and {plugin!r} both ask for settings key "
                        f"{dotted(min(key, other, key=len))!r}; disable one of them or ask "
                        "their authors to agree"
                    )
            wanted[key] = (plugin, value)
    return wanted


def merge_plugin_settings(
    settings: Mapping[str, Any],
    contributions: Mapping[str, Mapping[str, Any]],
    ledger: Mapping[str, Any],
    *,
    unchanged: Collection[str] = (),
    elsewhere: Mapping[str, Mapping[str, Any]] | None = None,
) -> Merged:
    """`settings` with what the plugins ask for (plugin name → nested mapping). Values an
    earlier install wrote and no plugin asks for now are taken out (while unchanged), except
    those of the `unchanged` plugins (which could not be asked: they stay as recorded); a key
    the person set is kept and reported, also one set in a settings file of `elsewhere` (its
    name → its settings: the harness reads them together, so a value written here would
    override or duplicate the person's there)."""
    result = copy.deepcopy(dict(settings))
    before = _written(ledger)
    created = _created(ledger)
    wanted = _wanted(contributions)
    for key, (plugin, value) in before.items():
        if plugin in unchanged and plugin not in contributions:
            wanted[key] = (plugin, value)
    merged = Merged(result, None)
    written: dict[Key, tuple[str, Any]] = {}
    for key, (plugin, value) in sorted(before.items()):
        if key in wanted:
            continue
        if _get(result, key) == value:
            _delete(result, key, created)
            merged.removed.append((plugin, key))
        else:
            merged.left.append((plugin, key))
    for key, (plugin, value) in wanted.items():
        current = _get(result, key)
        ours = key in before and current == before[key][1]
        if current is _MISSING:
            other = _found_elsewhere(elsewhere or {}, key)
            if other is not None:
                where, theirs = other
                if theirs != value:
                    merged.kept.append(Kept(plugin, key, theirs, value, where))
                continue
        if current is _MISSING or ours:
            if current != value:
                _set(result, key, value, created)
                merged.added.append((plugin, key))
            written[key] = (plugin, value)
        elif current != value:
            merged.kept.append(Kept(plugin, key, current, value))
        # else: the person set the same value: theirs, and uninstall leaves it.
    merged.ledger = _ledger(written, {k for k in created if _get(result, k) is not _MISSING})
    return merged


def _found_elsewhere(
    elsewhere: Mapping[str, Mapping[str, Any]], key: Key
) -> tuple[str, Any] | None:
    for where, settings in elsewhere.items():
        found = _get(settings, key)
        if found is not _MISSING:
            return where, found
    return None


def remove_plugin_settings(settings: Mapping[str, Any], ledger: Mapping[str, Any]) -> Merged:
    """`settings` without what install wrote (each value only while it is still install's)."""
    return merge_plugin_settings(settings, {}, ledger)
