"""What a turn is and how its id is written: one definition for the live bridge and the replay.

A plugin keyed on turn ids sees the same ids for the same session live and replayed because both
sides count turns by these rules and name them with these functions:

- A turn begins with a prompt, or with model activity (a tool call, a model step, a stop) when
  no turn is open. Turns are numbered from 1 in each session's main loop.
- A turn ends at a stop that no hook continues. A stop a hook continues keeps the turn open: the
  model runs on in the same turn (`stop_hook_active`).
- A prompt while a turn is still open ends that turn as `cancelled` first: the person interrupted
  it (Claude Code fires no Stop for an interrupted turn).
- Compaction does not end a turn: an automatic one happens mid-turn and the model carries on. A
  manual `/compact` runs between turns, after the last one stopped.
- Each subagent run is a turn of its own, named after its agent, whatever happens inside it.

Known difference: live, the bridge hears only its own plugins' answer to a Stop; when another
hook (not hookchain) continues the turn, the bridge has already ended it, and the model's further
work opens a new turn there. A replay reads the continuation from the transcript and keeps it in
the same turn.
"""

from __future__ import annotations

__all__ = ["agent_turn_id", "compaction_ends_turn", "main_turn_id"]


def main_turn_id(session_id: str, number: int) -> str:
    """The id of a session's `number`th main-loop turn (from 1): `<session_id>:<number>`."""
    return f"{session_id}:{number}"


def agent_turn_id(session_id: str, agent_id: str) -> str:
    """The id of a subagent's turn: `<session_id>:agent:<agent_id>`."""
    return f"{session_id}:agent:{agent_id}"


def compaction_ends_turn(trigger: object) -> bool:
    """Whether a compaction (Claude Code's `compactMetadata.trigger`) ends the open turn: an
    automatic one happens inside the turn and does not; a manual one (or one of a version that
    records no trigger) runs after the turn stopped."""
    return trigger != "auto"
