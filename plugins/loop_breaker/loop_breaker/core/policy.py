"""The policy ladder: nudge, escalate, opt-in stop; budget, overlap, resolution, ignores, stats."""

from __future__ import annotations

from dataclasses import dataclass, field

from .messages import alert_text, nudge_text, stop_text
from .types import (
    CallRecord,
    CoreConfig,
    Decision,
    DecisionKind,
    DetectorId,
    ResolveWhen,
    Signal,
)

TIMELINE_CAP = 100
COVERED_CAP = 60
MAX_SIGNATURES = 200
IGNORE_ENTRY_MAX_LENGTH = 200
STAT_FIELDS = ("loops_detected", "nudges", "nudges_resolved", "escalations", "stops", "ignores")


@dataclass(slots=True)
class Stats:
    """Counts only, never content: totals and the same counts per detector."""

    totals: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STAT_FIELDS, 0))
    by_detector: dict[str, dict[str, int]] = field(default_factory=dict)

    def bump(self, name: str, detector: str) -> None:
        self.totals[name] = self.totals.get(name, 0) + 1
        per = self.by_detector.setdefault(detector, {})
        per[name] = per.get(name, 0) + 1

    def add(self, other: Stats) -> None:
        for name, count in other.totals.items():
            self.totals[name] = self.totals.get(name, 0) + count
        for detector, counts in other.by_detector.items():
            per = self.by_detector.setdefault(detector, {})
            for name, count in counts.items():
                per[name] = per.get(name, 0) + count

    def is_empty(self) -> bool:
        return not any(self.totals.values())

    def as_dict(self) -> dict[str, object]:
        return {
            "totals": dict(self.totals),
            "by_detector": {k: dict(v) for k, v in self.by_detector.items()},
        }


def merge_stats(stored: object, delta: Stats) -> dict[str, object]:
    """`stored` (whatever the store held; damaged fields count as 0) plus `delta`."""
    base = stored if isinstance(stored, dict) else {}
    raw_totals = base.get("totals")
    totals = {name: _count(raw_totals, name) + delta.totals.get(name, 0) for name in STAT_FIELDS}
    raw_by = base.get("by_detector")
    by_detector: dict[str, dict[str, int]] = {}
    detectors = set(raw_by) if isinstance(raw_by, dict) else set()
    for detector in detectors | set(delta.by_detector):
        previous = raw_by.get(detector) if isinstance(raw_by, dict) else None
        added = delta.by_detector.get(detector, {})
        by_detector[str(detector)] = {
            name: _count(previous, name) + added.get(name, 0) for name in STAT_FIELDS
        }
    return {"totals": totals, "by_detector": by_detector}


