"""The rule text, the switch and the merge of the rule block into context blocks."""

from __future__ import annotations

import pytest
from refusal_watch._rule import (
    BLOCK_NAME,
    REQUIRED_PHRASES,
    RULE_TEXT,
    BlockSlot,
    plan_blocks,
)
from refusal_watch._switch import SWITCH_INVALID, read_switch


def apply(blocks: list[tuple[str, str]], *, add_rule: bool) -> list[tuple[str, str]]:
    merged = []
    for slot in plan_blocks(blocks, add_rule=add_rule):
        if slot.source is None:
            assert slot.text is not None
            merged.append((BLOCK_NAME, slot.text))
        else:
            name, text = blocks[slot.source]
            merged.append((name, slot.text if slot.text is not None else text))
    return merged


def test_rule_text_carries_required_phrases() -> None:
    """T18: the rule text holds every required phrase and the block is longer than 300 chars."""
    for phrase in REQUIRED_PHRASES:
        assert phrase in RULE_TEXT
    assert len(RULE_TEXT) > 300
    merged = apply([], add_rule=True)
    assert merged == [(BLOCK_NAME, RULE_TEXT)]


@pytest.mark.parametrize("raw", ["1", "true", " YES ", "On\n"])
def test_switch_on_values(raw: str) -> None:
    assert read_switch(raw).enabled
    assert read_switch(raw).diagnostic is None


@pytest.mark.parametrize("raw", [None, "", "  ", "0", "false", "No", "OFF"])
def test_switch_off_values(raw: str | None) -> None:
    reading = read_switch(raw)
    assert not reading.enabled
    assert reading.diagnostic is None


@pytest.mark.parametrize("raw", ["2", "enable", "truthy", 1])
def test_switch_unknown_value_is_named_and_off(raw: object) -> None:
    reading = read_switch(raw)
    assert not reading.enabled
    assert reading.diagnostic == SWITCH_INVALID


def test_full_rule_in_another_block_adds_nothing() -> None:
    blocks = [("system", "intro " + RULE_TEXT + " outro"), ("other", "x")]
    assert apply(blocks, add_rule=True) == blocks


def test_duplicates_keep_the_canonical_one_at_first_position() -> None:
    blocks = [
        ("a", "1"),
        (BLOCK_NAME, "stale"),
        ("b", "2"),
        (BLOCK_NAME, RULE_TEXT),
        (BLOCK_NAME, "older"),
    ]
    assert apply(blocks, add_rule=True) == [("a", "1"), (BLOCK_NAME, RULE_TEXT), ("b", "2")]


def test_duplicates_without_canon_keep_first_and_replace_stale_text() -> None:
    blocks = [("a", "1"), (BLOCK_NAME, "stale one"), ("b", "2"), (BLOCK_NAME, "stale two")]
    assert apply(blocks, add_rule=True) == [("a", "1"), (BLOCK_NAME, RULE_TEXT), ("b", "2")]


def test_without_insertion_stale_text_stays_but_duplicates_go() -> None:
    blocks = [(BLOCK_NAME, "stale one"), ("b", "2"), (BLOCK_NAME, "stale two")]
    assert apply(blocks, add_rule=False) == [(BLOCK_NAME, "stale one"), ("b", "2")]


def test_other_blocks_keep_order_and_rule_is_appended() -> None:
    blocks = [("c", "3"), ("a", "1"), ("b", "2")]
    slots = plan_blocks(blocks, add_rule=True)
    assert slots[:3] == (BlockSlot(0), BlockSlot(1), BlockSlot(2))
    assert slots[3] == BlockSlot(None, RULE_TEXT)
