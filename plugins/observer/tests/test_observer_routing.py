"""Routing tags: dictated methods, tag parsing and the once-per-turn gate."""

from __future__ import annotations

import re

import pytest
from observer._routing import (
    RoutingTag,
    dictated_method,
    gate_decision,
    parse_routing_tag,
    slash_command,
)

METHODS = ("discovery-interview", "brainstorm")
TAG = (
    "<!-- routing: provenance=user_directed_method node=discovery-interview "
    "counterfactual=brainstorm -->"
)


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("please run discovery-interview on this", "discovery-interview"),
        ("/discovery-interview now", "discovery-interview"),
        ("Let's BRAINSTORM first", "brainstorm"),
        ("run the discovery-interviewer", None),
        ("pre-brainstorm notes", None),
        ("fix the failing test", None),
    ],
)
def test_dictated_method_by_name(prompt: str, expected: str | None) -> None:
    assert dictated_method(prompt, METHODS, ()) == expected


def test_dictated_method_by_pattern_uses_the_named_group() -> None:
    patterns = (r"use the (?P<node>[a-z-]+) skill",)
    assert dictated_method("please use the tdd-loop skill", (), patterns) == "tdd-loop"
    assert dictated_method("please use the TDD loop skill", (), patterns) is None


def test_dictated_method_by_pattern_without_group_uses_the_match() -> None:
    assert dictated_method("go with /review-pr", (), (r"/review-pr",)) == "review-pr"


def test_parse_routing_tag_reads_all_fields() -> None:
    assert parse_routing_tag(f"done.\n{TAG}\n") == RoutingTag(
        provenance="user_directed_method", node="discovery-interview", counterfactual="brainstorm"
    )


def test_parse_routing_tag_takes_the_last_valid_tag() -> None:
    message = (
        "<!-- routing: provenance=autonomous node=a -->\n"
        "<!-- routing: provenance=user_directed_method node=b counterfactual=c -->"
    )
    tag = parse_routing_tag(message)
    assert tag is not None and tag.node == "b"


@pytest.mark.parametrize(
    "message",
    [
        None,
        "",
        "no tag here",
        "<!-- routing: provenance=maybe node=x -->",
        "<!-- routing: provenance=autonomous -->",
        "<!-- routing: provenance=autonomous node=<script> -->",
        "<!-- routing provenance=autonomous node=x -->",
    ],
)
def test_malformed_or_missing_tags_count_as_none(message: str | None) -> None:
    assert parse_routing_tag(message) is None


def test_slash_command() -> None:
    assert slash_command("  /review-pr 12") == "review-pr"
    assert slash_command("/") is None
    assert slash_command("/usr/bin/env is a path") is None
    assert slash_command("review /this") is None


def test_gate_asks_when_the_tag_is_missing() -> None:
    reason = gate_decision(
        dictated="discovery-interview",
        last_message="done",
        stop_hook_active=False,
        already_fired=False,
    )
    assert reason is not None
    assert "node=discovery-interview" in reason
    assert "<!-- routing:" in reason


def test_gate_passes_when_the_tag_is_present() -> None:
    assert (
        gate_decision(
            dictated="discovery-interview",
            last_message=TAG,
            stop_hook_active=False,
            already_fired=False,
        )
        is None
    )


def test_gate_never_asks_twice_or_while_continuing() -> None:
    common = {"dictated": "discovery-interview", "last_message": "done"}
    assert gate_decision(**common, stop_hook_active=True, already_fired=False) is None
    assert gate_decision(**common, stop_hook_active=False, already_fired=True) is None


def test_gate_is_silent_without_a_dictated_method() -> None:
    assert (
        gate_decision(
            dictated=None, last_message="done", stop_hook_active=False, already_fired=False
        )
        is None
    )


@pytest.mark.parametrize(
    "message",
    [
        "done\n<!-- ROUTING: provenance=autonomous node=planner -->",
        "<!--routing:provenance=user_directed_method node=a counterfactual=b-->",
        "x" * 5000 + "<!-- routing: provenance=autonomous node=n -->" + "y" * 5000,
        "<!- routing: provenance=autonomous node=n -->",
        "<!-- note --> and plain text",
    ],
)
def test_parse_routing_tag_agrees_with_a_scan_of_the_whole_message(message: str) -> None:
    found = [
        match.group("body")
        for match in re.finditer(r"<!--\s*routing:(?P<body>[^<>]*?)-->", message, re.IGNORECASE)
    ]
    tag = parse_routing_tag(message)
    assert (tag is not None) == bool(found)
    if tag is not None:
        assert f"node={tag.node}" in found[-1]
