"""Render STATUS.md: per node and per month, episodes, provenance split, outcomes and errors."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

from observer._log_file import replace_private_file
from observer._log_view import OUTCOMES, EpisodeView, FoldedLog
from observer._records import iso_timestamp

STATUS_FILE = "STATUS.md"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _row(label: str, episodes: list[EpisodeView], errors: int | None) -> str:
    outcomes = Counter(episode.outcome for episode in episodes)
    directed = sum(episode.provenance == "user_directed_method" for episode in episodes)
    cells = [
        _cell(label),
        str(len(episodes)),
        str(directed),
        str(len(episodes) - directed),
        *(str(outcomes[name]) for name in OUTCOMES),
    ]
    if errors is not None:
        cells.append(str(errors))
    return "| " + " | ".join(cells) + " |"


def render_status(log: FoldedLog, now_ms: int) -> str:
    """The whole STATUS.md document."""
    by_node: dict[str, list[EpisodeView]] = defaultdict(list)
    by_month: dict[str, list[EpisodeView]] = defaultdict(list)
    for episode in log.episodes:
        by_node[episode.node].append(episode)
        by_month[episode.month].append(episode)
    errors_by_month = Counter(marker.ts[:7] for marker in log.errors)
    outcome_heads = " | ".join(OUTCOMES)
    lines = [
        "# Observer status",
        "",
        f"Generated {iso_timestamp(now_ms)} by `hookchain observer status`; do not edit by hand.",
        "",
        f"Episodes: {len(log.episodes)}. Observer errors: {len(log.errors)}. "
        f"Unreadable lines: {log.invalid_lines}.",
        "",
        "## By node",
        "",
        f"| node | episodes | user-directed | autonomous | {outcome_heads} |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for node in sorted(by_node, key=lambda name: (-len(by_node[name]), name)):
        lines.append(_row(node, by_node[node], None))
    lines += [
        "",
        "## By month",
        "",
        f"| month | episodes | user-directed | autonomous | {outcome_heads} | errors |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for month in sorted(set(by_month) | set(errors_by_month)):
        lines.append(_row(month, by_month.get(month, []), errors_by_month[month]))
    return "\n".join(lines) + "\n"


def write_status(data_dir: Path, text: str) -> Path:
    """Replace STATUS.md under `data_dir` with `text`: a fresh private file renamed into place."""
    return replace_private_file(data_dir, STATUS_FILE, text.encode("utf-8"), durable=True)
