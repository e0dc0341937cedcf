"""A scripted stand-in for the Anthropic Messages API, enough for the real Claude Code CLI.

It listens on 127.0.0.1 only (port 0), stops by itself after `max_requests` requests or
`max_seconds` seconds, and answers each streamed `POST /v1/messages` with the next scripted
assistant turn as server-sent events. Every request body is kept so tests can read what reached
the model: tool results, `<system-reminder>` hook context, the system prompt.

The main script answers every conversation no other script claims; `MockAPI(..., threads={"marker":
[...]})` gives a conversation whose user text holds the marker its own script: a subagent (its
first user message is the Task prompt) or a later prompt of the same session. The step is the
number of assistant messages after that user text, so a retried request gets the same turn again.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from loopback import LoopbackServer

DONE_TEXT = "Done."
"""What the mock says once a script has no more turns: a plain end of the turn."""


@dataclass(frozen=True, slots=True)
class Block:
    """One content block of a scripted assistant turn: text, or a tool call with its input."""

    kind: str
    text: str = ""
    name: str = ""
    input: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""


@dataclass(frozen=True, slots=True)
class Turn:
    """One scripted assistant message and the stop reason it ends with."""

    blocks: tuple[Block, ...]
    stop_reason: str


Step = Turn | Callable[[Mapping[str, Any]], Turn]
"""A scripted turn, or a function of the request body that makes it (to quote an id Claude Code
chose, such as a background task's)."""

_ids = itertools.count(1)


def say(text: str) -> Turn:
    """A turn that only speaks and ends the model's turn."""
    return Turn((Block("text", text=text),), "end_turn")


def tool(name: str, tool_input: Mapping[str, Any], *, text: str = "", id: str = "") -> Turn:
    """A turn that calls one tool (optionally saying something first)."""
    call = Block("tool_use", name=name, input=dict(tool_input), id=id or f"toolu_mock{next(_ids)}")
    return Turn(((Block("text", text=text),) if text else ()) + (call,), "tool_use")


def tools(*calls: tuple[str, Mapping[str, Any]]) -> Turn:
    """A turn with several tool calls at once (Claude Code runs them in parallel)."""
    blocks = tuple(
        Block("tool_use", name=name, input=dict(args), id=f"toolu_mock{next(_ids)}")
        for name, args in calls
    )
    return Turn(blocks, "tool_use")


def refusal() -> Turn:
    """A turn the API refuses: no content, `stop_reason: "refusal"`."""
    return Turn((), "refusal")


def bash(command: str, **extra: Any) -> Turn:
    return tool("Bash", {"command": command, "description": "run it", **extra})


def write(path: str, content: str) -> Turn:
    return tool("Write", {"file_path": path, "content": content})


def _sse(event: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def stream(turn: Turn, model: str, message_id: str) -> bytes:
    """The whole SSE body of one streamed answer."""
    out = [
        _sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                },
            },
        )
    ]
    for index, block in enumerate(turn.blocks):
        if block.kind == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            delta: dict[str, Any] = {"type": "text_delta", "text": block.text}
        else:
            start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block.input)}
        out.append(
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
        )
        out.append(
            _sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
        )
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    stop: dict[str, Any] = {"stop_reason": turn.stop_reason, "stop_sequence": None}
    if turn.stop_reason == "refusal":
        stop["stop_details"] = {"type": "refusal", "category": "cyber"}
    out.append(
        _sse(
            "message_delta",
            {"type": "message_delta", "delta": stop, "usage": {"output_tokens": 5}},
        )
    )
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return b"".join(out)


