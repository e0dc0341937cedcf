"""The `hookchain` command line: plugins, try, and the commands other modules and plugins add."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Annotated, Any

import anyio
import typer

from framework import __version__
from framework.claude_code import cli as claude_code_commands
from framework.claude_code.commands import declared_commands
from framework.cli import check as check_commands
from framework.cli import harnesses as harness_commands
from framework.core.chain import Outcome
from framework.core.contract import CONTRACT_VERSION, ContractError, Event, build_event
from framework.core.host import Host
from framework.core.loading import entry_point_candidates, make_plugin_manager
from framework.core.logging import configure_logging
from framework.core.settings import SettingsError, find_config, load_settings, read_config
from framework.replay import cli as replay_commands

app = typer.Typer(
    name="hookchain",
    help="A plugin host for AI coding-agent harnesses such as Claude Code.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# The host's own command groups add their commands through the `register_cli` hook, the same one
# plugins implement: registered first, under names no plugin can take (plugin names are
# kebab-case, without dots).
BUILTIN_COMMANDS = {
    "hookchain.replay": replay_commands,
    "hookchain.check": check_commands,
    "hookchain.claude-code": claude_code_commands,
    # After Claude Code's: it replaces install/uninstall/status with ones taking --harness.
    "hookchain.harnesses": harness_commands,
}


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
        "commands": {name: plugin for name, (plugin, _) in declared_commands(host).items()},
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


def add_commands(target: typer.Typer) -> None:
    """Run every `register_cli` hook, built-in and plugin, on `target`; a broken one is skipped
    with a message naming it, and the other commands stay."""
    pm = make_plugin_manager()
    for name, module in BUILTIN_COMMANDS.items():
        pm.register(module, name=name)
    for candidate in entry_point_candidates():
        try:
            pm.register(candidate.load(), name=candidate.name)
        except Exception as error:
            _broken_commands(f"plugin {candidate.name!r}", error)
    for impl in pm.hook.register_cli.get_hookimpls():  # in registration order: built-ins first
        try:
            impl.function(app=target)
        except Exception as error:  # one broken command group must not take the CLI down
            _broken_commands(f"plugin {impl.plugin_name!r}", error)


def _broken_commands(who: str, error: Exception) -> None:
    typer.echo(
        f"hookchain: {who} could not add its commands: {type(error).__name__}: {error}",
        err=True,
    )


def main() -> None:
    """Entry point of the `hookchain` script."""
    add_commands(app)
    app()
