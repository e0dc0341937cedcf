"""Per-turn and per-session facts gathered from events, and the episode built from them."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from observer._records import (
    NO_NODE,
    SCHEMA_VERSION,
    DecisionProvenance,
    Episode,
    Provenance,
    iso_timestamp,
    length_bucket,
    size_bucket,
)
from observer._routing import (
    RoutingTag,
    dictated_method,
    is_node_name,
    prepare_method_patterns,
    slash_command,
)

_PATH_FIELDS = ("file_path", "notebook_path", "path")


class PromptFacts(BaseModel):
    """What the turn's prompt told us, kept without its text."""

    model_config = ConfigDict(frozen=True)

    length: int = 0
    correction_cues: tuple[str, ...] = ()
    dictated: str | None = None
    command_node: str | None = None
    task_ref: str | None = None


class TurnFacts(BaseModel):
    """Counters of the current main turn; stored as JSON in the session's state."""

    model_config = ConfigDict(frozen=True)

    prompt: PromptFacts = PromptFacts()
    tool_calls: int = 0
    edits: int = 0
    file_digests: tuple[str, ...] = ()
    tool_nodes: tuple[str, ...] = ()
    gate_fired_for: str | None = None


_EMPTY_TURN = TurnFacts().model_dump(mode="json")
"""The stored form of a turn with nothing in it, which is stored as absent."""


class SessionFacts(BaseModel):
    """What holds for the whole session: the turn count and what the harness said at start."""

    model_config = ConfigDict(frozen=True)

    turns: int = 0
    model: str | None = None
    post_compaction: bool = False


class TurnCounts(Protocol):
    """What an episode reads of a turn: its `TurnFacts`, or a `TurnSnapshot` of its tally."""

    @property
    def prompt(self) -> PromptFacts: ...

    @property
    def tool_calls(self) -> int: ...

    @property
    def edits(self) -> int: ...

    @property
    def file_digests(self) -> tuple[str, ...]: ...

    @property
    def tool_nodes(self) -> tuple[str, ...]: ...


@dataclass(frozen=True, slots=True)
class PromptRules:
    """The configuration that reads a prompt."""

    methods: tuple[str, ...]
    method_patterns: tuple[str, ...]
    correction_cues: tuple[str, ...]
    task_ref_pattern: str


@dataclass(frozen=True, slots=True)
class ToolRules:
    """The configuration that reads a tool call's name and identifying fields."""

    edit_tools: frozenset[str]
    node_fields: Mapping[str, str]


@lru_cache(maxsize=256)
def _cue_pattern(cue: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(cue)}(?!\w)", re.IGNORECASE)


def _cue_found(prompt: str, cue: str) -> bool:
    return _cue_pattern(cue).search(prompt) is not None


@lru_cache(maxsize=16)
def _any_cue_pattern(cues: tuple[str, ...]) -> re.Pattern[str]:
    # Wherever one cue matches on its own, this matches too (at that place or before it).
    alternatives = "|".join(re.escape(cue) for cue in cues)
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)


@lru_cache(maxsize=16)
def _ascii_folded(cues: tuple[str, ...]) -> tuple[str, ...] | None:
    return tuple(cue.casefold() for cue in cues) if all(cue.isascii() for cue in cues) else None


# The only characters that match an ASCII letter under `re.IGNORECASE` but fold to something else
# (tests check this against every code point).
_ODD_FOLDS = ("\u0130", "\u0131")


def _cue_candidates(prompt: str, cues: tuple[str, ...]) -> tuple[str, ...] | None:
    """The cues that can match: with ASCII cues, those in the case-folded prompt; None when
    any cue can (non-ASCII cues, or a prompt with the dotted or dotless i).

    Every character that matches an ASCII cue's character ignoring case folds to the same
    character, except the dotted and dotless i, whose prompts are left to the patterns: so a
    cue that matches is in the folded prompt, and one that is not there cannot match.
    """
    folded_cues = _ascii_folded(cues)
    if folded_cues is None or any(odd in prompt for odd in _ODD_FOLDS):
        return None
    folded = prompt.casefold()
    return tuple(
        cue for cue, folded_cue in zip(cues, folded_cues, strict=True) if folded_cue in folded
    )


