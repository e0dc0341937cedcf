"""Wording of nudges for the model and alerts for the person, capped and tagged."""

from __future__ import annotations

from .normalize import redact
from .types import MAIN_LOOP, Signal

TAG = "[loop-breaker]"
NUDGE_CAP = 400
ALERT_CAP = 200


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _quoted(text: str) -> str:
    return f"`{redact(text)}`" if text else "the same call"


def nudge_text(signal: Signal) -> str:
    """The note appended to the tool result: what repeated and what to try instead."""
    n = signal.count
    label = _quoted(signal.label)
    snippet = f" ({redact(signal.snippet)})" if signal.snippet else ""
    body = {
        "env-blocker": f"The same environment problem came back {n} times: {redact(signal.label)}"
        f"{snippet}. Retrying cannot fix it; use another tool or command, or ask the person "
        "to fix the environment.",
        "denied-retry": f"{label} was refused {n} times. A refused call does not go through "
        "by retrying; take another approach or ask the person why it is refused.",
        "repeat-failure": f"{label} has failed {n} times in a row{snippet}. Stop re-running it: "
        "read the whole error, check your assumptions and change the approach.",
        "same-error": f"{n} different attempts ended in the same error{snippet}. The changes are "
        "not reaching the cause; find where this error comes from before trying again.",
        "edit-thrash": f"{label}: the file went back to an earlier version {n} times, so edits "
        "are undoing each other. Settle on one approach and reason it through before editing.",
        "cycle": f"The same calls keep repeating with the same results ({redact(signal.label)}), "
        f"{n} rounds so far. Break the cycle: try something different.",
        "idle-repeat": f"{label} returned the same result {n} times with nothing changed in "
        "between. Running it again tells you nothing new; act on the result you have.",
        "poll": f"{label} was checked {n} times without its output changing. Wait longer "
        "between checks or do other work meanwhile.",
        "stop-block": f"Stopping was blocked {n} times with the same feedback{snippet}. A Stop "
        "hook looks broken; do not keep working around it: give a short summary and tell the "
        "person.",
    }[signal.detector]
    if signal.hint == "precondition":
        body = (
            f"{label} failed the harness's own check on the same file {n} times{snippet}. Read "
            "the file again and copy the exact text to replace before the next edit."
        )
    # The detector's name lets the person reading the transcript tell which check spoke.
    return _cap(f"{TAG} {signal.detector}: {body}", NUDGE_CAP)


def alert_text(signal: Signal) -> str:
    """The toast and transcript line for the person when a loop escalates."""
    where = "main loop" if signal.loop_id == MAIN_LOOP else f"subagent {signal.loop_id}"
    return _cap(
        f"{TAG} {where} is looping: {signal.detector} on {redact(signal.label)} ({signal.count}x). "
        f"Ignore with /loop-breaker ignore {signal.signature}",
        ALERT_CAP,
    )


def stop_text(signal_label: str, detector: str, count: int) -> str:
    """The reason given to the model when a repetition is refused (opt-in auto-stop)."""
    return _cap(
        f"{TAG} Not run: this repeats a loop ({detector} on {redact(signal_label)}, {count}x) that "
        "already escalated to the person. Do something different or ask the person.",
        NUDGE_CAP,
    )
