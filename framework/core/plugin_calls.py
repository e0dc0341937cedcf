"""A hook of every loaded plugin called outside a session, each with its own options.

`harness_settings` and `status_line` are asked this way: each plugin on its own (a failure is
that plugin's answer, never the caller's exception), the answers in plugin-name order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from framework.core.host import Host


@dataclass(frozen=True, slots=True)
class PluginAnswer:
    """What one plugin's hook answered: a value, or why it gave none it could use."""

    plugin: str
    value: Any = None
    error: str | None = None


def ask_plugins(
    host: Host, hook: str, expect: type | tuple[type, ...], **arguments: Any
) -> list[PluginAnswer]:
    """Call `hook` of each plugin `host` loaded that implements it, with `arguments` and the
    plugin's own `options` (an implementation may take any of them). A plugin that raises, or
    answers something other than None or an `expect`, gets an answer with `error` saying so;
    the others are not affected. None answers are left out."""
    records = {id(record.obj): record for record in host.loaded()}
    answers: list[PluginAnswer] = []
    for impl in getattr(host.pm.hook, hook).get_hookimpls():
        record = records.get(id(impl.plugin))
        if record is None:
            continue
        given = {**arguments, "options": record.options}
        try:
            value = impl.function(**{name: given[name] for name in impl.argnames})
        except Exception as error:  # one plugin's bug must not stop install or status
            answers.append(
                PluginAnswer(
                    record.name, error=f"its {hook}() raised {type(error).__name__}: {error}"
                )
            )
            continue
        if value is None:
            continue
        if not isinstance(value, expect):
            names = " or ".join(
                t.__name__ for t in (expect if isinstance(expect, tuple) else (expect,))
            )
            answers.append(
                PluginAnswer(
                    record.name,
                    error=f"its {hook}() returned a {type(value).__name__}; "
                    f"return a {names} or None",
                )
            )
            continue
        answers.append(PluginAnswer(record.name, value))
    return sorted(answers, key=lambda answer: answer.plugin)