def _cues_in(prompt: str, cues: tuple[str, ...]) -> tuple[str, ...]:
    """The cues the prompt contains, in configured order; only a cue the prompt can contain is
    searched for with its pattern."""
    if not cues:
        return ()
    candidates = _cue_candidates(prompt, cues)
    if candidates is None:
        if _any_cue_pattern(cues).search(prompt) is None:
            return ()
        candidates = cues
    return tuple(cue for cue in candidates if _cue_found(prompt, cue))


def prepare_prompt_rules(rules: PromptRules) -> None:
    """Compile the rules' patterns now, at registration, so the first prompt read pays nothing
    for them. A pattern that does not compile is left to fail where it is used, as before."""
    cues = tuple(rules.correction_cues)
    if cues:
        _ascii_folded(cues)
        _any_cue_pattern(cues)
        for cue in cues:
            _cue_pattern(cue)
    prepare_method_patterns(rules.method_patterns, rules.methods)
    if rules.task_ref_pattern:
        with suppress(re.error):
            _task_ref_pattern(rules.task_ref_pattern)


@lru_cache(maxsize=16)
def _task_ref_pattern(pattern: str) -> re.Pattern[str]:
    # Found by the pattern string alone, without `re`'s own cache lookup per prompt; a pattern
    # that does not compile raises here on every prompt, as `re.search` did.
    return re.compile(pattern)


DEFAULT_TASK_REF_PATTERN = r"(?<![\w/#])(?:[A-Z][A-Z0-9]{1,9}-\d{1,7}|#\d{1,7})\b"
# Every match of the default pattern holds a `-` or `#` followed by a digit, at most this many
# characters after the match's start: the first such pair bounds where the first match can start.
_TASK_REF_ANCHOR = re.compile(r"[#-]\d").search
_TASK_REF_REACH = 10


def find_task_ref(pattern_text: str, text: str) -> re.Match[str] | None:
    """The first match of `pattern_text` in `text`; with the default pattern, a text without a
    `-` or `#` before a digit is not scanned with it, and one with them from just before the
    first (a lookbehind still sees the characters before where the search starts)."""
    pattern = _task_ref_pattern(pattern_text)
    if pattern_text == DEFAULT_TASK_REF_PATTERN:
        anchor = _TASK_REF_ANCHOR(text)
        if anchor is None:
            return None
        return pattern.search(text, max(0, anchor.start() - _TASK_REF_REACH))
    return pattern.search(text)


def read_prompt(text: str, rules: PromptRules) -> PromptFacts:
    """The content-free facts of a prompt (its text is not kept)."""
    task_ref = None
    if rules.task_ref_pattern:
        match = find_task_ref(rules.task_ref_pattern, text)
        task_ref = match.group(0)[:80] if match else None
    return PromptFacts(
        length=len(text),
        correction_cues=_cues_in(text, tuple(rules.correction_cues)),
        dictated=dictated_method(text, rules.methods, rules.method_patterns),
        command_node=slash_command(text),
        task_ref=task_ref,
    )


@lru_cache(maxsize=1024)
def _digest(path: str) -> str:
    # Only a short digest is kept, so the state store never holds the paths themselves. A turn
    # touches the same files again and again: each path is hashed once while it is recent.
    return hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class TurnSnapshot:
    """A running turn's counts at one moment, read by the turn's end."""

    prompt: PromptFacts
    tool_calls: int
    edits: int
    file_digests: tuple[str, ...]
    tool_nodes: tuple[str, ...]
    gate_fired_for: str | None


