"""Judge a tool call's write surface: protected paths, the preset's roots, and the git gate."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from write_guard._bash import WriteTarget
from write_guard._git import PathTest, dangerous_git
from write_guard._paths import (
    PREPARED_KEPT,
    PathContext,
    PathRejection,
    Resolutions,
    ResolvedPath,
    prepare,
    prepared_for,
    resolve_path,
    resolve_prepared,
    root_forms,
)
from write_guard._policy import (
    PROTECTED_MARKERS,
    PathVerdict,
    Policy,
    preset_verdict,
    protected_screen,
    protected_verdict,
)
from write_guard._surface import Surface

VERDICTS_KEPT = 4096
"""Paths whose verdicts a policy keeps (then it starts over): a session writes a few hundred."""
POLICIES_KEPT = 64

_GIT_DIR = re.compile(r"(?:^|[\s/'\"=])\.git(?![\w.-])")
_BAD_INPUT_WORDS = ("NUL", "UTF-8", "empty")


@dataclass(frozen=True, slots=True)
class GuardDenial:
    """A refusal: a stable rule name, the path it concerns, and the text the model reads."""

    rule: str
    path: str | None
    reason: str


@dataclass(frozen=True, slots=True)
class GitHold:
    """A dangerous git operation that needs a one-shot approval of exactly `command`."""

    operation: str
    command: str


@dataclass(frozen=True, slots=True)
class Verdicts:
    """One policy's verdicts per resolved path, protected and preset: each a pure function of
    the policy and the path (as written, cleaned and resolved), so a path met again reuses its
    verdict. Keyed by (requested, resolved): all a verdict reads of the path, and all a denial
    shows. The resolution itself is never kept: the file system changes between calls."""

    protected: dict[tuple[str, str], PathVerdict | None]
    preset: dict[tuple[str, str], PathVerdict | None]


_VERDICTS: dict[tuple[Policy, tuple[tuple[str, ...], ...]], Verdicts] = {}


def verdicts_for(policy: Policy) -> Verdicts:
    """The verdicts kept for `policy` (an equal policy shares them: a fresh host's too). The
    preset's verdicts also depend on the roots' resolved forms (`root_forms`, kept per process):
    they are part of the key, read when a policy is built."""
    roots = tuple(root_forms(root) for root in (policy.workspace_root, *policy.extra_roots))
    key = (policy, roots)
    found = _VERDICTS.get(key)
    if found is None:
        if len(_VERDICTS) >= POLICIES_KEPT:
            _VERDICTS.clear()
        found = _VERDICTS[key] = Verdicts({}, {})
    return found


_UNKNOWN = PathVerdict("", ResolvedPath("", "", ""), "", "")
"""What a verdict lookup finds for a path not met before (None is a verdict: allowed)."""


def _keep(
    kept: dict[tuple[str, str], PathVerdict | None],
    key: tuple[str, str],
    verdict: PathVerdict | None,
) -> None:
    if len(kept) >= VERDICTS_KEPT:
        kept.clear()
    kept[key] = verdict


def _deny(rule: str, path: str | None, what: str, instead: str) -> GuardDenial:
    where = f" Path: {path}." if path else ""
    return GuardDenial(rule, path, f"denied this ({rule}): {what}.{where} Instead: {instead}.")


def _from_verdict(verdict: PathVerdict) -> GuardDenial:
    shown = verdict.path.resolved
    if verdict.path.requested != verdict.path.resolved:
        shown = f"{verdict.path.resolved} (requested {verdict.path.requested})"
    return _deny(verdict.rule, shown, verdict.explanation, verdict.instead)


def resolve_target(
    target: WriteTarget, context: PathContext, known: Resolutions | None = None
) -> ResolvedPath | PathRejection:
    """Resolve a target, first anchoring it at the directory a preceding `cd` moved to."""
    raw = target.path
    prefix = target.cwd_prefix
    if prefix is not None and not raw.startswith(("/", "~", "$")):
        raw = _logical(prefix) + "/" + raw
    return resolve_path(raw, context, known)


def _logical(prefix: str) -> str:
    """A `cd` operand as bash's logical `cd` reads it: `link/..` is the directory itself."""
    if ".." in prefix:
        prefix = posixpath.normpath(prefix)
    return prefix.rstrip("/")


def mentions_protected(text: str, policy: Policy) -> bool:
    """Whether a command line names something protected (used when it cannot be analysed)."""
    folded = text.casefold()
    markers = (*PROTECTED_MARKERS, *(path.casefold() for path in policy.protected_paths))
    if any(marker in folded for marker in markers):
        return True
    # The pattern has no literal start for the engine to skip ahead by: on a long line the
    # plain search for its literal part is many times faster, and finds nothing when it would.
    return ".git" in folded and _GIT_DIR.search(folded) is not None


Resolved = list[tuple[WriteTarget, ResolvedPath | PathRejection]]


def resolve_all(surface: Surface, context: PathContext) -> Resolved:
    """Every target of the surface with its resolution (done once per decision, the targets
    sharing the resolutions of their common ancestors). What a path as written gives before
    the walk is kept per context (`prepared_for`); the walk itself is never kept."""
    known: Resolutions = {}
    resolved: Resolved = []
    targets = surface.targets
    if not targets:
        return resolved
    kept = prepared_for(context)
    for target in targets:
        # `resolve_target` spelled out: this loop runs for every path of every decision.
        raw = target.path
        prefix = target.cwd_prefix
        if prefix is not None and not raw.startswith(("/", "~", "$")):
            raw = _logical(prefix) + "/" + raw
        path = kept.get(raw)
        if path is None:
            if len(kept) >= PREPARED_KEPT:
                kept.clear()
            path = kept[raw] = prepare(raw, context)
        if isinstance(path, PathRejection):
            resolved.append((target, path))
        else:
            resolved.append((target, resolve_prepared(path, known)))
    return resolved


def protected_denial(
    surface: Surface,
    context: PathContext,
    policy: Policy,
    resolved: Resolved | None = None,
    *,
    strict: bool = True,
    verdicts: Verdicts | None = None,
) -> GuardDenial | None:
    """The fail-closed part: bad input and protected paths, in every preset.

    `strict` (no OS sandbox): a line that cannot be analysed and names a protected path is
    refused too; under the sandbox the protected files are read-only for the command anyway,
    and a quoted word that names one (a comment, a commit message) is no write.

    `verdicts`: `verdicts_for(policy)`, where the verdicts of paths met before are kept."""
    if surface.malformed:
        return _deny("malformed-input", None, surface.malformed, "call the tool with a plain path")
    unclear = bool(surface.uncertain)
    screen = None
    kept = verdicts.protected if verdicts is not None else None
    for _target, path in resolved if resolved is not None else resolve_all(surface, context):
        if isinstance(path, PathRejection):
            if any(word in path.why for word in _BAD_INPUT_WORDS):
                return _deny("bad-path", repr(path.raw), path.why, "use a plain UTF-8 path")
            unclear = True
            continue
        key = (path.requested, path.resolved)
        verdict = kept.get(key, _UNKNOWN) if kept is not None else _UNKNOWN
        if verdict is _UNKNOWN:
            if screen is None:
                screen = protected_screen(policy)
            verdict = protected_verdict(path, policy, screen)
            if kept is not None:
                _keep(kept, key, verdict)
        if verdict is not None:
            return _from_verdict(verdict)
    if (
        strict
        and unclear
        and surface.command is not None
        and mentions_protected(surface.command, policy)
    ):
        return _deny(
            "unparsable-protected",
            None,
            "the command cannot be analysed with confidence and it names a protected path",
            "split it into plain commands that do not touch protected files",
        )
    return None


def preset_denial(
    surface: Surface,
    context: PathContext,
    policy: Policy,
    resolved: Resolved | None = None,
    verdicts: Verdicts | None = None,
) -> GuardDenial | None:
    """The fail-open part: the agent's preset (workspace, orchestrator, read-only) per path;
    `verdicts` as for `protected_denial`."""
    kept = verdicts.preset if verdicts is not None else None
    for _target, path in resolved if resolved is not None else resolve_all(surface, context):
        if isinstance(path, PathRejection):
            if surface.command is None:
                return _deny("unresolvable-path", path.raw, path.why, "use a literal path")
            continue  # Bash: not analysable with confidence, allowed unless protected (see above)
        key = (path.requested, path.resolved)
        verdict = kept.get(key, _UNKNOWN) if kept is not None else _UNKNOWN
        if verdict is _UNKNOWN:
            verdict = preset_verdict(path, policy)
            if kept is not None:
                _keep(kept, key, verdict)
        if verdict is not None:
            return _from_verdict(verdict)
    if policy.preset == "read-only" and surface.git_commands:
        return _deny(
            "read-only",
            None,
            "this agent's preset is read-only",
            "describe the change in your answer, or hand it to an agent that may write",
        )
    return None


def git_hold(surface: Surface, is_path: PathTest | None = None) -> GitHold | None:
    """The first dangerous git operation in the command, bound to the exact trimmed command."""
    if surface.command is None:
        return None
    for argv in surface.git_commands:
        operation = dangerous_git(argv, is_path)
        if operation is not None:
            return GitHold(operation=operation, command=surface.command.strip())
    return None


def git_hold_denial(hold: GitHold) -> GuardDenial:
    """The denial for a held git operation, telling the model how the person can approve it."""
    return _deny(
        "git-gate",
        None,
        f"`{hold.command}` runs a dangerous git operation ({hold.operation}) that needs the "
        "person's approval",
        "ask the person with AskUserQuestion, quoting the exact command in backticks, with an "
        'option such as "Approve"; once they choose it, retry the identical command (it is '
        "allowed once, within 5 minutes). Only the person can approve it; running hookchain "
        "yourself is refused",
    )


def decide(surface: Surface, context: PathContext, policy: Policy) -> GuardDenial | GitHold | None:
    """Everything except approvals: a denial, a git operation to hold, or None (allowed)."""
    resolved = resolve_all(surface, context)
    return (
        protected_denial(surface, context, policy, resolved)
        or preset_denial(surface, context, policy, resolved)
        or git_hold(surface)
    )
