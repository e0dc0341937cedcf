"""Snapshots hold the untracked files too, without touching the work tree, the index or the
stash list, within a size cap; `hookchain restore` brings them back. Real git, only in the
throwaway tree (see `wg_jail`)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from structlog.testing import capture_logs
from wg_jail import BWRAP, UNTRACKED, Tree, git, guard_decides, restore_the_snapshot
from write_guard._snapshot import UNTRACKED_FILE_MAX, record, recover, restore, snapshots

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


def _other_repository(tree: Tree) -> Path:
    """A repository outside every root, with a commit and uncommitted work of its own."""
    other = tree.root / "out" / "other"
    other.mkdir(parents=True)
    git(other, "init", "-q", "-b", "main")
    (other / "o.txt").write_text("o\n")
    git(other, "add", "o.txt")
    git(other, "commit", "-qm", "other")
    (other / "o.txt").write_text("other's work\n")
    git(other, "worktree", "add", "-q", str(tree.root / "out" / "other-wt"), "-b", "w")
    return other


def _everything_under(folder: Path) -> dict[str, int]:
    return {str(path): path.lstat().st_size for path in folder.rglob("*")}


@pytest.mark.parametrize(
    "planted",
    ["gitfile", "gitfile-to-worktree", "relative-gitfile", "git-dir-commondir", "git-dir-links"],
)
def test_a_git_redirection_planted_in_a_folder_is_not_followed(
    scratch_env: Tree, planted: str
) -> None:
    tree = scratch_env
    other = _other_repository(tree)
    folder = tree.ws / "planted"
    folder.mkdir()
    (folder / "x.txt").write_text("x\n")
    dot_git = folder / ".git"
    if planted == "gitfile":
        dot_git.write_text(f"gitdir: {other / '.git'}\n")
    elif planted == "gitfile-to-worktree":  # a linked work tree's git dir, named elsewhere
        dot_git.write_text(f"gitdir: {other / '.git' / 'worktrees' / 'other-wt'}\n")
    elif planted == "relative-gitfile":
        dot_git.write_text("gitdir: ../../out/other/.git\n")
    else:  # a `.git` folder of the command's making that leads into the other's
        dot_git.mkdir()
        (dot_git / "HEAD").write_text("ref: refs/heads/main\n")
        (dot_git / "index").write_bytes((other / ".git" / "index").read_bytes())
        if planted == "git-dir-commondir":
            (dot_git / "commondir").write_text(f"{other / '.git'}\n")
        else:
            for name in ("objects", "refs", "config"):
                (dot_git / name).symlink_to(other / ".git" / name)
    # git itself follows it: the planted folder is a work tree of the other repository.
    assert git(folder, "rev-parse", "--verify", "HEAD") == git(other, "rev-parse", "HEAD")
    before = _everything_under(other / ".git")
    data = tree.root / "data"
    stores = _everything_under(data)
    assert record(str(folder), "x") is None
    assert _everything_under(other / ".git") == before
    assert _everything_under(data) == stores
    # Nor does the person's restore there write into the other repository.
    if planted == "git-dir-links":  # the `.git` folder is this one's (no store: no write)
        assert not recover(str(folder)).stored
    else:
        for step in (snapshots, recover):
            with pytest.raises(LookupError, match="does not name this work tree back"):
                step(str(folder))
        with pytest.raises(LookupError, match="does not name this work tree back"):
            restore(str(folder), "x")
    assert _everything_under(other / ".git") == before


def test_git_dir_names_in_the_environment_are_not_followed(
    scratch_env: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = scratch_env
    other = _other_repository(tree)
    before = _everything_under(other / ".git")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    snap = record(str(tree.ws), "x")
    assert snap is not None
    assert _everything_under(other / ".git") == before
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_WORK_TREE")
    assert git(tree.ws, "show", f"{snap.commit}:a.txt") == "dirty\n"


def test_the_gitfiles_git_writes_are_followed(scratch_env: Tree) -> None:
    tree = scratch_env
    # A linked work tree: its git dir's `gitdir` names its `.git` file back.
    linked = tree.root / "linked"
    git(tree.ws, "worktree", "add", "-q", str(linked), "-b", "linked")
    (linked / "a.txt").write_text("linked work\n")
    snap = record(str(linked), "x")
    assert snap is not None
    assert git(linked, "show", f"{snap.commit}:a.txt") == "linked work\n"
    # A submodule: its git dir's `core.worktree` names its folder.
    lib = tree.root / "lib"
    lib.mkdir()
    git(lib, "init", "-q", "-b", "main")
    (lib / "l.txt").write_text("l\n")
    git(lib, "add", "l.txt")
    git(lib, "commit", "-qm", "lib")
    git(tree.ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib),
        "mod")  # fmt: skip
    (tree.ws / "mod" / "l.txt").write_text("module work\n")
    snap = record(str(tree.ws / "mod"), "x")
    assert snap is not None
    assert git(tree.ws / "mod", "show", f"{snap.commit}:l.txt") == "module work\n"


def test_a_separate_git_dir_is_followed_once_its_config_names_the_work_tree(
    scratch_env: Tree,
) -> None:
    tree = scratch_env
    work, git_dir = tree.root / "sep", tree.root / "sep.git"
    git(tree.root, "init", "-q", "-b", "main", f"--separate-git-dir={git_dir}", str(work))
    (work / "s.txt").write_text("s\n")
    git(work, "add", "s.txt")
    git(work, "commit", "-qm", "s")
    (work / "s.txt").write_text("separate work\n")
    # git writes no back-reference for it: a gitfile like any planted one.
    assert record(str(work), "x") is None
    git(work, "config", "core.worktree", str(work))
    snap = record(str(work), "x")
    assert snap is not None
    assert git(work, "show", f"{snap.commit}:s.txt") == "separate work\n"


def test_a_machine_without_a_git_identity_still_records(
    git_env: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No user.email anywhere and guessing switched off: `git commit-tree` refuses to commit as
    # nobody, and the untracked files' commit (and so the snapshot) would fail.
    empty = git_env.root / "home-without-identity"
    empty.mkdir()
    monkeypatch.setenv("HOME", str(empty))
    for key in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(key, raising=False)
    git(git_env.ws, "config", "user.useConfigOnly", "true")
    snap = record(str(git_env.ws), "a command")
    assert snap is not None
    assert git_env.run(f"git show {snap.commit}^3:notes.txt").stdout == UNTRACKED
