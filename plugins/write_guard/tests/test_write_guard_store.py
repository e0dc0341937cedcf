"""write-guard's store per work tree and per repository: linked work trees keep their own HEAD
and snapshots, a repository made again at the same path is offered nothing of the old one's,
and only the newest snapshots are kept. Real git, only in the throwaway tree (see `wg_jail`)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from framework import Host, SessionStart, ToolCall, ToolResult
from wg_attack_table import Attack
from wg_jail import BWRAP, DIRTY, Tree, attack_does_no_harm, git, guard_decides
from write_guard._cli import restore as restore_cli

import write_guard
from write_guard import _snapshot

pytestmark = pytest.mark.anyio
needs_bwrap = pytest.mark.skipif(BWRAP is None, reason="needs bubblewrap")
JAIL_MODES: dict[str, dict[str, object]] = {"sandbox": {}, "no-sandbox": {"sandbox": "off"}}


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


DAY_S = 86_400.0


def _names(cwd: Path, prefix: str = _snapshot.REF_PREFIX, store: Path | None = None) -> list[str]:
    """The snapshot names of a work tree, in the repository (or in `store`), newest first."""
    where = ["--git-dir", str(store)] if store is not None else []
    listed = git(cwd, *where, "for-each-ref", "--sort=-refname", "--format=%(refname)", prefix)
    return [ref[len(prefix) :] for ref in listed.split()]


def _store(tree: Tree) -> Path:
    return Path(_snapshot.store_of(str(tree.ws / ".git")))


def _record_changed(
    tree: Tree, text: str, retention: _snapshot.Retention, cwd: Path | None = None
) -> _snapshot.Snapshot:
    where = cwd or tree.ws
    (where / "c.txt").write_text(text + "\n")
    snap = _snapshot.record(str(where), "x", None, retention)
    assert snap is not None and not snap.unstored, snap
    return snap


def _ticking(monkeypatch: pytest.MonkeyPatch, start: float = 1_800_000_000.0) -> None:
    """A clock a second further at every snapshot: the order they were taken in is their
    names' (within one second it is their commits')."""
    ticks = iter(range(1_000))
    monkeypatch.setattr(_snapshot, "_now", lambda: start + next(ticks))


def test_only_the_newest_snapshots_of_a_work_tree_are_kept(
    scratch_env: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = scratch_env
    _ticking(monkeypatch)
    keep = _snapshot.Retention(kept=3, max_age_s=0)
    made = []
    for round_ in range(6):
        made.append(_record_changed(tree, f"round {round_}", keep).name)
        newest = made[::-1][:3]
        assert _names(tree.ws) == newest
        assert _names(tree.ws, store=_store(tree)) == newest
    # What is kept still restores.
    git(tree.ws, "reset", "-q", "--hard")
    _snapshot.restore(str(tree.ws), made[-1])
    assert (tree.ws / "c.txt").read_text() == "round 5\n"


def test_the_snapshot_just_taken_is_never_pruned(
    scratch_env: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = scratch_env
    # One second for all of them: the names sort by their commit, not by when they were made.
    now = 1_800_000_000.0
    monkeypatch.setattr(_snapshot, "_now", lambda: now)
    for round_ in range(5):
        snap = _record_changed(tree, f"round {round_}", _snapshot.Retention(kept=1, max_age_s=0))
        assert _names(tree.ws) == [snap.name]
        assert _names(tree.ws, store=_store(tree)) == [snap.name]
    # Nor by age: the limit shorter than the second it is named after.
    monkeypatch.setattr(_snapshot, "_now", lambda: now + 10.9)
    snap = _record_changed(tree, "old", _snapshot.Retention(kept=10, max_age_s=0.5))
    assert _names(tree.ws) == [snap.name]


def test_snapshots_older_than_the_age_limit_are_pruned(
    scratch_env: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = scratch_env
    month = _snapshot.Retention(kept=100, max_age_s=30 * DAY_S)
    start = 1_800_000_000.0
    made = {}
    for day in (0, 10, 31, 45):
        monkeypatch.setattr(_snapshot, "_now", lambda day=day: start + day * DAY_S)
        made[day] = _record_changed(tree, f"day {day}", month).name
    # At day 45: day 0 and 10 are past 30 days, day 31 is not.
    expected = [made[45], made[31]]
    assert _names(tree.ws) == expected
    assert _names(tree.ws, store=_store(tree)) == expected


def test_pruning_one_work_tree_leaves_the_others_snapshots(
    scratch_env: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = scratch_env
    _ticking(monkeypatch)
    linked = _linked(tree)
    keep = _snapshot.Retention(kept=1, max_age_s=0)
    theirs = [_record_changed(tree, f"linked {n}", keep, linked).name for n in range(1)]
    linked_prefix = _snapshot.WORKTREES_PREFIX + "linked/snapshots/"
    for round_ in range(3):
        _record_changed(tree, f"round {round_}", keep)
    assert _names(tree.ws, linked_prefix) == theirs
    assert _names(tree.ws, linked_prefix, _store(tree)) == theirs
    assert len(_names(tree.ws)) == 1


def test_a_snapshot_the_store_missed_and_past_the_limit_is_not_copied_again(
    scratch_env: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = scratch_env
    _ticking(monkeypatch)
    keep = _snapshot.Retention(kept=2, max_age_s=0)
    store = Path(_snapshot.store_of(str(tree.ws / ".git"), make=True))
    store.mkdir(parents=True)
    git(tree.ws, "init", "-q", "--bare", str(store))
    lock = store / "write-guard.lock"
    lock.write_text("")  # a copy under way: these stay in the repository only
    missed = []
    for round_ in range(2):
        (tree.ws / "c.txt").write_text(f"missed {round_}\n")
        snap = _snapshot.record(str(tree.ws), "x", None, keep)
        assert snap is not None and "under way" in snap.unstored
        missed.append(snap.name)
    lock.unlink()
    newest = [_record_changed(tree, f"round {n}", keep).name for n in range(2)]
    assert _names(tree.ws) == sorted(newest, reverse=True)
    assert _names(tree.ws, store=store) == sorted(newest, reverse=True)
    assert not set(missed) & set(_names(tree.ws, store=store))


def test_the_objects_only_pruned_snapshots_held_leave_the_store(
    scratch_env: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = scratch_env
    _ticking(monkeypatch)
    monkeypatch.setattr(_snapshot, "STORE_PACKS_MAX", 3)
    keep = _snapshot.Retention(kept=2, max_age_s=0)
    blobs = []
    for round_ in range(12):
        # Work of its own in every snapshot: 64 KiB no other snapshot holds.
        (tree.ws / "data.bin").write_bytes(os.urandom(65_536))
        snap = _record_changed(tree, f"round {round_}", keep)
        blobs.append(git(tree.ws, "rev-parse", f"{snap.commit}^3:data.bin").strip())
    store = _store(tree)
    held = git(tree.ws, "--git-dir", str(store), "cat-file", "--batch-all-objects",
               "--batch-check=%(objectname)").split()  # fmt: skip
    assert blobs[-1] in held and blobs[-2] in held
    assert not set(blobs[:6]) & set(held)  # gone with their snapshots
    packed = sum(path.stat().st_size for path in (store / "objects").rglob("*"))
    assert packed < 8 * 65_536, packed
    fsck = ("fsck", "--connectivity-only", "--no-dangling")
    assert git(tree.ws, "--git-dir", str(store), *fsck) == ""


async def test_the_retention_options_reach_the_snapshot(git_env: Tree) -> None:
    tree = git_env
    for round_ in range(3):
        (tree.ws / "c.txt").write_text(f"round {round_}\n")
        verdict = await guard_decides(tree, "touch new.txt", snapshots_kept=2)
        assert verdict.denied is None
    assert len(_names(tree.ws)) == 2


def test_the_same_state_recorded_twice_in_one_second_keeps_its_snapshot(
    scratch_env: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = scratch_env
    monkeypatch.setattr(_snapshot, "_now", lambda: 1_800_000_000.0)
    keep = _snapshot.Retention(kept=1, max_age_s=0)
    first = _snapshot.record(str(tree.ws), "x", None, keep)
    again = _snapshot.record(str(tree.ws), "x", None, keep)
    assert first is not None and again is not None and again.ref == first.ref
    assert not again.unstored, again.unstored
    assert _names(tree.ws) == [first.name]
    assert _names(tree.ws, store=_store(tree)) == [first.name]


# What write-guard keeps for a repository, attacked: each deletes or rewrites its store, the
# repository's snapshot refs or its id (which ties the repository to its store).
OWN_ATTACKS = {
    "rm-store": "rm -rf {DATA}/write-guard",
    "rm-snapshot-refs": "rm -rf .git/refs/write-guard",
    "rm-refs": "rm -rf .git/refs",
    "mv-snapshot-refs": "mv .git/refs/write-guard .git/refs/old",
    "rm-id": "rm -f .git/refs/write-guard/.id",
    "rewrite-id": "echo 0123456789abcdef0123456789abcdef > .git/refs/write-guard/.id",
    "python-rm-id": "python3 -c \"import os; os.remove('.git/refs/write-guard/.id')\"",
}


@needs_bwrap
@pytest.mark.parametrize("mode", JAIL_MODES)
@pytest.mark.parametrize("attack", sorted(OWN_ATTACKS))
async def test_no_command_takes_what_write_guard_keeps(
    git_env: Tree, attack: str, mode: str
) -> None:
    tree = git_env
    assert _snapshot.record(str(tree.ws), "before") is not None  # there is something to take
    case = Attack(attack, "write-guard-own", OWN_ATTACKS[attack])
    await attack_does_no_harm(tree, case, JAIL_MODES[mode])


@needs_bwrap
async def test_the_attack_check_counts_what_write_guard_kept_and_lost(git_env: Tree) -> None:
    tree = git_env
    verdict = await guard_decides(tree, "touch new.txt")
    assert verdict.command is not None
    held = tree.held()
    assert any("/objects/pack/" in path for path in held) and any(".id" in p for p in held)
    tree.run(f"rm -rf {tree.root / 'data' / 'write-guard'}")  # the jail alone: gone
    assert not tree.harm(tree.state())  # the tree's state leaves the store out
    assert tree.lost(held) == sorted(path for path in held if "/data/" in path)


@pytest.mark.parametrize(
    "path", [".git/refs/write-guard/.id", ".git/refs/write-guard/snapshots/20260101T000000-x"]
)
async def test_the_edit_tools_cannot_write_write_guards_refs(git_env: Tree, path: str) -> None:
    tree = git_env
    target = str(tree.ws / path)

    async def terminal(event: ToolCall) -> ToolResult:
        return ToolResult(output="wrote")

    async with Host(plugins=[write_guard], entry_points=False, store="memory://",
                    env={"HOME": str(tree.root / "home"), "CLAUDE_PROJECT_DIR": str(tree.ws)},
                    ) as host:  # fmt: skip
        await host.dispatch(SessionStart(session_id="s", cwd=str(tree.ws)))
        call = ToolCall(session_id="s", tool_use_id="t", tool="Write",
                        input={"file_path": target, "content": "0" * 32})  # fmt: skip
        outcome = await host.dispatch(call, terminal=terminal)
    assert isinstance(outcome.result, ToolResult) and outcome.result.denial is not None
    assert "protected" in outcome.result.denial.reason


# Work thrown away by a program that writes through its own options or inputs, which the
# line analysis does not read: the snapshot before it must be taken all the same.
UNREAD_WRITERS = {
    "sort-o": "sort -o a.txt c.txt",
    "awk-print": "awk '{ print > \"a.txt\" }' c.txt",
    "openssl-out": "openssl enc -base64 -in c.txt -out a.txt",
    "zip-move": "zip -q -m kept.zip notes.txt",
    "gzip": "gzip notes.txt",
    "ed-script": "printf '1d\\nw\\nq\\n' | ed -s a.txt",
}


@needs_bwrap
@pytest.mark.parametrize("mode", JAIL_MODES)
@pytest.mark.parametrize("attack", sorted(UNREAD_WRITERS))
async def test_work_a_program_overwrites_unread_is_recorded_first(
    tree: Tree, attack: str, mode: str
) -> None:
    case = Attack(attack, "unread-writer", UNREAD_WRITERS[attack])
    await attack_does_no_harm(tree, case, JAIL_MODES[mode])


@pytest.mark.parametrize(
    ("line", "reads_only"),
    [
        ("ls -la", True),
        ("cd sub && ls | head -5; echo done", True),
        ("cat a.txt | wc -l", True),
        ("for f in a b; do wc -l a.txt; done", True),
        ("X=1 cat a.txt", True),
        ("sort -o a.txt c.txt", False),
        ("sort a.txt", False),  # not proven: `sort` has options that write
        ("./ls", False),  # a path names any program
        ("/tmp/cat a.txt", False),
        ("pytest -q", False),
        ("make", False),
        ("echo x > a.txt", False),
        ("git status", False),
        ("X=1", True),
    ],
)
def test_a_snapshot_is_skipped_only_before_a_line_that_writes_no_file(
    line: str, reads_only: bool
) -> None:
    assert _snapshot.writes_no_file(line) is reads_only


async def test_a_line_that_only_reads_records_nothing(git_env: Tree) -> None:
    tree = git_env
    verdict = await guard_decides(tree, "ls -la && cat a.txt")
    assert verdict.denied is None
    assert _names(tree.ws) == []
    verdict = await guard_decides(tree, "sort -o a.txt c.txt")
    assert verdict.denied is None
    assert len(_names(tree.ws)) == 1
