"""The pluggy hook specifications a plugin module implements."""

from __future__ import annotations

from typing import Any

import pluggy

PROJECT = "hookchain"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class HookSpecs:
    """Hooks a hookchain plugin may implement with `@hookimpl`."""

    @hookspec
    def register(self, on: Any, options: Any) -> None:
        """Attach handlers. Called once per host, for this plugin only.

        :param on: `on(event, handler, *, match=None, order=0, fail="open", budget=None)`,
            bound to this plugin.
        :param options: the plugin's options model instance, or None without one.
        """

    @hookspec
    def register_cli(self, app: Any) -> None:
        """Add commands to the `hookchain` command line.

        :param app: the `typer.Typer` application of `hookchain`.
        """
