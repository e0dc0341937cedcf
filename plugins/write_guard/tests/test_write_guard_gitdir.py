"""Files inside a git dir that redirect git: a sandboxed command may not leave one behind that
makes git run a program of its making the next time the person runs git, outside the sandbox.

Each attack is first run unguarded in the jail, followed by the person's git (`git status`
and a commit, run in the jail too, unsandboxed): it must run the planted program (a marker
file appears in the "outside" folder). Then as write-guard makes it run, through a real host
whose terminal runs the wrapped command in the jail: the person's git afterwards must run
nothing of the command's, and the person is told of what was undone."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from framework import ToolCall, ToolResult
from wg_jail import BWRAP, Ran, Tree, dispatch_bash
from write_guard._claude_sandbox import sandbox_settings
from write_guard._sandbox import plan_sandbox, wrap_command

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(BWRAP is None, reason="the attacks run commands under bubblewrap"),
]

PERSON = (
    "git status --porcelain >/dev/null 2>&1; "
    "git commit -q --allow-empty -m person >/dev/null 2>&1; true"
)


def _evil(name: str, folder: str = "ev") -> str:
    """A git dir of the command's making, beside the real one: the repository's objects and
    refs, and a config that runs a program on `git status`."""
    return (
        f'g="$(git rev-parse --git-common-dir)" && mkdir -p {folder} && '
        f'cp -r "$g/HEAD" "$g/objects" "$g/refs" {folder}/ && '
        f"printf '[core]\\n\\tfsmonitor = touch {{OUT}}/{name}\\n' > {folder}/config"
    )


def _script(text: str) -> str:
    """`text` run from a script the command writes: the line analysis never reads it."""
    return f"printf '%s\\n' {_q(text)} > s.sh && bash s.sh"


def _q(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


_CONFIG = "printf '[core]\\n\\tfsmonitor = touch {{OUT}}/{name}\\n' > {path}"


@dataclass(frozen=True)
class Redirect:
    id: str
    command: str
    setup: str = ""
    """What the person did before (run unsandboxed in the jail, in the workspace)."""
    workspace: str = "ws"
    """The workspace, relative to the tree (a linked work tree: `lw`)."""
    person: str = "ws"
    """Where the person runs git afterwards."""
    undone: bool = False
    """It must run (not be refused) and be undone after it, the person told."""
    then: str = PERSON
    """What the person's git does afterwards."""


LINKED = "git worktree add -q ../lw"
REDIRECTS = [
    Redirect("commondir", f'{_evil("c1")} && echo "$PWD/ev" > .git/commondir'),
    Redirect("commondir-relative", f"{_evil('c2')} && echo ../ev > .git/commondir"),
    Redirect(
        "commondir-python",
        f"{_evil('c3')} && python3 -c \"open('.git/commondir', 'w').write('../ev')\"",
    ),
    Redirect(
        "git-dir-renamed-by-python",
        "python3 -c \"import os; os.rename('.g' + 'it', 'kept'); os.mkdir('.g' + 'it'); "
        "open('.g' + 'it/config', 'w')"
        ".write('[core]\\\\n\\\\tfsmonitor = touch {OUT}/m2\\\\n')\" && "
        "cp -r kept/HEAD kept/objects kept/refs .g?t/",
    ),
    Redirect(
        "git-dir-replaced-by-gitfile",
        f"{_evil('m3')} && " + _script("mv .git old && echo 'gitdir: ev' > .git"),
    ),
    Redirect(
        "git-dir-moved-by-script",
        _script(
            "mv .git .git-old && mkdir .git && cp -r .git-old/HEAD .git-old/objects "
            ".git-old/refs .git/ && printf '[core]\\n\\tfsmonitor = touch {OUT}/m4\\n' "
            "> .git/config"
        ),
    ),
    Redirect(
        "worktree-commondir",
        f'{_evil("w1")} && echo "$PWD/ev" > .git/worktrees/lw/commondir',
        setup=LINKED,
        person="lw",
    ),
    Redirect(
        "linked-workspace-gitfile-by-script",
        f"{_evil('w4')} && " + _script('echo "gitdir: $PWD/ev" > .git'),
        setup=LINKED,
        workspace="lw",
        person="lw",
    ),
    Redirect(
        "linked-workspace-commondir",
        f'{_evil("w3")} && echo "$PWD/ev" > "$(git rev-parse --git-dir)/commondir"',
        setup=LINKED,
        workspace="lw",
        person="lw",
    ),
    Redirect(
        "config-worktree-by-script",
        _script("printf '[core]\\n\\tfsmonitor = touch {OUT}/cw2\\n' > .git/config.worktree"),
        setup="git config extensions.worktreeConfig true",
    ),
    Redirect(
        "include-missing",
        _CONFIG.format(name="i1", path="project.gitconfig"),
        setup="git config include.path ../project.gitconfig",
    ),
    Redirect(
        "include-existing",
        _CONFIG.format(name="i2", path="project.gitconfig"),
        setup="git config include.path ../project.gitconfig && echo '[user]' > project.gitconfig",
    ),
    Redirect(
        "include-if",
        _CONFIG.format(name="i3", path="cond.gitconfig"),
        setup="git config 'includeIf.gitdir:/.path' ../cond.gitconfig",
    ),
]


