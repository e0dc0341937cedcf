"""The per-turn dedup of turn.complete refusals."""

from __future__ import annotations

import random

from refusal_watch._dedup import TurnDedup, turn_key


def test_thousand_and_one_turns_without_limit() -> None:
    """T40: the dedup map has no limit: 1001 armed turns all stay armed."""
    dedup = TurnDedup()
    for index in range(1001):
        dedup.arm(turn_key(None, f"t{index}"), "m")
    assert len(dedup) == 1001
    assert dedup.armed(turn_key(None, "t0")) is not None


def test_agent_leaves_map_when_its_turns_are_gone() -> None:
    """T152: ending an agent's last armed turn removes the agent from the map."""
    dedup = TurnDedup()
    dedup.arm(turn_key("a1", "t1"), None)
    dedup.arm(turn_key(None, "t1"), None)
    assert dedup.disarm(turn_key("a1", "t1")) is not None
    assert dedup.agents() == frozenset({None})


def test_same_turn_id_other_agent_is_another_turn() -> None:
    """T131: the same turn id of another agent is a different turn."""
    dedup = TurnDedup()
    dedup.arm(turn_key("a1", "t1"), None)
    assert dedup.armed(turn_key(None, "t1")) is None
    assert dedup.armed(turn_key("a2", "t1")) is None
    assert dedup.armed(turn_key("a1", "t1")) is not None


def test_unreadable_ids_have_no_key() -> None:
    """T150: a step with no (or an unreadable) turn id arms nothing."""
    assert turn_key(None, "") is None
    assert turn_key(None, 3) is None
    assert turn_key(7, "t1") is None
    dedup = TurnDedup()
    dedup.arm(turn_key(None, ""), "m")
    assert len(dedup) == 0


def test_truth_is_whether_any_turn_is_armed() -> None:
    """A step's end skips the disarm when the dedup is false: that holds only if false means
    `len` is 0 (nothing a disarm could remove), over a random run of arms and disarms."""
    rng = random.Random(7)
    dedup = TurnDedup()
    keys = [turn_key(agent, f"t{turn}") for agent in (None, "a1", "a2") for turn in range(4)]
    for _ in range(2000):
        key = rng.choice(keys)
        if rng.random() < 0.45:
            dedup.arm(key, "m")
        else:
            dedup.disarm(key)
        assert bool(dedup) == (len(dedup) > 0)
        if not dedup:
            assert all(dedup.disarm(other) is None for other in keys)
