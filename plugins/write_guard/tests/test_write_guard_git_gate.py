"""The git gate reads git the way git does: abbreviated options, `-c` and `GIT_CONFIG_*`
overrides and aliases, git-core programs, computed program names; and lets branch switches,
new branches and reads pass. (The attack suite runs these for real; this pins the gate alone,
without the snapshot that also makes lost work recoverable.)"""

from __future__ import annotations

import pytest
from write_guard._decide import git_hold
from write_guard._git import runs_program
from write_guard._surface import extract_surface

HELD = [
    ("git reset --hard", "reset --hard"),
    ("git reset --har", "reset --hard"),
    ("git reset --h HEAD~1", "reset --hard"),
    ("git reset --merge", "reset --merge"),
    ("git reset --keep HEAD~1", "reset --keep"),
    ("git push --force-w origin main", "push"),
    ("git push -f", "push"),
    ("git push origin :main", "push"),
    ("git push origin +main", "push"),
    ("git push --delete origin topic", "push"),
    ("git push --mirror", "push"),
    ("git commit --amen -m x", "commit --amend"),
    ("git checkout -f main", "checkout --force"),
    ("git checkout -- .", "checkout of paths"),
    ("git checkout .", "checkout of paths"),
    ("git checkout HEAD a.txt", "checkout of paths"),
    ("git checkout logs/", "checkout of paths"),
    ("git restore .", "restore"),
    ("git restore --worktree --staged a.txt", "restore"),
    ("git switch -f main", "switch --discard-changes"),
    ("git switch --discard-changes main", "switch --discard-changes"),
    ("git branch -D topic", "branch"),
    ("git branch -d -f topic", "branch"),
    ("git branch -f topic main", "branch"),
    ("git branch -M main", "branch"),
    ("git update-ref -d refs/heads/x", "update-ref"),
    ("git tag -d v1", "tag"),
    ("git reflog expire --expire=now --all", "reflog expire"),
    ("git gc --prune=now", "gc --prune"),
    ("git prune", "prune"),
    ("git filter-branch HEAD", "filter-branch"),
    ("git clean -fdx", "clean"),
    ("git -c clean.requireForce=false clean -dx", "clean"),
    ("git stash drop", "stash drop"),
    ("git stash clear", "stash clear"),
    ("git worktree remove --force ../wt", "worktree remove"),
    ("git rm -f a.txt", "rm --force"),
    ("git-reset --hard", "reset --hard"),
    ("/usr/lib/git-core/git-checkout -- a.txt", "checkout of paths"),
    ("G=git; $G reset --hard", "reset --hard"),
    ("git -c alias.nuke='reset --hard' nuke", "reset --hard"),
    ("git -c alias.x='!rm -rf .' x", "shell alias"),
    (
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0='reset --hard' git x",
        "reset",
    ),
    ("env git reset --hard", "reset --hard"),
    ("bash -c 'git clean -f'", "clean"),
    ("git -C ../other reset --hard", "reset --hard"),
    ("GIT_DIR=x git reset --hard", "reset --hard"),
]
PASSING = [
    "git checkout main",
    "git checkout -b feature/x",
    "git checkout -b docs",
    "git switch dev",
    "git switch -c topic",
    "git status",
    "git log --oneline -5",
    "git diff --stat",
    "git add -A && git commit -m 'fix: x'",
    "git restore --staged a.txt",
    "git reset -q b.txt",
    "git reset --soft HEAD~1",
    "git clean -n",
    "git push origin main",
    "git rebase --abort",
    "git stash && git stash pop",
    "git branch -d merged",
    "git branch --list",
    "git tag v2",
    "git commit --author='a <a@b>' -m x",
]


@pytest.mark.parametrize(("command", "operation"), HELD, ids=[c for c, _ in HELD])
def test_the_gate_holds(command: str, operation: str) -> None:
    hold = git_hold(extract_surface("Bash", {"command": command}), lambda name: name == "logs/")
    assert hold is not None, command
    assert operation in hold.operation


