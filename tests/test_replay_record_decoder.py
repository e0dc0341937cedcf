"""Records decoded into the keys the rebuild reads rebuild the events of records decoded whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from transcript_digest import digests

from framework.core.contract import PromptSubmit, ToolCall
from framework.replay import reader
from framework.replay.reader import Transcripts, read_transcripts

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "transcripts"
SESSION = "22222222-aaaa-bbbb-cccc-000000000002"


class _Refuses:
    """A record decoder refusing every line: each is decoded whole, as before `_Record`."""

    def decode(self, line: object) -> Any:
        raise msgspec.DecodeError("decoded whole")


def whole_and_fast(
    monkeypatch: pytest.MonkeyPatch, paths: list[Path]
) -> tuple[Transcripts, Transcripts, int]:
    """The read with every record decoded whole, the read as it is, and how many lines the
    latter decoded whole."""
    with monkeypatch.context() as patched:
        patched.setattr(reader, "_RECORD", _Refuses())
        whole = read_transcripts(paths)
    in_full = reader._decode_in_full
    fallbacks = 0

    def counted(line: memoryview) -> Any:
        nonlocal fallbacks
        fallbacks += 1
        return in_full(line)

    with monkeypatch.context() as patched:
        patched.setattr(reader, "_decode_in_full", counted)
        fast = read_transcripts(paths)
    return whole, fast, fallbacks


def counts(read: Transcripts) -> tuple[int, int, int, int, int]:
    return (
        len(read.sessions),
        read.files,
        read.skipped_lines,
        read.duplicate_records,
        read.side_channel_agents,
    )


def corpus_files() -> list[Path]:
    if not CORPUS.is_dir():
        pytest.fail(f"shared transcript corpus not found at {CORPUS}; it must sit beside the clone")
    return sorted(CORPUS.glob("*.jsonl"))


def test_the_shared_transcripts_rebuild_the_same_events_either_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = corpus_files()
    whole, fast, fallbacks = whole_and_fast(monkeypatch, [CORPUS])
    assert fallbacks == 0, "every shared record fits `_Record`: the shortcut is what is tested"
    assert len(whole.sessions) > 10
    assert digests(fast.sessions) == digests(whole.sessions)
    assert counts(fast) == counts(whole)
    for path in files:  # alone, a subagent file is a session of its own
        whole, fast, _ = whole_and_fast(monkeypatch, [path])
        assert digests(fast.sessions) == digests(whole.sessions), path.name
        assert counts(fast) == counts(whole), path.name


def record(kind: str, n: int, **fields: Any) -> dict[str, Any]:
    return {
        "parentUuid": f"u{n - 1}" if n else None,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/work/project",
        "sessionId": SESSION,
        "version": "2.1.30",
        "type": kind,
        "uuid": f"u{n}",
        "timestamp": f"2026-01-01T10:00:{n:02d}.000Z",
        **fields,
    }


def line(value: dict[str, Any], **raw: bytes) -> bytes:
    """`value` as a JSON line, each `"<name>"` string placeholder replaced by raw bytes."""
    text = json.dumps(value).encode()
    for name, replacement in raw.items():
        text = text.replace(f'"<{name}>"'.encode(), replacement)
    return text


def prompt(n: int, content: Any, **fields: Any) -> dict[str, Any]:
    return record("user", n, message={"role": "user", "content": content}, **fields)


def step(n: int, message_id: str, block: dict[str, Any], stop: str | None) -> dict[str, Any]:
    message = {
        "id": message_id,
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [block],
        "stop_reason": stop,
        "usage": {"input_tokens": 3, "output_tokens": 5},
    }
    return record("assistant", n, message=message, requestId=f"req-{message_id}")


def use(n: int, use_id: str, **tool_input: Any) -> dict[str, Any]:
    block = {"type": "tool_use", "id": use_id, "name": "Bash", "input": tool_input}
    return step(n, f"m{n}", block, "tool_use")


def result(n: int, use_id: str, content: Any, structured: Any = None) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": use_id, "content": content}
    return record(
        "user",
        n,
        message={"role": "user", "content": [block]},
        toolUseResult=structured if structured is not None else {"stdout": "ok"},
    )


def test_lines_that_do_not_fit_the_record_keys_read_as_when_decoded_whole(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    lines = [
        line(prompt(0, "first", slug="<s>"), s=b'"caf\xff"'),  # invalid UTF-8, unread key
        line(prompt(1, "tab", slug="<s>"), s=b'"a\tb"'),  # a raw tab: not JSON
        line(prompt(2, "far", gitBranch="<s>"), s=b"1e400"),  # out of a double's range
        line(prompt(3, "nan", gitBranch="<s>"), s=b"NaN"),
        line(prompt(4, "alone", slug="<s>"), s=b'"\\ud800"'),  # a lone surrogate
        line(record("user", 5, message="a message that is a string")),
        line(prompt(6, ["not a block", {"type": "text", "text": "typed"}])),
        line(prompt(7, "second type key", type="<t>"), t=b'"assistant","type":"user"'),
        line(use(8, "t1", command="ls")),
        line(result(9, "t1", {"content": "a dict, not a list"})),
        line(use(10, "t2", command="pwd")),
        line(result(11, "t2", [{"type": "text", "text": "/work"}, 7])),
        line(use(12, "t3", command="cat x")),
        line(result(13, "t3", "x", structured="<u>"), u=b'"\xed\xa0\x80"'),  # a surrogate in UTF-8
        line(step(14, "m14", {"type": "text", "text": "done", "<x>": 1}, "end_turn"), x=b'"\xff"'),
        b'{"type":"user"} trailing',
        b"[1, 2]",
        line(prompt(15, "last")),
    ]
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    whole, fast, fallbacks = whole_and_fast(monkeypatch, [path])
    assert fallbacks > 5, "these lines take the slow path"
    assert whole.skipped_lines >= 3
    assert counts(fast) == counts(whole)
    assert digests(fast.sessions) == digests(whole.sessions)
    prompts = [s.event.text for s in fast.sessions[0].walk() if isinstance(s.event, PromptSubmit)]
    assert "first" in prompts and "far" in prompts and "last" in prompts


def test_an_integer_past_64_bits_reads_as_the_standard_module_reads_it(tmp_path: Path) -> None:
    big = 123456789012345678901234567890
    records = [
        prompt(0, "count"),
        use(1, "t1", command="seq 1", limit=big, below=-(2**63) - 1, top=2**64 - 1),
        result(2, "t1", "1", structured={"total": big, "items": [2**64, 1.5]}),
    ]
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_bytes(b"\n".join(line(r) for r in records) + b"\n")
    steps = list(read_transcripts([path]).sessions[0].walk())
    call = next(s for s in steps if isinstance(s.event, ToolCall))
    assert isinstance(call.event, ToolCall)
    expected = json.loads(line(records[1]))["message"]["content"][0]["input"]
    assert dict(call.event.input) == expected
    assert [type(call.event.input[k]) for k in ("limit", "below", "top")] == [int, int, int]
    assert call.recorded.structured == {"total": big, "items": [2**64, 1.5]}
    assert type(call.recorded.structured["total"]) is int
