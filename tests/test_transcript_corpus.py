"""The transcript reader on the shared corpus of real Claude Code transcripts."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from framework.core.contract import SessionStart, ToolCall, TurnComplete
from framework.replay.reader import (
    RECORDED_BY_PREFIX,
    SIDE_CHANNEL_AGENT_PREFIXES,
    Session,
    Step,
    read_transcripts,
)

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "transcripts"


def corpus_file(prefix: str) -> Path:
    if not CORPUS.is_dir():
        pytest.fail(f"shared transcript corpus not found at {CORPUS}; it must sit beside the clone")
    matches = sorted(CORPUS.glob(f"{prefix}*.jsonl"))
    assert len(matches) == 1, f"expected one corpus file starting with {prefix}"
    return matches[0]


def all_corpus_files() -> list[Path]:
    if not CORPUS.is_dir():
        pytest.fail(f"shared transcript corpus not found at {CORPUS}; it must sit beside the clone")
    return sorted(CORPUS.glob("*.jsonl"))


def calls(sessions: tuple[Session, ...]) -> list[tuple[Step, ToolCall]]:
    return [(s, s.event) for x in sessions for s in x.walk() if isinstance(s.event, ToolCall)]


def raw_blocks(path: Path) -> tuple[list[str], set[str]]:
    """tool_use ids (with repeats) and answered tool_use ids, counted straight from the file."""
    uses: list[str] = []
    answered: set[str] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or not isinstance(record.get("message"), dict):
            continue
        if str(record.get("agentId") or "").startswith(SIDE_CHANNEL_AGENT_PREFIXES):
            continue
        content = record["message"].get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use":
                uses.append(block["id"])
            elif block.get("type") == "tool_result":
                answered.add(block["tool_use_id"])
    return uses, answered


@pytest.mark.parametrize("path", all_corpus_files(), ids=lambda p: p.name[:2])
def test_every_tool_use_is_one_call_and_every_result_is_joined(path: Path) -> None:
    read = read_transcripts([path])
    uses, answered = raw_blocks(path)
    replayed = calls(read.sessions)
    ids = [call.tool_use_id for _, call in replayed]
    assert len(ids) == len(set(uses)), "one tool.call per distinct tool_use block"
    assert Counter(ids) == Counter(set(uses))
    relogged = len(uses) - len(set(uses))
    assert relogged == 0 or read.duplicate_records >= relogged
    joined = {call.tool_use_id for step, call in replayed if step.recorded.verdict != "unanswered"}
    assert joined == answered


def test_a_relogged_resume_is_counted_once() -> None:
    path = corpus_file("11_")
    uses, _ = raw_blocks(path)
    assert len(uses) == 110
    assert len(set(uses)) == 65
    assert len(calls(read_transcripts([path]).sessions)) == 65


def test_subagent_file_is_joined_through_the_task_result() -> None:
    read = read_transcripts([corpus_file("12_"), corpus_file("13_")])
    assert len(read.sessions) == 1
    task = next(step for step, call in calls(read.sessions) if call.tool == "Task")
    nested = [s.event for s in task.subagent if isinstance(s.event, ToolCall)]
    assert [(c.tool, c.agent_id) for c in nested] == [("WebSearch", "a2018e5")]
    assert all(s.event.session_id == read.sessions[0].session_id for s in task.subagent)


@pytest.mark.parametrize("layout", ["subagents", "sibling"])
def test_both_subagent_file_layouts_are_joined(tmp_path: Path, layout: str) -> None:
    session = "4b2030ed-5563-49ea-b703-6a002f2d3cc8"
    shutil.copy(corpus_file("12_"), tmp_path / f"{session}.jsonl")
    folder = tmp_path / session / "subagents" if layout == "subagents" else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(corpus_file("13_"), folder / "agent-a2018e5.jsonl")
    read = read_transcripts([tmp_path])
    assert len(read.sessions) == 1
    assert [call.agent_id for _, call in calls(read.sessions)] == [None, "a2018e5"]


def test_compaction_agent_is_a_side_channel_and_the_explore_agent_nests() -> None:
    read = read_transcripts([corpus_file("14_"), corpus_file("15_"), corpus_file("16_")])
    assert read.side_channel_agents == 1
    assert len(read.sessions) == 1
    by_agent = Counter(call.agent_id for _, call in calls(read.sessions))
    assert by_agent == {None: 90, "aae161c": 22}
    starts = [s.event.source for s in read.sessions[0].walk() if isinstance(s.event, SessionStart)]
    assert starts == ["startup", "compact"]


def test_inline_sidechains_join_the_task_that_ran_them() -> None:
    read = read_transcripts([corpus_file("18_")])
    tasks = [step for step, call in calls(read.sessions) if call.tool == "Task"]
    with_agents = [t for t in tasks if t.subagent]
    assert len(tasks) == 7
    assert len(with_agents) == 3
    assert all(t.recorded.verdict != "interrupted" for t in with_agents)
    nested = [s.event for t in with_agents for s in t.subagent if isinstance(s.event, ToolCall)]
    assert nested
    assert all(call.agent_id for call in nested)
    assert len(calls(read.sessions)) == 213
    assert read.sessions[0].merged_ids


def test_stop_hook_loop_is_rebuilt_as_blocked_completions() -> None:
    session = read_transcripts([corpus_file("21_")]).sessions[0]
    completes = [(s, s.event) for s in session.walk() if isinstance(s.event, TurnComplete)]
    blocked = [step for step, _ in completes if step.continuation is not None]
    assert len(blocked) == 19
    assert all("Failed to spawn" in (c.continuation or "") for c in blocked)
    follow_ups = [completes[i + 1][1] for i, (s, _) in enumerate(completes[:-1]) if s.continuation]
    assert len(follow_ups) == 19
    assert all(event.stop_hook_active for event in follow_ups)


def test_recorded_denials_carry_their_origin() -> None:
    hooks = calls(read_transcripts([corpus_file("20_")]).sessions)
    blocked = [s.recorded.to_tool_result() for s, _ in hooks if s.recorded.verdict == "hook_block"]
    assert len(blocked) == 3
    assert all(r.denial and r.denial.by == RECORDED_BY_PREFIX + "hook" for r in blocked)
    users = calls(read_transcripts([corpus_file("25_")]).sessions)
    assert sum(s.recorded.verdict == "user_denied" for s, _ in users) == 6
