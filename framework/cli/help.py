"""The help's conventions: metavars as people write them (`--store URL`, `EVENT`), no types."""

from __future__ import annotations

from typing import Any

from typer import core

_TYPE_NAMES = {"str": "TEXT", "int": "INTEGER", "float": "NUMBER", "Path": "PATH"}


def _metavar(param: Any, ctx: Any) -> str | None:
    """Nothing for an argument (its name column shows its METAVAR) or a flag; `METAVAR` if
    given; else a conventional upper-case name (TEXT, PATH), `…` when repeatable, `a|b` for a
    choice."""
    if isinstance(param, core.TyperArgument):
        return None
    if param.metavar is not None:
        return str(param.metavar)
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return None
    desc = param.type_descriptor
    if desc.is_choice and desc.choices is not None:
        return "|".join(str(getattr(choice, "value", choice)) for choice in desc.choices)
    bare = param.bare_type().removeprefix("list[").removesuffix("]")
    label = _TYPE_NAMES.get(bare, bare.upper())
    return f"{label}…" if desc.is_list or param.nargs != 1 else label


def _argument_name(param: Any) -> str:
    return str(param.metavar) if param.metavar is not None else str(param.name or "ARG").upper()


def _argument_usage(param: Any) -> str:
    name = _argument_name(param)
    name = name if param.required else f"[{name}]"
    return f"{name}..." if param.nargs != 1 and param.metavar is None else name


def conventional_metavars() -> None:
    """Make typer's help show conventional metavars for every command, the plugins' too.

    typer renders each parameter's Python type (`<bool>`, `<list[Path]>`) and an argument as
    `{paths}`; one hook here replaces that for all commands instead of a metavar on each."""
    for cls in (core.TyperOption, core.TyperArgument):
        cls.display_type_rich = _metavar  # type: ignore[method-assign,assignment]
    core.TyperArgument.display_name_raw = property(_argument_name)  # type: ignore[method-assign,assignment]
    core.TyperArgument._usage_display_name = _argument_usage  # type: ignore[method-assign,assignment]