def message(turn: Turn, model: str, message_id: str) -> dict[str, Any]:
    """The same turn as one non-streamed JSON answer."""
    content: list[dict[str, Any]] = []
    for block in turn.blocks:
        if block.kind == "text":
            content.append({"type": "text", "text": block.text})
        else:
            content.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
            )
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": turn.stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def block_text(content: Any) -> str:
    """The text of a message's or tool result's content, whether a string or a list of blocks."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if isinstance(block, Mapping):
            if block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif block.get("type") == "tool_result":
                parts.append(block_text(block.get("content")))
    return "\n".join(parts)


def text_blocks(content: Any) -> list[str]:
    """The texts a user message itself carries: its string or text blocks, never tool results."""
    if isinstance(content, str):
        return [content]
    blocks = content if isinstance(content, list) else []
    return [
        str(b.get("text", "")) for b in blocks if isinstance(b, Mapping) and b.get("type") == "text"
    ]


@dataclass(frozen=True, slots=True)
class ToolResult:
    tool_use_id: str
    text: str
    is_error: bool


class MockAPI(LoopbackServer):
    """The server; use it as a context manager (`with MockAPI([...]) as api: api.url`)."""

    def __init__(
        self,
        script: Sequence[Step],
        *,
        threads: Mapping[str, Sequence[Step]] | None = None,
        max_requests: int = 200,
        max_seconds: float = 180.0,
        before_answer: Callable[[str, int], None] | None = None,
    ) -> None:
        self.script = tuple(script)
        self.before_answer = before_answer
        """Called with (thread, step) before each answer: where a test disturbs the host."""
        self.threads = {marker: tuple(turns) for marker, turns in (threads or {}).items()}
        self.max_requests = max_requests
        self.max_seconds = max_seconds
        self.requests: list[dict[str, Any]] = []
        """Every request: method, path, body (parsed JSON or None), the step and thread answered."""
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        super().__init__(self._handler_class(), max_seconds=max_seconds)

    @property
    def url(self) -> str:
        return self.base_url

    def __enter__(self) -> MockAPI:
        super().__enter__()
        return self

    # What reached the model -------------------------------------------------------------

    def bodies(self, thread: str | None = "") -> list[dict[str, Any]]:
        """Message request bodies of one thread ("" = main, None = all), in arrival order."""
        with self._lock:
            entries = list(self.requests)
        return [
            e["body"]
            for e in entries
            if e["kind"] == "messages" and (thread is None or e["thread"] == thread)
        ]

    def last_messages(self, thread: str | None = "") -> list[dict[str, Any]]:
        """The conversation as the model saw it in the thread's last request."""
        bodies = self.bodies(thread)
        return list(bodies[-1]["messages"]) if bodies else []

    def tool_results(self, thread: str | None = "") -> list[ToolResult]:
        """Every tool result the model got, in order (read from each thread's last request)."""
        threads = [thread] if thread is not None else ["", *self.threads]
        found: list[ToolResult] = []
        for name in threads:
            for entry in self.last_messages(name):
                content = entry.get("content")
                if entry.get("role") != "user" or not isinstance(content, list):
                    continue
                for block in content:
                    if isinstance(block, Mapping) and block.get("type") == "tool_result":
                        found.append(
                            ToolResult(
                                str(block.get("tool_use_id")),
                                block_text(block.get("content")),
                                bool(block.get("is_error", False)),
                            )
                        )
        return found

    def user_texts(self, thread: str | None = "") -> list[str]:
        """Every text block of user messages the model saw (reminders included)."""
        return [
            text
            for entry in self.last_messages(thread)
            if entry.get("role") == "user"
            for text in text_blocks(entry.get("content"))
        ]

    def reminders(self, thread: str | None = "") -> list[str]:
        """The `<system-reminder>` texts the model saw: where hook context reaches it."""
        return [t for t in self.user_texts(thread) if "<system-reminder>" in t]

    def seen(self, needle: str, thread: str | None = None) -> bool:
        """Whether `needle` appears anywhere in a message request body of the thread."""
        return any(needle in json.dumps(body) for body in self.bodies(thread))

    # Serving ----------------------------------------------------------------------------

    def _answer(self, body: Mapping[str, Any]) -> tuple[str, int, Turn]:
        """The thread is the marker found last in a user's own text (not a tool result); its step
        is the number of assistant messages after that user message (0 for a fresh prompt)."""
        messages = [m for m in body.get("messages", []) if isinstance(m, Mapping)]
        thread, since = "", 0
        for index, entry in enumerate(messages):
            if entry.get("role") != "user":
                continue
            text = "\n".join(text_blocks(entry.get("content")))
            for marker in self.threads:
                if marker in text:
                    thread, since = marker, index
        script = self.threads[thread] if thread else self.script
        step = sum(1 for entry in messages[since:] if entry.get("role") == "assistant")
        scripted = script[step] if step < len(script) else say(DONE_TEXT)
        turn = scripted if isinstance(scripted, Turn) else scripted(body)
        return thread, step, turn

    def _record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(entry)
            count = len(self.requests)
        if count >= self.max_requests:
            self.stop()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def _send(self, status: int, body: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("request-id", f"req_mock{next(api._ids)}")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def do_HEAD(self) -> None:
                api._record({"method": "HEAD", "path": self.path, "kind": "head", "body": None})
                self._send(200, b"", "text/plain")

            def do_GET(self) -> None:
                api._record({"method": "GET", "path": self.path, "kind": "other", "body": None})
                self._send(
                    404, b'{"type":"error","error":{"type":"not_found_error"}}', "application/json"
                )

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = {}
                path = self.path.split("?", 1)[0]
                if path.endswith("/count_tokens"):
                    api._record(
                        {"method": "POST", "path": self.path, "kind": "count_tokens", "body": body}
                    )
                    self._send(200, b'{"input_tokens": 100}', "application/json")
                    return
                if not path.endswith("/v1/messages"):
                    api._record(
                        {"method": "POST", "path": self.path, "kind": "other", "body": body}
                    )
                    self._send(
                        404,
                        b'{"type":"error","error":{"type":"not_found_error"}}',
                        "application/json",
                    )
                    return
                thread, step, turn = api._answer(body)
                if api.before_answer is not None:
                    api.before_answer(thread, step)
                api._record(
                    {
                        "method": "POST",
                        "path": self.path,
                        "kind": "messages",
                        "body": body,
                        "thread": thread,
                        "step": step,
                        "model": body.get("model"),
                        "at": time.monotonic(),
                    }
                )
                model = str(body.get("model") or "claude-mock")
                message_id = f"msg_mock{next(api._ids)}"
                if body.get("stream"):
                    self._send(200, stream(turn, model, message_id), "text/event-stream")
                else:
                    data = json.dumps(message(turn, model, message_id)).encode()
                    self._send(200, data, "application/json")

        return Handler
