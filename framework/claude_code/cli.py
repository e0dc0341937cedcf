"""The Claude Code commands: `hook`, `serve`, `status`, `install`, `uninstall`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Literal

import anyio
import typer

from framework import _client_core
from framework.claude_code import daemon, http
from framework.claude_code import install as inst
from framework.core.hookspecs import hookimpl


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"hookchain: {message}", err=True)
    return typer.Exit(code)


def hook(
    event: Annotated[str, typer.Argument(help="The hook event (default: from the payload).")] = "",
    no_daemon: Annotated[
        bool, typer.Option("--no-daemon", help="Run the chain in this process (slow; debugging).")
    ] = False,
) -> None:
    """Answer one Claude Code hook call: payload on stdin, answer on stdout and the exit code."""
    payload = sys.stdin.buffer.read()
    if no_daemon:
        raise typer.Exit(daemon.answer_once(event, payload))
    raise typer.Exit(_client_core.forward(event, payload))


def serve(
    stop: Annotated[bool, typer.Option("--stop", help="Stop the running host.")] = False,
) -> None:
    """Run the warm host in the foreground (hook clients start one on their own when needed)."""
    options = daemon.ServeOptions.from_env()
    if stop:
        stopped = daemon.stop_host(options)
        typer.echo("hookchain: host stopped" if stopped else "hookchain: no host running")
        return
    running = daemon.request_control(options, "@status")
    if running is not None:
        raise _fail(f"a host already runs (pid {running.get('pid')}); stop it with --stop", 1)
    try:
        raise typer.Exit(anyio.run(daemon.serve, options))
    except daemon.RuntimeDirError as error:
        raise _fail(str(error)) from None


def status(
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Show the running host: pid, uptime, sessions, plugins and error counts."""
    answer = daemon.request_control(daemon.ServeOptions.from_env(), "@status")
    if answer is None:
        if as_json:
            typer.echo(json.dumps({"pid": None, "running": False}))
        else:
            typer.echo("hookchain: no host running")
        raise typer.Exit(1)
    if as_json:
        typer.echo(json.dumps({"running": True, **answer}))
        return
    plugins = ", ".join(f"{p['name']} ({p['status']})" for p in answer.get("plugins", []))
    lines = [
        f"pid            {answer.get('pid')}",
        f"uptime         {answer.get('uptime_s')} s",
        f"sessions       {answer.get('sessions')}",
        f"events served  {answer.get('events_served')}",
        f"suspended      {answer.get('suspended_calls')}",
        f"errors         payload {answer.get('payload_errors')}, "
        f"dispatch {answer.get('dispatch_errors')}, handlers {answer.get('handler_failures')}",
        f"plugins        {plugins or '-'}",
        f"socket         {answer.get('socket')}",
    ]
    if answer.get("http_port"):
        lines.append(f"http           127.0.0.1:{answer['http_port']}")
    typer.echo("\n".join(lines))


ScopeOption = Annotated[
    bool, typer.Option("--user", help="Change ~/.claude/settings.json instead of the project's.")
]
ProjectOption = Annotated[
    bool, typer.Option("--project", help="Change ./.claude/settings.json (the default).")
]
DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Print the change as a diff; write nothing.")
]


def _target(user: bool, project: bool) -> Path:
    if user and project:
        raise _fail("choose one of --user and --project")
    scope: inst.Scope = "user" if user else "project"
    return inst.settings_path(scope, Path.cwd())


def _apply(plan: inst.InstallPlan, dry_run: bool, done: str) -> None:
    if not plan.changed:
        typer.echo(f"hookchain: {plan.path} already up to date")
        return
    if dry_run:
        typer.echo(plan.diff(), nl=False)
        return
    backup = inst.apply(plan)
    typer.echo(f"hookchain: {done} {plan.path}" + (f" (previous file: {backup})" if backup else ""))


def install(
    project: ProjectOption = False,
    user: ScopeOption = False,
    events: Annotated[
        list[str] | None,
        typer.Option("--events", help="Events to hook (repeatable; default: every mapped one)."),
    ] = None,
    transport: Annotated[
        str, typer.Option("--transport", help="command (default) or http (Claude Code 2.1.63+).")
    ] = "command",
    fail_closed: Annotated[
        bool,
        typer.Option(
            "--fail-closed",
            help="Block tool calls while the host is unreachable (keeps PreToolUse on command).",
        ),
    ] = False,
    dry_run: DryRunOption = False,
) -> None:
    """Add hookchain's hooks to Claude Code's settings (idempotent; the old file is kept)."""
    if transport not in ("command", "http"):
        raise _fail("--transport is command or http")
    chosen: Literal["command", "http"] = "http" if transport == "http" else "command"
    path = _target(user, project)
    closed = fail_closed or _client_unreachable_closed()
    port = None
    if chosen == "http":
        try:
            warning = inst.check_http_support(inst.claude_version())
        except inst.InstallError as error:
            raise _fail(str(error)) from None
        if warning:
            typer.echo(f"hookchain: warning: {warning}", err=True)
        port = http.ensure_credentials().port
    try:
        plan = inst.plan_install(
            path,
            tuple(events) if events else inst.DEFAULT_EVENTS,
            transport=chosen,
            port=port,
            keep_pre_tool_use_on_command=closed,
        )
    except inst.InstallError as error:
        raise _fail(str(error)) from None
    _apply(plan, dry_run, "hooks installed in")
    if not dry_run:
        inst.precompile_client()
    if chosen == "http" and not dry_run:
        typer.echo(
            "hookchain: http hooks read their token from the environment; before starting "
            f'Claude Code run:\n  export {inst.TOKEN_ENV}="$(cat {http.token_path()})"'
        )
        if closed:
            typer.echo(
                "hookchain: PreToolUse stays on the command client: an http hook that gets no "
                "answer never blocks, so fail-closed needs the command transport."
            )
    if not dry_run and plan.changed:
        typer.echo("hookchain: restart Claude Code (or review /hooks) for the change to apply")


def _client_unreachable_closed() -> bool:
    return os.environ.get("HOOKCHAIN_UNREACHABLE", "open") == "closed"


def uninstall(
    project: ProjectOption = False,
    user: ScopeOption = False,
    dry_run: DryRunOption = False,
) -> None:
    """Remove hookchain's hooks (and only those) from Claude Code's settings."""
    path = _target(user, project)
    try:
        plan = inst.plan_uninstall(path)
    except inst.InstallError as error:
        raise _fail(str(error)) from None
    _apply(plan, dry_run, "hooks removed from")


@hookimpl
def register_cli(app: typer.Typer) -> None:
    """Add the Claude Code commands to the `hookchain` CLI."""
    app.command("hook")(hook)
    app.command("serve")(serve)
    app.command("status")(status)
    app.command("install")(install)
    app.command("uninstall")(uninstall)
