"""The real Codex CLI with hookchain installed by its own installer, against the mock Responses
API: every shipped plugin (entry points) runs in the warm host; Codex runs under bwrap with only
the sandbox writable, so a guard that fails lets a scripted command change only the sandbox.

Codex runs here WITHOUT `--dangerously-bypass-hook-trust`: the hooks fire only because
`hookchain install --harness codex` recorded the trust Codex reports for them.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from kit import Project, Sandbox
from mock_responses import Call, MockResponses, Say, Step
from suites import episodes, run_jailed

pytestmark = pytest.mark.slow
RUN_TIMEOUT_S = 90.0


@dataclass
class CodexRun:
    code: int
    events: list[dict[str, object]]
    stderr: str
    api: MockResponses

    def outputs(self) -> list[str]:
        return self.api.outputs()

    def explain(self) -> str:
        lines = [f"exit {self.code}"] + [json.dumps(e)[:300] for e in self.events[-10:]]
        return "\n".join([*lines, "stderr: " + self.stderr[-1500:]])


def _config(api: MockResponses) -> str:
    return (
        'model = "gpt-5-codex"\nmodel_provider = "mock"\n\n[model_providers.mock]\n'
        f'name = "mock"\nbase_url = "{api.url}"\nenv_key = "MOCK_API_KEY"\n'
        'wire_api = "responses"\n'
    )


def installed(box: Sandbox, name: str = "proj") -> Project:
    project = box.project(name)
    config = Path(box.env["CODEX_HOME"]) / "config.toml"
    config.write_text(_config(MockResponses([])), encoding="utf-8")  # the provider, for now
    done = project.install("--harness", "codex", "--scope", "user")
    assert "trust of 6 hookchain hooks recorded" in done.stdout, done.stdout + done.stderr
    return project


def run_codex(box: Sandbox, project: Project, script: list[Step], prompt: str) -> CodexRun:
    config = Path(box.env["CODEX_HOME"]) / "config.toml"
    with MockResponses(script, max_requests=40, max_seconds=RUN_TIMEOUT_S + 20) as api:
        # Only the provider's port changes between runs; hookchain's blocks (and trust) stay.
        text = config.read_text(encoding="utf-8")
        config.write_text(re.sub(r'base_url = "[^"]*"', f'base_url = "{api.url}"', text))
        argv = [
            str(box.root / "bin" / "codex"),
            "exec", "--json", "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "-C", str(project.path), prompt,
        ]  # fmt: skip
        done = run_jailed(box.root, argv, box.env, project.path, RUN_TIMEOUT_S)
        events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        return CodexRun(done.returncode, events, done.stderr, api)


def test_a_write_outside_the_workspace_is_denied_and_not_created(box: Sandbox) -> None:
    project = installed(box)
    target = box.outside / "stolen.txt"
    run = run_codex(box, project, [Call(f"echo stolen > {target}"), Say("Done.")], "write it")
    assert not target.exists(), run.explain()
    outputs = run.outputs()
    assert len(outputs) == 1, run.explain()
    assert "blocked by PreToolUse hook" in outputs[0] and "write-guard" in outputs[0]


def test_a_dangerous_git_operation_is_held(box: Sandbox) -> None:
    project = installed(box)
    (project.path / "work.txt").write_text("uncommitted work\n")
    project.git("add", "work.txt")
    run = run_codex(box, project, [Call("git reset --hard HEAD"), Say("Done.")], "reset it")
    assert (project.path / "work.txt").exists(), run.explain()
    assert "write-guard" in run.outputs()[0], run.explain()


def test_a_repeated_failing_command_is_nudged(box: Sandbox) -> None:
    project = installed(box)
    failing = "ls does-not-exist"
    run = run_codex(box, project, [Call(failing)] * 5 + [Say("Done.")], "list it")
    assert len(run.outputs()) == 5, run.explain()
    assert run.api.seen("loop-breaker"), run.explain()


def test_a_healthy_run_is_untouched(box: Sandbox) -> None:
    project = installed(box)
    run = run_codex(box, project, [Call("echo hello > notes.txt"), Say("Done.")], "note it")
    assert (project.path / "notes.txt").read_text() == "hello\n", run.explain()
    assert not run.api.seen("hookchain") and not run.api.seen("write-guard"), run.explain()
    status = box.status()
    assert status is not None and status["events_served"] >= 5


def test_uninstall_removes_only_hookchains_blocks(box: Sandbox) -> None:
    project = installed(box)
    config = Path(box.env["CODEX_HOME"]) / "config.toml"
    done = project.hookchain("uninstall", "--harness", "codex", "--scope", "user")
    assert done.returncode == 0, done.stderr
    text = config.read_text()
    assert "hookchain" not in text and 'model_provider = "mock"' in text


def test_status_says_when_codex_does_not_trust_the_hooks(box: Sandbox) -> None:
    project = box.project()
    config = Path(box.env["CODEX_HOME"]) / "config.toml"
    config.write_text(_config(MockResponses([])), encoding="utf-8")
    done = project.install("--harness", "codex", "--scope", "user", "--no-trust")
    assert "/hooks" in done.stdout
    status = project.hookchain("status")
    assert "Codex does not trust 6 hookchain hooks" in status.stderr, status.stderr
    project.install("--harness", "codex", "--scope", "user")
    status = project.hookchain("status")
    assert "does not trust" not in status.stderr, status.stderr


def test_observer_writes_an_episode_of_the_codex_turn(box: Sandbox) -> None:
    project = installed(box)
    run = run_codex(box, project, [Call("echo hi"), Say("Done.")], "say hi")
    box.side.host_pid()  # the host answered; episodes are written at turn end
    assert episodes(project.path), run.explain()


def test_observer_names_the_harness_of_each_episode(box: Sandbox) -> None:
    project = installed(box)
    run_codex(box, project, [Call("echo hi"), Say("Done.")], "say hi")
    found = episodes(project.path)
    assert found
    assert all('"harness": "codex"' in json.dumps(episode) for episode in found)


def test_project_scope_guards_once_codex_trusts_the_project(box: Sandbox) -> None:
    project = box.project()
    config = Path(box.env["CODEX_HOME"]) / "config.toml"
    config.write_text(_config(MockResponses([])), encoding="utf-8")
    done = project.install("--harness", "codex", "--scope", "project")
    # Codex reads a project's .codex/config.toml only in a project it trusts: install says how.
    assert "trust_level" in done.stderr, done.stdout + done.stderr
    assert "does not load hookchain's hooks" in project.hookchain("status").stderr
    with config.open("a", encoding="utf-8") as handle:
        handle.write(f'\n[projects."{project.path}"]\ntrust_level = "trusted"\n')
    done = project.install("--harness", "codex", "--scope", "project")
    assert "trust of 6 hookchain hooks recorded" in done.stdout, done.stdout + done.stderr
    assert "does not" not in project.hookchain("status").stderr
    target = box.outside / "stolen.txt"
    run = run_codex(box, project, [Call(f"echo stolen > {target}"), Say("Done.")], "write it")
    assert not target.exists(), run.explain()
    assert "write-guard" in run.outputs()[0], run.explain()


def test_project_install_puts_write_guards_policy_into_codexs_own_sandbox(box: Sandbox) -> None:
    project = box.project()
    config = Path(box.env["CODEX_HOME"]) / "config.toml"
    config.write_text(
        _config(MockResponses([])) + f'\n[projects."{project.path}"]\ntrust_level = "trusted"\n',
        encoding="utf-8",
    )
    done = project.install("--harness", "codex", "--scope", "project")
    assert "wrote write-guard's settings" in done.stdout, done.stdout + done.stderr
    assert "trust of 6 hookchain hooks recorded" in done.stdout, done.stdout + done.stderr
    assert "under Codex: Codex's sandbox" in project.hookchain("status").stdout
    target = box.outside / "stolen.txt"
    script = [Call(f"echo stolen > {target}"), Call("echo kept > inside.txt"), Say("Done.")]
    # No --dangerously-bypass-approvals-and-sandbox: the sandbox of the project's config runs.
    argv = [
        str(box.root / "bin" / "codex"),
        "exec", "--json", "--skip-git-repo-check", "-C", str(project.path), "write them",
    ]  # fmt: skip
    with MockResponses(script, max_requests=40, max_seconds=RUN_TIMEOUT_S + 20) as api:
        text = config.read_text(encoding="utf-8")
        config.write_text(re.sub(r'base_url = "[^"]*"', f'base_url = "{api.url}"', text))
        done = run_jailed(box.root, argv, box.env, project.path, RUN_TIMEOUT_S)
        outputs = api.outputs()
    assert not target.exists(), done.stderr[-1500:]
    assert (project.path / "inside.txt").read_text() == "kept\n", outputs
    # What Codex ran the turn with, as it recorded it: write-guard's roots, /tmp excluded.
    rollouts = list(Path(box.env["CODEX_HOME"]).glob("sessions/**/rollout-*.jsonl"))
    contexts = [
        json.loads(line)["payload"]
        for path in rollouts
        for line in path.read_text(encoding="utf-8").splitlines()
        if '"turn_context"' in line
    ]
    assert contexts, done.stderr[-1500:]
    policy = contexts[-1]["sandbox_policy"]
    assert policy["type"] == "workspace-write" and policy["exclude_slash_tmp"] is True
    written = tomllib.loads((project.path / ".codex" / "config.toml").read_text(encoding="utf-8"))
    roots = written["sandbox_workspace_write"]["writable_roots"]
    assert str(project.path) in roots  # Codex records the workspace apart, not as a root
    assert policy["writable_roots"] == [root for root in roots if root != str(project.path)]