# Repositories git enters through a gitlink (see _gitlink): the person's `git status` in the
# workspace runs git in each checked-out one, with that repository's config.
LIB = "git init -q -b main ../lib && git -C ../lib commit -q --allow-empty -m lib"
ADD_LIB = 'git -c protocol.file.allow=always submodule add -q "$PWD/../lib"'
EMPTY_LINK = (
    "mkdir vendor && git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),vendor"
)


def _made(name: str, folder: str = "sub2", then: str = "") -> str:
    """A repository made, given a program to run on `git status`, and registered."""
    return (
        f"git init -q {folder} && git -C {folder} commit -q --allow-empty -m s && "
        f"git -C {folder} config core.fsmonitor 'touch {{OUT}}/{name}' && {then}"
        f"git update-index --add --cacheinfo 160000,$(git -C {folder} rev-parse HEAD),{folder}"
    )


def _moved_git_dir(name: str, to: str = "gd") -> str:
    """A repository of the command's making whose git dir is moved to `to`, and a folder `v`."""
    return (
        f"git init -q ev && git -C ev commit -q --allow-empty -m e && "
        f"git -C ev config core.fsmonitor 'touch {{OUT}}/{name}' && mv ev/.git '{to}' && "
        "rmdir ev && mkdir v && "
    )


def _link_v(to: str = "gd") -> str:
    return f" && git update-index --add --cacheinfo 160000,$(git --git-dir='{to}' rev-parse HEAD),v"


