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
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


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


class MockResponses:
    """The server; use it as a context manager (`with MockResponses([...]) as api: api.url`)."""

    def __init__(
        self, script: Sequence[Step], *, max_requests: int = 60, max_seconds: float = 120.0
    ) -> None:
        self.script = tuple(script)
        self.max_requests = max_requests
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._timer = threading.Timer(max_seconds, self.stop)
        self._timer.daemon = True
        self._stopped = threading.Event()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> MockResponses:
        self._thread.start()
        self._timer.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()
        self._thread.join(timeout=5)

    def stop(self) -> None:
        if not self._stopped.is_set():
            self._stopped.set()
            self._timer.cancel()
            threading.Thread(target=self._close, daemon=True).start()

    def _close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def bodies(self) -> list[dict[str, Any]]:
        with self._lock:
            return [entry["body"] for entry in self.requests if entry["body"] is not None]

    def outputs(self) -> list[str]:
        """Tool outputs of the last request (it carries the whole conversation)."""
        bodies = [body for body in self.bodies() if "input" in body]
        return outputs_of(bodies[-1]) if bodies else []

    def seen(self, needle: str) -> bool:
        return any(needle in json.dumps(body) for body in self.bodies())

    def _step(self, body: Mapping[str, Any]) -> Step:
        index = len(outputs_of(body))
        return self.script[index] if index < len(self.script) else Say("Done.")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        mock = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(self, status: int, body: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self._send(404, b"{}", "application/json")

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(min(length, 16 * 1024 * 1024))
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                with mock._lock:
                    mock.requests.append({"path": self.path, "body": body})
                    over = len(mock.requests) > mock.max_requests
                if over:
                    mock.stop()
                    self._send(503, b'{"error": "mock request budget spent"}', "application/json")
                    return
                if not self.path.rstrip("/").endswith("/responses") or not isinstance(body, dict):
                    self._send(404, b'{"error": "not mocked"}', "application/json")
                    return
                step = mock._step(body)
                self._send(200, stream(step, next(mock._numbers)), "text/event-stream")

        return Handler
