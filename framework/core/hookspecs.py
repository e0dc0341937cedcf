"""The pluggy hook specifications a plugin module implements."""

from __future__ import annotations

from collections.abc import Mapping
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

    @hookspec
    def harness_settings(
        self, harness: str, scope: str, project_root: str, options: Any
    ) -> Mapping[str, Any] | None:
        """Settings the plugin needs in the harness's own settings file, which `hookchain
        install` merges into the file it writes (and `uninstall` takes out again). Called in
        the installing process, never in a session; it must not write anything itself.

        Nested mappings merge key by key; any other value (a list too) is one value. A key the
        person set to something else is kept, and install says so. A key under `hooks` is
        refused: hookchain's own hooks live there.

        :param harness: the harness being installed, one of `HARNESSES` (`claude-code`, …).
        :param scope: which of its settings files: `local`, `project` or `user`.
        :param project_root: the absolute path of the project install runs for.
        :param options: the plugin's options, as a host in that project loads them (or None).
        :return: a JSON-compatible mapping, or None for nothing.
        """

    @hookspec
    def status_line(self, project_root: str, options: Any) -> str | None:
        """One line about the plugin in a project for `hookchain status` (and the warm host's
        status of each project it serves): what it enforces there and how, plainly. Called
        outside any session; it must be quick (no network) and must not write anything.

        :param project_root: the absolute path of the project.
        :param options: the plugin's options, as a host in that project loads them (or None).
        :return: the line (no plugin name: hookchain adds it), or None for nothing to say.
        """
