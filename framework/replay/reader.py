"""Lenient reader of Claude Code JSONL transcripts: files into streams, joined to their sessions."""

from __future__ import annotations

import gc
import json
import re
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypedDict

import msgspec
import orjson

from framework.replay.rebuild import (
    RECORDED_BY_PREFIX,
    SIDE_CHANNEL_AGENT_PREFIXES,
    SUBAGENT_TOOLS,
    UNANSWERED,
    Corpus,
    RecordedResult,
    Session,
    Step,
    Stream,
    Verdict,
    build_orphan_agent,
    build_session,
    classify_result,
    content_blocks,
    is_result_block,
    normalised_text,
    prompt_key,
    stamp_ms,
    text_of,
)

__all__ = [
    "RECORDED_BY_PREFIX",
    "SIDE_CHANNEL_AGENT_PREFIXES",
    "SUBAGENT_TOOLS",
    "UNANSWERED",
    "RecordedResult",
    "Session",
    "Step",
    "TranscriptGroup",
    "TranscriptPathError",
    "Transcripts",
    "Verdict",
    "classify_result",
    "group_transcripts",
    "read_group",
    "read_transcripts",
    "transcript_files",
]


class TranscriptPathError(Exception):
    """An input path that does not exist or cannot be read; the message names it."""


@dataclass(frozen=True, slots=True)
class Transcripts:
    """Everything read from a set of paths."""

    sessions: tuple[Session, ...]
    files: int
    skipped_lines: int
    duplicate_records: int
    side_channel_agents: int


def transcript_files(paths: Iterable[Path]) -> list[Path]:
    """The `.jsonl` files named or found recursively under the paths; refuses a missing path."""
    found: list[Path] = []
    for path in paths:
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            raise TranscriptPathError(f"no such file or directory: {path}") from None
        except OSError as error:  # a name too long, a path through a file, no permission
            raise TranscriptPathError(f"cannot read {path}: {error.strerror}") from None
        if stat.S_ISDIR(mode):
            found.extend(sorted(p for p in path.rglob("*.jsonl") if p.is_file()))
        elif stat.S_ISREG(mode):
            found.append(path)
        else:  # a FIFO or a device would block or never end
            raise TranscriptPathError(f"not a file or folder: {path}")
    return found


def read_transcripts(paths: Iterable[Path]) -> Transcripts:
    """Read every transcript under `paths` and rebuild its sessions, subagents joined in place."""
    return _read_files(transcript_files(paths))


@dataclass(frozen=True, slots=True)
class TranscriptGroup:
    """The files of one conversation (main file, subagent files, resumed parts), read together.

    Found from file names and first records only, so a whole history can be grouped without
    reading it; `first_ms` is the earliest first-record time and `modified_ms` the newest
    modification time of its files (a bound on its last record), 0 when unknown.
    """

    files: tuple[Path, ...]
    size: int
    first_ms: int
    modified_ms: int


def group_transcripts(files: Sequence[Path]) -> list[TranscriptGroup]:
    """The files grouped by conversation, oldest first.

    Files of one project folder share a group when they name the same session: the `sessionId`
    of their first record (subagent files carry their parent's), a file stem that is a session
    id, or the session folder holding a `subagents/` folder. Everything a session's rebuild
    joins (subagent streams, results by tool-use id) is thus in its group, so reading group by
    group rebuilds the same sessions as reading a project folder at once.
    """
    parent = list(range(len(files)))

    def root(index: int) -> int:
        while parent[index] != index:
            parent[index] = parent[parent[index]]
            index = parent[index]
        return index

    owner: dict[str, int] = {}
    heads: list[_Head] = []
    for index, path in enumerate(files):
        head = _head(path)
        heads.append(head)
        for key in head.keys:
            other = owner.setdefault(key, index)
            if other != index:
                parent[root(index)] = root(other)
    members: dict[int, list[int]] = {}
    for index in range(len(files)):
        members.setdefault(root(index), []).append(index)
    groups = [
        TranscriptGroup(
            files=tuple(files[i] for i in indexes),
            size=sum(heads[i].size for i in indexes),
            first_ms=min((heads[i].first_ms for i in indexes if heads[i].first_ms), default=0),
            modified_ms=max(heads[i].modified_ms for i in indexes),
        )
        for indexes in members.values()
    ]
    groups.sort(key=lambda g: (g.first_ms, str(g.files[0])))
    return groups


def read_group(group: TranscriptGroup) -> Transcripts:
    """Read and rebuild the sessions of one group."""
    return _read_files(group.files)


def _read_files(files: Iterable[Path]) -> Transcripts:
    # Reading makes hundreds of thousands of dicts and no cycles: the collector would walk them
    # again and again for nothing (a tenth of the reading time).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _read_all(files)
    finally:
        if collecting:
            gc.enable()


