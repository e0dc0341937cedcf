"""Reading an index's gitlinks as git does, and judging what a repository git enters would
run (see write_guard/_gitlink.py). Indexes are written by real git inside the jail, in each
format git writes and in forms only a command crafting the bytes would write; the parse must
name every gitlink `git ls-files -s` names there."""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from framework import (
    Action,
    Event,
    Host,
    SessionEnd,
    SessionStart,
    ToolCall,
    ToolResult,
    TurnComplete,
)
from wg_jail import BWRAP, Tree, dispatch_bash
from write_guard._gitlink import (
    _READ,
    RACY_NS,
    LinkState,
    LinkWatch,
    UnreadableIndex,
    index_links,
    inert_config,
    link_state,
    parse_index,
    quarantine,
    quarantine_text,
)

import write_guard

jail = pytest.mark.skipif(BWRAP is None, reason="real git runs only inside bubblewrap")
LINK = "git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),"


def _git_links(tree: Tree, folder: str = "ws") -> set[bytes]:
    listed = tree.run(f"cd {tree.root / folder} && git ls-files -s -z")
    assert listed.rc == 0, listed
    entries = [line.split(b"\t", 1) for line in listed.stdout.encode().split(b"\0") if line]
    # git takes any mode of S_IFGITLINK's type bits for one, whatever its other bits.
    return {name for head, name in entries if int(head.split()[0], 8) & 0o170000 == 0o160000}


def _parsed(tree: Tree, folder: str = "ws") -> set[bytes]:
    git_dir = tree.root / folder / ".git"
    found = parse_index((git_dir / "index").read_bytes(), 32 if folder == "sha" else 20)
    links = set(found.links)
    if found.shared is not None:
        shared = git_dir / ("sharedindex." + found.shared.hex())
        links |= parse_index(shared.read_bytes()).links
    return links


LONG = "/".join(["d" * 200] * 22) + "/sub"  # past the 12 bits of an entry's name length
FORMATS = {
    "v2": f"{LINK}a/one && {LINK}b/two",
    "v3-intent-to-add": f"touch n && git add -N n && {LINK}x",
    "v4": f"git update-index --index-version 4 && {LINK}lib/one && {LINK}lib/onex && {LINK}l",
    "split": f"{LINK}s1 && git update-index --split-index && {LINK}s2",
    "long-name": f"{LINK}{LONG}",
    "v4-long-name": f"git update-index --index-version 4 && {LINK}{LONG} && {LINK}{LONG}2",
}


@jail
@pytest.mark.parametrize("how", FORMATS)
def test_every_gitlink_git_lists_is_read(tree: Tree, how: str) -> None:
    assert tree.run(FORMATS[how]).rc == 0
    wanted = _git_links(tree)
    assert wanted and _parsed(tree) == wanted


@jail
def test_a_sha256_index_is_read(tree: Tree) -> None:
    made = tree.run(
        "git init -q --object-format=sha256 ../sha && cd ../sha && "
        "git commit -q --allow-empty -m s && " + LINK + "sub"
    )
    assert made.rc == 0, made
    assert _parsed(tree, "sha") == _git_links(tree, "sha") == {b"sub"}


@jail
def test_the_blocks_of_a_threaded_index_are_read(tree: Tree) -> None:
    # git writes an `IEOT` extension (offsets of blocks that threads read on their own) for
    # an index of 20,000 entries or more when index.threads allows it.
    lines = "".join(f"100644 {'e69de29bb2d1d6434b8b29ae775ad8c2e48c5391'}\tf/{n:05d}\n"
                    for n in range(20_500))  # fmt: skip
    made = tree.run(
        f"git update-index --index-info && {LINK}zz && git -c index.threads=4 update-index "
        "--index-version 4 && git -c index.threads=4 update-index --index-version 4",
        stdin=lines,
    )
    assert made.rc == 0, made
    data = (tree.ws / ".git" / "index").read_bytes()
    assert b"IEOT" in data
    assert _parsed(tree) == _git_links(tree) == {b"zz"}


def _set_mode(index: Path, name: bytes, mode: int) -> None:
    """Rewrite one entry's mode in a version-2 index, and its checksum (as a command could)."""
    data = bytearray(index.read_bytes())
    at = data.index(struct.pack(">H", len(name)) + name + b"\0") - 60
    struct.pack_into(">I", data, at + 24, mode)
    data[-20:] = hashlib.sha1(data[:-20]).digest()
    index.write_bytes(bytes(data))


@jail
@pytest.mark.parametrize("mode", [0xFFFFE000, 0o160644])
def test_a_mode_git_takes_for_a_gitlink_counts_whatever_its_other_bits(
    tree: Tree, mode: int
) -> None:
    assert tree.run("touch crafted && git add crafted").rc == 0
    _set_mode(tree.ws / ".git" / "index", b"crafted", mode)
    assert b"crafted" in _git_links(tree)  # git reads it as a gitlink
    assert b"crafted" in _parsed(tree)


def test_an_index_git_cannot_read_is_named_unreadable() -> None:
    for data in (b"", b"DIRC\0\0\0\x05\0\0\0\0", b"DIRC\0\0\0\x02\0\0\0\x09" + b"\0" * 80):
        with pytest.raises(UnreadableIndex):
            parse_index(data)


GIT_MADE = """[core]
\trepositoryformatversion = 0
\tfilemode = true
\tbare = false
\tlogallrefupdates = true
\tworktree = ../../../mod
[remote "origin"]
\turl = /t/lib
\tfetch = +refs/heads/*:refs/remotes/origin/*
[branch "main"]
\tremote = origin
\tmerge = refs/heads/main
"""