class TurnTally:
    """A turn's facts while it runs, counted in place (a session's host keeps one in memory)."""

    __slots__ = ("_digests", "_nodes", "edits", "gate_fired_for", "prompt", "tool_calls")

    def __init__(self, facts: TurnFacts) -> None:
        self.prompt = facts.prompt
        self.tool_calls = facts.tool_calls
        self.edits = facts.edits
        # dicts keep first-seen order with O(1) membership.
        self._digests = dict.fromkeys(facts.file_digests)
        self._nodes = dict.fromkeys(facts.tool_nodes)
        self.gate_fired_for = facts.gate_fired_for

    def count(self, tool: str, tool_input: Mapping[str, Any], rules: ToolRules) -> None:
        """One more tool call of the turn."""
        self.tool_calls += 1
        if tool in rules.edit_tools:
            self.edits += 1
        for field in _PATH_FIELDS:
            value = tool_input.get(field)
            if isinstance(value, str) and value:
                self._digests.setdefault(_digest(value))
                break
        node_field = rules.node_fields.get(tool)
        if node_field is not None:
            candidate = tool_input.get(node_field)
            if isinstance(candidate, str) and is_node_name(candidate):
                self._nodes.setdefault(candidate)

    @classmethod
    def started_by(cls, prompt: PromptFacts) -> TurnTally:
        """A new turn's tally: its prompt's facts and nothing counted yet (what `cls(TurnFacts(
        prompt=prompt))` gives, set directly)."""
        tally = cls.__new__(cls)
        tally.prompt = prompt
        tally.tool_calls = 0
        tally.edits = 0
        tally._digests = {}
        tally._nodes = {}
        tally.gate_fired_for = None
        return tally

    def snapshot(self) -> TurnSnapshot:
        """The counts as they are now, unchanged by later calls (`facts()` without validation)."""
        return TurnSnapshot(
            self.prompt,
            self.tool_calls,
            self.edits,
            tuple(self._digests),
            tuple(self._nodes),
            self.gate_fired_for,
        )

    def stored(self) -> dict[str, Any] | None:
        """The stored form of the turn: the plain values of `facts().model_dump(mode="json")`
        (tests hold the two equal), built without the model; None for a turn with nothing in it
        (what an absent stored turn gives), which is then not stored at all."""
        prompt = self.prompt
        values = {
            "prompt": {
                "length": prompt.length,
                "correction_cues": list(prompt.correction_cues),
                "dictated": prompt.dictated,
                "command_node": prompt.command_node,
                "task_ref": prompt.task_ref,
            },
            "tool_calls": self.tool_calls,
            "edits": self.edits,
            "file_digests": list(self._digests),
            "tool_nodes": list(self._nodes),
            "gate_fired_for": self.gate_fired_for,
        }
        # One dict comparison (in C) rather than a model's equality.
        return None if values == _EMPTY_TURN else values

    def facts(self) -> TurnFacts:
        return TurnFacts(
            prompt=self.prompt,
            tool_calls=self.tool_calls,
            edits=self.edits,
            file_digests=tuple(self._digests),
            tool_nodes=tuple(self._nodes),
            gate_fired_for=self.gate_fired_for,
        )


def count_tool_call(
    facts: TurnFacts, tool: str, tool_input: Mapping[str, Any], rules: ToolRules
) -> TurnFacts:
    """`facts` with one more tool call counted."""
    tally = TurnTally(facts)
    tally.count(tool, tool_input, rules)
    return tally.facts()


def choose_node(facts: TurnCounts, tag: RoutingTag | None) -> str:
    """The handling node: the tag's, else the dictated method, command, tool, or none."""
    for candidate in (
        tag.node if tag else None,
        facts.prompt.dictated,
        facts.prompt.command_node,
        *facts.tool_nodes[:1],
    ):
        if candidate:
            return candidate
    return NO_NODE


def provenance_fields(
    facts: TurnCounts, tag: RoutingTag | None
) -> tuple[Provenance, str | None, Literal["routing_tag", "prompt", "none"]]:
    if tag is not None:
        return tag.provenance, tag.counterfactual, "routing_tag"
    if facts.prompt.dictated is not None:
        return "user_directed_method", None, "prompt"
    return "autonomous", None, "none"