GITLINKS = [
    Redirect("gitlink-index-v4", "git update-index --index-version 4 && " + _made("g1")),
    Redirect("gitlink-split-index", _made("g2") + " && git update-index --split-index"),
    Redirect(
        "gitlink-submodule-add-then-config",
        f"{ADD_LIB} mod2 && git -C mod2 config core.fsmonitor 'touch {{OUT}}/g3'",
        setup=LIB,
    ),
    Redirect(
        "gitlink-present-checked-out-by-the-command",
        "git init -q vendor && git -C vendor config core.fsmonitor 'touch {OUT}/g4'",
        setup=EMPTY_LINK,
    ),
    Redirect(
        "gitlink-gitfile-to-a-git-dir-of-its-making",
        "git init -q ev && git -C ev config core.fsmonitor 'touch {OUT}/g5' && mkdir v && "
        + _script("echo 'gitdir: ../ev/.git' > v/.git")
        + " && git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),v",
    ),
    Redirect(
        "gitlink-config-included",
        "printf '[core]\\n\\tfsmonitor = touch {OUT}/g6\\n' > inc.cfg && "
        + _made(
            "unused",
            then="git -C sub2 config --unset core.fsmonitor && "
            "git -C sub2 config include.path ../../inc.cfg && ",
        ),
    ),
    Redirect(
        "gitlink-inside-a-submodule",
        _made("g7", "mod/inner")
        .replace("git update-index", "git -C mod update-index")
        .replace(",mod/inner", ",inner"),
        setup=f"{LIB} && {ADD_LIB} mod && git commit -qm mod",
    ),
    Redirect("gitlink-by-a-script", _script(_made("g8"))),
    Redirect(
        # git reads a gitfile up to its first NUL: `../gd` here.
        "gitlink-gitfile-with-a-nul",
        _script(_moved_git_dir("g11") + "printf 'gitdir: ../gd\\0x\\n' > v/.git" + _link_v()),
    ),
    Redirect(
        # A split index's own entry replacing a shared one: its name is in the shared part.
        "gitlink-split-index-replacing-a-shared-entry",
        _script(
            "echo x > s && git add s && git update-index --split-index && rm s && "
            + _made("g13", "s").replace("update-index --add", "update-index")
        ),
    ),
    Redirect(
        # git keeps a gitfile's path whole but for trailing CRs and LFs: `../gd ` here.
        "gitlink-gitfile-path-ending-in-a-space",
        _script(
            _moved_git_dir("g12", "gd ") + "printf 'gitdir: ../gd \\n' > v/.git" + _link_v("gd ")
        ),
    ),
    Redirect(
        # The person's own linked work tree, outside the workspace: its index lives in the
        # workspace's git dir, and a gitlink named `../ws/evil` there is entered from it.
        "gitlink-in-the-persons-other-work-tree",
        "git init -q evil && git -C evil commit -q --allow-empty -m e && "
        "git -C evil config core.fsmonitor 'touch {OUT}/g10' && "
        "git --git-dir=.git/worktrees/lw update-index --add --cacheinfo "
        '160000,$(git -C evil rev-parse HEAD),zzzzzzzzzz && python3 -c "import hashlib; '
        "p = '.git/worktrees/lw/index'; d = bytearray(open(p, 'rb').read()); "
        "i = d.index(b'zzzzzzzzzz'); d[i:i + 10] = b'../ws/evil'; "
        "d[-20:] = hashlib.sha1(d[:-20]).digest(); open(p, 'wb').write(d)\"",
        setup=LINKED,
        person="lw",
    ),
    Redirect(
        "gitlink-module-git-dir-left-for-submodule-update",
        f"{ADD_LIB} m3 && git -C m3 config core.fsmonitor 'touch {{OUT}}/g9' && "
        + _script("rm -rf m3 && mkdir m3"),
        setup=LIB,
        then="git -c protocol.file.allow=always submodule update -q --init >/dev/null 2>&1; "
        + PERSON,
    ),
]
REDIRECTS += [replace(case, undone=True) for case in GITLINKS]


def _markers(tree: Tree) -> list[str]:
    return sorted(p.name for p in (tree.root / "out").iterdir() if p.name != "victim.txt")


def _person(tree: Tree, where: str, then: str = PERSON) -> Ran:
    return tree.run(f"cd {tree.root / where} && {then}")


async def _run_guarded(
    tree: Tree, command: str, workspace: Path
) -> tuple[ToolResult, list[tuple[str, str]], Ran | None]:
    """The call through a real host whose terminal runs what reaches it in the jail (as the
    harness would, from the workspace); the result, the toasts and notes, and the run."""
    ran: list[Ran] = []

    async def terminal(event: ToolCall) -> ToolResult:
        done = tree.run(f"cd {workspace} && {event.input['command']}")
        ran.append(done)
        return ToolResult(output={"stdout": done.stdout, "stderr": done.stderr})

    result, actions = await dispatch_bash(tree, command, terminal, workspace, snapshots=False)
    said = [(action.kind, action.text) for action in actions]
    return result, said, ran[0] if ran else None


