"""Repositories the workspace's git enters through a gitlink, and what a command may leave in
them.

The person's `git status` (and `diff`, and `checkout`/`pull` with `--recurse-submodules`) runs
git in every checked-out gitlink of the index: a repository whose config or hooks are of the
command's making then runs its programs outside the sandbox. A command can make one (`git init
sub && git -C sub config core.fsmonitor …`) and register it (`git update-index --add
--cacheinfo 160000,…,sub`, or `git submodule add`, whose clone under `.git/modules/NAME` is new
and so not bound read-only), or check a repository out under a gitlink already there.

A gitlink committed to a branch, a tag, a stash (any ref) and left out of the index is
entered once the person checks it out (`git checkout side && git status`): git then finds the
repository the command left in that folder, untracked and entered by nothing until then.

So, around each command, the gitlinks of the roots' indexes (and of their repositories' other
work trees, whose indexes are in the git dir the command can write, and of the repositories
they reach, however deep, at most ENTERED_MAX), and of every tree the refs of the roots' and
the workspace's nested repositories name (see `ref_links`), are read and each checked-out
one's git dir fingerprinted (its `.git` entry's identity; what is in its `config`,
`config.worktree` and `commondir`, and in each hook of `hooks` git could run: their content
hashed, not their stat, which a rewrite in place within the timestamps' granularity keeps),
and so is each git dir under their `modules/` (a submodule's that no work tree names yet: the
person's `git submodule update` checks it out and runs git there). Reading an index is skipped
while its stat is unchanged (cached), so a command that touches no index costs a few stats per
index and a few small reads per repository entered. A repository whose fingerprint changed, or
that a gitlink reaches for the first time, is judged by what would run there: configs
(`config`, and `config.worktree`, which git reads with `extensions.worktreeConfig`) holding
only settings git's own `init`, `clone` and `submodule add` write (an allow-list: anything
else, an include, a line not read for sure counts as a program), hooks only `*.sample`, no
`commondir`. What fails is moved aside to `<name>.write-guard-undone` (as `_gitdir` does;
nothing deleted; of a hooks folder that held hooks before, only the hooks added or changed)
and the person and model are told. The roots' own git dirs are never touched (their configs
are read-only to the command).

The index is parsed here as git reads it (versions 2-4, SHA-1 or SHA-256 names, a split
index's shared part, the blocks of an `IEOT` extension read on their own too, as threaded git
reads them): a mode with a gitlink's type bits counts whatever its other bits, as git takes
it, and so does a directory's type other than exactly a sparse directory's (git 2.39 aborts
on one; others may read it as a gitlink). A sparse directory entry stands
for trees that git may expand into gitlinks: the repositories in that folder (3 deep) are
judged too. An index that cannot be read is named (the person's git, reading the same bytes,
fails the same way or reads it as this does), and every repository in its work tree, at any
depth, is judged (so is one with a split index's entry replacing a shared one, whose name is
not read here); where one walk of ENTRIES_MAX folder entries does not cover the work tree,
nothing says which repositories git may enter, and shell commands are refused
(`LinkWatch.refusal`) until the index reads again.

Pure apart from reading indexes, refs, configs and folders, `git cat-file` reading objects
(`ref_links`), and `quarantine`."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import stat
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from write_guard._gitdir import (
    ASIDE,
    CONFIG_READ_MAX,
    Undone,
    commondir_target,
    gitfile_target,
    inside,
    subfolders,
)
from write_guard._sandbox import git_dirs, module_git_dirs, nested_git_dirs, work_trees_below

INDEX_READ_MAX = 256 * 1024 * 1024
"""An index bigger than this is not read (named as unreadable)."""
ENTERED_MAX = 2_000
"""Repositories followed at most through gitlinks, however deep (git recurses without a
limit; `entered` stops cycles); past it the rest is not judged, and the person is told."""
SPARSE_DEPTH = 3
SPARSE_MAX = 16
ENTRIES_MAX = 20_000
"""Folder entries read at most to find the repositories of a sparse directory (or of a work
tree whose index cannot be read, at any depth)."""
READ_KEPT = 256
"""Indexes whose reading is kept (the roots' and their submodules')."""
RACY_NS = 2_000_000_000
"""An index changed (its ctime: a command cannot set that one ahead) less than this before it
was read is read again next time."""
IEOT_BLOCKS_MAX = 1024
"""An `IEOT` table of more blocks is refused unread (git writes one per thread)."""
EXTENSIONS_MAX = 1024
"""An index of more extensions is refused (git writes a handful)."""
FINGERPRINTED = ("config", "config.worktree", "commondir", "hooks")
HOOK_READ_MAX = 1024 * 1024
"""A hook's bytes hashed at most: past them its size, inode and ctime stand for the rest."""
HOOKS_MAX = 64
"""Hooks compared one by one at most (git names a few dozen): past them the folder's stat."""

# What git's own `init`, `clone` and `submodule add` write to a new repository's config:
# nothing here names a program, a hook folder, another config or a work tree's filters.
_INERT_KEYS = frozenset({
    "core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates",
    "core.symlinks", "core.ignorecase", "core.precomposeunicode",
    "extensions.objectformat", "user.name", "user.email",
})  # fmt: skip
_INERT_SUBSECTION_KEYS = frozenset({
    "remote.url", "remote.fetch", "branch.remote", "branch.merge", "submodule.url",
    "submodule.active",
})  # fmt: skip
_HEADER = re.compile(r'^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\\n]|\\.)*)")?\s*\]\s*(.*)$')
_INCLUDE = re.compile(r"include(?:if)?\.").match
_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9-]*)\s*(?:=(.*))?$")
_SHA256 = re.compile(r"^\s*objectformat\s*=\s*sha256\s*$", re.IGNORECASE | re.MULTILINE)

_U32 = struct.Struct(">I").unpack_from
_Head = Callable[[bytes, int], tuple[int, int]]
_HEADS: dict[int, _Head] = {}
"""Per hash size: an entry's mode and flags, in one unpack."""
_IFMT, _IFDIR, _IFGITLINK = 0o170000, 0o040000, 0o160000

StatKey = tuple[int, int, int, int] | None


class UnreadableIndex(ValueError):
    """An index that cannot be read as git would."""


@dataclass(frozen=True, slots=True)
class IndexLinks:
    """What an index says git enters: gitlink paths, and sparse directories (folders)."""

    links: frozenset[bytes] = frozenset()
    sparse: frozenset[bytes] = frozenset()
    unnamed: str | None = None
    """Why git may enter gitlinks whose names are not read here (a split index's entry
    replacing a shared one, an index that cannot be read): then every repository in the
    work tree counts, however deep."""


