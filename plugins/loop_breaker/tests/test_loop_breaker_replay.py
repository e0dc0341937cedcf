"""Real data: the shared Claude Code transcripts replayed through `hookchain replay`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
TRANSCRIPTS = REPO_ROOT.parent / "shared" / "corpus" / "transcripts"

# What each shared transcript yields, reviewed by reading the transcript. Subagent files 13, 15
# and 16 are replayed inside their parents (12 and 14). Values: (nudges, escalations) detectors.
EXPECTED: Mapping[str, tuple[set[str], set[str]]] = {
    # Long investigation; its two failures are unrelated (a missing path, an Edit miss).
    "10": (set(), set()),
    # Plan rejected twice by the person, then different commands: no retry of a refused call.
    "11": (set(), set()),
    # One Task call and its WebSearch subagent.
    "12": (set(), set()),
    # Explore subagent's Bash calls all differ; one failure.
    "14": (set(), set()),
    # Three Edits of style.css fail with "File has been modified since read" without a re-read
    # in between: different attempts, same error. Stops at 3 (the model switches to `patch`).
    "17": ({"same-error"}, set()),
    # TDD in subagents: `npm test -- cycle.service.test.ts` and `-- comment.service.test.ts`
    # fail 5-6 times in a row while edits go in between, each time with a different error
    # (compile errors, then 14 -> 4 -> 3 -> 1 failed) until they pass: progress, not a loop
    # (issue 18: this was a false nudge and a false alarm).
    "18": (set(), set()),
    # TaskCreate/TaskUpdate bookkeeping is never counted; failures are scattered.
    "19": (set(), set()),
    # Hook blocks of different commands and "Sibling tool call errored" cascades (not counted).
    "20": (set(), set()),
    # The broken Stop hook (wrong script path) blocks stopping 19 times with the same feedback.
    "21": ({"stop-block"}, {"stop-block"}),
    "22": (set(), set()),
    # One prompt-hook denial, never retried.
    "23": (set(), set()),
    # WebFetch of guessed documentation URLs: five different URLs all answer 404 until a
    # search finds the real one. Each address is its own failure, as each guessed file path is
    # (issue 18: failures of different targets are exploration, not the same error).
    "24": (set(), set()),
    # Six refusals by the person, each of a different command.
    "25": (set(), set()),
}


def _hookchain() -> str:
    beside = Path(sys.executable).with_name("hookchain")
    found = str(beside) if beside.exists() else shutil.which("hookchain")
    if found is None:
        pytest.fail("the `hookchain` command is not installed beside this interpreter")
    return found


def _replay() -> dict[str, Any]:
    if not TRANSCRIPTS.is_dir():
        pytest.fail(
            f"shared transcript corpus not found at {TRANSCRIPTS} (expected beside the clone)"
        )
    finished = subprocess.run(
        [_hookchain(), "replay", "--plugins", "loop-breaker", "--json", str(TRANSCRIPTS)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr[-2000:]
    report: dict[str, Any] = json.loads(finished.stdout)
    return report


@pytest.fixture(scope="module")
def yielded() -> dict[str, tuple[set[str], set[str]]]:
    """Per transcript number: the detectors that nudged and those that escalated."""
    report = _replay()
    numbers = {
        session["session_id"]: Path(session["path"]).name[:2] for session in report["sessions"]
    }
    found: dict[str, tuple[set[str], set[str]]] = {
        number: (set(), set()) for number in numbers.values()
    }
    for action in report["actions"]:
        if action["by"] != "loop-breaker":
            continue
        nudges, escalations = found[numbers[action["session_id"]]]
        text = action["text"]
        if action["kind"] == "note":
            nudges.add(text.removeprefix("[loop-breaker] ").split(":", 1)[0])
        elif action["kind"] == "toast":
            escalations.add(text.split(" is looping: ", 1)[1].split(" on ", 1)[0])
    return found


def test_the_test_fix_cycles_of_18_are_left_alone(
    yielded: dict[str, tuple[set[str], set[str]]],
) -> None:
    assert yielded["18"] == (set(), set())


def test_the_broken_stop_hook_of_21_is_caught(
    yielded: dict[str, tuple[set[str], set[str]]],
) -> None:
    nudges, escalations = yielded["21"]
    assert "stop-block" in nudges and "stop-block" in escalations


def test_every_shared_transcript_yields_what_was_reviewed(
    yielded: dict[str, tuple[set[str], set[str]]],
) -> None:
    assert yielded == EXPECTED
