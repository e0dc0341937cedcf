"""A successful call's fingerprint computed on first read: the same values as computed at once."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from loop_breaker.core import MAIN_LOOP, LoopBreakerCore, Observation
from loop_breaker.core import session as session_module
from loop_breaker.core.codec import dump, load
from loop_breaker.core.fingerprint import Fingerprint, output_fp
from loop_breaker.core.normalize import (
    EDIT_TOOLS,
    NEVER_COUNTED_TOOLS,
    SIBLING_CANCELLED,
    classify_outcome,
    digest,
    is_counted,
    tail,
)
from loop_breaker.core.result_text import result_text, text_and_source
from loop_breaker.core.types import CoreConfig
from loop_breaker.core.window import HELD_OUTPUT_CHARS, WINDOW_CAP
from loop_breaker.judge import content_blocks

REPO_ROOT = Path(__file__).resolve().parents[3]
TRANSCRIPTS = REPO_ROOT.parent / "shared" / "corpus" / "transcripts"

Call = tuple[str, str, dict[str, Any], Any, bool]
"""A tool call as a transcript records it: loop id, tool, input, output, is_error."""


def _corpus_calls() -> list[tuple[str, list[Call]]]:
    """Every tool call of every shared transcript, its output as the structured result when the
    transcript has one, else as the result block's content (and a second time as that)."""
    if not TRANSCRIPTS.is_dir():
        pytest.fail(f"the shared corpus is missing: expected it at {TRANSCRIPTS}")
    made = []
    for path in sorted(TRANSCRIPTS.glob("*.jsonl")):
        uses: dict[str, tuple[str, dict[str, Any]]] = {}
        calls: list[Call] = []
        for record, block in content_blocks(path):
            loop_id = str(record.get("agentId") or MAIN_LOOP)
            if block.get("type") == "tool_use" and isinstance(block.get("input"), dict):
                uses[str(block.get("id"))] = (str(block.get("name")), block["input"])
            elif block.get("type") == "tool_result":
                tool, tool_input = uses.get(str(block.get("tool_use_id")), ("Unknown", {}))
                is_error = block.get("is_error") is True
                structured = record.get("toolUseResult")
                if structured is not None:
                    calls.append((loop_id, tool, tool_input, structured, is_error))
                calls.append((loop_id, tool, tool_input, block.get("content"), is_error))
        made.append((path.name, calls))
    return made


_CORPUS = _corpus_calls() if TRANSCRIPTS.is_dir() else []


def test_the_corpus_has_calls_whose_text_waits() -> None:
    if not TRANSCRIPTS.is_dir():
        pytest.fail(f"the shared corpus is missing: expected it at {TRANSCRIPTS}")
    waiting = [
        call
        for _, calls in _CORPUS
        for call in calls
        if text_and_source(call[1], call[3], is_error=call[4])[1] is not None
    ]
    assert len(waiting) > 50


def _assert_same_as_whole(tool: str, output: Any, is_error: bool) -> None:
    whole = result_text(tool, output)
    text, source, chars = text_and_source(tool, output, is_error=is_error)
    assert is_counted(tool, text, is_error=is_error) == is_counted(tool, whole, is_error=is_error)
    assert classify_outcome(is_error, False, text) == classify_outcome(is_error, False, whole)
    if is_error or tool in NEVER_COUNTED_TOOLS:
        assert (text, source, chars) == (whole, None, 0)
    elif tool in EDIT_TOOLS:
        # A successful edit's outcome is the file state it leaves: nothing of its text is read.
        assert (text, source, chars) == ("", None, 0)
    elif source is None:
        assert text == whole
        assert chars == 0
    else:
        assert source is output and chars >= 0 and text == ""
        assert output_fp(tool, source) == digest(tail(whole))


def test_sibling_cancels_and_interrupts_in_the_corpus_are_error_results() -> None:
    # Why a successful call's text is never searched for them (`is_counted`).
    marked = [
        (tool, is_error)
        for _, calls in _CORPUS
        for _, tool, _, output, is_error in calls
        if isinstance(output, (str, list))
        and (SIBLING_CANCELLED in str(output) or str(output).startswith("[Request interrupted"))
    ]
    assert len(marked) > 10
    assert all(is_error for _, is_error in marked)


def test_every_corpus_call_reads_as_its_whole_text() -> None:
    checked = 0
    for _, calls in _CORPUS:
        for _, tool, _, output, is_error in calls:
            _assert_same_as_whole(tool, output, is_error)
            checked += 1
    assert checked > 1000


def _observations(calls: list[Call], lazy: bool) -> Iterator[Observation]:
    for index, (loop_id, tool, tool_input, output, is_error) in enumerate(calls):
        if tool in NEVER_COUNTED_TOOLS:
            continue
        if lazy:
            text, source, chars = text_and_source(tool, output, is_error=is_error)
        else:
            text, source, chars = result_text(tool, output), None, 0
        outcome = classify_outcome(is_error, False, text)
        yield Observation(
            f"c{index}", loop_id, tool, tool_input, outcome, text, index * 1000, source, chars
        )