@dataclass(slots=True)
class Found:
    """What `parse_index` finds, and the hash naming the shared index of a split index."""

    links: set[bytes] = field(default_factory=set)
    sparse: set[bytes] = field(default_factory=set)
    shared: bytes | None = None
    unnamed: bool = False


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """git's offset varint (`decode_varint`): the value and the position after it."""
    byte = data[pos]
    pos += 1
    value = byte & 0x7F
    while byte & 0x80:
        byte = data[pos]
        pos += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, pos


def _entries(data: bytes, pos: int, count: int, version: int, hash_size: int, found: Found) -> int:
    """Read `count` entries from `pos` (the position after them): gitlinks and sparse
    directories into `found`."""
    fixed = 40 + hash_size + 2
    head = _HEADS.get(hash_size)
    if head is None:
        head = _HEADS[hash_size] = struct.Struct(f">24xI{hash_size + 12}xH").unpack_from
    if version == 4:
        return _entries_v4(data, pos, count, fixed, head, found)
    for _ in range(count):
        mode, flags = head(data, pos)
        length = flags & 0xFFF
        # One test in the common case: a file's or a link's mode has no 0o040000 bit, and
        # its entry's length follows from its flags.
        if mode & 0o040000 or flags & 0x4000 or length == 0xFFF:
            name_at = pos + fixed + (2 if flags & 0x4000 else 0)
            if length == 0xFFF:
                length = data.index(b"\0", name_at) - name_at
            _found(found, mode, data[name_at : name_at + length])
            pos += (name_at - pos + length + 8) & ~7
        else:
            pos += (fixed + length + 8) & ~7
    if pos > len(data):
        raise UnreadableIndex("entry past the end")
    return pos


def _entries_v4(data: bytes, pos: int, count: int, fixed: int, head: _Head, found: Found) -> int:
    """Version 4: each name is the previous one's, `strip` bytes shorter, and a suffix."""
    prev: bytes | None = None  # a block's first entry takes nothing from the one before
    for _ in range(count):
        mode, flags = head(data, pos)
        strip, name_at = _varint(data, pos + fixed + (2 if flags & 0x4000 else 0))
        copy = 0 if prev is None else len(prev) - strip
        if copy < 0:
            raise UnreadableIndex("malformed name field")
        length = flags & 0xFFF
        if length == 0xFFF:
            length = data.index(b"\0", name_at) - name_at + copy
        end = name_at + length - copy
        if end < name_at or end >= len(data):
            raise UnreadableIndex("malformed name length")
        prev = (prev or b"")[:copy] + data[name_at:end]
        if mode & 0o040000:
            _found(found, mode, prev)
        pos = end + 1
    return pos


def _found(found: Found, mode: int, name: bytes) -> None:
    kind = mode & _IFMT
    if mode == _IFDIR:
        found.sparse.add(name)
    elif kind in (_IFGITLINK, _IFDIR):
        # An empty name: a split index's entry replacing a shared one (through the `link`
        # extension's replace bitmap, not read here), whose name is the shared entry's.
        # Fail closed: every repository in the work tree counts.
        if name:
            found.links.add(name)
        else:
            found.unnamed = True


def parse_index(data: bytes, hash_size: int = 20) -> Found:
    """The gitlinks and sparse directories of an index file's bytes, and the hash naming its
    shared index (a split index), if any. UnreadableIndex when git could not read it either."""
    found = Found()
    try:
        if len(data) < 12 or data[:4] != b"DIRC":
            raise UnreadableIndex("not an index")
        version, count = _U32(data, 4)[0], _U32(data, 8)[0]
        if version not in (2, 3, 4):
            raise UnreadableIndex(f"index version {version}")
        pos = _entries(data, 12, count, version, hash_size, found)
        end = len(data) - hash_size
        extensions = 0
        while pos + 8 <= end:
            extensions += 1
            if extensions > EXTENSIONS_MAX:
                raise UnreadableIndex(f"more than {EXTENSIONS_MAX} extensions")
            signature, size = data[pos : pos + 4], _U32(data, pos + 4)[0]
            body = data[pos + 8 : pos + 8 + size]
            if signature == b"link" and len(body) >= hash_size:
                found.shared = body[:hash_size]
            elif signature == b"IEOT" and len(body) >= 4:
                # Threaded git reads each block from its own offset, names afresh: read them
                # the same way too, so that no entry reads differently there. Blocks that do
                # not add up to the index's entries are not git's (and would cost more than
                # one reading of the index). A table bigger than git writes is refused
                # before it is built: its size alone would stall the host.
                if (len(body) - 4) // 8 > IEOT_BLOCKS_MAX:
                    raise UnreadableIndex(f"an IEOT table of more than {IEOT_BLOCKS_MAX} blocks")
                blocks = [
                    (_U32(body, at)[0], _U32(body, at + 4)[0]) for at in range(4, len(body) - 7, 8)
                ]
                if sum(entries for _offset, entries in blocks) != count:
                    blocks = []
                for offset, entries in blocks:
                    # A block git could not read either: the entries read in order stand.
                    with contextlib.suppress(struct.error, IndexError, ValueError):
                        _entries(data, offset, entries, version, hash_size, found)
            pos += 8 + size
    except (struct.error, IndexError, ValueError) as error:
        if isinstance(error, UnreadableIndex):
            raise
        raise UnreadableIndex(f"truncated or malformed ({type(error).__name__})") from error
    return found


def _key(info: os.stat_result) -> StatKey:
    return (info.st_ino, info.st_ctime_ns, info.st_mtime_ns, info.st_size)


def _stat_key(path: str) -> StatKey:
    try:
        return _key(os.lstat(path))
    except (OSError, ValueError):
        return None


_HASHES: dict[str, tuple[tuple[StatKey, StatKey], bool]] = {}
"""Per config: its stat when read, and whether it names SHA-256 objects."""


def _hash_size(git_dir: str) -> int:
    """The size of `git_dir`'s object names (its config's, or its common dir's)."""
    for folder in (git_dir, commondir_target(git_dir)):
        if folder is None:
            continue
        path = os.path.join(folder, "config")
        key = _file_key(path)
        known = _HASHES.get(path)
        if known is None or known[0] != key:
            try:  # only a regular file: a FIFO is not waited on
                data = _read_regular(path, CONFIG_READ_MAX)[0] if key[1] is not None else b""
            except OSError:
                data = b""
            known = (key, _SHA256.search(data.decode("utf-8", errors="replace")) is not None)
            if key[1] is not None and key[1][1] < time.time_ns() - RACY_NS:
                if len(_HASHES) > READ_KEPT:
                    _HASHES.clear()
                _HASHES[path] = known
        if known[1]:
            return 32
    return 20


