"""Results read in part: the core decides exactly as it would on the full output text."""

from __future__ import annotations

import random
from typing import Any

import pytest
from loop_breaker.core import LoopBreakerCore, Observation
from loop_breaker.core.codec import dump
from loop_breaker.core.normalize import (
    DENIAL_HEAD_CHARS,
    OUTPUT_TAIL_CHARS,
    SIBLING_CANCELLED,
    classify_outcome,
    is_counted,
    output_text,
)
from loop_breaker.core.result_text import LONG_STRING, result_text, text_and_source

_TOOLS = ["Edit", "Write", "MultiEdit", "TodoWrite", "Bash", "Read"]
_WORDS = ["a", "é", "\n", '"', "x" * 50, SIBLING_CANCELLED, "[Request interrupted by user]"]
# A long string now and then: the tail is then read in part.
_WORDS_LONG = [*_WORDS, "w" * 7000]


def _tree(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.4:
        return rng.choice([rng.choice(_WORDS_LONG) * rng.randint(1, 3), rng.randint(-9, 99),
                           rng.random(), True, None])  # fmt: skip
    if roll < 0.75:
        keys: list[Any] = [rng.choice(_WORDS)[:30] + str(i) for i in range(rng.randint(0, 4))]
        if rng.random() < 0.1:
            keys.append(rng.choice([7, 2.5, None, ("tuple",)]))
        return {key: _tree(rng, depth + 1) for key in keys}
    items = [_tree(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return items if rng.random() < 0.8 else tuple(items)


def _observe(calls: list[tuple[str, Any, bool]], read: Any) -> dict[str, Any]:
    core = LoopBreakerCore()
    for index, (tool, output, is_error) in enumerate(calls):
        text = read(tool, output, is_error)
        outcome = classify_outcome(is_error, False, text)
        core.observe(Observation(f"c{index}", "main", tool, {"file_path": "/w/a"}, outcome, text,
                                 index * 1000))  # fmt: skip
    return dump(core)


@pytest.mark.parametrize("seed", range(200))
def test_the_core_decides_as_on_the_full_text(seed: int) -> None:
    rng = random.Random(seed)
    calls = []
    for _ in range(12):
        output = _tree(rng) if rng.random() < 0.8 else {"content": rng.choice(_WORDS)}
        calls.append((rng.choice(_TOOLS), output, rng.random() < 0.2))

    def in_full(tool: str, output: Any, is_error: bool) -> str:
        return output_text(output)

    def in_part(tool: str, output: Any, is_error: bool) -> str:
        return result_text(tool, output)

    assert _observe(calls, in_part) == _observe(calls, in_full)


_LONG = ["y" * 3000, "é" * 2500, '"\\\n' * 900, "z" * 9000, "é" * 9000, '"\\\n' * 3000]


def _large_tree(rng: random.Random, depth: int = 0) -> Any:
    """Like `_tree`, with long strings, so that the tail is read in part."""
    roll = rng.random()
    if depth > 3 or roll < 0.3:
        return rng.choice([rng.choice(_LONG), rng.choice(_WORDS), rng.randint(-9, 99), None])
    if roll < 0.7:
        keys = [rng.choice(_WORDS)[:20] + str(index) for index in range(rng.randint(0, 5))]
        return {key: _large_tree(rng, depth + 1) for key in keys}
    items = [_large_tree(rng, depth + 1) for _ in range(rng.randint(0, 5))]
    return items if rng.random() < 0.8 else tuple(items)


@pytest.mark.parametrize("seed", range(300))
def test_a_large_result_reads_as_its_full_text_at_both_ends(seed: int) -> None:
    output = {"result": _large_tree(random.Random(seed)), "status": "done"}
    full = output_text(output)
    _assert_read_at_its_ends(result_text("Bash", output), full)
    _assert_read_at_its_ends(result_text("Edit", output), full)
    assert text_and_source("Edit", output, is_error=False) == ("", None, 0)


def _assert_read_at_its_ends(read: str, full: str) -> None:
    """`read` is the full text, or a shorter one with the same start and end as the core reads."""
    assert len(read) <= len(full)
    if read != full:
        assert len(read) >= DENIAL_HEAD_CHARS + OUTPUT_TAIL_CHARS
    assert read[:DENIAL_HEAD_CHARS] == full[:DENIAL_HEAD_CHARS]
    assert read[-OUTPUT_TAIL_CHARS:] == full[-OUTPUT_TAIL_CHARS:]


@pytest.mark.parametrize("seed", range(300))
def test_a_result_with_long_strings_is_read_at_its_two_ends(seed: int) -> None:
    rng = random.Random(seed)
    output = _large_tree(rng)
    if not isinstance(output, (dict, list, tuple)):
        output = [output, _large_tree(rng)]
    full = output_text(output)
    for tool, is_error in (("Read", False), ("Bash", True), ("Task", False)):
        read = result_text(tool, output)
        _assert_read_at_its_ends(read, full)
        assert classify_outcome(is_error, False, read) == classify_outcome(is_error, False, full)


def test_a_long_file_read_is_written_without_its_middle() -> None:
    content = "".join(f'line {index}: é\t"quoted"\n' for index in range(2000))
    file_entry: dict[str, object] = {"content": content, "filePath": "/w/a.py", "numLines": 2000}
    output = {"file": file_entry, "type": "text"}
    full = output_text(output)
    read = result_text("Read", output)
    assert len(content) > LONG_STRING and len(read) < len(full) // 2
    _assert_read_at_its_ends(read, full)
    same_end = {"file": {**file_entry, "content": "changed" + content[7:]}, "type": "text"}
    assert result_text("Read", same_end)[-OUTPUT_TAIL_CHARS:] == read[-OUTPUT_TAIL_CHARS:]


def test_a_successful_edit_result_is_not_read() -> None:
    patch = [{"lines": ["-old", "+new"] * 500, "oldStart": 1}]
    output = {"filePath": "/w/a.py", "originalFile": "x" * 50_000, "structuredPatch": patch}
    full = output_text(output)
    # An edit's outcome is the file state it leaves; its result is read only when it failed.
    assert text_and_source("Edit", output, is_error=False) == ("", None, 0)
    assert text_and_source("Edit", output, is_error=True)[0] == result_text("Edit", output)
    _assert_read_at_its_ends(result_text("Edit", output), full)
    assert len(result_text("Bash", output)) < len(full)


def test_only_an_error_result_is_a_sibling_cancel_or_interrupt_notice() -> None:
    cancelled = f"<tool_use_error>{SIBLING_CANCELLED}</tool_use_error>"
    interrupted = "[Request interrupted by user for tool use]"
    for notice in (cancelled, interrupted):
        assert not is_counted("Write", notice, is_error=True)
        # A successful call that happens to print such words did its work: it counts.
        assert is_counted("Write", notice, is_error=False)
        assert is_counted("Bash", result_text("Bash", {"stdout": notice}), is_error=False)


def test_a_tool_that_is_never_counted_is_not_read() -> None:
    assert result_text("TodoWrite", {"newTodos": ["x"] * 100}) == ""


def _deep(levels: int) -> Any:
    value: Any = []
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(
    "output",
    [{("tuple",): "key"}, {"when": object()}, {"deep": _deep(40)}],
    ids=["tuple-key", "object", "deep"],
)
def test_anything_unusual_is_read_in_full(output: Any) -> None:
    assert result_text("Edit", output) == output_text(output)
    assert result_text("Read", output) == output_text(output)


def test_an_int_too_long_to_write_fails_as_output_text_does() -> None:
    output = {"big": 10**5000}
    with pytest.raises(ValueError):
        output_text(output)
    with pytest.raises(ValueError):
        result_text("Edit", output)
