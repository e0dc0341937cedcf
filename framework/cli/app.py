"""The `hookchain` command line: plugins, try, and the commands other modules and plugins add."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from typing import Annotated, Any

import anyio
import typer

from framework import __version__
from framework.core.chain import Outcome
from framework.core.contract import CONTRACT_VERSION, ContractError, Event, build_event
from framework.core.host import Host
from framework.core.logging import configure_logging
from framework.core.settings import SettingsError, find_config, load_settings, read_config

app = typer.Typer(
    name="hookchain",
    help="A plugin host for AI coding-agent harnesses such as Claude Code.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Modules of the host that add their own commands; each exposes `register(app)`.
_COMMAND_MODULES = (
    "framework.replay.cli",
    "framework.cli.check",
    "framework.claude_code.cli",
    "framework.cli.harnesses",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"hookchain {__version__} (contract {CONTRACT_VERSION})")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = False,
) -> None:
    """hookchain runs every event of an agent session through one chain of plugin handlers."""


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print a clear error on stderr and return the exit to raise."""
    typer.echo(f"hookchain: {message}", err=True)
    return typer.Exit(code)


def host_from_options(plugins: list[str] | None = None, store: str | None = None) -> Host:
    """A host for a CLI command: entry-point plugins, optionally only some, on a chosen store."""
    try:
        config = read_config(find_config())
        settings = load_settings(config)
    except SettingsError as error:
        raise fail(str(error)) from None
    if plugins:
        settings = settings.model_copy(update={"plugins": plugins})
    configure_logging(settings.log_level)
    return Host(settings=settings, store=store, config=config)


def plugins_report(host: Host) -> dict[str, Any]:
    """What `hookchain plugins --json` prints."""
    return {
        "contract": CONTRACT_VERSION,
        "plugins": [
            {
                "name": record.name,
                "module": record.module,
                "distribution": record.distribution,
                "version": record.version,
                "contract": record.contract,
                "status": record.status,
                "error": record.error,
                "description": record.description,
                "handlers": len(record.registrations),
            }
            for record in host.plugins
        ],
        "chains": {
            event: [
                {
                    "plugin": reg.plugin,
                    "handler": reg.handler_name,
                    "order": reg.order,
                    "fail": reg.fail,
                    "budget": reg.budget,
                    "match": _jsonable(reg.match_spec),
                }
                for reg in chain
            ]
            for event, chain in sorted(host.chains().items())
        },
        "commands": {name: plugin for name, (plugin, _) in sorted(host.commands.items())},
    }


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, (set, frozenset, list, tuple)):
        return sorted(_jsonable(item) for item in value)
    if callable(value):
        return getattr(value, "__qualname__", "callable")
    return value


@app.command("plugins")
def plugins_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List installed plugins (distribution, version, contract range, status) and chain order."""

    async def run() -> dict[str, Any]:
        async with host_from_options(store="memory://") as host:
            return plugins_report(host)

    report = anyio.run(run)
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title=f"hookchain plugins (contract {CONTRACT_VERSION})")
    for column in ("plugin", "distribution", "version", "contract", "status"):
        table.add_column(column)
    for entry in report["plugins"]:
        status = entry["status"] if not entry["error"] else f"{entry['status']}: {entry['error']}"
        table.add_row(
            entry["name"],
            entry["distribution"] or "-",
            entry["version"] or "-",
            entry["contract"] or "-",
            status,
        )
    console.print(table)
    if not report["plugins"]:
        console.print("No plugins installed (entry-point group hookchain.plugins).")
    for event, chain in report["chains"].items():
        order = " → ".join(
            f"{link['plugin']}:{link['handler'].rsplit('.', 1)[-1]}" for link in chain
        )
        console.print(f"[bold]{event}[/bold]: {order} → terminal")


def _payloads(payload: str | None) -> Iterator[tuple[int, str]]:
    if payload is not None:
        yield 1, payload
        return
    for number, line in enumerate(sys.stdin, start=1):
        if line.strip():
            yield number, line


def outcome_json(outcome: Outcome) -> dict[str, Any]:
    """An outcome as JSON: the result and the provenance of every action."""
    result = outcome.result
    if hasattr(result, "model_dump"):
        result_json: Any = result.model_dump(mode="json")
    elif hasattr(result, "__anext__"):
        result_json = "<stream>"
    else:
        result_json = result
    return {
        "result": result_json,
        "provenance": [
            {"by": action.by, "kind": action.kind, "text": action.text, "event": action.event}
            for action in outcome.actions
        ],
    }


@app.command("try")
def try_command(
    event: Annotated[str, typer.Argument(help="Event name: tool.call, prompt.submit, ...")],
    payload: Annotated[
        str | None,
        typer.Option("--payload", help="The event as JSON; without it, JSON lines on stdin."),
    ] = None,
    plugins: Annotated[
        list[str] | None, typer.Option("--plugin", help="Only this plugin (repeatable).")
    ] = None,
    store: Annotated[str, typer.Option(help="Store URL.")] = "memory://",
) -> None:
    """Dispatch an event through the installed plugins with a dry-run terminal; print JSON."""

    async def run() -> int:
        failures = 0
        async with host_from_options(plugins, store) as host:
            for number, text in _payloads(payload):
                try:
                    data = json.loads(text)
                    if not isinstance(data, dict):
                        raise ValueError("the payload must be a JSON object")
                    built: Event = build_event(event, data)
                except (ValueError, ContractError) as error:
                    typer.echo(f"hookchain try: input {number}: {_brief(error)}", err=True)
                    failures += 1
                    continue
                outcome = await host.dispatch(built)
                result = outcome.result
                if hasattr(result, "__anext__"):
                    chunks = [chunk.model_dump(mode="json") async for chunk in result]
                    outcome.actions.extend(host.take_pending(built.session_id))
                    shown = outcome_json(outcome)
                    shown["result"] = chunks
                else:
                    shown = outcome_json(outcome)
                typer.echo(json.dumps(shown))
        return failures

    if anyio.run(run):
        raise typer.Exit(2)


def _brief(error: Exception) -> str:
    text = str(error)
    return text if len(text) < 2000 else text[:2000] + "…"


def _load_command_modules() -> None:
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
            module.register(app)
        except ModuleNotFoundError as error:
            if error.name != name:
                _broken_commands(name, error)
        except Exception as error:  # one broken command module must not take the CLI down
            _broken_commands(name, error)


def _broken_commands(name: str, error: Exception) -> None:
    typer.echo(
        f"hookchain: the commands of {name} are unavailable: {type(error).__name__}: {error}",
        err=True,
    )


def _load_plugin_commands() -> None:
    """Plugins add commands through the `register_cli` hook; a broken one is skipped."""
    from framework.core.loading import entry_point_candidates, make_plugin_manager

    pm = make_plugin_manager()
    for candidate in entry_point_candidates():
        try:
            obj = candidate.load()
            pm.register(obj, name=candidate.name)
            for impl in pm.hook.register_cli.get_hookimpls():
                if impl.plugin is obj:
                    impl.function(app=app)
        except Exception as error:
            typer.echo(
                f"hookchain: plugin {candidate.name!r} could not add its commands: "
                f"{type(error).__name__}: {error}",
                err=True,
            )


def main() -> None:
    """Entry point of the `hookchain` script."""
    _load_command_modules()
    _load_plugin_commands()
    app()
