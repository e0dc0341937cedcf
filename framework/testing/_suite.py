"""The conformance suite for one plugin: load it, run every check, report per check."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args, get_origin

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version
from pydantic import BaseModel, ValidationError
from pydantic_settings import BaseSettings

from framework import KNOWN_CONTRACT_VERSIONS
from framework.core.names import env_prefix
from framework.testing._audit import watching
from framework.testing._budget import check_budget
from framework.testing._checks import CHECKS, CheckResult, HandlerChecks
from framework.testing._loader import PluginUnderTest, load
from framework.testing._vectors import Vector, load_vectors, vector_versions

__all__ = ["PluginReport", "admitted_versions", "run_suite"]

# A value no field of a non-text type accepts: not a number, a bool, a literal or valid JSON.
_BAD_ENV_VALUE = "not-a-valid-value-{["
_PATH_TYPES = frozenset({"Path", "PurePath", "PosixPath"})


@dataclass(slots=True)
class PluginReport:
    """The verdict of every check for one plugin across the contract versions it was run for."""

    name: str
    distribution: str | None
    version: str | None
    contract_versions: list[str]
    checks: dict[str, CheckResult] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(result.status != "fail" for result in self.checks.values())

    def failures(self) -> dict[str, str]:
        return {name: r.reason for name, r in self.checks.items() if r.status == "fail"}

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "contract_versions": self.contract_versions,
            "checks": {name: result.render() for name, result in self.checks.items()},
            "ok": self.ok,
        }


def admitted_versions(contract: str | None, only: str | None = None) -> list[str]:
    """Known contract versions with vectors that the plugin's range admits (and `only`, if set)."""
    try:
        supported = SpecifierSet(contract or "")
    except InvalidSpecifier:
        return []
    known = [v for v in KNOWN_CONTRACT_VERSIONS if v in vector_versions()]
    return [v for v in known if Version(v) in supported and (only is None or v == only)]


async def run_suite(
    obj: Any,
    *,
    contract: str | None = None,
    distribution: str | None = None,
    version: str | None = None,
) -> PluginReport:
    """Run every check for the plugin module `obj` on each contract version it admits."""
    first = await load(obj, distribution=distribution, version=version)
    info = first.info
    report = PluginReport(
        name=first.name,
        distribution=first.distribution,
        version=first.version,
        contract_versions=admitted_versions(getattr(info, "contract", None), contract),
        checks={name: CheckResult() for name in CHECKS},
    )
    if not first.loaded:
        for result in report.checks.values():
            result.failed(f"not loaded ({first.status}): {first.error}")
        return report
    if not report.contract_versions:
        wanted = contract or ", ".join(KNOWN_CONTRACT_VERSIONS)
        for result in report.checks.values():
            result.failed(f"its contract range {info.contract!r} admits none of {wanted}")
        return report
    second = await load(obj, distribution=distribution, version=version)
    _check_deterministic(first, second, report.checks["deterministic"])
    _check_options(first, report.checks["options"])
    declared = declared_access(info)
    # Plugin code really runs: whatever it writes under the session's folder lands in a sandbox.
    with tempfile.TemporaryDirectory(prefix="hookchain-check-") as sandbox:
        for contract_version in report.contract_versions:
            await _run_handlers(obj, first, report, contract_version, declared, sandbox)
    return report


async def _run_handlers(
    obj: Any,
    plugin: PluginUnderTest,
    report: PluginReport,
    contract_version: str,
    declared: frozenset[str],
    sandbox: str,
) -> None:
    """Checks 1–7 and 10 for one contract version, merged into the report."""
    runner = HandlerChecks(plugin.name, declared_access=declared, cwd=sandbox)
    vectors = tuple(_in_sandbox(vector, sandbox) for vector in load_vectors(contract_version))
    handled: dict[tuple[str, str], Vector] = {}
    with watching() as seen:
        for handler in plugin.handlers:
            for vector in runner.vectors_for(handler, vectors):
                handled.setdefault((vector.id, vector.event.model_dump_json()), vector)
                await runner.run(handler, vector)
    runner.access.extend(seen)
    runner.finish_access()
    await check_budget(
        obj, tuple(handled.values()), runner.results["budget"], sandbox=Path(sandbox)
    )
    _merge(report, runner.results, contract_version, len(report.contract_versions) > 1)


def _in_sandbox(vector: Vector, sandbox: str) -> Vector:
    if "cwd" not in type(vector.event).model_fields:
        return vector
    return vector.with_event(vector.event.model_copy(update={"cwd": sandbox}))


def declared_access(info: Any) -> frozenset[str]:
    """What the plugin does itself: `PluginInfo.access` ("files", "network", "subprocess")."""
    return frozenset(getattr(info, "access", ()))


def _merge(
    report: PluginReport, results: Mapping[str, CheckResult], version: str, tag: bool
) -> None:
    for name, result in results.items():
        if result.status == "fail":
            reason = f"[{version}] {result.reason}" if tag else result.reason
            report.checks[name].failed(reason)
        elif result.status == "pass":
            report.checks[name].passed()


def _check_deterministic(
    first: PluginUnderTest, second: PluginUnderTest, check: CheckResult
) -> None:
    one = [handler.signature() for handler in first.handlers]
    two = [handler.signature() for handler in second.handlers]
    if not second.loaded:
        check.failed(f"the second load failed: {second.error}")
    elif one != two:
        check.failed(
            f"first load registered {len(one)} handlers, the second {len(two)}, or in "
            "another order or with other filters"
        )
    else:
        check.passed()


@contextmanager
def _environ(values: Mapping[str, str], prefix: str) -> Iterator[None]:
    """os.environ without the plugin's variables, plus `values`, restored afterwards."""
    saved = dict(os.environ)
    try:
        for key in [k for k in os.environ if k.upper().startswith(prefix)]:
            del os.environ[key]
        os.environ.update(values)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _takes_any_text(annotation: Any) -> bool:
    if annotation in (str, Any, object) or getattr(annotation, "__name__", "") in _PATH_TYPES:
        return True
    origin = get_origin(annotation)
    return (
        origin is not None
        and origin not in (list, set, frozenset, tuple, dict)
        and any(_takes_any_text(arg) for arg in get_args(annotation))
    )


def _check_options(plugin: PluginUnderTest, check: CheckResult) -> None:
    model = getattr(plugin.info, "options", None)
    if model is None:
        return
    prefix = env_prefix(plugin.name)

    def build() -> BaseModel:
        if isinstance(model, type) and issubclass(model, BaseSettings):
            return model(_env_prefix=prefix)
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise ValueError(f"options is {model!r}, not a pydantic model class")
        return model()

    with _environ({}, prefix):
        try:
            defaults = build()
            model.model_validate(defaults.model_dump())
        except (ValidationError, ValueError) as error:
            check.failed(f"its defaults do not validate: {str(error).splitlines()[0]}")
            return
    if not (isinstance(model, type) and issubclass(model, BaseSettings)):
        check.passed()
        return
    fields = model.model_fields.items()
    typed = [name for name, info in fields if not _takes_any_text(info.annotation)]
    if not typed:
        check.passed()  # every field takes any text: there is no bad value to refuse
        return
    field_name = typed[0]
    variable = prefix + field_name.upper()
    with _environ({variable: _BAD_ENV_VALUE}, prefix):
        try:
            build()
        except (ValidationError, ValueError) as error:
            if field_name in str(error) or variable in str(error):
                check.passed()
            else:
                check.failed(f"rejected {variable} without naming the field: {str(error)[:120]}")
            return
    check.failed(f"accepted {variable}={_BAD_ENV_VALUE!r} for a non-text field")
