"""Value types of the detection core: observations, call records, signals, decisions, config."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from .fingerprint import Fingerprint
from .normalize import Outcome

MAIN_LOOP = "main"
"""Loop id of the main conversation; a subagent's loop id is its agent id."""

DetectorId = Literal[
    "env-blocker",
    "denied-retry",
    "repeat-failure",
    "same-error",
    "edit-thrash",
    "cycle",
    "idle-repeat",
    "poll",
    "stop-block",
]

DETECTOR_IDS: tuple[DetectorId, ...] = get_args(DetectorId)


# Observation and CallRecord are made for every tool call, and a frozen dataclass sets each field
# through `object.__setattr__` (about 9 times the cost here): they are plain slots dataclasses,
# never changed after they are built.
@dataclass(slots=True)
class Observation:
    """One finished tool call of the model's, described without any engine type."""

    call_id: str
    loop_id: str
    tool: str
    input: Mapping[str, Any]
    outcome: Outcome
    text: str
    """The output's text; "" for a successful edit, and with `source` (its text is built from
    that when first needed)."""
    at_ms: int
    source: Any = None
    """A successful call's plain structured output whose whole text is left unbuilt (it feeds
    only the fingerprint, built when first read): `result_text` writes it."""
    source_chars: int = 0
    """The characters of `source`'s strings."""


@dataclass(slots=True)
class CallRecord:
    """A tool call after normalisation: everything the detectors look at, no call content."""

    call_id: str
    seq: int
    tool: str
    action_key: str
    label: str
    outcome: Outcome
    fingerprint: Fingerprint
    """`outcome_fp` and `cycle_key`, a successful call's computed only when first read."""
    error_sig: str
    error_class: str
    error_token: str
    snippet: str
    file: str
    changed: bool
    reverted: bool
    is_poll: bool
    epoch: int
    """Count of content-changing edits in the loop, including this record's own change."""
    at_ms: int

    @property
    def outcome_fp(self) -> str:
        return self.fingerprint.outcome_fp

    @property
    def cycle_key(self) -> str:
        """The call and its outcome together: what must repeat for a cycle."""
        return self.fingerprint.cycle_key


ResolveKind = Literal[
    "action-ok",
    "action-changes",
    "moves-on",
    "tool-ok",
    "output-changes",
    "file-new-state",
    "cycle-breaks",
    "stop-released",
]


@dataclass(frozen=True, slots=True)
class ResolveWhen:
    """When a signature counts as resolved: the loop it names is broken."""

    kind: ResolveKind
    keys: frozenset[str] = frozenset()
    value: str = ""
    epoch: int = -1


@dataclass(frozen=True, slots=True)
class Signal:
    """A detector's finding: `signature` has recurred `count` times in `loop_id`."""

    detector: DetectorId
    signature: str
    loop_id: str
    count: int
    nudge_at: int
    escalate_at: int
    evidence: tuple[str, ...]
    label: str
    resolve: ResolveWhen
    snippet: str = ""
    action_keys: frozenset[str] = frozenset()
    hint: str = ""
    """A kind of failure with advice of its own (`precondition`), or ""."""


DecisionKind = Literal["nudge", "escalate", "stop", "resolve", "ignore"]


@dataclass(frozen=True, slots=True)
class Decision:
    """What the core asks the adapter to do; `text` is ready to show (no raw call content)."""

    kind: DecisionKind
    detector: DetectorId
    signature: str
    loop_id: str
    text: str = ""
    count: int = 0


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Nudge and escalation counts of one detector."""

    nudge_at: int
    escalate_at: int


def _default_thresholds() -> dict[str, Thresholds]:
    return {
        "env-blocker": Thresholds(2, 4),
        "denied-retry": Thresholds(2, 3),
        "repeat-failure": Thresholds(3, 5),
        "same-error": Thresholds(3, 5),
        "edit-thrash": Thresholds(2, 4),
        "cycle": Thresholds(3, 5),
        "idle-repeat": Thresholds(3, 5),
        "poll": Thresholds(6, 12),
        "stop-block": Thresholds(3, 3),
    }


@dataclass(frozen=True, slots=True)
class CoreConfig:
    """Every tunable of the core; the plugin's options map onto it one to one."""

    thresholds: Mapping[str, Thresholds] = field(default_factory=_default_thresholds)
    env_blocker_span: int = 10
    max_nudges_per_turn: int = 2
    auto_stop: bool = False
    stop_after_escalation: int = 2
    ignore: tuple[str, ...] = ()

    def limits(self, detector: DetectorId) -> Thresholds:
        return self.thresholds[detector]
