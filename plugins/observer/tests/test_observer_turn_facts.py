"""Turn facts: prompt signals without text, tool counting without content, and the built episode."""

from __future__ import annotations

import json
import random
import re
import sys

import pytest
from observer._options import Options
from observer._records import Episode, length_bucket, size_bucket
from observer._routing import RoutingTag
from observer._turn_facts import (
    _ODD_FOLDS,
    DEFAULT_TASK_REF_PATTERN,
    EpisodeContext,
    PromptFacts,
    PromptRules,
    SessionFacts,
    ToolRules,
    TurnFacts,
    TurnTally,
    _any_cue_pattern,
    _cue_pattern,
    build_episode,
    count_tool_call,
    episode_record,
    find_task_ref,
    other_live_sessions,
    prepare_prompt_rules,
    read_prompt,
)

PROMPT_RULES = PromptRules(
    methods=("discovery-interview",),
    method_patterns=(),
    correction_cues=("wrong", "try again", "undo"),
    task_ref_pattern=r"\b[A-Z][A-Z0-9]+-\d+\b|#\d+",
)
TOOL_RULES = ToolRules(
    edit_tools=frozenset({"Edit", "Write"}),
    node_fields={"Skill": "skill", "Task": "subagent_type"},
)
CONTEXT = EpisodeContext(
    episode_id="e1",
    ms=1_767_225_600_000,
    session_id="s1",
    turn_id="t1",
    harness="gemini",
    session_turn=3,
    parallel_session=True,
    economy_level="high",
)


def test_read_prompt_keeps_signals_not_text() -> None:
    facts = read_prompt(
        "That is wrong, try again with discovery-interview for ABC-12", PROMPT_RULES
    )
    assert facts.length == 60
    assert facts.correction_cues == ("wrong", "try again")
    assert facts.dictated == "discovery-interview"
    assert facts.task_ref == "ABC-12"
    assert "That is" not in facts.model_dump_json()


def test_read_prompt_without_signals() -> None:
    facts = read_prompt("wrongly named variable", PROMPT_RULES)
    assert facts.correction_cues == ()
    assert facts.dictated is None
    assert facts.task_ref is None


def test_count_tool_call_counts_edits_and_distinct_files() -> None:
    facts = TurnFacts()
    facts = count_tool_call(facts, "Read", {"file_path": "/a.py"}, TOOL_RULES)
    facts = count_tool_call(facts, "Edit", {"file_path": "/a.py", "old_string": "x"}, TOOL_RULES)
    facts = count_tool_call(facts, "Write", {"file_path": "/b.py", "content": "secret"}, TOOL_RULES)
    facts = count_tool_call(facts, "Bash", {"command": "ls"}, TOOL_RULES)
    assert (facts.tool_calls, facts.edits, len(facts.file_digests)) == (4, 2, 2)
    stored = facts.model_dump_json()
    assert "/a.py" not in stored and "secret" not in stored


def test_count_tool_call_picks_up_skill_and_agent_nodes() -> None:
    facts = count_tool_call(TurnFacts(), "Skill", {"skill": "pdf-reader"}, TOOL_RULES)
    facts = count_tool_call(facts, "Task", {"subagent_type": "not a name!"}, TOOL_RULES)
    facts = count_tool_call(facts, "Task", {"subagent_type": "builder"}, TOOL_RULES)
    assert facts.tool_nodes == ("pdf-reader", "builder")


def test_episode_from_tag_prefers_the_tag() -> None:
    facts = TurnFacts(prompt=read_prompt("run discovery-interview", PROMPT_RULES))
    tag = RoutingTag(
        provenance="user_directed_method", node="discovery-interview", counterfactual="plan"
    )
    episode = build_episode(facts, SessionFacts(turns=2, model="m1"), tag, CONTEXT)
    assert episode.node == "discovery-interview"
    assert episode.decision_provenance.source == "routing_tag"
    assert episode.decision_provenance.counterfactual == "plan"
    assert episode.environment.model == "m1"
    assert episode.environment.session_turn == 3
    assert episode.ts == "2026-01-01T00:00:00.000Z"
    assert episode.outcome == "unknown"
    assert Episode.model_validate_json(episode.model_dump_json()) == episode


