"""The kept verdicts (`verdicts_for`) decide as the uncached checks do: every tool call of the
shared corpus, judged twice through the cache (the second time from it) and once without,
under each preset and both strictness levels; and a path whose resolution changes between
calls is judged again, never taken from the cache."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from wg_corpus import LABELLED, SHARED, TRANSCRIPTS, tool_calls
from write_guard._decide import (
    GuardDenial,
    preset_denial,
    protected_denial,
    resolve_all,
    verdicts_for,
)
from write_guard._paths import PathContext
from write_guard._policy import BUILTIN_PROTECTED_PATTERNS, Policy, Preset
from write_guard._surface import Surface, extract_surface

_CWD = re.compile(r'"cwd":"([^"]+)"')
PRESETS: tuple[Preset, ...] = ("workspace", "orchestrator", "read-only")


def _sessions() -> list[tuple[str, list[Surface]]]:
    """Per corpus file: its recorded cwd and the write surfaces of its tool calls."""
    if not (TRANSCRIPTS.is_dir() and LABELLED.is_dir()):
        pytest.fail(f"the shared corpus is missing: expected it at {SHARED} (beside the clone)")
    found = []
    for path in sorted([*TRANSCRIPTS.glob("*.jsonl"), *LABELLED.glob("*.jsonl")]):
        cwd = _CWD.search(path.read_text(encoding="utf-8", errors="replace"))
        surfaces = [extract_surface(tool, tool_input) for tool, tool_input in tool_calls([path])]
        found.append((cwd.group(1) if cwd else "/nonexistent", surfaces))
    return found


def _policy(cwd: str, preset: Preset) -> Policy:
    home = "/" + "/".join(cwd.strip("/").split("/")[:2])
    return Policy(
        preset=preset,
        workspace_root=cwd,
        extra_roots=("/tmp", f"{home}/.claude/plans"),
        protected_paths=(f"{cwd}/secrets", "/root/.local/share/hookchain"),
        protected_patterns=(*BUILTIN_PROTECTED_PATTERNS, f"{cwd}/*.lock".casefold()),
    )


def _judged(
    surface: Surface, context: PathContext, policy: Policy, *, strict: bool, cached: bool
) -> tuple[GuardDenial | None, GuardDenial | None]:
    resolved = resolve_all(surface, context)
    verdicts = verdicts_for(policy) if cached else None
    return (
        protected_denial(surface, context, policy, resolved, strict=strict, verdicts=verdicts),
        preset_denial(surface, context, policy, resolved, verdicts),
    )


@pytest.mark.parametrize("preset", PRESETS)
def test_kept_verdicts_decide_every_corpus_call_as_the_checks_do(preset: Preset) -> None:
    sessions = _sessions()
    calls = sum(len(surfaces) for _cwd, surfaces in sessions)
    assert calls > 2_000, "the corpus should hold thousands of tool calls"
    judged = denied = hits = 0
    for cwd, surfaces in sessions:
        context = PathContext(cwd=cwd, home="/" + "/".join(cwd.strip("/").split("/")[:2]))
        policy = _policy(cwd, preset)
        verdicts = verdicts_for(policy)
        for strict in (True, False):
            for _pass in range(2):  # the second pass finds every verdict kept
                for surface in surfaces:
                    if not surface.targets:
                        continue
                    before = len(verdicts.protected) + len(verdicts.preset)
                    slow = _judged(surface, context, policy, strict=strict, cached=False)
                    fast = _judged(surface, context, policy, strict=strict, cached=True)
                    assert fast == slow, (cwd, surface)
                    judged += 1
                    denied += slow != (None, None)
                    hits += before == len(verdicts.protected) + len(verdicts.preset)
    assert judged > 1_000 and hits > judged // 2
    assert denied > 100, "the corpus should hold denials under every preset"


def test_a_path_resolved_anew_is_judged_anew(layout: Any) -> None:
    """The same path as written, first a folder of the workspace, then a symlink out of it:
    the second call resolves it elsewhere and must be denied, as the checks deny it."""
    ws = os.path.realpath(layout.ws)
    context = PathContext(cwd=ws, home=str(layout.home))
    policy = Policy(preset="workspace", workspace_root=ws)
    (layout.ws / "swapped").mkdir()
    surface = extract_surface("Write", {"file_path": "swapped/x.txt"})
    assert _judged(surface, context, policy, strict=True, cached=True) == (None, None)
    (layout.ws / "swapped").rmdir()
    os.symlink(layout.out, layout.ws / "swapped")
    slow = _judged(surface, context, policy, strict=True, cached=False)
    assert slow[1] is not None and slow[1].rule == "outside-roots"
    assert _judged(surface, context, policy, strict=True, cached=True) == slow


def test_an_equal_policy_shares_its_verdicts_and_another_does_not(tmp_path: Path) -> None:
    root = str(tmp_path)
    one = verdicts_for(Policy(preset="workspace", workspace_root=root))
    assert verdicts_for(Policy(preset="workspace", workspace_root=root)) is one
    assert verdicts_for(Policy(preset="read-only", workspace_root=root)) is not one
    other = Policy(preset="workspace", workspace_root=root, protected_paths=(f"{root}/a",))
    assert verdicts_for(other) is not one