@pytest.mark.parametrize(
    ("text", "inert"),
    [
        (GIT_MADE, True),
        ("", True),
        ('# a comment\n; another\n[Remote "o"]\n\tURL = x\n', True),
        ("[core]\n\tfsmonitor = touch x\n", False),
        ("[core] fsmonitor = touch x\n", False),
        ("[CORE]\n\tFsMonitor=x\n", False),
        ("[include]\n\tpath = ../x\n", False),
        ('[includeIf "gitdir:/"]\n\tpath = ../x\n', False),
        ("[core]\n\tbare = false \\\n\tfsmonitor = x\n", False),
        ('[remote "o"]\n\turl = x\n\tuploadpack = touch y\n', False),
        ('[submodule "s"]\n\tupdate = !touch y\n', False),
        ("[core.x]\n\tbare = false\n", False),
        ("fsmonitor = x\n", False),
        ("[core\n", False),
        ("[extensions]\n\tworktreeConfig = true\n", False),
    ],
)
def test_only_settings_git_itself_writes_count_as_inert(text: str, inert: bool) -> None:
    assert inert_config(text) is inert


CHECKED_OUT = GIT_MADE.replace("../../../mod", "..")
"""A checked-out repository's config as git makes it (its work tree the `.git`'s folder)."""


def _index(*names: bytes, mode: int = 0o160000, extension: bytes = b"") -> bytes:
    """A version-2 index of gitlinks (as git writes one), checksummed."""
    body = b"DIRC" + struct.pack(">II", 2, len(names))
    for name in names:
        entry = struct.pack(">10I", 0, 0, 0, 0, 0, 0, mode, 0, 0, 0) + b"\1" * 20
        entry += struct.pack(">H", len(name)) + name
        body += entry + b"\0" * (8 - len(entry) % 8)
    body += extension
    return body + hashlib.sha1(body).digest()


def _repository(git_dir: Path, config: str = CHECKED_OUT, hooks: tuple[str, ...] = ()) -> None:
    (git_dir / "hooks").mkdir(parents=True)
    (git_dir / "config").write_text(config)
    (git_dir / "hooks" / "pre-commit.sample").write_text("#!/bin/sh\n")
    for hook in hooks:
        (git_dir / "hooks" / hook).write_text("#!/bin/sh\ntouch /x\n")


def _workspace(tmp_path: Path) -> tuple[Path, LinkWatch]:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n\tfsmonitor = the-persons\n")
    return ws, LinkWatch.start([str(ws)])


def test_what_would_run_in_a_new_gitlinks_repository_is_moved_aside(tmp_path: Path) -> None:
    ws, watch = _workspace(tmp_path)
    _repository(ws / "a" / ".git", hooks=("post-checkout",))  # hooks of its making
    _repository(ws / "b" / ".git", config="[core]\n\tsshCommand = x\n")
    _repository(ws / "c" / ".git")  # as git makes one: kept
    (ws / "c" / ".git" / "commondir").write_text("../../elsewhere\n")  # but another config
    _repository(ws / "d" / ".git")  # as git makes one
    (ws / ".git" / "index").write_bytes(_index(b"a", b"b", b"c", b"d"))
    text = watch.finish()
    aside = sorted(str(p.relative_to(ws)) for p in ws.glob("*/.git/*.write-guard-undone"))
    assert aside == [
        "a/.git/hooks.write-guard-undone",
        "b/.git/config.write-guard-undone",
        "c/.git/commondir.write-guard-undone",
    ]
    assert (ws / "d" / ".git" / "config").read_text() == CHECKED_OUT
    assert "a/.git/hooks" in text and "gitlink" in text
    # The workspace's own config (the person's, read-only to the command) is never judged.
    assert "the-persons" in (ws / ".git" / "config").read_text()


def _persons_submodule(tmp_path: Path) -> tuple[Path, LinkWatch]:
    """A workspace whose gitlink `mod` has a setting of the person's, watched."""
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    _repository(ws / "mod" / ".git", config="[diff]\n\ttool = the-persons\n")
    (ws / ".git" / "index").write_bytes(_index(b"mod"))
    return ws, LinkWatch.start([str(ws)])


def test_a_repository_already_entered_is_judged_again_only_when_it_changes(
    tmp_path: Path,
) -> None:
    ws, watch = _persons_submodule(tmp_path)
    (ws / ".git" / "index").write_bytes(_index(b"mod", b"other"))  # the index changes
    assert watch.finish() == ""
    assert "the-persons" in (ws / "mod" / ".git" / "config").read_text()
    watch = LinkWatch.start([str(ws)])
    os.remove(ws / "mod" / ".git" / "config")
    (ws / "mod" / ".git" / "config").write_text("[core]\n\tfsmonitor = x\n")
    assert "mod/.git/config" in watch.finish()


def test_a_gitlink_out_of_the_roots_is_never_touched(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / ".git").mkdir(parents=True)
    _repository(outside / ".git", config="[core]\n\tfsmonitor = the-persons\n")
    before = LinkState()
    (ws / ".git" / "index").write_bytes(_index(b"../outside"))
    after = link_state([(str(ws), str(ws / ".git"))])
    assert str(outside) in after.entered
    assert quarantine(before, after, [str(ws)], [str(ws / ".git")]) == []
    assert (outside / ".git" / "config").exists()


def test_an_unreadable_index_is_said(tmp_path: Path) -> None:
    ws, watch = _workspace(tmp_path)
    (ws / ".git" / "index").write_bytes(b"DIRC\0\0\0\x09")
    assert "Could not read the index" in watch.finish()