@pytest.mark.parametrize("case", REDIRECTS, ids=[case.id for case in REDIRECTS])
async def test_a_redirection_left_by_a_command_runs_nothing_for_the_person(
    tree: Tree, case: Redirect
) -> None:
    command = tree.fill(case.command)
    if case.setup:
        assert tree.run(case.setup).rc == 0
    tree.run(f"cd {tree.root / case.workspace} && {command}")
    _person(tree, case.person, case.then)
    assert _markers(tree), f"the attack runs nothing for the person even unguarded: {command}"
    tree.reset()
    if case.setup:
        assert tree.run(case.setup).rc == 0
    result, said, ran = await _run_guarded(tree, command, tree.root / case.workspace)
    _person(tree, case.person, case.then)
    assert _markers(tree) == [], (said, ran)
    assert result.denial is None or not case.undone, result.denial
    if result.denial is None:
        toasts = [
            text for kind, text in said if kind == "toast" and ("undid" in text or "aside" in text)
        ]
        assert ran is not None and (ran.rc != 0 or toasts), (said, ran)
        assert toasts or not case.undone, (said, ran)
    # The person's git still works where it did.
    assert _person_git_works(tree, case.person), case.id


def _person_git_works(tree: Tree, where: str) -> bool:
    done = tree.run(
        f"cd {tree.root / where} && git commit -q --allow-empty -m again && git log -1 --format=%s"
    )
    return done.rc == 0 and done.stdout.strip() == "again"


async def test_alternates_planted_by_a_command_are_moved_aside_and_the_person_told(
    tree: Tree,
) -> None:
    # No program, but git would read objects from a folder the command controls (and `gc`
    # would drop local copies of what it finds there).
    command = 'mkdir -p alt && echo "$PWD/alt" > .git/objects/info/alternates'
    result, said, ran = await _run_guarded(tree, command, tree.ws)
    assert ran is not None and result.denial is None
    assert not (tree.ws / ".git" / "objects" / "info" / "alternates").exists()
    aside = list((tree.ws / ".git" / "objects" / "info").glob("alternates.write-guard-*"))
    assert len(aside) == 1 and "alt" in aside[0].read_text()
    toasts = [text for kind, text in said if kind == "toast"]
    assert any("alternates" in text and "undid" in text for text in toasts), said
    assert "alternates" in ran.stderr  # the model reads it in the command's output


async def test_the_persons_and_the_agents_ordinary_git_keep_working(tree: Tree) -> None:
    # The agent: a commit, a linked work tree inside the workspace, a new repository.
    command = (
        "git add a.txt && git commit -qm agent && git worktree add -q inner-wt && "
        "git -C inner-wt log -1 --format=%s && git init -q fresh && git -C fresh status -s"
    )
    result, said, ran = await _run_guarded(tree, command, tree.ws)
    assert result.denial is None
    assert ran is not None and ran.rc == 0 and ran.stdout.strip() == "agent", ran
    assert not [text for kind, text in said if kind == "toast"], said
    # The person, afterwards and outside: a linked work tree of their own, git in both.
    person = tree.run(
        f"git worktree add -q ../lw2 && cd ../lw2 && git commit -q --allow-empty -m p && "
        f"cd {tree.ws}/inner-wt && git status -s && git log -1 --format=%s"
    )
    assert person.rc == 0 and person.stdout.strip() == "agent", person
    # … and a command after that one leaves the person's new work tree alone.
    _result, said, ran = await _run_guarded(
        tree, "git worktree list --porcelain | grep -c ^worktree", tree.ws
    )
    assert ran is not None and ran.stdout.strip() == "3", ran
    assert _person_git_works(tree, "lw2")


