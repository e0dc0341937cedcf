"""Decide one resolved path against the protected paths and the agent's preset."""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from write_guard._paths import ResolvedPath, is_within, root_forms

Preset = Literal["workspace", "orchestrator", "read-only"]

# Patterns below match anywhere in the tree, on the case-folded absolute path.
BUILTIN_PROTECTED_PATTERNS: tuple[str, ...] = (
    "*/.git/hooks",
    "*/.git/hooks/*",
    "*/.git/config",
    "*/.git/config.worktree",
    # A submodule's git dir (`*` spans folders: its own submodules', under it, too).
    "*/.git/modules/*/config",
    "*/.git/modules/*/hooks",
    "*/.git/modules/*/hooks/*",
    # write-guard's snapshot refs and the repository's id, which ties it to its store (see
    # _snapshot.store_of): the host writes them, outside any sandbox; no tool nor command may,
    # nor remove or replace the refs folder that holds them (git writes the refs inside it).
    "*/.git/refs",
    "*/.git/refs/write-guard",
    "*/.git/refs/write-guard/*",
    "*/.git/modules/*/refs",
    "*/.git/modules/*/refs/write-guard",
    "*/.git/modules/*/refs/write-guard/*",
    "*/.claude/settings*.json",
    "*/hookchain.toml",
    "*/.hookchain",
    "*/.hookchain/*",
)
# Removing or replacing these directories takes the protected files inside with them.
_PROTECTED_PARENTS = frozenset({".git", ".claude"})
# Words in a command line that hint at a protected file (used when the line cannot be parsed).
PROTECTED_MARKERS: tuple[str, ...] = (
    ".git/hooks", ".git/config", ".git/modules/", ".claude/settings", "hookchain.toml",
    ".hookchain", ".git/refs/write-guard",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class OrchestratorLists:
    """Path-root lists of the orchestrator preset (first matching root segment decides)."""

    artifact_roots: tuple[str, ...] = ("reports",)
    planning_root: tuple[str, ...] = ("docs", "planning")
    audit_glob: str = "audit-*"
    source_roots: tuple[str, ...] = (
        "src", "lib", "test", "tests", "agents", "tools", "schemas", "eval", ".github",
    )  # fmt: skip
    root_artifact_files: tuple[str, ...] = (
        "case-*",
        "risks-*",
        "handoff-*",
        "decisions-*",
        "state.md",
    )


@dataclass(frozen=True, slots=True)
class Policy:
    """Everything needed to judge a path: roots, sinks, protections and the preset."""

    preset: Preset
    workspace_root: str
    extra_roots: tuple[str, ...] = ()
    sinks: tuple[str, ...] = ("/dev/null", "/dev/stdout", "/dev/stderr")
    protected_paths: tuple[str, ...] = ()
    protected_patterns: tuple[str, ...] = BUILTIN_PROTECTED_PATTERNS
    orchestrator: OrchestratorLists = OrchestratorLists()
    case_insensitive: bool = False


@dataclass(frozen=True, slots=True)
class PathVerdict:
    """Why a path may not be written; `rule` is stable, `instead` is advice for the agent."""

    rule: str
    path: ResolvedPath
    explanation: str
    instead: str


ProtectedScreen = tuple[re.Pattern[str] | None, bool, tuple[tuple[str, str, str], ...], str]
"""What the protected check of one policy reads for every path: the patterns' required pieces
(None: every path goes to the patterns), whether there are patterns, the folded protected
paths and their shared start."""


def protected_screen(policy: Policy) -> ProtectedScreen:
    """Looked up once per decision rather than once per path (each lookup hashes a tuple)."""
    patterns = policy.protected_patterns
    protected, shared = _folded(policy.protected_paths)
    pieces = _required_pieces(patterns) if patterns else None
    return pieces, bool(patterns), protected, shared


def protected_verdict(
    path: ResolvedPath, policy: Policy, screen: ProtectedScreen | None = None
) -> PathVerdict | None:
    """A denial when the requested or the resolved path is (or contains) a protected location.

    `screen` is `protected_screen(policy)`, passed by callers that check many paths."""
    pieces, has_patterns, protected, shared = screen or protected_screen(policy)
    requested, resolved = path.requested, path.resolved
    for candidate in (requested,) if requested == resolved else (requested, resolved):
        folded = candidate.casefold()
        hit = None
        # `_matching_pattern` finds nothing where the pieces are absent: not called for them.
        if has_patterns and (pieces is None or pieces.search(folded) is not None):
            hit = _matching_pattern(folded, policy.protected_patterns)
        if hit is None:
            name = folded.rpartition("/")[2]
            if name in _PROTECTED_PARENTS:
                hit = f"*/{name}"
        # A match makes one path a prefix of the other, and every protected path starts with
        # `shared`: a path that is not a prefix of `shared` nor starts with it matches none.
        if hit is None and protected and (folded.startswith(shared) or shared.startswith(folded)):
            # One path contains the other: `is_within` both ways, spelled out for this hot loop.
            below = folded if folded.endswith("/") else folded + "/"
            for original, folded_protected, protected_below in protected:
                if (
                    folded == folded_protected
                    or folded.startswith(protected_below)
                    or folded_protected.startswith(below)
                ):
                    hit = original
                    break
        if hit is not None:
            return PathVerdict(
                rule="protected-path",
                path=path,
                explanation=f"{candidate} is protected ({hit})",
                instead="leave this file alone; if it must change, ask the person to change it",
            )
    return None


def prepare_patterns(patterns: tuple[str, ...]) -> None:
    """Compile what matching `patterns` needs now rather than on the first write checked."""
    _compiled(patterns)
    _required_pieces(patterns)
    for pattern in patterns:
        fnmatch.fnmatchcase("", pattern)  # compiles the pattern into fnmatch's own cache


@functools.lru_cache(maxsize=64)
def _compiled(patterns: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{fnmatch.translate(pattern)})" for pattern in patterns))


@functools.lru_cache(maxsize=64)
def _required_pieces(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """A search for, of each pattern, a piece of literal text every path it matches contains;
    None when a pattern has none. A path where it finds nothing matches no pattern."""
    pieces = []
    for pattern in patterns:
        # Outside brackets every character but `*` and `?` matches itself; a bracket and what
        # follows are not read (a `]` right after `[` is literal there, which is easy to misread).
        literal = pattern.partition("[")[0]
        longest = max(_WILDCARDS.split(literal), key=len)
        if not longest:
            return None
        pieces.append(re.escape(longest))
    return re.compile("|".join(pieces))


_WILDCARDS = re.compile(r"[*?]")


def _matching_pattern(path: str, patterns: tuple[str, ...]) -> str | None:
    if not patterns:
        return None
    pieces = _required_pieces(patterns)
    if pieces is not None and pieces.search(path) is None:
        return None
    if _compiled(patterns).match(path) is None:
        return None
    return next(p for p in patterns if fnmatch.fnmatchcase(path, p))


@functools.lru_cache(maxsize=64)
def _folded(paths: tuple[str, ...]) -> tuple[tuple[tuple[str, str, str], ...], str]:
    """Each path, case-folded, and the folded prefix of everything below it; and the longest
    prefix all the folded paths share."""
    folded = ((path, path.casefold()) for path in paths)
    entries = tuple((path, f, f if f.endswith("/") else f + "/") for path, f in folded)
    return entries, _shared_start([f for _path, f, _below in entries])


def _shared_start(texts: list[str]) -> str:
    """The longest string every text starts with, compared character by character (a path
    may share only part of a name with another)."""
    if not texts:
        return ""
    first, last = min(texts), max(texts)
    for index, char in enumerate(first):
        if char != last[index]:
            return first[:index]
    return first


def preset_verdict(path: ResolvedPath, policy: Policy) -> PathVerdict | None:
    """A denial when the preset does not let this agent write the path."""
    if path.requested in policy.sinks:
        return None
    if policy.preset == "read-only":
        return PathVerdict(
            rule="read-only",
            path=path,
            explanation="this agent's preset is read-only",
            instead="describe the change in your answer, or hand it to an agent that may write",
        )
    roots = root_forms(policy.workspace_root)
    if policy.preset == "workspace" and not policy.case_insensitive:
        # The common verdict, both forms inside the workspace, as `_all_within` below finds it:
        # `is_within` of each root is equality or a prefix test, all roots' prefixes in one
        # `startswith`. Anything else takes the full check.
        exact, below = _root_prefixes(roots)
        requested, resolved = path.requested, path.resolved
        if (requested in exact or requested.startswith(below)) and (
            resolved == requested or resolved in exact or resolved.startswith(below)
        ):
            return None
    forms = _distinct(path.requested, path.resolved)
    inside = _all_within(forms, roots, policy.case_insensitive)
    if policy.preset == "workspace":
        if inside:
            return None
        extra = tuple(form for root in policy.extra_roots for form in root_forms(root))
        if _all_within(forms, (*roots, *extra), policy.case_insensitive):
            return None
        return PathVerdict(
            rule="outside-roots",
            path=path,
            explanation=f"{path.resolved} is outside the workspace {policy.workspace_root}"
            + (
                f" and the extra roots {', '.join(policy.extra_roots)}"
                if policy.extra_roots
                else ""
            ),
            instead="write inside the workspace (or the temp dir); if the person wants this path "
            "writable, they add it to write-guard's extra_writable_roots",
        )
    if not inside:
        return PathVerdict(
            rule="outside-roots",
            path=path,
            explanation=f"{path.resolved} is outside the session directory {policy.workspace_root}",
            instead="write artifacts inside the session directory",
        )
    for form in _distinct(path.requested, path.resolved):
        root = next(
            r for r in roots if is_within(form, r, case_insensitive=policy.case_insensitive)
        )
        relative = os.path.relpath(form, root)
        reason = _orchestrator_refusal(relative, policy.orchestrator)
        if reason is not None:
            return PathVerdict(
                rule="orchestrator-roots",
                path=path,
                explanation=f"{relative} {reason}",
                instead="write only artifacts (reports/**, docs/planning/**/*.md, audit-*/…, or "
                "case-*/risks-*/handoff-*/decisions-*/state.md at an artifact root) and delegate "
                "source changes to a subagent",
            )
    return None


@functools.lru_cache(maxsize=64)
def _root_prefixes(roots: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The roots, and what every path strictly below one of them starts with."""
    return roots, tuple(root if root.endswith("/") else root + "/" for root in roots)


def _distinct(requested: str, resolved: str) -> tuple[str, ...]:
    return (requested,) if requested == resolved else (requested, resolved)


def _all_within(paths: Sequence[str], roots: Sequence[str], case_insensitive: bool) -> bool:
    """Whether every path is within one of the roots (loops rather than generators: hot)."""
    for path in paths:
        for root in roots:
            if is_within(path, root, case_insensitive=case_insensitive):
                break
        else:
            return False
    return True


def _orchestrator_refusal(relative: str, lists: OrchestratorLists) -> str | None:
    """None when the orchestrator may write `relative`; otherwise why not."""
    if relative in {".", ""} or relative.startswith(".."):
        return "is not a file inside the session directory"
    parts = relative.split("/")
    directories, name = parts[:-1], parts[-1]
    in_audit = False
    for index, segment in enumerate(directories):
        if segment in lists.source_roots:
            return f"is under the source root {segment}/"
        if segment in lists.artifact_roots:
            return None
        if tuple(directories[index : index + len(lists.planning_root)]) == lists.planning_root:
            return None if name.endswith(".md") else "is under docs/planning/ but is not Markdown"
        in_audit = in_audit or fnmatch.fnmatchcase(segment, lists.audit_glob)
    if in_audit:
        return None
    is_root_file = any(fnmatch.fnmatchcase(name, pattern) for pattern in lists.root_artifact_files)
    if is_root_file and not directories:
        return None
    if is_root_file:
        return "is a root artifact file outside the root, reports/, docs/planning/ or audit-*"
    return "is not an artifact path"
