"""The TaskStop window: opening marks, out-of-order clock answers and entry decisions."""

from __future__ import annotations

from refusal_watch._window import WINDOW_MS, RefusalWindow, Verdict

T0 = 1_700_000_000_000.0


def settled_at(moment: float | None) -> RefusalWindow:
    window = RefusalWindow()
    window.settle(window.begin(T0), moment)
    return window


def test_edge_of_the_window() -> None:
    """T16: a stop 1,799,999 ms after the refusal is inside; at 1,800,000 ms it is not."""
    window = settled_at(T0)
    assert window.decide_entry(T0 + 1_799_999).verdict is Verdict.INSIDE
    decision = window.decide_entry(T0 + 1_800_000)
    assert decision.verdict is Verdict.ASK_CLOCK
    assert decision.settle(T0 + 1_799_999) is True
    assert decision.settle(T0 + 1_800_000) is False


def test_mark_is_removed_when_window_is_set() -> None:
    """T75: once the refusal's time settles, its opening mark no longer holds a stop inside."""
    window = RefusalWindow()
    seq = window.begin(T0)
    assert window.decide_entry(T0 + 1000).verdict is Verdict.INSIDE
    window.settle(seq, T0 - 2 * WINDOW_MS)
    decision = window.decide_entry(T0 + 1000)
    assert decision.verdict is Verdict.ASK_CLOCK
    assert decision.settle(T0 + 1000) is False


def test_removing_one_mark_keeps_another() -> None:
    """T85: settling one refusal leaves the mark of another still waiting for its clock."""
    window = RefusalWindow()
    first = window.begin(T0)
    window.begin(T0 + 10)
    window.settle(first, T0 - WINDOW_MS * 2)
    assert window.active_marks(T0 + 20) == 1
    assert window.decide_entry(T0 + 20).verdict is Verdict.INSIDE


def test_mark_lives_until_a_full_window_of_local_time() -> None:
    """T86: an opening mark is alive at 1,799,999 ms of local time and gone at 1,800,000."""
    window = RefusalWindow()
    window.begin(T0)
    assert window.active_marks(T0 + 1_799_999) == 1
    assert window.active_marks(T0 + 1_800_000) == 0
    assert window.decide_entry(T0 + 1_800_000).verdict is Verdict.OUTSIDE


def test_local_clock_set_back_less_than_a_window_keeps_mark() -> None:
    """T100: local time moved back by less than a window does not remove the mark."""
    window = RefusalWindow()
    window.begin(T0)
    assert window.decide_entry(T0 - 1000).verdict is Verdict.INSIDE
    assert window.active_marks(T0) == 1


def test_local_clock_set_back_more_than_a_window_keeps_mark() -> None:
    """T115: local time moved back by more than a window does not remove the mark either."""
    window = RefusalWindow()
    window.begin(T0)
    assert window.decide_entry(T0 - 3 * WINDOW_MS).verdict is Verdict.INSIDE
    assert window.active_marks(T0) == 1


def test_unknown_entry_time_keeps_marks_and_counts_inside() -> None:
    """T106: a stop with no local entry time sweeps no marks and counts as inside."""
    window = RefusalWindow()
    window.begin(T0)
    assert window.decide_entry(None).verdict is Verdict.INSIDE
    assert window.active_marks(None) == 1
    settled = settled_at(T0)
    decision = settled.decide_entry(None)
    assert decision.verdict is Verdict.ASK_CLOCK
    assert decision.inside_if_clock_fails


def test_no_local_time_and_no_clock_is_inside() -> None:
    """T109: with neither local time nor a clock answer the stop counts as inside."""
    assert settled_at(T0).decide_entry(None).settle(None) is True


def test_local_time_inside_decides_without_clock() -> None:
    """T110: a local entry time inside the window decides at once; no clock is asked."""
    decision = settled_at(T0).decide_entry(T0 + 60_000)
    assert decision.verdict is Verdict.INSIDE
    assert decision.settle(T0 + 10 * WINDOW_MS) is True


def test_no_window_negative_local_time_is_outside() -> None:
    """T111: without a window even a negative local time gives no stop toast and asks no clock."""
    assert RefusalWindow().decide_entry(-5.0).verdict is Verdict.OUTSIDE


def test_unknown_refusal_time_opens_window_without_end() -> None:
    """T112: a refusal whose time stayed unknown opens a window with no end; stops are inside."""
    window = settled_at(None)
    assert window.has_window
    assert window.window_end is None
    assert window.decide_entry(T0 + 100 * WINDOW_MS).verdict is Verdict.INSIDE


def test_window_ending_at_zero_is_a_window() -> None:
    """T113: a window whose end is 0 is still a window."""
    window = settled_at(-float(WINDOW_MS))
    assert window.window_end == 0
    assert window.decide_entry(-1.0).verdict is Verdict.INSIDE
    assert window.decide_entry(0.0).verdict is Verdict.ASK_CLOCK


def test_mark_of_unknown_moment_survives_known_entry_times() -> None:
    """T114: a mark set at an unknown local time is not swept by any known entry time."""
    window = RefusalWindow()
    window.begin(None)
    assert window.active_marks(T0 + 50 * WINDOW_MS) == 1


def test_late_answer_of_older_refusal_does_not_move_window_back() -> None:
    """T119: an older refusal whose clock answered later keeps the newest time as "last"."""
    window = RefusalWindow()
    older, newer = window.begin(T0), window.begin(T0 + 1)
    window.settle(newer, T0 + 60_000)
    window.settle(older, T0)
    assert window.newest_time == T0 + 60_000
    assert window.window_end == T0 + 60_000 + WINDOW_MS


def test_newer_refusal_with_smaller_time_keeps_older_window() -> None:
    """T126: a refusal begun later but stamped earlier does not close the older one's window."""
    window = RefusalWindow()
    older, newer = window.begin(T0), window.begin(T0)
    window.settle(older, T0 + 60_000)
    window.settle(newer, T0)
    assert window.window_end == T0 + 60_000 + WINDOW_MS


def test_unknown_time_keeps_window_open_until_a_later_known_refusal() -> None:
    """T127: an unknown-time refusal keeps the end unknown until a later one settles known."""
    window = RefusalWindow()
    earlier = window.begin(T0)
    unknown = window.begin(T0)
    window.settle(unknown, None)
    window.settle(earlier, T0)
    assert window.window_end is None
    later = window.begin(T0)
    window.settle(later, T0 + 5)
    assert window.window_end == T0 + 5 + WINDOW_MS


def test_zero_and_negative_refusal_times_are_known() -> None:
    """T147: refusal times 0 and below are known: the window ends 30 minutes after them."""
    assert settled_at(0.0).window_end == WINDOW_MS
    assert settled_at(-10.0).window_end == WINDOW_MS - 10


def test_clock_decides_when_local_time_is_past_the_end() -> None:
    """T97: the clock's answer at entry decides; a failed clock falls back to the local verdict."""
    decision = settled_at(T0).decide_entry(T0 + WINDOW_MS + 1)
    assert decision.settle(T0 + 10) is True
    assert decision.settle(None) is False
