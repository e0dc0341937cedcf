"""The decision-scoped realpath: always what `os.path.realpath` says, with fewer syscalls."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest
from write_guard._paths import PathContext, Resolutions, ResolvedPath, realpath, resolve_path

CASES = [
    "{ws}/sub/new.txt",
    "{ws}/escape/new.txt",
    "{ws}/escape/deeper/new.txt",
    "{ws}/evil.txt",
    "{ws}/inner/../../outside/x",
    "{ws}/inner/./y.txt",
    "{ws}/missing/dir/x",
    "{ws}/.git/config/not-a-dir/x",
    "{ws}//sub//x",
    "{ws}/sub/",
    "{ws}/sub/.",
    "{ws}/sub/./",
    "{ws}/escape/",
    "{ws}/escape/.",
    "{ws}/escape/./new.txt",
    "{ws}/escape//new.txt",
    "{ws}/gone/./x/",
    "{ws}/cycle/x",
    "{ws}/cycle/./x",
    "{ws}/cycle/../sub/x",
    "{ws}/loop/x",
    "{ws}/loop/../sub/x",
    "{scratch}/planted/x",
    "/",
    "//etc/x",
]


@pytest.fixture(autouse=True)
def _cycle(layout: Any) -> None:
    os.symlink(layout.ws / "cycle", layout.ws / "cycle")


def _expected(layout: Any, case: str) -> str:
    return os.path.realpath(str(layout.fill(case)))


@pytest.mark.parametrize("case", CASES)
def test_each_path_resolves_as_realpath_does(layout: Any, case: str) -> None:
    os.symlink(layout.ws / "loop", layout.ws / "loop")
    assert realpath(layout.fill(case), {})[0] == _expected(layout, case)


def test_paths_sharing_one_decision_resolve_as_realpath_does(layout: Any) -> None:
    os.symlink(layout.ws / "loop", layout.ws / "loop")
    known: Resolutions = {}
    for case in CASES + CASES[::-1]:
        assert realpath(layout.fill(case), known)[0] == _expected(layout, case), case


def test_shared_ancestors_are_looked_up_once(layout: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    names = [f"{layout.ws}/sub/file{index}.txt" for index in range(5)]
    expected = [os.path.realpath(name) for name in names]
    looked_up: list[str] = []
    real_lstat = os.lstat

    def counting_lstat(path: str) -> os.stat_result:
        looked_up.append(path)
        return real_lstat(path)

    monkeypatch.setattr(os, "lstat", counting_lstat)
    known: Resolutions = {}
    assert [realpath(name, known)[0] for name in names] == expected
    assert looked_up.count(f"{layout.ws}/sub") == 1
    assert sorted(set(looked_up)) == sorted(looked_up)


def test_nothing_below_a_missing_folder_is_looked_up(
    layout: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked_up: list[str] = []
    real_lstat = os.lstat

    def counting_lstat(path: str) -> os.stat_result:
        looked_up.append(path)
        return real_lstat(path)

    monkeypatch.setattr(os, "lstat", counting_lstat)
    missing = Path(os.path.realpath(layout.ws)) / "gone"
    resolved, exists = realpath(f"{missing}/a/b/c.txt", {})
    assert (resolved, exists) == (f"{missing}/a/b/c.txt", False)
    assert f"{missing}/a" not in looked_up
    assert str(missing) in looked_up


def test_names_below_a_folder_found_missing_resolve_as_realpath_does(layout: Any) -> None:
    # A plain name below a parent known missing takes one step; `.`, `..` and `` must not.
    missing = f"{os.path.realpath(layout.ws)}/gone"
    known: Resolutions = {}
    realpath(f"{missing}/a/b", known)
    for name in ("b", "a/c", ".", "..", "", "../sub", "a/..", "a/../..", "a/./d", "a/"):
        path = f"{missing}/{name}"
        assert realpath(path, known)[0] == os.path.realpath(path), path


def test_a_symlink_swapped_in_between_decisions_is_seen(layout: Any) -> None:
    target = f"{layout.ws}/swap/x.txt"
    (layout.ws / "swap").mkdir()
    assert realpath(target, {})[0] == os.path.realpath(target)
    (layout.ws / "swap").rmdir()
    os.symlink(layout.out, layout.ws / "swap")
    assert realpath(target, {})[0] == os.path.join(os.path.realpath(layout.out), "x.txt")


@pytest.mark.parametrize(
    "raw",
    ["a/b.txt", "a//b", "a/./b", "a/../b", "a/", "./a", ".", "..", ".git/config", "a/.b/",
     "/x/y", "//x/y", "///x", "/x/..", "/", "~/n", "a/b/.", "a/b/.."],
)  # fmt: skip
def test_the_requested_path_is_the_normalised_one(raw: str) -> None:
    context = PathContext(cwd="/w/s", home="/h")
    anchored = raw.replace("~", "/h", 1) if raw.startswith("~") else raw
    anchored = anchored if anchored.startswith("/") else "/w/s/" + anchored
    expected = os.path.normpath(anchored)
    expected = "/" + expected.lstrip("/") if expected.startswith("//") else expected
    path = resolve_path(raw, context, {})
    assert isinstance(path, ResolvedPath)
    assert path.requested == expected


# No symlink loops here: after one, os.path.realpath reads `//` oddly (CASES has loops).
_NAMES = ["sub", "escape", "inner", "evil.txt", "missing", "x", ".", "", "..", ".git", "config"]


@pytest.mark.parametrize("seed", range(6))
def test_random_paths_sharing_decisions_resolve_as_realpath_does(layout: Any, seed: int) -> None:
    chooser = random.Random(seed)
    for _ in range(40):
        known: Resolutions = {}
        for _ in range(chooser.randint(1, 6)):
            base = chooser.choice([str(layout.ws), str(layout.scratch), "/", "//", "/nowhere"])
            names = chooser.choices(_NAMES, k=chooser.randint(0, 5))
            path = base + "/" + "/".join(names) if names else base
            assert realpath(path, known)[0] == os.path.realpath(path), path
