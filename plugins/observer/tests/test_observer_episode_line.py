"""The episode line written straight from its values equals the general encoder's line."""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

from observer._episode_line import episode_line
from observer._log_file import encode_line
from observer._records import new_episode_id
from observer._routing import RoutingTag
from observer._turn_facts import (
    EpisodeContext,
    PromptFacts,
    SessionFacts,
    TurnFacts,
    episode_record,
)

# Plain ids, PII, JSON escapes, control characters, non-ASCII, and text past the cached length.
TEXTS: list[str | None] = [
    None,
    "",
    "s1",
    "a3b22378-244c-4a23-b39c-cf4e49b8df3f",
    "mail jane@example.com",
    "call +1 415 555 0132",
    'quote " backslash \\ newline \n tab \t nul \x00 bell \x07 del \x7f',
    "unicode é ü 中文 \u2028 \U0001f600",
    "AKIAIOSFODNN7EXAMPLE and " + "x" * 200,
    "token=abcdef123456 " * 10,
]


def _cases(rng: random.Random, count: int) -> list[tuple[TurnFacts, SessionFacts, Any, Any]]:
    cases = []
    for _ in range(count):
        cues = tuple(rng.sample(["wrong", "undo", "a@b.co", 'x"y'], rng.randrange(0, 3)))
        facts = TurnFacts(
            prompt=PromptFacts(
                length=rng.choice([0, 5, 79, 80, 599, 600, 10_000]),
                correction_cues=cues,
                dictated=rng.choice([None, "planner", "mail@example.com"]),
                command_node=rng.choice([None, "review"]),
                task_ref=rng.choice(TEXTS),
            ),
            tool_calls=rng.choice([0, 1, 5, 6, 25, 26, 10**12]),
            edits=rng.choice([0, 3]),
            file_digests=tuple(f"{i:016x}" for i in range(rng.choice([0, 2, 3, 11]))),
            tool_nodes=rng.choice([(), ("skill-a", "b")]),
        )
        session = SessionFacts(
            turns=rng.randrange(0, 5),
            model=rng.choice(TEXTS),
            post_compaction=rng.choice([False, True]),
        )
        tag = rng.choice(
            [
                None,
                RoutingTag(provenance="autonomous", node="n1", counterfactual=None),
                RoutingTag(provenance="user_directed_method", node="n:2", counterfactual="x@y.io"),
            ]
        )
        context = EpisodeContext(
            episode_id=rng.choice([str(TEXTS[3]), new_episode_id(), "id with jane@example.com"]),
            ms=rng.randrange(0, 2**41),
            session_id=str(rng.choice(TEXTS[1:])),
            turn_id=str(rng.choice(TEXTS[1:])),
            session_turn=rng.randrange(1, 10**6),
            parallel_session=rng.choice([False, True]),
            economy_level=rng.choice(TEXTS),
        )
        cases.append((facts, session, tag, context))
    return cases


def test_the_direct_line_equals_the_encoded_record() -> None:
    for facts, session, tag, context in _cases(random.Random(11), 3000):
        expected = encode_line(episode_record(facts, session, tag, context))
        assert episode_line(facts, session, tag, context) == expected


def test_every_text_field_is_scrubbed_and_the_line_parses() -> None:
    facts = TurnFacts(prompt=PromptFacts(length=3, task_ref="jane@example.com"))
    session = SessionFacts(model="bob@example.com")
    context = EpisodeContext("e1", 0, "+1 415 555 0132", "t 1\n", 1, False, "x@y.io")
    line = episode_line(facts, session, None, context)
    assert line.count(b"\n") == 1 and b"@" not in line
    record = json.loads(line)
    assert record["task_ref"] == "[EMAIL]"
    assert record["session_id"] == "[PHONE]"
    assert record["turn_id"] == "t 1\n"


def test_unexpected_value_types_take_the_general_way() -> None:
    class Text(str):
        pass

    facts = TurnFacts()
    session = SessionFacts()
    for economy, turn_id in itertools.product([3, Text("low"), None], [Text("t@x.io"), "t"]):
        context = EpisodeContext("e1", 0, "s1", turn_id, 1, True, economy)  # type: ignore[arg-type]
        expected = encode_line(episode_record(facts, session, None, context))
        assert episode_line(facts, session, None, context) == expected
