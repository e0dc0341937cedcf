"""What every mock model API of the end-to-end suites shares: a threaded HTTP server on
127.0.0.1 (port 0) that stops by itself after `max_seconds` (`LoopbackServer`), and for the
simple ones a request count against `max_requests` and every request body kept for the test
to read (`LoopbackMock`)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = tuple[int, bytes, str]
"""Status, body, content type."""


class LoopbackServer:
    """A threaded HTTP server on 127.0.0.1 (port 0) serving `handler`, stopped by `stop()`, by
    leaving the `with` block, or by itself after `max_seconds`: no test leaves one behind."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], *, max_seconds: float) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._timer = threading.Timer(max_seconds, self.stop)
        self._timer.daemon = True
        self._stopped = threading.Event()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Any:
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
            # shutdown() waits for serve_forever: never call it on the serving thread itself.
            threading.Thread(target=self._close, daemon=True).start()

    def _close(self) -> None:
        self._server.shutdown()
        self._server.server_close()  # refuse new connections at once, not after a timeout


class LoopbackMock(LoopbackServer):
    """Subclasses implement `answer(path, body) -> (status, body, content type)`."""

    def __init__(self, *, max_requests: int, max_seconds: float) -> None:
        self.max_requests = max_requests
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        super().__init__(_handler(self._serve), max_seconds=max_seconds)

    def recorded(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.requests)

    def answer(self, path: str, body: Any) -> Answer:
        raise NotImplementedError

    def _serve(self, path: str, raw: bytes) -> Answer:
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        with self._lock:
            self.requests.append({"path": path, "body": body})
            over = len(self.requests) > self.max_requests
        if over:
            self.stop()
            return 503, b'{"error": "mock request budget spent"}', "application/json"
        return self.answer(path, body)


def _handler(serve: Callable[[str, bytes], Answer]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet

        def _send(self, answer: Answer) -> None:
            status, body, content_type = answer
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._send((404, b"{}", "application/json"))

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            self._send(serve(self.path, self.rfile.read(min(length, 16 * 1024 * 1024))))

    return Handler
