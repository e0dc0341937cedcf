"""The dashboard's four views (map, breakdown, feed, aggregate) computed from the folded log."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from observer._log_view import OUTCOMES, PROVENANCES, EpisodeView, FoldedLog, zero_counts


def map_view(log: FoldedLog) -> dict[str, Any]:
    """Nodes with episode and outcome counts; edges where one node follows another in a session."""
    nodes: dict[str, dict[str, Any]] = {}
    for episode in log.episodes:
        node = nodes.setdefault(
            episode.node, {"id": episode.node, "episodes": 0, "outcomes": zero_counts(OUTCOMES)}
        )
        node["episodes"] += 1
        node["outcomes"][episode.outcome] += 1
    transitions: Counter[tuple[str, str]] = Counter()
    previous_in_session: dict[str, str] = {}
    for episode in log.episodes:
        previous = previous_in_session.get(episode.session_id)
        if previous is not None and previous != episode.node:
            transitions[(previous, episode.node)] += 1
        previous_in_session[episode.session_id] = episode.node
    ordered_nodes = sorted(nodes.values(), key=lambda node: (-node["episodes"], node["id"]))
    edges = [
        {"source": source, "target": target, "count": count}
        for (source, target), count in sorted(
            transitions.items(), key=lambda item: (-item[1], item[0])
        )
    ]
    return {"nodes": ordered_nodes, "edges": edges}


def breakdown_view(log: FoldedLog) -> list[dict[str, Any]]:
    """Per node: episodes, the provenance split and the outcomes; most episodes first."""
    rows: dict[str, dict[str, Any]] = {}
    for episode in log.episodes:
        row = rows.setdefault(
            episode.node,
            {
                "node": episode.node,
                "episodes": 0,
                "provenance": zero_counts(PROVENANCES),
                "outcomes": zero_counts(OUTCOMES),
                "counterfactuals": {},
            },
        )
        row["episodes"] += 1
        row["provenance"][episode.provenance] += 1
        row["outcomes"][episode.outcome] += 1
        if episode.counterfactual:
            counterfactuals: dict[str, int] = row["counterfactuals"]
            counterfactuals[episode.counterfactual] = (
                counterfactuals.get(episode.counterfactual, 0) + 1
            )
    return sorted(rows.values(), key=lambda row: (-row["episodes"], row["node"]))


def feed_view(log: FoldedLog, limit: int = 200) -> list[dict[str, Any]]:
    """The newest `limit` episodes, newest first."""
    newest = sorted(log.episodes, key=lambda episode: (episode.ts, episode.id), reverse=True)[
        :limit
    ]
    return [_feed_item(episode) for episode in newest]


def _feed_item(episode: EpisodeView) -> dict[str, Any]:
    return {
        "id": episode.id,
        "ts": episode.ts,
        "session_id": episode.session_id,
        "harness": episode.harness,
        "node": episode.node,
        "provenance": episode.provenance,
        "outcome": episode.outcome,
        "tool_calls": episode.tool_calls,
        "edits": episode.edits,
        "size": episode.size,
        "correction": episode.correction,
    }


def aggregate_view(log: FoldedLog) -> dict[str, Any]:
    """Per day and per month: episodes, outcomes, user-directed share, mean tool calls, errors."""
    by_day: dict[str, list[EpisodeView]] = defaultdict(list)
    by_month: dict[str, list[EpisodeView]] = defaultdict(list)
    for episode in log.episodes:
        by_day[episode.day].append(episode)
        by_month[episode.month].append(episode)
    errors_by_day = Counter(marker.ts[:10] for marker in log.errors)
    errors_by_month = Counter(marker.ts[:7] for marker in log.errors)
    return {
        "days": [
            _period(day, by_day.get(day, []), errors_by_day[day])
            for day in sorted(set(by_day) | set(errors_by_day))
        ],
        "months": [
            _period(month, by_month.get(month, []), errors_by_month[month])
            for month in sorted(set(by_month) | set(errors_by_month))
        ],
        "totals": _period("all", list(log.episodes), len(log.errors)),
    }


def _period(label: str, episodes: list[EpisodeView], errors: int) -> dict[str, Any]:
    outcomes = zero_counts(OUTCOMES)
    for episode in episodes:
        outcomes[episode.outcome] += 1
    directed = sum(episode.provenance == "user_directed_method" for episode in episodes)
    count = len(episodes)
    return {
        "period": label,
        "episodes": count,
        "outcomes": outcomes,
        "user_directed_share": round(directed / count, 3) if count else 0.0,
        "mean_tool_calls": round(sum(e.tool_calls for e in episodes) / count, 2) if count else 0.0,
        "errors": errors,
    }


def dashboard_payload(log: FoldedLog) -> dict[str, Any]:
    """Everything the page shows, as one JSON document."""
    return {
        "map": map_view(log),
        "breakdown": breakdown_view(log),
        "feed": feed_view(log),
        "aggregate": aggregate_view(log),
        "invalid_lines": log.invalid_lines,
    }
