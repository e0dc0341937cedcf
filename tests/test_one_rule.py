"""The rules kept in one place: plugin names, the fake clock, private files, a plugin's folder."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import anyio
import pytest

from framework import FakeClock
from framework.core.engine import plugin_data_dir
from framework.core.files import (
    PrivateFileError,
    ensure_private_dir,
    read_private,
    write_private,
)
from framework.core.names import env_prefix, is_plugin_name, module_name, table_plugin_name
from framework.testing import FakeEngine

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("name", ["a", "my-plugin", "x2-y3"])
def test_kebab_case_names_are_plugin_names(name: str) -> None:
    assert is_plugin_name(name)


@pytest.mark.parametrize("name", ["", "My-plugin", "my_plugin", "-x", "x-", "x--y", "2x", "x.y"])
def test_other_spellings_are_not(name: str) -> None:
    assert not is_plugin_name(name)


def test_a_name_implies_its_prefix_module_and_table() -> None:
    assert env_prefix("my-plugin") == "MY_PLUGIN_"
    assert module_name("my-plugin") == "my_plugin"
    assert table_plugin_name("my_plugin") == table_plugin_name("my-plugin") == "my-plugin"


async def test_an_instant_fake_clock_moves_by_each_sleep_and_follows_forward_only() -> None:
    clock = FakeClock(start_ms=1_000, instant_sleep=True)
    with anyio.fail_after(1):
        await clock.sleep(250)
        await clock.sleep(-5)  # a negative sleep never moves time back
    assert await clock.now() == 1_250
    clock.follow(2_000)
    clock.follow(1_500)
    assert await clock.now() == 2_000


async def test_an_instant_fake_clock_wakes_a_sleeper_waiting_on_it() -> None:
    clock = FakeClock(start_ms=0)
    woke: list[int] = []

    async def waiter() -> None:
        await clock.sleep(100)
        woke.append(clock.ms)

    with anyio.fail_after(1):
        async with anyio.create_task_group() as group:
            group.start_soon(waiter)
            await anyio.sleep(0.01)
            assert woke == []
            clock.instant_sleep = True
            await clock.sleep(100)  # moving the clock by a sleep wakes the other sleeper
    assert woke == [100]


async def test_a_stalled_instant_clock_still_hangs() -> None:
    clock = FakeClock(instant_sleep=True)
    clock.stall()
    with anyio.move_on_after(0.05) as scope:
        await clock.sleep(1)
    assert scope.cancelled_caught


async def test_the_fake_engine_sleeps_at_once_on_the_shared_clock() -> None:
    engine = FakeEngine("my-plugin")
    assert isinstance(engine.clock, FakeClock)
    before = await engine.clock.now()
    with anyio.fail_after(1):
        await engine.clock.sleep(60_000)
    assert await engine.clock.now() == before + 60_000


def test_the_host_and_the_fake_share_the_data_dir_rule(tmp_path: Path) -> None:
    sandbox = tmp_path / "sandbox"
    assert plugin_data_dir("p", sandbox=sandbox, cwd="/w", configured="/abs") == sandbox / "p"
    assert plugin_data_dir("p", sandbox=None, cwd="/w") == Path("/w/.hookchain/p")
    assert plugin_data_dir("p", sandbox=None, cwd="/w", configured="logs") == Path("/w/logs")
    assert plugin_data_dir("p", sandbox=None, cwd="/w", configured="/abs") == Path("/abs")
    fake = FakeEngine("p", cwd="/w", sandbox=sandbox)
    assert fake.data_dir("/abs") == sandbox / "p"
    assert FakeEngine("p", cwd="/w").data_dir("logs") == Path("/w/logs")


def test_a_private_dir_is_created_closed_and_an_open_one_refused(tmp_path: Path) -> None:
    made = ensure_private_dir(tmp_path / "a" / "b")
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    with pytest.raises(PrivateFileError, match="open to other users"):
        ensure_private_dir(shared)
    link = tmp_path / "link"
    link.symlink_to(made)
    with pytest.raises(ValueError, match="not a directory owned by this user"):
        ensure_private_dir(link, ValueError)


def test_private_files_are_written_whole_with_their_mode(tmp_path: Path) -> None:
    target = tmp_path / "token"
    assert write_private(target, "first\n")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert read_private(target) == "first\n"
    assert write_private(target, "second\n")
    assert read_private(target) == "second\n"
    assert sorted(os.listdir(tmp_path)) == ["token"]  # no temporary file left behind


def test_an_exclusive_write_keeps_the_file_that_is_there(tmp_path: Path) -> None:
    target = tmp_path / "token"
    assert write_private(target, "mine\n", exclusive=True)
    assert not write_private(target, "theirs\n", exclusive=True)
    assert read_private(target) == "mine\n"
    assert sorted(os.listdir(tmp_path)) == ["token"]


def test_a_file_open_to_others_is_not_read(tmp_path: Path) -> None:
    target = tmp_path / "token"
    target.write_text("x", encoding="utf-8")
    target.chmod(0o644)
    with pytest.raises(PrivateFileError, match="chmod 600"):
        read_private(target)


def test_once_says_each_site_the_first_time_only() -> None:
    from framework.core.logging import Once

    once = Once()
    assert [once.first(k) for k in ("a", ("p", "tool.call"), "a", ("p", "tool.call"), "b")] == [
        True,
        True,
        False,
        False,
        True,
    ]


def test_the_framework_names_no_shipped_plugin() -> None:
    # The framework knows plugins only through entry points; one file is still being changed.
    root = Path(__file__).resolve().parents[1]
    shipped = [
        p.name for p in sorted((root / "plugins").iterdir()) if (p / "pyproject.toml").exists()
    ]
    spellings = {form for name in shipped for form in (name, name.replace("_", "-"))}
    allowed = {root / "framework" / "replay" / "cli.py"}  # FIRST_PARTY_PLUGINS, being removed
    found = [
        f"{path.relative_to(root)}: {word}"
        for path in sorted((root / "framework").rglob("*"))
        if path.is_file() and path.suffix in {".py", ".tmpl"} and path not in allowed
        for word in spellings
        if word in path.read_text(encoding="utf-8")
    ]
    assert shipped, "no plugins found beside the framework"
    assert found == []