def _read_all(files: Iterable[Path]) -> Transcripts:
    corpus = Corpus()
    for path in files:
        try:
            with path.open("rb") as handle:
                _read_file(corpus, str(path), _records(corpus, handle))
        except OSError as error:
            raise TranscriptPathError(f"cannot read {path}: {error.strerror}") from None
        corpus.files += 1
    _link_inline_sidechains(corpus)
    sessions = [build_session(corpus, stream) for stream in corpus.main]
    sessions.extend(
        build_orphan_agent(corpus, stream)
        for stream in corpus.agents.values()
        if not stream.claimed
    )
    return Transcripts(
        sessions=tuple(s for s in sessions if len(s.steps) > 2),
        files=corpus.files,
        skipped_lines=corpus.skipped,
        duplicate_records=corpus.duplicates,
        side_channel_agents=corpus.side_channels,
    )


# -- phase 0: lines into records ------------------------------------------------------------------


class _Peek(msgspec.Struct):
    """The fields read before a record is decoded in full; msgspec skips the rest unbuilt."""

    type: Any = None
    sessionId: Any = None
    timestamp: Any = None


_PEEK = msgspec.json.Decoder(_Peek)


class _PeekType(msgspec.Struct):
    """A record's top-level type alone: the peek of a line that may be skipped builds nothing
    else."""

    type: Any = None


_PEEK_TYPE = msgspec.json.Decoder(_PeekType)


# The keys of a record the reader and the rebuild read, and nothing else: decoded into these,
# a record is a plain dict without what no event is made of (usage counts, signatures, images'
# data, slugs, branches: a third of a record's objects), which is then neither built nor freed.
# A value of a type other than these, or a line msgspec refuses, is decoded in full as before
# (`orjson`, then `json`): the events are the same either way (a test compares both over the
# shared transcripts). A key read from a record must be named here, or it reads as absent.


class _Block(TypedDict, total=False):
    type: Any
    text: Any
    thinking: Any
    id: Any
    name: Any
    input: Any
    tool_use_id: Any
    content: str | list[_Block] | None
    is_error: Any


class _Message(TypedDict, total=False):
    id: Any
    content: str | list[_Block] | None
    stop_reason: Any
    model: Any


class _Record(TypedDict, total=False):
    type: Any
    sessionId: Any
    uuid: Any
    parentUuid: Any
    logicalParentUuid: Any
    isSidechain: Any
    agentId: Any
    timestamp: Any
    cwd: Any
    version: Any
    entrypoint: Any
    requestId: Any
    message: _Message | None
    toolUseResult: Any
    isMeta: Any
    isCompactSummary: Any
    isApiErrorMessage: Any
    error: Any
    subtype: Any
    compactMetadata: Any
    permissionMode: Any


_RECORD = msgspec.json.Decoder(_Record)
_REPLAYED_KINDS = frozenset({"user", "assistant", "system"})
_TYPE_KEY = b'"type":"'
_TYPE_KEY_LEN = len(_TYPE_KEY)
_SKIPPED_KINDS = (b"progress", b"file-history-snapshot", b"queue-operation", b"summary")
"""Record types the rebuild never reads, often a third of a transcript's bytes. Claude Code
writes a record's own `type` before its content, so the first `"type":"` of a line names it:
when that is one of these, the line is peeked at (its top-level type only, exactly) and, if it
is one, never decoded into objects. A line whose first type is nested is decoded and its type
read then: slower, never wrong."""


_BLOCK_BYTES = 1 << 20
"""Large enough that few lines are cut by a block's end, small enough to add little to the peak
memory (a 4 MiB block added 4 MB)."""
_SPACE = 0x20


