"""`hookchain plugins install / uninstall` into hookchain's own environment, and local
single-file plugins (HOOKCHAIN_PLUGINS_DIR, --plugins-dir)."""

from __future__ import annotations

import base64
import hashlib
import json
import site
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest
from cli_kit import environment, hookchain

HELLO = textwrap.dedent(
    """
    from framework import PluginInfo, ToolResult, hookimpl

    plugin = PluginInfo(name="hello-local", contract=">=1,<2", description="says hello")


    @hookimpl
    def register(on, options):
        async def hello(engine, event, call_next):
            result = await call_next(event)
            return result.with_note("hello", by="hello-local")

        on("tool.call", hello)
    """
)
CALL = '{"tool_use_id": "t1", "tool": "Bash", "input": {"command": "ls"}}'


def _plugins(done: subprocess.CompletedProcess[str]) -> dict[str, dict[str, object]]:
    assert done.returncode == 0, done.stderr
    return {entry["name"]: entry for entry in json.loads(done.stdout)["plugins"]}


@pytest.fixture
def local(tmp_path: Path) -> Path:
    folder = tmp_path / "my-plugins"
    folder.mkdir()
    (folder / "hello_local.py").write_text(HELLO, encoding="utf-8")
    (folder / "_helper.py").write_text("raise RuntimeError('not a plugin')\n", encoding="utf-8")
    return folder


def test_a_plugins_dir_adds_its_single_file_plugins(tmp_path: Path, local: Path) -> None:
    listed = _plugins(hookchain(["--plugins-dir", str(local), "plugins", "--json"], tmp_path))
    assert listed["hello-local"]["status"] == "loaded"
    assert listed["hello-local"]["description"] == "says hello"
    assert "-helper" not in listed and "_helper" not in listed
    by_env = hookchain(
        ["try", "tool.call", "--plugins", "hello-local", "--payload", CALL],
        tmp_path,
        {"HOOKCHAIN_PLUGINS_DIR": str(local)},
    )
    assert by_env.returncode == 0, by_env.stderr
    assert json.loads(by_env.stdout)["result"]["notes"] == [{"text": "hello", "by": "hello-local"}]


def test_without_the_folder_the_plugin_is_unknown(tmp_path: Path) -> None:
    done = hookchain(["try", "tool.call", "--plugins", "hello-local", "--payload", CALL], tmp_path)
    assert done.returncode == 2
    assert "no installed plugin named 'hello-local'" in done.stderr


def test_a_broken_local_plugin_is_shown_not_skipped(tmp_path: Path, local: Path) -> None:
    (local / "broken_local.py").write_text("import not_a_module_anywhere\n", encoding="utf-8")
    listed = _plugins(hookchain(["--plugins-dir", str(local), "plugins", "--json"], tmp_path))
    assert listed["broken-local"]["status"] == "failed"
    assert "not_a_module_anywhere" in str(listed["broken-local"]["error"])


