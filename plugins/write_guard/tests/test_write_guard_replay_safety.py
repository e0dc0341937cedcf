"""A replay (a sandboxed host) never touches the folders a recorded session worked in.

Live, a shell command in a dirty work tree is preceded by a snapshot: a ref under
`refs/write-guard/snapshots/`. A replay runs nothing it is handed, so it must record nothing
either; the same call through a live host does record one (the test could fail).
Everything runs in a throwaway repository under `tmp_path`, with HOME there too.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import pytest
from framework import Host, SessionStart, ToolCall, ToolResult

import write_guard


def _git(repo: Path, home: Path, *args: str) -> str:
    env = {**os.environ, "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "TMPDIR": str(home)}
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _dirty_repo(tmp_path: Path) -> tuple[Path, Path]:
    home, repo = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    repo.mkdir()
    _git(repo, home, "init", "-q")
    _git(repo, home, "config", "user.email", "t@example.invalid")
    _git(repo, home, "config", "user.name", "t")
    (repo / "work.txt").write_text("one\n")
    _git(repo, home, "add", "work.txt")
    _git(repo, home, "commit", "-q", "-m", "one")
    (repo / "work.txt").write_text("two\n")  # uncommitted: what a snapshot would keep
    return repo, home


def _run(repo: Path, home: Path, sandbox: Path | None) -> None:
    async def main() -> None:
        async with Host(
            plugins=[write_guard],
            entry_points=False,
            store="memory://",
            sandbox=sandbox,
            env={"HOME": str(home), "CLAUDE_PROJECT_DIR": str(repo)},
        ) as host:
            await host.dispatch(SessionStart(session_id="s", cwd=str(repo)))
            call = ToolCall(
                session_id="s", tool_use_id="t1", tool="Bash", input={"command": "echo x > f"}
            )

            async def ran(event: ToolCall) -> ToolResult:
                return ToolResult(output="")

            await host.dispatch(call, ran)

    anyio.run(main)


@pytest.mark.parametrize("sandboxed", [True, False])
def test_only_a_live_host_snapshots_the_work_tree(tmp_path: Path, sandboxed: bool) -> None:
    repo, home = _dirty_repo(tmp_path)
    _run(repo, home, tmp_path / "replay-box" if sandboxed else None)
    refs = _git(repo, home, "for-each-ref", "refs/write-guard")
    if sandboxed:
        assert refs == ""
    else:
        assert "refs/write-guard/snapshots/" in refs
