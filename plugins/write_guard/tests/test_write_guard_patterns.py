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
