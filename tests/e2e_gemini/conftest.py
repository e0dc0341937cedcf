"""Fixtures of the suite that runs the real Gemini CLI (npm-installed once into .cache/)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parents[1] / "e2e_claude_code")]

import harness  # noqa: E402
import kit  # noqa: E402
import suites  # noqa: E402

BASE_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "general": {"disableAutoUpdate": True},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    # Gemini CLI's own loop detection ends a run of identical calls before hookchain's
    # loop-breaker would speak: off, so the suite sees what hookchain adds.
    "model": {"disableLoopDetection": True},
}
"""The person's own settings before hookchain is installed: API-key auth, no updates."""


@pytest.fixture(scope="session")
def gemini_js() -> Path:
    return suites.npm_harness(harness.GEMINI)


@pytest.fixture
def box(gemini_js: Path) -> Iterator[kit.Sandbox]:
    with kit.sandbox(gemini_js) as sandbox:
        settings = Path(sandbox.env["HOME"]) / ".gemini" / "settings.json"
        settings.parent.mkdir()
        settings.write_text(json.dumps(BASE_SETTINGS, indent=2), encoding="utf-8")
        sandbox.env["GEMINI_API_KEY"] = "mock-key"
        yield sandbox
