"""The URL -> backend factory; above the backends so none of them imports back from here."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from framework.stores.base import MemoryBackend, StoreBackend, StoreError
from framework.stores.sqlite import SQLiteBackend


def open_backend(url: str) -> StoreBackend:
    """Open the backend a URL names: `memory://`, `sqlite:///abs/path`, `redis://host:port/db`."""
    scheme = urlsplit(url).scheme
    if scheme == "memory":
        return MemoryBackend()
    if scheme == "sqlite":
        raw = url.removeprefix("sqlite://")
        if not raw or raw == "/":
            raise StoreError(f"store URL {url!r} has no path; use sqlite:///absolute/path.db")
        if raw.startswith("//"):
            # sqlite:////abs/path (the four-slash form) means the same file as sqlite:///abs/path.
            raw = "/" + raw.lstrip("/")
        path = Path(raw).expanduser()
        if not path.is_absolute():
            # A relative path would depend on whichever folder each hook process starts in.
            raise StoreError(f"store URL {url!r} is relative; use sqlite:///absolute/path.db")
        return SQLiteBackend(path)
    if scheme in {"redis", "rediss"}:
        try:
            from framework.stores.redis import RedisBackend
        except ImportError as error:
            raise StoreError(
                f"the redis backend needs the 'redis' package ({error}); "
                "pip install 'hookchain[redis]'"
            ) from None
        return RedisBackend.from_url(url)
    raise StoreError(
        f"unknown store URL scheme {scheme!r} (from HOOKCHAIN_STORE or --store); "
        "accepted: memory://, sqlite:///path, redis://host:port/db"
    )