async def test_the_agents_submodule_add_and_the_persons_git_keep_working(tree: Tree) -> None:
    # A clone git made (its config holds only what `submodule add` writes, its hooks only
    # samples) is left as it is: the agent commits it, the person's git recurses into it.
    assert tree.run(LIB).rc == 0
    command = f"{ADD_LIB} mod2 && git -C mod2 log -1 --format=%s && git commit -qm add-mod2"
    result, said, ran = await _run_guarded(tree, command, tree.ws)
    assert result.denial is None and ran is not None and ran.rc == 0, ran
    assert ran.stdout.strip() == "lib"
    assert not [text for kind, text in said if kind == "toast"], said
    module = tree.ws / ".git" / "modules" / "mod2"
    assert "[remote" in (module / "config").read_text() and not list(module.glob("*undone*"))
    person = tree.run(
        "git status --porcelain && git -C mod2 status --porcelain && git show --stat HEAD"
    )
    assert person.rc == 0 and "mod2" in person.stdout and "fatal" not in person.stderr, person
    assert _person_git_works(tree, "ws")


async def test_the_persons_own_submodule_settings_are_left_alone(tree: Tree) -> None:
    # Settings the person gave a submodule (here a program) are the person's: a command that
    # neither made nor changed that repository leaves them, even when it changes the index.
    setup = f"{LIB} && {ADD_LIB} mod && git commit -qm mod && git -C mod config diff.tool vimdiff"
    assert tree.run(setup).rc == 0
    config = tree.ws / ".git" / "modules" / "mod" / "config"
    before = config.read_text()
    command = (
        "echo more >> c.txt && git add c.txt && git commit -qm agent && git -C mod log -1 && "
        "git -C mod commit -q --allow-empty -m agent-in-mod"
    )
    result, said, ran = await _run_guarded(tree, command, tree.ws)
    assert result.denial is None and ran is not None and ran.rc == 0, ran
    assert not [text for kind, text in said if kind == "toast"], said
    assert config.read_text() == before


async def test_where_no_wrapper_runs_it_the_host_moves_the_gitlinks_config_aside(
    tree: Tree,
) -> None:
    # Claude Code's own sandbox runs the command as written (this terminal stands for it): the
    # host's check when the result comes back is the only one.
    command = tree.fill(_made("n1"))

    async def as_written(event: ToolCall) -> ToolResult:
        ran = tree.run(command)
        return ToolResult(output={"stdout": ran.stdout, "stderr": ran.stderr})

    result, actions = await dispatch_bash(tree, "true", as_written, snapshots=False)
    assert any(a.kind == "toast" and "gitlink" in a.text for a in actions), actions
    assert any("gitlink" in note.text for note in result.notes)
    _person(tree, "ws")
    assert _markers(tree) == []
    assert _person_git_works(tree, "ws")


def _wrapped(tree: Tree, command: str) -> str:
    assert BWRAP is not None
    return wrap_command(command, plan_sandbox(BWRAP, [str(tree.ws)], [], []))


def test_the_wrapper_undoes_it_by_itself_as_for_a_command_run_in_the_background(
    tree: Tree,
) -> None:
    # A background command's result comes back when it starts: only the wrapper, which runs
    # the check when the sandbox (and every process in it) has ended, sees what it left.
    command = tree.fill(f'sleep 0.2; {_evil("b1")} && echo "$PWD/ev" > .git/commondir')
    ran = tree.run(_wrapped(tree, command))
    assert ran.rc == 0 and "undid" in ran.stderr and "commondir" in ran.stderr, ran
    assert not (tree.ws / ".git" / "commondir").exists()
    assert (tree.ws / ".git" / "commondir.write-guard-undone").read_text().strip().endswith("/ev")
    _person(tree, "ws")
    assert _markers(tree) == []


def test_the_check_outside_the_sandbox_follows_no_link_out_of_the_roots(tree: Tree) -> None:
    # The check runs unconfined: a git-dir folder the command replaced by a link to a folder
    # outside must not make it rename the person's files there.
    (tree.root / "out" / "alternates").write_text("the person's\n")
    command = tree.fill("rm -rf .git/objects/info && ln -s {OUT} .git/objects/info")
    ran = tree.run(_wrapped(tree, command))
    assert (tree.root / "out" / "alternates").read_text() == "the person's\n", ran
    assert not (tree.root / "out" / "alternates.write-guard-undone").exists()
    assert "could not undo" in ran.stderr, ran


