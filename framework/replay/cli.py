"""`hookchain replay`: run recorded Claude Code sessions through the plugins and report."""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, NoReturn, TextIO

import typer

from framework.core.hookspecs import hookimpl
from framework.core.loading import (
    discovered_candidates,
    unknown_names_message,
    unknown_plugin_names,
)
from framework.core.logging import configure_logging
from framework.core.settings import UserError, find_config, load_settings
from framework.replay import text_report
from framework.replay.parallel import ReplayError, default_jobs, replay_jobs
from framework.replay.reader import TranscriptPathError, transcript_files
from framework.replay.runner import (
    GroupReport,
    PluginStatus,
    ReplayReport,
    SessionReport,
    Window,
)

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
_DATE_ONLY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def parse_moment(text: str, *, end_of_day: bool = False, now: datetime | None = None) -> int:
    """A date, a date and time (UTC unless given) or a duration back from now (`7d`, `12h`,
    `30m`, `2w`) as milliseconds since the epoch; a bare date under `end_of_day` means its end."""
    found = _DURATION.match(text)
    if found:
        back = timedelta(seconds=float(found.group(1)) * _UNIT_S[found.group(2)])
        return int(((now or datetime.now(UTC)) - back).timestamp() * 1000)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(
            f"not a date or a duration: {text!r} (try 2026-01-31, 2026-01-31T18:00 or 7d)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    if end_of_day and _DATE_ONLY.match(text.strip()):
        return int((moment + timedelta(days=1)).timestamp() * 1000) - 1
    return int(moment.timestamp() * 1000)


def parse_since(text: str) -> int:
    """`--since`: a date, date and time, or duration back from now, as epoch milliseconds."""
    return parse_moment(text)


def default_transcripts() -> Path:
    """Where Claude Code keeps its transcripts: `$CLAUDE_CONFIG_DIR/projects`, else
    `~/.claude/projects`."""
    config = os.environ.get("CLAUDE_CONFIG_DIR")
    base = Path(config).expanduser() if config else Path.home() / ".claude"
    return base / "projects"


def replay_command(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Transcript files or folders (searched recursively); by default "
            "$CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects.",
            show_default=False,
        ),
    ] = None,
    plugins: Annotated[
        list[str] | None,
        typer.Option(
            "--plugins",
            metavar="NAME[,NAME…]",
            help="Only these plugins (comma-separated or repeated).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    json_lines: Annotated[
        bool,
        typer.Option(
            "--json-lines",
            help="Print one JSON line per session as it is replayed, then a summary line "
            "(for large inputs: nothing is held back).",
        ),
    ] = False,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="DATE",
            help="Only sessions active on or after this date or duration ago (7d).",
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(
            "--until",
            metavar="DATE",
            help="Only sessions started by this date (its end, for a bare date) or duration ago.",
        ),
    ] = None,
    store: Annotated[
        str,
        typer.Option(
            "--store", metavar="URL", help="Store URL; a throwaway memory store by default."
        ),
    ] = "memory://",
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs",
            "-j",
            min=1,
            metavar="N",
            help="Worker processes, each its own host (default: the number of cores).",
            show_default=False,
        ),
    ] = None,
    into: Annotated[
        Path | None,
        typer.Option(
            "--into",
            metavar="DIR",
            help="Keep every plugin's files in this folder, one subfolder per plugin "
            "(DIR/PLUGIN), instead of a throwaway folder, so a plugin's own commands can "
            "read them afterwards.",
        ),
    ] = None,
) -> None:
    """Replay recorded Claude Code sessions through the installed plugins: what would they do?"""
    window = Window(
        since_ms=parse_moment(since) if since else None,
        until_ms=parse_moment(until, end_of_day=True) if until else None,
    )
    only = [name.strip() for entry in plugins or () for name in entry.split(",") if name.strip()]
    settings = load_settings(path=find_config())
    configure_logging(settings.log_level)
    candidates = discovered_candidates(settings.plugins_dir)
    unknown = unknown_plugin_names(only, candidates)
    if unknown:
        raise UserError(unknown_names_message(unknown, "--plugins", candidates))
    inputs = list(paths or [default_transcripts()])
    if not paths and not inputs[0].is_dir():
        _nothing(
            f"no transcripts under {inputs[0]}: no such folder (name transcript files or "
            "folders, or set CLAUDE_CONFIG_DIR to Claude Code's config folder)"
        )
    try:
        found = len(transcript_files(inputs))
    except TranscriptPathError as error:
        raise UserError(str(error)) from None
    if not found:
        _nothing(f"no transcripts (*.jsonl) under {_names(inputs)}")
    if into is not None:
        into = _prepare_into(into)
    output: _Output
    if json_lines:
        output = _JsonLines(sys.stdout)
    elif as_json:
        output = _Output()
    else:
        output = _Text()
    bar = _Bar() if not (as_json or json_lines) and sys.stderr.isatty() else None
    try:
        report = replay_jobs(
            inputs,
            jobs=jobs or default_jobs(),
            only=only,
            store=store,
            settings=settings,
            window=window,
            into=into,
            keep_actions=not json_lines,
            on_start=lambda plugins: _started(output, bar, plugins),
            on_session=lambda s: output.session(s, bar),
            progress=None if bar is None else bar.advance,
        )
    except (TranscriptPathError, ReplayError) as error:
        raise UserError(str(error)) from None
    finally:
        if bar is not None:
            bar.close()
    output.finish(report)
    if not report.sessions:
        typer.echo(f"hookchain replay: {_why_empty(report, window, inputs, found)}", err=True)


