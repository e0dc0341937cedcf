"""The Redis store backend: one store shared by hosts on many machines."""

from __future__ import annotations

import json
import os
import random
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import anyio
import redis
import redis.asyncio
from redis.asyncio.connection import URL_QUERY_ARGUMENT_PARSERS
from redis.backoff import ExponentialBackoff
from redis.exceptions import RedisError, WatchError
from redis.retry import Retry

from framework.stores.base import StoreError, encode_value

PASSWORD_ENV = "HOOKCHAIN_STORE_PASSWORD"
DEFAULT_PREFIX = "hookchain:"
DEFAULT_TIMEOUT_S = 2.0
_UPDATE_ATTEMPTS = 1000
_SCAN_BATCH = 1000
_GLOB_SPECIALS = frozenset("*?[]\\")
_OWN_QUERY_ARGUMENTS = frozenset({"prefix", "timeout"})
# Passed to the client as text: certificate files and the like for rediss://.
_TEXT_QUERY_ARGUMENTS = frozenset(
    {"ssl_cert_reqs", "ssl_ca_certs", "ssl_ca_path", "ssl_certfile", "ssl_keyfile", "client_name"}
)


def redact(url: str) -> str:
    """The URL with any password replaced by `***`, fit for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = f"{user}:***@{host}" + ("" if port is None else f":{port}")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _glob_escape(text: str) -> str:
    return "".join(f"\\{char}" if char in _GLOB_SPECIALS else char for char in text)


def _positive_seconds(raw: str, shown: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise StoreError(f"store URL {shown}: timeout must be a positive number of seconds")
    return value


class RedisBackend:
    """Keys live under a prefix (`hookchain:` by default); values are JSON strings."""

    process_local = False

    def __init__(
        self,
        client: redis.asyncio.Redis,
        *,
        url: str,
        prefix: str = DEFAULT_PREFIX,
    ) -> None:
        self.url = url
        self.prefix = prefix
        self._client = client

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        prefix: str | None = None,
        timeout: float | None = None,
        check: bool = True,
        password: str | None = None,
    ) -> RedisBackend:
        """Open `redis://[user:pass@]host:port/db` or `rediss://…`.

        URL query `prefix=` and `timeout=` (seconds, for connecting and for each command) are
        ours; other query arguments the redis client knows pass through, unknown ones are
        refused. The password comes from the URL, else `password`, else `HOOKCHAIN_STORE_PASSWORD`.
        With `check`, the server is pinged now, so an unreachable store fails at start.
        """
        shown = redact(url)
        parts = urlsplit(url)
        if parts.scheme not in {"redis", "rediss"}:
            raise StoreError(f"store URL {shown}: not a redis:// or rediss:// URL")
        if not parts.hostname:
            raise StoreError(f"store URL {shown}: no host; use redis://host:port/db")
        try:
            _ = parts.port
        except ValueError:
            raise StoreError(f"store URL {shown}: the port is not a number") from None
        db = parts.path.strip("/")
        if db and not db.isdigit():
            raise StoreError(f"store URL {shown}: the database must be a number, got {db!r}")

        own: dict[str, str] = {}
        passed: list[tuple[str, str]] = []
        for name, value in parse_qsl(parts.query, keep_blank_values=True):
            if name in _OWN_QUERY_ARGUMENTS:
                own[name] = value
            elif name in URL_QUERY_ARGUMENT_PARSERS or name in _TEXT_QUERY_ARGUMENTS:
                passed.append((name, value))
            else:
                raise StoreError(f"store URL {shown}: unknown query argument {name!r}")
        if prefix is None:
            prefix = own.get("prefix", DEFAULT_PREFIX)
        if timeout is None:
            timeout = _positive_seconds(own.get("timeout", str(DEFAULT_TIMEOUT_S)), shown)
        elif not timeout > 0:
            raise StoreError(f"store URL {shown}: timeout must be a positive number of seconds")
        client_url = urlunsplit(
            (parts.scheme, parts.netloc, parts.path, urlencode(passed), parts.fragment)
        )
        secret = None if parts.password else (password or os.environ.get(PASSWORD_ENV) or None)

        options: dict[str, Any] = {
            "socket_connect_timeout": timeout,
            "socket_timeout": timeout,
            "decode_responses": True,
            # A few quick retries ride over a dropped connection; the default backoff would
            # stretch an outage into seconds of waiting inside a hook.
            "retry": Retry(ExponentialBackoff(cap=0.1, base=0.01), retries=2),
        }
        if secret is not None:
            options["password"] = secret
        try:
            client = redis.asyncio.Redis.from_url(client_url, **options)
        except (ValueError, TypeError, RedisError) as error:
            raise StoreError(f"store URL {shown}: {error}") from None
        if check:
            _check_reachable(client_url, options, shown, timeout)
        return cls(client, url=shown, prefix=prefix)

    @asynccontextmanager
    async def _answering(self) -> AsyncIterator[None]:
        try:
            yield
        except RedisError as error:
            raise StoreError(f"Redis store {self.url}: {type(error).__name__}: {error}") from error

    def _decode(self, key: str, raw: str | bytes | None) -> Any | None:
        if raw is None:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise StoreError(f"Redis store {self.url}: key {key!r} does not hold JSON") from None

    async def ping(self) -> None:
        async with self._answering():
            await self._client.ping()

    async def get(self, key: str) -> Any | None:
        async with self._answering():
            raw = await self._client.get(self.prefix + key)
        return self._decode(key, raw)

    async def set(self, key: str, value: Any, *, ttl: float | None = None) -> None:
        text = encode_value(value)
        async with self._answering():
            await self._client.set(self.prefix + key, text, px=_ttl_ms(ttl))

    async def delete(self, key: str) -> None:
        async with self._answering():
            await self._client.delete(self.prefix + key)

    async def _scan(self, prefix: str) -> list[str]:
        pattern = _glob_escape(self.prefix + prefix) + "*"
        found: set[str] = set()
        async with self._answering():
            async for name in self._client.scan_iter(match=pattern, count=_SCAN_BATCH):
                found.add(name)
        return sorted(found)

    async def keys(self, prefix: str = "") -> list[str]:
        cut = len(self.prefix)
        return [name[cut:] for name in await self._scan(prefix)]

    async def update(
        self, key: str, fn: Callable[[Any | None], Any], *, ttl: float | None = None
    ) -> Any:
        full = self.prefix + key
        px = _ttl_ms(ttl)
        async with self._answering(), self._client.pipeline(transaction=True) as pipe:
            for attempt in range(_UPDATE_ATTEMPTS):
                await pipe.watch(full)
                new = fn(self._decode(key, await pipe.get(full)))
                text = encode_value(new)
                pipe.multi()  # type: ignore[no-untyped-call]
                pipe.set(full, text, px=px)
                try:
                    await pipe.execute()
                except WatchError:
                    # Another writer got in between: back off a little, with jitter so the
                    # contenders spread out, and try again on the fresh value.
                    await anyio.sleep(random.uniform(0, min(0.05, 0.0005 * 2 ** min(attempt, 8))))
                    continue
                return new
        raise StoreError(
            f"Redis store {self.url}: update of {key!r} lost {_UPDATE_ATTEMPTS} races in a row"
        )

    async def clear(self, prefix: str = "") -> int:
        doomed = await self._scan(prefix)
        removed = 0
        async with self._answering():
            for start in range(0, len(doomed), _SCAN_BATCH):
                removed += int(await self._client.unlink(*doomed[start : start + _SCAN_BATCH]))
        return removed

    async def aclose(self) -> None:
        async with self._answering():
            await self._client.aclose()


def _ttl_ms(ttl: float | None) -> int | None:
    if ttl is None:
        return None
    if not ttl > 0:
        raise StoreError(f"a TTL must be a positive number of seconds, got {ttl!r}")
    return max(1, round(ttl * 1000))


def _check_reachable(url: str, options: dict[str, Any], shown: str, timeout: float) -> None:
    """Ping once from a helper thread, so even a stalled name lookup cannot outlast `timeout`."""
    outcome: list[BaseException | None] = []

    def ping() -> None:
        probe = redis.Redis.from_url(url, **{**options, "retry": Retry(ExponentialBackoff(), 0)})
        try:
            probe.ping()
            outcome.append(None)
        except BaseException as error:  # handed to the caller's thread below
            outcome.append(error)
        finally:
            probe.close()

    worker = threading.Thread(target=ping, name="hookchain-redis-check", daemon=True)
    worker.start()
    worker.join(timeout + 0.5)
    if not outcome:
        raise StoreError(f"Redis store {shown} did not answer within {timeout:g} s")
    error = outcome[0]
    if error is not None:
        raise StoreError(
            f"Redis store {shown} is unreachable: {type(error).__name__}: {error}"
        ) from None
