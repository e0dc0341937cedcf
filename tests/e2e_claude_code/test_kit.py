"""The kit's own guarantees, without Claude Code: nothing it started outlives the sandbox."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import kit


def test_a_process_left_running_in_the_sandbox_is_killed_with_it() -> None:
    with kit.sandbox(Path(sys.executable)) as box:
        left = subprocess.Popen(["sleep", "60"], cwd=box.root)
        root = box.root
    assert left.wait(timeout=5) == -9
    assert not root.exists()


def test_the_sandbox_environment_is_private_and_points_at_the_sandbox() -> None:
    with kit.sandbox(Path(sys.executable)) as box:
        env = box.env
        for name in ("HOME", "TMPDIR", "HOOKCHAIN_RUNTIME_DIR", "HOOKCHAIN_DATA_DIR"):
            assert env[name].startswith(f"{box.root}/"), name
        assert env["IS_SANDBOX"] == "1"
        assert "ANTHROPIC_BASE_URL" not in env  # set per run, to that run's mock