def test_the_aside_name_planted_as_a_link_out_of_the_roots_moves_nothing_there(tree: Tree) -> None:
    # The command plants `commondir.write-guard-undone` as a link to a folder outside, then
    # writes the redirection: the unconfined move must replace the link, not follow it and
    # carry the command's file into that folder (into another repository's git dir, say).
    command = tree.fill(
        f"{_evil('a1')} && ln -s {{OUT}} .git/commondir.write-guard-undone && "
        'echo "$PWD/ev" > .git/commondir'
    )
    ran = tree.run(_wrapped(tree, command))
    assert not (tree.root / "out" / "commondir").exists(), ran
    assert not (tree.ws / ".git" / "commondir").exists(), ran
    aside = tree.ws / ".git" / "commondir.write-guard-undone"
    assert not aside.is_symlink() and aside.read_text().strip().endswith("/ev"), ran
    _person(tree, "ws")
    assert _markers(tree) == []


def test_existing_redirections_are_read_only_and_reach_claude_codes_sandbox(tree: Tree) -> None:
    # A config in the linked work tree, included by the main one (relative to `.git`).
    assert tree.run(f"{LINKED} && git config include.path ../../lw/inc && touch ../lw/inc").rc == 0
    assert BWRAP is not None
    lw = tree.root / "lw"
    plan = plan_sandbox(BWRAP, [str(lw)], [], [])
    entry = tree.ws / ".git" / "worktrees" / "lw"
    for path in (lw / ".git", entry / "commondir", entry / "gitdir", lw / "inc"):
        assert str(path) in plan.read_only, path
    assert str(tree.ws / ".git" / "commondir") in plan.git_absent
    assert str(entry) in (*plan.writable, *plan.pinned)  # a mount point: it cannot move
    deny = sandbox_settings(plan, str(lw))["filesystem"]["denyWrite"]
    assert str(entry / "commondir") in deny and str(lw / ".git") in deny
    ran = tree.run(
        f"cd {lw} && " + wrap_command('echo x > "$(git rev-parse --git-dir)/gitdir"', plan)
    )
    assert ran.rc != 0 and "Read-only" in ran.stderr, ran


async def test_a_repository_made_and_registered_as_a_gitlink_runs_nothing_for_the_person(
    tree: Tree,
) -> None:
    # The person's `git status` in the workspace runs `git status` in every checked-out
    # gitlink: a repository of the command's making, with a config of its making.
    command = tree.fill(
        "git init -q sub2 && git -C sub2 commit -q --allow-empty -m s && "
        "git -C sub2 config core.fsmonitor 'touch {OUT}/s1' && "
        "git update-index --add --cacheinfo 160000,$(git -C sub2 rev-parse HEAD),sub2"
    )
    tree.run(command)
    _person(tree, "ws")
    assert _markers(tree) == ["s1"]  # harmful unguarded
    tree.reset()
    result, said, ran = await _run_guarded(tree, command, tree.ws)
    assert ran is not None and ran.rc == 0, ran
    _person(tree, "ws")
    assert _markers(tree) == [], (said, ran)
    config = tree.ws / "sub2" / ".git" / "config"
    assert (
        not config.exists()
        and "fsmonitor" in (config.parent / "config.write-guard-undone").read_text()
    )
    toasts = [text for kind, text in said if kind == "toast" and "gitlink" in text]
    assert toasts and str(config) in toasts[0], said
    assert any(str(config) in note.text for note in result.notes)  # the model is told too
    # The repository and the gitlink stay: the person's git, and git in it, still work.
    assert _person_git_works(tree, "ws")
    assert tree.run("git -C sub2 log -1 --format=%s").stdout.strip() == "s"


