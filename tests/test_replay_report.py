"""The readable `hookchain replay` report and its errors, from the real console script: the
whole text, one row per alert, a legend, plurals, no highlighting, one-line errors, local
single-file plugins."""

from __future__ import annotations

import json
import re
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from cli_kit import hookchain, on_terminal, plugins_folder

from framework.replay.runner import ReplayAction
from framework.replay.text_report import counted_kind, row_counts, rows

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "transcripts"
RISKY = EXAMPLES / "2026-03-02_risky-writes.jsonl"
REFUSAL = EXAMPLES / "2026-03-03_refusal.jsonl"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

# Says a sentence long enough to need several lines at 100 columns, ending in a word that a cut
# would drop, and markup that rich must print as it is.
LONG_NOTE = textwrap.dedent(
    """
    from framework import PluginInfo, hookimpl

    plugin = PluginInfo(name="long-note", contract=">=1,<2", description="a long note")
    TEXT = "[bold]not markup[/bold] " + " ".join(f"word{n}" for n in range(60)) + " END-OF-NOTE"


    @hookimpl
    def register(on, options):
        async def note(engine, event, call_next):
            result = await call_next(event)
            return result.with_note(TEXT, by="long-note")

        on("tool.call", note)
    """
)


@pytest.fixture
def local(tmp_path: Path) -> Path:
    return plugins_folder(tmp_path / "my-plugins", {"long_note.py": LONG_NOTE})


def _words(output: str) -> str:
    """The report's text with the table's wrapping undone: what a reader reads across lines."""
    return " ".join(ANSI.sub("", output).split())


def test_the_text_column_keeps_the_whole_text_wrapped(tmp_path: Path, local: Path) -> None:
    env = {"HOOKCHAIN_PLUGINS_DIR": str(local)}
    code, shown = on_terminal(["replay", "--plugins", "long-note", str(RISKY)], tmp_path, env)
    assert code == 0, shown
    assert "…" not in shown
    assert "END-OF-NOTE" in shown and "[bold]not markup[/bold]" in _words(shown)
    assert max(len(line) for line in ANSI.sub("", shown).splitlines()) <= 100


def text_column(report: str) -> str:
    """The text column of a report's tables read down, its wrapped lines joined."""
    cells, start = [], None
    for line in report.splitlines():
        if line.startswith("#  "):
            start = line.index("text")
        elif not line.strip() or line.startswith(("session ", "columns:")):
            start = None
        elif start is not None:
            cells.append(line[start:].strip())
    return " ".join(cells)


def test_a_write_guard_denial_is_shown_whole(tmp_path: Path) -> None:
    whole = hookchain(["replay", "--json", "--plugins", "write-guard", str(RISKY)], tmp_path)
    texts = [action["text"] for action in json.loads(whole.stdout)["actions"]]
    args = ["replay", "--plugins", "write-guard", str(RISKY)]
    done = hookchain(args, tmp_path, {"COLUMNS": "100"})
    assert done.returncode == 0, done.stderr
    assert max(len(line) for line in done.stdout.splitlines()) <= 100
    column = "".join(text_column(done.stdout).split())
    assert len(texts) == 3
    for text in texts:
        # wrapped at spaces, or a word longer than the column folded: no character lost
        assert "".join(text.split()) in column, (text, done.stdout)


def test_an_alert_is_one_row_not_a_toast_and_a_transcript_row(tmp_path: Path) -> None:
    done = hookchain(["replay", "--plugins", "refusal-watch", str(REFUSAL)], tmp_path)
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if "refusal-watch" in line]
    kinds = [line.split()[2] for line in rows if re.match(r"^\d+\s", line)]
    assert kinds == ["alert", "alert"], done.stdout
    assert done.stdout.count("Refusal: the model's reply") == 2


def test_a_legend_explains_the_columns(tmp_path: Path) -> None:
    done = hookchain(["replay", str(EXAMPLES)], tmp_path)
    assert done.returncode == 0, done.stderr
    legend = done.stdout[done.stdout.index("\ncolumns:") :]
    for column in ("#", "plugin", "kind", "event", "tool", "text"):
        assert re.search(rf"^  {re.escape(column)}\s+\S", legend, re.M), (column, legend)
    assert "event number" in legend and "alert" in legend and "deny" in legend
    quiet = hookchain(["replay", "--plugins", "loop-breaker", str(REFUSAL)], tmp_path)
    assert "columns:" not in quiet.stdout  # no table, nothing to explain


