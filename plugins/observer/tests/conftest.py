"""Shared fixtures of the observer tests: the anyio backend and a small fixture log."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from observer._log_file import append_record
from observer._records import (
    DecisionProvenance,
    Environment,
    Episode,
    ObserverErrorMarker,
    OutcomeLine,
    PromptSignal,
    TaskSize,
    iso_timestamp,
)

# The repository's CLI helpers (`cli_kit`: the real `hookchain` script in a subprocess) sit in
# its tests folder; importlib mode puts no test folder on the path.
sys.path.insert(0, str(Path(__file__).parents[2].parent / "tests"))

DAY_MS = 24 * 60 * 60 * 1000
START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _episode(index: int, session: str, node: str, ms: int, directed: bool, tools: int) -> Episode:
    return Episode(
        id=f"ep-{index:03d}",
        ts=iso_timestamp(ms),
        session_id=session,
        turn_id=f"turn-{index}",
        node=node,
        decision_provenance=DecisionProvenance(
            provenance="user_directed_method" if directed else "autonomous",
            counterfactual="planner" if directed else None,
            source="routing_tag" if directed else "none",
        ),
        environment=Environment(
            session_turn=index + 1, harness="codex" if session == "s2" else "claude-code"
        ),
        task_size=TaskSize(tool_calls=tools, edits=tools // 2, files_touched=1, bucket="small"),
        prompt_signal=PromptSignal(length_bucket="short"),
    )


def sample_records() -> list[tuple[dict[str, Any], int]]:
    """(record, ms) pairs over two months: 6 episodes, 3 outcome lines, 1 error marker."""
    plan: list[tuple[str, str, int, bool, int]] = [
        ("s1", "discovery-interview", 0, True, 3),
        ("s1", "builder", 1, False, 10),
        ("s1", "discovery-interview", 2, True, 1),
        ("s2", "none", 2, False, 0),
        ("s2", "builder", 33, False, 4),
        ("s2", "reviewer", 34, False, 2),
    ]
    pairs: list[tuple[dict[str, Any], int]] = []
    for index, (session, node, day, directed, tools) in enumerate(plan):
        ms = START_MS + day * DAY_MS + index * 1000
        pairs.append(
            (_episode(index, session, node, ms, directed, tools).model_dump(mode="json"), ms)
        )
    later = START_MS + 40 * DAY_MS
    for episode_id, outcome in (
        ("ep-000", "failure"),
        ("ep-000", "success"),
        ("ep-001", "abandoned"),
    ):
        line = OutcomeLine(episode_id=episode_id, outcome=outcome, ts=iso_timestamp(later))
        pairs.append((line.model_dump(mode="json"), later))
    marker = ObserverErrorMarker(
        ts=iso_timestamp(START_MS + DAY_MS), stage="episode", error_type="KeyError"
    )
    pairs.append((marker.model_dump(mode="json"), START_MS + DAY_MS))
    return pairs


@pytest.fixture
def fixture_log(tmp_path: Path) -> Path:
    data_dir = tmp_path / "observer"
    for record, ms in sample_records():
        append_record(data_dir, record, ms)
    return data_dir
