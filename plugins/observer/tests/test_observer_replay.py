"""Replaying a recorded session writes one episode per main turn and none of its prompts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from framework import HostSettings, PromptSubmit, TurnComplete, read_transcripts, replay_paths
from observer._pii import scrub

import observer

CORPUS = Path(__file__).resolve().parents[3].parent / "shared" / "corpus" / "transcripts"
TRANSCRIPTS = (
    "12_session-share_4b2030ed_main-task.jsonl",
    "23_agentic-framework_7775e1a8_prompt-hook-edit-denial.jsonl",
)


def _corpus_file(name: str) -> Path:
    path = CORPUS / name
    if not path.is_file():
        pytest.fail(f"the shared corpus is missing: expected {path} beside the repository")
    return path


@pytest.mark.anyio
@pytest.mark.parametrize("name", TRANSCRIPTS)
async def test_replay_writes_one_episode_per_main_turn(name: str, tmp_path: Path) -> None:
    transcripts = read_transcripts([_corpus_file(name)])
    main_turn_ends: set[tuple[str, str]] = set()
    prompts: list[str] = []
    for session in transcripts.sessions:
        for step in session.walk():
            event = step.event
            if isinstance(event, TurnComplete) and event.agent_id is None:
                main_turn_ends.add((event.session_id, event.turn_id))
            elif isinstance(event, PromptSubmit):
                prompts.append(event.text)
    assert main_turn_ends, f"{name} has no main turns"

    report = await replay_paths(
        [_corpus_file(name)],
        plugins=[observer],
        entry_points=False,
        settings=HostSettings(store="memory://"),
        sandbox=tmp_path,
    )
    assert not report.failures
    data_dir = tmp_path / "observer"

    text = "".join(path.read_text() for path in sorted(data_dir.glob("episodes-*.jsonl")))
    records = [json.loads(line) for line in text.splitlines()]
    assert [r for r in records if r["record"] != "episode"] == []
    assert sorted((r["session_id"], r["turn_id"]) for r in records) == sorted(main_turn_ends)
    for prompt in prompts:
        for line in prompt.splitlines():
            if len(line.strip()) >= 12:
                assert line.strip() not in text
    assert scrub(text) == text
