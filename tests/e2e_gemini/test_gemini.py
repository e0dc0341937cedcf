"""The real Gemini CLI with hookchain installed by its own installer, against the mock Gemini
API: every shipped plugin (entry points) runs in the warm host; Gemini CLI runs under bwrap with
only the sandbox writable, so a guard that fails lets a scripted command change only the sandbox.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from kit import Project, Sandbox
from mock_gemini import MockGemini, Say, Step, shell, write_file
from suites import episodes, run_jailed

pytestmark = pytest.mark.slow
RUN_TIMEOUT_S = 90.0


@dataclass
class GeminiRun:
    code: int
    records: list[dict[str, object]]
    stderr: str
    api: MockGemini

    def explain(self) -> str:
        lines = [f"exit {self.code}"] + [json.dumps(r)[:300] for r in self.records[-10:]]
        return "\n".join([*lines, "stderr: " + self.stderr[-1500:]])


def installed(box: Sandbox) -> Project:
    project = box.project()
    done = project.install("--harness", "gemini", "--scope", "user")
    assert "hooks installed in" in done.stdout, done.stdout + done.stderr
    return project


def run_gemini(box: Sandbox, project: Project, script: list[Step], prompt: str) -> GeminiRun:
    node = shutil.which("node") or "node"
    with MockGemini(script, max_requests=60, max_seconds=RUN_TIMEOUT_S + 20) as api:
        argv = [
            node, str(box.binary),
            "-m", "gemini-2.5-flash", "--yolo", "--output-format", "stream-json", "-p", prompt,
        ]  # fmt: skip
        env = {**box.env, "GOOGLE_GEMINI_BASE_URL": api.url}
        done = run_jailed(box.root, argv, env, project.path, RUN_TIMEOUT_S)
    records = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return GeminiRun(done.returncode, records, done.stderr, api)


def test_the_hooks_fire_and_a_healthy_run_is_untouched(box: Sandbox) -> None:
    project = installed(box)
    run = run_gemini(box, project, [shell("echo hello > notes.txt"), Say("Done.")], "note it")
    assert (project.path / "notes.txt").read_text() == "hello\n", run.explain()
    assert not run.api.seen("hookchain") and not run.api.seen("write-guard"), run.explain()
    status = box.status()
    assert status is not None, run.explain()
    # SessionStart, BeforeAgent, BeforeTool, AfterTool, AfterAgent, SessionEnd
    assert status["events_served"] >= 6, status


def test_a_repeated_failing_command_is_nudged(box: Sandbox) -> None:
    project = installed(box)
    run = run_gemini(box, project, [shell("ls does-not-exist")] * 5 + [Say("Done.")], "list it")
    assert len(run.api.tool_results()) == 5, run.explain()
    assert run.api.seen("loop-breaker"), run.explain()


def test_a_shell_write_outside_the_workspace_is_denied_and_not_created(box: Sandbox) -> None:
    project = installed(box)
    target = box.outside / "stolen.txt"
    run = run_gemini(box, project, [shell(f"echo x > {target}"), Say("Done.")], "write it")
    assert not target.exists(), run.explain()
    assert "write-guard" in run.api.tool_results()[0], run.explain()


def test_a_write_file_to_a_protected_file_is_denied_by_write_guard(box: Sandbox) -> None:
    # Gemini CLI refuses a write_file outside its workspace (and into .git) itself, before
    # BeforeTool runs; Claude Code's settings inside the workspace pass its check, so
    # write-guard is what stops it.
    project = installed(box)
    target = project.path / ".claude" / "settings.json"
    run = run_gemini(box, project, [write_file(str(target), "{}\n"), Say("Done.")], "write it")
    assert not target.exists(), run.explain()
    assert "write-guard" in run.api.tool_results()[0], run.explain()


def test_a_dangerous_git_operation_is_held(box: Sandbox) -> None:
    project = installed(box)
    (project.path / "work.txt").write_text("uncommitted work\n")
    project.git("add", "work.txt")
    run = run_gemini(box, project, [shell("git reset --hard HEAD"), Say("Done.")], "reset it")
    assert (project.path / "work.txt").read_text() == "uncommitted work\n", run.explain()
    assert "work.txt" in project.git("diff", "--cached", "--name-only").stdout, run.explain()
    assert "write-guard" in run.api.tool_results()[0], run.explain()


def test_observer_writes_an_episode_of_the_gemini_turn(box: Sandbox) -> None:
    project = installed(box)
    run = run_gemini(box, project, [shell("echo hi"), Say("Done.")], "say hi")
    box.side.host_pid()  # the host answered; episodes are written at turn end
    found = episodes(project.path)
    assert found, run.explain()
    assert found[-1]["task_size"]["tool_calls"] == 1, found


def test_observer_names_the_harness_of_each_episode(box: Sandbox) -> None:
    project = installed(box)
    run_gemini(box, project, [shell("echo hi"), Say("Done.")], "say hi")
    found = episodes(project.path)
    assert found
    assert all('"harness": "gemini"' in json.dumps(episode) for episode in found), found


def test_uninstall_removes_only_hookchains_hooks(box: Sandbox) -> None:
    project = installed(box)
    settings = Path(box.env["HOME"]) / ".gemini" / "settings.json"
    assert "gemini:BeforeTool" in settings.read_text()
    done = project.hookchain("uninstall", "--harness", "gemini", "--scope", "user")
    assert done.returncode == 0, done.stderr
    after = json.loads(settings.read_text())
    assert after.get("hooks", {}) == {}
    assert after["security"]["auth"]["selectedType"] == "gemini-api-key"
