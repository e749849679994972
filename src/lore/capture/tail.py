"""The end of a transcript: the user's last prompt and the assistant text it answered.

Standard library only (the Stop hook uses it); reads at most the last 256 KiB.
"""

from __future__ import annotations

import os

from lore.normalize import json_value
from lore.redact import CLIP_MARGIN, clip

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    StrPath = str | os.PathLike[str]

TAIL_BYTES = 256 * 1024  # the end of the transcript is enough to find the last exchange
MAX_FIELD = 20_000  # payload strings are cut here: the queue holds signals, not files
# What is read for a field: the hook redacts it, then cuts it to MAX_FIELD (lore.redact).
_READ = MAX_FIELD + CLIP_MARGIN


def records_from_end(path: StrPath, nbytes: int = TAIL_BYTES) -> Iterator[dict[str, Any]]:
    """The JSON records of the last ``nbytes`` of a transcript, newest first."""
    size = os.stat(path).st_size
    with open(path, "rb") as fh:
        fh.seek(max(0, size - nbytes))
        lines = fh.read().splitlines()
    for raw in reversed(lines):
        try:
            rec = json_value(raw)  # invalid UTF-8, lone surrogates, NULs: U+FFFD
        except ValueError:
            continue  # the cut first line, or a malformed one
        if isinstance(rec, dict):
            yield rec


def message_text(rec: dict[str, Any]) -> str | None:
    message = rec.get("message")
    return _text(message.get("content")) if isinstance(message, dict) else None


def last_exchange(path: StrPath) -> tuple[str | None, str | None]:
    prompt: str | None = None
    for rec in records_from_end(path):
        if rec.get("isMeta"):
            continue
        text = message_text(rec)
        if not text:
            continue
        if prompt is None and rec.get("type") == "user":
            prompt = text
        elif prompt is not None and rec.get("type") == "assistant":
            return prompt, clip(text, _READ)
    return prompt, None


def last_assistant(path: StrPath) -> str | None:
    """The assistant's last text in the transcript: what a prompt typed now answers."""
    for rec in records_from_end(path):
        if rec.get("type") == "assistant":
            text = message_text(rec)
            if text:
                return clip(text, _READ)
    return None


def last_todos(path: StrPath) -> list[Any]:
    """The todo list of the last TodoWrite call in the transcript's tail."""
    for rec in records_from_end(path, 2 * TAIL_BYTES):
        message = rec.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use" \
                    and block.get("name") == "TodoWrite":
                todos = (block.get("input") or {}).get("todos")
                return todos if isinstance(todos, list) else []
    return []


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return None if content.lstrip().startswith("<") else content
    if isinstance(content, list):
        parts = [b.get("text", "") for b in content
                 if isinstance(b, dict) and b.get("type") == "text"]
        joined = "\n".join(p for p in parts if p)
        return joined or None
    return None
