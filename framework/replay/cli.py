"""`hookchain replay`: run recorded Claude Code sessions through the plugins and report."""

from __future__ import annotations

import json
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import anyio
import typer

from framework.core.hookspecs import hookimpl
from framework.core.loading import entry_point_candidates
from framework.core.logging import configure_logging
from framework.core.settings import HostSettings, SettingsError, load_settings
from framework.replay.reader import TranscriptPathError
from framework.replay.runner import Progress, ReplayAction, ReplayReport, one_line, replay_paths
from framework.stores.base import StoreError

FIRST_PARTY_PLUGINS = ("loop-breaker", "write-guard", "refusal-watch", "observer")
"""The plugins shipped with hookchain; the report names those that are not installed."""

_PROGRESS_FROM_EVENTS = 5_000
_TEXT_WIDTH = 160


def parse_since(text: str) -> int:
    """A date (or date and time, UTC unless given) as milliseconds since the epoch."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(f"not an ISO date: {text!r} (try 2026-01-31)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def replay_command(
    paths: Annotated[
        list[Path], typer.Argument(help="Transcript files or folders (searched recursively).")
    ],
    plugins: Annotated[
        list[str] | None,
        typer.Option("--plugins", help="Only these plugins (comma-separated or repeated)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    since: Annotated[
        str | None, typer.Option("--since", help="Only sessions active on or after this date.")
    ] = None,
    store: Annotated[
        str, typer.Option("--store", help="Store URL; a throwaway memory store by default.")
    ] = "memory://",
) -> None:
    """Replay recorded Claude Code sessions through the installed plugins: what would they do?"""
    since_ms = parse_since(since) if since else None
    only = [name.strip() for entry in plugins or () for name in entry.split(",") if name.strip()]
    try:
        settings = load_settings()
    except SettingsError as error:
        typer.echo(f"hookchain: {error}", err=True)
        raise typer.Exit(2) from None
    configure_logging(settings.log_level)
    installed = {candidate.name for candidate in entry_point_candidates()}
    unknown = [name for name in only if name not in installed]
    if unknown:
        typer.echo(
            f"hookchain replay: no installed plugin named {', '.join(map(repr, unknown))}; "
            f"installed: {', '.join(sorted(installed)) or 'none'}",
            err=True,
        )
        raise typer.Exit(2)
    show_progress = not as_json and sys.stderr.isatty()
    try:
        report = _run(paths, only, store, settings, since_ms, show_progress)
    except (TranscriptPathError, StoreError) as error:
        typer.echo(f"hookchain replay: {error}", err=True)
        raise typer.Exit(2) from None
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        print_report(report)


def _run(
    paths: list[Path],
    only: list[str],
    store: str,
    settings: HostSettings,
    since_ms: int | None,
    show_progress: bool,
) -> ReplayReport:
    def replay(progress: Progress | None) -> ReplayReport:
        return anyio.run(
            lambda: replay_paths(
                paths,
                only=only,
                store=store,
                settings=settings,
                since_ms=since_ms,
                progress=progress,
            )
        )

    if not show_progress:
        return replay(None)
    from rich.console import Console
    from rich.progress import Progress as ProgressBar

    # On stderr, the terminal that was checked, so a report piped to a file stays clean.
    with ProgressBar(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("replaying", total=None)

        def advance(done: int, total: int) -> None:
            if total >= _PROGRESS_FROM_EVENTS:
                bar.update(task, completed=done, total=total)

        return replay(advance)


def print_report(report: ReplayReport) -> None:
    """The readable report: per session what each plugin did, then the totals."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    loaded = [p.name for p in report.plugins if p.status == "loaded"]
    known = {p.name for p in report.plugins}
    missing = [name for name in FIRST_PARTY_PLUGINS if name not in known]
    console.print(f"[bold]plugins[/bold]: {', '.join(loaded) or 'none'}")
    disabled = [p.name for p in report.plugins if p.status == "disabled"]
    for plugin in report.plugins:
        if plugin.status not in ("loaded", "disabled"):
            console.print(f"[red]not loaded[/red]: {plugin.name}: {plugin.error}")
    if disabled:
        console.print(f"[yellow]disabled[/yellow]: {', '.join(disabled)}")
    if missing:
        console.print(f"[yellow]not installed[/yellow]: {', '.join(missing)}")
    by_session: dict[str, list[ReplayAction]] = {}
    for action in report.actions:
        by_session.setdefault(action.session_id, []).append(action)
    for session in report.sessions:
        started = datetime.fromtimestamp(session.first_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M")
        console.print(
            f"\n[bold]session {session.session_id}[/bold]  {started}  {Path(session.path).name}  "
            f"{session.prompts} prompts, {session.turns} turns, {session.tool_calls} tool calls"
        )
        actions = by_session.get(session.session_id, [])
        if not actions:
            console.print("  no plugin acted")
            continue
        table = Table(show_header=True, box=None, pad_edge=False)
        for column in ("#", "plugin", "kind", "event", "tool", "text"):
            table.add_column(column, overflow="fold")
        for action in actions:
            tool = f"{action.tool} {action.label}".strip() if action.tool else ""
            table.add_row(
                str(action.index),
                action.by,
                action.kind,
                action.event,
                tool,
                one_line(action.text, _TEXT_WIDTH),
            )
        console.print(table)
    summary = report.summary()
    console.print(
        f"\n[bold]total[/bold]: {summary['sessions']} sessions, {summary['events']} events, "
        f"{summary['tool_calls']} tool calls ({summary['tool_calls_main']} in the main loop), "
        f"{summary['skipped_lines']} unreadable lines skipped"
    )
    for plugin, counts in summary["plugins"].items():
        shown = ", ".join(f"{n} {kind}" for kind, n in Counter(counts).most_common()) or "nothing"
        logged = summary["logged_records"].get(plugin)
        if logged:
            shown += f"; {logged} records logged (to a throwaway folder)"
        console.print(f"  {plugin}: {shown}")
    for site, count in summary["handler_failures"].items():
        console.print(f"  [red]handler failures[/red] {site}: {count}")


@hookimpl
def register_cli(app: typer.Typer) -> None:
    """Add `hookchain replay` to the CLI."""
    app.command("replay")(replay_command)