def _records(corpus: Corpus, handle: BinaryIO) -> Iterator[dict[str, Any]]:
    """The replayed records of a file, decoded; unreadable lines counted as skipped.

    The file is read in blocks and its lines decoded where they lie (a memoryview slice is no
    copy): a line of a record never decoded (a third of a transcript's bytes) is never copied
    either. A record is decoded into `_Record` (its keys the rebuild reads); a line that does not
    fit it is decoded whole by orjson, which decodes what the standard module does except what it
    refuses (invalid UTF-8, lone surrogates, NaN, numbers out of a double's range): those lines
    go through `json` as before. Integers past 64 bits come as ints, as `json` reads them (orjson
    alone would make them floats). The line loop is written out in one function: a call per
    line cost more than a tenth of the decoding.
    """
    loads = _RECORD.decode
    peek = _PEEK_TYPE.decode
    for data, start, stop in _blocks(handle):
        view = memoryview(data)
        find = data.find
        while start < stop:
            end = find(b"\n", start, stop)
            if end < 0:
                end = stop
            line_start, start = start, end + 1
            if line_start == end or (data[line_start] <= _SPACE and data[line_start:end].isspace()):
                continue
            line = view[line_start:end]
            at = find(_TYPE_KEY, line_start, end)
            if at >= 0 and data.startswith(_SKIPPED_KINDS, at + _TYPE_KEY_LEN, end):
                try:
                    if peek(line).type not in _REPLAYED_KINDS:
                        continue
                except (msgspec.DecodeError, msgspec.ValidationError):
                    pass  # not a JSON object, or not UTF-8: the full decode below decides
            try:
                record: Any = loads(line)
            except (msgspec.DecodeError, msgspec.ValidationError):
                record = _decode_in_full(line)
            if type(record) is dict:
                yield record
            else:
                corpus.skipped += 1


def _blocks(handle: BinaryIO) -> Iterator[tuple[bytes, int, int]]:
    """The file as runs of whole lines: (bytes, where the run starts, where it ends). A line cut
    by a block's end is joined from its pieces once and comes as a run of its own, so no block
    is copied whole for it."""
    pieces: list[bytes] = []
    while block := handle.read(_BLOCK_BYTES):
        first = block.find(b"\n")
        if first < 0:
            pieces.append(block)
            continue
        start = 0
        if pieces:
            pieces.append(block[:first])
            line = b"".join(pieces)
            pieces = []
            yield line, 0, len(line)
            start = first + 1
        cut = block.rfind(b"\n")
        if start < cut:
            yield block, start, cut
        if cut + 1 < len(block):
            pieces.append(block[cut + 1 :])
    if pieces:
        rest = b"".join(pieces)
        yield rest, 0, len(rest)