def _started(output: _Output, bar: _Bar | None, plugins: tuple[PluginStatus, ...]) -> None:
    if bar is not None:
        bar.start()
    output.start(plugins)


def _nothing(message: str) -> NoReturn:
    """Nothing to replay: not a mistake in what was given, so exit 1 (2 is for those)."""
    typer.echo(f"hookchain replay: {message}", err=True)
    raise typer.Exit(1)


def _names(paths: Sequence[Path]) -> str:
    return ", ".join(str(p) for p in paths)


def _stamp(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _why_empty(report: ReplayReport, window: Window, paths: Sequence[Path], found: int) -> str:
    where = f"in {found} transcript files under {_names(paths)}"
    if window.since_ms is None and window.until_ms is None:
        return f"0 sessions with anything to replay {where}"
    bounds = []
    if window.since_ms is not None:
        bounds.append(f"since {_stamp(window.since_ms)}")
    if window.until_ms is not None:
        bounds.append(f"until {_stamp(window.until_ms)}")
    unread = found - report.files
    return (
        f"0 sessions {' and '.join(bounds)} {where}: {report.sessions_read} sessions read fall "
        f"outside it, and {unread} files were not read (last written before --since, or "
        "begun after --until)"
    )


def _prepare_into(into: Path) -> Path:
    """The `--into` folder, made private to the user when it is new; refused when not a folder."""
    into = into.expanduser().resolve()
    if into.exists() and not into.is_dir():
        raise UserError(f"--into {into}: not a folder; name a folder, or a new one to create")
    try:
        into.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"--into {into}: {error.strerror}") from None
    return into


class _Bar:
    """Files, bytes, events and the time left, on stderr (the terminal that was checked), so a
    report piped to a file stays clean."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self.files = self.events = 0
        self.progress = Progress(
            TextColumn("replaying"),
            BarColumn(),
            DownloadColumn(),
            TextColumn("{task.fields[files]} files, {task.fields[events]} events"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
            # Both on one terminal: the report's lines go above the bar, not through it.
            redirect_stdout=sys.stdout.isatty(),
        )
        self.task = self.progress.add_task("replaying", total=None, files=0, events=0)

    def start(self) -> None:
        # Called once the host is open, after any worker was forked: a fork copies no thread.
        self.progress.start()

    def advance(self, group: GroupReport, total: int) -> None:
        self.files += group.files
        self.events += group.events
        self.progress.update(
            self.task, advance=group.size, total=total, files=self.files, events=self.events
        )

    def close(self) -> None:
        self.progress.stop()


class _Output:
    """The default `--json` document: everything, printed at the end."""

    def start(self, plugins: tuple[PluginStatus, ...]) -> None:
        pass

    def session(self, session: SessionReport, bar: _Bar | None) -> None:
        pass

    def finish(self, report: ReplayReport) -> None:
        typer.echo(json.dumps(report.to_json(), indent=2))


class _JsonLines(_Output):
    """`--json-lines`: a line per session as soon as it is replayed, then the summary."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def session(self, session: SessionReport, bar: _Bar | None) -> None:
        self.stream.write(json.dumps({"type": "session", **session.to_json()}) + "\n")

    def finish(self, report: ReplayReport) -> None:
        self.stream.write(json.dumps({"type": "summary", **report.summary()}) + "\n")
        self.stream.flush()


class _Text(_Output):
    """The readable report: the plugins, per session what each did as it is replayed, a legend
    of the table's columns when there was a table, totals."""

    def __init__(self) -> None:
        self.console = text_report.console()
        self.shown: dict[str, Counter[str]] = {}

    def start(self, plugins: tuple[PluginStatus, ...]) -> None:
        text_report.print_plugins(self.console, plugins)

    def session(self, session: SessionReport, bar: _Bar | None) -> None:
        text_report.row_counts(text_report.print_session(self.console, session), self.shown)

    def finish(self, report: ReplayReport) -> None:
        if self.shown:
            text_report.print_legend(self.console)
        text_report.print_totals(self.console, report, self.shown)


def print_report(report: ReplayReport) -> None:
    """The readable report of a finished replay (what `hookchain replay` prints as it goes)."""
    output = _Text()
    output.start(report.plugins)
    by_session: dict[str, list[Any]] = {}
    for action in report.actions:
        by_session.setdefault(action.session_id, []).append(action)
    for summary in report.sessions:
        actions = tuple(by_session.get(summary.session_id, ()))
        output.session(SessionReport(summary, actions), None)
    output.finish(report)


@hookimpl
def register_cli(app: typer.Typer) -> None:
    """Add `hookchain replay` to the CLI."""
    app.command("replay")(replay_command)