@pytest.mark.parametrize("command", PASSING)
def test_the_gate_lets_through(command: str) -> None:
    assert git_hold(extract_surface("Bash", {"command": command}), lambda _: False) is None


def test_a_checkout_of_an_existing_path_is_held_and_of_a_branch_is_not() -> None:
    surface = extract_surface("Bash", {"command": "git checkout src"})
    assert git_hold(surface, lambda name: name == "src") is not None
    assert git_hold(surface, lambda name: False) is None


@pytest.mark.parametrize(
    "argv",
    [
        ("git", "-c", "core.fsmonitor=touch /x", "status"),
        ("GIT_EXTERNAL_DIFF=x", "git", "diff"),
        ("git", "-c", "core.sshCommand=x", "fetch"),
        ("git", "ls-remote", "--upload-pack=x", "r"),
        ("git", "clone", "ext::sh -c x", "d"),
        ("git", "config", "core.hooksPath", "/x"),
        ("git", "-C", "/out", "init"),
        ("git", "format-patch", "-o", "/out"),
        ("GIT_CONFIG_COUNT=1", "git", "status"),
    ],
)
def test_ways_git_runs_a_program_or_writes_elsewhere_are_named(argv: tuple[str, ...]) -> None:
    assert runs_program(argv) is not None


def test_plain_git_runs_no_program() -> None:
    assert runs_program(("git", "status")) is None
    assert runs_program(("git", "commit", "-m", "x")) is None


def test_without_a_sandbox_git_running_a_program_is_refused() -> None:
    from write_guard._fallback import fallback_doubt

    line = "git -c core.fsmonitor='touch /x' status"
    surface = extract_surface("Bash", {"command": line})
    assert fallback_doubt(surface.programs, line) is not None
    plain = extract_surface("Bash", {"command": "git status"})
    assert fallback_doubt(plain.programs, "git status") is None


@pytest.mark.parametrize(
    "line",
    [
        "S=branch; git $S -D feature",
        "F=-D; git branch $F feature",
        "git $(echo branch) -D feature",
        'f() { git "$@"; }; f branch -D feature',
        "eval \"$(printf 'git branch -D feature')\"",
        "git${IFS}branch -D feature",
        "git`true` branch -D feature",
        "$0 -c 'git branch -D feature'",
        'git push origin "$BRANCH"',
        'git -c "$KEY=1" status',
    ],
)
def test_a_git_word_known_only_when_the_line_runs_is_held(line: str) -> None:
    assert git_hold(extract_surface("Bash", {"command": line})) is not None, line


@pytest.mark.parametrize(
    "line",
    [
        "git commit -qm \"$(cat <<'EOF'\nFix: x\nEOF\n)\"",
        'git commit -am "$msg"',
        'git commit --message="$msg"',
        'git checkout -b "$name"',
        'git add "$f" && git rm -q -- "$g"',
        "git log --format=%s $range",
        "$HOME/bin/tool --flag",
    ],
)
def test_a_computed_message_or_a_plain_subcommands_argument_is_not_held(line: str) -> None:
    assert git_hold(extract_surface("Bash", {"command": line})) is None, line


ALIAS = "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.nuke GIT_CONFIG_VALUE_0='branch -D x'"


@pytest.mark.parametrize(
    "line",
    [
        f"export {ALIAS}; git nuke",
        f"{ALIAS.replace(' ', '; ')}; export GIT_CONFIG_COUNT GIT_CONFIG_KEY_0 X; git nuke",
        f"env {ALIAS} git nuke",
        f"{ALIAS} command git nuke",
        f"{ALIAS} nice -n 1 git nuke",
        "GIT_CONFIG_PARAMETERS=\"'alias.nuke=branch -D x'\" git nuke",
        "git -c include.path=/w/n.cfg nuke",
        "git -c includeIf.onbranch:main.path=n.cfg nuke",
        "GIT_CONFIG_GLOBAL=n.cfg git nuke",
        "HOME=hh git nuke",
        "export HOME=hh; git nuke",
        "git -c help.autocorrect=immediate brnach -D x",
        "git -c remote.origin.mirror=true push origin",
        "git -c remote.origin.push=+x:main push origin",
        "git -c remote.origin.fetch=+refs/heads/*:refs/heads/* fetch origin",
        "git -c gc.pruneExpire=now gc",
        "read -r v; export GIT_CONFIG_COUNT=$v; git nuke",
    ],
)
def test_configuration_the_line_chooses_is_held(line: str) -> None:
    assert git_hold(extract_surface("Bash", {"command": line})) is not None, line