def _file_key(path: str) -> tuple[StatKey, StatKey]:
    """A file's stat and, when it is a link, its target's: either changes when git would
    read other bytes there."""
    try:
        info = os.lstat(path)
        own = _key(info)
        if stat.S_ISLNK(info.st_mode):
            info = os.stat(path)
    except (OSError, ValueError):
        return (_stat_key(path), None)
    return (own, _key(info))


_READ: dict[str, tuple[tuple[tuple[str, tuple[StatKey, StatKey]], ...], IndexLinks]] = {}
"""Per index file: the files read for it (itself, its shared index, the config naming the
hash) with their stat then, and what it said."""


def index_links(git_dir: str) -> IndexLinks:
    """The gitlinks and sparse directories of `git_dir`'s index (with its shared index's),
    read again only when the stat of a file read for it changed. UnreadableIndex when it
    cannot be read as git would; nothing when there is no index."""
    path = os.path.join(git_dir, "index")
    known = _READ.get(path)
    if known is not None and all(_file_key(file) == key for file, key in known[0]):
        return known[1]
    config = os.path.join(git_dir, "config")
    files = [config, path]
    keys = [_file_key(config), _file_key(path)]
    read = IndexLinks() if keys[1][1] is None else _read_index(git_dir, path, files)
    keys += [_file_key(file) for file in files[2:]]
    index = keys[1][1]
    # Racy, as git says: a file changed again within the timestamps' granularity of this
    # read could keep the same stat. Such a reading is not kept. Judged by ctime: a command
    # can date the mtime ahead (`touch -d 2096`) to have it read again at every command.
    if index is not None and index[1] >= time.time_ns() - RACY_NS:
        return read
    if len(_READ) > READ_KEPT:
        _READ.clear()
    _READ[path] = (tuple(zip(files, keys, strict=True)), read)
    return read


def _read_index(git_dir: str, path: str, files: list[str]) -> IndexLinks:
    """Read the index at `path` and its shared index (appended to `files`)."""
    hash_size = _hash_size(git_dir)
    links: set[bytes] = set()
    sparse: set[bytes] = set()
    unnamed = False
    for _part in range(2):  # the index, then its shared index (which has none of its own)
        try:
            data = _read_regular(path, INDEX_READ_MAX + 1)[0]  # a FIFO is not waited on
        except OSError as error:
            raise UnreadableIndex(f"cannot be read ({error.strerror})") from error
        if len(data) > INDEX_READ_MAX:
            raise UnreadableIndex("too big to read")
        found = parse_index(data, hash_size)
        links |= found.links
        sparse |= found.sparse
        unnamed |= found.unnamed
        shared = found.shared
        if shared is None or not shared.strip(b"\0"):
            break
        path = os.path.join(git_dir, "sharedindex." + shared.hex())
        files.append(path)
    why = "a split index's entry replacing a shared one, unread here" if unnamed else None
    return IndexLinks(frozenset(links), frozenset(sparse), why)


# The refs' trees (see the module's doc): the gitlinks of every tree a ref names count as the
# index's do, whatever their depth. Object ids are read from the refs here (loose, packed, the
# per-work-tree ones, HEAD and the other pseudo-refs, the stash's reflog; a listing or a file
# read again only when its stat changed), and the objects by one `git cat-file --batch` per
# repository when a ref names one not read before: a tree is read once (by id, which names
# its content), so a new commit costs one git and the few trees it changed, and a command
# that moves no ref a few stats per repository. Chosen over judging every repository in the
# work tree whatever names it: that walk (8.5 ms per 10,000 files, per command) is bounded in
# depth and entries, so a repository four folders down, or in a big work tree, would pass.

REF_FILES_MAX = 20_000
"""Loose ref files read at most per repository (past them the rest is said unread)."""
REF_READ_MAX = 64 * 1024 * 1024
"""Bytes of `packed-refs` (or of a reflog) read at most."""
REFS_READ_S = 0.3
"""Time spent reading objects per check at most: what is left is read at the next one (a
first check of a repository of many trees, or a command that made thousands of them)."""
TREE_READ_MAX = 16 * 1024 * 1024
"""An object bigger than this is not read (git writes no tree that big)."""
PEEL_MAX = 16
"""Tags followed to their object at most."""
REF_LINKS_MAX = 10_000
"""Gitlinks of one tree kept at most (past them, its gitlinks are said unread)."""
TREES_KEPT = 500_000
"""Trees (and ids peeled) kept read, for every repository; past it all are forgotten."""
PSEUDO_REFS = ("HEAD", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD",
               "REVERT_HEAD", "REBASE_HEAD", "AUTO_MERGE", "BISECT_HEAD")  # fmt: skip
_TOP_REFS = frozenset({*PSEUDO_REFS, "packed-refs", "reftable"})
_HEXDIGITS = frozenset(b"0123456789abcdef")

_IDS: dict[str, tuple[tuple[StatKey, StatKey], frozenset[str]]] = {}
"""Per ref file: its stat when read, and the ids it named."""
_PEELED: dict[str, str | None] = {}
"""Per object id a ref named: the tree it stands for (a commit's, a tag's object's), or None
(a blob: no tree)."""
_TREES: dict[str, tuple[tuple[bytes, ...], tuple[tuple[bytes, str], ...]]] = {}
"""Per tree read: its gitlinks' names, and its subtrees (name, id)."""
_LINKS: dict[str, frozenset[bytes] | None] = {}
"""Per tree all of whose trees were read: the paths of every gitlink below it (None: more
than REF_LINKS_MAX)."""


class _Unread(Exception):
    """Objects that could not be read (said, and read again at the next check)."""


def _ids_in(data: bytes, hex_size: int, reflog: bool) -> frozenset[str]:
    """The object ids a ref file names: the first word of each line (a loose ref, a
    pseudo-ref, `packed-refs` and its `^` peeled lines, FETCH_HEAD's lines), the first two of
    a reflog's; a symbolic ref (`ref: …`) names another ref, read on its own."""
    found: set[str] = set()
    for line in data.splitlines():
        words = line.split()
        for word in words[: 2 if reflog else 1]:
            word = word.removeprefix(b"^")
            if len(word) == hex_size and _HEXDIGITS.issuperset(word) and word.strip(b"0"):
                found.add(word.decode())
    return frozenset(found)


