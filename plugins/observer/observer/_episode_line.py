"""An episode's log line written straight from its values: the bytes `encode_line` gives."""

from __future__ import annotations

from json.encoder import encode_basestring
from typing import Any

from observer._log_file import encode_line
from observer._pii import scrub, scrub_text
from observer._records import SCHEMA_VERSION, iso_timestamp, length_bucket, size_bucket
from observer._routing import RoutingTag
from observer._turn_facts import (
    EpisodeContext,
    SessionFacts,
    TurnCounts,
    choose_node,
    episode_record,
    provenance_fields,
)

# Every key of the line, in the order `episode_record` writes them.
_KEYS = (
    "record",
    "schema_version",
    "id",
    "ts",
    "session_id",
    "turn_id",
    "node",
    "decision_provenance",
    "provenance",
    "counterfactual",
    "source",
    "environment",
    "model",
    "post_compaction",
    "session_turn",
    "parallel_session",
    "economy_level",
    "task_size",
    "tool_calls",
    "edits",
    "files_touched",
    "bucket",
    "task_ref",
    "prompt_signal",
    "length_bucket",
    "correction",
    "correction_cues",
    "outcome",
)

# The keys and fixed strings are written as they are: that is what scrubbing them gives (checked
# here once; were it ever not so, every line would take the general way).
_KEYS_ARE_CLEAN = all(scrub(text) == text for text in (*_KEYS, "episode", "unknown"))


def _text(value: str | None) -> str:
    if value is None:
        return "null"
    return encode_basestring(scrub_text(value))


def _count(value: int) -> str:
    return int.__repr__(value)


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _plain(*values: Any) -> bool:
    return all(type(value) is str or value is None for value in values)


def episode_line(
    facts: TurnCounts, session: SessionFacts, tag: RoutingTag | None, context: EpisodeContext
) -> bytes:
    """`encode_line(episode_record(...))`, byte for byte (tests hold the two equal), built without
    the intermediate dicts and the general walk over them."""
    prompt = facts.prompt
    provenance, counterfactual, source = provenance_fields(facts, tag)
    node = choose_node(facts, tag)
    cues = prompt.correction_cues
    counts = (context.session_turn, facts.tool_calls, facts.edits)
    if not (
        _KEYS_ARE_CLEAN
        and _plain(context.episode_id, context.session_id, context.turn_id, node)
        and _plain(provenance, counterfactual, source, session.model, context.economy_level)
        and _plain(prompt.task_ref, *cues)
        and all(type(count) is int for count in counts)
        and type(session.post_compaction) is bool
        and type(context.parallel_session) is bool
    ):
        return encode_line(episode_record(facts, session, tag, context))
    files = len(facts.file_digests)
    cue_list = ",".join(_text(cue) for cue in cues)
    return (
        f'{{"record":"episode","schema_version":{_count(SCHEMA_VERSION)},'
        f'"id":{_text(context.episode_id)},"ts":{_text(iso_timestamp(context.ms))},'
        f'"session_id":{_text(context.session_id)},"turn_id":{_text(context.turn_id)},'
        f'"node":{_text(node)},'
        f'"decision_provenance":{{"provenance":{_text(provenance)},'
        f'"counterfactual":{_text(counterfactual)},"source":{_text(source)}}},'
        f'"environment":{{"model":{_text(session.model)},'
        f'"post_compaction":{_flag(session.post_compaction)},'
        f'"session_turn":{_count(context.session_turn)},'
        f'"parallel_session":{_flag(context.parallel_session)},'
        f'"economy_level":{_text(context.economy_level)}}},'
        f'"task_size":{{"tool_calls":{_count(facts.tool_calls)},"edits":{_count(facts.edits)},'
        f'"files_touched":{_count(files)},'
        f'"bucket":{_text(size_bucket(facts.tool_calls, files))}}},'
        f'"task_ref":{_text(prompt.task_ref)},'
        f'"prompt_signal":{{"length_bucket":{_text(length_bucket(prompt.length))},'
        f'"correction":{_flag(bool(cues))},"correction_cues":[{cue_list}]}},'
        f'"outcome":"unknown"}}\n'
    ).encode()