def _decode_in_full(line: memoryview) -> Any:
    """A line the record decoder refused, decoded whole: by orjson, else by the standard module
    (invalid UTF-8 replaced), else None."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        try:
            return json.loads(bytes(line).decode("utf-8", errors="replace"))
        except ValueError:
            return None


@dataclass(frozen=True, slots=True)
class _Head:
    keys: tuple[str, ...]
    size: int
    first_ms: int
    modified_ms: int


_HEAD_LINES = 64
_SESSION_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _head(path: Path) -> _Head:
    """What grouping needs of a file: the session ids it names and its first time."""
    # Session ids are scoped to the project folder holding the session: copies of a history
    # side by side are separate conversations, not one (Claude Code keeps a session's subagents
    # beside it or in `<session>/subagents/`, both within its project folder).
    nested = path.parent.name == "subagents"
    scope = str(path.parent.parent.parent if nested else path.parent) + "\0"
    keys: list[str] = []
    if _SESSION_ID.match(path.stem):
        keys.append(scope + path.stem)
    if nested:
        keys.append(scope + path.parent.parent.name)
    first_ms = 0
    try:
        info = path.stat()
        with path.open("rb") as handle:
            for _, line in zip(range(_HEAD_LINES), handle, strict=False):
                try:
                    peek = _PEEK.decode(line)
                except (msgspec.DecodeError, msgspec.ValidationError):
                    continue
                if not first_ms and isinstance(peek.timestamp, str):
                    first_ms = stamp_ms(peek.timestamp)
                if isinstance(peek.sessionId, str) and peek.sessionId:
                    keys.append(scope + peek.sessionId)
                    break
    except OSError as error:
        raise TranscriptPathError(f"cannot read {path}: {error.strerror}") from None
    return _Head(tuple(keys), info.st_size, first_ms, int(info.st_mtime * 1000))


# -- phase 1: records into streams ----------------------------------------------------------------


def _read_file(corpus: Corpus, path: str, records: Iterable[dict[str, Any]]) -> None:
    by_session: dict[str, Stream] = {}
    session_of_uuid: dict[str, str] = {}
    alias: dict[str, str] = {}
    inline_root: dict[str, str] = {}
    inline_streams: dict[str, Stream] = {}
    seen: set[tuple[Any, ...]] = set()
    position = 0
    for record in records:
        kind = record.get("type")
        if kind not in ("user", "assistant", "system"):
            continue
        position += 1
        record["_pos"] = position
        if _is_duplicate(record, seen):
            corpus.duplicates += 1
            continue
        agent_id = record.get("agentId")
        if isinstance(agent_id, str) and agent_id:
            if agent_id.startswith(SIDE_CHANNEL_AGENT_PREFIXES):
                if agent_id not in corpus.agents:
                    corpus.side_channels += 1
                    corpus.agents[agent_id] = Stream(agent_id, path, claimed=True)
                continue
            if kind == "user":
                _collect_result(corpus, record)
            agent = corpus.agents.setdefault(agent_id, Stream(agent_id, path, agent_id=agent_id))
            agent.records.append(record)
            continue
        if kind == "user":
            _collect_result(corpus, record)
        uuid = record.get("uuid")
        parent = record.get("parentUuid") or record.get("logicalParentUuid")
        if record.get("isSidechain"):
            root = inline_root.get(parent) if isinstance(parent, str) else None
            if root is None:
                root = uuid if isinstance(uuid, str) else f"{path}#{position}"
                stream = inline_streams[root] = Stream(root, path, agent_id=f"inline-{root[:8]}")
                corpus.inline.setdefault(prompt_key(record), []).append((position, stream))
            if isinstance(uuid, str):
                inline_root[uuid] = root
            inline_streams[root].records.append(record)
            continue
        session_id = str(record.get("sessionId") or "unknown")
        parent_session = session_of_uuid.get(parent) if isinstance(parent, str) else None
        # Most records continue their own session, and most files resume none: then there is
        # neither a merge nor an alias to follow.
        if parent_session is not None and (alias or parent_session != session_id):
            session_id = _merge(alias, by_session, session_id, _resolve(alias, parent_session))
        if alias:
            session_id = _resolve(alias, session_id)
        if isinstance(uuid, str):
            session_of_uuid[uuid] = session_id
        conversation = by_session.get(session_id)
        if conversation is None:
            conversation = by_session[session_id] = Stream(session_id, path)
        conversation.records.append(record)
    corpus.main.extend(by_session.values())


def _resolve(alias: dict[str, str], session_id: str) -> str:
    while session_id in alias:
        session_id = alias[session_id]
    return session_id


def _merge(alias: dict[str, str], streams: dict[str, Stream], child: str, parent: str) -> str:
    """A record whose parent is in another session id continues that conversation (a resume)."""
    child = _resolve(alias, child)
    if child == parent:
        return parent
    moved = streams.pop(child, None)
    alias[child] = parent
    if moved is not None:
        target = streams.setdefault(parent, Stream(parent, moved.path))
        target.records = sorted([*target.records, *moved.records], key=lambda r: int(r["_pos"]))
    return parent


def _is_duplicate(record: dict[str, Any], seen: set[tuple[Any, ...]]) -> bool:
    """Resumed sessions re-log earlier history under new uuids; the same block is one event."""
    message = record.get("message")
    if not isinstance(message, dict):
        return False
    content = message.get("content")
    keys: list[tuple[Any, ...]] = []
    if record.get("type") == "assistant":
        message_id = message.get("id") or record.get("requestId")
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                keys.append(("use", block.get("id")))
            else:
                text = block.get("text") or block.get("thinking") or ""
                keys.append(("block", message_id, block.get("type"), hash(text)))
    else:
        results: list[tuple[Any, ...]] | None = (
            [("result", b.get("tool_use_id")) for b in content if is_result_block(b)]
            if isinstance(content, list)
            else None
        )
        keys = results or [("user", record.get("timestamp"), hash(text_of(content)))]
    for key in keys:
        if key not in seen:
            seen.update(keys)
            return False
    return bool(keys)


def _collect_result(corpus: Corpus, record: dict[str, Any]) -> None:
    """The recorded results of a user record's tool_result blocks, by tool_use id."""
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return
    results = corpus.results
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            use_id = block.get("tool_use_id")
            if isinstance(use_id, str) and use_id not in results:
                results[use_id] = classify_result(block, record.get("toolUseResult"))


def _link_inline_sidechains(corpus: Corpus) -> None:
    """1.0.x sidechains carry no agent id: the last Task before them with their prompt owns them."""
    if not corpus.inline:
        return  # later transcripts name their agents: no Task call needs looking for
    tasks: dict[str, list[tuple[str, int, str]]] = {}
    for stream in corpus.main:
        for record in stream.records:
            for block in content_blocks(record):
                if block.get("type") == "tool_use" and block.get("name") in SUBAGENT_TOOLS:
                    prompt = block.get("input", {}).get("prompt", "")
                    tasks.setdefault(normalised_text(str(prompt)), []).append(
                        (stream.path, int(record["_pos"]), str(block.get("id")))
                    )
    for prompt, streams in corpus.inline.items():
        candidates = tasks.get(prompt, [])
        for position, stream in streams:
            owners = [t for t in candidates if t[0] == stream.path and t[1] < position]
            owners = [t for t in owners if t[2] not in corpus.inline_links]
            if owners:
                corpus.inline_links[owners[-1][2]] = stream
                stream.claimed = True
