"""Packaging proof: each plugin installs alone with the host from wheels, is listed and conforms.

Slow (it builds wheels and fresh virtual environments) but run in CI. One wheelhouse is built per
run: the host's and every plugin's wheels plus their dependencies; each install after that is
`--no-index`, so what is proven is exactly what `pip install hookchain-<plugin>` gets.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
PLUGIN_DIRS = sorted(path.parent for path in (ROOT / "plugins").glob("*/pyproject.toml"))


def _run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=240, check=False
    )
    assert done.returncode == 0, f"{' '.join(command)}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _pip(*args: str) -> list[str]:
    return [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]


def _project(folder: Path) -> dict[str, object]:
    with (folder / "pyproject.toml").open("rb") as handle:
        project: dict[str, object] = tomllib.load(handle)["project"]
    return project


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    house = tmp_path_factory.mktemp("wheelhouse")
    sources = [str(ROOT), *map(str, PLUGIN_DIRS)]
    _run(_pip("wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(house), *sources), ROOT)
    built = sorted(str(wheel) for wheel in house.glob("*.whl"))
    # Dependencies (and the build backend, for installing a scaffolded plugin) from the registry.
    _run(
        _pip(
            "wheel",
            "-q",
            "-w",
            str(house),
            "--find-links",
            str(house),
            *built,
            "pytest",
            "hatchling",
        ),
        ROOT,
    )
    return house


def _clean_env(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("HOOKCHAIN_")}
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"), PYTHONNOUSERSITE="1")
    env.pop("PYTHONPATH", None)
    return env


def _fresh_venv(folder: Path, wheelhouse: Path, *requirements: str) -> Path:
    _run([sys.executable, "-m", "venv", "--without-pip", str(folder)], folder.parent)
    python = folder / "bin" / "python"
    install = ("install", "-q", "--no-index", "--find-links", str(wheelhouse), *requirements)
    _run(_pip("--python", str(python), *install), folder.parent)
    return folder / "bin"


@pytest.mark.parametrize("plugin_dir", PLUGIN_DIRS, ids=[path.name for path in PLUGIN_DIRS])
def test_plugin_installs_alone_is_listed_and_passes_check(
    plugin_dir: Path, wheelhouse: Path, tmp_path: Path
) -> None:
    distribution = str(_project(plugin_dir)["name"])
    env = _clean_env(tmp_path)
    bin_dir = _fresh_venv(tmp_path / "venv", wheelhouse, distribution)

    listed = json.loads(_run([str(bin_dir / "hookchain"), "plugins", "--json"], tmp_path, env))
    mine = [p for p in listed["plugins"] if p["distribution"] == distribution]
    assert [p["status"] for p in mine] == ["loaded"], listed
    assert len(listed["plugins"]) == 1  # alone: no other plugin came along

    checked = subprocess.run(
        [str(bin_dir / "hookchain"), "check", "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    report = json.loads(checked.stdout)
    failures = {
        check: verdict
        for plugin in report["plugins"]
        for check, verdict in plugin["checks"].items()
        if verdict.startswith("fail")
    }
    assert failures == {}, f"{distribution} fails conformance: {failures}"
    assert checked.returncode == 0
    assert [p["distribution"] for p in report["plugins"]] == [distribution]


def _has_pytest11_entry_point(wheelhouse: Path) -> bool:
    wheel = next(wheelhouse.glob("hookchain-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt"))
        return "[pytest11]" in archive.read(name).decode()


def test_scaffolded_plugin_is_green_out_of_the_box(wheelhouse: Path, tmp_path: Path) -> None:
    env = _clean_env(tmp_path)
    bin_dir = _fresh_venv(tmp_path / "venv", wheelhouse, "hookchain")
    _run(
        [str(bin_dir / "hookchain"), "new-plugin", "demo-notes", "--dir", str(tmp_path)],
        tmp_path,
        env,
    )
    project = tmp_path / "demo-notes"
    install = ("install", "-q", "--no-index", "--find-links", str(wheelhouse), f"{project}[test]")
    _run(_pip("--python", str(bin_dir / "python"), *install), tmp_path)

    report = json.loads(_run([str(bin_dir / "hookchain"), "check", "--json"], tmp_path, env))
    assert report["ok"] is True, report
    assert [p["name"] for p in report["plugins"]] == ["demo-notes"]

    assert _has_pytest11_entry_point(wheelhouse)
    pytest_command = [str(bin_dir / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    out = _run([*pytest_command, "tests"], project, env)
    assert " passed" in out
    assert "failed" not in out
