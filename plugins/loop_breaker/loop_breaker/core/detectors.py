"""The tool-call detectors, in precedence order: each looks at one loop's window after a call."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import attrgetter

from .normalize import PRECONDITION, TARGETED_TOOLS, digest
from .types import CallRecord, CoreConfig, DetectorId, ResolveWhen, Signal

Detector = Callable[[Sequence[CallRecord], str, CoreConfig], "Signal | None"]

CYCLE_PERIODS = (2, 3, 4)

_action_key_of = attrgetter("action_key")
_error_sig_of = attrgetter("error_sig")


def _fewer_than(
    nudge_at: int, value: str, read: attrgetter[str], records: Sequence[CallRecord]
) -> bool:
    """Whether fewer than `nudge_at` records carry `value`: a streak of them cannot reach the
    threshold then, and this count runs in C where walking the streak would not."""
    return list(map(read, records)).count(value) < nudge_at


def _signal(
    detector: DetectorId,
    key: str,
    loop_id: str,
    evidence: list[CallRecord],
    config: CoreConfig,
    resolve: ResolveWhen,
    label: str,
    snippet: str = "",
    hint: str = "",
) -> Signal | None:
    limits = config.limits(detector)
    if len(evidence) < limits.nudge_at:
        return None
    return Signal(
        detector=detector,
        signature=f"{detector}:{key}",
        loop_id=loop_id,
        count=len(evidence),
        nudge_at=limits.nudge_at,
        escalate_at=limits.escalate_at,
        evidence=tuple(record.call_id for record in evidence),
        label=label,
        resolve=resolve,
        snippet=snippet,
        action_keys=frozenset(record.action_key for record in evidence),
        hint=hint,
    )


def _hint(record: CallRecord) -> str:
    """Advice of its own for a failure that has one: a harness precondition of an edit."""
    return "precondition" if record.error_class == PRECONDITION else ""


TIMEOUT_AT_LEAST = 3
"""Timeouts are often meant (a server started with a bound, a slow download): two say nothing."""


def env_blocker(records: Sequence[CallRecord], loop_id: str, config: CoreConfig) -> Signal | None:
    """The same class of error the model cannot fix itself, recurring within a few calls: the
    same named token (`pnpm`, a module) or, with none named, the same command."""
    last = records[-1]
    if last.outcome != "error" or not last.error_class or last.error_class == PRECONDITION:
        return None
    recent = records[-config.env_blocker_span :]
    token = last.error_token
    matches = [
        record
        for record in recent
        if record.error_class == last.error_class
        and ((token and record.error_token == token) or record.action_key == last.action_key)
    ]
    if last.error_class == "timeout" and len(matches) < TIMEOUT_AT_LEAST:
        return None
    subject = token or last.label
    return _signal(
        "env-blocker",
        f"{last.error_class}:{token or last.action_key}",
        loop_id,
        matches,
        config,
        ResolveWhen("tool-ok", value=last.tool),
        f"{last.error_class} ({subject})",
        last.snippet,
    )


def _refusal(record: CallRecord) -> tuple[str, str]:
    """What was refused and by whom: the refusal's signature (its text with volatile parts
    stripped; a file tool's is about its file already) and, for other tools, the tool."""
    return record.error_sig, "" if record.tool in TARGETED_TOOLS else record.tool


def denied_retry(records: Sequence[CallRecord], loop_id: str, config: CoreConfig) -> Signal | None:
    """A call retried after it was refused (by the person, a permission rule or a hook): the
    same call again, or the same refusal again for the same tool or file asked another way."""
    last = records[-1]
    if last.outcome != "denied":
        return None
    label, snippet, resolve = (
        last.label,
        last.snippet,
        ResolveWhen("moves-on", value=last.action_key),
    )
    if not _fewer_than(
        config.limits("denied-retry").nudge_at, last.action_key, _action_key_of, records
    ):
        denials = [
            record
            for record in records
            if record.outcome == "denied" and record.action_key == last.action_key
        ]
        return _signal(
            "denied-retry", last.action_key, loop_id, denials, config, resolve, label, snippet
        )
    # Reworded retries (`rm -rf dist`, then `rm -r dist`, then `find … -delete`) refused the same
    # way: each differs, so it is the retries after the first refusal that count, one more than
    # for the same call again (two refusals of different calls may be two decisions).
    refusal = _refusal(last)
    same = [
        record for record in records if record.outcome == "denied" and _refusal(record) == refusal
    ]
    return _signal(
        "denied-retry",
        digest("\x00".join(refusal)),
        loop_id,
        same[1:],
        config,
        resolve,
        label,
        snippet,
        "reworded",
    )


