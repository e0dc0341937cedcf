"""Policy tests: budget, overlap, one nudge per streak, resolution, pause, ignores, eviction."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from loop_breaker.core import MAIN_LOOP, CoreConfig, LoopBreakerCore
from loop_breaker.core.codec import dump, load
from loop_breaker.core.messages import NUDGE_CAP, TAG
from loop_breaker.core.policy import Stats, merge_stats
from loop_breaker.core.window import MAX_LOOPS, WINDOW_CAP

Factory = Callable[..., Any]

FAIL = "FAIL test_x\nAssertionError: boom"


def _three_failures(s: Any, command: str, loop: str = "main") -> None:
    for _ in range(3):
        s.bash(command, "error", f"{FAIL} in {command}", loop=loop)


def test_at_most_two_nudges_per_turn_and_the_budget_resets_at_turn_end(session: Factory) -> None:
    s = session()
    _three_failures(s, "make a")
    _three_failures(s, "make b")
    _three_failures(s, "make c")
    assert len(s.kinds()) == 2
    s.core.turn_end()
    _three_failures(s, "make d")
    assert len(s.kinds()) == 3


def test_a_loop_over_budget_still_escalates(session: Factory) -> None:
    s = session(CoreConfig(max_nudges_per_turn=0))
    for _ in range(5):
        s.bash("make", "error", FAIL)
    assert s.kinds() == []
    assert s.kinds("escalate") == ["repeat-failure"]


def test_one_nudge_per_streak(session: Factory) -> None:
    s = session()
    for _ in range(4):
        s.bash("make", "error", FAIL)
    assert s.kinds() == ["repeat-failure"]


def test_a_new_streak_after_resolution_can_nudge_again(session: Factory) -> None:
    s = session()
    _three_failures(s, "make")
    s.bash("make", "ok", "built")
    s.core.turn_end()
    _three_failures(s, "make")
    assert s.kinds() == ["repeat-failure", "repeat-failure"]


def test_resolution_is_recorded_and_counted(session: Factory) -> None:
    s = session()
    _three_failures(s, "make")
    resolved = s.bash("make", "ok", "built")
    assert [(d.kind, d.detector) for d in resolved] == [("resolve", "repeat-failure")]
    assert s.core.policy.pending.totals["nudges_resolved"] == 1
    assert [entry.kind for entry in s.core.policy.timeline] == ["detected", "nudge", "resolved"]


def test_the_person_speaking_resolves_and_resets_the_windows(session: Factory) -> None:
    s = session()
    _three_failures(s, "make")
    decisions = s.core.person_prompt(10**9)
    assert [d.kind for d in decisions] == ["resolve"]
    assert s.core.windows.loops[MAIN_LOOP].records == []
    s.bash("make", "error", FAIL)
    s.bash("make", "error", FAIL)
    assert s.kinds() == ["repeat-failure"]


def test_overlap_an_earlier_nudge_covering_the_evidence_keeps_a_signal_silent(
    session: Factory,
) -> None:
    s = session()
    error = "ImportError: circular import in app/models.py"
    for _ in range(3):
        s.bash("pytest -q", "error", error)
    assert s.kinds() == ["repeat-failure"]
    # Mostly the same failures seen again under another name: same-error, covered > half.
    s.bash("python -m pytest", "error", error)
    assert s.kinds() == ["repeat-failure"]
    assert "same-error:" in "".join(s.core.policy.signatures)


def test_overlap_half_or_less_covered_still_nudges(session: Factory) -> None:
    s = session()
    error = "ImportError: circular import in app/models.py"
    for _ in range(3):
        s.bash("pytest -q", "error", error)
    for command in ("python -m pytest", "tox -e py", "nox", "make test"):
        s.bash(command, "error", error)
    assert s.kinds() == ["repeat-failure", "same-error"]


def test_pause_keeps_quiet_and_resume_speaks_again(session: Factory) -> None:
    s = session()
    s.core.policy.paused = True
    _three_failures(s, "make")
    assert s.kinds() == []
    s.core.policy.paused = False
    s.bash("make", "error", f"{FAIL} in make")
    assert s.kinds() == ["repeat-failure"]


def test_ignore_list_from_options_and_from_the_store(session: Factory) -> None:
    s = session(CoreConfig(ignore=("make a",)))
    _three_failures(s, "make a")
    assert s.kinds() == []
    assert s.core.policy.pending.totals["ignores"] == 1
    signature = next(iter(s.core.policy.signatures))
    s.core.policy.set_ignores([])
    _three_failures(s, "make b")
    assert s.kinds() == ["repeat-failure"]
    other = [key for key in s.core.policy.signatures if key != signature]
    s.core.person_prompt(10**9)
    s.core.policy.set_ignores(other)
    _three_failures(s, "make b")
    assert s.kinds() == ["repeat-failure"]


def test_subagent_eviction_keeps_main_and_loops_in_trouble(session: Factory) -> None:
    s = session()
    s.bash("ls", loop=MAIN_LOOP)
    s.bash("make", "error", FAIL, loop="agent-troubled")
    for index in range(MAX_LOOPS + 3):
        s.bash("ls", loop=f"agent-{index}")
    loops = s.core.windows.loops
    assert len(loops) == MAX_LOOPS
    assert MAIN_LOOP in loops and "agent-troubled" in loops
    assert f"agent-{MAX_LOOPS + 2}" in loops and "agent-0" not in loops


def test_window_is_capped(session: Factory) -> None:
    s = session()
    for index in range(WINDOW_CAP + 20):
        s.call("Read", {"file_path": f"/f{index}"})
    assert len(s.core.windows.loops[MAIN_LOOP].records) == WINDOW_CAP


def test_only_the_tail_of_an_output_is_looked_at(session: Factory) -> None:
    s = session()
    for index in range(3):
        s.bash("make", "error", f"Error: cause {index}\n" + "." * 5000 + "\nError 2")
    assert s.kinds() == ["repeat-failure"]
    assert "cause" not in s.decisions[-1].text


def test_auto_stop_arms_two_recurrences_after_escalation() -> None:
    core = LoopBreakerCore(CoreConfig(auto_stop=True))
    for index in range(6):
        core.observe(_failure(index))
        assert core.check_stop(MAIN_LOOP, "Bash", {"command": "make"}, index) is None
    core.observe(_failure(6))
    stop = core.check_stop(MAIN_LOOP, "Bash", {"command": "make"}, 7)
    assert stop is not None and stop.kind == "stop" and stop.text.startswith(TAG)
    assert core.check_stop(MAIN_LOOP, "Bash", {"command": "make clean"}, 8) is None
    assert core.policy.pending.totals["stops"] == 1


def test_without_auto_stop_nothing_is_ever_refused() -> None:
    core = LoopBreakerCore()
    for index in range(12):
        core.observe(_failure(index))
    assert core.check_stop(MAIN_LOOP, "Bash", {"command": "make"}, 99) is None


def test_nudges_are_tagged_and_capped(session: Factory) -> None:
    s = session()
    for _ in range(3):
        s.bash("make " + "x" * 500, "error", "Error: " + "y" * 2000)
    nudge = s.decisions[-1]
    assert nudge.text.startswith(TAG) and len(nudge.text) <= NUDGE_CAP


def test_snippets_are_redacted(session: Factory) -> None:
    s = session()
    for _ in range(3):
        s.bash("deploy", "error", "Error: auth failed with token=sk-abcdef1234567890")
    assert "sk-abcdef" not in s.decisions[-1].text


def test_state_round_trips_through_json(session: Factory) -> None:
    s = session()
    _three_failures(s, "make")
    s.edit("/src/a.py", "a", "b")
    s.core.turn_complete(MAIN_LOOP, "t1", True, "blocked", 5)
    data = json.loads(json.dumps(dump(s.core)))
    again = load(data, s.core.config)
    assert dump(again) == data
    # The reloaded core still knows the open streak: the success resolves it.
    assert [d.kind for d in again.observe(_ok())] == ["resolve"]


def test_damaged_state_is_refused() -> None:
    with pytest.raises(ValueError):
        load({"version": 1, "loops": {"main": {"records": [[1, 2]]}}}, CoreConfig())
    with pytest.raises(ValueError):
        load("junk", CoreConfig())


def test_stats_merge_adds_and_ignores_damaged_fields() -> None:
    delta = Stats()
    delta.bump("nudges", "poll")
    merged = merge_stats(
        {"totals": {"nudges": 4, "stops": "many"}, "by_detector": {"poll": {"nudges": -1}}}, delta
    )
    assert merged["totals"] == {
        "loops_detected": 0,
        "nudges": 5,
        "nudges_resolved": 0,
        "escalations": 0,
        "stops": 0,
        "ignores": 0,
    }
    by_detector = merged["by_detector"]
    assert isinstance(by_detector, dict) and by_detector["poll"]["nudges"] == 1


def _failure(index: int) -> Any:
    from loop_breaker.core import Observation

    return Observation(f"f{index}", MAIN_LOOP, "Bash", {"command": "make"}, "error", FAIL, index)


def _ok() -> Any:
    from loop_breaker.core import Observation

    return Observation("ok1", MAIN_LOOP, "Bash", {"command": "make"}, "ok", "built", 99)


def test_a_dump_is_a_snapshot_that_later_changes_do_not_touch(session: Factory) -> None:
    s = session()
    _three_failures(s, "make")
    s.edit("/src/a.py", "a", "b")
    before = dump(s.core)
    frozen = json.dumps(before)
    s.edit("/src/a.py", "b", "a")
    _three_failures(s, "make test")
    s.core.turn_complete(MAIN_LOOP, "t1", True, "blocked", 5)
    assert json.dumps(before) == frozen
    assert dump(s.core) != before
