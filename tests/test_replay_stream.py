"""Replaying a whole history: groups, `--jobs`, `--into`, `--json-lines`, defaults, windows."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import types
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from replay_kit import replay, replay_json

from framework import CallNext, Engine, PluginInfo, ToolCall, ToolResult, hookimpl
from framework.replay.cli import parse_moment
from framework.replay.parallel import ReplayError, replay_jobs
from framework.replay.reader import group_transcripts, transcript_files
from framework.replay.runner import Window, replay_paths

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "transcripts"
CORPUS = REPO.parent / "shared" / "corpus" / "transcripts"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.fail(f"shared transcript corpus not found at {CORPUS}; it must sit beside the clone")
    return CORPUS


# -- groups ---------------------------------------------------------------------------------------


def test_subagent_files_join_their_session_group_by_name_and_first_record(tmp_path: Path) -> None:
    session = "4b2030ed-5563-49ea-b703-6a002f2d3cc8"
    main = next(corpus().glob("12_*.jsonl"))
    agent = next(corpus().glob("13_*.jsonl"))
    shutil.copy(main, tmp_path / f"{session}.jsonl")
    (tmp_path / session / "subagents").mkdir(parents=True)
    shutil.copy(agent, tmp_path / session / "subagents" / "agent-a2018e5.jsonl")
    shutil.copy(EXAMPLES / "2026-03-03_refusal.jsonl", tmp_path / "other.jsonl")
    groups = group_transcripts(transcript_files([tmp_path]))
    assert sorted(len(g.files) for g in groups) == [1, 2]
    joined = next(g for g in groups if len(g.files) == 2)
    assert {p.name for p in joined.files} == {f"{session}.jsonl", "agent-a2018e5.jsonl"}
    assert joined.size == main.stat().st_size + agent.stat().st_size
    assert [g.first_ms for g in groups] == sorted(g.first_ms for g in groups)


# -- jobs -----------------------------------------------------------------------------------------


def test_parallel_and_serial_replays_give_the_same_replay_json(tmp_path: Path) -> None:
    serial = replay_json(tmp_path, "--jobs", "1", str(corpus()))
    parallel = replay_json(tmp_path, "--jobs", "2", str(corpus()))
    assert serial["summary"]["sessions"] >= 10 and serial["actions"]
    assert parallel == serial


def test_parallel_runs_in_worker_processes_each_its_own_host(tmp_path: Path) -> None:
    module = types.ModuleType("pid_probe")
    module.plugin = PluginInfo(name="pid-probe", contract=">=1,<2")  # type: ignore[attr-defined]

    async def on_tool(engine: Engine, event: ToolCall, call_next: CallNext) -> ToolResult:
        result: ToolResult = await call_next(event)
        return result.with_note(str(os.getpid()), by="pid-probe")

    @hookimpl
    def register(on: Any, options: Any) -> None:
        on("tool.call", on_tool)

    module.register = register  # type: ignore[attr-defined]
    report = replay_jobs([EXAMPLES], jobs=2, plugins=[module], entry_points=False)
    pids = {int(a.text) for a in report.actions}
    assert pids and os.getpid() not in pids
    serial = replay_jobs([EXAMPLES], jobs=1, plugins=[module], entry_points=False)
    assert {a.text for a in serial.actions} == {str(os.getpid())}
    strip = [(a.session_id, a.index, a.tool_use_id) for a in serial.actions]
    assert [(a.session_id, a.index, a.tool_use_id) for a in report.actions] == strip


def test_workers_share_a_named_store_as_concurrent_hosts(tmp_path: Path) -> None:
    database = tmp_path / "shared.db"
    serial = tmp_path / "serial.db"
    replay_json(tmp_path, "--jobs", "2", "--store", f"sqlite:///{database}", str(EXAMPLES))
    replay_json(tmp_path, "--jobs", "1", "--store", f"sqlite:///{serial}", str(EXAMPLES))

    def keys(path: Path) -> list[str]:
        # The plugin and the first part of each key: a log key's tail is unique per writer.
        with sqlite3.connect(path) as db:
            return sorted(
                ":".join(key.split(":")[:2]) for (key,) in db.execute("SELECT key FROM kv")
            )

    assert keys(database) and keys(database) == keys(serial)


def test_json_lines_stream_the_document_one_session_a_line(tmp_path: Path) -> None:
    whole = replay_json(tmp_path, str(EXAMPLES))
    done = replay(tmp_path, "--json-lines", "--jobs", "2", str(EXAMPLES))
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["type"] for line in lines] == ["session"] * len(whole["sessions"]) + ["summary"]
    sessions = [
        {**{k: v for k, v in s.items() if k != "type"}, "actions": len(s["actions"])}
        for s in lines[:-1]
    ]
    assert sessions == whole["sessions"]
    assert [a for s in lines[:-1] for a in s["actions"]] == whole["actions"]
    assert {k: v for k, v in lines[-1].items() if k != "type"} == whole["summary"]


# -- into -----------------------------------------------------------------------------------------


def test_into_keeps_every_plugins_files_and_says_where(tmp_path: Path) -> None:
    into = tmp_path / "kept"
    data = replay_json(tmp_path, "--into", str(into), str(EXAMPLES))
    assert data["summary"]["into"] == str(into)
    episodes = sorted((into / "observer").glob("episodes-*.jsonl"))
    assert episodes
    lines = sum(len(p.read_text().splitlines()) for p in episodes)
    assert lines == data["summary"]["logged_records"]["observer"] > 0
    assert (into.stat().st_mode & 0o777) == 0o700
    text = replay(tmp_path, "--into", str(tmp_path / "again"), str(EXAMPLES))
    assert f"plugin files kept in {tmp_path / 'again'}" in text.stdout
    assert f"into {tmp_path / 'again'}/observer" in text.stdout
    default = replay_json(tmp_path, str(EXAMPLES))
    assert default["summary"]["into"] is None
    (tmp_path / "a-file").write_text("x")
    refused = replay(tmp_path, "--into", str(tmp_path / "a-file"), str(EXAMPLES))
    assert refused.returncode == 2 and "not a folder" in refused.stderr


# -- defaults, windows, empty selections ----------------------------------------------------------


def test_no_path_reads_claude_codes_projects_folder(tmp_path: Path) -> None:
    projects = tmp_path / ".claude" / "projects" / "-home-dev-p"
    projects.mkdir(parents=True)
    shutil.copy(EXAMPLES / "2026-03-03_refusal.jsonl", projects)
    data = replay_json(tmp_path)
    assert [Path(s["path"]).name for s in data["sessions"]] == ["2026-03-03_refusal.jsonl"]
    config = tmp_path / "config"
    (config / "projects" / "p").mkdir(parents=True)
    shutil.copy(EXAMPLES / "2026-03-02_risky-writes.jsonl", config / "projects" / "p")
    data = replay_json(tmp_path, CLAUDE_CONFIG_DIR=str(config))
    assert [Path(s["path"]).name for s in data["sessions"]] == ["2026-03-02_risky-writes.jsonl"]
    missing = replay(tmp_path, CLAUDE_CONFIG_DIR=str(tmp_path / "nowhere"))
    assert missing.returncode == 1 and missing.stdout == ""
    assert f"no transcripts under {tmp_path / 'nowhere' / 'projects'}" in missing.stderr


def test_an_empty_selection_says_why(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    none = replay(tmp_path, str(tmp_path / "empty"))
    assert none.returncode == 1
    assert f"no transcripts (*.jsonl) under {tmp_path / 'empty'}" in none.stderr
    later = replay(tmp_path, "--json", "--since", "2026-03-04", str(EXAMPLES))
    assert later.returncode == 0 and json.loads(later.stdout)["sessions"] == []
    assert "0 sessions since 2026-03-04 00:00 UTC in 3 transcript files" in later.stderr
    assert "3 sessions read fall outside it, and 0 files were not read" in later.stderr
    old = tmp_path / "old"
    old.mkdir()
    shutil.copy(EXAMPLES / "2026-03-03_refusal.jsonl", old)
    os.utime(old / "2026-03-03_refusal.jsonl", (1_000_000, 1_000_000))
    unread = replay(tmp_path, "--since", "2026-03-01", str(old))
    assert unread.returncode == 0 and "no transcripts" not in unread.stderr
    assert "0 sessions read fall outside it, and 1 files were not read" in unread.stderr


def test_durations_count_back_from_now_and_a_bare_until_date_means_its_end() -> None:
    now = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
    assert parse_moment("7d", now=now) == int(
        datetime(2026, 3, 3, 12, tzinfo=UTC).timestamp() * 1e3
    )
    assert parse_moment("12h", now=now) == int(datetime(2026, 3, 10, tzinfo=UTC).timestamp() * 1e3)
    assert parse_moment("2w", now=now) == int(
        datetime(2026, 2, 24, 12, tzinfo=UTC).timestamp() * 1e3
    )
    end = parse_moment("2026-03-02", end_of_day=True)
    assert end == int(datetime(2026, 3, 3, tzinfo=UTC).timestamp() * 1000) - 1
    assert parse_moment("2026-03-02T10:00", end_of_day=True) == int(
        datetime(2026, 3, 2, 10, tzinfo=UTC).timestamp() * 1000
    )


def test_until_and_since_choose_sessions_by_their_span(tmp_path: Path) -> None:
    until = replay_json(tmp_path, "--until", "2026-03-02", str(EXAMPLES))
    names = {Path(s["path"]).name for s in until["sessions"]}
    assert names == {"2026-03-02_risky-writes.jsonl", "2026-03-02_test-fix-loop.jsonl"}
    both = replay_json(
        tmp_path, "--since", "2026-03-02T12:00", "--until", "2026-03-02", str(EXAMPLES)
    )
    assert {Path(s["path"]).name for s in both["sessions"]} == {"2026-03-02_risky-writes.jsonl"}
    recent = replay_json(tmp_path, "--since", "30d", str(EXAMPLES))
    assert recent["sessions"] == []  # recorded in March 2026, long before "now" minus 30 days
    bad = replay(tmp_path, "--until", "soon", str(EXAMPLES))
    assert bad.returncode == 2 and "soon" in bad.stderr


def test_a_group_written_before_since_is_not_read(tmp_path: Path) -> None:
    copy = tmp_path / "old.jsonl"
    shutil.copy(EXAMPLES / "2026-03-03_refusal.jsonl", copy)
    os.utime(copy, (1_000_000, 1_000_000))  # 1970: nothing in it can be newer
    groups = group_transcripts(transcript_files([tmp_path]))
    assert not Window(since_ms=2_000_000_000).may_keep(groups[0])
    assert Window(since_ms=500_000).may_keep(groups[0])


# -- subagent types -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_subagents_carry_the_type_their_task_call_named() -> None:
    seen: list[tuple[str | None, str | None]] = []
    module = types.ModuleType("agent_probe")
    module.plugin = PluginInfo(name="agent-probe", contract=">=1,<2")  # type: ignore[attr-defined]

    async def on_tool(engine: Engine, event: ToolCall, call_next: CallNext) -> ToolResult:
        if event.agent_id is not None:
            agents = {a.id: a for a in await engine.agents.list()}
            seen.append((event.agent_id, agents[event.agent_id].type))
        result: ToolResult = await call_next(event)
        return result

    @hookimpl
    def register(on: Any, options: Any) -> None:
        on("tool.call", on_tool)

    module.register = register  # type: ignore[attr-defined]
    main, agent = (next(corpus().glob(f"{n}_*.jsonl")) for n in ("12", "13"))
    await replay_paths([main, agent], plugins=[module], entry_points=False)
    assert seen == [("a2018e5", "general-purpose")]


def test_copies_of_a_history_in_two_folders_are_separate_groups(tmp_path: Path) -> None:
    for copy in ("one", "two"):
        (tmp_path / copy).mkdir()
        for n in ("12", "13"):
            shutil.copy(next(corpus().glob(f"{n}_*.jsonl")), tmp_path / copy)
    groups = group_transcripts(transcript_files([tmp_path]))
    assert sorted({p.parent.name for p in g.files} for g in groups) == [{"one"}, {"two"}]
    assert all(len(g.files) == 2 for g in groups)


def test_a_worker_that_dies_fails_the_replay_naming_it() -> None:
    parent = os.getpid()
    module = types.ModuleType("dying_probe")
    module.plugin = PluginInfo(name="dying-probe", contract=">=1,<2")  # type: ignore[attr-defined]

    async def on_tool(engine: Engine, event: ToolCall, call_next: CallNext) -> ToolResult:
        if os.getpid() != parent:
            os._exit(3)  # a worker killed mid-session, as by the OOM killer
        result: ToolResult = await call_next(event)
        return result

    @hookimpl
    def register(on: Any, options: Any) -> None:
        on("tool.call", on_tool)

    module.register = register  # type: ignore[attr-defined]
    with pytest.raises(ReplayError, match=r"replay worker replay-\d died \(exit 3\)"):
        replay_jobs([EXAMPLES], jobs=2, plugins=[module], entry_points=False)
