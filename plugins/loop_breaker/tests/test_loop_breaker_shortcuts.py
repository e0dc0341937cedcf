"""Shortcuts of the per-call path against the slow paths they replace: each slow path is kept
here as it was, and every answer must be the same on the shared corpus and on random inputs."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from loop_breaker.core import memo, normalize
from loop_breaker.core.detectors import _action_key_of, _fewer_than, _ok_calls_needed
from loop_breaker.core.normalize import (
    EDIT_TOOLS,
    RUN_FIELDS,
    action_key,
    edit_transition,
    label_of,
)
from loop_breaker.core.result_text import _plain_chars
from loop_breaker.core.types import CoreConfig, Thresholds
from loop_breaker.judge import content_blocks

REPO_ROOT = Path(__file__).resolve().parents[3]
CORPUS = REPO_ROOT.parent / "shared" / "corpus"


def _corpus_files() -> list[Path]:
    files = sorted(CORPUS.glob("*/*.jsonl"))
    if not files:
        pytest.fail(f"the shared corpus is missing: expected it at {CORPUS}")
    return files


def _corpus_results() -> Iterator[Any]:
    """Every structured result and result block content of the shared corpus."""
    for path in _corpus_files():
        for record, block in content_blocks(path):
            if block.get("type") == "tool_result":
                yield block.get("content")
                if record.get("toolUseResult") is not None:
                    yield record["toolUseResult"]


# --- `_plain_chars`: one loop over a dict's items, and a top-level dict's RUN_FIELDS passed over.

_SCALARS = frozenset({int, float, bool, type(None)})
_INT_LIMIT = 10**4000
_ONLY_STR = frozenset({str})


def _plain_chars_slow(value: Any, depth: int) -> int:
    """`_plain_chars` as it was, over the whole value."""
    kind = type(value)
    if kind is str:
        return len(value)
    if kind in _SCALARS:
        return -1 if kind is int and not -_INT_LIMIT < value < _INT_LIMIT else 0
    if depth >= 32 or (kind is not dict and kind is not list and kind is not tuple):
        return -1
    total = 0
    items: Any = value
    if kind is dict:
        if not set(map(type, value)) <= _ONLY_STR:
            return -1
        total = sum(map(len, value))
        items = value.values()
    if set(map(type, items)) <= _ONLY_STR:
        total += sum(map(len, items))
    else:
        for item in items:
            item_kind = type(item)
            if item_kind is str:
                total += len(item)
            elif item_kind is int:
                if not -_INT_LIMIT < item < _INT_LIMIT:
                    return -1
            elif item_kind in _SCALARS:
                continue
            else:
                chars = _plain_chars_slow(item, depth + 1)
                if chars < 0:
                    return -1
                total += chars
    return total


def _written(value: Any) -> Any:
    """What `result_text` writes of a result: a dict without its RUN_FIELDS."""
    if type(value) is dict and not RUN_FIELDS.isdisjoint(value):
        return {name: item for name, item in value.items() if name not in RUN_FIELDS}
    return value


class _Text(str):
    pass


class _Map(dict[Any, Any]):
    pass


_ODD_LEAVES: list[Any] = [
    "",
    "é✓",
    "x" * 300,
    0,
    -7,
    10**4000 - 1,
    10**4000,
    -(10**4000),
    1 - 10**4000,
    True,
    False,
    None,
    2.5,
    float("nan"),
    _Text("sub"),
    object(),
    b"bytes",
    {1, 2},
]
_KEYS: list[Any] = ["a", "usage", "durationMs", "é", "", 7, None, ("t",), _Text("usage"), True]


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 5 or roll < 0.35:
        return rng.choice(_ODD_LEAVES) if rng.random() < 0.3 else rng.choice(["s", 3, True, None])
    if roll < 0.7:
        keys = [
            rng.choice(_KEYS) if rng.random() < 0.3 else f"k{i}" for i in range(rng.randint(0, 6))
        ]
        made = {key: _random_value(rng, depth + 1) for key in keys}
        return _Map(made) if rng.random() < 0.05 else made
    items = [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 5))]
    if rng.random() < 0.3:
        items = [rng.choice(["line", "é", ""]) for _ in items]
    return items if rng.random() < 0.8 else tuple(items)


def _nested(levels: int, leaf: Any) -> Any:
    value = leaf
    for index in range(levels):
        value = {"k": value} if index % 2 else [value]
    return value


def _assert_plain_chars_as_slow(value: Any) -> None:
    assert _plain_chars(value, 0) == _plain_chars_slow(_written(value), 0), value


def test_plain_chars_counts_as_the_slow_walk_over_every_corpus_result() -> None:
    checked = plain = 0
    for result in _corpus_results():
        _assert_plain_chars_as_slow(result)
        checked += 1
        plain += type(result) is dict and _plain_chars(result, 0) >= 0
    assert checked > 2000 and plain > 500


@pytest.mark.parametrize("seed", range(300))
def test_plain_chars_counts_as_the_slow_walk_over_random_values(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(20):
        value = _random_value(rng)
        _assert_plain_chars_as_slow(value)
        # Run fields at the top are passed over; deeper down they are values like any other.
        _assert_plain_chars_as_slow({"usage": value, "durationMs": value, "kept": "abc"})
        _assert_plain_chars_as_slow({"outer": {"usage": value}})


@pytest.mark.parametrize("levels", [29, 30, 31, 32, 33, 40])
@pytest.mark.parametrize("leaf", ["text", 5, [], {}, ["a", 1]])
def test_plain_chars_stops_at_the_same_depth_as_the_slow_walk(levels: int, leaf: Any) -> None:
    _assert_plain_chars_as_slow({"deep": _nested(levels, leaf)})


# --- `detect`: a successful call asks no detector while its action has fewer calls in the window
# than any of them needs (`_fewer_than`), the rule that was written out as its own function.


def _first_of_its_action_slow(records: list[Any], last: Any, config: CoreConfig) -> bool:
    return (
        config.limits("idle-repeat").nudge_at > 1
        and config.limits("poll").nudge_at > 1
        and [record.action_key for record in records].count(last.action_key) == 1
    )


@dataclass
class _Keyed:
    action_key: str


@pytest.mark.parametrize("idle", [-1, 0, 1, 2, 3, 5])
@pytest.mark.parametrize("poll", [-1, 0, 1, 2, 4])
def test_the_skip_of_a_new_successful_call_is_the_rule_it_replaced(idle: int, poll: int) -> None:
    thresholds = {**CoreConfig().thresholds}
    thresholds["idle-repeat"] = Thresholds(idle, idle + 2)
    thresholds["poll"] = Thresholds(poll, poll + 2)
    config = CoreConfig(thresholds=thresholds)
    rng = random.Random(idle * 10 + poll)
    for _ in range(200):
        records = [_Keyed(rng.choice("abcd")) for _ in range(rng.randint(1, 12))]
        last = records[-1]
        fast = _fewer_than(_ok_calls_needed(config), last.action_key, _action_key_of, records)  # type: ignore[arg-type]
        assert fast == _first_of_its_action_slow(records, last, config)


# --- `memo.call_facts`: an edit's transition kept with its call's key and label.


def _corpus_calls() -> Iterator[tuple[str, dict[str, Any]]]:
    for path in _corpus_files():
        for _, block in content_blocks(path):
            if block.get("type") == "tool_use" and isinstance(block.get("input"), dict):
                yield str(block.get("name")), block["input"]


def test_call_facts_are_the_facts_computed_afresh_the_first_time_and_after() -> None:
    calls = list(_corpus_calls())
    edits = 0
    memo.forget_all()
    try:
        for _ in range(2):
            for tool, tool_input in calls:
                key, label, transition = memo.call_facts(tool, tool_input)
                assert (key, label) == (action_key(tool, tool_input), label_of(tool, tool_input))
                if tool in EDIT_TOOLS and memo._input_key(tool, tool_input) is not None:
                    assert transition == edit_transition(tool, tool_input), tool_input
                    edits += 1
                else:
                    assert transition is None
    finally:
        memo.forget_all()
    assert edits > 100


# --- `error_class_of`: each command-token pattern searched only where its fixed text is found.


def _error_class_slow(lines: list[str]) -> tuple[str, str]:
    lowered = "\n".join(line[-160:] for line in lines).lower()
    for marker, error_class in normalize._CLASS_MARKERS:
        if marker in lowered:
            for _, pattern in normalize._COMMAND_TOKENS:
                named = pattern.search(lowered)
                if named is not None:
                    return error_class, named.group(1)
            return error_class, ""
    return "", ""


_FRAGMENTS = [
    *(literal for literals, _ in normalize._COMMAND_TOKENS for literal in literals),
    *(marker for marker, _ in normalize._CLASS_MARKERS),
    # A text each pattern matches, cut or changed now and then below.
    "zsh: command not found: rg",
    " rg: command not found",
    "'rg' is not recognized",
    "no module named 'yaml'",
    "cannot find module 'left-pad'",
    "failed to spawn: `uv`",
    'exec: "go": executable file not found',
    "cannot find package 'x/y'",
    " /bin/run.sh: permission denied",
    "could not resolve host: github.com",
    "econnrefused 127.0.0.1:5432",
    "failed to connect to github.com port",
    "zsh: ",
    'exec: "',
    "'",
    '"',
    "`",
    ":",
    " ",
    "\n",
    "\t",
    "\u00a0",
    " port",
    "/usr/local/lib/node_modules/pkg/bin/tool.js",
    "rg",
    "pnpm",
    "É",
    "a" * 70,
]


def _random_error_text(rng: random.Random) -> str:
    text = "".join(rng.choice(_FRAGMENTS) for _ in range(rng.randint(1, 14)))
    if rng.random() < 0.3:
        # A fixed text cut or changed by one character: the pattern near it must not match.
        at = rng.randrange(len(text))
        text = text[:at] + rng.choice(["", "x", " ", ":"]) + text[at + 1 :]
    return text


def _corpus_error_lines() -> list[list[str]]:
    made = []
    for path in _corpus_files():
        for _, block in content_blocks(path):
            if block.get("type") == "tool_result" and block.get("is_error") is True:
                text = normalize.tail(normalize.output_text(block.get("content")))
                made.append(normalize.error_lines(text))
                made.append(text.splitlines()[-24:])
    return made


def test_error_classes_and_tokens_are_as_searched_without_the_fixed_text_test() -> None:
    classed = 0
    for lines in _corpus_error_lines():
        assert normalize.error_class_of(lines) == _error_class_slow(lines), lines
        classed += normalize.error_class_of(lines) != ("", "")
    assert classed >= 5


@pytest.mark.parametrize("seed", range(100))
def test_a_command_token_pattern_matches_only_where_its_fixed_text_is(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(100):
        text = _random_error_text(rng)
        lowered = text.lower()
        for literals, pattern in normalize._COMMAND_TOKENS:
            if pattern.search(lowered) is not None:
                assert any(literal in lowered for literal in literals), (pattern, lowered)
        lines = text.split("\n")
        assert normalize.error_class_of(lines) == _error_class_slow(lines), lines
