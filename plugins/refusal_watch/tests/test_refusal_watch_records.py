"""Log record keys and fields, and recognising a successful TaskStop answer."""

from __future__ import annotations

import math

import pytest
from refusal_watch._records import append_key, record_fields, record_key
from refusal_watch._taskstop import StoppedTask, stopped_task
from refusal_watch._times import finite_ms, hhmm

GOOD = {"message": "stopped", "task_id": "b1", "task_type": "local_bash"}


def test_fields_are_stored_as_text_without_empty_ones() -> None:
    """T134: every field of a record is stored as text and empty ones are left out."""
    record = record_fields(1234.0, {"count": 3, "turn": "t1", "agent": None, "model": ""})
    assert record == {"time": "1234", "count": "3", "turn": "t1"}


def test_unknown_time_is_null() -> None:
    """T149: a record whose time is unknown stores time null and its key says null."""
    assert record_fields(None, {})["time"] is None
    assert record_key(None, "1", "step").startswith("log:null:1:")


def test_non_finite_step_number_stored_as_text() -> None:
    """T151: a non-finite step number is kept as text."""
    assert record_fields(1.0, {"step": math.inf})["step"] == "inf"


def test_order_keeps_newest() -> None:
    """T47: past the limit the oldest keys fall off, in insertion order."""
    order: list[str] = []
    evicted_all: list[str] = []
    for index in range(105):
        order, evicted = append_key(order, f"k{index}", 100)
        evicted_all += evicted
    assert order[0] == "k5"
    assert len(order) == 100
    assert evicted_all == [f"k{index}" for index in range(5)]


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, "5", None, True, [1]])
def test_non_numbers_are_not_times(value: object) -> None:
    """T54: NaN, Infinity and non-numbers from a clock are not times."""
    assert finite_ms(value) is None
    assert hhmm(finite_ms(value)) == "--:--"


def test_success_record() -> None:
    """T43: only a TaskStop output record without denial or error counts as success."""
    assert stopped_task(GOOD, is_error=False, denied=False) == StoppedTask("b1", "local_bash")
    assert stopped_task(GOOD, is_error=False, denied=True) is None
    for output in ([GOOD], {}, {"message": "m"}, None, "stopped"):
        assert stopped_task(output, is_error=False, denied=False) is None


def test_command_absent_or_string() -> None:
    """T66: command may be absent or a string; a number or None is no success."""
    assert stopped_task({**GOOD, "command": "sleep 9"}, is_error=False, denied=False)
    assert stopped_task({**GOOD, "command": 3}, is_error=False, denied=False) is None
    assert stopped_task({**GOOD, "command": None}, is_error=False, denied=False) is None


@pytest.mark.parametrize("missing", ["message", "task_id", "task_type"])
def test_each_string_field_checked(missing: str) -> None:
    """T67: each string field is checked on its own: absent or a list gives no success."""
    without = {k: v for k, v in GOOD.items() if k != missing}
    assert stopped_task(without, is_error=False, denied=False) is None
    assert stopped_task({**GOOD, missing: ["x"]}, is_error=False, denied=False) is None


@pytest.mark.parametrize("flag", [1, 0, None, "", True])
def test_is_error_must_be_false(flag: object) -> None:
    """T68: an is_error other than False (0, None, "", 1) gives no success; False does."""
    assert stopped_task(GOOD, is_error=flag, denied=False) is None
    assert stopped_task({**GOOD, "is_error": flag}, is_error=False, denied=False) is None
    assert stopped_task(GOOD, is_error=False, denied=False) is not None
