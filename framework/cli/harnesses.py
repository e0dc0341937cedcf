"""`install`, `uninstall` and `status` for every harness: `--harness claude-code|codex|gemini`.

Claude Code's commands live in `framework.claude_code.cli`; this layer, above every adapter,
adds the choice of harness and sends the others to their own installers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from framework.claude_code import cli as claude_cli
from framework.claude_code import install as claude_install
from framework.claude_code import project_plugins
from framework.codex import install as codex_install
from framework.core.hookspecs import hookimpl
from framework.gemini import install as gemini_install

HARNESS_NAMES = ("claude-code", "codex", "gemini")

HarnessOption = Annotated[
    str,
    typer.Option(
        "--harness", help="claude-code (default), codex or gemini: whose hooks to change."
    ),
]
ScopeChoice = Annotated[
    str | None,
    typer.Option(
        "--scope",
        help="Claude Code: local (default: .claude/settings.local.json, this machine's paths), "
        "project or user; Codex and Gemini CLI: project (default) or user.",
    ),
]
CodexOption = Annotated[
    str | None,
    typer.Option("--codex", help="The codex binary that reports hook trust (default: PATH)."),
]


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"hookchain: {message}", err=True)
    return typer.Exit(code)


def _harness(name: str) -> str:
    if name not in HARNESS_NAMES:
        raise _fail(f"--harness is one of {', '.join(HARNESS_NAMES)}, not {name!r}")
    return name


def _scope(scope: str | None, user: bool, project: bool) -> tuple[bool, bool]:
    if scope is None:
        return user, project
    if scope not in ("user", "project"):
        raise _fail("--scope is user or project")
    if (user and scope != "user") or (project and scope != "project"):
        raise _fail("--scope disagrees with --user/--project")
    return scope == "user", scope == "project"


def _show(plan: claude_install.InstallPlan, dry_run: bool, done: str) -> bool:
    """Print or write the plan; whether it was written."""
    if not plan.changed:
        typer.echo(f"hookchain: {plan.path} already up to date")
        return False
    if dry_run:
        typer.echo(plan.diff(), nl=False)
        return False
    backup = claude_install.apply(plan)
    typer.echo(f"hookchain: {done} {plan.path}" + (f" (previous file: {backup})" if backup else ""))
    return True


def _codex_trust(path: Path, binary: str | None, dry_run: bool) -> None:
    """Record Codex's trust of hookchain's hooks, as Codex reports their keys and hashes."""
    user_config = codex_install.config_path("user", Path.cwd())
    try:
        hooks = codex_install.list_hooks(Path.cwd(), binary)
    except codex_install.CodexUnavailable as error:
        typer.echo(f"hookchain: could not ask Codex for its hook trust: {error}", err=True)
        typer.echo(f"hookchain: {codex_install.TRUST_HELP}")
        return
    ours = [hook for hook in hooks if hook.ours and hook.current_hash]
    if not ours:
        typer.echo(f"hookchain: Codex lists no hookchain hook from {path}", err=True)
        if path != user_config:
            typer.echo(f"hookchain: {codex_install.project_trust_help(Path.cwd())}", err=True)
        else:
            typer.echo(f"hookchain: {codex_install.TRUST_HELP}")
        return
    trusted = {hook.key: hook.current_hash for hook in ours}
    try:
        plan = codex_install.plan_trust(user_config, trusted)
    except claude_install.InstallError as error:
        raise _fail(str(error)) from None
    _show(plan, dry_run, f"trust of {len(trusted)} hookchain hooks recorded in")


def install(
    harness: HarnessOption = "claude-code",
    scope: ScopeChoice = None,
    project: claude_cli.ProjectOption = False,
    user: claude_cli.UserOption = False,
    events: claude_cli.EventsOption = None,
    transport: claude_cli.TransportOption = "command",
    fail_closed: claude_cli.FailClosedOption = False,
    trust: Annotated[
        bool,
        typer.Option(
            "--trust/--no-trust", help="Codex: record the trust of hookchain's hooks (default)."
        ),
    ] = True,
    codex: CodexOption = None,
    dry_run: claude_cli.DryRunOption = False,
) -> None:
    """Add hookchain's hooks to a harness's settings (idempotent; the old file is kept)."""
    chosen = _harness(harness)
    if chosen == "claude-code":
        claude_cli.install(scope or "", project, user, events, transport, fail_closed, dry_run)
        return
    user, project = _scope(scope, user, project)
    if transport != "command":
        raise _fail(f"{chosen} runs command hooks only; drop --transport")
    if user and project:
        raise _fail("choose one of --user and --project")
    where: codex_install.Scope = "user" if user else "project"
    chosen_events = tuple(events) if events else None
    try:
        if chosen == "codex":
            path = codex_install.config_path(where, Path.cwd())
            host = claude_cli.project_host_or_warn()
            asked = claude_cli.asked_settings(host, where, "codex")
            plan = codex_install.plan_install(
                path,
                chosen_events or codex_install.EVENTS,
                plugin_settings=None if asked is None else asked.settings,
                unchanged_plugins=frozenset() if asked is None else asked.unchanged,
            )
        else:
            path = gemini_install.settings_path(where, Path.cwd())
            plan = gemini_install.plan_install(path, chosen_events or gemini_install.EVENTS)
    except claude_install.InstallError as error:
        raise _fail(str(error)) from None
    _show(plan, dry_run, "hooks installed in")
    if chosen == "codex":
        claude_cli.report_plugin_settings(plan, dry_run)
    else:
        _unmerged_plugin_settings(chosen, where)
    if dry_run:
        return
    claude_install.precompile_client()
    if chosen == "codex":
        if trust:
            _codex_trust(path, codex, dry_run)
        else:
            typer.echo(f"hookchain: {codex_install.TRUST_HELP}")
    else:
        problem = gemini_install.trust_problem(Path.cwd()) if where == "project" else None
        if problem:
            typer.echo(f"hookchain: warning: {problem}", err=True)
    typer.echo(f"hookchain: start a new {chosen} session for the change to apply")


def _unmerged_plugin_settings(harness: str, scope: str) -> None:
    """Plugins asking for settings of a harness whose installer does not merge them yet: said,
    never dropped without a word."""
    host = claude_cli.project_host_or_warn()
    if host is None:
        return
    root = claude_install.find_project_root(Path.cwd())
    asked = project_plugins.asked_settings(host, harness, scope, root)
    for plugin, value in asked.settings.items():
        typer.echo(
            f"hookchain: warning: plugin {plugin} asks for {harness} settings "
            f"({', '.join(value)}), which install does not write for {harness} yet; set them "
            "by hand if you want them",
            err=True,
        )


def uninstall(
    harness: HarnessOption = "claude-code",
    scope: ScopeChoice = None,
    project: claude_cli.ProjectOption = False,
    user: claude_cli.UserOption = False,
    dry_run: claude_cli.DryRunOption = False,
) -> None:
    """Remove hookchain's hooks (and only those) from a harness's settings."""
    chosen = _harness(harness)
    if chosen == "claude-code":
        claude_cli.uninstall(scope or "", project, user, dry_run)
        return
    user, project = _scope(scope, user, project)
    if user and project:
        raise _fail("choose one of --user and --project")
    where: codex_install.Scope = "user" if user else "project"
    try:
        if chosen == "codex":
            path = codex_install.config_path(where, Path.cwd())
            trust_file = codex_install.config_path("user", Path.cwd())
            _show(codex_install.plan_uninstall(path, trust_file), dry_run, "hooks removed from")
            if trust_file != path:
                # Trust entries name a hook's file and place: they go with the hooks.
                untrust = codex_install.plan_untrust(trust_file, path)
                _show(untrust, dry_run, "trust of its hooks removed from")
            return
        plan = gemini_install.plan_uninstall(gemini_install.settings_path(where, Path.cwd()))
    except claude_install.InstallError as error:
        raise _fail(str(error)) from None
    _show(plan, dry_run, "hooks removed from")


def status(
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    codex: CodexOption = None,
) -> None:
    """Show the running host, and hooks a harness will skip (Codex trust, Gemini folder trust)."""
    warnings = harness_warnings(codex)
    for warning in warnings:
        typer.echo(f"hookchain: warning: {warning}", err=True)
    claude_cli.status(as_json)


def harness_warnings(codex: str | None = None) -> list[str]:
    """Installed hooks a harness will not run: untrusted Codex hooks, an untrusted Gemini folder."""
    found: list[str] = []
    configs = [codex_install.config_path(s, Path.cwd()) for s in ("user", "project")]
    installed = [path for path in configs if _mentions_hookchain(path)]
    if installed:
        try:
            hooks = codex_install.list_hooks(Path.cwd(), codex)
        except codex_install.CodexUnavailable as error:
            found.append(f"cannot tell whether Codex trusts hookchain's hooks ({error})")
        else:
            untrusted = codex_install.untrusted_ours(hooks)
            for path in codex_install.missing_ours(hooks, installed):
                why = (
                    codex_install.project_trust_help(Path.cwd())
                    if path == configs[1]
                    else "Is CODEX_HOME the one Codex runs with?"
                )
                found.append(f"Codex does not load hookchain's hooks in {path}. {why}")
            if untrusted:
                events = ", ".join(sorted({hook.event for hook in untrusted}))
                found.append(
                    f"Codex does not trust {len(untrusted)} hookchain hooks ({events}) and will "
                    f"skip them silently. {codex_install.TRUST_HELP}"
                )
    try:
        problem = gemini_install.trust_problem(Path.cwd())
    except claude_install.InstallError:
        problem = None
    if problem:
        found.append(problem)
    return found


def _mentions_hookchain(path: Path) -> bool:
    try:
        return "# >>> hookchain hooks" in path.read_text(encoding="utf-8")
    except OSError:
        return False


@hookimpl
def register_cli(app: typer.Typer) -> None:
    """Replace Claude Code's `install`, `uninstall` and `status` with the harness-aware ones."""
    mine = {"install", "uninstall", "status"}
    app.registered_commands[:] = [c for c in app.registered_commands if c.name not in mine]
    app.command("install")(install)
    app.command("uninstall")(uninstall)
    app.command("status")(status)