def repeat_failure(
    records: Sequence[CallRecord], loop_id: str, config: CoreConfig
) -> Signal | None:
    """The same action failing again with an error it already gave since it last worked.

    A failure counts only when its error was already seen in the streak: the same error again
    (whether or not files changed in between: the change did not reach it), or an error coming
    back after others. A new error after an edit is progress, and a streak of only new errors
    is a fix-and-rerun cycle, never a loop.
    """
    last = records[-1]
    nudge_at = config.limits("repeat-failure").nudge_at
    if last.outcome != "error" or _fewer_than(nudge_at, last.action_key, _action_key_of, records):
        return None
    streak: list[CallRecord] = []
    for record in reversed(records):
        if record.action_key != last.action_key:
            continue
        if record.outcome != "error":
            break
        streak.append(record)
    if len(streak) < nudge_at:
        return None
    streak.reverse()
    errors = list(map(_error_sig_of, streak))
    repeated = [
        record for record, error in zip(streak, errors, strict=True) if errors.count(error) > 1
    ]
    if not repeated or repeated[-1] is not last:
        # The last run gave a new error: progress, whatever came before.
        return None
    return _signal(
        "repeat-failure",
        last.action_key,
        loop_id,
        repeated,
        config,
        ResolveWhen("action-ok", keys=frozenset({last.action_key})),
        last.label,
        last.snippet,
        _hint(last),
    )


def same_error(records: Sequence[CallRecord], loop_id: str, config: CoreConfig) -> Signal | None:
    """Different actions ending in the same error signature (volatile parts stripped)."""
    last = records[-1]
    if last.outcome != "error" or _fewer_than(
        config.limits("same-error").nudge_at, last.error_sig, _error_sig_of, records
    ):
        return None
    actions: set[str] = set()
    streak: list[CallRecord] = []
    # A failed precondition is fixed by reading the file and editing it: after a file changed,
    # the same lesson of the same file is a new one.
    precondition = last.error_class == PRECONDITION
    for record in reversed(records):
        if precondition and record.epoch != last.epoch:
            break
        if record.outcome == "error" and record.error_sig == last.error_sig:
            actions.add(record.action_key)
            streak.append(record)
        elif record.action_key in actions:
            break
    if len(actions) < 2:
        return None
    streak.reverse()
    return _signal(
        "same-error",
        last.error_sig,
        loop_id,
        streak,
        config,
        ResolveWhen("action-changes", keys=frozenset(actions), value=last.error_sig),
        # A precondition's text is the same for every file: the call says which one it was.
        last.label if precondition else last.snippet or last.label,
        last.snippet,
        _hint(last),
    )


def edit_thrash(records: Sequence[CallRecord], loop_id: str, config: CoreConfig) -> Signal | None:
    """A file's content returning to an earlier state: an edit undoing an earlier one."""
    last = records[-1]
    if not last.reverted:
        return None
    reversions = [record for record in records if record.reverted and record.file == last.file]
    return _signal(
        "edit-thrash",
        digest(last.file),
        loop_id,
        reversions,
        config,
        ResolveWhen("file-new-state", value=last.file),
        last.label,
    )


def cycle(records: Sequence[CallRecord], loop_id: str, config: CoreConfig) -> Signal | None:
    """A period-2..4 pattern of the same calls with the same outcomes."""
    size = len(records)
    for period in CYCLE_PERIODS:
        if size < 2 * period:
            return None
        matched = 0
        while matched + period < size:
            newer = records[-1 - matched]
            older = records[-1 - matched - period]
            # Action keys first: a cycle key is its action key (a digest of fixed length) and
            # its outcome's fingerprint, so different actions never need the fingerprints.
            if newer.action_key != older.action_key or newer.cycle_key != older.cycle_key:
                break
            matched += 1
        if matched < period:
            continue
        tail = records[size - matched - period :]
        unit = records[-period:]
        keys = {record.cycle_key for record in unit}
        # A period whose calls are all one call is a plain repeat (other detectors), and polls
        # taking turns are left to the poll detector.
        if len(keys) < 2 or all(record.is_poll for record in unit):
            continue
        periods = (matched + period) // period
        limits = config.limits("cycle")
        if periods < limits.nudge_at:
            continue
        signature_key = digest("|".join(sorted(keys)))
        return Signal(
            detector="cycle",
            signature=f"cycle:{signature_key}",
            loop_id=loop_id,
            count=periods,
            nudge_at=limits.nudge_at,
            escalate_at=limits.escalate_at,
            evidence=tuple(record.call_id for record in tail),
            label=" → ".join(record.label for record in unit),
            resolve=ResolveWhen("cycle-breaks", keys=frozenset(keys)),
            action_keys=frozenset(record.action_key for record in unit),
        )
    return None