def test_an_unreadable_index_counts_every_repository_in_the_work_tree(tmp_path: Path) -> None:
    # Fail closed: git may read what this cannot, so a repository made during the command
    # anywhere in the work tree (3 deep) is judged, and the person told.
    ws, watch = _workspace(tmp_path)
    (ws / ".git" / "index").write_bytes(b"DIRC\0\0\0\x02\0\0\0\x01garbage")
    _repository(ws / "deep" / "er" / ".git", config="[core]\n\tfsmonitor = x\n")
    text = watch.finish()
    assert "Could not read the index" in text and "deep/er/.git/config" in text
    assert (ws / "deep" / "er" / ".git" / "config.write-guard-undone").exists()


def test_an_index_that_is_a_link_is_read_again_when_its_target_changes(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    target = tmp_path / "ws" / "elsewhere.idx"
    target.write_bytes(_index(b"aa"))
    old = time.time_ns() - 10 * RACY_NS  # not racy: the reading is kept
    os.utime(target, ns=(old, old))
    os.symlink(target, ws / ".git" / "index")
    os.utime(ws / ".git" / "index", ns=(old, old), follow_symlinks=False)
    watch = LinkWatch.start([str(ws)])
    _repository(ws / "bb" / ".git", config="[core]\n\tfsmonitor = x\n")
    target.write_bytes(_index(b"bb"))  # the link itself unchanged
    assert "bb/.git/config" in watch.finish()


@pytest.mark.parametrize("name", [b"/sub", b"lnk/../sub", b"./sub"])
def test_a_gitlink_name_is_resolved_as_git_and_the_kernel_resolve_it(
    tmp_path: Path, name: bytes
) -> None:
    # A leading slash is still relative to the work tree; `..` after a link the command made
    # is resolved through the link.
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "deep" / "er").mkdir(parents=True)
    os.symlink("deep/er", ws / "lnk")
    (ws / ".git" / "index").write_bytes(_index(name))
    entered = link_state([(str(ws), str(ws / ".git"))]).entered
    wanted = ws / "deep" / "sub" if name.startswith(b"lnk") else ws / "sub"
    assert list(entered) == [str(wanted)]


def test_a_reading_of_an_index_changed_just_before_is_not_kept(tmp_path: Path) -> None:
    # Within a timestamp's granularity a rewrite in place can keep the same stat (racy git).
    git_dir = tmp_path / "ws" / ".git"
    git_dir.mkdir(parents=True)
    index = git_dir / "index"
    index.write_bytes(_index(b"a"))
    assert index_links(str(git_dir)).links == {b"a"}
    assert str(index) not in _READ
    later = os.stat(index).st_ctime_ns + 10 * RACY_NS
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(time, "time_ns", lambda: later)
        assert index_links(str(git_dir)).links == {b"a"}
    assert str(index) in _READ


def test_a_sparse_directory_counts_the_repositories_in_its_folder(tmp_path: Path) -> None:
    # git may expand a sparse directory into the gitlinks of its trees.
    ws, watch = _workspace(tmp_path)
    (ws / ".git" / "index").write_bytes(_index(b"dir/", mode=0o040000))
    _repository(ws / "dir" / "x" / ".git", config="[core]\n\tfsmonitor = x\n")
    assert "dir/x/.git/config" in watch.finish()


@pytest.mark.parametrize(("counts", "read"), [((1, 1), True), ((2, 1), False)])
def test_ieot_blocks_are_read_only_when_they_add_up_to_the_index(
    counts: tuple[int, int], read: bool
) -> None:
    # A block is read from its own offset (as threaded git would), here an entry hidden in an
    # extension's body; blocks that do not add up to the index's entries are not git's, and
    # 100,000 of them each read from the start would stall the host on every command.
    plain = _index(b"a", b"b")[:-20]
    hidden = _index(b"hidden")[12:-20]
    at = len(plain) + 8
    blocks = struct.pack(">I", 1) + struct.pack(">II", 12, counts[0])
    blocks += struct.pack(">II", at, counts[1])
    extension = b"ZZZZ" + struct.pack(">I", len(hidden)) + hidden
    extension += b"IEOT" + struct.pack(">I", len(blocks)) + blocks
    data = _index(b"a", b"b", extension=extension)
    assert parse_index(data).links == ({b"a", b"b", b"hidden"} if read else {b"a", b"b"})


def _ieot_index(blocks: int) -> bytes:
    """One entry, and an `IEOT` table of `blocks` blocks adding up to it (one real, the rest
    empty): as git never writes, as a command could."""
    table = struct.pack(">I", 1) + struct.pack(">II", 12, 1)
    table += struct.pack(">II", 12, 0) * (blocks - 1)
    return _index(b"a", extension=b"IEOT" + struct.pack(">I", len(table)) + table)


def test_a_huge_block_table_is_refused_before_it_is_built() -> None:
    # 2M blocks (16 MB) took seconds and hundreds of MB to build and read: refused unread,
    # as an index git would not write (fail closed: the person is told, the work tree judged).
    assert parse_index(_ieot_index(4)).links == {b"a"}
    started = time.perf_counter()
    with pytest.raises(UnreadableIndex, match="IEOT"):
        parse_index(_ieot_index(2_000_000))
    assert time.perf_counter() - started < 1.0  # generous: an unbounded read takes seconds