def test_episode_without_anything_is_autonomous_with_no_node() -> None:
    episode = build_episode(TurnFacts(), SessionFacts(), None, CONTEXT)
    assert episode.node == "none"
    assert episode.decision_provenance.provenance == "autonomous"
    assert episode.task_size.bucket == "none"
    assert episode.prompt_signal.length_bucket == "empty"


def test_episode_with_dictated_method_but_no_tag_is_user_directed() -> None:
    facts = TurnFacts(prompt=read_prompt("/discovery-interview", PROMPT_RULES))
    episode = build_episode(facts, SessionFacts(), None, CONTEXT)
    assert episode.decision_provenance.provenance == "user_directed_method"
    assert episode.decision_provenance.source == "prompt"
    assert episode.node == "discovery-interview"


def test_episode_node_falls_back_to_command_then_tool() -> None:
    command = TurnFacts(prompt=read_prompt("/review-pr 3", PROMPT_RULES), tool_nodes=("builder",))
    assert build_episode(command, SessionFacts(), None, CONTEXT).node == "review-pr"
    tool = TurnFacts(tool_nodes=("builder", "other"))
    assert build_episode(tool, SessionFacts(), None, CONTEXT).node == "builder"


def test_buckets() -> None:
    assert [size_bucket(n, 1) for n in (0, 5, 6, 25, 26)] == [
        "none",
        "small",
        "medium",
        "medium",
        "large",
    ]
    assert size_bucket(3, 3) == "medium"
    assert size_bucket(3, 11) == "large"
    assert [length_bucket(n) for n in (0, 79, 80, 599, 600)] == [
        "empty",
        "short",
        "medium",
        "medium",
        "long",
    ]


def test_other_live_sessions() -> None:
    beats = {"s1": 1000, "s2": 500}
    assert other_live_sessions(beats, "s1", 1000, 600) is True
    assert other_live_sessions(beats, "s1", 1000, 400) is False
    assert other_live_sessions({"s1": 1000}, "s1", 1000, 600) is False


def test_overlapping_cues_are_each_found_in_configured_order() -> None:
    rules = PromptRules(
        methods=(),
        method_patterns=(),
        correction_cues=("wrong again", "undo", "wrong", "again"),
        task_ref_pattern="",
    )
    assert read_prompt("That's WRONG again, undo it", rules).correction_cues == (
        "wrong again",
        "undo",
        "wrong",
        "again",
    )
    assert read_prompt("wrongly done; undone", rules).correction_cues == ()
    assert read_prompt("again", rules).correction_cues == ("again",)


def test_prepared_rules_have_their_patterns_compiled_before_the_first_prompt() -> None:
    rules = PromptRules(
        methods=("review-pr",),
        method_patterns=(r"use the (?P<node>[a-z-]+) method",),
        correction_cues=("not quite", "start over"),
        task_ref_pattern=r"TICKET-\d{2,9}",
    )
    _cue_pattern.cache_clear()
    _any_cue_pattern.cache_clear()
    prepare_prompt_rules(rules)
    assert _cue_pattern.cache_info().currsize == 2
    assert _any_cue_pattern.cache_info().currsize == 1
    facts = read_prompt("not quite: use the review-pr method for TICKET-42", rules)
    assert facts.correction_cues == ("not quite",)
    assert facts.dictated == "review-pr" and facts.task_ref == "TICKET-42"
    assert _any_cue_pattern.cache_info().misses == 1


def test_a_pattern_that_does_not_compile_fails_where_it_is_used_not_at_registration() -> None:
    rules = PromptRules(
        methods=(), method_patterns=("(unclosed",), correction_cues=(), task_ref_pattern="[bad"
    )
    prepare_prompt_rules(rules)
    with pytest.raises(re.error):
        read_prompt("any prompt", rules)


