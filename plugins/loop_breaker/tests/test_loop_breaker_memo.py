"""Answers kept per process for inputs seen again: the same answers as computed afresh."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from loop_breaker.core import memo
from loop_breaker.core.normalize import (
    OUTPUT_TAIL_CHARS,
    action_key,
    failure_of,
    label_of,
    may_change_files,
    output_text,
)
from loop_breaker.judge import content_blocks

REPO_ROOT = Path(__file__).resolve().parents[3]
CORPUS = REPO_ROOT.parent / "shared" / "corpus"


def _corpus_inputs() -> Iterator[tuple[str, dict[str, Any]]]:
    files = sorted(CORPUS.glob("*/*.jsonl"))
    if not files:
        pytest.fail(f"the shared corpus is missing: expected it at {CORPUS}")
    for path in files:
        for _, block in content_blocks(path):
            if block.get("type") == "tool_use" and isinstance(block.get("input"), dict):
                yield str(block.get("name")), block["input"]


def _corpus_error_texts() -> list[str]:
    texts = [
        output_text(block.get("content"))
        for path in sorted(CORPUS.glob("*/*.jsonl"))
        for _, block in content_blocks(path)
        if block.get("type") == "tool_result" and block.get("is_error") is True
    ]
    if not texts:
        pytest.fail(f"the shared corpus is missing: expected it at {CORPUS}")
    return texts


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    memo.forget_all()
    yield
    memo.forget_all()


def test_every_corpus_call_is_keyed_and_labelled_as_afresh_the_first_time_and_after() -> None:
    calls = list(_corpus_inputs())
    assert len(calls) > 1000
    for _ in range(2):  # the second pass answers from what was kept
        for tool, tool_input in calls:
            expected = (action_key(tool, tool_input), label_of(tool, tool_input))
            assert memo.key_and_label(tool, tool_input) == expected, (tool, tool_input)
            assert memo.key_of(tool, tool_input) == expected[0]
            command = tool_input.get("command")
            if isinstance(command, str):
                assert memo.changes_files(command) is may_change_files(command)
    assert len(memo._CALLS) > 100 and memo._COMMANDS.cache_info().currsize > 100


def test_values_equal_but_written_otherwise_are_told_apart() -> None:
    # `1 == True == 1.0` and `0.0 == -0.0`, but an action key writes each its own way.
    inputs: list[dict[str, Any]] = [
        {"n": 1},
        {"n": True},
        {"n": 1.0},
        {"n": 0.0},
        {"n": -0.0},
        {"n": "1"},
        {"n": None},
        {"n": [1]},
        {"n": [True]},
        {"n": {"a": 1}},
        {"n": {"a": True}},
    ]
    for _ in range(2):
        for tool_input in inputs:
            expected = (action_key("Bash", tool_input), label_of("Bash", tool_input))
            assert memo.key_and_label("Bash", tool_input) == expected
    # Told apart by the memo as they are by the key (a first answer kept would be given again).
    assert action_key("Bash", {"n": 1}) != action_key("Bash", {"n": True})
    assert action_key("Bash", {"n": 0.0}) != action_key("Bash", {"n": -0.0})


def test_what_is_kept_stays_within_its_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memo._CALLS, "max_entries", 50)
    monkeypatch.setattr(memo._CALLS, "max_chars", 20_000)
    rng = random.Random(3)
    for index in range(2_000):
        size = rng.choice([10, 1_000, memo.MAX_INPUT_CHARS + 1])
        tool_input = {"command": f"echo {index} " + "x" * size, "timeout": index}
        assert memo.key_and_label("Bash", tool_input) == (
            action_key("Bash", tool_input),
            label_of("Bash", tool_input),
        )
        assert len(memo._CALLS) <= 50 and memo._CALLS.chars <= 20_000
    # Over its limit an input is never kept.
    huge = {"content": "y" * (memo.MAX_INPUT_CHARS + 1), "file_path": "/a"}
    memo.key_and_label("Write", huge)
    assert memo._input_key("Write", huge) is None


def test_every_corpus_failure_is_read_as_afresh_the_first_time_and_after() -> None:
    texts = _corpus_error_texts()
    assert len(texts) > 50
    # The same tail behind other heads: one kept answer, which is the answer of each.
    long = "x" * OUTPUT_TAIL_CHARS + "\nerror: boom at 12:30:01"
    texts += [long, "y" * 100 + long, ""]
    for _ in range(2):  # the second pass answers from what was kept
        for text in texts:
            assert memo.failure(text) == failure_of(text), text[-200:]
    assert memo._FAILURES.cache_info().currsize > 20


def test_kept_failures_and_commands_stay_within_their_bounds() -> None:
    for index in range(memo.MAX_FAILURES + 100):
        text = f"error: step {index} failed\n" * (index % 7 + 1)
        assert memo.failure(text) == failure_of(text)
        assert memo._FAILURES.cache_info().currsize <= memo.MAX_FAILURES
    for index in range(memo.MAX_COMMANDS + 100):
        command = f"echo {index} > out.txt"
        assert memo.changes_files(command) is may_change_files(command)
        assert memo._COMMANDS.cache_info().currsize <= memo.MAX_COMMANDS
    # A command over its limit is never kept.
    before = memo._COMMANDS.cache_info().currsize
    memo.changes_files("x" * (memo.MAX_COMMAND_CHARS + 1))
    assert memo._COMMANDS.cache_info().currsize == before
