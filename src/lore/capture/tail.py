"""The end of a transcript: the user's last prompt and the assistant text it answered.

Standard library only (the Stop hook uses it); reads at most the last 256 KiB.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TAIL_BYTES = 256 * 1024  # the end of the transcript is enough to find the last exchange
MAX_FIELD = 20_000  # payload strings are cut here: the queue holds signals, not files


def last_exchange(path: Path) -> tuple[str | None, str | None]:
    size = path.stat().st_size
    with open(path, "rb") as fh:
        fh.seek(max(0, size - TAIL_BYTES))
        lines = fh.read().splitlines()
    prompt: str | None = None
    for raw in reversed(lines):
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(rec, dict) or rec.get("isMeta"):
            continue
        text = _text(rec.get("message", {}).get("content") if isinstance(rec.get("message"), dict)
                     else None)
        if not text:
            continue
        if prompt is None and rec.get("type") == "user":
            prompt = text
        elif prompt is not None and rec.get("type") == "assistant":
            return prompt, text[:MAX_FIELD]
    return prompt, None


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return None if content.lstrip().startswith("<") else content
    if isinstance(content, list):
        parts = [b.get("text", "") for b in content
                 if isinstance(b, dict) and b.get("type") == "text"]
        joined = "\n".join(p for p in parts if p)
        return joined or None
    return None




def last_assistant(path: Path) -> str | None:
    """The assistant's last text in the transcript: what a prompt typed now answers."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        fh.seek(max(0, size - TAIL_BYTES))
        lines = fh.read().splitlines()
    for raw in reversed(lines):
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        if isinstance(rec, dict) and rec.get("type") == "assistant" and isinstance(
                rec.get("message"), dict):
            text = _text(rec["message"].get("content"))
            if text:
                return text[:MAX_FIELD]
    return None
