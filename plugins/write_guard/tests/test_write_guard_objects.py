"""A command that deletes the repository's objects or refs (everything in `.git` but its
config, hooks and write-guard's refs is writable under the sandbox, so that `git commit`
works) loses neither the uncommitted work write-guard recorded nor the history: write-guard's
own copy, in hookchain's data dir out of the sandbox's reach, brings them back with
`hookchain restore`. Real bash and git, only in the throwaway tree (see `wg_jail`)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import zlib
from pathlib import Path

import pytest
import typer
from wg_jail import (
    BWRAP,
    DIRTY,
    HOOKCHAIN,
    UNTRACKED,
    Ran,
    Tree,
    _sh,
    guard_decides,
    restore_the_snapshot,
)
from write_guard._cli import restore as restore_cli

from write_guard import _snapshot

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(BWRAP is None, reason="needs bwrap")]
# A script the git gate cannot read: it throws the work away, then the history and the
# snapshots with it (their refs are read-only under the sandbox, their objects are not).
_DISCARD = (
    "python3 -c \"import subprocess; subprocess.run(['git', 'reset', '-q', '--hard']); "
    "subprocess.run(['git', 'clean', '-qfd'])\""
)
ATTACKS = {
    "rm": f"{_DISCARD} && rm -rf .git/objects/*",
    "python": (
        'python3 -c "import os, shutil, subprocess; '
        "subprocess.run(['git', 'reset', '-q', '--hard']); "
        "subprocess.run(['git', 'clean', '-qfd']); "
        "shutil.rmtree('.git/objects'); shutil.rmtree('.git/refs/heads'); "
        "os.path.exists('.git/packed-refs') and os.remove('.git/packed-refs')\""
    ),
    # All of `.git` that can go (the config, the hooks and write-guard's refs are mounts).
    "everything": (
        f'{_DISCARD} && python3 -c "import os, shutil; '
        "[shutil.rmtree(e.path, ignore_errors=True) if e.is_dir() else os.remove(e.path) "
        "for e in os.scandir('.git') if e.name not in ('config', 'hooks')]\""
    ),
    "gc": (
        "printf 'git reset -q --hard; git clean -qfd; rm -rf .git/refs/heads .git/refs/tags "
        '.git/logs; git gc -q --prune=now; rm -rf .git/objects/pack\\n\' > "$TMPDIR/s.sh" '
        '&& sh "$TMPDIR/s.sh" 2>/dev/null'
    ),
}


def _refs(tree: Tree) -> str:
    return tree.run(
        "git for-each-ref --format='%(refname) %(objectname)' refs/heads refs/tags"
    ).stdout


async def _run_guarded(tree: Tree, command: str) -> Ran:
    verdict = await guard_decides(tree, command)
    assert verdict.denied is None and verdict.command is not None, verdict
    assert verdict.updated is not None  # the sandbox's route: the command runs confined
    return tree.run(verdict.command)


def _objects(idx: Path) -> int:
    with open(idx, "rb") as handle:
        shown = subprocess.run(["git", "show-index"], stdin=handle, capture_output=True,
                               check=True, timeout=30)  # fmt: skip
    return len(shown.stdout.splitlines())


@pytest.mark.parametrize("attack", sorted(ATTACKS))
async def test_work_and_history_come_back_after_the_objects_are_deleted(
    git_env: Tree, attack: str
) -> None:
    tree = git_env
    refs = _refs(tree)
    await _run_guarded(tree, ATTACKS[attack])
    # The attack did its harm: the work is gone and git no longer reads the history.
    assert (tree.ws / "a.txt").read_text() != DIRTY and not (tree.ws / "notes.txt").exists()
    assert tree.run("git log -1 --format=%s main").rc != 0
    restored = restore_the_snapshot(tree)
    assert restored.rc == 0, restored
    assert "objects the repository had lost" in restored.stdout
    assert (tree.ws / "a.txt").read_text() == DIRTY
    assert (tree.ws / "b.txt").read_text() == "b\n"
    assert (tree.ws / "notes.txt").read_text() == UNTRACKED
    # The history, every branch and tag as they were (main, feature, v1).
    assert _refs(tree) == refs
    assert tree.run("git log --format=%s feature").stdout == "feature\nfirst\n"
    assert tree.run("git fsck --connectivity-only --no-dangling").rc == 0


async def test_a_clean_tree_keeps_its_history_too(git_env: Tree) -> None:
    tree = git_env
    _sh(tree.ws, "git", "add", "-A")
    _sh(tree.ws, "git", "commit", "-qm", "all of it")
    refs = _refs(tree)
    # Nothing to record: still, HEAD's history is copied (the first time, every branch's).
    await _run_guarded(tree, "echo x > new.txt")
    assert tree.run("git for-each-ref refs/write-guard/snapshots").stdout == ""
    (tree.ws / "new.txt").unlink()
    _sh(tree.ws, "git", "commit", "-qm", "second", "--allow-empty")
    refs_now = _refs(tree)
    assert refs_now != refs
    # The next command: HEAD moved, the new commit is copied.
    await _run_guarded(tree, "rm -rf .git/objects .git/refs/heads .git/HEAD .git/index")
    assert tree.run("git status").rc != 0
    recovered = tree.run(f"{HOOKCHAIN} restore --history")
    assert recovered.rc == 0, recovered
    assert "made HEAD again" in recovered.stdout and "read the index again" in recovered.stdout
    assert _refs(tree) == refs_now
    assert tree.run("git log --format=%s").stdout == "second\nall of it\nfirst\n"
    assert tree.run("git status --porcelain").stdout == ""


async def test_the_copy_is_out_of_the_commands_reach(git_env: Tree) -> None:
    tree = git_env
    data = tree.root / "data"
    # Python: the line analysis would refuse an `rm` it can read before the sandbox is tried.
    command = (
        f"python3 -c \"import os, shutil; open('seen.txt', 'w').write(' '.join(os.listdir("
        f"'{data}'))); shutil.rmtree('{data}/write-guard', ignore_errors=True)\""
    )
    await _run_guarded(tree, "touch new.txt")
    store = Path(_snapshot.store_of(str(tree.ws / ".git")))
    assert store.is_relative_to(data) and (store / "objects").is_dir()
    tree.run(command)  # unguarded (the jail alone): the copy is gone
    assert not (store / "objects").is_dir()
    tree.reset()  # the repository made again: a store of its own
    await _run_guarded(tree, "touch new.txt")
    store = Path(_snapshot.store_of(str(tree.ws / ".git")))
    packs = sorted(os.listdir(store / "objects" / "pack"))
    assert packs
    await _run_guarded(tree, command)
    assert (tree.ws / "seen.txt").read_text() == ""  # hidden: an empty read-only folder
    # Still there (the command's own snapshot added a pack before it ran).
    assert set(packs) < set(os.listdir(store / "objects" / "pack"))


def test_a_second_snapshot_copies_only_its_new_objects(git_env: Tree) -> None:
    tree = git_env
    first = _snapshot.record(str(tree.ws), "x")
    assert first is not None
    store = Path(_snapshot.store_of(str(tree.ws / ".git")))

    def packed() -> dict[str, int]:
        return {idx.name: _objects(idx) for idx in (store / "objects" / "pack").glob("*.idx")}

    seeded = packed()
    (tree.ws / "c.txt").write_text("changed\n")
    second = _snapshot.record(str(tree.ws), "y")
    assert second is not None and second.commit != first.commit
    added = {name: count for name, count in packed().items() if name not in seeded}
    # The snapshot commit, the new root tree and c.txt's blob (its index and untracked
    # commits are the first's: the jail's git dates are fixed); not a.txt's changed blob,
    # which only the first snapshot's tree holds.
    assert list(added.values()) == [3], added
    assert sum(seeded.values()) > 10  # the first copy: every branch's and tag's history
    # Both snapshots in the store, each whole (its history included).
    listed = _sh(tree.ws, "git", f"--git-dir={store}", "for-each-ref", "--format=%(refname)")
    assert first.ref in listed and second.ref in listed
    assert _sh(tree.ws, "git", f"--git-dir={store}", "fsck", "--connectivity-only") == ""


async def test_git_commit_and_gc_still_work_and_nothing_is_lost(git_env: Tree) -> None:
    tree = git_env
    ran = await _run_guarded(tree, "git add -A && git commit -qm work && git gc -q")
    assert ran.rc == 0, ran
    assert tree.run("git log -1 --format=%s").stdout == "work\n"
    assert tree.run("git status --porcelain").stdout == ""
    # A repository that lost nothing gets nothing back; a normal snapshot restores as before.
    assert _snapshot.recover(str(tree.ws)) == _snapshot.Recovered(0, (), False, False)
    tree.run("git reset -q --hard HEAD~1")
    restored = restore_the_snapshot(tree)
    assert restored.rc == 0 and "objects the repository had lost" not in restored.stdout
    assert (tree.ws / "a.txt").read_text() == DIRTY


def test_a_copy_under_way_is_not_waited_for_and_one_that_died_is_taken_over(
    git_env: Tree,
) -> None:
    tree = git_env
    store = Path(_snapshot.store_of(str(tree.ws / ".git"), make=True))
    store.mkdir(parents=True)
    _sh(tree.ws, "git", "init", "-q", "--bare", str(store))
    lock = store / "write-guard.lock"
    lock.write_text("")
    under_way = _snapshot.record(str(tree.ws), "x")
    assert under_way is not None and "under way" in under_way.unstored
    listed = "--format=%(refname)"
    assert _sh(tree.ws, "git", f"--git-dir={store}", "for-each-ref", listed) == ""
    os.utime(lock, (0, 0))  # its copy died long ago
    (tree.ws / "c.txt").write_text("changed\n")
    taken_over = _snapshot.record(str(tree.ws), "y")
    assert taken_over is not None and not lock.exists()
    refs = _sh(tree.ws, "git", f"--git-dir={store}", "for-each-ref", listed).split()
    # The first copy that finished: every branch and tag, HEAD, this snapshot and the one
    # the copy under way kept from the store.
    assert refs == sorted(
        ["refs/heads/feature", "refs/heads/main", "refs/tags/v1", _snapshot.HEAD_REF,
         taken_over.ref, under_way.ref]
    )  # fmt: skip


def test_a_branch_deleted_in_a_sound_repository_stays_deleted(git_env: Tree) -> None:
    tree = git_env
    assert _snapshot.record(str(tree.ws), "x") is not None  # the store holds `feature`
    _sh(tree.ws, "git", "branch", "-qD", "feature")
    _sh(tree.ws, "git", "reflog", "expire", "--expire=now", "--all")
    _sh(tree.ws, "git", "gc", "-q", "--prune=now")
    recovered = _snapshot.recover(str(tree.ws))
    assert recovered.objects > 0  # its commit, pruned, is back among the objects
    assert recovered.refs == () and not recovered.head
    assert "refs/heads/feature" not in _refs(tree)


def test_a_branch_name_the_store_cannot_hold_still_keeps_head(git_env: Tree) -> None:
    tree = git_env
    assert _snapshot.record(str(tree.ws), "x") is not None  # the store holds `feature`
    _sh(tree.ws, "git", "branch", "-qD", "feature")
    _sh(tree.ws, "git", "checkout", "-q", "-b", "feature/x")
    _sh(tree.ws, "git", "commit", "-qm", "on feature/x", "--allow-empty")
    (tree.ws / "c.txt").write_text("changed\n")
    snap = _snapshot.record(str(tree.ws), "y")
    assert snap is not None
    store = Path(_snapshot.store_of(str(tree.ws / ".git")))
    head = _sh(tree.ws, "git", "rev-parse", "HEAD").strip()
    shown = _sh(tree.ws, "git", f"--git-dir={store}", "rev-parse", _snapshot.HEAD_REF, snap.ref)
    assert shown.split() == [head, snap.commit]


def test_small_packs_are_rolled_up_and_every_snapshot_stays_whole(
    git_env: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = git_env
    monkeypatch.setattr(_snapshot, "STORE_PACKS_MAX", 3)
    made = []
    for round_ in range(8):
        (tree.ws / "c.txt").write_text(f"round {round_}\n")
        snap = _snapshot.record(str(tree.ws), "x")
        assert snap is not None
        made.append(snap)
    store = Path(_snapshot.store_of(str(tree.ws / ".git")))
    assert len(list((store / "objects" / "pack").glob("*.pack"))) <= 4
    for snap in made:
        shown = _sh(tree.ws, "git", f"--git-dir={store}", "show", f"{snap.commit}:c.txt")
        assert shown == f"round {made.index(snap)}\n"
    assert _sh(tree.ws, "git", f"--git-dir={store}", "fsck", "--connectivity-only") == ""


def test_a_ref_naming_a_lost_object_stays_and_the_others_come_back(git_env: Tree) -> None:
    tree = git_env
    assert _snapshot.record(str(tree.ws), "x") is not None  # the store holds main, feature
    refs = tree.ws / ".git" / "refs" / "heads"
    (refs / "feature").write_text("1" * 40 + "\n")  # an object neither has
    (refs / "main").unlink()  # HEAD's branch gone: HEAD does not resolve
    recovered = _snapshot.recover(str(tree.ws))
    assert "refs/heads/main" in recovered.refs and "refs/heads/feature" not in recovered.refs
    assert (refs / "feature").read_text() == "1" * 40 + "\n"
    assert tree.run("git log -1 --format=%s main").stdout == "first\n"


def test_recover_writes_through_no_symlink_a_command_left_in_git(scratch_env: Tree) -> None:
    tree = scratch_env
    assert _snapshot.record(str(tree.ws), "x") is not None
    outside = tree.root / "home" / ".config-autostart-new"
    head = tree.ws / ".git" / "HEAD"
    head.unlink()
    head.symlink_to(outside)  # dangling: a naive exists() calls HEAD missing
    with pytest.raises(RuntimeError, match="symlink"):
        _snapshot.recover(str(tree.ws))
    assert not os.path.lexists(outside)
    head.unlink()
    head.write_text("ref: refs/heads/main\n")
    # A folder git writes the objects into, pointing out of the repository.
    elsewhere = tree.root / "out" / "packs"
    elsewhere.mkdir(parents=True)
    pack = tree.ws / ".git" / "objects" / "pack"
    for name in os.listdir(pack):
        os.remove(pack / name)
    pack.rmdir()
    pack.symlink_to(elsewhere)
    with pytest.raises(RuntimeError, match="symlink"):
        _snapshot.recover(str(tree.ws))
    assert os.listdir(elsewhere) == []


def _blob_of(tree: Tree, commit: str, name: str) -> str:
    return _sh(tree.ws, "git", "rev-parse", f"{commit}:{name}").strip()


@pytest.mark.parametrize("forgery", ["replace", "overwrite"])
def test_restore_trusts_no_object_a_command_replaced_or_overwrote(
    scratch_env: Tree, forgery: str
) -> None:
    tree = scratch_env
    snap = _snapshot.record(str(tree.ws), "x")
    assert snap is not None
    blob = _blob_of(tree, snap.commit, "a.txt")
    if forgery == "replace":  # `.git/refs` is writable: a replace ref swaps the content
        garbage = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=tree.ws,
                                 input="GARBAGE\n", capture_output=True, text=True,
                                 check=True, timeout=30).stdout.strip()  # fmt: skip
        _sh(tree.ws, "git", "replace", blob, garbage)
    else:  # the loose object's file, rewritten with other content under the same name
        loose = tree.ws / ".git" / "objects" / blob[:2] / blob[2:]
        loose.chmod(0o644)
        loose.write_bytes(zlib.compress(b"blob 8\0GARBAGE\n"))
    _sh(tree.ws, "git", "checkout", "--", "a.txt")
    _snapshot.restore(str(tree.ws), snap.commit[:12])
    assert (tree.ws / "a.txt").read_text() == DIRTY


def test_a_repository_inside_another_is_never_taken_for_the_outer_one(scratch_env: Tree) -> None:
    tree = scratch_env
    outer_refs = _sh(tree.ws, "git", "for-each-ref", "--format=%(refname)")
    inner = tree.ws / "proj"
    inner.mkdir()
    _sh(inner, "git", "init", "-q", "-b", "main")
    (inner / "a.txt").write_text("a\n")
    _sh(inner, "git", "add", "-A")
    _sh(inner, "git", "-c", "user.name=a", "-c", "user.email=a@x.invalid", "commit", "-qm", "i")
    (inner / "a.txt").write_text("precious\n")
    snap = _snapshot.record(str(inner), "x")
    assert snap is not None
    shutil.rmtree(inner / ".git" / "objects")
    assert _snapshot.locate(str(inner))[0] == str(inner)
    assert [found.ref for found in _snapshot.snapshots(str(inner))] == [snap.ref]
    assert _snapshot.record(str(inner), "y") is None  # git cannot read it: nothing recorded
    assert _sh(tree.ws, "git", "for-each-ref", "--format=%(refname)") == outer_refs
    assert _snapshot.recover(str(inner)).objects > 0
    _sh(inner, "git", "checkout", "--", "a.txt")
    _snapshot.restore(str(inner), snap.commit[:12])
    assert (inner / "a.txt").read_text() == "precious\n"


def test_an_object_planted_under_the_name_of_work_to_come_is_not_what_the_store_keeps(
    scratch_env: Tree,
) -> None:
    tree = scratch_env
    assert _snapshot.record(str(tree.ws), "warm") is not None  # the first copy is done
    content = b"precious\n"
    blob = hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()
    loose = tree.ws / ".git" / "objects" / blob[:2] / blob[2:]
    loose.parent.mkdir(exist_ok=True)
    loose.write_bytes(zlib.compress(b"blob 8\0GARBAGE\n"))  # the name, other content
    (tree.ws / "a.txt").write_bytes(content)  # the person's work, written after
    snap = _snapshot.record(str(tree.ws), "x")
    assert snap is not None
    store = _snapshot.store_of(str(tree.ws / ".git"))
    shown = subprocess.run(["git", f"--git-dir={store}", "cat-file", "-p", blob],
                           capture_output=True, check=False, timeout=30)  # fmt: skip
    assert shown.stdout == content
    assert _sh(tree.ws, "git", f"--git-dir={store}", "fsck", "--connectivity-only") == ""


def test_a_store_that_cannot_be_written_keeps_the_snapshot_and_is_tried_again(
    scratch_env: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = scratch_env
    blocker = tree.root / "data-file"
    blocker.write_text("not a folder\n")
    monkeypatch.setenv("HOOKCHAIN_DATA_DIR", str(blocker / "d"))
    last: dict[str, str] = {}
    first = _snapshot.record(str(tree.ws), "x", last)
    # In the repository, and said to be there only (not "no snapshot").
    assert first is not None and "NotADirectoryError" in first.unstored
    assert _sh(tree.ws, "git", "rev-parse", first.ref).strip() == first.commit
    assert last == {}  # not taken for copied: the same state is offered again
    monkeypatch.setenv("HOOKCHAIN_DATA_DIR", str(tree.root / "data"))
    again = _snapshot.record(str(tree.ws), "y", last)
    assert again is not None and again.unstored == ""
    store = _snapshot.store_of(str(tree.ws / ".git"))
    listed = _sh(tree.ws, "git", f"--git-dir={store}", "for-each-ref", "--format=%(refname)",
                 _snapshot.REF_PREFIX).split()  # fmt: skip
    assert first.ref in listed and again.ref in listed
    assert _snapshot.record(str(tree.ws), "z", last) is None  # now recorded and copied


def test_a_detached_head_comes_back_detached_at_its_commit(scratch_env: Tree) -> None:
    tree = scratch_env
    _sh(tree.ws, "git", "checkout", "-q", "--detach")
    _sh(tree.ws, "git", "commit", "-q", "--allow-empty", "-m", "detached work")
    detached = _sh(tree.ws, "git", "rev-parse", "HEAD").strip()
    assert _snapshot.record(str(tree.ws), "x") is not None
    git = tree.ws / ".git"
    for folder in ("objects", "refs/heads"):
        shutil.rmtree(git / folder)
    (git / "HEAD").unlink()
    (git / "index").unlink()
    recovered = _snapshot.recover(str(tree.ws))
    assert recovered.head
    assert (git / "HEAD").read_text() == detached + "\n"
    assert tree.run("git log -1 --format=%s").stdout == "detached work\n"


def test_restore_history_says_what_it_found_and_refuses_a_snapshot_name(
    scratch_env: Tree, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = scratch_env
    repo = str(tree.ws)
    restore_cli(None, repo=repo, history=True)  # nothing recorded yet: no store
    assert "no write-guard store" in capsys.readouterr().out
    assert _snapshot.record(repo, "x") is not None
    restore_cli(None, repo=repo, history=True)
    assert "nothing was missing" in capsys.readouterr().out
    with pytest.raises(typer.Exit):
        restore_cli("20260101", repo=repo, history=True)
    assert "not both" in capsys.readouterr().err


def test_an_unborn_branch_is_not_a_broken_head_and_lacking_refs_are_named(
    scratch_env: Tree, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = scratch_env
    assert _snapshot.record(str(tree.ws), "x") is not None  # the store holds feature, v1
    _sh(tree.ws, "git", "branch", "-qD", "feature")
    _sh(tree.ws, "git", "checkout", "-q", "--orphan", "fresh")
    recovered = _snapshot.recover(str(tree.ws))
    # A sound repository: the branch deleted on purpose stays deleted, and is named.
    assert recovered.refs == () and "refs/heads/feature" not in _refs(tree)
    assert "refs/heads/feature" in dict(recovered.absent)
    # A tag deleted, HEAD's branch intact: `restore --history` names it and how to make it.
    _sh(tree.ws, "git", "checkout", "-q", "-f", "main")
    _sh(tree.ws, "git", "tag", "-d", "v1")
    restore_cli(None, repo=str(tree.ws), history=True)
    shown = capsys.readouterr().out
    assert "refs/tags/v1" in shown and "git update-ref refs/tags/v1" in shown


def test_a_copy_leaves_the_lock_of_one_that_took_over_from_it(
    scratch_env: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = scratch_env
    store = Path(_snapshot.store_of(str(tree.ws / ".git"), make=True))
    lock = store / "write-guard.lock"
    copy = _snapshot._copy

    def taken_over_meanwhile(*args: object, **kwargs: object) -> None:
        copy(*args, **kwargs)  # type: ignore[arg-type]
        lock.write_text("another copier's\n")  # it judged this one dead and took the lock

    monkeypatch.setattr(_snapshot, "_copy", taken_over_meanwhile)
    assert _snapshot.record(str(tree.ws), "x") is not None
    assert lock.read_text() == "another copier's\n"  # theirs: left for them to remove


def test_a_copy_that_keeps_failing_is_tried_again_only_after_a_while(
    scratch_env: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = scratch_env
    tried: list[int] = []

    def failing(*_args: object) -> None:
        tried.append(1)
        raise RuntimeError("git pack-objects failed: timed out")

    monkeypatch.setattr(_snapshot, "_copy", failing)
    reasons = []
    for round_ in range(3):
        (tree.ws / "c.txt").write_text(f"round {round_}\n")
        snap = _snapshot.record(str(tree.ws), "x")
        assert snap is not None
        reasons.append(snap.unstored)
    assert len(tried) == 1  # not a full attempt at every command
    assert "timed out" in reasons[0] and "tried again" in reasons[1]


def test_a_branch_the_store_cannot_hold_is_not_tried_again_at_every_command(
    scratch_env: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = scratch_env
    _sh(tree.ws, "git", "add", "-A")
    _sh(tree.ws, "git", "commit", "-qm", "clean")
    assert _snapshot.record(str(tree.ws), "x") is None  # the store holds `feature`
    _sh(tree.ws, "git", "branch", "-qD", "feature")
    _sh(tree.ws, "git", "checkout", "-q", "-b", "feature/x")
    assert _snapshot.record(str(tree.ws), "y") is None  # HEAD kept, its branch cannot be
    ran: list[list[str]] = []
    real = subprocess.run

    def counting(args: list[str], *rest: object, **kwargs: object) -> object:
        ran.append(args)
        return real(args, *rest, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(subprocess, "run", counting)
    for _ in range(3):
        assert _snapshot.record(str(tree.ws), "z") is None
    monkeypatch.setattr(subprocess, "run", real)
    assert not [args for args in ran if "update-ref" in args]


def test_a_snapshot_the_store_never_got_still_comes_back(scratch_env: Tree) -> None:
    tree = scratch_env
    store = Path(_snapshot.store_of(str(tree.ws / ".git"), make=True))
    store.mkdir(parents=True)
    _sh(tree.ws, "git", "init", "-q", "--bare", str(store))
    (store / "write-guard.lock").write_text("")  # a copy under way: this one is not copied
    snap = _snapshot.record(str(tree.ws), "x")
    assert snap is not None and snap.unstored
    _sh(tree.ws, "git", "checkout", "--", "a.txt")
    _snapshot.restore(str(tree.ws), snap.commit[:12])
    assert (tree.ws / "a.txt").read_text() == DIRTY


def test_a_git_symlink_planted_in_a_folder_records_nothing_into_its_target(
    scratch_env: Tree,
) -> None:
    tree = scratch_env
    planted = tree.root / "out" / "not-a-repo"
    planted.mkdir(parents=True)
    (planted / ".git").symlink_to(tree.ws / ".git")
    (planted / "x.txt").write_text("x\n")
    before = _sh(tree.ws, "git", "for-each-ref", "refs/write-guard")
    assert _snapshot.record(str(planted), "x") is None
    assert _sh(tree.ws, "git", "for-each-ref", "refs/write-guard") == before
