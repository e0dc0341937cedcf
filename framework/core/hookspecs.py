"""The pluggy hook specifications a plugin module implements."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import typer

    from framework.core.ports import On

PROJECT = "hookchain"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class HookSpecs:
    """Hooks a hookchain plugin may implement with `@hookimpl`."""

    @hookspec
    def register(self, on: On, options: Any) -> None:
        """Attach handlers. Called once per host, for this plugin only.

        :param on: an `On`: `on(event, handler, *, match=None, order=0, fail="open",
            budget=None)`, bound to this plugin; `handler` is a `Handler` taking an `EnginePort`.
        :param options: the plugin's options model instance, or None without one.
        """

    @hookspec
    def register_cli(self, app: typer.Typer) -> None:
        """Add commands to the `hookchain` command line.

        :param app: the `typer.Typer` application of `hookchain`.
        """
