"""The detection core of one session: tool calls, prompts and turn ends in, decisions out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .detectors import detect
from .fingerprint import Fingerprint, output_fp
from .memo import call_facts, changes_files, failure, key_of
from .normalize import (
    EDIT_TOOLS,
    NEVER_COUNTED_TOOLS,
    POLL_TOOLS,
    PRECONDITION,
    TARGETED_TOOLS,
    digest,
    edit_transition,
    file_of,
    is_counted,
    is_poll,
    redact,
    tail,
    target_of,
)
from .policy import Policy
from .types import CallRecord, CoreConfig, Decision, Observation, ResolveWhen, Signal
from .window import HELD_OUTPUT_CHARS, LoopWindow, Windows

FEEDBACK_SNIPPET_CAP = 120
_STOP_RELEASED = ResolveWhen("stop-released")


@dataclass(slots=True)
class StopStreak:
    """Consecutive blocked stops of one loop with the same feedback."""

    feedback_fp: str = ""
    evidence: list[str] = field(default_factory=list)
    snippet: str = ""
    signature: str = ""
    """The streak's signal signature once built (in memory only: it follows from the rest)."""


class LoopBreakerCore:
    """Everything loop-breaker remembers about one session; pure, no engine calls."""

    def __init__(self, config: CoreConfig | None = None) -> None:
        self.config = config or CoreConfig()
        self.windows = Windows()
        self.policy = Policy(self.config)
        self.stop_streaks: dict[str, StopStreak] = {}
        self.observed = 0
        # A hook that blocks Stop tends to say the same thing each time: its last feedback and
        # fingerprint are kept (in memory only) so a repeat costs a comparison.
        self._last_feedback: tuple[str, str] = ("", "")

    def observe(self, observation: Observation) -> list[Decision]:
        """Records one finished call of the model's and returns what to do about it."""
        record = self._record(observation)
        if record is None:
            return []
        self.observed += 1
        # Most calls come while no loop is open: nothing to resolve, no call made.
        policy = self.policy
        decisions = policy.on_record(observation.loop_id, record) if policy.signatures else []
        window = self.windows.loops[observation.loop_id]
        signal = detect(window.records, observation.loop_id, self.config)
        if signal is not None:
            decisions.extend(policy.on_signal(signal, observation.at_ms))
        return decisions

    def check_stop(
        self, loop_id: str, tool: str, tool_input: Mapping[str, Any], now_ms: int
    ) -> Decision | None:
        """A refusal for a call that repeats a loop armed for auto-stop, before it runs."""
        if not self.config.auto_stop or not self.policy.signatures:
            return None
        return self.policy.stop_for(loop_id, key_of(tool, tool_input), now_ms)

    def person_prompt(self, now_ms: int) -> list[Decision]:
        """The person spoke: every window and streak starts over."""
        self.windows.reset_all(now_ms)
        self.stop_streaks.clear()
        return self.policy.on_person_prompt(now_ms)

    def turn_end(self) -> None:
        """The main loop's turn ended: the nudge budget is fresh again."""
        self.policy.on_turn_end()

    def turn_complete(
        self, loop_id: str, turn_id: str, blocked: bool, feedback: str, now_ms: int
    ) -> list[Decision]:
        """A turn ended; `blocked` when the harness's Stop was refused and the turn goes on."""
        if not blocked:
            self.stop_streaks.pop(loop_id, None)
            return self.policy.resolve_where(loop_id, "stop-released", now_ms)
        feedback_tail = tail(feedback)
        fingerprint = self._feedback_fingerprint(feedback_tail)
        streak = self.stop_streaks.get(loop_id)
        decisions: list[Decision] = []
        if streak is None or streak.feedback_fp != fingerprint:
            if streak is not None:
                decisions.extend(self.policy.resolve_where(loop_id, "stop-released", now_ms))
            first_line = next((line for line in feedback_tail.splitlines() if line.strip()), "")
            streak = self.stop_streaks[loop_id] = StopStreak(
                fingerprint, [], redact(first_line.strip())[:FEEDBACK_SNIPPET_CAP]
            )
        streak.evidence.append(f"stop:{turn_id}:{len(streak.evidence)}")
        limits = self.config.limits("stop-block")
        if len(streak.evidence) >= limits.nudge_at:
            if not streak.signature:
                streak.signature = f"stop-block:{digest(loop_id + fingerprint)}"
            signal = Signal(
                detector="stop-block",
                signature=streak.signature,
                loop_id=loop_id,
                count=len(streak.evidence),
                nudge_at=limits.nudge_at,
                escalate_at=limits.escalate_at,
                evidence=tuple(streak.evidence[-30:]),
                label="Stop blocked",
                resolve=_STOP_RELEASED,
                snippet=streak.snippet,
            )
            decisions.extend(self.policy.on_signal(signal, now_ms))
        return decisions

    def _feedback_fingerprint(self, feedback_tail: str) -> str:
        last_tail, last_fingerprint = self._last_feedback
        if feedback_tail == last_tail:
            return last_fingerprint
        fingerprint = failure(feedback_tail).signature if feedback_tail else ""
        self._last_feedback = (feedback_tail, fingerprint)
        return fingerprint

    @staticmethod
    def _output_fingerprint(
        observation: Observation, key: str, window: LoopWindow, poll: bool
    ) -> Fingerprint:
        """A successful call's fingerprint, left to be computed when first read while the outputs
        its window holds for that stay within `HELD_OUTPUT_CHARS`."""
        source: Any = observation.source
        if source is None:
            source = tail(observation.text)
            held = len(source)
        else:
            held = observation.source_chars
        if window.held_chars + held > HELD_OUTPUT_CHARS:
            computed = output_fp(observation.tool, source, poll=poll)
            return Fingerprint(computed, f"{key}:{computed}")
        return Fingerprint.of_output(observation.tool, key, source, held, poll=poll)

    def _record(self, observation: Observation) -> CallRecord | None:
        tool = observation.tool
        text = observation.text
        outcome = observation.outcome
        if tool in NEVER_COUNTED_TOOLS or (outcome != "ok" and not is_counted(tool, text)):
            return None
        tool_input = observation.input
        # Calls come to known loops far more often than they open one: a lookup first.
        window = self.windows.loops.get(observation.loop_id)
        if window is None:
            window, evicted = self.windows.get(observation.loop_id, observation.at_ms)
            if evicted:
                self.policy.drop_loops(evicted)
        is_edit = tool in EDIT_TOOLS
        file = file_of(tool, tool_input) if is_edit else ""  # `file_of` is "" for the rest
        changed = reverted = False
        error_sig = error_class = token = snippet = ""
        key, label, transition = call_facts(tool, tool_input)
        # `is_poll` reads the input only for a Bash command; other tools need no call.
        polling = tool in POLL_TOOLS or (tool == "Bash" and is_poll(tool, tool_input))
        if outcome == "ok":
            if is_edit:
                # An edit's reply says nothing new; its effect is the file state it leaves.
                fingerprint = Fingerprint("edited", f"{key}:edited")
                if file:
                    if transition is None:
                        transition = edit_transition(tool, tool_input)
                    changed, reverted = window.apply_edit(file, transition)
            else:
                fingerprint = self._output_fingerprint(observation, key, window, polling)
                command = tool_input.get("command") if tool == "Bash" else None
                if isinstance(command, str) and changes_files(command):
                    # Files changed outside the edit tools (a heredoc, `sed -i`, `git
                    # checkout`): a repeat after this may see something new.
                    window.epoch += 1
        else:
            # A loop fails the same way again and again: a repeat is a lookup (`memo.failure`).
            failed = failure(text)
            error_sig = failed.signature
            error_class, token, snippet = (
                failed.error_class,
                failed.token,
                redact(failed.snippet),
            )
            if tool in TARGETED_TOOLS:
                # A file tool's failure is about the file it names (a fetch's about its
                # address), and the text often does not say which ("File does not exist.",
                # "status code 404"): the same failure of another one is another failure, as
                # guessing paths or addresses is exploring. A failed edit precondition is known
                # by its kind and its file alone, whatever text it quotes back.
                same = failed.precondition or error_sig
                error_sig = digest(f"{same}\x00{target_of(tool_input)}")
                if failed.precondition:
                    error_class = PRECONDITION
            elif failed.bare:
                # Nothing but an exit code: no sign that two commands failed the same way.
                error_sig = digest(f"{error_sig}\x00{key}")
            fingerprint = Fingerprint(error_sig, f"{key}:{error_sig}")
        window.seq += 1
        # Positional, in field order (as `codec` also relies on): keywords cost a lookup each.
        record = CallRecord(
            observation.call_id,
            window.seq,
            tool,
            key,
            label,
            outcome,
            fingerprint,
            error_sig,
            error_class if outcome == "error" else "",
            token,
            snippet,
            file,
            changed,
            reverted,
            polling,
            window.epoch,
            observation.at_ms,
        )
        window.append(record)
        return record
