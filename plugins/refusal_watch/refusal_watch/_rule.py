"""The refusal-handling rule text and how its block merges into the prompt's context blocks."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

BLOCK_NAME = "refusalHandling"

RULE_TEXT = (
    "When one of your replies is cut off by the service's safety filter (stop reason "
    '"refusal"), the person already sees that it stopped. In your next message, say plainly '
    "that you stopped before the answer was complete, name the part of the task that was left "
    "unfinished, and state what happens next: continue by another route, ask the person how to "
    "proceed, or explain why you cannot go on. Do not drop the line of work silently, do not "
    "present the stopped answer as finished, and do not switch to an unrelated task in its place."
)

REQUIRED_PHRASES: tuple[str, ...] = (
    "say plainly that you stopped",
    "Do not drop the line of work silently",
    "ask the person how to proceed",
)

RULE_SHA256 = hashlib.sha256(RULE_TEXT.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class BlockSlot:
    """One merged block: an input block by index (text replaced when set) or a new one."""

    source: int | None
    text: str | None = None


def holds_rule(text: str) -> bool:
    """Whether a block's text carries the full rule."""
    return RULE_TEXT in text


def plan_blocks(blocks: Sequence[tuple[str, str]], *, add_rule: bool) -> tuple[BlockSlot, ...]:
    """Merge the rule into `(name, text)` blocks.

    Duplicates of the rule's own block name collapse into one, kept at the first such block's
    position: the first one holding the full rule, else the first one. When `add_rule` is set and
    no block anywhere holds the full rule, the kept block's stale text is replaced by the rule, or
    a new block is appended. Every other block keeps its place.
    """
    own = [index for index, (name, _) in enumerate(blocks) if name == BLOCK_NAME]
    kept: int | None = None
    if own:
        kept = next((index for index in own if holds_rule(blocks[index][1])), own[0])
    needs_rule = add_rule and not any(holds_rule(text) for _, text in blocks)
    slots: list[BlockSlot] = []
    for index in range(len(blocks)):
        if index in own:
            if index != own[0] or kept is None:
                continue
            slots.append(BlockSlot(source=kept, text=RULE_TEXT if needs_rule else None))
        else:
            slots.append(BlockSlot(source=index))
    if needs_rule and kept is None:
        slots.append(BlockSlot(source=None, text=RULE_TEXT))
    return tuple(slots)
