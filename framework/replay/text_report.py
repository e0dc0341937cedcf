"""The readable replay report: the plugins, a table per session, a legend, the totals.

What the plugins wrote is printed as text, never read as rich markup, and wrapped, never cut: the
end of a denial is usually the part that says what to do instead."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from framework.replay.runner import PluginStatus, ReplayAction, ReplayReport, SessionReport

_TOOL_WIDTH = 32
ALERT = "alert"
"""The report kind of a toast and a transcript line with the same text at the same event: one
thing said to the person, shown once."""

KIND_NOUNS: Mapping[str, tuple[str, str]] = {
    "note": ("note", "notes"),
    "deny": ("denial", "denials"),
    "drop": ("drop", "drops"),
    "context": ("context", "contexts"),
    "continue": ("continuation", "continuations"),
    "toast": ("toast", "toasts"),
    "transcript": ("transcript line", "transcript lines"),
    ALERT: ("alert", "alerts"),
}

LEGEND: tuple[tuple[str, str], ...] = (
    ("#", "the event number in the session, from 0 (the index in --json)"),
    ("plugin", "the plugin that acted"),
    (
        "kind",
        "what it did: note (text added for the model), deny (the tool call refused), drop "
        "(the event dropped), context (context added), continue (the turn made to go on), "
        "toast (shown to the person), transcript (written into the transcript), alert (both "
        "toast and transcript, with the same text)",
    ),
    ("event", "the hook event it acted on (tool.call, turn.step, prompt.submit, ...)"),
    ("tool", "for a tool call: the tool and its command, path or pattern"),
    ("text", "what the plugin said, in full"),
)


def counted(count: int, singular: str, plural: str | None = None) -> str:
    """`1 prompt`, `4 prompts`: a count with its noun in the right number."""
    return f"{count} {singular if count == 1 else plural or singular + 's'}"


def counted_kind(count: int, kind: str) -> str:
    """`3 denials`, `1 note`: a count of one action kind, in words."""
    singular, plural = KIND_NOUNS.get(kind, (kind, kind))
    return counted(count, singular, plural)


@dataclass(frozen=True, slots=True)
class Row:
    """One row of a session's table: an action, or a toast and transcript pair as an alert."""

    index: int
    by: str
    kind: str
    event: str
    tool: str
    text: str


def rows(actions: Iterable[ReplayAction]) -> list[Row]:
    """The table's rows in order; a transcript line that repeats a toast of the same plugin at
    the same event (or the other way round) joins it as one alert row."""
    found: list[Row] = []
    for action in actions:
        tool = f"{action.tool} {action.label}".strip() if action.tool else ""
        text = " ".join(action.text.split())
        row = Row(action.index, action.by, action.kind, action.event, tool, text)
        pair = {"toast", "transcript"}
        last = found[-1] if found else None
        if (
            last is not None
            and {last.kind, row.kind} == pair
            and (last.index, last.by, last.event, last.text) == (row.index, row.by, row.event, text)
        ):
            found[-1] = Row(row.index, row.by, ALERT, row.event, row.tool, text)
            continue
        found.append(row)
    return found


def row_counts(found: Iterable[Row], into: dict[str, Counter[str]]) -> None:
    """Add the rows per plugin and kind to `into`: the totals count what the tables showed."""
    for row in found:
        into.setdefault(row.by, Counter())[row.kind] += 1


def console() -> Any:
    """A console for the report: no highlighting, so digits in file names and paths keep the
    terminal's colour, and no markup read from plugins' texts (they are printed as Text)."""
    from rich.console import Console

    return Console(highlight=False)


def _text(*parts: tuple[str, str] | str) -> Any:
    from rich.text import Text

    return Text.assemble(*parts)


def print_plugins(out: Any, plugins: tuple[PluginStatus, ...]) -> None:
    loaded = [p.name for p in plugins if p.status == "loaded"]
    out.print(_text(("plugins", "bold"), f": {', '.join(loaded) or 'none'}"))
    disabled = [p.name for p in plugins if p.status == "disabled"]
    for plugin in plugins:
        if plugin.status not in ("loaded", "disabled"):
            out.print(_text(("not loaded", "red"), f": {plugin.name}: {plugin.error}"))
    if disabled:
        out.print(_text(("disabled", "yellow"), f": {', '.join(disabled)}"))


def print_session(out: Any, report: SessionReport) -> list[Row]:
    """The session's line and table; the rows shown (none: no table, no legend needed)."""
    from rich.table import Table

    session = report.summary
    started = datetime.fromtimestamp(session.first_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M")
    out.print(
        _text(
            "\n",
            (f"session {session.session_id}", "bold"),
            f"  {started}  {Path(session.path).name}  "
            f"{counted(session.prompts, 'prompt')}, {counted(session.turns, 'turn')}, "
            f"{counted(session.tool_calls, 'tool call')}",
        )
    )
    if not report.actions:
        out.print("  no plugin acted")
        return []
    table = Table(show_header=True, box=None, pad_edge=False)
    for column in ("#", "plugin", "kind", "event"):
        table.add_column(column, no_wrap=True)
    table.add_column("tool", overflow="fold", max_width=_TOOL_WIDTH)
    # The text takes what the other columns leave: it wraps at spaces, never is cut.
    table.add_column("text", overflow="fold")
    shown = rows(report.actions)
    for row in shown:
        table.add_row(
            str(row.index), _text(row.by), row.kind, row.event, _text(row.tool), _text(row.text)
        )
    out.print(table)
    return shown


def print_legend(out: Any) -> None:
    from rich.table import Table

    out.print(_text("\n", ("columns", "bold"), ":"))
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")
    for column, meaning in LEGEND:
        table.add_row(f"  {column}", meaning)
    out.print(table)


def print_totals(out: Any, report: ReplayReport, shown: Mapping[str, Counter[str]]) -> None:
    """The totals; each plugin's actions as the tables showed them (`shown`, from row_counts)."""
    summary = report.summary()
    out.print(
        _text(
            "\n",
            ("total", "bold"),
            f": {counted(summary['sessions'], 'session')}, {counted(summary['events'], 'event')}, "
            f"{counted(summary['tool_calls'], 'tool call')} "
            f"({summary['tool_calls_main']} in the main loop), "
            f"{counted(summary['skipped_lines'], 'unreadable line')} skipped",
        )
    )
    where = "to a throwaway folder" if report.into is None else f"into {report.into}/"
    for plugin in summary["plugins"]:
        kinds = shown.get(plugin, Counter()).most_common()
        line = ", ".join(counted_kind(n, kind) for kind, n in kinds) or "nothing"
        logged = summary["logged_records"].get(plugin)
        if logged:
            kept = plugin if report.into else ""
            line += f"; {counted(logged, 'record')} logged ({where}{kept})"
        out.print(_text(f"  {plugin}: {line}"))
    for site, count in summary["handler_failures"].items():
        out.print(_text("  ", ("handler failures", "red"), f" {site}: {count}"))
    if report.into is not None:
        out.print(_text(f"plugin files kept in {report.into}"))