def test_an_index_dated_in_the_future_is_still_kept_once_read(tmp_path: Path) -> None:
    # A command can set an index's mtime in the future (`touch -d 2096`), which a racy test on
    # mtime takes as changed just now, every time: read again at every command. Its ctime it
    # cannot set.
    git_dir = tmp_path / "ws" / ".git"
    git_dir.mkdir(parents=True)
    index = git_dir / "index"
    index.write_bytes(_index(b"a"))
    future = int(4e18)
    os.utime(index, ns=(future, future))
    ctime = os.stat(index).st_ctime_ns
    real = time.time_ns
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(time, "time_ns", lambda: max(real(), ctime + 10 * RACY_NS))
        assert index_links(str(git_dir)).links == {b"a"}
    assert str(index) in _READ


@pytest.mark.parametrize("where", ["gitfile", "index"])
def test_a_name_is_cut_at_its_first_nul_as_git_cuts_it(tmp_path: Path, where: str) -> None:
    # git reads a gitfile's path, and an entry's name, up to the first NUL: `gd` and `v`.
    ws, watch = _workspace(tmp_path)
    _repository(ws / "gd", config="[core]\n\tfsmonitor = x\n")
    (ws / "v").mkdir()
    (ws / "v" / ".git").write_bytes(b"gitdir: ../gd" + (b"\0x\n" if where == "gitfile" else b"\n"))
    (ws / ".git" / "index").write_bytes(_index(b"v\0x" if where == "index" else b"v"))
    assert "gd/config" in watch.finish()
    assert (ws / "gd" / "config.write-guard-undone").exists()
    assert LinkWatch.start([str(ws)]).finish() == ""  # and the next command is checked too


@pytest.mark.parametrize(("added", "aside"), [("[user]\n\tname = a\n", False),
                                              ("[core]\n\tfsmonitor = x\n", True)])  # fmt: skip
def test_only_settings_added_since_before_the_command_are_judged(
    tmp_path: Path, added: str, aside: bool
) -> None:
    # The person's settings stay; a program added beside them is moved aside.
    ws, watch = _persons_submodule(tmp_path)
    with open(ws / "mod" / ".git" / "config", "a") as handle:
        handle.write(added)
    assert ("mod/.git/config" in watch.finish()) is aside
    assert (ws / "mod" / ".git" / "config.write-guard-undone").exists() is aside


def test_what_changed_between_commands_is_judged_at_the_next(tmp_path: Path) -> None:
    # A command run in the background registers and configures a repository after its result
    # came back: the next command is compared with the state the last one left, not with a
    # state taken again (which would hold the change already).
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    _repository(ws / "s" / ".git")
    (ws / ".git" / "index").write_bytes(_index(b"s"))
    text, last = LinkWatch.start([str(ws)]).finish_with_state()
    assert text == ""
    os.remove(ws / "s" / ".git" / "config")
    (ws / "s" / ".git" / "config").write_text("[core]\n\tfsmonitor = x\n")
    _repository(ws / "t" / ".git", config="[core]\n\tfsmonitor = y\n")
    (ws / ".git" / "index").write_bytes(_index(b"s", b"t"))
    text = LinkWatch.start([str(ws)], last).finish()
    assert "s/.git/config" in text and "t/.git/config" in text


def test_a_config_or_hooks_folder_that_is_a_link_is_followed(tmp_path: Path) -> None:
    # One command makes them links to files of the workspace (inert then); the next changes
    # only the targets.
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    _repository(ws / "s" / ".git")
    (ws / "notes.cfg").write_text(CHECKED_OUT)
    (ws / "stash").mkdir()
    os.remove(ws / "s" / ".git" / "config")
    os.symlink("../../notes.cfg", ws / "s" / ".git" / "config")
    shutil.rmtree(ws / "s" / ".git" / "hooks")
    os.symlink("../../stash", ws / "s" / ".git" / "hooks")
    (ws / ".git" / "index").write_bytes(_index(b"s"))
    assert LinkWatch.start([str(ws)]).finish() == ""
    watch = LinkWatch.start([str(ws)])
    with open(ws / "notes.cfg", "a") as handle:
        handle.write("[core]\n\tfsmonitor = x\n")
    (ws / "stash" / "post-checkout").write_text("#!/bin/sh\n")
    text = watch.finish()
    assert "s/.git/config" in text and "s/.git/hooks" in text


@pytest.mark.parametrize("content", [b"gitdir: ../nowhere\n", b"gitdir:../gd\n", b"junk"])
def test_a_dot_git_entry_that_names_no_git_dir_is_moved_aside(
    tmp_path: Path, content: bytes
) -> None:
    # Fail closed: git might read it as naming a repository where this reads none.
    ws, watch = _workspace(tmp_path)
    _repository(ws / "gd", config="[core]\n\tfsmonitor = x\n")
    (ws / "v").mkdir()
    (ws / "v" / ".git").write_bytes(content)
    (ws / ".git" / "index").write_bytes(_index(b"v"))
    assert "v/.git" in watch.finish()
    assert not (ws / "v" / ".git").exists()
    assert (ws / "v" / ".git.write-guard-undone").read_bytes() == content


