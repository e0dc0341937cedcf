"""`hookchain replay` run as a real process over the examples and small inputs made here."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import sqlite3
import subprocess
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from replay_kit import HOOKCHAIN, environment, replay, replay_json

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "transcripts"
CORPUS = REPO.parent / "shared" / "corpus" / "transcripts"
REPORT_KINDS = {"note", "deny", "drop", "context", "continue", "toast", "transcript"}
ACTION_KEYS = {"session_id", "by", "event", "kind", "tool_use_id", "index", "text"}
FIRST_PARTY = {"loop-breaker", "write-guard", "refusal-watch", "observer"}


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return replay_json(tmp_path_factory.mktemp("examples"), str(EXAMPLES))


def recorded_calls(folder: Path) -> dict[str, dict[str, Any]]:
    """Every tool_use of the example files by id: tool, input, cwd and whether it failed."""
    calls: dict[str, dict[str, Any]] = {}
    for file in sorted(folder.glob("*.jsonl")):
        for line in file.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            content = record.get("message", {}).get("content")
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "tool_use":
                    calls[block["id"]] = {
                        "tool": block["name"],
                        "input": block["input"],
                        "cwd": record["cwd"],
                        "failed": False,
                    }
                elif block.get("type") == "tool_result":
                    calls[block["tool_use_id"]]["failed"] = bool(block.get("is_error"))
    return calls


def long_transcript(path: Path, calls: int) -> Path:
    """One session of `calls` distinct reads: more events than the progress bar waits for."""
    said = {"role": "user", "content": "read every file"}
    messages: list[tuple[str, dict[str, Any]]] = [("user", said)]
    for n in range(calls):
        use = {"type": "tool_use", "id": f"t{n}", "name": "Read", "input": {"path": f"f{n}"}}
        result = {"type": "tool_result", "tool_use_id": use["id"], "content": "ok"}
        messages.append(("assistant", {"id": f"msg_{n}", "role": "assistant", "content": [use]}))
        messages.append(("user", {"role": "user", "content": [result]}))
    end = {"id": "msg_end", "role": "assistant", "content": [{"type": "text", "text": "done"}]}
    messages.append(("assistant", {**end, "stop_reason": "end_turn"}))
    start = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
    with path.open("w", encoding="utf-8") as out:
        for n, (kind, message) in enumerate(messages):
            moment = (start + timedelta(seconds=n)).isoformat().replace("+00:00", "Z")
            parent = f"u{n - 1}" if n else None
            record: dict[str, Any] = {
                "type": kind,
                "sessionId": "long-session",
                "cwd": "/home/dev/p",
            }
            record |= {"uuid": f"u{n}", "parentUuid": parent, "timestamp": moment}
            out.write(json.dumps({**record, "message": message}) + "\n")
    return path


def test_demo_shows_every_first_party_plugin_acting(examples: dict[str, Any]) -> None:
    calls = recorded_calls(EXAMPLES)
    by = {(a["by"], a["kind"]) for a in examples["actions"]}
    assert {("loop-breaker", "note"), ("write-guard", "deny"), ("refusal-watch", "toast")} <= by
    notes = [a for a in examples["actions"] if (a["by"], a["kind"]) == ("loop-breaker", "note")]
    for note in notes:
        nudged = calls[note["tool_use_id"]]
        same = [c for c in calls.values() if c["input"] == nudged["input"]]
        assert nudged["tool"] == "Bash" and nudged["failed"]
        assert sum(c["failed"] for c in same) >= 3
    denied = [calls[a["tool_use_id"]] for a in examples["actions"] if a["kind"] == "deny"]
    assert {a["by"] for a in examples["actions"] if a["kind"] == "deny"} == {"write-guard"}
    assert any(
        c["tool"] == "Write" and not c["input"]["file_path"].startswith(c["cwd"] + "/")
        for c in denied
    )
    assert any("git reset --hard" in c["input"].get("command", "") for c in denied)
    toasts = [a for a in examples["actions"] if a["by"] == "refusal-watch" and a["kind"] == "toast"]
    refused = {s["session_id"] for s in examples["sessions"] if "refusal" in Path(s["path"]).name}
    assert {t["session_id"] for t in toasts} == refused
    assert all(t["event"] == "turn.step" for t in toasts)
    assert examples["summary"]["logged_records"]["observer"] >= 1
    assert set(examples["summary"]["plugins"]) == FIRST_PARTY


def test_json_has_the_shape_the_issue_states(examples: dict[str, Any]) -> None:
    assert set(examples) == {"sessions", "actions", "summary"}
    sessions = {s["session_id"]: s for s in examples["sessions"]}
    assert len(sessions) == examples["summary"]["sessions"] == 3
    for action in examples["actions"]:
        assert set(action) == ACTION_KEYS
        assert action["kind"] in REPORT_KINDS
        assert 0 <= action["index"] < sessions[action["session_id"]]["events"]
        assert (action["tool_use_id"] is not None) == (action["event"] == "tool.call")
    counts: dict[str, Counter[str]] = {}
    for action in examples["actions"]:
        counts.setdefault(action["by"], Counter())[action["kind"]] += 1
    summary = examples["summary"]
    assert {name: dict(c) for name, c in counts.items()} == {
        name: kinds for name, kinds in summary["plugins"].items() if kinds
    }
    assert summary["tool_calls"] == sum(s["tool_calls"] for s in sessions.values()) == 14
    assert summary["tool_calls_main"] == 14
    assert summary["skipped_lines"] == 0


def test_subagent_calls_and_unreadable_lines_are_counted_apart(tmp_path: Path) -> None:
    if not CORPUS.is_dir():
        pytest.fail(f"shared transcripts not found at {CORPUS}; clone beside ../shared")
    garbled = tmp_path / "garbled.jsonl"
    refusal = (EXAMPLES / "2026-03-03_refusal.jsonl").read_text(encoding="utf-8")
    garbled.write_text("{not json\n" + refusal + "[1, 2]\n", encoding="utf-8")
    main, agent = (next(CORPUS.glob(f"{n}_*.jsonl")) for n in ("12", "13"))
    summary = replay_json(tmp_path, str(main), str(agent), str(garbled))["summary"]
    assert (summary["sessions"], summary["tool_calls"], summary["tool_calls_main"]) == (2, 2, 1)
    assert summary["skipped_lines"] == 2


def test_plugins_option_runs_only_the_named_plugins_and_refuses_unknown_names(
    tmp_path: Path, examples: dict[str, Any]
) -> None:
    one = replay_json(tmp_path, "--plugins", "write-guard", str(EXAMPLES))
    two = replay_json(
        tmp_path, "--plugins", "write-guard", "--plugins", "refusal-watch", str(EXAMPLES)
    )
    assert {a["by"] for a in one["actions"]} == {"write-guard"}
    assert set(one["summary"]["plugins"]) == {"write-guard"}
    assert one["summary"]["logged_records"] == {}
    expected = [a for a in examples["actions"] if a["by"] == "write-guard"]
    assert one["actions"] == expected
    assert {a["by"] for a in two["actions"]} == {"write-guard", "refusal-watch"}
    unknown = replay(tmp_path, "--plugins", "write-guard,no-such-plugin", str(EXAMPLES))
    assert (unknown.returncode, unknown.stdout) == (2, "")
    assert "no-such-plugin" in unknown.stderr and "Traceback" not in unknown.stderr


def test_store_option_writes_the_named_store_and_the_default_is_throwaway(tmp_path: Path) -> None:
    database = tmp_path / "replay.db"
    ignored = tmp_path / "from-environment.db"
    environment(tmp_path)
    before = set(tmp_path.rglob("*"))
    replay_json(tmp_path, str(EXAMPLES), HOOKCHAIN_STORE=f"sqlite:///{ignored}")
    assert set(tmp_path.rglob("*")) == before  # neither that store nor one in the data folder
    replay_json(tmp_path, "--store", f"sqlite:///{database}", str(EXAMPLES))
    with sqlite3.connect(database) as db:
        keys = [key for (key,) in db.execute("SELECT key FROM kv")]
    assert {key.split(":")[0] for key in keys} & FIRST_PARTY
    bad = replay(tmp_path, "--store", "nosuch://x", str(EXAMPLES))
    assert bad.returncode == 2 and "nosuch" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.parametrize(
    ("since", "files"),
    [
        ("2026-03-03", {"2026-03-03_refusal.jsonl"}),
        ("2026-03-02T12:00:00", {"2026-03-02_risky-writes.jsonl", "2026-03-03_refusal.jsonl"}),
        ("2026-03-02T12:12:51.300", {"2026-03-02_risky-writes.jsonl", "2026-03-03_refusal.jsonl"}),
        ("2026-03-02T12:12:51.301", {"2026-03-03_refusal.jsonl"}),
        ("2026-03-02T12:00:00-03:00", {"2026-03-03_refusal.jsonl"}),
        ("2026-03-04", set()),
    ],
)
def test_since_leaves_out_earlier_sessions(tmp_path: Path, since: str, files: set[str]) -> None:
    data = replay_json(tmp_path, "--since", since, str(EXAMPLES))
    assert {Path(s["path"]).name for s in data["sessions"]} == files
    assert {a["session_id"] for a in data["actions"]} <= {s["session_id"] for s in data["sessions"]}


def test_a_malformed_since_date_exits_2(tmp_path: Path) -> None:
    done = replay(tmp_path, "--since", "last tuesday", str(EXAMPLES))
    assert done.returncode == 2
    assert "last tuesday" in done.stderr and done.stdout == ""


def unreadable(tmp_path: Path, kind: str) -> Path:
    if kind == "inside-a-file":
        (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
        return tmp_path / "notes.txt" / "session.jsonl"
    if kind == "fifo":
        os.mkfifo(tmp_path / "pipe.jsonl")
        return tmp_path / "pipe.jsonl"
    if kind == "name-too-long":
        return tmp_path / ("x" * 300 + ".jsonl")
    if not Path("/proc/self/mem").exists():
        pytest.skip("needs /proc/self/mem, a file that fails on read even for root")
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "mem.jsonl").symlink_to("/proc/self/mem")
    return tmp_path / "folder"


@pytest.mark.parametrize("kind", ["inside-a-file", "fifo", "name-too-long", "failing-read"])
def test_unreadable_input_exits_2_naming_the_path(tmp_path: Path, kind: str) -> None:
    path = unreadable(tmp_path, kind)
    done = replay(tmp_path, str(path), str(EXAMPLES))
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("hookchain: ") and "Traceback" not in done.stderr
    assert str(path) in done.stderr
    if os.path.lexists(path):  # it is there, only not readable: say so, not "no such file"
        assert "no such file" not in done.stderr.lower()
    assert done.stdout == ""


def test_readable_report_matches_the_json(tmp_path: Path, examples: dict[str, Any]) -> None:
    done = replay(tmp_path, str(EXAMPLES), HOOKCHAIN_DISABLE_PLUGINS="observer")
    assert done.returncode == 0, done.stderr
    head, *blocks = re.split(r"\n(?=session )", done.stdout)
    assert re.search(r"^disabled: observer$", head, re.M)
    plugins_line = next(line for line in head.splitlines() if line.startswith("plugins:"))
    assert "observer" not in plugins_line and "write-guard" in plugins_line
    assert [b.split()[1] for b in blocks] == [s["session_id"] for s in examples["sessions"]]
    calls = recorded_calls(EXAMPLES)
    for block, session in zip(blocks, examples["sessions"], strict=True):
        assert f"{session['tool_calls']} tool calls" in block.splitlines()[0]
        for action in (a for a in examples["actions"] if a["session_id"] == session["session_id"]):
            # a toast and a transcript line with the same text are one alert row
            kind = "alert" if action["kind"] in ("toast", "transcript") else action["kind"]
            row = rf"^{action['index']}\s+{action['by']}\s+{kind}\s+{action['event']}\s+"
            if action["tool_use_id"]:
                call = calls[action["tool_use_id"]]
                label = call["input"].get("command") or call["input"]["file_path"]
                row += re.escape(f"{call['tool']} {' '.join(label.split())[:20]}")
            assert re.search(row, block, re.M), (row, block)
    summary = examples["summary"]
    assert (
        f"total: {summary['sessions']} sessions, {summary['events']} events, "
        f"{summary['tool_calls']} tool calls ({summary['tool_calls_main']} in the main loop), "
        f"{summary['skipped_lines']} unreadable lines skipped"
    ) in done.stdout
    assert re.search(r"^  write-guard: 3 denials$", done.stdout, re.M)


def run_with_tty_stderr(home: Path, *args: str) -> tuple[str, bytes]:
    """Replay with stderr on a pseudo-terminal: what stdout got and what the terminal showed."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [*HOOKCHAIN, "replay", *args],
        stdout=subprocess.PIPE,
        stderr=follower,
        env=environment(home),
        cwd=home,
    )
    os.close(follower)
    shown = b""
    while select.select([leader], [], [], 30)[0]:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closes with the process
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    stdout, _ = process.communicate(timeout=30)
    assert process.returncode == 0
    return stdout.decode(), shown


def test_progress_bar_only_on_a_terminal_and_never_in_the_output(tmp_path: Path) -> None:
    long = long_transcript(tmp_path / "long.jsonl", 2_600)
    piped = replay(tmp_path, str(long))
    assert piped.returncode == 0
    assert piped.stderr == ""
    assert piped.stdout.startswith("plugins:")
    report, terminal = run_with_tty_stderr(tmp_path, str(long))
    assert b"replaying" in terminal
    assert re.search(rb"1 files, \d+ events", terminal), terminal[-400:]
    assert re.search(rb"\d+(\.\d+)?/\d+(\.\d+)? [kM]B", terminal), terminal[-400:]
    assert report == piped.stdout
    as_json, quiet = run_with_tty_stderr(tmp_path, "--json", str(long))
    assert quiet == b""
    assert json.loads(as_json)["summary"]["events"] >= 5_000
