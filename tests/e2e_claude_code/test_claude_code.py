"""hookchain under the real Claude Code binary, driven by the scripted mock model API.

Each test runs `claude -p` in a throwaway project with hookchain installed through its own
`hookchain install`, and asserts what really happened: files on disk, what came back to the
model (the mock's request log), and Claude Code's stream of hook events.
"""

from __future__ import annotations

import json

import pytest
from kit import Run, Sandbox
from mock_api import bash, say, tool, write

pytestmark = pytest.mark.slow


def denied_write(box: Sandbox, *install: str) -> Run:
    project = box.project()
    project.install(*install)
    target = box.outside / "escape.txt"
    run = project.run("write a file", [write(str(target), "escaped"), say("ok")])
    assert run.code == 0, run.explain()
    assert not target.exists()
    [result] = run.tool_results()
    assert result.is_error
    assert "outside-roots" in result.text
    assert str(target) in result.text
    return run


def test_a_write_outside_the_workspace_is_denied_over_the_command_transport(box: Sandbox) -> None:
    run = denied_write(box)
    [pre] = run.hook_responses("PreToolUse")
    assert pre["exit_code"] == 0
    assert json.loads(pre["stdout"])["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_a_write_outside_the_workspace_is_denied_over_http(box: Sandbox) -> None:
    run = denied_write(box, "--transport", "http")
    [pre] = run.hook_responses("PreToolUse")
    assert pre["exit_code"] == 200  # Claude Code records an http hook's status as its exit code
    status = box.status()
    assert status is not None
    assert status["http_port"] is not None


def test_git_reset_hard_is_held_and_the_work_survives(box: Sandbox) -> None:
    project = box.project()
    project.install()
    (project.path / "README.md").write_text("work in progress\n")
    run = project.run("clean up", [bash("git reset --hard"), say("ok")])
    assert run.code == 0, run.explain()
    assert (project.path / "README.md").read_text() == "work in progress\n"
    [result] = run.tool_results()
    assert result.is_error
    assert "git-gate" in result.text
    assert "git reset --hard" in result.text


def test_a_repeated_failing_command_is_nudged_in_a_later_request(box: Sandbox) -> None:
    project = box.project()
    project.install()
    run = project.run("check", [*(bash("ls missing-dir") for _ in range(4)), say("ok")])
    assert run.code == 0, run.explain()
    results = run.tool_results()
    assert len(results) == 4
    assert all(r.is_error for r in results)
    nudged = [
        step
        for step, body in enumerate(run.api.bodies())
        if "repeat-failure" in json.dumps(body["messages"][-1])
    ]
    assert nudged, [r[:200] for r in run.reminders()]
    assert nudged[0] >= 3  # not before the third failure
    note = next(r for r in run.reminders() if "repeat-failure" in r)
    assert "ls missing-dir" in note


def test_a_healthy_session_gets_no_denials_or_notes_and_the_edit_is_made(box: Sandbox) -> None:
    project = box.project()
    project.install()
    source = project.path / "app.py"
    run = project.run(
        "add a function",
        [
            write(str(source), "def one():\n    return 1\n"),
            tool("Read", {"file_path": str(source)}),
            tool(
                "Edit",
                {"file_path": str(source), "old_string": "return 1", "new_string": "return 2"},
            ),
            bash("python3 -c 'import app; print(app.one())'"),
            say("done"),
        ],
    )
    assert run.code == 0, run.explain()
    assert source.read_text() == "def one():\n    return 2\n"
    results = run.tool_results()
    assert [r.is_error for r in results] == [False] * 4, results
    assert results[-1].text.strip() == "2"
    markers = (
        "[write-guard]",
        "denied this",
        "[loop-breaker]",
        "[refusal-watch]",
        "[observer]",
    )
    for marker in markers:
        assert not run.api.seen(marker), marker
    assert run.system_messages() == []
    assert {r["exit_code"] for r in run.hook_responses()} == {0}
    assert {"PreToolUse", "PostToolUse", "Stop"} <= set(run.hook_events())
    # What 2.1.197 sends in -p mode: a HEAD, then streamed messages of the session's one model.
    assert [e["kind"] for e in run.api.requests] == ["head"] + ["messages"] * 5
    assert len({e["model"] for e in run.api.requests if e["kind"] == "messages"}) == 1


def test_observer_writes_one_episode_per_turn_without_content(box: Sandbox) -> None:
    project = box.project()
    project.install()
    run = project.run("SECRET-PROMPT-TEXT list files", [bash("ls"), say("done")])
    assert run.code == 0, run.explain()
    files = list((project.path / ".hookchain" / "observer").glob("episodes-*.jsonl"))
    assert len(files) == 1, files
    text = files[0].read_text()
    episodes = [json.loads(line) for line in text.splitlines()]
    episodes = [e for e in episodes if e.get("record") == "episode"]
    assert len(episodes) == 1
    assert episodes[0]["session_id"] == run.result["session_id"]
    assert "SECRET-PROMPT-TEXT" not in text


def test_a_subagent_runs_its_tools_and_subagent_stop_arrives(box: Sandbox) -> None:
    project = box.project()
    project.install()
    task = {
        "description": "look around",
        "prompt": "SUBAGENT-JOB list the files",
        "subagent_type": "general-purpose",
    }
    run = project.run(
        "delegate",
        [tool("Task", task), say("done")],
        threads={"SUBAGENT-JOB": [bash("echo from-subagent"), say("subagent finished")]},
    )
    assert run.code == 0, run.explain()
    assert [r.text for r in run.tool_results("SUBAGENT-JOB")] == ["from-subagent"]
    assert run.hook_responses("SubagentStop"), run.hook_events()
    [main_result] = run.tool_results()
    assert "subagent finished" in main_result.text
