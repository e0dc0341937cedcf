"""Parses the CLAUDE_REFUSAL_WATCH switch that turns the refusal rule block on or off."""

from __future__ import annotations

from dataclasses import dataclass

SWITCH_NAME = "CLAUDE_REFUSAL_WATCH"

_ON = frozenset({"1", "true", "yes", "on"})
_OFF = frozenset({"", "0", "false", "no", "off"})

SWITCH_INVALID = "switch-invalid"


@dataclass(frozen=True, slots=True)
class SwitchReading:
    """Whether the rule block is wanted, and the named diagnostic when the value made no sense."""

    enabled: bool
    diagnostic: str | None = None


def read_switch(raw: object) -> SwitchReading:
    """Read the raw environment value; an unknown value adds nothing and names itself."""
    if raw is None:
        return SwitchReading(enabled=False)
    if not isinstance(raw, str):
        return SwitchReading(enabled=False, diagnostic=SWITCH_INVALID)
    value = raw.strip().lower()
    if value in _ON:
        return SwitchReading(enabled=True)
    if value in _OFF:
        return SwitchReading(enabled=False)
    return SwitchReading(enabled=False, diagnostic=SWITCH_INVALID)


def describe_diagnostic(name: str) -> str:
    """The person-facing line of a switch diagnostic; the raw value is never echoed."""
    return (
        f"refusal-watch [{name}]: {SWITCH_NAME} has an unrecognised value; "
        "use 1/true/yes/on or 0/false/no/off. The refusal rule block is not added."
    )
