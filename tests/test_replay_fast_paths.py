"""The reader's shortcuts give what the slow paths give, over the shared transcripts."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.core.contract import StreamChunk
from framework.replay.reader import read_transcripts

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "transcripts"


def test_shared_stop_chunks_equal_the_chunks_each_step_would_build() -> None:
    if not CORPUS.is_dir():
        pytest.fail(f"shared transcript corpus not found at {CORPUS}; it must sit beside the clone")
    stops = [
        chunk
        for session in read_transcripts([CORPUS]).sessions
        for step in session.walk()
        for chunk in step.chunks
        if chunk.kind == "stop"
    ]
    assert len(stops) > 500
    for chunk in stops:
        built = StreamChunk(kind="stop", stop_reason=chunk.stop_reason, data=dict(chunk.data))
        assert chunk == built
        assert chunk.model_fields_set == built.model_fields_set
    assert len({id(chunk) for chunk in stops}) < len(stops), "stop chunks are shared"
