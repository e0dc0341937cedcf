"""The second attack table (`wg_redteam_table`) run like the first, in a tree with a submodule
and a nested clone; and the attacks that need more than one command or a second session: a
file planted for the wrapper's own shell outside the sandbox, shared memory, another
session's temp folder, and file tools writing a nested repository's config."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from framework import Host, SessionEnd, SessionStart, ToolCall, ToolResult
from wg_jail import BWRAP, Tree, attack_does_no_harm, build_nested_template, guard_decides
from wg_redteam_table import REDTEAM
from write_guard._sandbox import shell_quote

import write_guard

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(BWRAP is None, reason="the attack suite runs commands under bubblewrap"),
]
MODES = {"sandbox": {}, "no-sandbox": {"sandbox": "off"}}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("template") / "t"
    build_nested_template(root)
    return root


def test_the_table_is_as_large_as_promised() -> None:
    assert len(REDTEAM) >= 40 and len({attack.id for attack in REDTEAM}) == len(REDTEAM)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("attack", REDTEAM, ids=[attack.id for attack in REDTEAM])
async def test_attack_does_no_harm(tree: Tree, attack: Any, mode: str) -> None:
    await attack_does_no_harm(tree, attack, MODES[mode])


async def test_a_file_planted_for_the_wrappers_outer_shell_is_not_written_through(
    tree: Tree,
) -> None:
    # The wrapper's shell (outside the sandbox) writes the functions and aliases to a file
    # named by its pid in $TMPDIR; a command plants symlinks to a file outside under every
    # name the next shells may use: the next wrapped command must not write through them.
    victim = tree.root / "out" / "victim.txt"
    plant = (
        'for i in $(seq 1 400); do ln -sf {OUT}/victim.txt "$TMPDIR/.write-guard.$i"; done; '
        "ls -A $TMPDIR | grep -c write-guard"
    )
    first = await guard_decides(tree, tree.fill(plant))
    assert first.command is not None
    # Run from a child shell, so that the planting call's own wrapper (another pid) does not
    # remove the link the next one (the jail's first shell) would write through.
    planted = tree.run(f"bash -c {shell_quote(first.command)}; true")
    assert planted.stdout.strip() == "400"
    second = await guard_decides(tree, "f() { echo fn; }; true")
    assert second.command is not None
    ran = tree.run(f"f() {{ echo fn; }}; {second.command}; f")
    assert ran.rc == 0 and ran.stdout == "fn\n", ran
    assert victim.read_text() == "victim\n"


async def test_shared_memory_is_the_commands_own(tree: Tree) -> None:
    # /dev/shm is outside every root and shared by every process of the machine (inside the
    # jail: the jail's own).
    # (A script: the line analysis refuses a plain write there before the sandbox is asked.)
    plant = "python3 -c \"open('/dev/shm/planted', 'w').write('x')\"; ls -A /dev/shm"
    verdict = await guard_decides(tree, plant)
    assert verdict.command is not None
    ran = tree.run(f"{verdict.command}; echo after; ls -A /dev/shm")
    assert ran.stdout == "planted\nafter\n", ran  # the command's own, gone with it


@asynccontextmanager
async def _sessions_host(
    tree: Tree,
) -> AsyncIterator[tuple[Host, Callable[[str, str], Awaitable[str]]]]:
    """A host of several sessions (an Agent SDK loop), the harness's TMPDIR the jail's; and
    `wrap(session, command)`: the line the harness would run after write-guard wrapped it."""
    r = tree.root
    env = {"HOME": str(r / "home"), "CLAUDE_PROJECT_DIR": str(tree.ws), "TMPDIR": str(r / "tmp")}
    settings = {"extra_writable_roots": [str(r / "tmp"), "/dev/null"]}
    wrapped: list[str] = []

    async def terminal(event: ToolCall) -> ToolResult:
        wrapped.append(str(event.input["command"]))
        return ToolResult(output="ran")

    async with Host(
        plugins=[write_guard], entry_points=False, store="memory://", env=env,
        options={"write-guard": settings},
    ) as host:  # fmt: skip

        async def wrap(session: str, command: str) -> str:
            await host.dispatch(SessionStart(session_id=session, cwd=str(tree.ws)))
            call = ToolCall(
                session_id=session, tool_use_id="t", tool="Bash", input={"command": command}
            )
            await host.dispatch(call, terminal=terminal)
            return wrapped[-1]

        yield host, wrap


async def test_each_session_has_its_own_private_temp_folder(tree: Tree) -> None:
    tmp = tree.root / "tmp"
    async with _sessions_host(tree) as (_host, wrap):
        first = await wrap(
            "s1", 'echo secret > "$TMPDIR/s1.txt"; echo "$TMPDIR"; stat -c %a "$TMPDIR"'
        )
        second = await wrap(
            "s2",
            f'ls -A "$TMPDIR" {tmp}/..; echo planted > "$TMPDIR/p.txt"; '
            f'cat "$TMPDIR/s1.txt" {tmp}/write-guard-*/*/s1.txt 2>/dev/null',
        )
    one = tree.run(first)
    assert one.rc == 0, one
    assert one.stdout.split()[0] == str(tmp)  # the same TMPDIR as unsandboxed …
    assert one.stdout.split()[1] == "700"  # … but private, and the session's own
    assert not (tmp / "s1.txt").exists()  # not in the host's temp folder
    two = tree.run(second)
    assert "secret" not in two.stdout and "s1.txt" not in two.stdout, two
    assert ".write-guard." in two.stdout  # its own temp folder, its wrapper's file only
    again = tree.run(first.replace("echo secret", "cat $TMPDIR/p.txt; echo secret"))
    assert "planted" not in again.stdout


async def test_the_session_temp_folder_is_removed_at_session_end(tree: Tree) -> None:
    r = tree.root
    async with _sessions_host(tree) as (host, wrap):
        command = await wrap("s", 'echo x > "$TMPDIR/left.txt"')
        assert tree.run(command).rc == 0
        made = [path for path in (r / "tmp").rglob("left.txt")]
        assert len(made) == 1
        assert made[0].parent.stat().st_mode & 0o777 == 0o700
        await host.dispatch(SessionEnd(session_id="s"))
        assert not made[0].parent.exists()


@pytest.mark.parametrize(
    "relative",
    [
        ".git/modules/mod/config",
        ".git/modules/mod/hooks/pre-commit",
        "nested/.git/config",
        "nested/.git/hooks/post-checkout",
        "mod/.git",
        ".git/modules/mod/modules/inner/config",
    ],
)
async def test_file_tools_cannot_write_a_nested_repositorys_config(
    tree: Tree, relative: str
) -> None:
    env = {"HOME": str(tree.root / "home"), "CLAUDE_PROJECT_DIR": str(tree.ws)}
    async with Host(
        plugins=[write_guard], entry_points=False, store="memory://", env=env,
    ) as host:  # fmt: skip
        await host.dispatch(SessionStart(session_id="s", cwd=str(tree.ws)))
        for tool, tool_input in (
            ("Write", {"file_path": str(tree.ws / relative), "content": "x"}),
            ("Edit", {"file_path": str(tree.ws / relative), "old_string": "a", "new_string": "b"}),
        ):
            call = ToolCall(session_id="s", tool_use_id="t", tool=tool, input=tool_input)
            outcome = await host.dispatch(call)
            assert isinstance(outcome.result, ToolResult)
            assert outcome.result.denial is not None, (tool, relative)
