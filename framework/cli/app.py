"""The `hookchain` command line: plugins, try, and the commands other modules and plugins add."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Annotated, Any

import anyio
import typer

from framework import __version__
from framework.claude_code import cli as claude_code_commands
from framework.claude_code.commands import declared_commands
from framework.cli import check as check_commands
from framework.cli import harnesses as harness_commands
from framework.cli import help as _help
from framework.cli import install as pip_install
from framework.cli.common import (
    HookchainGroup,
    PluginAlias,
    PluginsOption,
    host_from_options,
    refuse_load_failures,
    split_names,
)
from framework.cli.examples import EXAMPLES
from framework.core.chain import Outcome
from framework.core.contract import CONTRACT_VERSION, ContractError, Event, build_event, event_type
from framework.core.host import Host
from framework.core.loading import (
    Candidate,
    discovered_candidates,
    entry_point_candidates,
    make_plugin_manager,
)
from framework.core.settings import (
    UserError,
)
from framework.replay import cli as replay_commands

_help.conventional_metavars()

app = typer.Typer(
    name="hookchain",
    help="A plugin host for AI coding-agent harnesses such as Claude Code.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    cls=HookchainGroup,
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
    debug: Annotated[
        bool,
        typer.Option("--debug", help="Log everything and show tracebacks of errors."),
    ] = False,
    plugins_dir: Annotated[
        Path | None,
        typer.Option(
            "--plugins-dir",
            metavar="DIR",
            help="Also load the single-file plugins of this folder (HOOKCHAIN_PLUGINS_DIR).",
        ),
    ] = None,
) -> None:
    """hookchain runs every event of an agent session through one chain of plugin handlers."""
    # Through the environment, so every part that reads settings (and a host it starts) sees it.
    if debug:
        os.environ["HOOKCHAIN_LOG_LEVEL"] = "debug"
    if plugins_dir is not None:
        os.environ["HOOKCHAIN_PLUGINS_DIR"] = str(plugins_dir.resolve())


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


plugins_app = typer.Typer(
    name="plugins",
    invoke_without_command=True,
    no_args_is_help=False,
    help="List, install and uninstall plugins.",
)
app.add_typer(plugins_app)


@plugins_app.callback()
def plugins_command(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List plugins (distribution, version, contract range, status) and each event's chain;
    a plugin that did not load is shown with why."""
    if ctx.invoked_subcommand is not None:
        return

    async def run() -> dict[str, Any]:
        async with host_from_options(store="memory://") as host:
            return plugins_report(host)

    report = anyio.run(run)
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
    table = Table(title=f"hookchain plugins (contract {CONTRACT_VERSION})")
    for column in ("plugin", "distribution", "version", "contract", "status"):
        table.add_column(column, overflow="fold")
    for entry in report["plugins"]:
        status = entry["status"]
        if status in ("failed", "incompatible"):
            status = f"[red]{status}[/red]"
        table.add_row(
            entry["name"],
            entry["distribution"] or "-",
            entry["version"] or "-",
            entry["contract"] or "-",
            status,
        )
    console.print(table)
    if not report["plugins"]:
        console.print(
            "No plugins installed (entry-point group hookchain.plugins); "
            "add one with hookchain plugins install NAME."
        )
    for entry in report["plugins"]:
        if entry["error"]:
            console.print(f"[red]not loaded[/red]: {entry['error']}", markup=True)
    for event, chain in report["chains"].items():
        order = " → ".join(
            f"{link['plugin']}:{link['handler'].rsplit('.', 1)[-1]}" for link in chain
        )
        console.print(f"[bold]{event}[/bold]: {order} → terminal")


@plugins_app.command("install")
def plugins_install(
    names: Annotated[
        list[str],
        typer.Argument(
            metavar="NAME…", help="Distributions, wheels or folders, as pip takes them."
        ),
    ],
    upgrade: Annotated[bool, typer.Option("--upgrade", "-U", help="Upgrade if installed.")] = False,
    editable: Annotated[
        bool, typer.Option("--editable", "-e", help="Install a folder in editable mode.")
    ] = False,
) -> None:
    """Install plugins into hookchain's own environment (where a pipx or uv tool install lives)."""
    raise typer.Exit(pip_install.install(names, upgrade=upgrade, editable=editable))