# -- install / uninstall in a throwaway virtual environment -------------------------------------


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(folder: Path) -> Path:
    """A real wheel of a plugin distribution `hookchain-hello-wheel` (no build backend needed:
    the index is out of reach, so nothing may be fetched)."""
    files = {
        "hello_wheel.py": HELLO.replace("hello-local", "hello-wheel").encode(),
        "hookchain_hello_wheel-1.0.dist-info/METADATA": (
            b"Metadata-Version: 2.1\nName: hookchain-hello-wheel\nVersion: 1.0\n"
        ),
        "hookchain_hello_wheel-1.0.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
        "hookchain_hello_wheel-1.0.dist-info/entry_points.txt": (
            b"[hookchain.plugins]\nhello-wheel = hello_wheel\n"
        ),
    }
    record = "hookchain_hello_wheel-1.0.dist-info/RECORD"
    lines = [_record_line(name, data) for name, data in files.items()] + [f"{record},,"]
    wheel = folder / "hookchain_hello_wheel-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr(record, "\n".join(lines) + "\n")
    return wheel


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    """A fresh venv with pip, seeing this checkout's hookchain and its dependencies."""
    target = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", str(target)], check=True, timeout=180, capture_output=True
    )
    python = target / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    ours = [sysconfig.get_paths()["purelib"], *site.getsitepackages()]
    # `import site; site.addsitedir(...)` in a .pth runs the editable installs' own .pth files.
    lines = [f"import site; site.addsitedir({path!r})" for path in dict.fromkeys(ours)]
    (Path(purelib) / "hookchain_checkout.pth").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def in_venv(venv: Path, args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    env = environment(
        home,
        {
            "PIP_NO_INDEX": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "HOOKCHAIN_PLUGINS": "hello-wheel",
            "VIRTUAL_ENV": str(venv),
        },
    )
    env.pop("PYTHONPATH", None)
    (home / "hookchain.toml").touch()
    return subprocess.run(
        [str(venv / "bin" / "python"), "-c", "from framework.cli.app import main; main()", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=home,
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_plugins_install_and_uninstall_use_hookchains_own_environment(
    tmp_path: Path, venv: Path
) -> None:
    wheel = build_wheel(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    before = in_venv(venv, ["plugins", "--json"], home)
    assert before.returncode == 2 and "no installed plugin named 'hello-wheel'" in before.stderr
    installed = in_venv(venv, ["plugins", "install", str(wheel)], home)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert f"{venv}/bin/python -m pip install" in installed.stderr
    listed = _plugins(in_venv(venv, ["plugins", "--json"], home))
    assert listed["hello-wheel"]["status"] == "loaded"
    assert listed["hello-wheel"]["distribution"] == "hookchain-hello-wheel"
    # Into that environment only: the interpreter running these tests does not see it.
    assert "hello-wheel" not in hookchain(["plugins", "--json"], home).stdout
    removed = in_venv(venv, ["plugins", "uninstall", "hello-wheel"], home)  # the plugin's name
    assert removed.returncode == 0, removed.stdout + removed.stderr
    after = in_venv(venv, ["plugins", "--json"], home)
    assert after.returncode == 2 and "no installed plugin named 'hello-wheel'" in after.stderr


def test_uninstall_refuses_a_name_that_is_no_plugin(tmp_path: Path) -> None:
    done = hookchain(["plugins", "uninstall", "requests"], tmp_path)
    assert done.returncode == 2
    assert "no installed plugin or plugin distribution named 'requests'" in done.stderr
    assert "hookchain-write-guard" in done.stderr


def test_the_host_records_an_unknown_plugin_name_as_a_load_failure(tmp_path: Path) -> None:
    # What the warm host's status and hook stderr read: `load_failures(host.plugins)`.
    import anyio

    from framework import Host
    from framework.core.loading import load_failures
    from framework.core.settings import HostSettings

    async def run() -> list[tuple[str, str | None]]:
        settings = HostSettings(plugins=["write-gaurd"])
        async with Host(settings=settings, store="memory://", config={}) as host:
            return [(record.name, record.error) for record in load_failures(host.plugins)]

    [(name, error)] = anyio.run(run)
    assert name == "write-gaurd"
    assert error is not None and "did you mean 'write-guard'" in error


def test_the_plugins_dir_is_one_of_the_hosts_own_files(tmp_path: Path, local: Path) -> None:
    # A guard keeps the model from writing there: a file in it would run inside the host.
    from framework import Host
    from framework.core.settings import HostSettings

    host = Host(settings=HostSettings(plugins_dir=local), store="memory://", config={})
    assert str(local) in host.owned_files()
    assert str(local) not in Host(store="memory://", config={}).owned_files()


def test_write_guard_denies_writing_a_plugin_into_the_plugins_dir(
    tmp_path: Path, local: Path
) -> None:
    # Only a dispatched event: nothing is written anywhere.
    write = json.dumps(
        {
            "tool_use_id": "t",
            "tool": "Write",
            "input": {"file_path": str(local / "x.py"), "content": "x"},
        }
    )
    args = ["try", "tool.call", "--plugins", "write-guard", "--payload", write]
    guarded = hookchain(args, tmp_path, {"HOOKCHAIN_PLUGINS_DIR": str(local)})
    assert guarded.returncode == 0, guarded.stderr
    assert json.loads(guarded.stdout)["result"]["denial"]["by"] == "write-guard"
    plain = hookchain(args, tmp_path)  # the same folder, not a plugins dir: in the workspace
    assert json.loads(plain.stdout)["result"]["denial"] is None
