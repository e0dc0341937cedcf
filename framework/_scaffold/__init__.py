"""`hookchain new-plugin`: render the plugin package template into a new folder."""

from __future__ import annotations

import string
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from framework import CONTRACT_VERSION, __version__
from framework.core.names import env_prefix, is_plugin_name, module_name

__all__ = ["Names", "ScaffoldError", "scaffold"]

_SUFFIX = ".tmpl"


class ScaffoldError(Exception):
    """The plugin cannot be scaffolded as asked (bad name, folder in the way)."""


@dataclass(frozen=True, slots=True)
class Names:
    """Every spelling of the plugin's name the template needs."""

    name: str

    @property
    def module(self) -> str:
        return module_name(self.name)

    @property
    def distribution(self) -> str:
        return f"hookchain-{self.name}"

    @property
    def env_prefix(self) -> str:
        return env_prefix(self.name)

    @property
    def contract(self) -> str:
        major = int(CONTRACT_VERSION.split(".")[0])
        return f">={major},<{major + 1}"

    def substitutions(self) -> dict[str, str]:
        return {
            "name": self.name,
            "module": self.module,
            "distribution": self.distribution,
            "env_prefix": self.env_prefix,
            "contract": self.contract,
            "hookchain_requirement": f"hookchain>={__version__}",
        }


def _files(folder: Traversable, relative: Path) -> list[tuple[Path, Traversable]]:
    found: list[tuple[Path, Traversable]] = []
    for entry in sorted(folder.iterdir(), key=lambda item: item.name):
        if entry.name == "__pycache__":
            continue
        if entry.is_dir():
            found += _files(entry, relative / entry.name)
        else:
            found.append((relative / entry.name, entry))
    return found


def scaffold(name: str, directory: Path) -> Path:
    """Write a new plugin package `directory/<name>`; refuse a bad name or an existing folder."""
    if not is_plugin_name(name):
        raise ScaffoldError(f"plugin name {name!r} must be kebab-case, like my-plugin")
    names = Names(name)
    target = directory / name
    if target.exists():
        raise ScaffoldError(f"{target} already exists; choose another name or --dir")
    template = resources.files("framework._scaffold").joinpath("template")
    values = names.substitutions()
    rendered: list[tuple[Path, str]] = []
    for relative, source in _files(template, Path()):
        parts = [
            names.module if part == "package" else string.Template(part).substitute(values)
            for part in relative.parts
        ]
        path = Path(*parts)
        text = source.read_text(encoding="utf-8")
        if path.name.endswith(_SUFFIX):
            path = path.with_name(path.name.removesuffix(_SUFFIX))
            text = string.Template(text).substitute(values)
        rendered.append((path, text))
    for path, text in rendered:
        destination = target / path
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_text(text, encoding="utf-8")
    return target
