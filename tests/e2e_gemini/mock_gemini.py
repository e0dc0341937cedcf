"""A scripted stand-in for the Gemini API (`streamGenerateContent`), enough for Gemini CLI.

It listens on 127.0.0.1 only (port 0) and stops by itself after `max_requests` requests or
`max_seconds` seconds. Each `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` gets the
scripted step whose index is the number of `functionResponse` parts already in the request's
contents (a retried request gets the same step): a function call or a closing text. Side
requests Gemini CLI makes with `generateContent` (its next-speaker and loop checks) get a short
JSON answer that ends the turn. Every request body is kept.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loopback import Answer, LoopbackMock


@dataclass(frozen=True, slots=True)
class Call:
    """The model calls a tool (`run_shell_command`, `write_file`, …) with these arguments."""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Say:
    text: str


Step = Call | Say
_USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}


def shell(command: str) -> Call:
    return Call("run_shell_command", {"command": command, "description": "run it"})


def write_file(path: str, content: str) -> Call:
    return Call("write_file", {"file_path": path, "content": content})


def chunk(step: Step) -> dict[str, Any]:
    if isinstance(step, Call):
        part: dict[str, Any] = {"functionCall": {"name": step.name, "args": dict(step.args)}}
    else:
        part = {"text": step.text}
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": _USAGE,
        "modelVersion": "gemini-2.5-flash",
    }


def responses_of(body: Mapping[str, Any]) -> list[str]:
    """The tool results a request carries back to the model, in order, as JSON text."""
    found = []
    for content in body.get("contents", []):
        for part in content.get("parts", []) if isinstance(content, dict) else []:
            if isinstance(part, dict) and "functionResponse" in part:
                found.append(json.dumps(part["functionResponse"]))
    return found


class MockGemini(LoopbackMock):
    """The server; use it as a context manager (`with MockGemini([...]) as api: api.url`)."""

    def __init__(
        self, script: Sequence[Step], *, max_requests: int = 80, max_seconds: float = 120.0
    ) -> None:
        super().__init__(max_requests=max_requests, max_seconds=max_seconds)
        self.script = tuple(script)

    @property
    def url(self) -> str:
        return self.base_url

    def streamed(self) -> list[dict[str, Any]]:
        """Bodies of the main conversation's requests, in arrival order."""
        return [
            entry["body"]
            for entry in self.recorded()
            if ":streamGenerateContent" in entry["path"] and isinstance(entry["body"], dict)
        ]

    def tool_results(self) -> list[str]:
        bodies = self.streamed()
        return responses_of(bodies[-1]) if bodies else []

    def seen(self, needle: str) -> bool:
        return any(needle in json.dumps(body) for body in self.streamed())

    def answer(self, path: str, body: Any) -> Answer:
        if ":countTokens" in path:
            return 200, b'{"totalTokens": 10}', "application/json"
        if not isinstance(body, dict) or ":" not in path:
            return 404, b'{"error": {"code": 404}}', "application/json"
        if ":streamGenerateContent" not in path:
            side = chunk(Say('{"next_speaker": "user", "reasoning": "done"}'))
            return 200, json.dumps(side).encode(), "application/json"
        index = len(responses_of(body))
        step = self.script[index] if index < len(self.script) else Say("Done.")
        return 200, f"data: {json.dumps(chunk(step))}\r\n\r\n".encode(), "text/event-stream"
