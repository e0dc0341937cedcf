"""The permission mode of a call, recorded (replay) or sent (live): under Claude Code's checks
without its sandbox settings the line analysis decides, and its refusal says that is why; a
replay takes the set-up `hookchain install` makes, in every recorded mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from framework import Host, SessionStart, ToolCall, ToolResult
from wg_jail import BWRAP, Tree

import write_guard

pytestmark = pytest.mark.anyio
needs_bwrap = pytest.mark.skipif(BWRAP is None, reason="needs bubblewrap")

UNREAD = "uv run pytest -q"
"""Harmless, and unreadable to the line analysis (`uv` runs what the line does not show)."""
SESSION = "22222222-aaaa-bbbb-cccc-000000000002"


def _transcript(path: Path, cwd: str, mode: str | None) -> Path:
    """A recorded session: a prompt in `mode` (None: a transcript from before modes were
    recorded), then one Bash call and its result."""
    stamp = "2026-01-01T10:00:0{}.000Z".format
    common = {"sessionId": SESSION, "cwd": cwd, "version": "2.1.30", "isSidechain": False}
    prompt = {
        **common, "type": "user", "uuid": "u1", "parentUuid": None, "timestamp": stamp(1),
        "message": {"role": "user", "content": "run the tests"},
        **({"permissionMode": mode} if mode else {}),
    }  # fmt: skip
    use = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": UNREAD}}
    step = {
        **common, "type": "assistant", "uuid": "u2", "parentUuid": "u1", "timestamp": stamp(2),
        "message": {"id": "m1", "role": "assistant", "model": "claude-x", "content": [use],
                    "stop_reason": "tool_use"},
    }  # fmt: skip
    result = {
        **common, "type": "user", "uuid": "u3", "parentUuid": "u2", "timestamp": stamp(3),
        "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "1 passed"}]},
    }  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in (prompt, step, result)), "utf-8")
    return path


def _replayed_denials(tmp_path: Path, mode: str | None) -> list[str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    path = _transcript(tmp_path / f"{mode}.jsonl", str(tmp_path / "recorded-ws"), mode)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("HOOKCHAIN_")},
        "HOME": str(home), "HOOKCHAIN_STORE": "memory://",
        "HOOKCHAIN_DATA_DIR": str(home / "data"),
    }  # fmt: skip
    hookchain = Path(sys.executable).parent / "hookchain"
    done = subprocess.run(
        [str(hookchain), "replay", str(path), "--plugins", "write-guard", "--json"],
        capture_output=True, text=True, env=env, cwd=home, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["summary"]["events"] > 0
    return [a["text"] for a in report["actions"] if a["kind"] == "deny"]


@needs_bwrap
@pytest.mark.parametrize("mode", ["default", "acceptEdits", "bypassPermissions", None])
def test_a_replay_takes_the_installed_set_up_in_every_recorded_mode(
    tmp_path: Path, mode: str | None
) -> None:
    # The replay cannot read whether the recorded workspace had Claude Code's sandbox settings
    # (it reads none of its files): it takes what `hookchain install` sets up, which confines
    # in every mode, instead of refusing what the line analysis alone would.
    assert _replayed_denials(tmp_path, mode) == []


async def _live(tree: Tree, mode: str | None) -> ToolResult:
    env = {"HOME": str(tree.root / "home"), "CLAUDE_PROJECT_DIR": str(tree.ws)}
    async with Host(
        plugins=[write_guard], entry_points=False, store="memory://", env=env,
        options={"write-guard": {"extra_writable_roots": [str(tree.root / "tmp")]}},
    ) as host:  # fmt: skip
        await host.dispatch(SessionStart(session_id="s", cwd=str(tree.ws)))
        call = ToolCall(
            session_id="s", tool_use_id="t1", tool="Bash", input={"command": UNREAD},
            permission_mode=mode,
        )  # fmt: skip
        return (await host.dispatch(call, terminal=lambda e: _ran())).result


async def _ran() -> ToolResult:
    return ToolResult(output="ran")


@needs_bwrap
@pytest.mark.parametrize("mode", ["default", "acceptEdits"])
async def test_live_under_permission_checks_the_refusal_names_them_not_a_missing_sandbox(
    tree: Tree, mode: str
) -> None:
    result = await _live(tree, mode)
    assert result.denial is not None, result
    reason = result.denial.reason
    assert "no-sandbox" in reason and f"checks its permission rules in this session ({mode}" in (
        reason
    )
    # bubblewrap works here: the refusal must not say that no OS sandbox is available.
    assert "no OS sandbox is available" not in reason
