"""Fixtures of the suite that drives the real Claude Agent SDK (its bundled CLI) in process."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The Claude Code e2e kit (the mock Messages API, bwrap) sits in a sibling folder.
sys.path.insert(0, str(Path(__file__).parents[1] / "e2e_claude_code"))

import suites


@pytest.fixture(scope="session")
def bundled_cli() -> Path:
    """The Claude Code CLI bundled in the `claude-agent-sdk` wheel (`make harnesses` adds it)."""
    try:
        import claude_agent_sdk
    except ImportError:
        suites.skip_or_fail(
            "the Agent SDK suite needs the agent-sdk extra: pip install -e '.[agent-sdk]' "
            "(make harnesses does it)"
        )
    cli = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    if not cli.exists():
        pytest.fail(f"claude-agent-sdk has no bundled CLI at {cli}")
    suites.require_bwrap("the SDK's CLI")
    return cli