@pytest.mark.parametrize(
    "command",
    [
        "mv .git kept && mkdir .git && cp -r kept/HEAD kept/objects kept/refs .git/ && "
        + _CONFIG.format(name="p1", path=".git/config"),
        f"{_evil('p2', 'sub/deeper/ev')} && mv .git sub/old && echo 'gitdir: sub/deeper/ev' > .git",
    ],
    ids=["new-git-dir", "gitfile"],
)
async def test_where_no_wrapper_pins_it_a_moved_git_dir_is_put_back(
    tree: Tree, command: str
) -> None:
    # Claude Code's own sandbox cannot bind a folder onto itself: the harness runs the command
    # as written (this terminal stands for it), and the host's check puts `.git` back.
    async def as_written(event: ToolCall) -> ToolResult:
        ran = tree.run(tree.fill(command))
        return ToolResult(output={"stdout": ran.stdout, "stderr": ran.stderr})

    config = (tree.ws / ".git" / "config").read_text()
    result, actions = await dispatch_bash(tree, "true", as_written, snapshots=False)
    toasts = [a.text for a in actions if a.kind == "toast"]
    assert any("undid" in text and ".git" in text for text in toasts), toasts
    assert any("undid" in note.text for note in result.notes)
    assert (tree.ws / ".git" / "config").read_text() == config
    assert (tree.ws / ".git.write-guard-undone").exists()
    _person(tree, "ws")
    assert _markers(tree) == []
    assert _person_git_works(tree, "ws")


