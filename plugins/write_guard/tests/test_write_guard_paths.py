"""The decision-scoped realpath: always what `os.path.realpath` says, with fewer syscalls."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest
from wg_corpus import LABELLED, TRANSCRIPTS, tool_calls
from write_guard._bash import WriteTarget
from write_guard._decide import _logical, resolve_all
from write_guard._paths import (
    PathContext,
    Resolutions,
    ResolvedPath,
    clean_realpath,
    realpath,
    resolve_path,
)
from write_guard._surface import Surface, extract_surface

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


def _lstat_log(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths `os.lstat` is called with from now on, in order."""
    looked_up: list[str] = []
    real_lstat = os.lstat

    def counting_lstat(path: str) -> os.stat_result:
        looked_up.append(path)
        return real_lstat(path)

    monkeypatch.setattr(os, "lstat", counting_lstat)
    return looked_up


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
    looked_up = _lstat_log(monkeypatch)
    known: Resolutions = {}
    assert [realpath(name, known)[0] for name in names] == expected
    assert looked_up.count(f"{layout.ws}/sub") == 1
    assert sorted(set(looked_up)) == sorted(looked_up)


def test_nothing_below_a_missing_folder_is_looked_up(
    layout: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked_up = _lstat_log(monkeypatch)
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


# Plain names only (what `clean_realpath` is for), dotted ones included: `.git` is a name.
_CLEAN_NAMES = ["sub", "escape", "inner", "evil.txt", "missing", "x", ".git", "..x", "config"]


@pytest.mark.parametrize("seed", range(6))
def test_clean_paths_sharing_decisions_resolve_as_realpath_does(layout: Any, seed: int) -> None:
    chooser = random.Random(seed)
    bases = [os.path.realpath(p) for p in (layout.ws, layout.scratch)] + [str(layout.ws), ""]
    for _ in range(40):
        known: Resolutions = {}
        for _ in range(chooser.randint(1, 6)):
            names = chooser.choices(_CLEAN_NAMES, k=chooser.randint(1, 5))
            path = chooser.choice(bases) + "/" + "/".join(names)
            assert clean_realpath(path, known) == realpath(path, {}), path
            assert clean_realpath(path, known)[0] == os.path.realpath(path), path


def test_a_clean_walk_looks_each_shared_ancestor_up_once(
    layout: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = os.path.realpath(layout.ws)
    names = [f"{ws}/sub/a{index}/f.txt" for index in range(3)] + [f"{ws}/sub/b.txt"]
    names += [f"{ws}/gone/a/b/c.txt", f"{ws}/gone/a/d.txt", f"{ws}/gone/e/f.txt"]
    expected = [os.path.realpath(name) for name in names]
    looked_up = _lstat_log(monkeypatch)
    known: Resolutions = {}
    assert [clean_realpath(name, known)[0] for name in names] == expected
    assert sorted(set(looked_up)) == sorted(looked_up)
    assert f"{ws}/sub" in looked_up and f"{ws}/gone" in looked_up
    assert not [path for path in looked_up if path.startswith(f"{ws}/gone/")]


def _context(layout: Any) -> PathContext:
    return PathContext(cwd=os.path.realpath(layout.ws), home=str(layout.home))


def _targets(*paths: str) -> Surface:
    return Surface(targets=tuple(WriteTarget(path, "rm") for path in paths))


def test_kept_preparations_resolve_every_corpus_path_as_resolve_path_does(layout: Any) -> None:
    """Each target of the shared corpus, through `resolve_all` twice (the second time its
    preparation is kept) and alone through `resolve_path` without any sharing."""
    calls = tool_calls(sorted([*TRANSCRIPTS.glob("*.jsonl"), *LABELLED.glob("*.jsonl")]))
    surfaces = [extract_surface(tool, tool_input) for tool, tool_input in calls]
    surfaces = [surface for surface in surfaces if surface.targets]
    assert len(surfaces) > 500, "the corpus should hold hundreds of writing tool calls"
    # Relative paths land in the layout (its folders and links), absolute ones mostly nowhere.
    context = PathContext(cwd=f"{layout.ws}/sub", home=str(layout.home), project_dir="/p")
    for _pass in range(2):
        for surface in surfaces:
            for target, path in resolve_all(surface, context):
                raw = target.path
                if target.cwd_prefix is not None and not raw.startswith(("/", "~", "$")):
                    raw = _logical(target.cwd_prefix) + "/" + raw
                assert path == resolve_path(raw, context), raw


def test_names_in_a_folder_found_missing_are_resolved_anew_in_the_next_decision(
    layout: Any,
) -> None:
    """The folder of two targets is missing, then a symlink out of the workspace: the second
    decision must follow it for both (neither the missing folder nor the answer is kept)."""
    context = _context(layout)
    ws = context.cwd
    surface = _targets("later/a.txt", "later/b.txt", f"{ws}/later/c/d.txt")
    first = [path for _target, path in resolve_all(surface, context)]
    assert [p.resolved for p in first if isinstance(p, ResolvedPath)] == [
        f"{ws}/later/a.txt",
        f"{ws}/later/b.txt",
        f"{ws}/later/c/d.txt",
    ]
    os.symlink(layout.out, layout.ws / "later")
    out = os.path.realpath(layout.out)
    second = [path for _target, path in resolve_all(surface, context)]
    assert [p.resolved for p in second if isinstance(p, ResolvedPath)] == [
        f"{out}/a.txt",
        f"{out}/b.txt",
        f"{out}/c/d.txt",
    ]
    os.unlink(layout.ws / "later")
    (layout.ws / "later").mkdir()
    third = [path for _target, path in resolve_all(surface, context)]
    assert third == first


def test_a_folder_swapped_for_a_link_under_a_dotted_name_is_seen(layout: Any) -> None:
    """`.cache/x` takes the clean walk (a dotted name is a plain one): a folder there, then a
    symlink out of the workspace, between two decisions."""
    context = _context(layout)
    surface = _targets(".cache/x.txt")
    (layout.ws / ".cache").mkdir()
    [(_target, first)] = resolve_all(surface, context)
    assert isinstance(first, ResolvedPath) and first.resolved == f"{context.cwd}/.cache/x.txt"
    (layout.ws / ".cache").rmdir()
    os.symlink(layout.out, layout.ws / ".cache")
    [(_target, second)] = resolve_all(surface, context)
    assert isinstance(second, ResolvedPath)
    assert second.resolved == f"{os.path.realpath(layout.out)}/x.txt"
    assert second == resolve_path(".cache/x.txt", context)


def test_links_beside_a_folder_walked_before_are_followed(layout: Any) -> None:
    """A folder known to exist is no shortcut for the names in it: `escape` and `evil.txt`
    are symlinks out of the workspace, next to `sub` walked by the first target."""
    context = _context(layout)
    surface = _targets("sub/a.txt", "escape", "evil.txt", "escape/b.txt", "inner/c.txt")
    got = [path for _target, path in resolve_all(surface, context)]
    raws = [target.path for target in surface.targets]
    assert got == [resolve_path(raw, context) for raw in raws]
    out = os.path.realpath(layout.out)
    assert [p.resolved for p in got if isinstance(p, ResolvedPath)][1:4] == [
        out,
        f"{out}/target.txt",
        f"{out}/b.txt",
    ]
