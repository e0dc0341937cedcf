"""hookchain: a plugin host for AI coding-agent harnesses."""

# Only `framework` (this face) and `framework.testing` are public. The parts behind them are
# internal and may move: `core` (contract, chain, engine port, host), `stores`, the adapters
# `claude_code` and `replay`, `cli`, and the stdlib-only hook client (`_client`, `_client_core`,
# `_launch`). Inside the subpackages module names carry no leading underscore; the package is
# what makes them private.

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from framework.core.chain import CallNext, Outcome
from framework.core.contract import (
    CONTRACT_VERSION,
    ENGINE_ORIGIN,
    EVENT_TYPES,
    KNOWN_CONTRACT_VERSIONS,
    PERSON_ORIGIN_KINDS,
    Classic,
    ClassicResult,
    CommandReply,
    CommandRun,
    ContextBlock,
    ContextResult,
    Continue,
    ContractError,
    Denial,
    Drop,
    Event,
    Note,
    PromptContext,
    PromptResult,
    PromptSubmit,
    SessionEnd,
    SessionStart,
    StepStream,
    StreamChunk,
    ToolCall,
    ToolResult,
    TurnComplete,
    TurnResult,
    TurnStart,
    TurnStep,
    build_event,
    is_valid_result,
    neutral_result,
    refusal,
)
from framework.core.dispatch import Action
from framework.core.engine import AgentInfo, Clock, Engine, FakeClock, SystemClock
from framework.core.hookspecs import HookSpecs, hookimpl
from framework.core.host import Host
from framework.core.loading import ENTRY_POINT_GROUP, LoadedPlugin, PluginInfo
from framework.core.ports import EnginePort, Handler, On
from framework.core.registration import BudgetExceeded, Registration
from framework.core.session_cache import SessionCache
from framework.core.settings import HostSettings, SettingsError, data_dir, load_settings
from framework.core.tap import tap
from framework.core.tools import HARNESSES, ToolAction, describe_tool
from framework.stores.base import Store, StoreBackend, StoreError
from framework.stores.factory import open_backend

if TYPE_CHECKING:
    from framework.replay.reader import Transcripts, read_transcripts
    from framework.replay.runner import ReplayReport, replay_paths

__version__ = "0.1.0"

# The replay stack (reader, rebuilder, runner) is loaded on first use (PEP 562), so that the warm
# host and every plugin, which never replay, do not pay for importing it.
_LAZY = {
    "ReplayReport": "framework.replay.runner",
    "Transcripts": "framework.replay.reader",
    "read_transcripts": "framework.replay.reader",
    "replay_paths": "framework.replay.runner",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'framework' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "CONTRACT_VERSION",
    "ENGINE_ORIGIN",
    "ENTRY_POINT_GROUP",
    "EVENT_TYPES",
    "HARNESSES",
    "KNOWN_CONTRACT_VERSIONS",
    "PERSON_ORIGIN_KINDS",
    "Action",
    "AgentInfo",
    "BudgetExceeded",
    "CallNext",
    "Classic",
    "ClassicResult",
    "Clock",
    "CommandReply",
    "CommandRun",
    "ContextBlock",
    "ContextResult",
    "Continue",
    "ContractError",
    "Denial",
    "Drop",
    "Engine",
    "EnginePort",
    "Event",
    "FakeClock",
    "Handler",
    "HookSpecs",
    "Host",
    "HostSettings",
    "LoadedPlugin",
    "Note",
    "On",
    "Outcome",
    "PluginInfo",
    "PromptContext",
    "PromptResult",
    "PromptSubmit",
    "Registration",
    "ReplayReport",
    "SessionCache",
    "SessionEnd",
    "SessionStart",
    "SettingsError",
    "StepStream",
    "Store",
    "StoreBackend",
    "StoreError",
    "StreamChunk",
    "SystemClock",
    "ToolAction",
    "ToolCall",
    "ToolResult",
    "Transcripts",
    "TurnComplete",
    "TurnResult",
    "TurnStart",
    "TurnStep",
    "build_event",
    "data_dir",
    "describe_tool",
    "hookimpl",
    "is_valid_result",
    "load_settings",
    "neutral_result",
    "open_backend",
    "read_transcripts",
    "refusal",
    "replay_paths",
    "tap",
]
