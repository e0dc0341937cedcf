"""Every denial write-guard makes on the shared real sessions, each explained as correct, and
the harmless calls the old guard denied (branch switches, `checkout -b`, quoted comments that
name a protected path) let through. Each file is replayed with its recorded machine's HOME, so
that `~` (and the plan folder under it) means what it meant there."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from wg_corpus import LABELLED, SHARED, TRANSCRIPTS, bash_commands
from write_guard._control import control_denial
from write_guard._decide import git_hold, preset_denial, protected_denial
from write_guard._paths import PathContext
from write_guard._policy import Policy
from write_guard._surface import extract_surface

FOLDERS = (TRANSCRIPTS, LABELLED)
_HOME = re.compile(r'"cwd":"(/(?:Users|home)/[^/"]+)')
_RULE = re.compile(r"denied this \(([a-z-]+)\)")

# (file prefix, rule, what the denial names) → how many, and why the denial is right.
EXPECTED: dict[tuple[str, str, str], tuple[int, str]] = {
    ("10_", "outside-roots", "/mnt/c/python/test-import-session"): (
        2, "a sibling project outside the workspace",
    ),
    ("10_", "outside-roots", "/mnt/c/python/cctrace_test"): (
        1, "a sibling project outside the workspace",
    ),
    ("10_", "outside-roots", "/.claude/projects/"): (
        15, "Claude Code's own session store (forging transcripts there): not the workspace",
    ),
    ("10_", "outside-roots", "/.claude/history.jsonl"): (
        1, "Claude Code's prompt history: not the workspace",
    ),
    ("14_", "outside-roots", "claude-history-worktrees/"): (
        1, "a second work tree beside the project: writable only once the person adds it",
    ),
    ("14_", "git-gate", "commit --amend"): (1, "rewrites the last commit"),
    ("15_", "outside-roots", "claude-history-worktrees/"): (
        1, "a second work tree beside the project (subagent)",
    ),
    ("17_", "outside-roots", "claude-history-worktrees/"): (
        29, "a second work tree beside the project (subagent)",
    ),
    ("19_", "protected-path", "/.claude/settings.json"): (
        3, "the harness's settings, where hooks (this guard) are installed",
    ),
    ("21_", "outside-roots", "/.claude/settings.json"): (1, "the harness's settings"),
    ("21_", "outside-roots", "/.claude/projects/"): (1, "Claude Code's memory of another project"),
    ("23_", "outside-roots", "/.claude/settings.json"): (1, "the harness's settings"),
    ("r12_", "git-gate", "git restore"): (3, "discards uncommitted changes of the paths named"),
    ("r14_", "git-gate", "branch -D"): (1, "deletes a branch with its unmerged commits"),
    ("r14_", "git-gate", "git restore"): (1, "discards uncommitted changes of logs/"),
    ("r14_", "git-gate", "stash drop"): (1, "drops stashed work"),
    ("r14_", "git-gate", "git checkout logs/"): (1, "discards uncommitted changes of logs/"),
    ("r14_", "malformed-input", "MultiEdit without a usable file_path"): (
        1, "the call has no file path (Claude Code rejects it too)",
    ),
}  # fmt: skip
# Calls of these shapes are harmless: none may be denied.
HARMLESS = re.compile(
    r"^(?:git checkout (?:-b )?[\w.-]+(?:/[\w.-]+)*(?: && git (?:pull|checkout)\b.*)?$|gh issue)"
)


def _files() -> list[Path]:
    if not all(folder.is_dir() for folder in FOLDERS):
        pytest.fail(f"the shared corpus is missing: expected it at {SHARED} (beside the clone)")
    return sorted(path for folder in FOLDERS for path in folder.glob("*.jsonl"))


def _home(path: Path) -> str:
    text = path.read_text(encoding="utf-8", errors="replace")
    found = _HOME.search(text)
    if found is None and "/home/jim/" in text:
        return "/home/jim"  # the recorded cwd is under /mnt; the plan files under this HOME
    return found.group(1) if found else "/nonexistent-home"


@pytest.fixture(scope="module")
def denials() -> list[tuple[str, str, str]]:
    by_home: dict[str, list[Path]] = {}
    for path in _files():
        by_home.setdefault(_home(path), []).append(path)
    hookchain = Path(sys.executable).parent / "hookchain"
    found: list[tuple[str, str, str]] = []
    for home, paths in by_home.items():
        for path in paths:
            env = {**os.environ, "HOME": home, "HOOKCHAIN_STORE": "memory://"}
            done = subprocess.run(
                [str(hookchain), "replay", str(path), "--plugins", "write-guard", "--json"],
                capture_output=True, text=True, env=env, timeout=300, check=False,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr[-2000:]
            report = json.loads(done.stdout)
            assert report["summary"]["handler_failures"] == {}
            for action in report["actions"]:
                if action["by"] == "write-guard" and action["kind"] == "deny":
                    rule = _RULE.search(action["text"])
                    assert rule is not None, action["text"]
                    found.append((path.name, rule.group(1), action["text"]))
    return found


def test_every_denial_on_the_real_sessions_is_explained(
    denials: list[tuple[str, str, str]],
) -> None:
    counted: Counter[tuple[str, str, str]] = Counter()
    for name, rule, text in denials:
        keys = [k for k in EXPECTED if name.startswith(k[0]) and k[1] == rule and k[2] in text]
        assert keys, f"an unexplained denial in {name}: {text[:300]}"
        counted[keys[0]] += 1
    assert {key: count for key, count in counted.items()} == {
        key: count for key, (count, _why) in EXPECTED.items()
    }


def test_no_harmless_call_of_the_real_sessions_is_denied(tmp_path: Path) -> None:
    harmless = sorted({command for command in bash_commands(_files()) if HARMLESS.match(command)})
    assert len(harmless) >= 20, "the corpus should hold branch switches and gh issue calls"
    context = PathContext(cwd=str(tmp_path), home=str(tmp_path))
    policy = Policy(preset="workspace", workspace_root=str(tmp_path))
    for command in harmless:
        surface = extract_surface("Bash", {"command": command})
        assert control_denial(command, surface.programs) is None, command
        assert protected_denial(surface, context, policy, strict=False) is None, command
        assert preset_denial(surface, context, policy) is None, command
        assert git_hold(surface, lambda _name: False) is None, command