_RECORD_CASES = [
    (TurnFacts(), SessionFacts(), None),
    (
        TurnFacts(
            prompt=read_prompt("That is wrong, undo ABC-12 via discovery-interview", PROMPT_RULES),
            tool_calls=30,
            edits=4,
            file_digests=("a" * 16, "b" * 16, "c" * 16),
            tool_nodes=("builder",),
        ),
        SessionFacts(turns=4, model="m2", post_compaction=True),
        RoutingTag(provenance="autonomous", node="planner", counterfactual=None),
    ),
    (
        TurnFacts(prompt=read_prompt("/review-pr 3 " + "x" * 700, PROMPT_RULES), tool_calls=2),
        SessionFacts(model="m1"),
        None,
    ),
    (TurnFacts(prompt=read_prompt("run discovery-interview", PROMPT_RULES)), SessionFacts(), None),
]


@pytest.mark.parametrize(("facts", "session", "tag"), _RECORD_CASES)
def test_episode_record_is_the_models_json_line(
    facts: TurnFacts, session: SessionFacts, tag: RoutingTag | None
) -> None:
    record = episode_record(facts, session, tag, CONTEXT)
    dumped = build_episode(facts, session, tag, CONTEXT).model_dump(mode="json")
    # Same values in the same order: the written line is byte for byte the model's.
    assert json.dumps(record) == json.dumps(dumped)
    assert Episode.model_validate(record).model_dump(mode="json") == record


def test_only_the_odd_folds_match_an_ascii_character_but_fold_otherwise() -> None:
    any_ascii = re.compile(r"[\x00-\x7f]", re.IGNORECASE)
    odd = set()
    for code in range(0x80, sys.maxunicode + 1):
        char = chr(code)
        if any_ascii.fullmatch(char) is None:
            continue
        for ascii_char in map(chr, range(0x80)):
            matches = re.fullmatch(re.escape(ascii_char), char, re.IGNORECASE) is not None
            if matches and char.casefold() != ascii_char.casefold():
                odd.add(char)
    assert odd == set(_ODD_FOLDS)


_ASCII_CUES = ("wrong", "that is not", "try again", "still failing", "still broken", "undo", "stop")


@pytest.mark.parametrize(
    ("configured", "prompt", "found"),
    [
        (_ASCII_CUES, "STİLL BROKEN after the fix", ("still broken",)),
        (_ASCII_CUES, "stıll failing, and wrong", ("wrong", "still failing")),
        (_ASCII_CUES, "\u017ftop here", ("stop",)),
        (_ASCII_CUES, "That Is Not it; TRY AGAIN", ("that is not", "try again")),
        (_ASCII_CUES, "strongly worded but fine", ()),
        (_ASCII_CUES, "stopwatch and undone", ()),
        (("undo", "неверно"), "НЕВЕРНО, undo", ("undo", "неверно")),
    ],
)
def test_cues_are_found_ignoring_case_as_the_patterns_do(
    configured: tuple[str, ...], prompt: str, found: tuple[str, ...]
) -> None:
    rules = PromptRules(
        methods=(), method_patterns=(), correction_cues=configured, task_ref_pattern=""
    )
    assert read_prompt(prompt, rules).correction_cues == found


def test_cues_found_equal_each_cues_own_pattern() -> None:
    rng = random.Random(5)
    alphabet = ["a", "i", "İ", "ı", "ſ", "K", "ß", " ", "-", "'", "é", "\n"]
    words = [*_ASCII_CUES, "wrongly", "undone", "STOP", "Stop!", "don't", "x"]
    cue_sets = [_ASCII_CUES, (*_ASCII_CUES, "ss"), ("undo", "неверно"), ("k", "i", "ss")]
    for _ in range(3000):
        parts = [rng.choice(words + alphabet) for _ in range(rng.randrange(0, 8))]
        prompt = rng.choice(["", " "]).join(parts)
        cues = rng.choice(cue_sets)
        rules = PromptRules(
            methods=(), method_patterns=(), correction_cues=cues, task_ref_pattern=""
        )
        expected = tuple(
            cue
            for cue in cues
            if re.search(rf"(?<!\w){re.escape(cue)}(?!\w)", prompt, re.IGNORECASE)
        )
        assert read_prompt(prompt, rules).correction_cues == expected, (prompt, cues)


