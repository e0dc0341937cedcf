"""A scripted stand-in for the Gemini API (`streamGenerateContent`), enough for Gemini CLI.

It listens on 127.0.0.1 only (port 0) and stops by itself after `max_requests` requests or
`max_seconds` seconds. Each `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` gets the
scripted step whose index is the number of `functionResponse` parts already in the request's
contents (a retried request gets the same step): a function call or a closing text. Side
requests Gemini CLI makes with `generateContent` (its next-speaker and loop checks) get a short
JSON answer that ends the turn. Every request body is kept.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


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


class MockGemini:
    """The server; use it as a context manager (`with MockGemini([...]) as api: api.url`)."""

    def __init__(
        self, script: Sequence[Step], *, max_requests: int = 80, max_seconds: float = 120.0
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
        return f"http://{host!s}:{port}"

    def __enter__(self) -> MockGemini:
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

    def streamed(self) -> list[dict[str, Any]]:
        """Bodies of the main conversation's requests, in arrival order."""
        with self._lock:
            return [e["body"] for e in self.requests if e["stream"] and e["body"] is not None]

    def tool_results(self) -> list[str]:
        bodies = self.streamed()
        return responses_of(bodies[-1]) if bodies else []

    def seen(self, needle: str) -> bool:
        return any(needle in json.dumps(body) for body in self.streamed())

    def _step(self, body: Mapping[str, Any]) -> Step:
        index = len(responses_of(body))
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
                stream = ":streamGenerateContent" in self.path
                with mock._lock:
                    mock.requests.append({"path": self.path, "body": body, "stream": stream})
                    over = len(mock.requests) > mock.max_requests
                if over:
                    mock.stop()
                    self._send(429, b'{"error": {"code": 429}}', "application/json")
                    return
                if ":countTokens" in self.path:
                    self._send(200, b'{"totalTokens": 10}', "application/json")
                    return
                if not isinstance(body, dict) or ":" not in self.path:
                    self._send(404, b'{"error": {"code": 404}}', "application/json")
                    return
                if not stream:
                    side = chunk(Say('{"next_speaker": "user", "reasoning": "done"}'))
                    self._send(200, json.dumps(side).encode(), "application/json")
                    return
                step = mock._step(body)
                data = f"data: {json.dumps(chunk(step))}\r\n\r\n".encode()
                self._send(200, data, "text/event-stream")

        return Handler