def test_the_repositories_of_a_workspace_that_is_a_folder_of_them_are_watched(
    tmp_path: Path,
) -> None:
    # The workspace is no repository; `app` in it is, and the command registers a gitlink
    # there: the person's `git status` in `app` enters it.
    ws = tmp_path / "ws"
    (ws / "app" / ".git").mkdir(parents=True)
    (ws / "app" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    watch = LinkWatch.start([str(ws)])
    _repository(ws / "app" / "sub" / ".git", config="[core]\n\tfsmonitor = x\n")
    (ws / "app" / ".git" / "index").write_bytes(_index(b"sub"))
    assert "app/sub/.git/config" in watch.finish()


def test_gitlinks_are_followed_however_deep_up_to_a_total_said_past_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # git status recurses into every level: a -> a/b -> a/b/c -> a/b/c/d.
    ws, watch = _workspace(tmp_path)
    folder = ws
    for name in "abcd":
        (folder / ".git").mkdir(parents=True, exist_ok=True)
        (folder / ".git" / "index").write_bytes(_index(name.encode()))
        folder = folder / name
    _repository(folder / ".git", config="[core]\n\tfsmonitor = x\n")
    assert "a/b/c/d/.git/config" in watch.finish()
    import write_guard._gitlink as gitlink

    monkeypatch.setattr(gitlink, "ENTERED_MAX", 2)
    assert "more than 2 repositories" in LinkWatch.start([str(ws)]).finish()


def test_a_git_dir_swapped_for_a_link_before_the_move_moves_nothing_outside(
    tmp_path: Path,
) -> None:
    # A command still running swaps the judged `.git` for a link to a folder outside between
    # the check and the move: the move follows no link.
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / ".git").mkdir(parents=True)
    _repository(outside, config="[core]\n\tsshCommand = the-persons\n")
    _repository(ws / "s" / ".git", config="[core]\n\tfsmonitor = x\n")
    (ws / ".git" / "index").write_bytes(_index(b"s"))
    after = link_state([(str(ws), str(ws / ".git"))])
    shutil.rmtree(ws / "s" / ".git")
    os.symlink(outside, ws / "s" / ".git")
    undone = quarantine(LinkState(), after, [str(ws)], [str(ws / ".git")])
    assert (outside / "config").exists() and not list(outside.glob("*undone*"))
    assert undone and all(item.kept is None for item in undone)


@pytest.mark.parametrize(("worktree", "aside"), [("..", False), ("../../.git", True),
                                                 ("../../other", True)])  # fmt: skip
def test_core_worktree_counts_as_git_s_own_only_naming_the_tree_entered(
    tmp_path: Path, worktree: str, aside: bool
) -> None:
    # `core.worktree = ../../.git` makes the person's `submodule update` check files out into
    # the workspace's git dir (its hooks among them).
    ws, watch = _workspace(tmp_path)
    _repository(ws / "s" / ".git", config=f"[core]\n\tbare = false\n\tworktree = {worktree}\n")
    (ws / ".git" / "index").write_bytes(_index(b"s"))
    assert ("s/.git/config" in watch.finish()) is aside


def _watched_with_a_hook(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace whose gitlink `mod` has a hook of the person's, seen by one command."""
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    _repository(ws / "mod" / ".git", hooks=("post-checkout",))
    (ws / ".git" / "index").write_bytes(_index(b"mod"))
    hook = ws / "mod" / ".git" / "hooks" / "post-checkout"
    hook.write_text("#!/bin/sh\nexit 0 # the person's\n")
    return ws, hook


@pytest.mark.parametrize("how", ["rewritten", "made-executable"])
def test_a_hook_changed_in_place_in_a_watched_repository_is_moved_aside(
    tmp_path: Path, how: str
) -> None:
    # The hooks folder's own stat does not change when a hook in it is rewritten or made
    # executable: what is in each hook is compared, and only what changed is moved aside.
    ws, hook = _watched_with_a_hook(tmp_path)
    (ws / "mod" / ".git" / "hooks" / "pre-push").write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o644)
    text, last = LinkWatch.start([str(ws)]).finish_with_state()
    assert text == ""
    watch = LinkWatch.start([str(ws)], last)
    if how == "rewritten":
        with open(hook, "r+") as handle:  # same size, same inode
            handle.write("#!/bin/sh\ntouch /x # the agent's\n"[: len(hook.read_text())])
    else:
        hook.chmod(0o755)
    text = watch.finish()
    assert "mod/.git/hooks/post-checkout" in text
    assert (hook.parent / "post-checkout.write-guard-undone").exists()
    assert (hook.parent / "pre-push").exists()  # the person's other hook stays


