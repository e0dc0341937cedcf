"""Serve the dashboard page and its data on 127.0.0.1 with the standard library's HTTP server."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from functools import partial
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any, cast

from observer._dashboard_data import dashboard_payload
from observer._log_file import log_files, read_log
from observer._log_view import fold
from observer._read_counter import note_read

LOOPBACK = "127.0.0.1"
_ASSETS: dict[str, tuple[str, str]] = {
    "/": ("dashboard.html", "text/html; charset=utf-8"),
    "/dashboard.js": ("dashboard.js", "text/javascript; charset=utf-8"),
    "/dashboard.css": ("dashboard.css", "text/css; charset=utf-8"),
}
_SECURITY_HEADERS: dict[str, str] = {
    "Content-Security-Policy": "default-src 'self'; object-src 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def asset(name: str) -> bytes:
    """A file of the page shipped inside the package."""
    return resources.files("observer").joinpath("static", name).read_bytes()


def dashboard_json(data_dir: Path) -> bytes:
    """The page's data: the four views over the log as it is now, and which folder it is."""
    payload = {
        **dashboard_payload(fold(read_log(data_dir).records)),
        "data_dir": str(data_dir),
        "has_log": bool(log_files(data_dir)),
    }
    return json.dumps(payload, ensure_ascii=False).encode("utf-8")


class DashboardHandler(BaseHTTPRequestHandler):
    """GET only; the page, its two assets and `/api/data`. Anything else is 404."""

    server_version = "hookchain-observer"
    sys_version = ""

    def __init__(
        self, *args: Any, data_dir: Path, clock_ms: Callable[[], int], **kwargs: Any
    ) -> None:
        self.data_dir = data_dir
        self.clock_ms = clock_ms
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:
        if not self._host_allowed():
            # A page on another origin that rebinds its name to 127.0.0.1 must not read the log.
            self._send(HTTPStatus.MISDIRECTED_REQUEST, b"unknown host\n", "text/plain")
            return
        path = self.path.split("?", 1)[0]
        if path in _ASSETS:
            name, content_type = _ASSETS[path]
            self._send(HTTPStatus.OK, asset(name), content_type)
        elif path == "/api/data":
            body = dashboard_json(self.data_dir)
            if log_files(self.data_dir):
                # Only a log that is there is read; an empty folder is never created for it.
                note_read(self.data_dir, self.clock_ms())
            self._send(HTTPStatus.OK, body, "application/json")
        else:
            self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain")

    def _host_allowed(self) -> bool:
        port = cast(ThreadingHTTPServer, self.server).server_port
        return self.headers.get("Host", "") in {f"{LOOPBACK}:{port}", f"localhost:{port}"}

    def _send(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in _SECURITY_HEADERS.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        # Request lines would name paths and clients; the dashboard keeps quiet.
        return


def make_server(data_dir: Path, port: int = 0) -> ThreadingHTTPServer:
    """A server bound to 127.0.0.1:`port` (0 picks a free port); call `serve_forever()` on it."""
    handler = partial(DashboardHandler, data_dir=data_dir, clock_ms=lambda: int(time.time() * 1000))
    return ThreadingHTTPServer((LOOPBACK, port), handler)