@plugins_app.command("uninstall")
def plugins_uninstall(
    names: Annotated[
        list[str], typer.Argument(metavar="NAME…", help="Plugin or distribution names.")
    ],
) -> None:
    """Uninstall plugins from hookchain's own environment (a plugin name finds its distribution)."""
    raise typer.Exit(pip_install.uninstall(names, discovered_candidates()))


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
    event: Annotated[
        str | None,
        typer.Argument(metavar="EVENT", help="Event name: tool.call, prompt.submit, ..."),
    ] = None,
    payload: Annotated[
        str | None,
        typer.Option(
            "--payload", metavar="JSON", help="The event as JSON; without it, JSON lines on stdin."
        ),
    ] = None,
    result: Annotated[
        str | None,
        typer.Option(
            "--result",
            metavar="JSON",
            help='What the harness answers, e.g. \'{"output": "2 files", "is_error": false}\' '
            "for tool.call, a list of chunks for turn.step.",
        ),
    ] = None,
    error: Annotated[
        str | None,
        typer.Option("--error", metavar="TEXT", help="tool.call only: the tool fails with TEXT."),
    ] = None,
    example: Annotated[
        str | None,
        typer.Option("--example", metavar="EVENT", help="Print a sample payload for EVENT."),
    ] = None,
    plugins: PluginsOption = None,
    plugin_alias: PluginAlias = None,
    store: Annotated[str, typer.Option(metavar="URL", help="Store URL.")] = "memory://",
) -> None:
    """Dispatch an event through the plugins with a scripted terminal; print the outcome (JSON,
    indented on a terminal). The session's cwd is the current folder."""
    pretty = sys.stdout.isatty()
    if example is not None:
        # One line in a pipe: `hookchain try --example tool.call | hookchain try tool.call`.
        typer.echo(json.dumps(example_payload(example), indent=2 if pretty else None))
        return
    if event is None:
        raise UserError("name the EVENT to try (e.g. hookchain try tool.call); see --example")
    kind = _event_kind(event)
    if result is not None and error is not None:
        raise UserError("give one of --result and --error")
    scripted = _scripted(kind, event, result, error)
    _terminal(kind, scripted)  # a wrong --result is refused before any plugin loads

    async def run() -> int:
        failures = 0
        async with host_from_options(
            split_names([*(plugins or ()), *(plugin_alias or ())]), store
        ) as host:
            refuse_load_failures(host)
            for number, text in _payloads(payload):
                try:
                    data = json.loads(text)
                    if not isinstance(data, dict):
                        raise ValueError("the payload must be a JSON object")
                    line_result, data = _result_in_payload(kind, data)
                    built: Event = build_event(event, data)
                    terminal = _terminal(kind, scripted if line_result is None else line_result)
                except (ValueError, ContractError, UserError) as problem:
                    typer.echo(f"hookchain try: input {number}: {_brief(problem)}", err=True)
                    failures += 1
                    continue
                # What a harness says at session start: plugins that read the cwd find one.
                host.update_session(built.session_id, cwd=os.getcwd())
                outcome = await host.dispatch(built, terminal)
                answer = outcome.result
                if hasattr(answer, "__anext__"):
                    chunks = [chunk.model_dump(mode="json") async for chunk in answer]
                    outcome.actions.extend(host.take_pending(built.session_id))
                    shown = outcome_json(outcome)
                    shown["result"] = chunks
                else:
                    shown = outcome_json(outcome)
                typer.echo(json.dumps(shown, indent=2 if pretty else None))
        return failures

    if anyio.run(run):
        raise typer.Exit(2)


def example_payload(name: str) -> dict[str, Any]:
    """The sample payload of an event name, or a clear error naming the known ones."""
    kind = _event_kind(name)
    sample = EXAMPLES.get(kind.kind if kind.kind != "classic" else "classic")
    if sample is None:
        raise UserError(f"no example for {name!r}; examples: {', '.join(sorted(EXAMPLES))}")
    return dict(sample)