def choose_provenance(facts: TurnFacts, tag: RoutingTag | None) -> DecisionProvenance:
    """The tag when present; else a dictated method means the person chose; else autonomous."""
    provenance, counterfactual, source = provenance_fields(facts, tag)
    return DecisionProvenance(provenance=provenance, counterfactual=counterfactual, source=source)


@dataclass(frozen=True, slots=True)
class EpisodeContext:
    """Everything about a turn that does not come from its counters."""

    episode_id: str
    ms: int
    session_id: str
    turn_id: str
    harness: str
    session_turn: int
    parallel_session: bool
    economy_level: str | None


def build_episode(
    facts: TurnFacts, session: SessionFacts, tag: RoutingTag | None, context: EpisodeContext
) -> Episode:
    """The schema v3 episode of a finished main turn."""
    return Episode.model_validate(episode_record(facts, session, tag, context))


def episode_record(
    facts: TurnCounts, session: SessionFacts, tag: RoutingTag | None, context: EpisodeContext
) -> dict[str, Any]:
    """The episode's log line as plain JSON values, field for field what
    `build_episode(...).model_dump(mode="json")` gives (tests hold the two equal).

    Every value comes from already validated facts, a parsed tag or the host, so the line is
    written without building and dumping the model on each turn.
    """
    files = len(facts.file_digests)
    provenance, counterfactual, source = provenance_fields(facts, tag)
    prompt = facts.prompt
    return {
        "record": "episode",
        "schema_version": SCHEMA_VERSION,
        "id": context.episode_id,
        "ts": iso_timestamp(context.ms),
        "session_id": context.session_id,
        "turn_id": context.turn_id,
        "node": choose_node(facts, tag),
        "decision_provenance": {
            "provenance": provenance,
            "counterfactual": counterfactual,
            "source": source,
        },
        "environment": {
            "harness": context.harness,
            "model": session.model,
            "post_compaction": session.post_compaction,
            "session_turn": context.session_turn,
            "parallel_session": context.parallel_session,
            "economy_level": context.economy_level,
        },
        "task_size": {
            "tool_calls": facts.tool_calls,
            "edits": facts.edits,
            "files_touched": files,
            "bucket": size_bucket(facts.tool_calls, files),
        },
        "task_ref": prompt.task_ref,
        "prompt_signal": {
            "length_bucket": length_bucket(prompt.length),
            "correction": bool(prompt.correction_cues),
            "correction_cues": list(prompt.correction_cues),
        },
        "outcome": "unknown",
    }


def episode_outside_values(record: Mapping[str, Any]) -> list[Any]:
    """The values of an `episode_record` line that come from outside the observer: the harness's
    ids and names, the tag's counterfactual, the configured environment variable's value, the
    prompt's task reference and the configured cues it contains.

    Every other value of the line is the observer's own: a constant of the schema (a `Literal`),
    a count or a flag it computed, or the UUID and timestamp it drew (which the PII filter
    provably leaves as they are), under keys that are the schema's field names. Tests build
    lines with every value free and hold this list to exactly the ones that can vary.
    """
    environment = record["environment"]
    return [
        record["session_id"],
        record["turn_id"],
        record["node"],
        record["decision_provenance"]["counterfactual"],
        environment["harness"],
        environment["model"],
        environment["economy_level"],
        record["task_ref"],
        *record["prompt_signal"]["correction_cues"],
    ]


def other_live_sessions(
    heartbeats: Mapping[str, int], session_id: str, now_ms: int, window_ms: int
) -> bool:
    """Whether another session was active within `window_ms` of `now_ms`."""
    return any(
        other != session_id and now_ms - seen <= window_ms for other, seen in heartbeats.items()
    )


def as_tuple(values: Iterable[str]) -> tuple[str, ...]:
    """A tuple of the non-empty strings of `values`."""
    return tuple(value for value in values if value)
