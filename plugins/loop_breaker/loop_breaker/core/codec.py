"""The core's state as JSON-compatible data and back; unreadable data starts a fresh core."""

from __future__ import annotations

from dataclasses import fields
from operator import attrgetter
from typing import Any

from .fingerprint import Fingerprint
from .policy import SignatureState, Stats, TimelineEntry
from .session import LoopBreakerCore, StopStreak
from .types import CallRecord, CoreConfig, ResolveWhen
from .window import FileHistory, LoopWindow

FORMAT_VERSION = 1
# A record is stored as its values in this order, `fingerprint` as the two it stands for (at
# the places they had as fields of their own). Reading them computes any fingerprint still
# pending.
_RECORD_VALUES = (
    *("outcome_fp" if f.name == "fingerprint" else f.name for f in fields(CallRecord)),
    "cycle_key",
)
_FINGERPRINT_AT = _RECORD_VALUES.index("outcome_fp")
_record_values = attrgetter(*_RECORD_VALUES)
_timeline_values = attrgetter(*(f.name for f in fields(TimelineEntry)))


def _resolve_out(when: ResolveWhen) -> list[Any]:
    return [when.kind, sorted(when.keys), when.value, when.epoch]


def _resolve_in(data: list[Any]) -> ResolveWhen:
    kind, keys, value, epoch = data
    return ResolveWhen(kind, frozenset(str(key) for key in keys), str(value), int(epoch))


def dump(core: LoopBreakerCore) -> dict[str, Any]:
    """Everything the core remembers, as plain JSON values (no call content beyond labels).

    The result shares nothing mutable with the core, so it stays a snapshot.
    """
    policy = core.policy
    return {
        "version": FORMAT_VERSION,
        "observed": core.observed,
        "loops": {
            loop_id: {
                "records": [list(_record_values(record)) for record in window.records],
                "files": {
                    name: [list(history.states), [list(move) for move in history.moves]]
                    for name, history in window.file_states.items()
                },
                "epoch": window.epoch,
                "seq": window.seq,
                "touched": window.touched_ms,
            }
            for loop_id, window in core.windows.loops.items()
        },
        "signatures": [
            [
                state.signature,
                state.detector,
                state.loop_id,
                state.label,
                state.count,
                _resolve_out(state.resolve),
                sorted(state.action_keys),
                state.nudged,
                state.escalated,
                state.stop_armed,
                state.ignored,
                state.last_ms,
            ]
            for state in policy.signatures.values()
        ],
        "nudges_this_turn": policy.nudges_this_turn,
        "covered": {loop_id: dict(ids) for loop_id, ids in policy.covered.items()},
        "paused": policy.paused,
        "stored_ignores": list(policy.stored_ignores),
        "pending": policy.pending.as_dict(),
        "timeline": [list(_timeline_values(entry)) for entry in policy.timeline],
        "stop_streaks": {
            loop_id: [streak.feedback_fp, list(streak.evidence), streak.snippet]
            for loop_id, streak in core.stop_streaks.items()
        },
    }


def load(data: object, config: CoreConfig) -> LoopBreakerCore:
    """A core rebuilt from `dump` output; raises ValueError on anything else."""
    if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION:
        raise ValueError("not a loop-breaker state of this version")
    try:
        return _load(data, config)
    except (KeyError, TypeError, ValueError, IndexError) as error:
        raise ValueError("damaged loop-breaker state") from error


def _load(data: dict[str, Any], config: CoreConfig) -> LoopBreakerCore:
    core = LoopBreakerCore(config)
    core.observed = int(data["observed"])
    for loop_id, raw in data["loops"].items():
        records = []
        for values in raw["records"]:
            if len(values) != len(_RECORD_VALUES):
                raise ValueError("record shape")
            # A copy: the stored data is left as it was.
            arguments = list(values[:-1])
            arguments[_FINGERPRINT_AT] = Fingerprint(values[_FINGERPRINT_AT], values[-1])
            records.append(CallRecord(*arguments))
        files = {
            name: FileHistory(list(states), [tuple(move) for move in moves])
            for name, (states, moves) in raw["files"].items()
        }
        core.windows.loops[str(loop_id)] = LoopWindow(
            records, files, int(raw["epoch"]), int(raw["seq"]), int(raw["touched"])
        )
    policy = core.policy
    for values in data["signatures"]:
        (
            signature,
            detector,
            loop_id,
            label,
            count,
            resolve,
            keys,
            nudged,
            escalated,
            armed,
            ignored,
            last_ms,
        ) = values
        policy.signatures[signature] = SignatureState(
            signature,
            detector,
            loop_id,
            label,
            int(count),
            _resolve_in(resolve),
            frozenset(keys),
            bool(nudged),
            bool(escalated),
            bool(armed),
            bool(ignored),
            int(last_ms),
        )
    policy.nudges_this_turn = int(data["nudges_this_turn"])
    policy.covered = {
        str(loop_id): {str(k): str(v) for k, v in ids.items()}
        for loop_id, ids in data["covered"].items()
    }
    policy.paused = bool(data["paused"])
    policy.stored_ignores = tuple(str(entry) for entry in data["stored_ignores"])
    pending = data["pending"]
    policy.pending = Stats(
        {str(k): int(v) for k, v in pending["totals"].items()},
        {str(d): {str(k): int(v) for k, v in c.items()} for d, c in pending["by_detector"].items()},
    )
    policy.timeline = [TimelineEntry(*values) for values in data["timeline"]]
    core.stop_streaks = {
        str(loop_id): StopStreak(str(fp), [str(e) for e in evidence], str(snippet))
        for loop_id, (fp, evidence, snippet) in data["stop_streaks"].items()
    }
    return core
