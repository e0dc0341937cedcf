"""Folding the log, the dashboard's data views, STATUS.md and the read counter."""

from __future__ import annotations

import stat
from pathlib import Path

from observer._dashboard_data import (
    aggregate_view,
    breakdown_view,
    dashboard_payload,
    feed_view,
    map_view,
)
from observer._log_file import read_log
from observer._log_view import FoldedLog, fold
from observer._read_counter import (
    WEEK_MS,
    ReadCounter,
    load_counter,
    note_read,
    reminder_due,
    unread_for_too_long,
)
from observer._status import STATUS_FILE, render_status, write_status


def _folded(data_dir: Path) -> FoldedLog:
    return fold(read_log(data_dir).records)


def test_fold_applies_the_newest_outcome(fixture_log: Path) -> None:
    log = _folded(fixture_log)
    outcomes = {episode.id: episode.outcome for episode in log.episodes}
    assert outcomes["ep-000"] == "success"
    assert outcomes["ep-001"] == "abandoned"
    assert outcomes["ep-002"] == "unknown"
    assert len(log.errors) == 1
    assert [episode.id for episode in log.episodes] == sorted(outcomes)


def test_fold_counts_invalid_records_and_ignores_duplicate_ids() -> None:
    good = {
        "record": "outcome",
        "schema_version": 2,
        "episode_id": "x",
        "outcome": "success",
        "ts": "t",
    }
    log = fold([{"record": "episode", "id": "only-an-id"}, {"record": "mystery"}, good])
    assert log.invalid_lines == 2
    assert log.episodes == ()


def test_map_view_counts_nodes_and_session_transitions(fixture_log: Path) -> None:
    view = map_view(_folded(fixture_log))
    counts = {node["id"]: node["episodes"] for node in view["nodes"]}
    assert counts == {"discovery-interview": 2, "builder": 2, "none": 1, "reviewer": 1}
    assert view["nodes"][0]["id"] == "builder"  # ties broken by name
    edges = {(edge["source"], edge["target"]): edge["count"] for edge in view["edges"]}
    assert edges == {
        ("discovery-interview", "builder"): 1,
        ("builder", "discovery-interview"): 1,
        ("none", "builder"): 1,
        ("builder", "reviewer"): 1,
    }


def test_breakdown_view_splits_provenance_and_outcomes(fixture_log: Path) -> None:
    rows = {row["node"]: row for row in breakdown_view(_folded(fixture_log))}
    interview = rows["discovery-interview"]
    assert interview["provenance"] == {"user_directed_method": 2, "autonomous": 0}
    assert interview["outcomes"] == {"success": 1, "failure": 0, "abandoned": 0, "unknown": 1}
    assert interview["counterfactuals"] == {"planner": 2}
    assert rows["builder"]["outcomes"]["abandoned"] == 1


def test_feed_view_is_newest_first_and_limited(fixture_log: Path) -> None:
    feed = feed_view(_folded(fixture_log), limit=3)
    assert [item["id"] for item in feed] == ["ep-005", "ep-004", "ep-003"]
    assert feed[0]["node"] == "reviewer"
    assert [item["harness"] for item in feed] == ["codex", "codex", "codex"]


def test_aggregate_view_by_month_and_day(fixture_log: Path) -> None:
    view = aggregate_view(_folded(fixture_log))
    months = {row["period"]: row for row in view["months"]}
    assert months["2026-01"]["episodes"] == 4
    assert months["2026-01"]["errors"] == 1
    assert months["2026-01"]["user_directed_share"] == 0.5
    assert months["2026-02"]["episodes"] == 2
    assert months["2026-02"]["mean_tool_calls"] == 3.0
    assert [row["period"] for row in view["days"]] == [
        "2026-01-01",
        "2026-01-02",
        "2026-01-03",
        "2026-02-03",
        "2026-02-04",
    ]
    assert view["totals"]["episodes"] == 6
    assert view["totals"]["outcomes"]["unknown"] == 4


