"""Recognises a successful TaskStop answer and words the refusal-watch toasts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

TASK_STOP_TOOL = "TaskStop"


@dataclass(frozen=True, slots=True)
class StoppedTask:
    """The task a successful TaskStop stopped."""

    task_id: str
    task_type: str


def stopped_task(output: object, *, is_error: object, denied: bool) -> StoppedTask | None:
    """The stopped task when the core's answer is a TaskStop output record, else None.

    The record must be a mapping with string `message`, `task_id` and `task_type`, with `command`
    absent or a string; a denial or an `is_error` other than False (or absent) is no success.
    """
    if denied or is_error is not False:
        return None
    if not isinstance(output, Mapping):
        return None
    try:
        message = output.get("message")
        task_id = output.get("task_id")
        task_type = output.get("task_type")
        command_present = "command" in output
        command = output.get("command")
        inner_error = output.get("is_error", False)
    except Exception:
        return None
    if not (isinstance(message, str) and isinstance(task_id, str) and isinstance(task_type, str)):
        return None
    if command_present and not isinstance(command, str):
        return None
    if inner_error is not False:
        return None
    return StoppedTask(task_id=task_id, task_type=task_type)


def safe_text(value: object, *, fallback: str = "?") -> str:
    """Text for a toast or status from a field of any type; a value that cannot print is `?`."""
    if isinstance(value, str):
        return value
    if value is None:
        return fallback
    try:
        return str(value)
    except Exception:
        return fallback


def agent_label(agent_id: object) -> str:
    return "main loop" if agent_id is None else f"agent {safe_text(agent_id)}"


def refusal_toast(turn_id: object, agent_id: object, *, source: str) -> str:
    """Toast and transcript text of a refusal; `source` says which event recognised it."""
    return (
        f"Refusal: the model's reply was stopped by the service's filter "
        f"({agent_label(agent_id)}, turn {safe_text(turn_id)}, seen at {source})."
    )


def task_stop_toast(task: StoppedTask, agent_id: object) -> str:
    return (
        f"Task {task.task_id} ({task.task_type}) was stopped by the {agent_label(agent_id)} "
        "within 30 minutes of a refusal."
    )


def status_text(*, count: int, last_hhmm: str, model: object) -> str:
    noun = "refusal" if count == 1 else "refusals"
    shown_model = safe_text(model, fallback="model ?")
    return f"{count} {noun} this session · last {last_hhmm} · {shown_model}"
