"""The mock model API on its own: bounded, loopback-only, scripted by conversation and step."""

from __future__ import annotations

import http.client
import json
import time
from typing import Any

import pytest
from mock_api import MockAPI, bash, refusal, say


def post(api: MockAPI, body: dict[str, Any]) -> tuple[int, bytes]:
    host, port = api.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        connection.request("POST", "/v1/messages?beta=true", json.dumps(body))
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def events(raw: bytes) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: ")]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def assistant() -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": "x"}]}


def test_it_listens_on_loopback_only_and_streams_the_step_of_the_conversation() -> None:
    with MockAPI([bash("echo hi"), refusal()]) as api:
        assert api.url.startswith("http://127.0.0.1:")
        status, raw = post(api, {"stream": True, "messages": [user("go")]})
        assert status == 200
        kinds = [e["type"] for e in events(raw)]
        assert kinds[0] == "message_start"
        assert kinds[-2:] == ["message_delta", "message_stop"]
        delta = next(e for e in events(raw) if e["type"] == "content_block_delta")
        assert json.loads(delta["delta"]["partial_json"])["command"] == "echo hi"
        # A retry of the same request gets the same step; one assistant message later, the next.
        again = events(post(api, {"stream": True, "messages": [user("go")]})[1])
        assert again[1:] == events(raw)[1:]  # only the message id differs
        later = events(post(api, {"stream": True, "messages": [user("go"), assistant()]})[1])
        assert later[-2]["delta"]["stop_reason"] == "refusal"
        assert len(api.bodies()) == 3


def test_a_marker_in_user_text_picks_its_own_script_counted_from_that_message() -> None:
    with MockAPI([say("main")], threads={"SUB": [say("sub")]}) as api:
        body = {"stream": False, "messages": [user("main"), assistant(), user("SUB do it")]}
        status, raw = post(api, body)
        assert status == 200
        assert json.loads(raw)["content"] == [{"type": "text", "text": "sub"}]
        assert api.bodies("SUB") == [body]
        assert api.bodies("") == []


def test_it_stops_by_itself_after_its_request_budget() -> None:
    with MockAPI([say("ok")], max_requests=2) as api:
        post(api, {"messages": []})
        post(api, {"messages": []})
        time.sleep(0.5)
        with pytest.raises(OSError):
            post(api, {"messages": []})


def test_it_stops_by_itself_after_its_time_budget() -> None:
    with MockAPI([say("ok")], max_seconds=0.3) as api:
        time.sleep(0.8)
        with pytest.raises(OSError):
            post(api, {"messages": []})
