"""A recorded transcript ending in a refusal, replayed through the installed plugin."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data" / "refusal_stop.jsonl"


def hookchain_command() -> Path:
    script = Path(sys.executable).parent / "hookchain"
    assert script.exists(), f"the hookchain command is not installed next to {sys.executable}"
    return script


def replay_json(path: Path, cwd: Path) -> dict[str, Any]:
    """`hookchain replay --json` of `path` with refusal-watch alone; it must succeed."""
    completed = subprocess.run(
        [str(hookchain_command()), "replay", "--plugins", "refusal-watch", "--json", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    report: dict[str, Any] = json.loads(completed.stdout)
    return report


def test_replay_reports_the_refusal(tmp_path: Path) -> None:
    """T14: a replayed assistant message ending with stop_reason "refusal" shows the refusal."""
    report = replay_json(DATA, tmp_path)
    mine = [action for action in report["actions"] if action["by"] == "refusal-watch"]
    step_kinds = [action["kind"] for action in mine if action["event"] == "turn.step"]
    assert step_kinds == ["toast", "transcript"]
    # The step told the person; its turn's complete does not say it a second time (issue 22).
    complete_kinds = [action["kind"] for action in mine if action["event"] == "turn.complete"]
    assert complete_kinds == []
    assert "Refusal" in mine[0]["text"]


def corpus_dir() -> Path:
    repo = Path(__file__).resolve().parents[3]
    corpus = repo.parent / "shared" / "corpus"
    assert corpus.is_dir(), f"the shared transcript corpus is missing: expected {corpus}"
    return corpus


def refusal_messages(folder: Path) -> int:
    count = 0
    for path in folder.rglob("*.jsonl"):
        for line in path.open(encoding="utf-8"):
            try:
                record = json.loads(line)
            except ValueError:
                continue
            message = record.get("message") if isinstance(record, dict) else None
            if isinstance(message, dict) and message.get("stop_reason") == "refusal":
                count += 1
    return count


def test_corpus_refusals_match_step_toasts(tmp_path: Path) -> None:
    """T14: on real sessions each refused assistant message gives one step toast; no failures."""
    folder = corpus_dir() / "transcripts"
    report = replay_json(folder, tmp_path)
    step_toasts = [
        action
        for action in report["actions"]
        if action["by"] == "refusal-watch"
        and action["event"] == "turn.step"
        and action["kind"] == "toast"
    ]
    assert len(step_toasts) == refusal_messages(folder)
    assert report["summary"]["handler_failures"] == {}
    assert report["summary"]["sessions"] > 0


RECORDED = Path(__file__).resolve().parents[3] / "tests" / "data" / "claude_code"


def test_a_recorded_refused_session_tells_once_and_opens_the_window(tmp_path: Path) -> None:
    """Issue 22: a session recorded from Claude Code 2.1.197 (a refused prompt — `<synthetic>`
    error message, `model_refusal_no_fallback` — then a TaskStop) replays as one notice, one
    refusal record and the TaskStop's notice."""
    transcript = RECORDED / "refusal_then_task_stop.jsonl"
    report = replay_json(transcript, tmp_path)
    toasts = [
        action["text"]
        for action in report["actions"]
        if action["by"] == "refusal-watch" and action["kind"] == "toast"
    ]
    assert len(toasts) == 2, toasts
    assert toasts[0].startswith("Refusal: ")
    assert "Task " in toasts[1] and "within 30 minutes of a refusal" in toasts[1]
    assert report["summary"]["handler_failures"] == {}
