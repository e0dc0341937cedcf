"""Results read in part: the core decides exactly as it would on the full output text."""

from __future__ import annotations

import random
from typing import Any

import pytest
from loop_breaker.core import LoopBreakerCore, Observation
from loop_breaker.core.codec import dump
from loop_breaker.core.normalize import SIBLING_CANCELLED, classify_outcome, output_text
from loop_breaker.core.result_text import result_text

_TOOLS = ["Edit", "Write", "MultiEdit", "TodoWrite", "Bash", "Read"]
_WORDS = ["a", "é", "\n", '"', "x" * 50, SIBLING_CANCELLED, "[Request interrupted by user]"]


def _tree(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.4:
        return rng.choice([rng.choice(_WORDS) * rng.randint(1, 3), rng.randint(-9, 99),
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
        return result_text(tool, output, is_error=is_error)

    assert _observe(calls, in_part) == _observe(calls, in_full)


def test_a_successful_edit_result_is_not_encoded_unless_it_holds_the_marker() -> None:
    patch = [{"lines": ["-old", "+new"] * 500, "oldStart": 1}]
    output = {"filePath": "/w/a.py", "originalFile": "x" * 50_000, "structuredPatch": patch}
    assert result_text("Edit", output, is_error=False) == ""
    assert result_text("Edit", output, is_error=True) == output_text(output)
    assert result_text("Bash", output, is_error=False) == output_text(output)
    marked = {**output, "structuredPatch": [{"lines": ["-a", f"+{SIBLING_CANCELLED}"]}]}
    assert result_text("Write", marked, is_error=False) == output_text(marked)


def test_a_tool_that_is_never_counted_is_not_read() -> None:
    assert result_text("TodoWrite", {"newTodos": ["x"] * 100}, is_error=False) == ""


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
    assert result_text("Edit", output, is_error=False) == output_text(output)


def test_an_int_too_long_to_write_fails_as_output_text_does() -> None:
    output = {"big": 10**5000}
    with pytest.raises(ValueError):
        output_text(output)
    with pytest.raises(ValueError):
        result_text("Edit", output, is_error=False)
