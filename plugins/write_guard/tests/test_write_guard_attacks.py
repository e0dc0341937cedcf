"""The attack suite, run for real: each attack is first proven harmful by running it unguarded
inside the jail (see `wg_jail`), then run the way write-guard makes it run (denied: not run;
allowed: the command that reached the harness, sandbox and all) and must do no harm. Each
control must run exactly as it does unguarded: same exit status, output and files."""

from __future__ import annotations

import pytest
from wg_attack_table import ATTACKS, CONTROLS, Attack, Control
from wg_jail import BWRAP, Tree, attack_does_no_harm, guard_decides

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(BWRAP is None, reason="the attack suite runs commands under bubblewrap"),
]


def test_the_suite_is_as_large_as_promised() -> None:
    classes = {attack.cls for attack in ATTACKS}
    assert len(ATTACKS) >= 300 and len(CONTROLS) >= 80, (len(ATTACKS), len(CONTROLS))
    assert len({attack.id for attack in ATTACKS}) == len(ATTACKS)
    assert {"generated", "control-plane", "git-lost-work", "protected"} <= classes


# Without a sandbox the line analysis refuses what it cannot read fully: these controls run
# code it cannot see (inline or a script, a build tool, a database shell, `trap`, `xargs`) or
# move the directory in ways it does not follow (`popd`, `env -C`), and are refused, with a
# reason that says what to do instead.
FALLBACK_REFUSED = {
    "python-inside", "make-inside", "script-inside", "sort-inside", "sqlite-inside",
    "xargs-inside", "pushd-inside", "env-C-inside", "trap-inside", "node-inside", "dev-shm",
}  # fmt: skip
MODES = {"sandbox": {}, "no-sandbox": {"sandbox": "off"}}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("attack", ATTACKS, ids=[attack.id for attack in ATTACKS])
async def test_attack_does_no_harm(tree: Tree, attack: Attack, mode: str) -> None:
    await attack_does_no_harm(tree, attack, MODES[mode])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("control", CONTROLS, ids=[control.id for control in CONTROLS])
async def test_control_runs_as_unguarded(tree: Tree, control: Control, mode: str) -> None:
    command = tree.fill(control.command)
    stdin = "some input\nline two\n"
    plain = tree.run(command, stdin=stdin)
    plain_files = tree.state()
    tree.reset()
    verdict = await guard_decides(tree, command, **MODES[mode])
    if mode == "no-sandbox" and control.id in FALLBACK_REFUSED:
        assert verdict.denied is not None and "(no-sandbox)" in verdict.denied
        assert "Instead:" in verdict.denied
        return
    assert verdict.denied is None, verdict.denied
    assert verdict.command is not None
    guarded = tree.run(verdict.command, stdin=stdin)
    assert (guarded.rc, guarded.stdout) == (plain.rc, plain.stdout), (plain, guarded)
    assert tree.state() == plain_files
    if control.creates is not None:
        path, content = control.creates
        assert (tree.ws / path).read_text() == tree.fill(content)
