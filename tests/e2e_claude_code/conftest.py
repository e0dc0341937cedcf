"""Fixtures of the suite that runs the real Claude Code binary (installed once per session)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The kit and the mock sit beside the tests (importlib mode puts no folder on sys.path).
sys.path.insert(0, str(Path(__file__).parent))

import harness
import kit


def _skip_or_fail(reason: str) -> None:
    """Off CI a machine without the tools skips the suite; under CI that is an error."""
    if harness.under_ci():
        pytest.fail(f"{reason} (CI=true: this suite must run, not skip)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The Claude Code binary (npm-installed here when `make` has not done it yet)."""
    binary = harness.claude_binary()
    if not binary.exists():
        if os.environ.get(harness.CLAUDE_ENV):
            pytest.fail(f"{harness.CLAUDE_ENV}={binary} does not exist; unset it or fix the path")
        missing = harness.missing_tools()
        if missing:
            _skip_or_fail(
                f"the Claude Code end-to-end suite needs {' and '.join(missing)} "
                "(apt-get install nodejs npm)"
            )
        try:
            binary = harness.install()
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            pytest.fail(str(error))
    if shutil.which("bwrap") is None:
        _skip_or_fail("the suite runs Claude Code under bubblewrap (apt-get install bubblewrap)")
    jailed = subprocess.run(
        [*kit.jail(Path("/tmp")), "true"], capture_output=True, text=True, timeout=30, check=False
    )
    if jailed.returncode != 0:
        pytest.fail(f"bubblewrap cannot make a sandbox here: {jailed.stderr.strip()}")
    return binary


@pytest.fixture
def box(claude_bin: Path) -> Iterator[kit.Sandbox]:
    """A fresh sandbox (HOME, TMPDIR, runtime dir, data dir, outside folder); host stopped after."""
    with kit.sandbox(claude_bin) as sandbox:
        yield sandbox
