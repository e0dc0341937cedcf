"""write-guard's store per work tree and per repository: linked work trees keep their own HEAD
and snapshots. Real git, only in the throwaway tree (see `wg_jail`)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from wg_jail import DIRTY, Tree, git
from write_guard._cli import restore as restore_cli

from write_guard import _snapshot


def _linked(tree: Tree) -> Path:
    """A linked work tree of the workspace's repository, on its own branch, with work of its
    own (`a.txt` changed otherwise than in the workspace)."""
    linked = tree.root / "linked"
    git(tree.ws, "worktree", "add", "-q", str(linked), "-b", "linked")
    git(linked, "commit", "-q", "--allow-empty", "-m", "on linked")
    (linked / "a.txt").write_text("linked work\n")
    return linked


def test_each_work_tree_keeps_its_own_head_in_the_store(scratch_env: Tree) -> None:
    tree = scratch_env
    linked = _linked(tree)
    linked_head = git(linked, "rev-parse", "HEAD").strip()
    assert _snapshot.record(str(linked), "x") is not None
    assert _snapshot.record(str(tree.ws), "x") is not None  # the last HEAD the store saw
    # The linked work tree's git dir loses its HEAD (and the objects go): it comes back on
    # its own branch, not on the one the workspace is on.
    git_dir = tree.ws / ".git" / "worktrees" / "linked"
    (git_dir / "HEAD").unlink()
    recovered = _snapshot.recover(str(linked))
    assert recovered.head
    assert (git_dir / "HEAD").read_text() == "ref: refs/heads/linked\n"
    assert git(linked, "rev-parse", "HEAD").strip() == linked_head
    assert (tree.ws / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"


def test_a_detached_linked_work_tree_comes_back_at_its_own_commit(scratch_env: Tree) -> None:
    tree = scratch_env
    linked = _linked(tree)
    git(linked, "checkout", "-q", "--detach")
    git(linked, "commit", "-q", "--allow-empty", "-m", "detached in linked")
    detached = git(linked, "rev-parse", "HEAD").strip()
    assert _snapshot.record(str(linked), "x") is not None
    assert _snapshot.record(str(tree.ws), "x") is not None
    git_dir = tree.ws / ".git" / "worktrees" / "linked"
    (git_dir / "HEAD").unlink()
    assert _snapshot.recover(str(linked)).head
    assert (git_dir / "HEAD").read_text() == detached + "\n"


def test_each_work_tree_lists_and_restores_only_its_own_snapshots(scratch_env: Tree) -> None:
    tree = scratch_env
    linked = _linked(tree)
    ours = _snapshot.record(str(linked), "x")
    theirs = _snapshot.record(str(tree.ws), "x")
    assert ours is not None and theirs is not None
    assert [snap.ref for snap in _snapshot.snapshots(str(linked))] == [ours.ref]
    assert [snap.ref for snap in _snapshot.snapshots(str(tree.ws))] == [theirs.ref]
    with pytest.raises(LookupError, match="no write-guard snapshot matches"):
        _snapshot.restore(str(linked), theirs.commit[:12])
    git(linked, "checkout", "--", "a.txt")
    git(tree.ws, "checkout", "--", "a.txt")
    _snapshot.restore(str(linked), ours.name)
    assert (linked / "a.txt").read_text() == "linked work\n"
    assert (tree.ws / "a.txt").read_text() == "a\n"
    _snapshot.restore(str(tree.ws), theirs.name)
    assert (tree.ws / "a.txt").read_text() == DIRTY


def _remade(tree: Tree) -> None:
    """The person deletes the repository and makes a new one at the same path."""
    shutil.rmtree(tree.ws / ".git")
    git(tree.ws, "init", "-q", "-b", "main")
    git(tree.ws, "add", "c.txt")
    git(tree.ws, "commit", "-qm", "a new start")


def test_a_repository_made_again_at_the_same_path_is_not_offered_the_old_ones_states(
    scratch_env: Tree, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = scratch_env
    old = _snapshot.record(str(tree.ws), "x")
    assert old is not None
    old_store = Path(_snapshot.store_of(str(tree.ws / ".git")))
    assert (old_store / "objects").is_dir()
    _remade(tree)
    refs = git(tree.ws, "for-each-ref", "--format=%(refname)")
    assert _snapshot.snapshots(str(tree.ws)) == []
    with pytest.raises(LookupError, match="no write-guard snapshot matches"):
        _snapshot.restore(str(tree.ws), old.commit[:12])
    git(tree.ws, "symbolic-ref", "HEAD", "refs/heads/feature")  # a branch the old one had
    recovered = _snapshot.recover(str(tree.ws))
    assert not recovered.stored and recovered.objects == 0 and recovered.refs == ()
    assert git(tree.ws, "for-each-ref", "--format=%(refname)") == refs
    git(tree.ws, "symbolic-ref", "HEAD", "refs/heads/main")
    # The listing says where the old repository's states are, as not this one's.
    restore_cli(None, repo=str(tree.ws))
    shown = capsys.readouterr().out
    assert "no write-guard snapshots of this work tree" in shown
    assert str(old_store) in shown and "not this repository's" in shown
    # The new repository's own store: the old one's is left as it was.
    packs = sorted(os.listdir(old_store / "objects" / "pack"))
    (tree.ws / "c.txt").write_text("new work\n")
    new = _snapshot.record(str(tree.ws), "y")
    assert new is not None and not new.unstored
    assert [snap.ref for snap in _snapshot.snapshots(str(tree.ws))] == [new.ref]
    assert Path(_snapshot.store_of(str(tree.ws / ".git"))) != old_store
    assert sorted(os.listdir(old_store / "objects" / "pack")) == packs


def test_a_repository_emptied_by_a_command_is_still_the_same_repository(
    scratch_env: Tree,
) -> None:
    tree = scratch_env
    snap = _snapshot.record(str(tree.ws), "x")
    assert snap is not None
    # The work thrown away, then all a sandboxed command can delete in `.git`: everything
    # but the config, the hooks and write-guard's refs (read-only); then `git init` again.
    (tree.ws / "a.txt").write_text("a\n")
    (tree.ws / "b.txt").unlink()
    dot_git = tree.ws / ".git"
    for entry in dot_git.iterdir():
        if entry.name not in ("config", "hooks", "refs"):
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    for entry in (dot_git / "refs").iterdir():
        if entry.name != "write-guard":
            shutil.rmtree(entry)
    git(tree.ws, "init", "-q", "-b", "main")
    assert [found.ref for found in _snapshot.snapshots(str(tree.ws))] == [snap.ref]
    restored = _snapshot.restore(str(tree.ws), snap.name)
    assert restored.recovered.objects > 0
    assert (tree.ws / "a.txt").read_text() == DIRTY


def _as_before_ids(tree: Tree) -> Path:
    """The repository and its store as a write-guard before repository ids left them: no
    id, the store named by the path alone."""
    store = Path(_snapshot.store_of(str(tree.ws / ".git")))
    (tree.ws / ".git" / _snapshot.ID_FILE).unlink()
    legacy = store.with_name(store.name.split("-", 1)[0] + ".git")
    store.rename(legacy)
    return legacy


def test_the_store_of_before_ids_stays_the_repositorys_own(scratch_env: Tree) -> None:
    tree = scratch_env
    first = _snapshot.record(str(tree.ws), "x")
    assert first is not None
    _as_before_ids(tree)
    (tree.ws / "c.txt").write_text("changed\n")
    second = _snapshot.record(str(tree.ws), "y")
    assert second is not None and not second.unstored
    listed = [snap.ref for snap in _snapshot.snapshots(str(tree.ws))]
    assert sorted(listed) == sorted([first.ref, second.ref])
    assert _snapshot.other_stores(str(tree.ws / ".git")) == []


def test_the_store_of_before_ids_is_not_given_to_a_repository_made_again(
    scratch_env: Tree,
) -> None:
    tree = scratch_env
    assert _snapshot.record(str(tree.ws), "x") is not None
    legacy = _as_before_ids(tree)
    _remade(tree)
    (tree.ws / "c.txt").write_text("new work\n")
    new = _snapshot.record(str(tree.ws), "y")
    assert new is not None
    assert [snap.ref for snap in _snapshot.snapshots(str(tree.ws))] == [new.ref]
    assert _snapshot.other_stores(str(tree.ws / ".git")) == [str(legacy)]
