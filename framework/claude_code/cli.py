"""The Claude Code commands: `hook`, `serve`, `status`, `install`, `uninstall`."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import anyio
import typer

from framework import _client_core
from framework import _launch as wire
from framework.claude_code import daemon, http, project_plugins
from framework.claude_code import install as inst
from framework.core import files
from framework.core import plugin_settings as contributed
from framework.core.hookspecs import hookimpl
from framework.core.settings import data_dir

if TYPE_CHECKING:
    from framework.core.host import Host


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
    options = daemon.ServeOptions.from_env()
    answer = daemon.request_control(options, "@status")
    here = _here_status()
    if answer is None:
        folder = str(options.runtime_dir)
        failed, age = wire.read_start_error(folder, time.time())
        problem = wire.runtime_dir_problem(folder) if os.path.isdir(folder) else ""
        if as_json:
            shown = {
                "pid": None,
                "running": False,
                "start_error": failed or problem or None,
                "here": here,
            }
            typer.echo(json.dumps(shown))
        else:
            typer.echo("hookchain: no host running")
            if failed:
                typer.echo(f"last start failed {age:.0f} s ago: {failed}")
            elif problem:
                typer.echo(f"a host cannot start: {problem}")
            typer.echo("\n".join(_here_lines(here)))
        raise typer.Exit(1)
    if as_json:
        typer.echo(json.dumps({"running": True, **answer, "here": here}))
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
    for entry in answer.get("projects", []):
        config = entry.get("config") or "no hookchain.toml"
        lines.append(f"project        {entry['root']}")
        lines.append(f"  config       {config} (fingerprint {entry.get('fingerprint')})")
        lines.append(f"  sessions     {entry.get('sessions')}, idle {entry.get('idle_s')} s")
        if entry.get("store"):
            lines.append(f"  store        {entry['store']}")
        if entry.get("error"):
            lines.append(f"  not served   {entry['error']}")
        for record in entry.get("not_loaded") or ():
            lines.append(f"  not loaded   {record['name']}: {record['error']}")
        for plugin, line in (entry.get("plugin_status") or {}).items():
            lines.append(f"  {plugin:<12} {line}")
    served = {entry.get("root") for entry in answer.get("projects", [])}
    if here.get("root") not in served:
        lines += _here_lines(here)
    typer.echo("\n".join(lines))


def _here_status() -> dict[str, object]:
    """The project of the current folder and what each plugin says of it (`status_line`), as a
    host there would load them; no running host is needed."""
    root = inst.find_project_root(Path.cwd())
    host, problem = project_plugins.project_host()
    if host is None:
        return {"root": str(root), "plugin_status": {}, "error": problem}
    return {"root": str(root), "plugin_status": project_plugins.status_lines(host, root)}


def _here_lines(here: dict[str, object]) -> list[str]:
    lines = [f"this project   {here['root']}"]
    if here.get("error"):
        lines.append(f"  plugins not loaded: {here['error']}")
    said = here.get("plugin_status")
    for plugin, line in said.items() if isinstance(said, dict) else ():
        lines.append(f"  {plugin:<12} {line}")
    return lines


ScopeOption = Annotated[
    str,
    typer.Option(
        "--scope",
        help="local: .claude/settings.local.json (default: the hook commands hold this machine's "
        "paths, which do not belong in the file a team commits); project: .claude/settings.json; "
        "user: ~/.claude/settings.json.",
    ),
]
UserOption = Annotated[bool, typer.Option("--user", help="Same as --scope user.")]
ProjectOption = Annotated[bool, typer.Option("--project", help="Same as --scope project.")]
DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Print the change as a diff; write nothing.")
]
EventsOption = Annotated[
    list[str] | None,
    typer.Option("--events", help="Events to hook (repeatable; default: every mapped one)."),
]
TransportOption = Annotated[
    str, typer.Option("--transport", help="command (default) or http (Claude Code 2.1.63+).")
]
FailClosedOption = Annotated[
    bool,
    typer.Option(
        "--fail-closed",
        help="Block tool calls while the host is unreachable (keeps PreToolUse on command).",
    ),
]


def _scope(scope: str, user: bool, project: bool) -> inst.Scope:
    chosen = [name for name, flag in (("user", user), ("project", project)) if flag]
    if len(chosen) > 1 or (chosen and scope and scope != chosen[0]):
        raise _fail("choose one scope: --scope, --user or --project")
    picked = chosen[0] if chosen else (scope or inst.DEFAULT_SCOPE)
    if picked not in inst.SCOPES:
        raise _fail(f"--scope is one of {', '.join(inst.SCOPES)}; got {picked!r}")
    named: inst.Scope = picked
    return named


def _target(scope: inst.Scope) -> Path:
    return inst.settings_path(scope, inst.find_project_root(Path.cwd()))


def project_host_or_warn() -> Host | None:
    """The plugins installed here, as a host in this project loads them; when they cannot be
    loaded, None and a warning saying why (every harness's install uses this)."""
    host, problem = project_plugins.project_host()
    if host is None:  # settings or plugins broken: the hooks still install
        typer.echo(
            f"hookchain: warning: plugins not asked for their commands and settings ({problem})",
            err=True,
        )
    return host


def _host_folders(scope: str) -> None:
    """The host's data and runtime folders, created now as the host would (0700): settings a
    plugin writes from them (a sandbox keeping commands out of them) name folders that exist,
    which a sandbox can mount. The project's `.hookchain` (plugins' own files) too: a sandbox
    that keeps commands out of a path that does not exist yet holds an empty file there while a
    command runs, and the host could not make the folder in its place."""
    folders = [data_dir(), Path(wire.runtime_dir())]
    if scope != "user":  # a user-scope install may run from any folder: no project to keep
        folders.append(inst.find_project_root(Path.cwd()) / ".hookchain")
    for folder in folders:
        try:
            files.ensure_private_dir(folder)
        except OSError as error:
            typer.echo(f"hookchain: warning: {error}", err=True)


def _plugin_commands(host: Host | None) -> dict[str, tuple[str, str]]:
    from framework.claude_code.commands import declared_commands

    return {} if host is None else declared_commands(host)


def asked_settings(
    host: Host | None, scope: str, harness: str = "claude-code"
) -> project_plugins.AskedSettings | None:
    """What the plugins ask for in the settings file of `scope`; None when they cannot be
    asked (what an earlier install wrote for them then stays as it was)."""
    if host is None:
        return None
    root = inst.find_project_root(Path.cwd())
    asked = project_plugins.asked_settings(host, harness, scope, root)
    for problem in asked.problems:
        typer.echo(f"hookchain: warning: {problem}", err=True)
    return asked


def report_plugin_settings(plan: inst.InstallPlan, dry_run: bool) -> None:
    """Say what plugins' settings did: written, taken out, and every key of the person's kept."""
    merged = plan.plugins
    if merged is None:
        return
    verb = "would write" if dry_run else "wrote"
    for plugin, keys in _by_plugin(merged.added).items():
        typer.echo(f"hookchain: {verb} {plugin}'s settings {keys} into {plan.path}")
    gone = "would take out" if dry_run else "took out"
    for plugin, keys in _by_plugin(merged.removed).items():
        typer.echo(f"hookchain: {gone} {plugin}'s settings {keys} from {plan.path}")
    for plugin, keys in _by_plugin(merged.left).items():
        typer.echo(
            f"hookchain: left {plugin}'s settings {keys} in {plan.path}: you changed them "
            "after install wrote them, so they are yours now",
            err=True,
        )
    for kept in merged.kept:
        typer.echo(f"hookchain: warning: {plan.path}: {kept.describe()}", err=True)


def _by_plugin(entries: list[tuple[str, contributed.Key]]) -> dict[str, str]:
    grouped: dict[str, list[str]] = {}
    for plugin, key in entries:
        grouped.setdefault(plugin, []).append(contributed.dotted(key))
    return {plugin: ", ".join(keys) for plugin, keys in grouped.items()}


def _report_status(host: Host | None) -> None:
    """Each plugin's status line for this project, once the settings are in place."""
    if host is None:
        return
    root = inst.find_project_root(Path.cwd())
    for plugin, line in project_plugins.status_lines(host, root).items():
        typer.echo(f"hookchain: {plugin}: {line}")


def _commands_step(
    scope: inst.Scope, dry_run: bool, remove: bool = False, host: Host | None = None
) -> None:
    folder = inst.commands_folder(scope, inst.find_project_root(Path.cwd()))
    if remove:
        for path in inst.remove_command_files(folder, dry_run=dry_run):
            typer.echo(f"hookchain: {'would remove' if dry_run else 'removed'} {path}")
        return
    written, skipped = inst.write_command_files(folder, _plugin_commands(host), dry_run=dry_run)
    for path in written:
        command = "/" + path.stem
        typer.echo(f"hookchain: {'would write' if dry_run else 'wrote'} {path} (for {command})")
    for path in skipped:
        typer.echo(
            f"hookchain: warning: {path} exists and is not hookchain's; /{path.stem} stays with it",
            err=True,
        )


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
    scope: ScopeOption = "",
    project: ProjectOption = False,
    user: UserOption = False,
    events: EventsOption = None,
    transport: TransportOption = "command",
    fail_closed: FailClosedOption = False,
    dry_run: DryRunOption = False,
) -> None:
    """Add hookchain's hooks to Claude Code's settings (idempotent; the old file is kept)."""
    if transport not in ("command", "http"):
        raise _fail("--transport is command or http")
    chosen: Literal["command", "http"] = "http" if transport == "http" else "command"
    chosen_scope = _scope(scope, user, project)
    path = _target(chosen_scope)
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
    if not dry_run:
        _host_folders(chosen_scope)
    host = project_host_or_warn()
    asked = asked_settings(host, chosen_scope)
    try:
        plan = inst.plan_install(
            path,
            tuple(events) if events else inst.DEFAULT_EVENTS,
            transport=chosen,
            port=port,
            keep_pre_tool_use_on_command=closed,
            plugin_settings=None if asked is None else asked.settings,
            unchanged_plugins=() if asked is None else asked.unchanged,
            elsewhere=inst.companion_files(chosen_scope, inst.find_project_root(Path.cwd())),
        )
    except inst.InstallError as error:
        raise _fail(str(error)) from None
    _apply(plan, dry_run, "hooks installed in")
    report_plugin_settings(plan, dry_run)
    _commands_step(chosen_scope, dry_run, host=host)
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
    if chosen == "http" and not dry_run:
        _switch_running_host()
    if not dry_run:
        _report_status(host)
    if not dry_run and plan.changed:
        typer.echo("hookchain: restart Claude Code (or review /hooks) for the change to apply")


