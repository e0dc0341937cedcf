"""What the other harnesses' end-to-end suites (Agent SDK, Codex CLI, Gemini CLI) share with
this one: skipping off CI only, the pinned npm installs, the bwrap check."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import harness
import kit
import pytest


def skip_or_fail(reason: str) -> None:
    """Off CI a machine without the tools skips the suite; under CI that is an error."""
    if harness.under_ci():
        pytest.fail(f"{reason} (CI=true: this suite must run, not skip)")
    pytest.skip(reason)


def require_bwrap(name: str) -> None:
    if shutil.which("bwrap") is None:
        skip_or_fail(f"the suite runs {name} under bubblewrap (apt-get install bubblewrap)")
    jailed = subprocess.run(
        [*kit.jail(Path("/tmp")), "true"], capture_output=True, text=True, timeout=30, check=False
    )
    if jailed.returncode != 0:
        pytest.fail(f"bubblewrap cannot make a sandbox here: {jailed.stderr.strip()}")


def npm_harness(package: harness.Package) -> Path:
    """The pinned harness's entry file, npm-installed here when `make` has not done it yet."""
    entry = package.path()
    if not entry.exists():
        missing = harness.missing_tools()
        if missing:
            skip_or_fail(f"the {package.name} suite needs {' and '.join(missing)}")
        try:
            entry = harness.install_package(package)
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            pytest.fail(str(error))
    require_bwrap(package.name)
    return entry


def run_jailed(
    root: Path, argv: Sequence[str], env: Mapping[str, str], cwd: Path, timeout: float
) -> subprocess.CompletedProcess[str]:
    """`argv` under bwrap with only `root` writable; stdin from /dev/null (harnesses in print
    mode wait for more input otherwise), bounded by `timeout`."""
    return subprocess.run(
        [*kit.jail(root), *argv],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(env),
        cwd=cwd,
        check=False,
    )


def episodes(workspace: Path) -> list[dict[str, Any]]:
    """The observer's episode records under `workspace` (its default data folder), in order."""
    folder = workspace / ".hookchain" / "observer"
    records = [
        json.loads(line)
        for path in sorted(folder.glob("episodes-*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    return [record for record in records if record.get("record") == "episode"]
