"""Cheap text checks before regexes: they let through every text the regex could match."""

from __future__ import annotations

import fnmatch
import os
import random

import pytest
from write_guard._options import Options
from write_guard._paths import ResolvedPath, is_within
from write_guard._policy import (
    BUILTIN_PROTECTED_PATTERNS,
    Policy,
    _compiled,
    _matching_pattern,
    preset_verdict,
    protected_verdict,
)
from write_guard._register import Guard
from write_guard._surface import _APPLIES_PATCH, extract_surface

_PATTERN_PARTS = ["a", "/", ".", "git", "hooks", ".claude", "settings", ".json", "[", "]", "!",
                  "*", "?", "x", "[!a]", "[]a]"]  # fmt: skip
_PATH_PARTS = ["a", "/", ".", "git", "hooks", ".claude", "settings", ".json", "x", "[", "]", "!"]


def _first_match(path: str, patterns: tuple[str, ...]) -> str | None:
    return next((pattern for pattern in patterns if fnmatch.fnmatchcase(path, pattern)), None)


@pytest.mark.parametrize("seed", range(20))
def test_the_pattern_named_is_the_first_fnmatch_match(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(500):
        if rng.random() < 0.5:
            patterns = BUILTIN_PROTECTED_PATTERNS
        else:
            patterns = tuple(
                "".join(rng.choice(_PATTERN_PARTS) for _ in range(rng.randint(0, 6)))
                for _ in range(rng.randint(1, 3))
            )
        path = "/" + "".join(rng.choice(_PATH_PARTS) for _ in range(rng.randint(0, 8)))
        assert _matching_pattern(path, patterns) == _first_match(path, patterns)


def test_builtin_patterns_match_and_miss_as_written() -> None:
    patterns = BUILTIN_PROTECTED_PATTERNS
    assert _matching_pattern("/w/.git/hooks/pre-commit", patterns) == "*/.git/hooks/*"
    assert _matching_pattern("/w/.claude/settings.local.json", patterns) == (
        "*/.claude/settings*.json"
    )
    assert _matching_pattern("/w/src/app.py", patterns) is None
    assert _matching_pattern("/w/.claude/settings.yaml", patterns) is None
    assert _matching_pattern("/w/x", ("*[]x]",)) == "*[]x]"
    assert _matching_pattern("/w/x", ("*",)) == "*"


def test_a_new_guard_has_the_builtin_patterns_compiled_before_the_first_call() -> None:
    _compiled.cache_clear()
    Guard(Options())
    info = _compiled.cache_info()
    assert info.currsize == 1
    assert _matching_pattern("/w/.git/config", BUILTIN_PROTECTED_PATTERNS) == "*/.git/config"
    assert _compiled.cache_info().misses == info.misses


_COMMAND_PARTS = ["git", " ", "\t", "apply", "patch", "apply_patch", "applypatch", ";", "(", "|",
                  "&", "-p1", "<", "x.diff", "\n", "GIT", "Patch", "git\tapply"]  # fmt: skip


@pytest.mark.parametrize("seed", range(10))
def test_every_line_that_applies_a_patch_names_patch_or_apply(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(1000):
        command = "".join(rng.choice(_COMMAND_PARTS) for _ in range(rng.randint(1, 8)))
        if _APPLIES_PATCH.search(command) is not None:
            assert "patch" in command or "apply" in command


def test_patch_and_substitution_lines_are_still_read() -> None:
    heredoc = "patch -p1 <<'EOF'\n--- a/x.py\n+++ b/.git/config\n@@\nEOF"
    targets = extract_surface("Bash", {"command": heredoc}).targets
    assert [t.path for t in targets] == ["x.py", ".git/config"]
    applied = extract_surface("Bash", {"command": "git apply fix.diff"})
    assert applied.uncertain == ("a patch whose paths are not visible",)
    nested = extract_surface("Bash", {"command": "echo $(rm -rf build) `touch stamp`"})
    assert {t.path for t in nested.targets} == {"build", "stamp"}


_CONTAINMENT_PARTS = ["/", "a", "b", "B", "db", "-wal", ".", "x"]


def _random_path(rng: random.Random) -> str:
    text = "/" + "".join(rng.choice(_CONTAINMENT_PARTS) for _ in range(rng.randint(0, 7)))
    return os.path.normpath(text).replace("//", "/")


@pytest.mark.parametrize("seed", range(10))
def test_the_shared_prefix_skips_only_paths_no_protected_path_contains_or_is_below(
    seed: int,
) -> None:
    rng = random.Random(seed)
    for _ in range(400):
        protected = tuple(_random_path(rng) for _ in range(rng.randint(1, 4)))
        policy = Policy(
            preset="workspace", workspace_root="/", protected_paths=protected, protected_patterns=()
        )
        path = _random_path(rng)
        if path.rpartition("/")[2].casefold() in {".git", ".claude"}:
            continue
        folded = path.casefold()
        expected = any(
            is_within(folded, p.casefold()) or is_within(p.casefold(), folded) for p in protected
        )
        verdict = protected_verdict(ResolvedPath(path, path, path), policy)
        assert (verdict is not None) == expected, (path, protected)


_ROOT_PARTS = ["/", "w", "s", "s2", "/w/s", "x", ".."]


@pytest.mark.parametrize("seed", range(6))
def test_workspace_verdicts_are_those_of_is_within(seed: int) -> None:
    # The workspace preset's quick prefix test must allow exactly the paths whose requested and
    # resolved forms are both `is_within` a form of the root or an extra root.
    rng = random.Random(seed)
    roots = ["/w/s", "/w/s/", "/", "/w", "/w/s2"]
    for _ in range(400):
        workspace = rng.choice(roots)
        extra = tuple(rng.sample(roots, rng.randint(0, 2)))
        policy = Policy(preset="workspace", workspace_root=workspace, extra_roots=extra)
        forms = [os.path.normpath(root) for root in (workspace, *extra)]
        requested, resolved = (
            os.path.normpath("/" + "/".join(rng.choices(_ROOT_PARTS, k=rng.randint(0, 4))))
            for _ in range(2)
        )
        if rng.random() < 0.4:
            resolved = requested
        path = ResolvedPath(requested, requested, resolved)
        inside = all(any(is_within(form, root) for root in forms) for form in (requested, resolved))
        sink = requested in policy.sinks
        assert (preset_verdict(path, policy) is None) == (inside or sink), (path, policy)


@pytest.mark.parametrize("seed", range(10))
def test_protected_patterns_deny_exactly_the_paths_fnmatch_matches(seed: int) -> None:
    # Patterns with and without literal pieces (`*`, `?`, `[!a]`): the per-decision screen
    # may skip only the paths no pattern matches.
    rng = random.Random(seed)
    for _ in range(300):
        patterns = tuple(
            "".join(rng.choice(_PATTERN_PARTS) for _ in range(rng.randint(0, 6)))
            for _ in range(rng.randint(1, 3))
        )
        policy = Policy(preset="workspace", workspace_root="/", protected_patterns=patterns)
        path = "/" + "".join(rng.choice(_PATH_PARTS) for _ in range(rng.randint(0, 8)))
        folded = path.casefold()
        if folded.rpartition("/")[2] in {".git", ".claude"}:
            continue
        verdict = protected_verdict(ResolvedPath(path, path, path), policy)
        assert (verdict is not None) == (_first_match(folded, patterns) is not None), (
            path,
            patterns,
        )
