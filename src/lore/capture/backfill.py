"""Past transcripts as corrections to learn from: each message the user typed, with the agent
turn it answers (what ``lore ingest --learn`` feeds the learning pipeline).

Only words a person typed count: tool results, meta records (caveats, command output,
reminders), compaction summaries, sub-agent chatter and Lore's own injected context are left
out. The previous turn is the agent's last text before the message in the same session.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from lore.capture.ingest import discover
from lore.capture.transcripts import FileEdit, Turn

TOOL_RESULT = "[tool_result "


@dataclass(frozen=True, slots=True)
class PastMessage:
    uuid: str
    session_id: str
    text: str
    previous: str | None     # the agent turn it answers
    project: str | None      # the session's working folder
    at: str | None
    files: tuple[str, ...]   # files the agent edited in the turn it answers


def typed(turn: Turn) -> bool:
    """A message a person typed to the agent."""
    if turn.role != "user" or turn.is_meta or turn.injected or turn.is_sidechain \
            or turn.is_compact_summary or turn.agent_id:
        return False
    lines = [ln for ln in turn.text.splitlines() if ln.strip()]
    return bool(lines) and not any(ln.startswith(TOOL_RESULT) for ln in lines)


def transcripts(paths: Sequence[Path]) -> tuple[list[Path], list[tuple[str, str]]]:
    """The transcript files under ``paths`` (and what could not be used)."""
    return discover(paths)


def read(path: Path) -> Iterator[PastMessage]:
    """The typed messages of one transcript, oldest first ([] for a format Lore cannot read)."""
    from lore.capture.readers import reader_for

    reader = reader_for(path)
    if reader is None:
        return
    last_reply: dict[str, str] = {}
    edited: dict[str, list[str]] = {}
    for item in reader.read(path):
        if isinstance(item, FileEdit):
            files = edited.setdefault(item.session_id, [])
            if item.file_path not in files:
                files.append(item.file_path)
            continue
        if item.role == "assistant" and item.text.strip() and not item.is_sidechain:
            last_reply[item.session_id] = item.text
        elif typed(item):
            yield PastMessage(item.uuid, item.session_id, item.text,
                              last_reply.get(item.session_id), item.cwd, item.timestamp,
                              tuple(edited.pop(item.session_id, [])[-5:]))
