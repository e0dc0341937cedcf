"""What only the Redis backend has: passwords, key layout and prefixes, TLS URLs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from redis_server import RedisServer, redis_client_module, start_or_explain

from framework.stores.base import Store, StoreError
from framework.stores.factory import open_backend

redis = redis_client_module()
from framework.stores.redis import PASSWORD_ENV, RedisBackend, redact  # noqa: E402

PASSWORD = "correct-horse-battery"

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def locked_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = start_or_explain(tmp_path_factory.mktemp("redis-auth"), password=PASSWORD)
    yield server
    server.stop()


@pytest.fixture
def bare_url(locked_server: RedisServer) -> Iterator[str]:
    yield f"redis://127.0.0.1:{locked_server.port}/0"
    raw = redis.Redis(port=locked_server.port, password=PASSWORD)
    raw.flushall()
    raw.close()


def test_redact_hides_only_the_password() -> None:
    assert redact("redis://u:pw@h:1/2?prefix=x:") == "redis://u:***@h:1/2?prefix=x:"
    assert redact("rediss://:pw@[::1]:6380/0") == "rediss://:***@[::1]:6380/0"
    assert redact("redis://h:1/0") == "redis://h:1/0"


async def test_password_from_the_environment(
    bare_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    backend = open_backend(bare_url)
    try:
        await backend.set("k", 1)
        assert await backend.get("k") == 1
    finally:
        await backend.aclose()


def test_missing_password_is_a_clear_error(bare_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    with pytest.raises(StoreError, match="Authentication") as caught:
        open_backend(bare_url)
    assert bare_url in str(caught.value)


def test_wrong_password_never_shows_in_the_error(locked_server: RedisServer) -> None:
    url = f"redis://:not-the-{PASSWORD}@127.0.0.1:{locked_server.port}/0"
    with pytest.raises(StoreError) as caught:
        open_backend(url)
    assert "unreachable" in str(caught.value)
    assert "***" in str(caught.value)
    assert PASSWORD not in str(caught.value)


async def test_keys_live_under_hookchain_and_the_plugin(
    bare_url: str, locked_server: RedisServer
) -> None:
    backend = open_backend(bare_url.replace("redis://", f"redis://:{PASSWORD}@"))
    try:
        await Store(backend).namespace("loop-breaker").set("count", 3)
        raw = redis.Redis(port=locked_server.port, password=PASSWORD, decode_responses=True)
        try:
            assert raw.keys("*") == ["hookchain:loop-breaker:count"]
            assert raw.get("hookchain:loop-breaker:count") == "3"
            raw.set("hookchain:loop-breaker:broken", "{not json")
        finally:
            raw.close()
        with pytest.raises(StoreError, match="'loop-breaker:broken' does not hold JSON"):
            await backend.get("loop-breaker:broken")
    finally:
        await backend.aclose()


async def test_prefixes_keep_teams_apart(bare_url: str) -> None:
    authed = bare_url.replace("redis://", f"redis://:{PASSWORD}@")
    team_a = open_backend(f"{authed}?prefix=team-a:")
    team_b = RedisBackend.from_url(authed, prefix="team-b:")
    default = open_backend(authed)
    try:
        assert (team_a.prefix, team_b.prefix, default.prefix) == (  # type: ignore[attr-defined]
            "team-a:",
            "team-b:",
            "hookchain:",
        )
        await team_a.set("k", "a")
        await team_b.set("k", "b")
        await default.set("k", "default")
        assert await team_a.get("k") == "a"
        assert await team_b.keys() == ["k"]
        assert await team_a.clear() == 1
        assert await team_b.get("k") == "b"
        assert await default.get("k") == "default"
    finally:
        for backend in (team_a, team_b, default):
            await backend.aclose()


def test_rediss_urls_speak_tls() -> None:
    backend = RedisBackend.from_url(
        "rediss://:secret@cache.internal:6380/2?ssl_cert_reqs=required", check=False
    )
    pool = backend._client.connection_pool
    assert issubclass(pool.connection_class, redis.asyncio.SSLConnection)
    assert pool.connection_kwargs["db"] == 2
    assert pool.connection_kwargs["password"] == "secret"
    assert backend.url == "rediss://:***@cache.internal:6380/2?ssl_cert_reqs=required"


def test_timeout_applies_to_connecting_and_to_commands() -> None:
    backend = RedisBackend.from_url("redis://cache.internal/0?timeout=0.75", check=False)
    kwargs = backend._client.connection_pool.connection_kwargs
    assert kwargs["socket_connect_timeout"] == 0.75
    assert kwargs["socket_timeout"] == 0.75


async def test_a_non_positive_ttl_is_refused(bare_url: str) -> None:
    backend = open_backend(bare_url.replace("redis://", f"redis://:{PASSWORD}@"))
    try:
        with pytest.raises(StoreError, match="TTL must be a positive"):
            await backend.set("k", 1, ttl=0)
    finally:
        await backend.aclose()