def test_dashboard_payload_has_the_four_views(fixture_log: Path) -> None:
    payload = dashboard_payload(_folded(fixture_log))
    assert set(payload) == {"map", "breakdown", "feed", "aggregate", "invalid_lines"}


def test_render_status_tables(fixture_log: Path) -> None:
    text = render_status(_folded(fixture_log), now_ms=1_767_225_600_000)
    assert "Episodes: 6. Observer errors: 1." in text
    assert "| discovery-interview | 2 | 2 | 0 | 1 | 0 | 0 | 1 |" in text
    assert "| 2026-01 | 4 | 2 | 2 | 1 | 0 | 1 | 2 | 1 |" in text
    assert "| 2026-02 | 2 | 0 | 2 | 0 | 0 | 0 | 2 | 0 |" in text


def test_render_status_escapes_table_cells() -> None:
    from observer._log_view import EpisodeView

    view = EpisodeView(
        "e",
        "2026-01-01T00:00:00.000Z",
        "s",
        "t",
        "a|b",
        "autonomous",
        None,
        "unknown",
        0,
        0,
        0,
        "none",
        False,
    )
    text = render_status(FoldedLog(episodes=(view,), errors=(), invalid_lines=0), now_ms=0)
    assert "| a\\|b |" in text


def test_write_status_replaces_a_private_file(tmp_path: Path) -> None:
    write_status(tmp_path, "old\n")
    path = write_status(tmp_path, "new\n")
    assert path == tmp_path / STATUS_FILE
    assert path.read_text() == "new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [entry.name for entry in tmp_path.iterdir()] == [STATUS_FILE]


def test_read_counter_round_trip(tmp_path: Path) -> None:
    assert load_counter(tmp_path, 5) == ReadCounter(first_seen_ms=5)
    note_read(tmp_path, 10)
    counter = note_read(tmp_path, 20)
    assert counter == ReadCounter(reads=2, last_read_ms=20, first_seen_ms=10)
    assert load_counter(tmp_path, 99) == counter
    assert stat.S_IMODE((tmp_path / ".read-counter.json").stat().st_mode) == 0o600
    assert [entry.name for entry in tmp_path.iterdir()] == [".read-counter.json"]


def test_read_counter_survives_a_corrupt_file(tmp_path: Path) -> None:
    (tmp_path / ".read-counter.json").write_text("{not json")
    assert load_counter(tmp_path, 7) == ReadCounter(first_seen_ms=7)


def test_unread_after_54_weeks() -> None:
    never_read = ReadCounter(first_seen_ms=0)
    assert not unread_for_too_long(never_read, 54 * WEEK_MS - 1, 54)
    assert unread_for_too_long(never_read, 54 * WEEK_MS, 54)
    read = ReadCounter(reads=1, last_read_ms=10 * WEEK_MS, first_seen_ms=0)
    assert not unread_for_too_long(read, 60 * WEEK_MS, 54)
    assert unread_for_too_long(read, 64 * WEEK_MS, 54)


def test_reminder_is_not_repeated_within_a_day() -> None:
    counter = ReadCounter(first_seen_ms=0, last_reminded_ms=54 * WEEK_MS)
    assert not reminder_due(counter, 54 * WEEK_MS + 1000, 54)
    assert reminder_due(counter, 54 * WEEK_MS + WEEK_MS // 7, 54)
    assert not reminder_due(ReadCounter(first_seen_ms=0), WEEK_MS, 54)


def test_a_schema_v2_episode_without_a_harness_still_folds(fixture_log: Path) -> None:
    records = [r for r in read_log(fixture_log).records if r["record"] == "episode"]
    old = {**records[0], "schema_version": 2}
    old["environment"] = {k: v for k, v in old["environment"].items() if k != "harness"}
    new = {**records[1], "environment": {**records[1]["environment"], "harness": "gemini"}}
    log = fold([old, new])
    assert log.invalid_lines == 0
    assert [episode.harness for episode in log.episodes] == [None, "gemini"]
