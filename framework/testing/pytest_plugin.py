"""hookchain's pytest plugin (entry point `pytest11`): fixtures and `--hookchain-conformance`."""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

import pytest
import structlog

from framework import FakeClock, Host
from framework.testing._checks import CHECKS
from framework.testing._fakes import FakeEngine
from framework.testing._host_kit import make_host, suite_report
from framework.testing._loader import installed_plugins
from framework.testing._suite import PluginReport

__all__ = ["ConformanceItem"]

_REPORTS = pytest.StashKey[dict[str, PluginReport]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hookchain")
    group.addoption(
        "--hookchain-conformance",
        action="store_true",
        default=False,
        help="Run the hookchain conformance suite for the plugins named by the "
        "`hookchain_plugins` ini value (default: every installed plugin).",
    )
    parser.addini(
        "hookchain_plugins",
        type="linelist",
        default=[],
        help="Modules of the hookchain plugins that --hookchain-conformance checks.",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_REPORTS] = {}


class ConformanceItem(pytest.Item):
    """One conformance check of one plugin."""

    def __init__(self, *, plugin: Callable[[], Any], label: str, check: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._plugin = plugin
        self._label = label
        self._check = check

    def runtest(self) -> None:
        reports = self.config.stash[_REPORTS]
        if self._label not in reports:
            reports[self._label] = suite_report(self._plugin())
        result = reports[self._label].checks[self._check]
        if result.status == "fail":
            raise AssertionError(f"{self._check} ({CHECKS[self._check]}): {result.reason}")

    def reportinfo(self) -> tuple[str, int | None, str]:
        return (f"hookchain:{self._label}", None, f"{self._label}: {self._check}")


def _targets(config: pytest.Config) -> list[tuple[str, Callable[[], Any]]]:
    named = [str(value) for value in config.getini("hookchain_plugins")]
    if named:
        return [(name, functools.partial(importlib.import_module, name)) for name in named]
    return [(plugin.name, plugin.load) for plugin in installed_plugins()]


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    if not config.getoption("hookchain_conformance"):
        return
    for label, load in _targets(config):
        for check in CHECKS:
            items.append(
                ConformanceItem.from_parent(
                    session,
                    name=f"hookchain[{label}][{check}]",
                    plugin=load,
                    label=label,
                    check=check,
                )
            )


@pytest.fixture
def hookchain_clock() -> FakeClock:
    """A clock that moves only when told: `advance(ms)`, `set(ms)`, `stall()`."""
    return FakeClock()


@pytest.fixture
def hookchain_host(hookchain_clock: FakeClock, tmp_path: Path) -> Callable[..., Host]:
    """`hookchain_host(plugin, ...)`: an unopened host on a memory store and `hookchain_clock`,
    sandboxed in the test's own temporary folder (`engine.data_dir()` is under it).

    Use it as `async with hookchain_host(my_plugin) as host:`.
    """

    def build(*plugins: Any, **kwargs: Any) -> Host:
        kwargs.setdefault("clock", hookchain_clock)
        kwargs.setdefault("sandbox", tmp_path / "hookchain-sandbox")
        return make_host(*plugins, **kwargs)

    return build


@pytest.fixture
def fake_engine() -> Callable[..., FakeEngine]:
    """`fake_engine("my-plugin")`: a recording engine port to call one handler directly."""
    return FakeEngine


@pytest.fixture
def hookchain_logs() -> Iterator[list[MutableMapping[str, Any]]]:
    """Every log event while the test runs, at every level, as dicts (`event`, `log_level`,
    `plugin`, ...): a plugin's `engine.ui.log(text, level=...)` arrives as `event=text`."""
    saved = structlog.get_config()
    capture = structlog.testing.LogCapture()
    structlog.configure(
        processors=[capture],
        wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG),
        cache_logger_on_first_use=False,
    )
    try:
        yield capture.entries
    finally:
        structlog.configure(**saved)
