"""Routing tags: find a method the person dictated, parse the model's tag and decide the gate."""

from __future__ import annotations

import re
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass
from functools import lru_cache

from observer._records import Provenance

_TAG = re.compile(r"<!--\s*routing:(?P<body>[^<>]*?)-->", re.IGNORECASE)
_PAIR = re.compile(r"([a-z_]+)=([^\s<>]+)")
_NODE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,63}$")
_PROVENANCES: frozenset[str] = frozenset({"user_directed_method", "autonomous"})


@dataclass(frozen=True, slots=True)
class RoutingTag:
    """The contents of `<!-- routing: provenance=… node=… counterfactual=… -->`."""

    provenance: Provenance
    node: str
    counterfactual: str | None


def is_node_name(text: str) -> bool:
    """Whether `text` is a plain identifier fit to name a node (no spaces, no markup)."""
    return bool(_NODE_NAME.match(text))


def parse_routing_tag(message: str | None) -> RoutingTag | None:
    """The last well-formed routing tag in `message`; a malformed tag counts as no tag."""
    # Every tag opens with `<!--` (no letters, so case does not matter): a message without one,
    # the usual case, is not scanned with the pattern.
    if not message or "<!--" not in message:
        return None
    for match in reversed(list(_TAG.finditer(message))):
        pairs = dict(_PAIR.findall(match.group("body")))
        provenance = pairs.get("provenance", "")
        node = pairs.get("node", "")
        counterfactual = pairs.get("counterfactual")
        if provenance not in _PROVENANCES or not is_node_name(node):
            continue
        if counterfactual is not None and not is_node_name(counterfactual):
            continue
        return RoutingTag(
            provenance="user_directed_method"
            if provenance == "user_directed_method"
            else "autonomous",
            node=node,
            counterfactual=counterfactual,
        )
    return None


@lru_cache(maxsize=64)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def _mention_pattern(name: str) -> str:
    # A whole-word mention, with or without a leading slash ("run review-pr", "/review-pr").
    return rf"(?<![\w-]){re.escape(name)}(?![\w-])"


def _mentions(prompt: str, name: str) -> bool:
    return re.search(_mention_pattern(name), prompt, re.IGNORECASE) is not None


def prepare_method_patterns(patterns: Iterable[str], names: Iterable[str]) -> None:
    """Compile the configured patterns and name mentions ahead of the first prompt; one that
    does not compile is left to fail where it is used."""
    for pattern in patterns:
        with suppress(re.error):
            _compiled(pattern)
    for name in names:
        if name:
            re.compile(_mention_pattern(name), re.IGNORECASE)  # into `re`'s cache


def dictated_method(prompt: str, names: Iterable[str], patterns: Iterable[str]) -> str | None:
    """The method the prompt dictates: a configured name it mentions, or a pattern it matches.

    A pattern with a named group `node` names the method by that group; otherwise the whole match
    is the name. The name must be a plain identifier, or the prompt dictates nothing.
    """
    for name in names:
        if name and _mentions(prompt, name):
            return name
    for pattern in patterns:
        match = _compiled(pattern).search(prompt)
        if match is None:
            continue
        named = match.groupdict().get("node")
        candidate = (named if named is not None else match.group(0)).strip().lstrip("/")
        if is_node_name(candidate):
            return candidate
    return None


def slash_command(prompt: str) -> str | None:
    """The command a prompt starting with `/name` invokes, if it is a plain identifier."""
    stripped = prompt.lstrip()
    if not stripped.startswith("/"):
        return None
    name = stripped[1:].split(maxsplit=1)[0] if len(stripped) > 1 else ""
    return name if is_node_name(name) and "/" not in name else None


def gate_instruction(method: str) -> str:
    """What the model reads when its final message lacks the routing tag."""
    return (
        f"The person asked for the method `{method}` this turn. Before ending, add one line "
        "to your final message: <!-- routing: provenance=user_directed_method "
        f"node={method} counterfactual=<the node you would have chosen yourself, or none> -->"
    )


def gate_decision(
    *,
    dictated: str | None,
    last_message: str | None,
    stop_hook_active: bool,
    already_fired: bool,
) -> str | None:
    """The instruction to continue with, or None to let the turn end.

    The gate asks at most once per turn and never while the harness is already continuing
    because of a stop hook, so a model that does not comply cannot be held in a loop.
    """
    if dictated is None or stop_hook_active or already_fired:
        return None
    if parse_routing_tag(last_message) is not None:
        return None
    return gate_instruction(dictated)
