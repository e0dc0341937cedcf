"""Real sessions through `hookchain replay`: the write-heavy session has no false positives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[3].parent / "shared" / "corpus" / "transcripts"
WRITE_HEAVY = "24_ClimateHome_logs-chat_v2.0.60_write-heavy.jsonl"
SESSION_HOME = "/Users/joshuaoliphant"  # the recorded machine's HOME, where plan files live


def _replay(transcript: Path) -> dict[str, object]:
    if not CORPUS.is_dir():
        pytest.fail(f"the shared corpus is missing: expected it at {CORPUS} (beside the clone)")
    hookchain = Path(sys.executable).parent / "hookchain"
    env = {**os.environ, "HOME": SESSION_HOME, "HOOKCHAIN_STORE": "memory://"}
    done = subprocess.run(
        [str(hookchain), "replay", str(transcript), "--plugins", "write-guard", "--json"],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    report: dict[str, object] = json.loads(done.stdout)
    return report


def test_write_heavy_session_has_no_false_positives() -> None:
    report = _replay(CORPUS / WRITE_HEAVY)
    summary = report["summary"]
    assert isinstance(summary, dict)
    assert summary["tool_calls"] >= 50, "the session should have been replayed"
    assert summary["handler_failures"] == {}
    denials = [a for a in report["actions"] if a["by"] == "write-guard"]  # type: ignore[attr-defined]
    assert denials == []