async def test_a_gitlink_check_that_runs_over_refuses_the_command(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The check reads files a command wrote (an index crafted to cost seconds): it runs off
    # the event loop, bounded well under the hook client's wait, and when it runs over the
    # command is refused (else the client gives up on the hook and the command runs
    # unsandboxed).
    import threading
    import time

    import write_guard._register as wiring

    threads: list[str] = []
    real = wiring.LinkWatch.start

    def slow(writable: list[str], last: object = None) -> object:
        threads.append(threading.current_thread().name)
        time.sleep(wiring.GITLINK_CHECK_S + 1.0)
        return real(writable)

    monkeypatch.setattr(wiring.LinkWatch, "start", staticmethod(slow))
    ran: list[str] = []

    async def terminal(event: ToolCall) -> ToolResult:
        ran.append(str(event.input["command"]))
        return ToolResult(output="ran")

    result, _actions = await dispatch_bash(tree, "true", terminal, snapshots=False)
    assert wiring.GITLINK_CHECK_S < 1.5  # well under the client's 2 s
    assert ran == [] and result.denial is not None, result
    assert "gitlink" in result.denial.reason
    assert threads and threads[0] != threading.main_thread().name


async def test_a_gitlink_check_that_fails_after_the_command_is_said_and_keeps_the_rest(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    # After the command, a fail-closed handler's error would only lose what it had to say:
    # the redirections already undone are still told, and so is the failed check.
    import write_guard._register as wiring

    def broken(self: object) -> str:
        raise RuntimeError("boom")

    monkeypatch.setattr(wiring.LinkWatch, "finish_with_state", broken)
    command = 'mkdir -p alt && echo "$PWD/alt" > .git/objects/info/alternates'
    result, said, ran = await _run_guarded(tree, command, tree.ws)
    assert ran is not None and result.denial is None
    toasts = [text for kind, text in said if kind == "toast"]
    assert any("alternates" in text and "gitlink" in text for text in toasts), said
    assert any("RuntimeError" in note.text for note in result.notes), result.notes


@pytest.mark.parametrize(
    ("setup", "command", "config"),
    [
        (
            # The person's own nested repository, registered as a gitlink, with settings of
            # theirs; the agent's ordinary git in it rewrites files of its git dir.
            "git init -q s && echo a > s/f && git -C s add f && git -C s commit -q -m e && "
            "git -C s config pull.rebase true && git -C s config lfs.repositoryformatversion 0 "
            "&& git update-index --add --cacheinfo 160000,$(git -C s rev-parse HEAD),s && "
            "git commit -qm s",
            "touch s/f && git -C s status --porcelain && git -C s commit -q --allow-empty -m a",
            "s/.git/config",
        ),
        (
            # The person's submodule, deinited and inited again (not checked out); the agent's
            # `submodule update` checks it out (git rewrites its config: `core.worktree`).
            f"{LIB} && {ADD_LIB} mod && git commit -qm mod && git -C mod config pull.rebase "
            "true && git submodule deinit -q -f mod && git submodule init -q mod",
            "git -c protocol.file.allow=always submodule update -q mod",
            ".git/modules/mod/config",
        ),
    ],
    ids=["nested-repository", "submodule-update"],
)
async def test_the_agents_ordinary_git_leaves_the_persons_repository_settings_alone(
    tree: Tree, setup: str, command: str, config: str
) -> None:
    assert tree.run(setup).rc == 0
    result, said, ran = await _run_guarded(tree, command, tree.ws)
    assert result.denial is None and ran is not None and ran.rc == 0, ran
    assert not [text for kind, text in said if kind == "toast"], said
    assert "rebase = true" in (tree.ws / config).read_text()


async def test_what_a_background_command_registers_later_is_undone_at_the_next_command(
    tree: Tree,
) -> None:
    # Its result comes back when it starts; it registers the gitlink and sets the program
    # afterwards (here: between the two calls). The next, harmless, command of the session
    # is compared with the state the first one left, so it is judged then.
    from framework import Host, SessionStart

    import write_guard

    ran: list[Ran] = []

    async def terminal(event: ToolCall) -> ToolResult:
        ran.append(tree.run(f"cd {tree.ws} && {event.input['command']}"))
        return ToolResult(output="ran")

    env = {"HOME": str(tree.root / "home"), "CLAUDE_PROJECT_DIR": str(tree.ws),
           "TMPDIR": str(tree.root / "tmp")}  # fmt: skip
    toasts: list[str] = []
    async with Host(
        plugins=[write_guard], entry_points=False, store="memory://", env=env,
        options={"write-guard": {"extra_writable_roots": [str(tree.root / "tmp")],
                                 "snapshots": False}},
    ) as host:  # fmt: skip
        await host.dispatch(SessionStart(session_id="s", cwd=str(tree.ws)))
        for n, command in enumerate(["git init -q s && git -C s commit -q --allow-empty -m s",
                                     "true"]):  # fmt: skip
            if n == 1:
                later = tree.fill(
                    "git -C s config core.fsmonitor 'touch {OUT}/bg1' && git update-index "
                    "--add --cacheinfo 160000,$(git -C s rev-parse HEAD),s"
                )
                assert tree.run(later).rc == 0
            call = ToolCall(session_id="s", tool_use_id=f"t{n}", tool="Bash",
                            input={"command": command})  # fmt: skip
            outcome = await host.dispatch(call, terminal=terminal)
            toasts += [a.text for a in outcome.actions if a.kind == "toast"]
    assert len(ran) == 2 and all(done.rc == 0 for done in ran), ran
    assert any("s/.git/config" in text for text in toasts), toasts
    _person(tree, "ws")
    assert _markers(tree) == []


def test_an_empty_file_at_an_absent_redirection_is_left_and_one_with_content_undone(
    tmp_path: Path,
) -> None:
    from write_guard._gitdir import ASIDE, undo

    git = tmp_path / "ws" / ".git"
    git.mkdir(parents=True)
    worktree, commondir = git / "config.worktree", git / "commondir"
    # Claude Code's own sandbox holds an empty file at each absent path it denies writes to
    # while a command runs: it points git nowhere, and moving it would undo the sandbox's mount.
    worktree.write_text("")
    commondir.write_text("../../elsewhere\n")
    absent = [str(worktree), str(commondir)]
    undone = undo(absent, {path: None for path in absent}, [str(tmp_path / "ws")])
    assert [entry.path for entry in undone] == [str(commondir)]
    assert worktree.exists() and not commondir.exists()
    assert (git / ("commondir" + ASIDE)).read_text() == "../../elsewhere\n"
