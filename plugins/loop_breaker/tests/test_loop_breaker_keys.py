"""Action keys are persisted (a person's ignore list names them, stored sessions hold them): the
keys of these calls are pinned, computed before any change to how keys are built."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from loop_breaker.core.normalize import action_key
from loop_breaker.judge import content_blocks

REPO_ROOT = Path(__file__).resolve().parents[3]
TRANSCRIPTS = REPO_ROOT.parent / "shared" / "corpus" / "transcripts"

# (file, tool_use id) -> the key of that call: one call of each shape of input in the corpus
# (long multi-line contents and prompts, ints and bools beside strings, nested lists).
PINNED_CORPUS_KEYS = {
    ("10_cctrace_phase0-investigation_raw_messages.jsonl", "toolu_01WZxn8yWUeMk2TKoNSt2f7L"): (
        "8eaf3f34a70eb99f"
    ),
    ("10_cctrace_phase0-investigation_raw_messages.jsonl", "toolu_01SRR8GqwvmFed1PsikAd9mj"): (
        "e86c1f257c29f892"
    ),
    ("10_cctrace_phase0-investigation_raw_messages.jsonl", "toolu_014xnXdoKLTeoJx8PhK7E7eJ"): (
        "490368d75e7bd248"
    ),
    ("10_cctrace_phase0-investigation_raw_messages.jsonl", "toolu_01FoGbwe8v1zmput68CAHaAb"): (
        "c4e4a4cc694a4485"
    ),
    ("10_cctrace_phase0-investigation_raw_messages.jsonl", "toolu_01WPDRPGNGLkAsD4N5sZraBn"): (
        "4f132cb0814d39b7"
    ),
    ("10_cctrace_phase0-investigation_raw_messages.jsonl", "toolu_013BFYo84cN2LZkjTaZ6H3Db"): (
        "79a72d4ea66a5c57"
    ),
    ("10_cctrace_phase0-investigation_raw_messages.jsonl", "toolu_01CnCsFjsSp4PEoaWbmkY3kQ"): (
        "d1df2eed9c8db2ed"
    ),
    ("11_session-share_general-tool-calls.jsonl", "toolu_0115ShdVQZri2HYSiK74KesC"): (
        "cbea92afcbe9fb39"
    ),
    ("11_session-share_general-tool-calls.jsonl", "toolu_01JwGnZjCqHkEkD6tvu7WcKR"): (
        "5216874da1d30035"
    ),
    ("11_session-share_general-tool-calls.jsonl", "toolu_017nbjiQFvvFQaq489XLWqtA"): (
        "87d402f7dac4ea96"
    ),
    ("18_task-patterns_logs-chat_v1.0.89_test-fix-loop.jsonl", "toolu_01BBi1xbTgiA7hQiFwQbXAYD"): (
        "272fad0dfe555b38"
    ),
    ("21_agentic-framework_94692e6b_prompt-hook-denials.jsonl", "toolu_017TrdbPkkt4GJ4Wdg5T7mzP"): (
        "0b5bebd866cfecee"
    ),
}

# Shapes the corpus lacks: a leading wait, whitespace at the ends and doubled, a tab, non-ASCII,
# a separator that is whitespace to `split`, None, ints, floats and bools.
PINNED_KEYS: list[tuple[str, dict[str, Any], str]] = [
    (
        "Bash",
        {"command": "sleep 30 && curl -s localhost:8080/health", "description": "wait"},
        "9d3982055651df65",
    ),
    (
        "Bash",
        {"command": "  npm   test\n -- --watch=false  ", "timeout": 120000},
        "c59ddf928f34d57a",
    ),
    (
        "Write",
        {"file_path": "/repo/a.py", "content": "def f():\n    return 1\n\n\tx = 'é ✓'\n"},
        "91430c10d65e7e6d",
    ),
    (
        "MultiEdit",
        {
            "file_path": "/repo/a.py",
            "edits": [{"old_string": "a", "new_string": "b"}],
            "replace_all": None,
            "n": 3,
            "f": 1.5,
        },
        "03c22dda05d69af3",
    ),
    ("Grep", {"pattern": "x\u2028y", "-n": True}, "96ba26db1b6e1257"),
]


def _corpus_inputs() -> dict[tuple[str, str], tuple[str, dict[str, Any]]]:
    if not TRANSCRIPTS.is_dir():
        pytest.fail(f"the shared corpus is missing: expected it at {TRANSCRIPTS}")
    wanted = {name for name, _ in PINNED_CORPUS_KEYS}
    found: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
    for name in sorted(wanted):
        for _, block in content_blocks(TRANSCRIPTS / name):
            if block.get("type") == "tool_use" and isinstance(block.get("input"), dict):
                found.setdefault((name, str(block.get("id"))), (str(block["name"]), block["input"]))
    return found


def test_the_action_keys_of_corpus_calls_stay_as_they_were() -> None:
    inputs = _corpus_inputs()
    keys = {where: action_key(*inputs[where]) for where in PINNED_CORPUS_KEYS}
    assert keys == PINNED_CORPUS_KEYS


@pytest.mark.parametrize(("tool", "tool_input", "key"), PINNED_KEYS)
def test_the_action_key_of_each_input_shape_stays_as_it_was(
    tool: str, tool_input: dict[str, Any], key: str
) -> None:
    assert action_key(tool, tool_input) == key