def test_a_tally_snapshot_holds_the_facts_and_ignores_later_calls() -> None:
    tally = TurnTally(TurnFacts(prompt=read_prompt("run discovery-interview", PROMPT_RULES)))
    tally.count("Skill", {"skill": "builder"}, TOOL_RULES)
    tally.count("Edit", {"file_path": "/a.py"}, TOOL_RULES)
    tally.gate_fired_for = "t1"
    snapshot = tally.snapshot()
    facts = tally.facts()
    tally.count("Edit", {"file_path": "/b.py"}, TOOL_RULES)
    assert snapshot.prompt == facts.prompt
    assert (snapshot.tool_calls, snapshot.edits) == (facts.tool_calls, facts.edits) == (2, 1)
    assert snapshot.file_digests == facts.file_digests and len(facts.file_digests) == 1
    assert snapshot.tool_nodes == facts.tool_nodes == ("builder",)
    assert snapshot.gate_fired_for == facts.gate_fired_for == "t1"
    session = SessionFacts(turns=1)
    assert episode_record(snapshot, session, None, CONTEXT) == episode_record(
        facts, session, None, CONTEXT
    )


@pytest.mark.parametrize(
    "text", ["", "fix ABC-12, wrong again", "/review-pr now", "run discovery-interview " * 40]
)
def test_a_started_turn_is_stored_as_the_models_dump(text: str) -> None:
    prompt = read_prompt(text, PROMPT_RULES)
    dumped = TurnFacts(prompt=prompt).model_dump(mode="json")
    tally = TurnTally.started_by(prompt)
    values = tally.stored()
    if values is None:
        # Nothing to keep: stored as absent, which loads as the same facts.
        assert TurnFacts(prompt=prompt) == TurnFacts.model_validate({})
    else:
        assert json.dumps(values) == json.dumps(dumped)
    assert tally.facts() == TurnFacts(prompt=prompt)
    tally.count("Skill", {"skill": "builder", "file_path": "/a.py"}, TOOL_RULES)
    tally.count("Edit", {"file_path": "/b.py"}, TOOL_RULES)
    tally.gate_fired_for = "t1"
    assert json.dumps(tally.stored()) == json.dumps(tally.facts().model_dump(mode="json"))
    assert TurnTally(TurnFacts.model_validate(tally.stored())).facts() == tally.facts()


def test_only_a_turn_with_nothing_in_it_is_stored_as_absent() -> None:
    assert TurnTally(TurnFacts()).stored() is None
    assert TurnTally(TurnFacts(tool_calls=1)).stored() is not None
    assert TurnTally(TurnFacts(gate_fired_for="t1")).stored() is not None
    assert TurnTally(TurnFacts(prompt=PromptFacts(length=1))).stored() is not None


def test_started_tallies_count_apart_from_each_other() -> None:
    prompt = read_prompt("go", PROMPT_RULES)
    first, second = TurnTally.started_by(prompt), TurnTally.started_by(prompt)
    first.count("Skill", {"skill": "builder", "file_path": "/a.py"}, TOOL_RULES)
    assert second.facts() == TurnFacts(prompt=prompt)
    assert first.facts() == count_tool_call(
        TurnFacts(prompt=prompt), "Skill", {"skill": "builder", "file_path": "/a.py"}, TOOL_RULES
    )


def test_the_default_task_ref_pattern_is_the_one_searched_from_its_anchor() -> None:
    assert Options().task_ref_pattern == DEFAULT_TASK_REF_PATTERN


def test_the_anchored_task_ref_search_finds_what_the_pattern_finds() -> None:
    plain = re.compile(DEFAULT_TASK_REF_PATTERN)
    rng = random.Random(5)
    pieces = ["A", "B", "Z", "Q9", "a", "x", "_", "/", "#", "-", "1", "42", "\u0663", " ", ".", "é"]
    texts = ["", "#1", "AB-1", "ABCDEFGHIJ-1", "ABCDEFGHIJK-1", "/ABC-1", "x#12 ABC-3"]
    texts += ["".join(rng.choices(pieces, k=rng.randrange(1, 40))) for _ in range(20_000)]
    for text in texts:
        expected = plain.search(text)
        found = find_task_ref(DEFAULT_TASK_REF_PATTERN, text)
        assert (found and found.span()) == (expected and expected.span()), text
    custom = r"ticket (\d+)"
    assert find_task_ref(custom, "see ticket 7") is not None
    assert find_task_ref(custom, "see #7") is None
