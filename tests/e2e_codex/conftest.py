"""Fixtures of the suite that runs the real Codex CLI (npm-installed once into .cache/)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# This folder (the mock) and the Claude Code e2e kit (sandbox, bwrap, npm installs).
sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parents[1] / "e2e_claude_code")]

import harness  # noqa: E402
import kit  # noqa: E402


def skip_or_fail(reason: str) -> None:
    """Off CI a machine without the tools skips the suite; under CI that is an error."""
    if harness.under_ci():
        pytest.fail(f"{reason} (CI=true: this suite must run, not skip)")
    pytest.skip(reason)


def harness_binary(package: harness.Package) -> Path:
    entry = package.path()
    if not entry.exists():
        missing = harness.missing_tools()
        if missing:
            skip_or_fail(f"the {package.name} suite needs {' and '.join(missing)}")
        try:
            entry = harness.install_package(package)
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            pytest.fail(str(error))
    if shutil.which("bwrap") is None:
        skip_or_fail("the suite runs the harness under bubblewrap (apt-get install bubblewrap)")
    return entry


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    return harness_binary(harness.CODEX)


@pytest.fixture
def box(codex_bin: Path) -> Iterator[kit.Sandbox]:
    with kit.sandbox(codex_bin) as sandbox:
        (sandbox.root / "bin" / "codex").symlink_to(codex_bin)
        codex_home = Path(sandbox.env["HOME"]) / ".codex"
        codex_home.mkdir()
        sandbox.env["CODEX_HOME"] = str(codex_home)
        sandbox.env["MOCK_API_KEY"] = "sk-mock"
        yield sandbox