def _file_ids(path: str, hex_size: int, reflog: bool = False) -> frozenset[str]:
    """`_ids_in` of the file at `path`, read again only when its stat changed (and not kept
    when it changed just before: racy). _Unread when it cannot be read whole."""
    key = _file_key(path)
    known = _IDS.get(path)
    if known is not None and known[0] == key:
        return known[1]
    if key[1] is None:
        return frozenset()
    try:
        data, _info = _read_regular(path, REF_READ_MAX + 1)
    except OSError as error:
        raise _Unread(f"{path}: {error.strerror or error}") from error
    if len(data) > REF_READ_MAX:
        raise _Unread(f"{path}: more than {REF_READ_MAX:,} bytes")
    found = _ids_in(data, hex_size, reflog)
    if key[1][1] < time.time_ns() - RACY_NS:
        if len(_IDS) > READ_KEPT * 64:
            _IDS.clear()
        _IDS[path] = (key, found)
    return found


def _ref_ids(git_dir: str, hex_size: int) -> set[str]:
    """The object ids the refs of the repository whose (per work tree) git dir is `git_dir`
    name. _Unread when not all could be read (refs in the reftable format among them: not
    read here)."""
    common = commondir_target(git_dir) or git_dir
    ids: set[str] = set()
    for folder in dict.fromkeys((common, git_dir)):
        names = [name for name, _folder in _listed(folder) if name in _TOP_REFS]
        if "reftable" in names:
            raise _Unread(f"{common}: refs in the reftable format are not read")
        for name in names:
            if folder == git_dir or name == "packed-refs":
                ids |= _file_ids(os.path.join(folder, name), hex_size)
    files = 0
    for top in dict.fromkeys((os.path.join(common, "refs"), os.path.join(git_dir, "refs"))):
        pending = [top]
        while pending:
            folder = pending.pop()
            for name, is_folder in _listed(folder):
                path = os.path.join(folder, name)
                if is_folder:
                    pending.append(path)
                    continue
                files += 1
                if files > REF_FILES_MAX:
                    raise _Unread(f"{common}: more than {REF_FILES_MAX:,} loose refs")
                ids |= _file_ids(path, hex_size)
    ids |= _file_ids(os.path.join(common, "logs", "refs", "stash"), hex_size, reflog=True)
    return ids


_LISTED: dict[str, tuple[tuple[StatKey, StatKey], tuple[tuple[str, bool], ...]]] = {}
"""Per folder of refs: its stat when listed, and its entries (name, whether a folder)."""


def _listed(folder: str) -> tuple[tuple[str, bool], ...]:
    """The entries of `folder` (none when there is none), listed again only when its stat
    changed: an entry added, removed or renamed changes its ctime, which a command cannot
    set back (not kept when it changed just before: racy). _Unread when it cannot be."""
    key = _file_key(folder)  # through a link: its target's entries
    known = _LISTED.get(folder)
    if known is not None and known[0] == key:
        return known[1]
    try:
        with os.scandir(folder) as listing:
            found = tuple((entry.name, entry.is_dir(follow_symlinks=False)) for entry in listing)
    except (FileNotFoundError, NotADirectoryError):
        return ()
    except OSError as error:
        raise _Unread(f"{folder}: {error.strerror or error}") from error
    if key[1] is not None and key[1][1] < time.time_ns() - RACY_NS:
        if len(_LISTED) > READ_KEPT * 16:
            _LISTED.clear()
        _LISTED[folder] = (key, found)
    return found


