"""Snapshots hold the untracked files too, without touching the work tree, the index or the
stash list, within a size cap; `hookchain restore` brings them back. Real git, only in the
throwaway tree (see `wg_jail`)."""

from __future__ import annotations

import time

import pytest
from structlog.testing import capture_logs
from wg_jail import BWRAP, UNTRACKED, Tree, guard_decides, restore_the_snapshot
from write_guard._snapshot import UNTRACKED_FILE_MAX, record, restore, snapshots

pytestmark = pytest.mark.anyio
needs_bwrap = pytest.mark.skipif(BWRAP is None, reason="needs bubblewrap")


def _untouched(tree: Tree) -> tuple[bytes, str, str]:
    """The index file, byte for byte; the work tree's state, the stash list and an untracked
    file (read without optional locks: a status that refreshes the index rewrites it)."""
    ran = tree.run(
        "git status --porcelain --untracked-files=all; git stash list; cat notes.txt",
        env={"GIT_OPTIONAL_LOCKS": "0"},
    )
    return (tree.ws / ".git" / "index").read_bytes(), ran.stdout, ran.stderr


@needs_bwrap
async def test_a_script_running_git_clean_is_undone_by_restore(git_env: Tree) -> None:
    tree = git_env
    (tree.ws / "new-dir").mkdir()
    (tree.ws / "new-dir" / "deep.txt").write_text("deep\n")
    (tree.ws / ".gitignore").write_text("*.log\n")
    (tree.ws / "build.log").write_text("ignored\n")
    script = (
        "python3 -c \"import subprocess; subprocess.run(['git', 'clean', '-qfdx']); "
        "subprocess.run(['git', 'reset', '-q', '--hard'])\""
    )
    verdict = await guard_decides(tree, script)
    assert verdict.denied is None and verdict.command is not None
    assert tree.run(verdict.command).rc == 0
    assert not (tree.ws / "notes.txt").exists() and not (tree.ws / "new-dir").exists()
    restored = restore_the_snapshot(tree)
    assert restored.rc == 0, restored
    assert "untracked files put back" in restored.stdout
    assert (tree.ws / "notes.txt").read_text() == UNTRACKED
    assert (tree.ws / "new-dir" / "deep.txt").read_text() == "deep\n"
    assert (tree.ws / ".gitignore").read_text() == "*.log\n"
    assert (tree.ws / "a.txt").read_text() == "dirty\n"
    assert not (tree.ws / "build.log").exists()  # ignored: never recorded
    assert tree.run("git stash list").stdout == ""


def test_recording_touches_neither_tree_nor_index_nor_stash_list(git_env: Tree) -> None:
    before = _untouched(git_env)
    snap = record(str(git_env.ws), "a command")
    assert snap is not None
    assert _untouched(git_env) == before
    shown = git_env.run(f"git show {snap.commit}^3:notes.txt")
    assert shown.stdout == UNTRACKED


def test_an_index_lock_left_behind_does_not_lose_the_tracked_changes(git_env: Tree) -> None:
    # A command leaves `.git/index.lock`: `git stash create` on the real index would fail, and
    # the next command's snapshot would hold nothing of a.txt.
    (git_env.ws / ".git" / "index.lock").write_text("")
    snap = record(str(git_env.ws), "x")
    assert snap is not None
    assert git_env.run(f"git show {snap.commit}:a.txt").stdout == "dirty\n"
    assert git_env.run(f"git show {snap.commit}^2:b.txt").stdout == "b\n"


def test_only_untracked_work_is_recorded_once_per_state(git_env: Tree) -> None:
    tree = git_env
    tree.run("git stash -q")  # tracked changes put away: only notes.txt (and friends) left
    assert tree.run("git status --porcelain --untracked-files=no").stdout == ""
    last: dict[str, str] = {}
    first = record(str(tree.ws), "x", last)
    assert first is not None
    assert record(str(tree.ws), "x", last) is None  # the same state: no second ref
    (tree.ws / "notes.txt").write_text("more\n")
    assert record(str(tree.ws), "x", last) is not None
    (tree.ws / "notes.txt").unlink()
    restored = restore(str(tree.ws), first.ref)
    assert "notes.txt" in restored.untracked
    assert (tree.ws / "notes.txt").read_text() == UNTRACKED


def test_an_untracked_file_made_again_is_kept_and_named(git_env: Tree) -> None:
    tree = git_env
    snap = record(str(tree.ws), "x")
    assert snap is not None
    tree.run("git checkout -- a.txt; rm c.diff")
    (tree.ws / "notes.txt").write_text("newer\n")
    restored = restore(str(tree.ws), snap.ref)
    assert "notes.txt" in restored.kept and "c.diff" in restored.untracked
    assert (tree.ws / "notes.txt").read_text() == "newer\n"
    assert (tree.ws / "a.txt").read_text() == "dirty\n" and (tree.ws / "c.diff").exists()


def test_huge_untracked_files_are_left_out_and_the_snapshot_says_so(git_env: Tree) -> None:
    tree = git_env
    with open(tree.ws / "dump.bin", "wb") as handle:
        handle.truncate(UNTRACKED_FILE_MAX + 1)
    snap = record(str(tree.ws), "x")
    assert snap is not None
    assert "1 untracked files over the size cap not kept" in snap.subject
    held = tree.run(f"git ls-tree -r --name-only {snap.commit}^3").stdout.split()
    assert "notes.txt" in held and "dump.bin" not in held
    assert [s.subject for s in snapshots(str(tree.ws))] == [snap.subject]


def test_a_change_made_in_the_second_the_index_was_written_is_recorded(git_env: Tree) -> None:
    tree = git_env
    # Written, staged and written again in one second, at the same size.
    tree.run("echo dirtY > a.txt && git add a.txt && echo dIrTy > a.txt")
    time.sleep(1.2)  # the snapshot's copy of the index is made in a later second
    snap = record(str(tree.ws), "x")
    assert snap is not None
    assert tree.run(f"git show {snap.commit}:a.txt").stdout == "dIrTy\n"


def _snapshot_logs(logs: list[dict[str, object]]) -> list[tuple[object, str]]:
    return [
        (entry["log_level"], str(entry["event"]))
        for entry in logs
        if "the work tree's changes" in str(entry["event"])
    ]


async def test_the_log_says_when_a_snapshot_is_kept_in_the_repository_only(
    git_env: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = git_env
    blocker = tree.root / "data-file"
    blocker.write_text("not a folder\n")
    monkeypatch.setenv("HOOKCHAIN_DATA_DIR", str(blocker / "d"))  # the store cannot be made
    with capture_logs() as logs:
        verdict = await guard_decides(tree, "touch new.txt")
    assert verdict.denied is None
    refs = tree.run("git for-each-ref --format='%(refname)' refs/write-guard/snapshots").stdout
    assert len(refs.split()) == 1
    said = _snapshot_logs(logs)
    assert len(said) == 1 and said[0][0] == "warning", said
    assert said[0][1].startswith(f"recorded the work tree's changes as {refs.split()[0]}, ")
    assert "kept in the repository only" in said[0][1] and "NotADirectoryError" in said[0][1]


async def test_the_log_names_a_snapshot_the_store_holds_without_a_warning(git_env: Tree) -> None:
    tree = git_env
    with capture_logs() as logs:
        verdict = await guard_decides(tree, "touch new.txt")
    assert verdict.denied is None
    ref = tree.run("git for-each-ref --format='%(refname)' refs/write-guard/snapshots").stdout
    said = _snapshot_logs(logs)
    assert said == [("debug", f"recorded the work tree's changes as {ref.strip()}")], said
