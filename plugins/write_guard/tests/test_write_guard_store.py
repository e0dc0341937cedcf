"""write-guard's store per work tree and per repository: linked work trees keep their own HEAD
and snapshots. Real git, only in the throwaway tree (see `wg_jail`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from wg_jail import DIRTY, Tree, git

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
