"""Fold the raw log lines into episodes with their latest outcome, and the error markers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from observer._records import Episode, ObserverErrorMarker, OutcomeLine

OUTCOMES: tuple[str, ...] = ("success", "failure", "abandoned", "unknown")
PROVENANCES: tuple[str, ...] = ("user_directed_method", "autonomous")


@dataclass(frozen=True, slots=True)
class EpisodeView:
    """An episode as people read it: flat, with the outcome its newest outcome line gave it."""

    id: str
    ts: str
    session_id: str
    turn_id: str
    node: str
    provenance: str
    counterfactual: str | None
    outcome: str
    tool_calls: int
    edits: int
    files_touched: int
    size: str
    correction: bool
    harness: str | None = None

    @property
    def month(self) -> str:
        return self.ts[:7]

    @property
    def day(self) -> str:
        return self.ts[:10]


@dataclass(frozen=True, slots=True)
class FoldedLog:
    """Episodes in time order, error markers, and lines that did not fit the schema."""

    episodes: tuple[EpisodeView, ...]
    errors: tuple[ObserverErrorMarker, ...]
    invalid_lines: int


def fold(records: Iterable[Mapping[str, Any]]) -> FoldedLog:
    """Episodes with outcomes applied in order: a later outcome line replaces an earlier one."""
    episodes: dict[str, Episode] = {}
    outcomes: dict[str, str] = {}
    errors: list[ObserverErrorMarker] = []
    invalid = 0
    for record in records:
        kind = record.get("record")
        try:
            if kind == "episode":
                episode = Episode.model_validate(record)
                episodes.setdefault(episode.id, episode)
            elif kind == "outcome":
                line = OutcomeLine.model_validate(record)
                outcomes[line.episode_id] = line.outcome
            elif kind == "observer_error":
                errors.append(ObserverErrorMarker.model_validate(record))
            else:
                invalid += 1
        except ValidationError:
            invalid += 1
    views = [
        _view(episode, outcomes.get(episode.id, episode.outcome)) for episode in episodes.values()
    ]
    views.sort(key=lambda view: (view.ts, view.id))
    errors.sort(key=lambda marker: marker.ts)
    return FoldedLog(episodes=tuple(views), errors=tuple(errors), invalid_lines=invalid)


def _view(episode: Episode, outcome: str) -> EpisodeView:
    return EpisodeView(
        id=episode.id,
        ts=episode.ts,
        session_id=episode.session_id,
        turn_id=episode.turn_id,
        node=episode.node,
        provenance=episode.decision_provenance.provenance,
        counterfactual=episode.decision_provenance.counterfactual,
        outcome=outcome,
        tool_calls=episode.task_size.tool_calls,
        edits=episode.task_size.edits,
        files_touched=episode.task_size.files_touched,
        size=episode.task_size.bucket,
        correction=episode.prompt_signal.correction,
        harness=episode.environment.harness,
    )


def zero_counts(names: Iterable[str]) -> dict[str, int]:
    """A counter with every name at zero, so tables always have the same columns."""
    return dict.fromkeys(names, 0)
