"""What the commands share: the one error handler, a host built from the settings, plugin names.

A run that a plugin which did not load would make misleading is refused here too."""

from __future__ import annotations

import difflib
import errno
import os
import traceback
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from framework.core.host import Host
from framework.core.loading import (
    discovered_candidates,
    load_failures,
    unknown_names_message,
    unknown_plugin_names,
)
from framework.core.logging import configure_logging
from framework.core.settings import (
    UserError,
    find_config,
    load_settings,
    read_config,
    setting_source,
)
from framework.stores.base import StoreError

USER_ERRORS: tuple[type[Exception], ...] = (UserError, StoreError)
"""What a person can fix: printed as one line, exit 2; a traceback only with --debug."""


def user_error_message(error: BaseException) -> str | None:
    """The line to print for an error the person can fix, or None for a bug (a traceback)."""
    if isinstance(error, USER_ERRORS):
        return str(error)
    if isinstance(error, OSError) and error.errno == errno.EADDRINUSE:
        return f"{error}; the port is taken: choose another one or stop what listens there"
    return None


def debugging() -> bool:
    """--debug, or HOOKCHAIN_LOG_LEVEL=debug: errors show their traceback."""
    return os.environ.get("HOOKCHAIN_LOG_LEVEL", "").lower() == "debug"


class HookchainGroup(TyperGroup):
    """The one handler of a person's errors, for every command (built-in or a plugin's): the
    error's own line on stderr and exit 2, never a traceback unless debugging."""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        try:
            return super().resolve_command(ctx, args)
        except Exception as error:
            name = args[0] if args else ""
            if type(error).__name__ != "UsageError" or not name or name.startswith("-"):
                raise
            # A plugin's command (hookchain NAME ...) exists only once the plugin is
            # installed: say so rather than only suggest a built-in that looks alike.
            close = difflib.get_close_matches(name, list(self.commands), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise UserError(
                f"no command {name!r}; {hint}a plugin's command appears once the plugin is "
                "installed: see hookchain plugins, then hookchain plugins install DISTRIBUTION "
                "(from a checkout: hookchain plugins install -e FOLDER)"
            ) from None

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as error:
            message = user_error_message(error)
            if message is None:
                raise
            if debugging():
                traceback.print_exc()
            typer.echo(f"hookchain: {message}", err=True)
            ctx.exit(2)


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print a clear error on stderr and return the exit to raise."""
    typer.echo(f"hookchain: {message}", err=True)
    return typer.Exit(code)


def split_names(values: list[str] | None) -> list[str]:
    """Plugin names given as `--plugins a,b --plugins c`."""
    return [name.strip() for value in values or () for name in value.split(",") if name.strip()]


PluginsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--plugins",
        metavar="NAME[,NAME…]",
        help="Only these plugins (comma-separated or repeated).",
    ),
]
# The old spelling of --plugins on `try`, kept working but out of the help.
PluginAlias = Annotated[list[str] | None, typer.Option("--plugin", hidden=True)]


def host_from_options(
    plugins: list[str] | None = None, store: str | None = None, *, configure_log: bool = True
) -> Host:
    """A host for a CLI command: installed plugins, optionally only some, on a chosen store.

    A plugin name that matches no plugin (in --plugins, HOOKCHAIN_PLUGINS, the config file, or
    the disable list) is refused with the names that exist."""
    path = find_config()
    config = read_config(path)
    settings = load_settings(config, path=path)
    table = config.get("hookchain", {})
    where = f"{path} [hookchain]"
    candidates = discovered_candidates(settings.plugins_dir)
    checks = [
        (plugins or settings.plugins, "--plugins" if plugins else None, "plugins"),
        (settings.disable_plugins, None, "disable_plugins"),
    ]
    for names, flag, setting in checks:
        unknown = unknown_plugin_names(names, candidates)
        if unknown:
            source = flag or setting_source(setting, table, where)
            raise UserError(unknown_names_message(unknown, source, candidates))
    if plugins:
        settings = settings.model_copy(update={"plugins": plugins})
    if configure_log:
        configure_logging(settings.log_level)
    # The host finds the config file itself: it keeps the path (a guard protects the file).
    return Host(settings=settings, store=store)


def refuse_load_failures(host: Host) -> None:
    """A run without a plugin that was meant to load would mislead: refuse it, naming each."""
    failed = load_failures(host.plugins)
    if failed:
        names = ",".join(record.name for record in failed)
        lines = [record.error or f"plugin {record.name!r} did not load" for record in failed]
        lines.append(
            f"fix the plugin above, or leave it out: --plugins NAME…, or "
            f"HOOKCHAIN_DISABLE_PLUGINS={names}"
        )
        raise UserError("\n".join(lines))
