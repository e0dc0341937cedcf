"""Every rebuilt event of every shared transcript, pinned by digests taken before the fast reader.

`fixtures/transcript_events.json` was written by the reader that decoded every record with the
standard `json` module and read the whole input before rebuilding; a faster or streamed reader
must rebuild the very same events (see `transcript_digest.py`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from transcript_digest import digests

from framework.replay.reader import (
    group_transcripts,
    read_group,
    read_transcripts,
    transcript_files,
)

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "transcripts"
GOLDEN = json.loads((Path(__file__).parent / "fixtures" / "transcript_events.json").read_text())


def corpus_files() -> list[Path]:
    if not CORPUS.is_dir():
        pytest.fail(f"shared transcript corpus not found at {CORPUS}; it must sit beside the clone")
    return sorted(CORPUS.glob("*.jsonl"))


def test_the_whole_folder_rebuilds_the_pinned_events() -> None:
    assert digests(read_transcripts([CORPUS]).sessions) == GOLDEN["folder"]


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name[:2])
def test_each_file_alone_rebuilds_the_pinned_events(path: Path) -> None:
    assert digests(read_transcripts([path]).sessions) == GOLDEN["per_file"][path.name]


def test_reading_group_by_group_rebuilds_the_pinned_events() -> None:
    groups = group_transcripts(transcript_files([CORPUS]))
    assert len(groups) < len(corpus_files()), "subagent files join their session's group"
    assert digests(s for group in groups for s in read_group(group).sessions) == GOLDEN["folder"]
