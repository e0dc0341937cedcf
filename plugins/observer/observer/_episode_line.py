"""An episode's log line written straight from its values: the bytes `encode_line` gives."""

from __future__ import annotations

from functools import lru_cache
from json.encoder import encode_basestring

from observer._log_file import encode_line
from observer._pii import SHORT_TEXT, rule_free, scrub
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


@lru_cache(maxsize=4096)
def _short_json(value: str) -> str:
    # Ids, names and buckets recur from line to line: each is scrubbed and quoted once.
    return encode_basestring(scrub(value))


def _text(value: str | None) -> str:
    if value is None:
        return "null"
    if len(value) <= SHORT_TEXT:
        return _short_json(value)
    return encode_basestring(scrub(value))


def _own_text(value: str) -> str:
    # An id or timestamp of the observer's own shape is left alone by `scrub` and has nothing
    # to escape: it is quoted as it is, without a cache entry that no later line would use.
    if rule_free(value):
        return f'"{value}"'
    return _text(value)


_STR_OR_NONE = frozenset({str, type(None)})


def _count(value: int) -> str:
    return int.__repr__(value)


def _flag(value: bool) -> str:
    return "true" if value else "false"


def episode_line(
    facts: TurnCounts, session: SessionFacts, tag: RoutingTag | None, context: EpisodeContext
) -> bytes:
    """`encode_line(episode_record(...))`, byte for byte (tests hold the two equal), built without
    the intermediate dicts and the general walk over them."""
    prompt = facts.prompt
    provenance, counterfactual, source = provenance_fields(facts, tag)
    files = len(facts.file_digests)
    cues = prompt.correction_cues
    episode_id = context.episode_id
    ts = iso_timestamp(context.ms)
    texts = (
        context.session_id,
        context.turn_id,
        choose_node(facts, tag),
        provenance,
        counterfactual,
        source,
        session.model,
        context.economy_level,
        size_bucket(facts.tool_calls, files),
        prompt.task_ref,
        length_bucket(prompt.length),
        *cues,
    )
    if not (
        _KEYS_ARE_CLEAN
        and type(episode_id) is str
        and set(map(type, texts)) <= _STR_OR_NONE
        and type(context.session_turn) is int
        and type(facts.tool_calls) is int
        and type(facts.edits) is int
        and type(session.post_compaction) is bool
        and type(context.parallel_session) is bool
    ):
        return encode_line(episode_record(facts, session, tag, context))
    (
        session_id,
        turn_id,
        node,
        provenance_text,
        counterfactual_text,
        source_text,
        model,
        economy_level,
        bucket,
        task_ref,
        prompt_length,
        *cue_texts,
    ) = map(_text, texts)
    return (
        f'{{"record":"episode","schema_version":{_count(SCHEMA_VERSION)},'
        f'"id":{_own_text(episode_id)},"ts":{_own_text(ts)},'
        f'"session_id":{session_id},"turn_id":{turn_id},'
        f'"node":{node},'
        f'"decision_provenance":{{"provenance":{provenance_text},'
        f'"counterfactual":{counterfactual_text},"source":{source_text}}},'
        f'"environment":{{"model":{model},'
        f'"post_compaction":{_flag(session.post_compaction)},'
        f'"session_turn":{_count(context.session_turn)},'
        f'"parallel_session":{_flag(context.parallel_session)},'
        f'"economy_level":{economy_level}}},'
        f'"task_size":{{"tool_calls":{_count(facts.tool_calls)},"edits":{_count(facts.edits)},'
        f'"files_touched":{_count(files)},"bucket":{bucket}}},'
        f'"task_ref":{task_ref},'
        f'"prompt_signal":{{"length_bucket":{prompt_length},'
        f'"correction":{_flag(bool(cues))},"correction_cues":[{",".join(cue_texts)}]}},'
        f'"outcome":"unknown"}}\n'
    ).encode()