def test_counts_are_in_the_right_plural(tmp_path: Path) -> None:
    done = hookchain(["replay", str(EXAMPLES)], tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "1 prompt, 1 turn, 9 tool calls" in out
    assert "2 prompts, 2 turns, 0 tool calls" in out
    assert re.search(r"^  write-guard: 3 denials$", out, re.M), out
    assert re.search(r"^  loop-breaker: 1 note$", out, re.M), out
    assert re.search(r"^  refusal-watch: 2 alerts$", out, re.M), out
    assert "1 prompts" not in out and "1 turns" not in out


def test_digits_in_file_names_are_not_coloured(tmp_path: Path) -> None:
    code, shown = on_terminal(["replay", str(EXAMPLES)], tmp_path)
    assert code == 0, shown
    # the progress bar (on the same terminal) colours its own numbers: look at the report's lines
    lines = [line for line in shown.splitlines() if ".jsonl" in line or "/etc/hosts" in line]
    assert any("2026-03-02_test-fix-loop.jsonl" in line for line in lines), shown
    assert any("Write /etc/hosts" in line for line in lines), shown
    for line in lines:
        assert not re.search(r"\x1b\[[0-9;]*m[\d/]", line), f"highlighted: {line!r}"


def test_a_plugin_name_typo_is_one_line_with_the_nearest_name(tmp_path: Path) -> None:
    done = hookchain(["replay", "--plugins", "write-gaurd", str(EXAMPLES)], tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert "did you mean 'write-guard'?" in done.stderr
    assert done.stderr.startswith("hookchain: ") and done.stderr.count("\n") == 1


def test_a_bad_config_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "hookchain.toml").write_text('[hookchain]\nlog_level = "loud"\n', encoding="utf-8")
    done = hookchain(["replay", str(EXAMPLES)], tmp_path)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert str(tmp_path / "hookchain.toml") in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_local_single_file_plugin_replays(tmp_path: Path, local: Path, jobs: str) -> None:
    args = ["replay", "--json", "--jobs", jobs, "--plugins", "long-note", str(EXAMPLES)]
    done = hookchain(args, tmp_path, {"HOOKCHAIN_PLUGINS_DIR": str(local)})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert {a["by"] for a in report["actions"]} == {"long-note"}
    assert len(report["actions"]) == report["summary"]["tool_calls"] == 14
    everything = hookchain(
        ["replay", "--json", "--jobs", jobs, str(EXAMPLES)],
        tmp_path,
        {"HOOKCHAIN_PLUGINS_DIR": str(local)},
    )
    assert "long-note" in json.loads(everything.stdout)["summary"]["plugins"]


def test_help_names_dates_and_urls(tmp_path: Path) -> None:
    done = hookchain(["replay", "--help"], tmp_path, {"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    for option, metavar in [
        ("--since", "DATE"),
        ("--until", "DATE"),
        ("--store", "URL"),
        ("--into", "DIR"),
        ("--plugins", "NAME[,NAME…]"),
    ]:
        assert re.search(rf"{option}\s+{re.escape(metavar)}\s", done.stdout), option


def _action(kind: str, text: str, index: int = 3, by: str = "p") -> ReplayAction:
    return ReplayAction("s", by, "turn.step", kind, None, index, text)


def test_only_a_toast_and_a_transcript_line_saying_the_same_are_one_alert() -> None:
    same = rows([_action("toast", "hi  there"), _action("transcript", "hi there")])
    assert [(r.kind, r.text) for r in same] == [("alert", "hi there")]
    differ = [_action("toast", "a"), _action("transcript", "b")]
    elsewhere = [_action("toast", "a"), _action("transcript", "a", index=4)]
    others = [_action("toast", "a"), _action("transcript", "a", by="q")]
    for apart in (differ, elsewhere, others):
        assert [r.kind for r in rows(apart)] == ["toast", "transcript"]
    counts: dict[str, Counter[str]] = {}
    row_counts(rows([*differ, *same]), counts)
    assert counts == {"p": Counter({"toast": 1, "transcript": 1, "alert": 1})}
    assert [counted_kind(1, "deny"), counted_kind(2, "transcript")] == [
        "1 denial",
        "2 transcript lines",
    ]
