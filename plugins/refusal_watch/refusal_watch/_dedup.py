"""Which turn.complete refusals were already reported by a step of the same turn."""

from __future__ import annotations

from dataclasses import dataclass, field

TurnKey = tuple[str | None, str]


def turn_key(agent_id: object, turn_id: object) -> TurnKey | None:
    """The (agent, turn) key, or None when either id is unreadable (such refusals count alone)."""
    if not isinstance(turn_id, str) or not turn_id:
        return None
    if agent_id is not None and not isinstance(agent_id, str):
        return None
    return (agent_id, turn_id)


@dataclass(frozen=True, slots=True)
class ArmedTurn:
    """A turn whose step already reported a refusal, with the step's model for the status line."""

    model: str | None


@dataclass(slots=True)
class TurnDedup:
    """Armed turns per agent; an agent disappears once none of its turns is armed."""

    _armed: dict[str | None, dict[str, ArmedTurn]] = field(default_factory=dict)

    def arm(self, key: TurnKey | None, model: str | None) -> None:
        """A step of this turn reported a refusal."""
        if key is None:
            return
        agent, turn = key
        self._armed.setdefault(agent, {})[turn] = ArmedTurn(model)

    def disarm(self, key: TurnKey | None) -> ArmedTurn | None:
        """Forget the turn (a step ended without refusal, or the turn ended); say what was armed."""
        if key is None:
            return None
        agent, turn = key
        turns = self._armed.get(agent)
        if turns is None:
            return None
        armed = turns.pop(turn, None)
        if not turns:
            del self._armed[agent]
        return armed

    def armed(self, key: TurnKey | None) -> ArmedTurn | None:
        if key is None:
            return None
        agent, turn = key
        return self._armed.get(agent, {}).get(turn)

    def agents(self) -> frozenset[str | None]:
        return frozenset(self._armed)

    def __bool__(self) -> bool:
        """Whether any turn is armed (cheaper than `len`: an agent is dropped with its last)."""
        return bool(self._armed)

    def __len__(self) -> int:
        return sum(len(turns) for turns in self._armed.values())
