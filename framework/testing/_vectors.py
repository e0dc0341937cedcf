"""Conformance vectors: canonical events and downstream's answers, shipped as data per version."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from pydantic import BaseModel

from framework import Event, StreamChunk, TurnStep, build_event
from framework.testing._scripts import Script, returns, streams

__all__ = ["Vector", "load_vectors", "vector_versions"]

_PACKAGE = "framework.testing"


@dataclass(frozen=True, slots=True)
class Vector:
    """One canonical event and downstream's answer to it (`None` for events without a result)."""

    id: str
    contract: str
    event: Event
    downstream: Mapping[str, Any] | None

    @property
    def event_name(self) -> str:
        return self.event.name

    def result(self) -> Any:
        """A fresh downstream result object (identity matters to the checks, so never shared)."""
        if self.downstream is None or isinstance(self.event, TurnStep):
            return None
        result_type = self.event.result_type
        if result_type is None or not issubclass(result_type, BaseModel):
            raise ValueError(f"vector {self.id}: {self.event.name} has no result model")
        return result_type.model_validate(dict(self.downstream))

    def chunks(self) -> tuple[StreamChunk, ...]:
        raw = (self.downstream or {}).get("chunks", ())
        return tuple(StreamChunk.model_validate(chunk) for chunk in raw)

    def script(self) -> Script:
        """Downstream playing this vector: a result, or a stream for `turn.step`."""
        if isinstance(self.event, TurnStep):
            return streams(self.chunks())
        return returns(self.result())

    def with_event(self, event: Event) -> Vector:
        return Vector(id=self.id, contract=self.contract, event=event, downstream=self.downstream)


def vector_versions() -> tuple[str, ...]:
    """Contract versions that have a vector folder, oldest first."""
    root = resources.files(_PACKAGE).joinpath("vectors")
    found = [entry.name for entry in root.iterdir() if entry.is_dir() and entry.name[0].isdigit()]
    return tuple(sorted(found, key=_version_key))


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def _vector_files(contract: str) -> list[Any]:
    major = _version_key(contract)[0]
    files: list[Any] = []
    for version in vector_versions():
        key = _version_key(version)
        if key[0] != major or key > _version_key(contract):
            continue
        folder = resources.files(_PACKAGE).joinpath("vectors", version)
        entries = (entry for entry in folder.iterdir() if entry.name.endswith(".json"))
        files.extend(sorted(entries, key=lambda entry: entry.name))
    return files


@cache
def load_vectors(contract: str) -> tuple[Vector, ...]:
    """Every vector of a contract version, in file then document order; unknown versions refused.

    A minor version only adds, so its vectors are its own folder's after every earlier minor's
    of the same major (1.1 = 1.0's vectors + 1.1's): a plugin checked on 1.1 meets them all.
    """
    if contract not in vector_versions():
        known = ", ".join(vector_versions())
        raise ValueError(f"no conformance vectors for contract {contract!r}; known: {known}")
    vectors: list[Vector] = []
    for entry in _vector_files(contract):
        document = json.loads(entry.read_text(encoding="utf-8"))
        event_kind = document["event"]
        for raw in document["vectors"]:
            payload = raw["payload"]
            name = f"classic.{payload['hook_name']}" if event_kind == "classic" else event_kind
            event = build_event(name, payload)
            vectors.append(
                Vector(
                    id=f"{name}/{raw['id']}",
                    contract=contract,
                    event=event,
                    downstream=raw["downstream"],
                )
            )
    return tuple(vectors)