def _replayed(calls: list[Call], lazy: bool) -> tuple[list[Any], dict[str, Any]]:
    core = LoopBreakerCore(CoreConfig())
    decisions = [core.observe(observation) for observation in _observations(calls, lazy)]
    return decisions, dump(core)


@pytest.mark.parametrize("name", [name for name, _ in _CORPUS])
def test_each_transcript_decides_and_dumps_as_with_fingerprints_at_once(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = dict(_CORPUS)[name]
    lazy = _replayed(calls, lazy=True)
    # No room to hold outputs: every fingerprint is computed when its call is recorded.
    monkeypatch.setattr(session_module, "HELD_OUTPUT_CHARS", -1)
    assert _replayed(calls, lazy=False) == lazy


def _ok(core: LoopBreakerCore, index: int, command: str, output: Any) -> None:
    text, source, chars = text_and_source("Bash", output, is_error=False)
    tool_input = {"command": command}
    core.observe(Observation(f"c{index}", MAIN_LOOP, "Bash", tool_input, "ok", text, index, source,
                             chars))  # fmt: skip


def test_a_fingerprint_is_computed_only_when_something_reads_it() -> None:
    core = LoopBreakerCore()
    long_output = {"stdout": "o" * 3000, "stderr": "", "interrupted": False}
    for index in range(12):
        _ok(core, index, f"ls dir{index}", long_output)
    records = core.windows.loops[MAIN_LOOP].records
    # Different calls: no detector compares their outputs.
    assert all(record.fingerprint.pending for record in records)
    # The same call twice more: enough of them to compare their outputs for a streak.
    _ok(core, 12, "ls dir11", long_output)
    assert all(record.fingerprint.pending for record in records)
    _ok(core, 13, "ls dir11", long_output)
    assert not any(record.fingerprint.pending for record in records[-3:])
    assert all(record.fingerprint.pending for record in records[:-3])
    expected = digest(tail(result_text("Bash", long_output)))
    assert records[0].outcome_fp == expected
    assert records[0].cycle_key == f"{records[0].action_key}:{expected}"
    state = dump(core)
    assert not any(record.fingerprint.pending for record in records)
    assert dump(load(state, core.config)) == state


def test_a_fingerprint_read_late_sees_the_output_it_was_given() -> None:
    first = Fingerprint.of_output("Bash", "k", {"stdout": "a" * 200}, 10)
    second = Fingerprint.of_output("Bash", "k", {"stdout": "b" * 200}, 10)
    assert first.pending and first != second
    assert first == Fingerprint(first.outcome_fp, f"k:{first.outcome_fp}")
    assert not first.pending


def test_a_window_holds_outputs_up_to_its_limit_then_computes_at_once() -> None:
    core = LoopBreakerCore()
    big = {"stdout": "x" * (HELD_OUTPUT_CHARS // 4 - 100), "stderr": ""}
    for index in range(6):
        _ok(core, index, f"cat part{index}", big)
    window = core.windows.loops[MAIN_LOOP]
    pending = [record.fingerprint.pending for record in window.records]
    assert pending == [True, True, True, True, False, False]
    assert window.held_chars <= HELD_OUTPUT_CHARS
    for index in range(6, 6 + WINDOW_CAP):
        _ok(core, index, f"echo {index}", "short")
    # The big outputs left the window, and what it counted for them with them.
    assert window.held_chars == len("short") * len(window.records)


def _tree(rng: random.Random, depth: int = 0) -> Any:
    words = ["a", "é", "\n", '"', "x" * 50, SIBLING_CANCELLED, "[Request interrupted", "w" * 7000]
    roll = rng.random()
    if depth > 3 or roll < 0.35:
        return rng.choice([rng.choice(words) * rng.randint(1, 3), rng.randint(-9, 99),
                           rng.random(), True, None, float("nan")])  # fmt: skip
    if roll < 0.8:
        keys: list[Any] = [rng.choice(words)[:30] + str(i) for i in range(rng.randint(0, 5))]
        if rng.random() < 0.1:
            keys.append(rng.choice([7, 2.5, None, ("tuple",)]))
        return {key: _tree(rng, depth + 1) for key in keys}
    items = [_tree(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return items if rng.random() < 0.8 else tuple(items)


@pytest.mark.parametrize("seed", range(300))
def test_a_random_result_reads_as_its_whole_text(seed: int) -> None:
    rng = random.Random(seed)
    output = _tree(rng)
    if rng.random() < 0.7:
        output = {rng.choice(["content", "a", "z"]): output, "pad": "p" * rng.randint(0, 200)}
    for tool in ("Bash", "Task", "Read", "Edit", "TodoWrite"):
        for is_error in (False, True):
            _assert_same_as_whole(tool, output, is_error)


@pytest.mark.parametrize(
    "output",
    [{("tuple",): "x" * 500}, {"when": object(), "pad": "p" * 500}, {"big": 10**5000}],
    ids=["tuple-key", "object", "int-too-long"],
)
def test_anything_unusual_is_built_whole_at_once(output: Any) -> None:
    try:
        whole = result_text("Task", output)
    except ValueError:
        with pytest.raises(ValueError):
            text_and_source("Task", output, is_error=False)
        return
    assert text_and_source("Task", output, is_error=False) == (whole, None, 0)