def _event_kind(name: str) -> type[Event]:
    try:
        return event_type(name)
    except ContractError as error:
        raise UserError(str(error)) from None


def _scripted(kind: type[Event], name: str, result: str | None, error: str | None) -> Any:
    """The terminal's answer from --result / --error (None: the neutral one)."""
    if error is not None:
        if kind.kind != "tool.call":
            raise UserError(f"--error is for tool.call; {name} has no tool to fail")
        return {"output": error, "is_error": True}
    if result is None:
        return None
    try:
        return json.loads(result)
    except ValueError as problem:
        raise UserError(f"--result is not JSON: {problem}") from None


_TOOL_RESULT_KEYS = ("output", "is_error")


def _result_in_payload(kind: type[Event], data: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """A payload line may script its own answer: `"result": {...}`, or for tool.call the
    result's own `output` / `is_error` beside the call."""
    data = dict(data)
    scripted = data.pop("result", None)
    if kind.kind == "tool.call" and any(key in data for key in _TOOL_RESULT_KEYS):
        scripted = dict(scripted or {})
        for key in _TOOL_RESULT_KEYS:
            if key in data:
                scripted[key] = data.pop(key)
    return scripted, data


def _terminal(kind: type[Event], scripted: Any) -> Any:
    """A dry-run terminal answering `scripted`, checked against the event's result type now,
    so a wrong script is the person's error and never a handler failure."""
    if scripted is None:
        return None
    from pydantic import ValidationError

    from framework.core.contract import StreamChunk

    try:
        if kind.kind == "turn.step":
            chunks = [StreamChunk.model_validate(chunk) for chunk in _as_list(scripted)]
            answer: Any = None
        elif kind.result_type is None:
            raise UserError(f"{kind.kind} has no result to script; leave out --result")
        else:
            answer = kind.result_type.model_validate(scripted)  # type: ignore[attr-defined]
    except ValidationError as problem:
        model = kind.result_type or StreamChunk
        fields = ", ".join(model.model_fields)  # type: ignore[attr-defined]
        reasons = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'result'}: {e['msg']}" for e in problem.errors()
        )
        raise UserError(
            f"the scripted result does not fit {kind.kind}: {reasons} (fields: {fields})"
        ) from None

    async def terminal(event: Event) -> Any:
        if answer is not None:
            return answer

        async def stream() -> AsyncIterator[StreamChunk]:
            for chunk in chunks:
                yield chunk

        return stream()

    return terminal


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def _brief(error: Exception) -> str:
    text = str(error)
    return text if len(text) < 2000 else text[:2000] + "…"


def add_commands(target: typer.Typer) -> None:
    """Run every `register_cli` hook, built-in and plugin, on `target`; a broken one is skipped
    with a message naming it, and the other commands stay."""
    pm = make_plugin_manager()
    for name, module in BUILTIN_COMMANDS.items():
        pm.register(module, name=name)
    for candidate in _command_candidates():
        try:
            pm.register(candidate.load(), name=candidate.name)
        except Exception as error:
            _broken_commands(f"plugin {candidate.name!r}", error)
    for impl in pm.hook.register_cli.get_hookimpls():  # in registration order: built-ins first
        try:
            impl.function(app=target)
        except Exception as error:  # one broken command group must not take the CLI down
            _broken_commands(f"plugin {impl.plugin_name!r}", error)


def _command_candidates() -> list[Candidate]:
    """The plugins whose commands join: installed ones and a HOOKCHAIN_PLUGINS_DIR's (a bad
    folder adds none here; the command that loads plugins reports it)."""
    folder = os.environ.get("HOOKCHAIN_PLUGINS_DIR")
    try:
        return discovered_candidates(Path(folder) if folder else None)
    except UserError:
        return entry_point_candidates()


def _broken_commands(who: str, error: Exception) -> None:
    typer.echo(
        f"hookchain: {who} could not add its commands: {type(error).__name__}: {error}",
        err=True,
    )


def main() -> None:
    """Entry point of the `hookchain` script."""
    add_commands(app)
    app()
