"""Fixtures of the suite that runs the real Codex CLI (npm-installed once into .cache/)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# This folder (the mock) and the Claude Code e2e kit (sandbox, bwrap, npm installs).
sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parents[1] / "e2e_claude_code")]

import harness  # noqa: E402
import kit  # noqa: E402
import suites  # noqa: E402


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    return suites.npm_harness(harness.CODEX)


@pytest.fixture
def box(codex_bin: Path) -> Iterator[kit.Sandbox]:
    with kit.sandbox(codex_bin) as sandbox:
        (sandbox.root / "bin" / "codex").symlink_to(codex_bin)
        codex_home = Path(sandbox.env["HOME"]) / ".codex"
        codex_home.mkdir()
        sandbox.env["CODEX_HOME"] = str(codex_home)
        sandbox.env["MOCK_API_KEY"] = "sk-mock"
        yield sandbox
