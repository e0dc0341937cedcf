"""How a plugin's name is spelled everywhere: the pattern it must match and the names it implies."""

from __future__ import annotations

import re

PLUGIN_NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
"""Kebab-case: `my-plugin`. It becomes an env prefix, a module name and a store namespace."""


def is_plugin_name(name: str) -> bool:
    return PLUGIN_NAME.match(name) is not None


def env_prefix(plugin_name: str) -> str:
    """`my-plugin` → `MY_PLUGIN_`: where a plugin's options are read from the environment."""
    return plugin_name.upper().replace("-", "_") + "_"


def module_name(plugin_name: str) -> str:
    """`my-plugin` → `my_plugin`: the package, and the other accepted spelling of its toml table."""
    return plugin_name.replace("-", "_")


def table_plugin_name(table: str) -> str:
    """A `hookchain.toml` table (`[my-plugin]` or `[my_plugin]`) → the plugin it configures."""
    return table.replace("_", "-")
