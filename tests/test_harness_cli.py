"""`hookchain check` and `hookchain new-plugin` through their command line."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from framework.cli import check as _cli_check
from framework.cli.common import HookchainGroup
from framework.testing import _loader
from framework.testing._checks import CHECKS
from framework.testing._loader import InstalledPlugin

# tests/conftest.py puts this folder on sys.path, so broken_plugins.* imports by name.
WELL = InstalledPlugin("well-behaved", "broken_plugins.well_behaved", "hookchain-well", "1.2")
TWICE = InstalledPlugin("calls-next-twice", "broken_plugins.calls_next_twice", None, None)
MISSING = InstalledPlugin("gone", "broken_plugins.not_there", "hookchain-gone", "0.1")
WRONG = InstalledPlugin("wrong-result-type", "broken_plugins.wrong_result_type", None, None)


@pytest.fixture
def app() -> typer.Typer:
    application = typer.Typer(cls=HookchainGroup)
    _cli_check.register_cli(application)
    return application


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> list[InstalledPlugin]:
    plugins = [WELL, TWICE, MISSING, WRONG]

    def fake(names: list[str] = []) -> list[InstalledPlugin]:  # noqa: B006
        return [p for p in plugins if not names or p.name in names or p.distribution in names]

    monkeypatch.setattr(_loader, "installed_plugins", fake)
    return plugins


def test_check_json_reports_each_plugin_and_fails_overall(
    app: typer.Typer, installed: list[InstalledPlugin]
) -> None:
    result = CliRunner().invoke(
        app, ["check", "--json", "well-behaved", "calls-next-twice", "gone"]
    )
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert report["ok"] is False
    by_name = {plugin["name"]: plugin for plugin in report["plugins"]}
    assert set(by_name) == {"well-behaved", "calls-next-twice", "gone"}
    well = by_name["well-behaved"]
    assert well["ok"] is True
    assert (well["distribution"], well["version"], well["contract_versions"]) == (
        "hookchain-well",
        "1.2",
        ["1.0", "1.1"],
    )
    assert set(well["checks"]) == set(CHECKS)
    twice = by_name["calls-next-twice"]["checks"]
    assert twice["call-next-once"].startswith("fail: ")
    assert [check for check, verdict in twice.items() if verdict.startswith("fail")] == [
        "call-next-once"
    ]
    gone = by_name["gone"]["checks"]
    assert all(verdict.startswith("fail: cannot import") for verdict in gone.values())


def test_check_named_plugin_passes_with_exit_zero_and_a_matrix(
    app: typer.Typer, installed: list[InstalledPlugin]
) -> None:
    result = CliRunner().invoke(app, ["check", "hookchain-well", "--contract", "1.0"])
    assert result.exit_code == 0, result.output
    assert "well-behaved" in result.output
    assert "all plugins pass" in result.output


def test_check_refuses_unknown_plugin_and_unknown_contract(
    app: typer.Typer, installed: list[InstalledPlugin]
) -> None:
    unknown = CliRunner().invoke(app, ["check", "nope"])
    assert unknown.exit_code == 2
    assert "no installed plugin named nope" in unknown.output
    version = CliRunner().invoke(app, ["check", "--contract", "9.9"])
    assert version.exit_code == 2
    assert "unknown contract version '9.9'" in version.output


def test_new_plugin_scaffolds_a_package(app: typer.Typer, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["new-plugin", "tool-reminder", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    root = tmp_path / "tool-reminder"
    pyproject = (root / "pyproject.toml").read_text(encoding="utf-8")
    assert 'name = "hookchain-tool-reminder"' in pyproject
    assert 'tool-reminder = "tool_reminder"' in pyproject
    init = (root / "tool_reminder" / "__init__.py").read_text(encoding="utf-8")
    assert 'contract=">=1,<2"' in init
    assert (root / "tests" / "test_tool_reminder_conformance.py").exists()
    assert "$" not in "".join(p.read_text(encoding="utf-8") for p in root.rglob("*.py"))


def test_new_plugin_refuses_bad_name_and_existing_folder(app: typer.Typer, tmp_path: Path) -> None:
    bad = CliRunner().invoke(app, ["new-plugin", "Tool_Reminder", "--dir", str(tmp_path)])
    assert bad.exit_code == 2
    assert "kebab-case" in bad.output
    (tmp_path / "taken").mkdir()
    taken = CliRunner().invoke(app, ["new-plugin", "taken", "--dir", str(tmp_path)])
    assert taken.exit_code == 2
    assert "already exists" in taken.output


def test_check_keeps_the_failures_it_provokes_out_of_the_log(
    app: typer.Typer, installed: list[InstalledPlugin]
) -> None:
    # The host logs a handler's wrong result as a warning; the matrix already reports it.
    result = CliRunner().invoke(app, ["check", "wrong-result-type", "--json"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["plugins"][0]["checks"]["valid-result"].startswith("fail: ")
    assert result.stderr == ""


def test_check_runs_every_admitted_contract_version_and_contract_picks_one(
    app: typer.Typer, installed: list[InstalledPlugin], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A host that knows contract 1.1 and ships its vectors (here: 1.0's, relabelled).
    from framework.testing import _suite, _vectors

    current = _vectors.load_vectors("1.0")
    relabelled = tuple(dataclasses.replace(vector, contract="1.1") for vector in current)
    versions = ("1.0", "1.1")
    monkeypatch.setattr(_suite, "KNOWN_CONTRACT_VERSIONS", versions)
    monkeypatch.setattr(_cli_check, "KNOWN_CONTRACT_VERSIONS", versions)
    monkeypatch.setattr(_suite, "vector_versions", lambda: versions)
    monkeypatch.setattr(_vectors, "vector_versions", lambda: versions)
    monkeypatch.setattr(_suite, "load_vectors", {"1.0": current, "1.1": relabelled}.__getitem__)

    both = json.loads(CliRunner().invoke(app, ["check", "--json", "calls-next-twice"]).stdout)
    [twice] = both["plugins"]
    assert twice["contract_versions"] == ["1.0", "1.1"]
    assert twice["checks"]["call-next-once"].startswith("fail: [1.0] ")

    result = CliRunner().invoke(app, ["check", "--json", "--contract", "1.1", "well-behaved"])
    assert result.exit_code == 0, result.output
    [well] = json.loads(result.stdout)["plugins"]
    assert well["contract_versions"] == ["1.1"]
    assert set(well["checks"].values()) == {"pass"}