class _Objects:
    """One `git cat-file --batch` in a repository, killed at `deadline` (a FIFO or a huge
    object planted in `.git/objects` does not hold the host)."""

    def __init__(self, git_dir: str, id_size: int, deadline: float) -> None:
        self.id_size = id_size
        left = deadline - time.monotonic()
        if left <= 0:
            raise _Unread("out of time: read on at the next command")
        # The host's own git variables never reach it; replace refs do not hide the commit
        # they replace (the replacing one is a ref, read too); a partial clone's missing
        # objects are not fetched (git 2.44 and later: older ones ignore the variable).
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(GIT_NO_REPLACE_OBJECTS="1", GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0",
                   GIT_NO_LAZY_FETCH="1")  # fmt: skip
        try:
            self.process = subprocess.Popen(
                ["git", "--git-dir", git_dir, "cat-file", "--batch"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                cwd=git_dir, env=env,
            )  # fmt: skip
        except OSError as error:
            raise _Unread(f"git cannot run: {error.strerror or error}") from error
        self.deadline = deadline
        self.timer = threading.Timer(left, self.process.kill)
        self.timer.daemon = True
        self.timer.start()

    def read(self, oid: str) -> tuple[bytes, bytes] | None:
        """The type and content of object `oid`; None when the repository lacks it."""
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None
        assert stdout is not None
        if time.monotonic() >= self.deadline:
            raise _Unread("out of time: read on at the next command")
        try:
            stdin.write(oid.encode() + b"\n")
            stdin.flush()
            head = stdout.readline(256).split()
            if len(head) == 2 and head[1] == b"missing":
                return None
            if len(head) != 3 or not head[2].isdigit():
                raise _Unread("git cat-file stopped (out of time, or an object it cannot read)")
            size = int(head[2])
            if size > TREE_READ_MAX:
                raise _Unread(f"object {oid}: more than {TREE_READ_MAX:,} bytes")
            data = stdout.read(size + 1)
        except (OSError, ValueError) as error:
            raise _Unread(f"git cat-file stopped ({type(error).__name__})") from error
        if len(data) != size + 1:
            raise _Unread("git cat-file stopped (out of time, or an object it cannot read)")
        return head[1], data[:-1]

    def close(self) -> None:
        self.timer.cancel()
        with contextlib.suppress(OSError):
            self.process.kill()
        self.process.wait()


def _peel(objects: _Objects, oid: str) -> tuple[bool, str | None]:
    """Whether the repository has object `oid`, and the tree it stands for (a commit's, a
    tag's object's, a tree itself; None: none)."""
    for depth in range(PEEL_MAX):
        read = objects.read(oid)
        if read is None:
            return depth > 0, None
        kind, data = read
        if kind == b"tree":
            if oid not in _TREES:
                _keep_tree(oid, _parse_tree(data, objects.id_size))
            return True, oid
        first = data.split(b"\n", 1)[0].split(b" ")
        if kind not in (b"commit", b"tag") or len(first) != 2:
            return True, None
        if first[0] != (b"tree" if kind == b"commit" else b"object"):
            return True, None
        oid = first[1].decode("ascii", errors="replace")
    return True, None


def _canon_gitlink(mode: int) -> bool:
    """Whether git takes a tree entry of `mode` for a gitlink (`canon_mode`: anything that is
    neither a file, a link nor a folder)."""
    return mode & _IFMT not in (0o100000, 0o120000, _IFDIR)


def _parse_tree(
    data: bytes, id_size: int
) -> tuple[tuple[bytes, ...], tuple[tuple[bytes, str], ...]]:
    """A tree's gitlinks' names, and its subtrees (name, id). _Unread when git could not read
    it either."""
    links: list[bytes] = []
    subtrees: list[tuple[bytes, str]] = []
    pos = 0
    while pos < len(data):
        space = data.find(b" ", pos)
        nul = data.find(b"\0", space + 1)
        if space < 0 or nul < 0 or nul + 1 + id_size > len(data):
            raise _Unread("a malformed tree")
        try:
            mode = int(data[pos:space], 8)
        except ValueError as error:
            raise _Unread("a malformed tree") from error
        name = data[space + 1 : nul]
        oid = data[nul + 1 : nul + 1 + id_size].hex()
        pos = nul + 1 + id_size
        if mode & _IFMT == _IFDIR:
            subtrees.append((name, oid))
        elif _canon_gitlink(mode):
            links.append(name)
    return tuple(links), tuple(subtrees)


def _read_trees(objects: _Objects, root: str) -> None:
    """Read every tree below `root` not read before into _TREES."""
    pending, seen = [root], set()
    while pending:
        tree = pending.pop()
        if tree in seen or tree in _LINKS:
            continue
        seen.add(tree)
        known = _TREES.get(tree)
        if known is None:
            read = objects.read(tree)
            if read is None or read[0] != b"tree":
                known = ((), ())  # git finds no tree there either: nothing to check out
            else:
                known = _parse_tree(read[1], objects.id_size)
            _keep_tree(tree, known)
        pending += [sub for _name, sub in known[1]]


def _keep_tree(tree: str, known: tuple[tuple[bytes, ...], tuple[tuple[bytes, str], ...]]) -> None:
    if len(_TREES) > TREES_KEPT:
        _TREES.clear()
        _LINKS.clear()
    _TREES[tree] = known


def _links_below(root: str) -> frozenset[bytes] | None:
    """Every gitlink path below `root`, from _TREES (kept in _LINKS); None when more than
    REF_LINKS_MAX. _Unread when not all its trees were read."""
    stack: list[tuple[str, bool]] = [(root, False)]
    while stack:
        tree, expanded = stack.pop()
        if tree in _LINKS:
            continue
        known = _TREES.get(tree)
        if known is None:
            raise _Unread("not every tree read yet")
        names, subtrees = known
        if not expanded:
            # Its subtrees first: each is in _LINKS when it comes back to this one.
            stack.append((tree, True))
            stack += [(sub, False) for _name, sub in subtrees if sub not in _LINKS]
            continue
        found: set[bytes] | None = set(names)
        for name, sub in subtrees:
            below = _LINKS[sub]
            if below is None or found is None or len(found) + len(below) > REF_LINKS_MAX:
                found = None
                break
            found.update(name + b"/" + path for path in below)
        _LINKS[tree] = None if found is None else frozenset(found)
    return _LINKS[root]


def ref_links(git_dir: str, deadline: float) -> tuple[frozenset[bytes], str | None]:
    """The gitlink paths of every tree the refs of `git_dir`'s repository name, and why not
    all were read (None: all were)."""
    hash_size = _hash_size(git_dir)
    roots: set[str] = set()
    why: str | None = None
    objects: _Objects | None = None
    try:
        ids = _ref_ids(git_dir, 2 * hash_size)
        unpeeled = [oid for oid in ids if oid not in _PEELED]
        roots = {tree for oid in ids if (tree := _PEELED.get(oid))}
        if unpeeled or any(root not in _LINKS for root in roots):
            objects = _Objects(git_dir, hash_size, deadline)
            for oid in unpeeled:
                present, tree = _peel(objects, oid)
                if present:  # one it lacks may come (a fetch): not kept
                    if len(_PEELED) > TREES_KEPT:
                        _PEELED.clear()
                    _PEELED[oid] = tree
                if tree is not None:
                    roots.add(tree)
            for root in roots:
                _read_trees(objects, root)
    except _Unread as error:
        why = str(error)
    finally:
        if objects is not None:
            objects.close()
    links: set[bytes] = set()
    for root in roots:
        try:
            below = _links_below(root)
        except _Unread as error:
            why = why or str(error)
            continue
        if below is None:
            why = f"a tree of more than {REF_LINKS_MAX:,} gitlinks"
        else:
            links |= below
    return frozenset(links), why


@dataclass(frozen=True, slots=True)
class Entered:
    """A repository git enters through a gitlink, as it is now."""

    work_tree: str
    git_dir: str | None
    """Its git dir, resolved (None: not checked out)."""
    entry: tuple[object, ...] = ()
    """Its `.git` entry's identity (device, inode: not its stat, which git's own writes in a
    `.git` folder change) and the git dir it names."""
    fingerprint: tuple[object, ...] = ()
    """What is in its git dir's FINGERPRINTED files (see `_judged`)."""
    settings: frozenset[str] | None = None
    """What in its config can run a program (see `program_settings`); None: not read for sure."""
    worktree_settings: frozenset[str] | None = None
    """The same of its `config.worktree`."""


@dataclass(frozen=True, slots=True)
class LinkState:
    """The repositories the roots' git enters, and the indexes that could not be read."""

    entered: dict[str, Entered] = field(default_factory=dict)
    unreadable: tuple[str, ...] = ()
    blind: tuple[str, ...] = ()
    """Work trees in which some repository git may enter could not be found (see
    `link_state`): the next command is refused while one is left."""
    unread_refs: tuple[str, ...] = ()
    """Repositories whose refs' trees were not all read (said; read on at the next check)."""


def _git_dir_of(work_tree: str) -> str | None:
    """The git dir `work_tree/.git` names, as git resolves a checked-out submodule."""
    dot_git = os.path.join(work_tree, ".git")
    if os.path.isdir(dot_git):
        return os.path.realpath(dot_git)
    target = gitfile_target(dot_git)
    if target is None:
        return None
    target = os.path.realpath(target)
    return target if os.path.isdir(target) else None


def work_trees(git_dir: str) -> list[tuple[str, str]]:
    """The work trees of the repository whose common git dir is `git_dir`, each with the git
    dir holding its index: the main one (a `.git` folder's parent) and the linked ones
    (`worktrees/NAME`, whose `gitdir` names the work tree's `.git`)."""
    found = []
    if os.path.basename(git_dir) == ".git":
        found.append((os.path.dirname(git_dir), git_dir))
    for entry in subfolders(os.path.join(git_dir, "worktrees")):
        try:
            data = _read_regular(os.path.join(entry, "gitdir"), 4096)[0]
            dot_git = data.decode().split("\n", 1)[0].strip()
        except (OSError, UnicodeDecodeError):
            continue
        if dot_git:
            found.append((os.path.dirname(os.path.join(entry, dot_git)), entry))
    return found


def link_state(
    repositories: Iterable[tuple[str, str]], refs: Iterable[tuple[str, str]] | None = None
) -> LinkState:
    """The repositories git enters from each (work tree, git dir) of `repositories`,
    through gitlinks (of its index and, for those of `refs`, every one unless named, of its
    refs' trees), however deep (at most ENTERED_MAX)."""
    entered: dict[str, Entered] = {}
    named: set[str] = set()  # the git dirs of `entered`
    unreadable: list[str] = []
    unread_refs: list[str] = []
    blind: list[str] = []
    pending = list(repositories)
    first = set(pending if refs is None else refs)
    done: set[tuple[str, str]] = set()
    deadline = time.monotonic() + REFS_READ_S
    while pending:
        if len(entered) > ENTERED_MAX:
            unreadable.append(
                f"more than {ENTERED_MAX} repositories entered through gitlinks: not all judged"
            )
            break
        work_tree, git_dir = pending.pop()
        if (work_tree, git_dir) in done:
            continue  # a nested repository a gitlink reaches too
        done.add((work_tree, git_dir))
        try:
            read = index_links(git_dir)
        except UnreadableIndex as error:
            unreadable.append(f"{os.path.join(git_dir, 'index')}: {error}")
            read = IndexLinks(unnamed=f"unreadable: {error}")
        # Joined as git joins them (a name is relative even with a leading slash), resolved
        # as the kernel resolves them (through links the command may have made).
        # A name holding a NUL: git's paths end there.
        names = read.links
        if (work_tree, git_dir) in first:
            committed, why = ref_links(git_dir, deadline)
            names |= committed
            if why is not None:
                unread_refs.append(f"{git_dir}: {why}")
        trees = [work_tree + "/" + os.fsdecode(name.split(b"\0", 1)[0]) for name in names]
        # Past a few sparse directories, one bounded walk of the work tree covers them all.
        sparse = read.sparse if len(read.sparse) <= SPARSE_MAX else frozenset({b""})
        for folder in sparse:
            below = work_tree + "/" + os.fsdecode(folder.split(b"\0", 1)[0])
            trees += work_trees_below(below, SPARSE_DEPTH, ENTRIES_MAX).work_trees
        if read.unnamed is not None:
            # Fail closed: what git may enter is then every repository in the work tree, at
            # any depth; past what one walk reads, nothing says which, and commands are
            # refused until it does (`LinkWatch.refusal`).
            walked = work_trees_below(work_tree, None, ENTRIES_MAX)
            trees += walked.work_trees
            if not walked.complete:
                blind.append(
                    f"{os.path.join(git_dir, 'index')} ({read.unnamed}), and {work_tree} too "
                    "big to search for every repository git may enter instead (more than "
                    f"{ENTRIES_MAX:,} folder entries, or a folder that cannot be listed)"
                )
        own = os.path.realpath(work_tree)
        for tree in trees:
            tree = os.path.realpath(tree)
            if tree in entered or tree == own:
                continue
            found = _git_dir_of(tree)
            entry = (_identity(os.path.join(tree, ".git")), found)
            if found is None:
                entered[tree] = Entered(tree, None, entry)
                continue
            entered[tree] = Entered(tree, found, entry, *_judged(found, tree))
            named.add(found)
            pending.append((tree, found))
        # A submodule's git dir that no work tree names yet: the person's `git submodule
        # update` checks it out, and runs git there with its config and hooks.
        for module in module_git_dirs(os.path.join(git_dir, "modules")):
            module = os.path.realpath(module)
            if module not in named:
                entered[module] = Entered(module, module, (), *_judged(module, module))
                named.add(module)
    return LinkState(entered, tuple(unreadable), tuple(blind), tuple(unread_refs))


def _judged(
    git_dir: str, work_tree: str
) -> tuple[tuple[object, ...], frozenset[str] | None, frozenset[str] | None]:
    """`git_dir`'s fingerprint (what is in its FINGERPRINTED files, through links: its
    `config`, `config.worktree` and `commondir` each as `_content`, its `hooks` as
    `_hooks`), and the program settings of its two configs (see `_settings`)."""
    keys: list[object] = []
    settings: list[frozenset[str] | None] = []
    for name in FINGERPRINTED[:3]:
        key, data = _content(os.path.join(git_dir, name), CONFIG_READ_MAX)
        keys.append(key)
        if name != "commondir":
            settings.append(_settings(key, data, git_dir, work_tree))
    keys.append(_hooks(os.path.join(git_dir, "hooks")))
    return tuple(keys), settings[0], settings[1]


def _content(path: str, limit: int) -> tuple[object, bytes | None]:
    """What git would read at `path` (through links) as a key that changes when that does,
    and the bytes (None: nothing there, or not a file read for sure). The key: None when
    nothing is there; else the file's exec bits and a digest of its first `limit` bytes (and
    when it is longer, its size, inode and ctime, which a command cannot set back); or what
    else is there (a folder, a FIFO: never opened, never waited on)."""
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None, None  # a link to nothing too: git reads nothing there either
    except (OSError, ValueError) as error:
        return ("unread", getattr(error, "errno", None)), None
    if not stat.S_ISREG(info.st_mode):
        return ("special", stat.S_IFMT(info.st_mode), info.st_ino, info.st_ctime_ns), None
    try:
        data, info = _read_regular(path, limit + 1)
    except OSError as error:
        return ("unread", error.errno), None
    digest = hashlib.blake2b(data[:limit], digest_size=16).digest()
    if len(data) > limit:
        return (info.st_mode & 0o111, digest, info.st_size, info.st_ino, info.st_ctime_ns), None
    return (info.st_mode & 0o111, digest), data


def _read_regular(path: str, limit: int) -> tuple[bytes, os.stat_result]:
    """Up to `limit` bytes of the regular file at `path`, opened without blocking (a FIFO put
    there after a check is not waited on) and checked a regular file once open."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        chunks: list[bytes] = []
        left = limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks), info
    finally:
        os.close(fd)


def _hooks(hooks: str) -> object:
    """A hooks folder's key: each hook git could run (any name but `*.sample`) with its
    `_content`, in name order; past HOOKS_MAX of them, or unlisted, what stands for that."""
    try:
        with os.scandir(hooks) as listing:
            names = sorted(entry.name for entry in listing if not entry.name.endswith(".sample"))
    except (FileNotFoundError, NotADirectoryError):
        return _content(hooks, 0)[0]  # nothing there, or a file (which git runs nothing from)
    except (OSError, ValueError) as error:
        return ("unread", getattr(error, "errno", None))
    if len(names) > HOOKS_MAX:
        return ("crowded", len(names), _file_key(hooks))
    return tuple((name, _content(os.path.join(hooks, name), HOOK_READ_MAX)[0]) for name in names)


def _listing(key: object) -> dict[str, object] | None:
    """The hooks of a hooks folder's key (`_hooks`) by name; None when it is no listing."""
    if not isinstance(key, tuple) or not all(
        isinstance(hook, tuple) and len(hook) == 2 and isinstance(hook[0], str) for hook in key
    ):
        return None
    return dict(key)


def _identity(path: str) -> tuple[int, int] | None:
    try:
        info = os.lstat(path)
    except (OSError, ValueError):
        return None
    return (info.st_dev, info.st_ino)


_SETTINGS: dict[object, frozenset[str] | None] = {}
"""Per config content (its `_content` key): its program settings."""


_WORKTREE = "core..worktree="


def _settings(
    key: object, data: bytes | None, git_dir: str, work_tree: str
) -> frozenset[str] | None:
    """`program_settings` of a config (`_content`: none when there is none, None when it is not
    read for sure), but a `core.worktree` naming the work tree entered (git's own, for a
    submodule): another one would have the person's git check files out there (into the
    workspace's `.git`, say). For a git dir no work tree names yet (`work_tree` is
    `git_dir`), one naming no folder in a `.git`."""
    if key is None:
        return frozenset()
    if data is None:
        return None
    if key in _SETTINGS:
        found = _SETTINGS[key]
    else:
        found = program_settings(data.decode("utf-8", errors="replace"))
        if len(_SETTINGS) > READ_KEPT:
            _SETTINGS.clear()
        _SETTINGS[key] = found
    if found is None:
        return None

    def kept(setting: str) -> bool:
        if not setting.startswith(_WORKTREE):
            return True
        try:
            target = os.path.realpath(os.path.join(git_dir, setting[len(_WORKTREE) :]))
        except ValueError:
            return True
        if work_tree != git_dir:
            return target != work_tree
        return ".git" in target.split(os.sep)

    return frozenset(filter(kept, found))


def program_settings(text: str) -> frozenset[str] | None:
    """The settings of a config outside `_INERT_*` (see above), each as `section.sub.key=value`;
    None when a line is not read for sure (a continued line, a header git may read another
    way)."""
    found: set[str] = set()
    section, sub = "", ""
    subsection = False
    for raw in text.splitlines():
        line = raw.strip()
        if line.endswith("\\"):
            return None
        if line.startswith("["):
            header = _HEADER.match(line)
            if header is None:
                return None
            name = header.group(1).casefold()
            section, _, dotted = name.partition(".")
            subsection = header.group(2) is not None or bool(dotted)
            sub = header.group(2) if header.group(2) is not None else dotted
            line = header.group(3).strip()
        if not line or line[0] in "#;":
            continue
        key = _KEY.match(line)
        if key is None or not section:
            return None
        name = f"{section}.{key.group(1).casefold()}"
        if name not in (_INERT_SUBSECTION_KEYS if subsection else _INERT_KEYS):
            value = (key.group(2) or "").strip()
            found.add(f"{section}.{sub}.{key.group(1).casefold()}={value}")
    return frozenset(found)


def inert_config(text: str) -> bool:
    """Whether a config holds only settings of `_INERT_*` (see above) and a `core.worktree`
    (judged where it points: `_settings`), every line read for sure: a continued line, an
    include, a key git may read another way is not."""
    found = program_settings(text)
    return found is not None and all(setting.startswith(_WORKTREE) for setting in found)


def _inert_hooks(hooks: str) -> bool:
    if not os.path.lexists(hooks):
        return True
    try:
        with os.scandir(hooks) as listing:
            return all(entry.name.endswith(".sample") for entry in listing)
    except OSError:
        return False


def _runs(now: Entered, then: Entered | None) -> list[str]:
    """What in `now`'s git dir could run a program (or name more that does) when git runs
    there, and is new since `then` (its state before: the files whose content changed, of a
    config the settings added, of a hooks folder the hooks added or changed)."""
    assert now.git_dir is not None
    git_dir = now.git_dir

    def changed(name: str) -> bool:
        at = FINGERPRINTED.index(name)
        return then is None or then.fingerprint[at : at + 1] != now.fingerprint[at : at + 1]

    found = []
    commondir = os.path.join(git_dir, "commondir")
    if changed("commondir") and os.path.lexists(commondir):
        found.append(commondir)
    for name, settings, before in (
        ("config", now.settings, None if then is None else then.settings),
        (
            "config.worktree",
            now.worktree_settings,
            None if then is None else then.worktree_settings,
        ),
    ):
        config = os.path.join(git_dir, name)
        if changed(name) and os.path.lexists(config):
            # An include counts whenever the config changed: what it names may change unseen.
            added = settings is None or settings - (before or frozenset())
            if added or any(map(_INCLUDE, settings or ())):
                found.append(config)
    hooks = os.path.join(git_dir, "hooks")
    if changed("hooks"):
        listed = _listing(now.fingerprint[-1])
        held = None if then is None else _listing(then.fingerprint[-1])
        if listed is not None and held is not None and not os.path.islink(hooks):
            # A folder that held hooks before: only those added or changed move aside, the
            # person's others stay where git runs them.
            found += [os.path.join(hooks, n) for n, key in listed.items() if held.get(n, ()) != key]
        elif not _inert_hooks(hooks):
            found.append(hooks)
    return found


def quarantine(
    before: LinkState, after: LinkState, writable: Sequence[str], own: Iterable[str]
) -> list[Undone]:
    """After a command: in each repository git enters that the command could have made or
    changed (new to `after`, or its fingerprint changed), move aside what would run a
    program and is new (see `_runs`). Never in `own` (the roots' git dirs: read-only to the
    command), nor outside `writable`. A repository is known by its git dir as well as by its
    work tree (a submodule's, checked out again)."""
    undone: list[Undone] = []
    skip = {os.path.realpath(path) for path in own}
    by_git_dir = {seen.git_dir: seen for seen in before.entered.values() if seen.git_dir}
    for tree, now in after.entered.items():
        then = before.entered.get(tree)
        if now.git_dir is None:
            # A `.git` entry, new or changed, that names no git dir here: git might read one
            # there (fail closed); the entry itself is moved aside.
            changed = then is None or then.entry != now.entry
            if now.entry[:1] != (None,) and changed and inside(tree, writable):
                undone.append(_move_aside(os.path.join(tree, ".git"), writable))
            continue
        if then is None or then.git_dir != now.git_dir:
            then = by_git_dir.get(now.git_dir)
        if then is not None and then.fingerprint == now.fingerprint:
            continue
        if now.git_dir in skip or not inside(now.git_dir, writable):
            continue
        undone += [_move_aside(path, writable) for path in _runs(now, then)]
    return undone


def _move_aside(path: str, writable: Sequence[str]) -> Undone:
    """Rename `path` to a free `<name>.write-guard-undone` beside it, reaching its folder from
    the writable root holding it one folder at a time, following no link: a command still
    running may swap a folder on the way for a link out of the roots after the check."""
    folder, name = os.path.split(path)
    root = next((r for r in map(os.path.realpath, writable) if inside(folder, [r])), None)
    fd = -1
    try:
        if root is None:
            raise OSError("outside the roots")
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        for part in os.path.relpath(folder, root).split(os.sep):
            if part in ("", "."):
                continue
            below = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = below
        kept, n = name + ASIDE, 1
        while _exists(kept, fd):
            n += 1
            kept = f"{name}{ASIDE}.{n}"
        os.replace(name, kept, src_dir_fd=fd, dst_dir_fd=fd)
    except OSError:
        return Undone(path, None, left=True)
    finally:
        if fd >= 0:
            os.close(fd)
    return Undone(path, os.path.join(folder, kept))


def _exists(name: str, fd: int) -> bool:
    try:
        os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class LinkWatch:
    """The gitlinks of the roots' repositories before a command, to compare after it."""

    repositories: tuple[tuple[str, str], ...]
    own: tuple[str, ...]
    writable: tuple[str, ...]
    before: LinkState
    refusal: str | None = None
    """Why the command must not run: which repositories git enters cannot be told."""
    committed: tuple[tuple[str, str], ...] = ()
    """Those of `repositories` whose refs' trees are read too."""

    @classmethod
    def start(cls, writable: Sequence[str], last: LinkState | None = None) -> LinkWatch:
        """Before a command, in the writable roots' repositories and in every other work
        tree of theirs (the person's, outside the roots too: their indexes are in the git
        dir the command can write). `last`: the state the session's last command left
        (`finish_with_state`): what changed since (a command still running in the
        background) is judged with this command, as a state taken now would hold it."""
        dirs = {root: git_dirs(root) for root in writable}
        repositories = {found[0]: root for root, found in dirs.items() if found}
        for found in dirs.values():
            for git_dir in found:
                for work_tree, index_dir in work_trees(git_dir):
                    repositories.setdefault(index_dir, work_tree)
        own = (*(d for found in dirs.values() for d in found), *repositories)
        # The repositories inside the roots too (a workspace that is a folder of them, a
        # nested clone): the person's git in one enters its gitlinks. Not the roots' own,
        # so judged like any repository a gitlink reaches. The refs are read of the roots'
        # and of the workspace's nested ones (as the sandbox binds them: the extra roots, a
        # temp folder, hold none of the person's, and a busy one would cost every command).
        committed = dict(repositories)
        for root in writable:
            nested, gitfiles = nested_git_dirs(root)
            seeds = [(os.path.dirname(d), d) for d in nested if os.path.basename(d) == ".git"]
            for gitfile in gitfiles:
                found = git_dirs(os.path.dirname(gitfile))
                if found:
                    seeds.append((os.path.dirname(gitfile), found[0]))
            for work_tree, index_dir in seeds:
                repositories.setdefault(index_dir, work_tree)
                if root == writable[0]:
                    committed.setdefault(index_dir, work_tree)
        pairs = tuple((work_tree, index_dir) for index_dir, work_tree in repositories.items())
        refs = tuple((work_tree, index_dir) for index_dir, work_tree in committed.items())
        before = link_state(pairs, refs) if last is None else last
        if before.blind and last is not None:
            # Refused since; if the person mended it, judged from what they left.
            before = link_state(pairs, refs)
        refusal = BLIND_REFUSAL.format("; ".join(before.blind)) if before.blind else None
        own_dirs = tuple(dict.fromkeys(own))
        return cls(pairs, own_dirs, tuple(writable), before, refusal, refs)

    def finish(self) -> str:
        """After it: what was moved aside (see `quarantine`), as the person and model are
        told; empty when nothing was."""
        return self.finish_with_state()[0]

    def finish_with_state(self) -> tuple[str, LinkState]:
        """`finish`, and the state after it, for the session's next command."""
        after = link_state(self.repositories, self.committed)
        undone = quarantine(self.before, after, self.writable, self.own)
        text = quarantine_text(undone, after.unreadable, after.blind, after.unread_refs)
        return text, link_state(self.repositories, self.committed) if undone else after


BLIND_REFUSAL = (
    "write-guard refuses shell commands while it cannot tell which repositories the "
    "workspace's git enters (their config and hooks would run for the person): {}. For the "
    "person, outside this session: check `git ls-files -s | grep ^160000` and the config and "
    "hooks of the repositories in that work tree, then rebuild the index (`git read-tree "
    "HEAD` keeps the work tree's files, not what was staged); commands run again once it reads"
)


def quarantine_text(
    undone: Sequence[Undone],
    unreadable: Sequence[str] = (),
    blind: Sequence[str] = (),
    unread_refs: Sequence[str] = (),
) -> str:
    """What the person and the model are told."""
    parts = [
        f"moved {item.path} aside to {item.kept}"
        if item.kept
        else f"could not move {item.path} aside: remove it before running git in the workspace"
        for item in undone
    ]
    text = ""
    if parts:
        text = (
            "A shell command made or changed a repository that git enters from the workspace "
            "(a gitlink: `git status` runs git there), with settings or hooks that can run "
            "programs: " + "; ".join(parts) + ". Check them, and move them back if they are "
            "yours."
        )
    if unreadable:
        text += (" " if text else "") + (
            "Could not read the index to check the gitlinks a shell command left: "
            + "; ".join(unreadable)
            + ". Check `git ls-files -s | grep ^160000` before running git in the workspace."
        )
    if blind:
        text += (
            " It could not search all the repositories git may enter instead: "
            + "; ".join(blind)
            + ". Shell commands are refused until the index reads again."
        )
    if unread_refs:
        text += (" " if text else "") + (
            "Could not read every tree the refs name, for the gitlinks a checkout would bring "
            "(read on at the next command): "
            + "; ".join(unread_refs)
            + ". Before checking out another branch or tag, check "
            "`git ls-tree -r <it> | grep ^160000`."
        )
    return text
