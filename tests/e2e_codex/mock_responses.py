"""A scripted stand-in for the OpenAI Responses API, enough for the real Codex CLI.

It listens on 127.0.0.1 only (port 0) and stops by itself after `max_requests` requests or
`max_seconds` seconds. Each streamed `POST /v1/responses` gets the scripted step whose index is
the number of `function_call_output` items already in the request's input (so a retried request
gets the same step again): a shell call (`exec_command`) or a closing message. Every request body
is kept, so a test reads what reached the model (tool outputs, hook context).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loopback import Answer, LoopbackMock


@dataclass(frozen=True, slots=True)
class Call:
    """The model runs a shell command."""

    command: str


@dataclass(frozen=True, slots=True)
class Say:
    """The model answers with text and ends its turn."""

    text: str


Step = Call | Say
_USAGE = {
    "input_tokens": 10,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 5,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 15,
}


def _sse(data: Mapping[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


def stream(step: Step, number: int) -> bytes:
    """The SSE body of one response."""
    response_id = f"resp_{number}"
    if isinstance(step, Call):
        item: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc_{number}",
            "call_id": f"call_{number}",
            "name": "exec_command",
            "arguments": json.dumps({"cmd": step.command}),
        }
    else:
        item = {
            "type": "message",
            "id": f"msg_{number}",
            "role": "assistant",
            "content": [{"type": "output_text", "text": step.text, "annotations": []}],
        }
    created = {"id": response_id, "object": "response", "status": "in_progress", "output": []}
    parts = [
        _sse({"type": "response.created", "response": created}),
        _sse({"type": "response.output_item.added", "output_index": 0, "item": item}),
        _sse({"type": "response.output_item.done", "output_index": 0, "item": item}),
        _sse(
            {
                "type": "response.completed",
                "response": {**created, "status": "completed", "output": [item], "usage": _USAGE},
            }
        ),
    ]
    return b"".join(parts)


def outputs_of(body: Mapping[str, Any]) -> list[str]:
    """The tool outputs a request carries back to the model, in order."""
    found = []
    for item in body.get("input", []):
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            output = item.get("output")
            found.append(output if isinstance(output, str) else json.dumps(output))
    return found


class MockResponses(LoopbackMock):
    """The server; use it as a context manager (`with MockResponses([...]) as api: api.url`)."""

    def __init__(
        self, script: Sequence[Step], *, max_requests: int = 60, max_seconds: float = 120.0
    ) -> None:
        super().__init__(max_requests=max_requests, max_seconds=max_seconds)
        self.script = tuple(script)
        self._numbers = itertools.count(1)

    @property
    def url(self) -> str:
        return f"{self.base_url}/v1"

    def bodies(self) -> list[dict[str, Any]]:
        return [entry["body"] for entry in self.recorded() if isinstance(entry["body"], dict)]

    def outputs(self) -> list[str]:
        """Tool outputs of the last request (it carries the whole conversation)."""
        bodies = [body for body in self.bodies() if "input" in body]
        return outputs_of(bodies[-1]) if bodies else []

    def seen(self, needle: str) -> bool:
        return any(needle in json.dumps(body) for body in self.bodies())

    def answer(self, path: str, body: Any) -> Answer:
        if not path.rstrip("/").endswith("/responses") or not isinstance(body, dict):
            return 404, b'{"error": "not mocked"}', "application/json"
        index = len(outputs_of(body))
        step = self.script[index] if index < len(self.script) else Say("Done.")
        return 200, stream(step, next(self._numbers)), "text/event-stream"
