"""Sample payloads for `hookchain try --example EVENT`: one per event, valid as written."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

EXAMPLES: Mapping[str, Mapping[str, Any]] = {
    "session.start": {"session_id": "s1", "cwd": "/tmp/project", "source": "startup"},
    "session.end": {"session_id": "s1", "reason": "other"},
    "prompt.submit": {"session_id": "s1", "text": "Add a test for the parser"},
    "prompt.context": {
        "session_id": "s1",
        "blocks": [{"name": "notes", "text": "The parser lives in parse.py"}],
    },
    "turn.start": {"session_id": "s1", "turn_id": "u1"},
    "turn.step": {"session_id": "s1", "turn_id": "u1", "step_index": 0},
    "turn.complete": {"session_id": "s1", "turn_id": "u1", "last_message": "Done."},
    "tool.call": {
        "session_id": "s1",
        "tool_use_id": "toolu_1",
        "tool": "Bash",
        "input": {"command": "ls -la", "description": "List files"},
    },
    "command.run": {"session_id": "s1", "command": "status", "arguments": ""},
    "classic": {"session_id": "s1", "hook_name": "Notification", "payload": {"message": "Hi"}},
}
"""Event kind → a payload for `hookchain try` (`classic` stands for every classic.<Name>)."""