def _same_output_streak(
    records: Sequence[CallRecord], last: CallRecord, same_epoch: bool
) -> list[CallRecord]:
    streak: list[CallRecord] = []
    for record in reversed(records):
        if record.action_key != last.action_key:
            continue
        if record.outcome != "ok" or record.outcome_fp != last.outcome_fp:
            break
        if same_epoch and record.epoch != last.epoch:
            break
        streak.append(record)
    streak.reverse()
    return streak


def _is_periodic(records: Sequence[CallRecord]) -> bool:
    """Whether the tail already repeats a period-2..4 pattern of different calls once."""
    size = len(records)
    for period in CYCLE_PERIODS:
        if size < 2 * period:
            return False
        # Different action keys a period apart mean different cycle keys, fingerprints unread.
        if any(
            records[-1 - k].action_key != records[-1 - k - period].action_key for k in range(period)
        ):
            continue
        unit = records[-period:]
        if len({record.cycle_key for record in unit}) < 2:
            continue
        if all(
            records[-1 - k].cycle_key == records[-1 - k - period].cycle_key for k in range(period)
        ):
            return True
    return False


def idle_repeat(records: Sequence[CallRecord], loop_id: str, config: CoreConfig) -> Signal | None:
    """The same successful call with the same output and no edit in between."""
    last = records[-1]
    nudge_at = config.limits("idle-repeat").nudge_at
    if (
        last.outcome != "ok"
        or last.is_poll
        or _fewer_than(nudge_at, last.action_key, _action_key_of, records)
    ):
        return None
    streak = _same_output_streak(records, last, same_epoch=True)
    if len(streak) < nudge_at or _is_periodic(records):
        # Part of a cycle: the cycle detector names it once it has enough rounds.
        return None
    return _signal(
        "idle-repeat",
        last.action_key,
        loop_id,
        streak,
        config,
        ResolveWhen(
            "output-changes",
            value=last.action_key,
            keys=frozenset({last.outcome_fp}),
            epoch=last.epoch,
        ),
        last.label,
    )


def poll(records: Sequence[CallRecord], loop_id: str, config: CoreConfig) -> Signal | None:
    """Polling whose output does not change while nothing else does (polling with new output is
    never flagged, nor a check made again after a file changed: a dev server reloading after an
    edit may answer the same, rightly)."""
    last = records[-1]
    if (
        last.outcome != "ok"
        or not last.is_poll
        or _fewer_than(config.limits("poll").nudge_at, last.action_key, _action_key_of, records)
    ):
        return None
    return _signal(
        "poll",
        last.action_key,
        loop_id,
        _same_output_streak(records, last, same_epoch=True),
        config,
        ResolveWhen(
            "output-changes",
            value=last.action_key,
            keys=frozenset({last.outcome_fp}),
            epoch=last.epoch,
        ),
        last.label,
    )


def _ok_calls_needed(config: CoreConfig) -> int:
    """The fewest calls of one action a successful call's detectors need in its window: a cycle
    always needs two (its unit a period back), idle-repeat and poll their nudge counts."""
    return min(2, config.limits("idle-repeat").nudge_at, config.limits("poll").nudge_at)


DETECTORS: tuple[Detector, ...] = (
    env_blocker,
    denied_retry,
    repeat_failure,
    same_error,
    edit_thrash,
    cycle,
    idle_repeat,
    poll,
)
"""Precedence order: the first detector that fires on a call speaks for it."""


# Each detector looks only at calls with certain outcomes (edit-thrash at reverted edits, cycle at
# any): a call is shown only to those that can fire on it, still in precedence order.
_BY_OUTCOME: dict[str, tuple[Detector, ...]] = {
    "ok": (edit_thrash, cycle, idle_repeat, poll),
    "error": (env_blocker, repeat_failure, same_error, edit_thrash, cycle),
    "denied": (denied_retry, edit_thrash, cycle),
}


def detect(records: Sequence[CallRecord], loop_id: str, config: CoreConfig) -> Signal | None:
    last = records[-1]
    if (
        last.outcome == "ok"
        and not last.reverted
        and _fewer_than(_ok_calls_needed(config), last.action_key, _action_key_of, records)
    ):
        # Most successful calls are new in their window: then no detector of theirs can fire
        # (edit-thrash wants a reverted edit, a cycle the same call a period back, idle-repeat
        # and poll the same call again), and none need be asked.
        return None
    for detector in _BY_OUTCOME.get(last.outcome, DETECTORS):
        found = detector(records, loop_id, config)
        if found is not None:
            return found
    return None
