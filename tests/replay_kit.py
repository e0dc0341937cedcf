"""`hookchain replay` run as a real process in a folder of its own, for the replay tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HOOKCHAIN = [sys.executable, "-c", "from framework.cli.app import main; main()"]


def environment(home: Path, **extra: str) -> dict[str, str]:
    """This environment with `home` as HOME, data folder and config, and no Claude Code folder
    or hookchain setting of the caller's leaking in."""
    inherited = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("HOOKCHAIN_") and k != "CLAUDE_CONFIG_DIR"
    }
    (home / "hookchain.toml").write_text("[hookchain]\n", encoding="utf-8")
    return {
        **inherited,
        "HOME": str(home),
        "HOOKCHAIN_DATA_DIR": str(home / "data"),
        "HOOKCHAIN_CONFIG": str(home / "hookchain.toml"),
        "COLUMNS": "240",
        **extra,
    }


def replay(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HOOKCHAIN, "replay", *args],
        capture_output=True,
        text=True,
        env=environment(home, **env),
        cwd=home,
        timeout=120,
        check=False,
    )


def replay_json(home: Path, *args: str, **env: str) -> dict[str, Any]:
    done = replay(home, "--json", *args, **env)
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data
