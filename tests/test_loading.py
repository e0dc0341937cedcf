"""Plugin loading: each plugin on its own, clear reports, options, allow and deny lists."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest
from hostkit import Terminal, bash, make_plugin
from pydantic_settings import BaseSettings

from framework import Host, HostSettings, hookimpl

pytestmark = pytest.mark.anyio


def passthrough(on: Any) -> None:
    async def handler(engine: Any, event: Any, call_next: Any) -> Any:
        return await call_next(event)

    on("tool.call", handler)


def host_with(*plugins: Any, settings: HostSettings | None = None, **kwargs: Any) -> Host:
    return Host(
        plugins=list(plugins),
        entry_points=False,
        settings=settings or HostSettings(store="memory://"),
        config=kwargs.pop("config", {}),
        **kwargs,
    )


def test_a_contract_mismatch_is_refused_with_both_versions_and_the_others_load() -> None:
    future = make_plugin("future", passthrough, contract=">=2,<3")
    good = make_plugin("good", passthrough)
    records = {record.name: record for record in host_with(future, good).load()}
    assert records["good"].status == "loaded"
    assert records["future"].status == "incompatible"
    error = records["future"].error or ""
    assert ">=2,<3" in error and "1.0" in error and "future" in error
    assert records["future"].registrations == []


def test_a_register_that_raises_is_never_half_loaded() -> None:
    def half(on: Any) -> None:
        passthrough(on)
        raise RuntimeError("second step broke")

    host = host_with(make_plugin("half", half), make_plugin("good", passthrough))
    records = {record.name: record for record in host.load()}
    assert records["half"].status == "failed"
    assert "RuntimeError" in (records["half"].error or "")
    assert [reg.plugin for reg in host.chain("tool.call")] == ["good"]


def test_a_module_without_a_plugin_declaration_is_reported() -> None:
    module = types.ModuleType("bare")

    @hookimpl
    def register(on: Any, options: Any) -> None:
        passthrough(on)

    module.register = register  # type: ignore[attr-defined]
    [record] = host_with(module).load()
    assert record.status == "failed"
    assert "PluginInfo" in (record.error or "")


def test_a_bad_name_and_a_bad_range_are_reported() -> None:
    records = host_with(
        make_plugin("Bad_Name", passthrough), make_plugin("fine", passthrough, contract="one")
    ).load()
    assert [record.status for record in records] == ["failed", "failed"]
    assert "kebab-case" in (records[0].error or "")
    assert "version specifier" in (records[1].error or "")


class Limits(BaseSettings):
    limit: int = 3
    mode: str = "warn"


def test_options_come_from_the_plugin_prefix_then_the_config_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[Any] = []

    def register(on: Any, options: Any) -> None:
        seen.append(options)

    monkeypatch.setenv("RATE_LIMITER_LIMIT", "7")
    plugin = make_plugin("rate-limiter", register, options=Limits)
    host_with(plugin, config={"rate-limiter": {"mode": "block"}}).load()
    assert seen[0].limit == 7
    assert seen[0].mode == "block"


def test_a_bad_option_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    def register(on: Any, options: Any) -> None:
        passthrough(on)

    monkeypatch.setenv("RATE_LIMITER_LIMIT", "many")
    [record] = host_with(make_plugin("rate-limiter", register, options=Limits)).load()
    assert record.status == "failed"
    assert "RATE_LIMITER_LIMIT" in (record.error or "")


def test_allow_and_deny_lists() -> None:
    plugins = [make_plugin(name, passthrough) for name in ("a", "b", "c")]
    only = host_with(*plugins, settings=HostSettings(store="memory://", plugins=["a", "c"]))
    assert [(r.name, r.status) for r in only.load()] == [
        ("a", "loaded"),
        ("b", "disabled"),
        ("c", "loaded"),
    ]
    plugins = [make_plugin(name, passthrough) for name in ("a", "b", "c")]
    deny = host_with(*plugins, settings=HostSettings(store="memory://", disable_plugins=["b"]))
    assert [r.status for r in deny.load()] == ["loaded", "disabled", "loaded"]


def test_settings_split_comma_lists_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOOKCHAIN_PLUGINS", "loop-breaker, write-guard")
    monkeypatch.setenv("HOOKCHAIN_LOG_LEVEL", "DEBUG")
    settings = HostSettings()
    assert settings.plugins == ["loop-breaker", "write-guard"]
    assert settings.log_level == "debug"


def test_a_bad_setting_names_the_variable_and_accepted_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from framework import SettingsError, load_settings

    monkeypatch.setenv("HOOKCHAIN_LOG_LEVEL", "loud")
    with pytest.raises(SettingsError) as caught:
        load_settings({})
    assert "HOOKCHAIN_LOG_LEVEL" in str(caught.value)
    assert "debug" in str(caught.value)


def test_each_host_owns_its_plugin_manager() -> None:
    first = host_with(make_plugin("a", passthrough))
    second = host_with(make_plugin("a", passthrough))
    first.load()
    second.load()
    assert first.pm is not second.pm
    assert len(first.pm.get_plugins()) == 1


async def test_entry_point_plugins_load_in_isolation(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """A broken entry point is reported by name; the good one still loads."""
    from framework.core import loading as _loading

    good = make_plugin("good", passthrough)
    sys.modules["hookchain_test_good"] = good

    def broken_load() -> Any:
        raise ImportError("No module named 'missing_dependency'")

    candidates = [
        _loading.Candidate("broken", "broken_mod", broken_load, "hookchain-broken", "0.3.1"),
        _loading.Candidate("good", "hookchain_test_good", lambda: good, "hookchain-good", "1.0"),
    ]
    monkeypatch.setattr(_loading, "entry_point_candidates", lambda: candidates)
    async with Host(settings=HostSettings(store="memory://"), config={}) as host:
        records = {record.name: record for record in host.plugins}
        outcome = await host.dispatch(bash(), Terminal())
    assert records["good"].status == "loaded"
    assert records["broken"].status == "failed"
    assert "hookchain-broken 0.3.1" in (records["broken"].error or "")
    assert "missing_dependency" in (records["broken"].error or "")
    assert outcome.result.output == "done"


def test_a_plugin_table_may_use_underscores_and_explicit_options_win() -> None:
    seen: list[Any] = []

    def register(on: Any, options: Any) -> None:
        seen.append(options)

    plugin = make_plugin("rate-limiter", register, options=Limits)
    config = {"rate_limiter": {"mode": "block", "limit": 5}}
    host_with(plugin, config=config, options={"rate-limiter": {"limit": 9}}).load()
    assert (seen[0].mode, seen[0].limit) == ("block", 9)