@pytest.mark.parametrize(
    "line",
    [
        "GIT_AUTHOR_DATE=2026-01-01 git commit -qm x",
        "git -c user.name=x -c user.email=y commit -qm x",
        "X=1; export PATH=/usr/bin:$PATH; git status",
        "git -c help.autocorrect=0 status",
        "git -c color.ui=never push origin main",
    ],
)
def test_configuration_that_changes_no_operation_is_not_held(line: str) -> None:
    assert git_hold(extract_surface("Bash", {"command": line})) is None, line


@pytest.mark.parametrize(
    "line",
    [
        "git fetch -q . +main:feature",
        "git fetch -qf . main:feature",
        "git pull --force origin main:main",
        "git fetch --prune origin refs/heads/*:refs/heads/*",
        "git fetch -f --tags origin",
        "git send-pack --force ../remote.git feature:main",
        "git send-pack ../remote.git +feature:main",
    ],
)
def test_a_fetch_or_send_pack_that_forces_a_local_ref_is_held(line: str) -> None:
    assert git_hold(extract_surface("Bash", {"command": line})) is not None, line


@pytest.mark.parametrize(
    "line",
    [
        "git fetch origin",
        "git fetch --prune origin",
        "git fetch origin main:main",
        "git fetch -q origin +refs/heads/*:refs/remotes/origin/*",
        "git pull --rebase origin main",
    ],
)
def test_a_plain_fetch_or_pull_is_not_held(line: str) -> None:
    assert git_hold(extract_surface("Bash", {"command": line})) is None, line


def test_send_pack_to_a_repository_on_this_machine_is_refused_without_a_sandbox() -> None:
    assert runs_program(("git", "send-pack", "/elsewhere/repo.git", "main:main")) is not None


@pytest.mark.parametrize(
    "line",
    [
        "find . -maxdepth 0 -exec git branch -D x \\;",
        "find . -name a -execdir git reset --hard {} +",
        "taskset 1 git branch -D x",
        "chrt -o 0 git branch -D x",
        "coproc git branch -D x; wait",
        "env -S 'git branch -D x'",
        "trap 'git branch -D x' EXIT",
        "shopt -s expand_aliases\nalias nuke='git branch -D x'\nnuke",
        "strace -f -o /dev/null git branch -D x",
        "parallel git branch -D ::: x",
        "script -qc 'git branch -D x' /dev/null",
        "watch -n 1 'git push -f origin x:main'",
    ],
)
def test_git_run_by_another_program_is_held(line: str) -> None:
    assert git_hold(extract_surface("Bash", {"command": line})) is not None, line


@pytest.mark.parametrize(
    "line",
    [
        "gh pr create --title x --body 'git reset --hard was the cause'",
        "echo git branch -D x",
        "grep -rn 'git reset --hard' docs",
        "timeout 60 npm test",
    ],
)
def test_a_git_line_quoted_as_text_is_not_held(line: str) -> None:
    assert git_hold(extract_surface("Bash", {"command": line})) is None, line


@pytest.mark.parametrize(
    "line",
    [
        "git branch -D x\necho 'unclosed",
        "echo 'a\nb'\ngit reset --hard\n(",
        "$'\\''\ngit branch -D x\n'",
    ],
)
def test_git_on_a_complete_line_before_one_bash_cannot_read_is_held(line: str) -> None:
    # bash runs each complete line before it fails on the one it cannot read.
    assert git_hold(extract_surface("Bash", {"command": line})) is not None, line
