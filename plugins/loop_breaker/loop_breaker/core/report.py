"""The `/loop-breaker` reply: current loops, the timeline and the counts, as plain text."""

from __future__ import annotations

from .policy import STAT_FIELDS
from .session import LoopBreakerCore

TIMELINE_SHOWN = 15


def _stage(nudged: bool, escalated: bool, armed: bool, ignored: bool) -> str:
    if ignored:
        return "ignored"
    if armed:
        return "stop armed"
    if escalated:
        return "escalated"
    return "nudged" if nudged else "watching"


def render(core: LoopBreakerCore, stored: object) -> str:
    """Everything the person may want to see, counts from the store included; no call content."""
    policy = core.policy
    lines = [f"loop-breaker: {'paused' if policy.paused else 'on'}, {core.observed} calls observed"]
    lines.append("")
    lines.append("Current loops:")
    if not policy.signatures:
        lines.append("  none")
    for state in policy.signatures.values():
        stage = _stage(state.nudged, state.escalated, state.stop_armed, state.ignored)
        lines.append(
            f"  [{state.loop_id}] {state.detector} x{state.count} ({stage}): {state.label}"
            f"\n      signature {state.signature}"
        )
    lines.append("")
    lines.append("Timeline:")
    if not policy.timeline:
        lines.append("  nothing yet")
    for entry in policy.timeline[-TIMELINE_SHOWN:]:
        lines.append(
            f"  {entry.at_ms} [{entry.loop_id}] {entry.kind} {entry.detector} x{entry.count}"
        )
    lines.append("")
    lines.append("Counts (all sessions, this one's unflushed included):")
    totals = stored.get("totals") if isinstance(stored, dict) else None
    for name in STAT_FIELDS:
        earlier = totals.get(name, 0) if isinstance(totals, dict) else 0
        count = (earlier if isinstance(earlier, int) else 0) + policy.pending.totals.get(name, 0)
        lines.append(f"  {name.replace('_', ' ')}: {count}")
    if policy.stored_ignores or core.config.ignore:
        lines.append("")
        lines.append("Ignored: " + ", ".join((*core.config.ignore, *policy.stored_ignores)))
    lines.append("")
    lines.append("Commands: /loop-breaker off | on | ignore <signature or text>")
    return "\n".join(lines)
