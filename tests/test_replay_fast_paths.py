"""The reader's shortcuts give what the slow paths give, over the shared transcripts."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.core.contract import StreamChunk
from framework.replay import rebuild
from framework.replay.reader import read_transcripts

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "transcripts"


def stop_chunks() -> list[StreamChunk]:
    return [
        chunk
        for session in read_transcripts([CORPUS]).sessions
        for step in session.walk()
        for chunk in step.chunks
        if chunk.kind == "stop"
    ]


def test_shared_stop_chunks_equal_the_chunks_each_step_would_build(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not CORPUS.is_dir():
        pytest.fail(f"shared transcript corpus not found at {CORPUS}; it must sit beside the clone")
    stops = stop_chunks()
    # The slow path: every step builds its own stop chunk, as before the sharing.
    monkeypatch.setattr(
        rebuild,
        "_stop_chunk",
        lambda stop_reason: StreamChunk(kind="stop", stop_reason=stop_reason, data={}),
    )
    slow = stop_chunks()
    assert len(stops) > 500 and len(stops) == len(slow)
    assert len({id(chunk) for chunk in slow}) == len(slow)
    for chunk, built in zip(stops, slow, strict=True):
        assert chunk == built
        assert chunk.model_fields_set == built.model_fields_set
    assert len({id(chunk) for chunk in stops}) < len(stops), "stop chunks are shared"