def _switch_running_host() -> None:
    """A host that runs now serves http at once: no window in which http hooks get
    "connection refused", which Claude Code takes as "go ahead"."""
    answer = daemon.request_control(daemon.ServeOptions.from_env(), "@http")
    if answer is None:
        typer.echo("hookchain: no host runs now; the next command hook starts one serving http")
        return
    typer.echo(f"hookchain: running host: {answer.get('message')}")


def _client_unreachable_closed() -> bool:
    return os.environ.get("HOOKCHAIN_UNREACHABLE", "open") == "closed"


def uninstall(
    scope: ScopeOption = "",
    project: ProjectOption = False,
    user: UserOption = False,
    dry_run: DryRunOption = False,
) -> None:
    """Remove hookchain's hooks (and only those) from Claude Code's settings."""
    chosen_scope = _scope(scope, user, project)
    try:
        plan = inst.plan_uninstall(_target(chosen_scope))
    except inst.InstallError as error:
        raise _fail(str(error)) from None
    _apply(plan, dry_run, "hooks removed from")
    report_plugin_settings(plan, dry_run)
    _commands_step(chosen_scope, dry_run, remove=True)


@hookimpl
def register_cli(app: typer.Typer) -> None:
    """Add the Claude Code commands to the `hookchain` CLI."""
    app.command("hook")(hook)
    app.command("serve")(serve)
    app.command("status")(status)
    app.command("install")(install)
    app.command("uninstall")(uninstall)