def test_a_config_rewritten_with_the_same_stat_is_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Within the timestamps' granularity a rewrite in place keeps the file's stat (and a
    # command can set its mtime and keep its size): its content is what is compared.
    ws, watch = _persons_submodule(tmp_path)
    config = ws / "mod" / ".git" / "config"
    frozen = os.lstat(config)
    real_lstat, real_stat = os.lstat, os.stat

    def same_lstat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        return frozen if str(path) == str(config) else real_lstat(path, *args, **kwargs)

    def same_stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        return frozen if str(path) == str(config) else real_stat(path, *args, **kwargs)

    text, last = watch.finish_with_state()
    assert text == ""
    watch = LinkWatch.start([str(ws)], last)
    old = config.read_text()
    new = "[core]\n\tfsmonitor=x\n"
    config.write_text(new + "#" * (len(old) - len(new) - 1) + "\n")
    monkeypatch.setattr(os, "lstat", same_lstat)
    monkeypatch.setattr(os, "stat", same_stat)
    assert "mod/.git/config" in watch.finish()


def test_a_worktree_config_of_the_commands_making_is_moved_aside(tmp_path: Path) -> None:
    # With `extensions.worktreeConfig` (which `git sparse-checkout` sets) git reads
    # `config.worktree` beside the config: its settings are judged the same way.
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    _repository(ws / "mod" / ".git", config=CHECKED_OUT + "[extensions]\n\tworktreeConfig = true\n")
    (ws / ".git" / "index").write_bytes(_index(b"mod"))
    assert LinkWatch.start([str(ws)]).finish() == ""
    watch = LinkWatch.start([str(ws)])
    (ws / "mod" / ".git" / "config.worktree").write_text("[core]\n\tfsmonitor = x\n")
    assert "mod/.git/config.worktree" in watch.finish()
    assert (ws / "mod" / ".git" / "config.worktree.write-guard-undone").exists()
    # The person's own worktree settings, and one git writes, stay.
    watch = LinkWatch.start([str(ws)])
    (ws / "mod" / ".git" / "config.worktree").write_text("[core]\n\tbare = false\n")
    assert watch.finish() == ""


async def _shell_calls(
    tmp_path: Path,
    ws: Path,
    steps: Sequence[Callable[[], object] | Event],
    between: dict[int, Callable[[], object]] | None = None,
) -> list[tuple[Any, list[Action]]]:
    """One session in one host: each step a shell call standing for a command that does it
    (run in place of the harness's shell), or another event; `between[n]` done before step n
    (by the person, or a command still running in the background); each step's result and
    the host's actions."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {"HOME": str(home), "CLAUDE_PROJECT_DIR": str(ws)}
    done: list[tuple[Any, list[Action]]] = []
    async with Host(
        plugins=[write_guard], entry_points=False, store="memory://", env=env,
        options={"write-guard": {"snapshots": False}},
    ) as host:  # fmt: skip
        await host.dispatch(SessionStart(session_id="s", cwd=str(ws)))
        for number, step in enumerate(steps):
            if between and number in between:
                between[number]()
            if isinstance(step, Event):
                outcome = await host.dispatch(step)
                done.append((outcome.result, list(outcome.actions)))
                continue

            async def terminal(event: ToolCall, step: Callable[[], object] = step) -> ToolResult:
                step()
                return ToolResult(output="ran")

            call = ToolCall(
                session_id="s", tool_use_id=f"t{number}", tool="Bash", input={"command": "true"}
            )
            outcome = await host.dispatch(call, terminal=terminal)
            assert isinstance(outcome.result, ToolResult)
            done.append((outcome.result, list(outcome.actions)))
    return done


def test_an_unreadable_index_counts_the_repositories_in_the_work_tree_at_any_depth(
    tmp_path: Path,
) -> None:
    # git enters a gitlink however deep its path: a repository four folders down is judged.
    ws, watch = _workspace(tmp_path)
    (ws / ".git" / "index").write_bytes(b"DIRC\0\0\0\x02\0\0\0\x01garbage")
    deep = ws / "a" / "b" / "c" / "d"
    _repository(deep / ".git", config="[core]\n\tfsmonitor = x\n")
    assert "a/b/c/d/.git/config" in watch.finish()
    assert (deep / ".git" / "config.write-guard-undone").exists()


@pytest.mark.anyio
async def test_an_unreadable_index_over_a_work_tree_too_big_to_search_refuses_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Fail closed: where neither the index nor a search of the whole work tree says which
    # repositories git may enter, shell commands are refused (saying what to do) until the
    # index reads again.
    import write_guard._gitlink as gitlink

    monkeypatch.setattr(gitlink, "ENTRIES_MAX", 10)
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    for n in range(20):
        (ws / f"f{n}").write_text("x")
    index = ws / ".git" / "index"

    def break_index() -> None:
        index.write_bytes(b"DIRC\0\0\0\x02\0\0\0\x01garbage")

    def mend_index() -> None:
        index.write_bytes(_index())

    ran: list[str] = []
    steps = [break_index, lambda: ran.append("second"), lambda: ran.append("third")]
    done = await _shell_calls(tmp_path, ws, steps, between={2: mend_index})
    (first, said), (second, _), (third, _) = done
    assert first.denial is None
    told = [a.text for a in said if a.kind == "toast"]
    assert told and "could not search" in told[0] and str(index) in told[0], told
    assert any("could not search" in note.text for note in first.notes)
    assert second.denial is not None
    assert str(index) in second.denial.reason and "git read-tree" in second.denial.reason
    # Once the person mended the index, the next command runs.
    assert third.denial is None and ran == ["third"]


def _repository_and_a_commit_linking_it(path: str, marker: str) -> str:
    """A repository at `path` with a program for `git status`, and a commit whose tree is
    HEAD's plus a gitlink to it (left in no index: the work tree's branch is unchanged)."""
    index = "GIT_INDEX_FILE=.git/side-index"
    return (
        f"git init -q {path} && git -C {path} commit -q --allow-empty -m s && "
        f"git -C {path} config core.fsmonitor 'touch {{OUT}}/{marker}' && "
        f"{index} git read-tree HEAD && {index} git update-index --add --cacheinfo "
        f"160000,$(git -C {path} rev-parse HEAD),{path} && t=$({index} git write-tree) && "
        "rm .git/side-index && c=$(git commit-tree $t -p HEAD -m side) && "
    )


REFS = {
    "branch": ("sub2", "git branch side $c", "git checkout -q side"),
    "tag": ("sub2", "git tag -a -m t t1 $c", "git checkout -q t1"),
    "deep-branch": ("a/b/c/d/sub2", "git branch side $c", "git checkout -q side"),
}


@jail
@pytest.mark.anyio
@pytest.mark.parametrize("how", REFS)
async def test_a_gitlink_committed_out_of_the_index_runs_nothing_once_checked_out(
    git_env: Tree, how: str
) -> None:
    # The gitlink is in a commit a ref names, not in the index: the person's checkout of it
    # puts it there, and their `git status` enters the repository the command left in that
    # folder (untracked until then, so no status entered it before).
    tree = git_env
    path, ref, checkout = REFS[how]
    command = tree.fill(_repository_and_a_commit_linking_it(path, "r1") + ref)
    person = f"{checkout} && git status --porcelain >/dev/null 2>&1; true"
    assert tree.run(command).rc == 0
    assert tree.run(person).rc == 0
    assert (tree.root / "out" / "r1").exists()  # harmful unguarded
    tree.reset()
    ran: list[Any] = []

    async def terminal(event: ToolCall) -> ToolResult:
        ran.append(tree.run(str(event.input["command"])))
        return ToolResult(output="ran")

    # The git gate holds the line itself (it writes core.fsmonitor): run as a script written
    # earlier, whose git no line shows, it is what only the check at the result can catch.
    (tree.ws / "plant.sh").write_text(command + "\n", encoding="utf-8")
    result, actions = await dispatch_bash(tree, "sh plant.sh", terminal, snapshots=False)
    assert ran and ran[0].rc == 0, (result, ran)
    tree.run(person)
    assert not (tree.root / "out" / "r1").exists(), (actions, ran)
    config = tree.ws / path / ".git" / "config"
    assert (config.parent / "config.write-guard-undone").exists()
    assert any(str(config) in note.text for note in result.notes)
    done = tree.run("git commit -q --allow-empty -m again && git log -1 --format=%s")
    assert done.stdout.strip() == "again", done  # the person's git still works


def _committed(tree: Tree, path: str = "sub2", ref: str = "git branch side $c") -> None:
    made = tree.run(tree.fill(_repository_and_a_commit_linking_it(path, "r2") + ref))
    assert made.rc == 0, made


def _ws_links(tree: Tree) -> LinkState:
    return link_state([(str(tree.ws), str(tree.ws / ".git"))])


@pytest.fixture
def unread(monkeypatch: pytest.MonkeyPatch) -> None:
    """No object read before (the trees read are kept by id, and the jail's commits have the
    same ids in every test)."""
    import write_guard._gitlink as gitlink

    for name in ("_PEELED", "_TREES", "_LINKS"):
        monkeypatch.setattr(gitlink, name, {})


@jail
def test_a_refs_trees_are_read_once_then_only_what_a_new_ref_names(
    git_env: Tree, unread: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A check that finds the refs as they were reads no object (no git runs); a new commit
    # costs one git and the trees it changed.
    import write_guard._gitlink as gitlink

    tree = git_env
    _committed(tree)
    spawned: list[str] = []
    reads: list[str] = []
    real_init, real_read = gitlink._Objects.__init__, gitlink._Objects.read

    def counted_init(self: Any, git_dir: str, id_size: int, deadline: float) -> None:
        spawned.append(git_dir)
        real_init(self, git_dir, id_size, deadline)

    def counted_read(self: Any, oid: str) -> Any:
        reads.append(oid)
        return real_read(self, oid)

    monkeypatch.setattr(gitlink._Objects, "__init__", counted_init)
    monkeypatch.setattr(gitlink._Objects, "read", counted_read)
    first = _ws_links(tree)
    assert str(tree.ws / "sub2") in first.entered and spawned
    spawned.clear()
    reads.clear()
    assert _ws_links(tree).entered.keys() == first.entered.keys()
    assert spawned == [] and reads == []
    made = tree.run("mkdir -p x/y && echo z > x/y/z && git add x && git commit -qm more")
    assert made.rc == 0, made
    time.sleep(RACY_NS / 1e9)  # the ref's new stat is kept once past the racy window
    _ws_links(tree)
    # The commit, its tree and the two new folders' (not the 3 others the template has).
    assert len(spawned) == 1 and len(reads) <= 4, reads


@jail
def test_a_tree_entry_git_takes_for_a_gitlink_counts_whatever_its_mode(
    git_env: Tree, unread: None
) -> None:
    # git takes any mode that is neither a file's, a link's nor a folder's for a gitlink
    # (`canon_mode`): a tree crafted with mode 170000 is checked out as one.
    tree = git_env
    script = (
        "import hashlib, os, subprocess, sys, zlib\n"
        "h = bytes.fromhex(sys.argv[1])\n"
        "body = b'170000 odd\\0' + h\n"
        "obj = b'tree %d\\0' % len(body) + body\n"
        "oid = hashlib.sha1(obj).hexdigest()\n"
        "os.makedirs(f'.git/objects/{oid[:2]}', exist_ok=True)\n"
        "open(f'.git/objects/{oid[:2]}/{oid[2:]}', 'wb').write(zlib.compress(obj))\n"
        "print(oid)\n"
    )
    made = tree.run(
        "git init -q odd && git -C odd commit -q --allow-empty -m o && "
        f"t=$(python3 -c {_quote(script)} $(git -C odd rev-parse HEAD)) && "
        "git branch odd $(git commit-tree $t -m odd) && git ls-tree odd"
    )
    assert made.rc == 0 and made.stdout.startswith("160000 commit"), made
    assert str(tree.ws / "odd") in _ws_links(tree).entered


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


@jail
def test_a_fifo_planted_as_an_object_holds_the_check_no_longer_than_its_bound(
    git_env: Tree, unread: None
) -> None:
    # git would wait on it for good: the check's git is ended at its bound, the person and
    # the model are told what was not read, and the next check reads on.
    tree = git_env
    _committed(tree)
    tip = tree.run("git rev-parse side").stdout.strip()
    loose = tree.ws / ".git" / "objects" / tip[:2] / tip[2:]
    shutil.move(loose, tree.root / "kept-object")
    os.mkfifo(loose)
    started = time.monotonic()
    state = _ws_links(tree)
    assert time.monotonic() - started < RACY_NS / 1e9
    assert state.unread_refs and str(tree.ws / "sub2") not in state.entered
    text = quarantine_text([], (), (), state.unread_refs)
    assert "Could not read every tree the refs name" in text
    os.remove(loose)
    shutil.move(tree.root / "kept-object", loose)
    state = _ws_links(tree)
    assert not state.unread_refs and str(tree.ws / "sub2") in state.entered


def test_refs_in_a_format_not_read_here_are_said(tmp_path: Path) -> None:
    ws, watch = _workspace(tmp_path)
    (ws / ".git" / "reftable").mkdir()
    assert "reftable format" in watch.finish()


@pytest.mark.anyio
@pytest.mark.parametrize("at", ["the-next-command", "the-turns-end", "the-sessions-end"])
async def test_what_a_background_command_leaves_after_its_result_is_judged(
    tmp_path: Path, at: str
) -> None:
    # A background command's result comes back when it starts; what it leaves later is
    # judged at the next shell command, or when the turn ends (before the person, handed
    # the session, runs git), or when the session ends, whichever comes first.
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    _repository(ws / "s" / ".git")
    (ws / ".git" / "index").write_bytes(_index(b"s"))
    config = ws / "s" / ".git" / "config"

    def later() -> None:
        os.remove(config)
        config.write_text("[core]\n\tfsmonitor = x\n")
        _repository(ws / "t" / ".git", config="[core]\n\tfsmonitor = y\n")
        (ws / ".git" / "index").write_bytes(_index(b"s", b"t"))

    last: Callable[[], object] | Event = {
        "the-next-command": lambda: None,
        "the-turns-end": TurnComplete(session_id="s", turn_id="u"),
        "the-sessions-end": SessionEnd(session_id="s"),
    }[at]
    done = await _shell_calls(tmp_path, ws, [lambda: None, last], between={1: later})
    (_first, said_first), (_result, said) = done
    assert not [a for a in said_first if a.kind == "toast"]
    told = " ".join(a.text for a in said if a.kind in ("toast", "append"))
    assert str(config) in told and str(ws / "t" / ".git" / "config") in told, said
    assert (config.parent / "config.write-guard-undone").exists()
    if at == "the-turns-end":  # the model is told too
        assert any(a.kind == "append" and str(config) in a.text for a in said), said


@pytest.mark.anyio
async def test_a_sessions_last_state_outlives_other_sessions_coming_and_going(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The states kept are bounded: the least recently used goes, not every one (which would
    # have the next command of a busy session take a state afresh, holding what a command
    # of its own left in the background).
    import write_guard._register as wiring

    monkeypatch.setattr(wiring, "LAST_KEPT", 3)
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    _repository(ws / "s" / ".git")
    (ws / ".git" / "index").write_bytes(_index(b"s"))
    config = ws / "s" / ".git" / "config"
    env = {"HOME": str(tmp_path), "CLAUDE_PROJECT_DIR": str(ws)}

    async def ran(event: ToolCall) -> ToolResult:
        return ToolResult(output="ran")

    notes: list[str] = []
    async with Host(
        plugins=[write_guard], entry_points=False, store="memory://", env=env,
        options={"write-guard": {"snapshots": False}},
    ) as host:  # fmt: skip
        for number, session in enumerate(["a", "b", "a", "c", "d", "a"]):
            if number == 5:  # what a's background command left
                os.remove(config)
                config.write_text("[core]\n\tfsmonitor = x\n")
            await host.dispatch(SessionStart(session_id=session, cwd=str(ws)))
            call = ToolCall(
                session_id=session, tool_use_id=f"t{number}", tool="Bash",
                input={"command": "true"},
            )  # fmt: skip
            outcome = await host.dispatch(call, terminal=ran)
            assert isinstance(outcome.result, ToolResult)
            notes += [note.text for note in outcome.result.notes]
    assert any(str(config) in note for note in notes), notes


@pytest.mark.anyio
async def test_a_turns_end_after_commands_that_left_nothing_says_nothing(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    _repository(ws / "s" / ".git", hooks=("post-checkout",))  # the person's
    (ws / ".git" / "index").write_bytes(_index(b"s"))
    steps: list[Callable[[], object] | Event] = [
        lambda: None,
        TurnComplete(session_id="s", turn_id="u"),
        SessionEnd(session_id="s"),
    ]
    done = await _shell_calls(tmp_path, ws, steps)
    assert [a for _result, said in done for a in said if a.kind in ("toast", "append")] == []
    assert (ws / "s" / ".git" / "hooks" / "post-checkout").exists()


@pytest.mark.parametrize("where", ["index", "a-repositorys-index", "worktree-gitdir", "config"])
def test_a_fifo_where_a_file_is_read_does_not_hold_the_check(tmp_path: Path, where: str) -> None:
    # Opened for reading, a FIFO waits for a writer for good: the check (one at a time) would
    # hold every later command's. Each file is opened without waiting and read only when it
    # is a regular file (an index that is not is unreadable: said, and the work tree judged).
    import threading

    ws = tmp_path / "ws"
    _repository(ws / "s" / ".git")
    (ws / ".git" / "worktrees" / "w").mkdir(parents=True)
    (ws / ".git" / "index").write_bytes(_index(b"s"))
    fifo = {
        "index": ws / ".git" / "index",
        "a-repositorys-index": ws / "s" / ".git" / "index",
        "worktree-gitdir": ws / ".git" / "worktrees" / "w" / "gitdir",
        "config": ws / "s" / ".git" / "config",
    }[where]
    if fifo.exists():
        fifo.unlink()
    os.mkfifo(fifo)
    said: list[str] = []
    checking = threading.Thread(
        target=lambda: said.append(LinkWatch.start([str(ws)]).finish()), daemon=True
    )
    checking.start()
    checking.join(5.0)
    held = checking.is_alive()
    if held:  # let it go: a writer that closes at once
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        checking.join(5.0)
    assert not held
    if where == "index":
        assert "Could not read the index" in said[0]
