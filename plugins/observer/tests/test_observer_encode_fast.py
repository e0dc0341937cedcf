"""`encode_line`'s fast path (orjson, no rebuilt record) writes what its full path writes."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest
from observer._log_file import encode_line, encode_line_scrubbed, encode_own_line
from observer._pii import unchanged_plain
from observer._records import Episode, iso_timestamp, new_episode_id
from observer._routing import RoutingTag
from observer._turn_facts import (
    EpisodeContext,
    PromptFacts,
    SessionFacts,
    TurnFacts,
    episode_outside_values,
    episode_record,
)

from observer import _log_file, _pii, _records

SHARED = Path(__file__).resolve().parents[3].parent / "shared" / "corpus"


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _corpus_strings() -> list[str]:
    if not SHARED.is_dir():
        pytest.fail(f"the shared corpus is missing: expected {SHARED} beside the repository")
    found: set[str] = set()
    for path in sorted(SHARED.rglob("*.json*")):
        for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                found.update(_strings(json.loads(raw)))
            except ValueError:
                continue
    # Long texts are cut into pieces too, so the short-string paths see their contents.
    pieces = {text[start : start + 60] for text in found for start in range(0, len(text), 60)}
    return sorted(found | pieces)


CORPUS = _corpus_strings()
EDGE = [chr(code) for code in range(128)] + [
    "a\nb",
    '"quoted" \\ back',
    "\u2028\u2029",
    "caf\u00e9",
    "\ud800",
    "jane@example.com",
    "+1 415 555 0132",
    "(415) 555-0132",
    "AKIAIOSFODNN7EXAMPLE",
    "2026-02-13T03:14:32.122Z",
    "94692e6b-0ceb-4981-bb88-c31d81e9e21e",
]


def _record(text: str) -> dict[str, Any]:
    return {
        "record": "episode",
        "id": text,
        "n": 3,
        "flag": True,
        "none": None,
        "nested": {text: [text, 1, False, None], "list": (text,)},
    }


def _both(record: Any) -> tuple[object, object]:
    def run(encode: Any) -> object:
        try:
            return encode(record)
        except Exception as error:  # the same error either way
            return type(error)

    return run(encode_line), run(encode_line_scrubbed)


@pytest.mark.parametrize("chunk", range(8))
def test_fast_and_full_paths_agree_on_every_corpus_string(chunk: int) -> None:
    texts = CORPUS[chunk::8] + EDGE
    assert texts
    for text in texts:
        fast, full = _both(_record(text))
        assert fast == full, text


def test_fast_and_full_paths_agree_on_values_orjson_or_the_filter_treat_apart() -> None:
    records: list[Any] = [
        {"big": 2**70},
        {"float": 1e16},
        {"nan": float("nan")},
        {1: "int key"},
        {"sub": type("S", (str,), {})("x")},
        {"deep": [[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]},
        {"set": {1}},
        {"jane@example.com": 1},
    ]
    for record in records:
        fast, full = _both(record)
        assert fast == full, record


def test_a_clean_episode_line_takes_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    record = _record("94692e6b-0ceb-4981-bb88-c31d81e9e21e:1")
    expected = encode_line_scrubbed(record)

    def refuse(_: Any) -> bytes:
        raise AssertionError("the full path was taken")

    monkeypatch.setattr(_log_file, "encode_line_scrubbed", refuse)
    assert encode_line(record) == expected


def test_a_string_the_filter_changes_is_never_taken_for_clean() -> None:
    for text in ("mail jane@example.com", "call +1 415 555 0132", "key AKIAIOSFODNN7EXAMPLE"):
        assert not unchanged_plain({"k": text})
        assert not unchanged_plain({text: 1})
        assert not unchanged_plain({"k": [text]})
        # Asked twice: a string found changed is never remembered as clean.
        assert not unchanged_plain({"k": text})
        # The one cache behind the fast path keeps the string's scrubbed form, never the string.
        assert _pii._scrub_short(text) != text
        assert b"[" in encode_line({"k": text})


def test_the_observers_ids_and_timestamps_have_the_shape_the_filter_leaves_alone() -> None:
    for _ in range(5000):
        assert _pii._RULE_FREE(new_episode_id())
    rng = random.Random(20260202)
    moments = [0, -1, 1, 86_399_999, 86_400_000, 253_402_300_799_999, -62_135_596_800_000]
    moments += [rng.randrange(-62_135_596_800_000, 253_402_300_800_000) for _ in range(5000)]
    moments += [1_770_000_000_000 + rng.randrange(0, 3 * 86_400_000) for _ in range(5000)]
    for ms in moments:  # the day kept from the last call and the datetime path both
        text = iso_timestamp(ms)
        assert _pii._RULE_FREE(text), ms
        assert _pii.scrub(text) == text
        assert text == _records._datetime_timestamp(ms)
    # A process's first timestamp, before any day is kept (the first day of 1970 once lost
    # its date there).
    first = subprocess.run(
        [
            sys.executable,
            "-c",
            "from observer._records import iso_timestamp; print(iso_timestamp(0))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert first.stdout.strip() == "1970-01-01T00:00:00.000Z"


def test_the_fast_path_asks_the_one_scrub_cache_and_keeps_no_id_or_timestamp() -> None:
    record = _record("94692e6b-0ceb-4981-bb88-c31d81e9e21e:1")
    assert unchanged_plain(record)
    before = _pii._scrub_short.cache_info()
    for _ in range(50):
        fresh = {"id": new_episode_id(), "ts": iso_timestamp(1_770_000_000_000), **record}
        fresh["id"], fresh["ts"] = new_episode_id(), iso_timestamp(1_770_000_000_000)
        assert unchanged_plain(fresh)
    after = _pii._scrub_short.cache_info()
    assert after.misses == before.misses  # the shaped id and ts were never looked up
    assert after.hits > before.hits
    # A value under those names that is not of the shape is looked at like any other.
    assert not unchanged_plain({"id": "jane@example.com", "ts": "call +1 415 555 0132"})
    assert not unchanged_plain({"ts": "+1 415 555 0132"})


# The observer's own lines: `encode_own_line` looks only at the values from outside.

_PROMPT = PromptFacts(length=90, correction_cues=("wrong",), dictated="m", task_ref="ABC-1")


def _episode(text: str, slot: str) -> dict[str, Any]:
    """An episode line with `text` in one of the slots that take a value from outside."""
    prompt = _PROMPT.model_copy(
        update={
            "task_ref": text if slot == "task_ref" else _PROMPT.task_ref,
            "correction_cues": (text,) if slot == "cues" else _PROMPT.correction_cues,
        }
    )
    facts = TurnFacts(prompt=prompt, tool_calls=7, edits=2, file_digests=("a" * 16,))
    session = SessionFacts(turns=4, model=text if slot == "model" else "claude-opus-4-6")
    tag = RoutingTag(
        provenance="autonomous",
        node=text if slot == "node" else "planner",
        counterfactual=text if slot == "counterfactual" else None,
    )
    context = EpisodeContext(
        episode_id=new_episode_id(),
        ms=1_770_000_000_000,
        session_id=text if slot == "session_id" else "94692e6b-0ceb-4981-bb88-c31d81e9e21e",
        turn_id=text if slot == "turn_id" else "94692e6b-0ceb-4981-bb88-c31d81e9e21e:3",
        harness=text if slot == "harness" else "claude-code",
        session_turn=5,
        parallel_session=True,
        economy_level=text if slot == "economy_level" else None,
    )
    return episode_record(facts, session, tag, context)


_SLOTS = (
    "session_id",
    "turn_id",
    "node",
    "counterfactual",
    "harness",
    "model",
    "economy_level",
    "task_ref",
    "cues",
)


def _own_and_full(record: dict[str, Any]) -> tuple[object, object]:
    def run(encode: Any) -> object:
        try:
            return encode()
        except Exception as error:  # the same error either way
            return type(error)

    own = run(lambda: encode_own_line(record, episode_outside_values(record)))
    return own, run(lambda: encode_line_scrubbed(record))


@pytest.mark.parametrize("slot", _SLOTS)
def test_an_own_line_is_written_as_the_full_path_writes_it(slot: str) -> None:
    # Each corpus string in one slot (a ninth of them per slot), the edge cases in every one.
    texts = CORPUS[_SLOTS.index(slot) :: len(_SLOTS)] + EDGE
    for text in texts:
        own, full = _own_and_full(_episode(text, slot))
        assert own == full, (slot, text)


def _leaves(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item, path)
    else:
        yield path, value


def test_every_value_of_an_episode_but_the_outside_ones_is_the_observers_own() -> None:
    # With a marker in every outside slot, the values that are not a marker are exactly the
    # schema's constants, counts and flags, and the shaped id and timestamp.
    marker = "OUTSIDE"
    record = _episode(marker, "none")
    for slot in _SLOTS:
        record = _merge(record, _episode(marker, slot))
    outside = episode_outside_values(record)
    assert outside.count(marker) == len(_SLOTS) and set(outside) == {marker}
    own = [(path, value) for path, value in _leaves(record) if value != marker]
    for path, value in own:
        for key in path:
            assert _pii.scrub(key) == key
        if path in (("id",), ("ts",)):
            assert _pii._RULE_FREE(value), path
        elif type(value) is str:
            assert value in _literal_choices(path), path
        else:
            assert type(value) in (int, bool) or value is None, path


def _merge(into: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for key, value in into.items():
        theirs = other[key]
        if isinstance(value, dict):
            merged[key] = _merge(value, theirs)
        elif key in ("id", "ts"):
            merged[key] = value
        elif isinstance(value, list):
            merged[key] = value if "OUTSIDE" in value else theirs
        else:
            merged[key] = theirs if theirs == "OUTSIDE" else value
    return merged


def _literal_choices(path: tuple[str, ...]) -> set[str]:
    model: Any = Episode
    annotation: Any = None
    for key in path:
        annotation = model.model_fields[key].annotation
        model = annotation
    return {value for value in get_args(annotation) if type(value) is str}


def test_an_own_line_with_an_outside_value_the_filter_changes_is_scrubbed() -> None:
    for slot in _SLOTS:
        record = _episode("mail jane@example.com now", slot)
        line = encode_own_line(record, episode_outside_values(record))
        assert b"jane@example.com" not in line and b"[EMAIL]" in line, slot