def _count(raw: object, name: str) -> int:
    value = raw.get(name) if isinstance(raw, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    at_ms: int
    loop_id: str
    detector: str
    kind: str
    label: str
    count: int
    signature: str


@dataclass(slots=True)
class SignatureState:
    """Where one signature stands on the ladder during its current streak."""

    signature: str
    detector: DetectorId
    loop_id: str
    label: str
    count: int
    resolve: ResolveWhen
    action_keys: frozenset[str]
    nudged: bool = False
    escalated: bool = False
    stop_armed: bool = False
    ignored: bool = False
    last_ms: int = 0


def resolves(when: ResolveWhen, record: CallRecord) -> bool:
    """Whether `record` breaks the loop that `when` describes."""
    kind = when.kind
    if kind == "action-ok":
        return record.outcome == "ok" and record.action_key in when.keys
    if kind == "action-changes":
        return record.action_key in when.keys and (
            record.outcome == "ok" or (record.outcome == "error" and record.error_sig != when.value)
        )
    if kind == "moves-on":
        return record.outcome == "ok"
    if kind == "tool-ok":
        return record.outcome == "ok" and record.tool == when.value
    if kind == "output-changes":
        if 0 <= when.epoch != record.epoch:
            return True
        return record.action_key == when.value and (
            record.outcome != "ok" or record.outcome_fp not in when.keys
        )
    if kind == "file-new-state":
        return record.file == when.value and record.changed and not record.reverted
    if kind == "cycle-breaks":
        return record.cycle_key not in when.keys
    return False


class Policy:
    """Turns signals into decisions and remembers what it already said."""

    def __init__(self, config: CoreConfig) -> None:
        self.config = config
        self.signatures: dict[str, SignatureState] = {}
        self.nudges_this_turn = 0
        self.covered: dict[str, dict[str, str]] = {}
        self.paused = False
        self.stored_ignores: tuple[str, ...] = ()
        self.pending = Stats()
        self.timeline: list[TimelineEntry] = []

    # -- events ----------------------------------------------------------------------------------

    def on_record(self, loop_id: str, record: CallRecord) -> list[Decision]:
        """Resolves the signatures of this loop that the new call breaks."""
        if not self.signatures:
            return []
        broken = [
            state
            for state in self.signatures.values()
            if state.loop_id == loop_id and resolves(state.resolve, record)
        ]
        return [self._resolve(state, record.at_ms) for state in broken]

    def on_signal(self, signal: Signal, now_ms: int) -> list[Decision]:
        state = self.signatures.get(signal.signature)
        if state is None:
            state = self._start(signal, now_ms)
            if self._is_ignored(signal):
                state.ignored = True
                self.pending.bump("ignores", signal.detector)
                self._log(now_ms, state, "ignored")
                return [Decision("ignore", signal.detector, signal.signature, signal.loop_id)]
            self.pending.bump("loops_detected", signal.detector)
            self._log(now_ms, state, "detected")
        state.count = signal.count
        state.last_ms = now_ms
        if not signal.action_keys <= state.action_keys:
            state.action_keys = state.action_keys | signal.action_keys
        if state.ignored or self.paused:
            return []
        # One nudge per streak, within the per-turn budget; a skipped one waits for escalation.
        may_nudge = (
            not state.nudged
            and not state.escalated
            and self.nudges_this_turn < self.config.max_nudges_per_turn
        )
        may_escalate = signal.count >= signal.escalate_at and not state.escalated
        may_arm = self._ready_to_arm(state, signal)
        # A loop already on its last step (a streak recurring after its alert) has nothing left
        # to say: its overlap with other loops' evidence need not be counted.
        if not (may_nudge or may_escalate or may_arm) or self._is_shadowed(signal):
            return []
        decisions: list[Decision] = []
        if may_nudge:
            self.nudges_this_turn += 1
            state.nudged = True
            decisions.append(
                self._act("nudge", "nudges", nudge_text(signal), state, signal, now_ms)
            )
        if may_escalate:
            state.escalated = True
            decisions.append(
                self._act("escalate", "escalations", alert_text(signal), state, signal, now_ms)
            )
        # Asked again: an escalation made just now may be the one the stop was waiting for.
        if self._ready_to_arm(state, signal):
            state.stop_armed = True
            self._log(now_ms, state, "stop-armed")
        return decisions

    def _act(
        self,
        kind: DecisionKind,
        stat: str,
        text: str,
        state: SignatureState,
        signal: Signal,
        now_ms: int,
    ) -> Decision:
        """A nudge or an escalation: its evidence covered, counted, logged, and decided."""
        self._cover(signal)
        self.pending.bump(stat, signal.detector)
        self._log(now_ms, state, kind)
        return Decision(kind, signal.detector, signal.signature, signal.loop_id, text, signal.count)

    def stop_for(self, loop_id: str, action_key: str, now_ms: int) -> Decision | None:
        """A refusal when this call repeats a loop armed for auto-stop, else None."""
        if self.paused:
            return None
        for state in self.signatures.values():
            if state.stop_armed and state.loop_id == loop_id and action_key in state.action_keys:
                self.pending.bump("stops", state.detector)
                self._log(now_ms, state, "stop")
                return Decision(
                    "stop",
                    state.detector,
                    state.signature,
                    loop_id,
                    stop_text(state.label, state.detector, state.count),
                    state.count,
                )
        return None

    def resolve_where(self, loop_id: str, kind: str, now_ms: int) -> list[Decision]:
        if not self.signatures:
            return []
        broken = [
            state
            for state in self.signatures.values()
            if state.loop_id == loop_id and state.resolve.kind == kind
        ]
        return [self._resolve(state, now_ms) for state in broken]

    def on_person_prompt(self, now_ms: int) -> list[Decision]:
        """The person spoke: every streak is over, and a nudged one counts as resolved."""
        decisions = [self._resolve(state, now_ms) for state in list(self.signatures.values())]
        self.covered.clear()
        self.nudges_this_turn = 0
        return decisions

    def on_turn_end(self) -> None:
        self.nudges_this_turn = 0

    def drop_loops(self, loop_ids: list[str]) -> None:
        for loop_id in loop_ids:
            self.covered.pop(loop_id, None)
        self.signatures = {
            key: state for key, state in self.signatures.items() if state.loop_id not in loop_ids
        }

    def set_ignores(self, entries: list[str]) -> None:
        self.stored_ignores = tuple(entries)

    # -- helpers ---------------------------------------------------------------------------------

    def _ready_to_arm(self, state: SignatureState, signal: Signal) -> bool:
        return (
            self.config.auto_stop
            and state.escalated
            and not state.stop_armed
            and signal.count >= signal.escalate_at + self.config.stop_after_escalation
        )

    def _start(self, signal: Signal, now_ms: int) -> SignatureState:
        if len(self.signatures) >= MAX_SIGNATURES:
            oldest = min(self.signatures.values(), key=lambda state: state.last_ms)
            del self.signatures[oldest.signature]
        state = SignatureState(
            signature=signal.signature,
            detector=signal.detector,
            loop_id=signal.loop_id,
            label=signal.label,
            count=signal.count,
            resolve=signal.resolve,
            action_keys=signal.action_keys,
            last_ms=now_ms,
        )
        self.signatures[signal.signature] = state
        return state

    def _resolve(self, state: SignatureState, now_ms: int) -> Decision:
        del self.signatures[state.signature]
        if state.nudged or state.escalated:
            self.pending.bump("nudges_resolved", state.detector)
        self._log(now_ms, state, "resolved")
        return Decision(
            "resolve",
            state.detector,
            state.signature,
            state.loop_id,
            count=state.count,
            text="nudged" if state.nudged else "",
        )

    def _is_ignored(self, signal: Signal) -> bool:
        entries = self.config.ignore + self.stored_ignores
        if not entries:
            return False
        haystacks = (signal.signature.lower(), signal.label.lower())
        return any(entry.lower() in haystack for entry in entries for haystack in haystacks)

    def _is_shadowed(self, signal: Signal) -> bool:
        covered = self.covered.get(signal.loop_id)
        if not covered:
            return False
        by_others = sum(
            1
            for call_id in signal.evidence
            if covered.get(call_id, signal.signature) != signal.signature
        )
        return by_others * 2 > len(signal.evidence)

    def _cover(self, signal: Signal) -> None:
        covered = self.covered.setdefault(signal.loop_id, {})
        for call_id in signal.evidence:
            covered.setdefault(call_id, signal.signature)
        while len(covered) > COVERED_CAP:
            del covered[next(iter(covered))]

    def _log(self, now_ms: int, state: SignatureState, kind: str) -> None:
        self.timeline.append(
            TimelineEntry(
                now_ms,
                state.loop_id,
                state.detector,
                kind,
                state.label,
                state.count,
                state.signature,
            )
        )
        if len(self.timeline) > TIMELINE_CAP:
            del self.timeline[0]

    def take_pending(self) -> Stats:
        taken, self.pending = self.pending, Stats()
        return taken
