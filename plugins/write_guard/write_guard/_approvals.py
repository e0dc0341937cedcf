"""One-shot approvals: records, their consumption, and the person's AskUserQuestion answers."""

from __future__ import annotations

import hashlib
import re
import secrets
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

APPROVAL_TTL_MS = 5 * 60 * 1000
KEY_PREFIX = "approval:"

Source = Literal["ask-user", "cli"]

_APPROVING = re.compile(
    r"^\s*(yes|y|approve[sd]?|allow(ed)?|proceed|confirm(ed)?|ok(ay)?|run( it)?|go ahead|do it|"
    r"да|разрешить|подтвердить|выполнить)\b",
    re.IGNORECASE,
)
_REFUSING = re.compile(
    r"\b(no|not|don'?t|never|deny|denied|reject(ed)?|cancel|skip|abort|stop|wait|нет|отмена|не)\b",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"```(?:\w+\n)?(.+?)```|`([^`]+)`|\"([^\"]+)\"|'([^']+)'|«([^»]+)»", re.S)
_ANSWER_PAIR = re.compile(r'"((?:[^"\\]|\\.)*)"="((?:[^"\\]|\\.)*)"')


class Approval(BaseModel):
    """One approval of one exact command, usable once before `expires_ms`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    command: str
    sha256: str
    created_ms: int
    expires_ms: int
    source: Source
    consumed: bool = False
    consumed_at: int | None = None
    consumed_by: str | None = None
    claim: str | None = None


def canonical(command: str) -> str:
    """The form approvals compare: the command exactly, minus surrounding whitespace."""
    return command.strip()


def command_digest(command: str) -> str:
    return hashlib.sha256(canonical(command).encode("utf-8", "surrogatepass")).hexdigest()


def approval_key(command: str) -> str:
    return KEY_PREFIX + command_digest(command)


def new_approval(command: str, now_ms: int, source: Source) -> Approval:
    exact = canonical(command)
    return Approval(
        id=uuid.uuid4().hex,
        command=exact,
        sha256=command_digest(exact),
        created_ms=now_ms,
        expires_ms=now_ms + APPROVAL_TTL_MS,
        source=source,
    )


def consumer(command: str, now_ms: int, tool_use_id: str, claim: str) -> Callable[[Any], Any]:
    """The pure read-modify-write step that marks a usable approval consumed by this claim."""
    exact = canonical(command)

    def consume(current: Any) -> Any:
        record = _parse(current)
        if (
            record is None
            or record.consumed
            or now_ms >= record.expires_ms
            or record.command != exact
        ):
            return current
        return record.model_copy(
            update={
                "consumed": True,
                "consumed_at": now_ms,
                "consumed_by": tool_use_id,
                "claim": claim,
            }
        ).model_dump()

    return consume


def won(stored: Any, claim: str) -> bool:
    """Whether the record after the update shows this claim consumed it."""
    record = _parse(stored)
    return record is not None and record.consumed and record.claim == claim


def _parse(value: Any) -> Approval | None:
    if not isinstance(value, Mapping):
        return None
    try:
        return Approval.model_validate(dict(value))
    except ValueError:
        return None


def why_unusable(value: Any, now_ms: int) -> str:
    """A short explanation of why a stored approval did not let a command through."""
    record = _parse(value)
    if record is None:
        return "no approval exists for this exact command"
    if record.consumed:
        return "its approval was already used"
    if now_ms >= record.expires_ms:
        return "its approval expired (approvals last 5 minutes)"
    return "its approval does not match"


def approved_commands(
    tool_input: Mapping[str, Any],
    output: Any,
    is_gated: Callable[[str], bool],
    pending: Iterable[str] = (),
) -> list[str]:
    """Commands quoted in AskUserQuestion questions the person answered with an approval."""
    questions = tool_input.get("questions")
    if not isinstance(questions, list):
        return []
    answers = _answers(output)
    approved: list[str] = []
    for question in questions:
        if not isinstance(question, Mapping):
            continue
        text = question.get("question")
        if not isinstance(text, str) or not _chose_approval(question, answers.get(text)):
            continue
        candidates = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(text)]
        candidates += [command for command in pending if canonical(command) in text]
        for candidate in candidates:
            exact = canonical(candidate)
            if exact and is_gated(exact) and exact not in approved:
                approved.append(exact)
    return approved


def _answers(output: Any) -> dict[str, str]:
    if isinstance(output, Mapping):
        raw = output.get("answers")
        if isinstance(raw, Mapping):
            return {str(k): str(v) for k, v in raw.items()}
        return {}
    if isinstance(output, str) and output.startswith("User has answered your questions:"):
        return {
            q.replace('\\"', '"'): a.replace('\\"', '"') for q, a in _ANSWER_PAIR.findall(output)
        }
    return {}


def _chose_approval(question: Mapping[str, Any], answer: str | None) -> bool:
    if not answer:
        return False
    options = question.get("options")
    labels = {str(option.get("label")) for option in options or [] if isinstance(option, Mapping)}
    chosen = (
        [part.strip() for part in answer.split(",")] if question.get("multiSelect") else [answer]
    )
    if not chosen or any(choice not in labels for choice in chosen):
        return False  # a free-text answer is not a choice of an approving option
    if len(chosen) != 1:
        return False
    label = chosen[0]
    return bool(_APPROVING.search(label)) and not _REFUSING.search(label)


CODE_PREFIX = "code:"
CODE_TTL_S = 30 * 60.0
# No 0/O or 1/I/L: the person types the code from a message.
_CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"


def new_code() -> str:
    """A one-time code shown only to the person (never in text the model reads)."""
    return "".join(secrets.choice(_CODE_ALPHABET) for _ in range(8))


def code_key(code: str) -> str:
    """Where a held command waits for its code; only the code's digest is stored, so that
    reading the store (the model can read files) does not reveal the code."""
    normal = code.strip().upper().replace("-", "").replace(" ", "")
    return CODE_PREFIX + hashlib.sha256(normal.encode()).hexdigest()
