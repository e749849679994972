"""What every transcript reader yields, the protocol it follows, and the line streaming they share.

A reader turns one agent's JSONL transcript into ``Turn`` and ``FileEdit`` values. Transcripts are
append-only and may be read while the agent is still writing them, so reading is incremental: start at
a byte offset, stop before a line that has no newline yet, and report in ``ParseStats.end_offset``
where the next read should start. Agents change their formats without notice, so nothing here is
fatal: a line that is not a JSON object is counted and skipped, a record type nobody knows is counted
and skipped. Text is made storable as it is read: invalid UTF-8, lone surrogates and NULs become U+FFFD.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import IO, Any, Generic, Protocol, TypeVar

from lore.normalize import json_value

# Lore wraps the context it injects in this tag; such text is never learned from.
LORE_CONTEXT_MARKER = "<lore-context>"

INPUT_CHARS = 4000  # a tool input string longer than this is cut: inputs carry whole files (Write content)
RESULT_CHARS = 1000  # a tool result is kept as a short line: the full output is noise for learning
ELLIPSIS = "…"
# A line longer than this is skipped as malformed instead of being held in memory. Real lines reach a
# few MB (a pasted screenshot is base64 inside the line); a file with no newline at all must not be
# read whole.
MAX_LINE_BYTES = 64 * 1024 * 1024
_PEEK_BYTES = 1024 * 1024  # how much of a first line `first_record` reads to guess a file's agent


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str | None
    name: str
    input: dict[str, Any]  # as recorded, strings longer than INPUT_CHARS cut with "…"


@dataclass(frozen=True, slots=True)
class Turn:
    """One record of a conversation: a prompt, a reply, tool results, or metadata shown to the model."""

    uuid: str  # record uuid; for formats without uuids, "<session id>:<byte offset of the line>"
    parent_uuid: str | None
    session_id: str
    role: str  # "user" | "assistant" | "system" | "summary"
    text: str  # readable text, tool results as "[tool_result name] …" lines, never thinking
    tool_calls: tuple[ToolCall, ...] = ()
    timestamp: str | None = None  # ISO 8601 as recorded
    cwd: str | None = None
    git_branch: str | None = None
    is_sidechain: bool = False
    agent_id: str | None = None  # sub-agent id when the record belongs to a sub-agent
    is_meta: bool = False  # not typed by a person: caveats, command output, reminders, hook output
    injected: bool = False  # holds context Lore injected (LORE_CONTEXT_MARKER): never learn from it
    is_compact_summary: bool = False
    model: str | None = None
    version: str | None = None  # agent version (Claude Code "version", Codex "cli_version")


@dataclass(frozen=True, slots=True)
class FileEdit:
    session_id: str
    message_uuid: str  # the turn holding the tool call
    tool: str  # Edit | Write | MultiEdit | NotebookEdit | apply_patch …
    file_path: str
    old_text: str | None  # None: a new file, or not known
    new_text: str | None  # None: a deleted file, or not known
    timestamp: str | None = None
    succeeded: bool | None = None  # from the matching tool result; None when none was read


@dataclass(slots=True)
class ParseStats:
    """What one read saw. Use a fresh one per read: ``end_offset`` and ``partial_tail`` describe one file."""

    lines: int = 0
    records: int = 0  # lines that were JSON objects
    by_type: Counter[str] = field(default_factory=Counter)  # record types seen, known or not
    unknown_types: Counter[str] = field(default_factory=Counter)  # types the reader does not know: skipped
    malformed: int = 0  # lines that are not JSON objects: skipped
    partial_tail: bool = False  # the last line had no newline yet: not consumed (file still being written)
    end_offset: int = 0  # byte offset just after the last complete line consumed: where to resume


class TranscriptReader(Protocol):
    agent: str  # "claude-code", "codex"

    def matches(self, path: Path) -> bool:
        """A cheap check on the file name and first line: is this one of my transcripts?"""
        ...

    def read(self, path: Path, offset: int = 0, stats: ParseStats | None = None) -> Iterator[Turn | FileEdit]:
        """Stream the values of the complete lines from byte ``offset`` on, updating ``stats`` as it goes."""
        ...


def iter_records(path: Path, offset: int, stats: ParseStats) -> Iterator[tuple[int, dict[str, Any]]]:
    """(byte offset of the line, record) for each complete line from ``offset`` that is a JSON object.

    ``stats.end_offset`` already points past a line when its record is yielded, so a caller that stops
    after handling a record resumes after it.
    """
    stats.end_offset = offset
    with path.open("rb") as f:
        f.seek(offset)
        pos = offset
        while line := f.readline(MAX_LINE_BYTES):
            if not line.endswith(b"\n"):
                rest = _skip_line(f) if len(line) == MAX_LINE_BYTES else None
                if rest is None:  # no newline before the end of the file: the writer is mid-line
                    stats.partial_tail = True
                    return
                stats.lines += 1
                stats.malformed += 1
                pos += len(line) + rest
                stats.end_offset = pos
                continue
            start, pos = pos, pos + len(line)
            stats.lines += 1
            stats.end_offset = pos
            if not line.strip():
                continue
            record = _parse(line)
            if record is None:
                stats.malformed += 1
                continue
            stats.records += 1
            kind = record.get("type")
            stats.by_type[kind if isinstance(kind, str) else "<none>"] += 1
            yield start, record


def _skip_line(f: IO[bytes]) -> int | None:
    """Bytes up to and including the next newline, or None if the file ends first."""
    skipped = 0
    while chunk := f.readline(MAX_LINE_BYTES):
        skipped += len(chunk)
        if chunk.endswith(b"\n"):
            return skipped
    return None


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        # Invalid UTF-8, lone surrogates and NULs become U+FFFD: the rest of the line is kept.
        value = json_value(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def first_record(path: Path) -> dict[str, Any] | None:
    """The first line as a JSON object, reading at most about 1 MB; None if empty, unreadable or not JSON."""
    try:
        with path.open("rb") as f:
            line = f.readline(_PEEK_BYTES)
    except OSError:
        return None
    return _parse(line)


_ROLLOUT = re.compile(r"^rollout-.*?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.I)


def session_id_for(path: Path) -> str:
    """The session a transcript belongs to, from its path alone.

    Records usually carry their session id; this is the fallback for lines that do not (Claude Code
    ``summary`` lines, a Codex rollout read from the middle). ``<session>/subagents/agent-<id>.jsonl``
    belongs to ``<session>``; a Codex ``rollout-<time>-<uuid>.jsonl`` to ``<uuid>``. A 2.0.x
    ``agent-<id>.jsonl`` next to its session does not name the session, so its stem is returned.
    """
    if path.parent.name == "subagents" and path.name.startswith("agent-"):
        return path.parent.parent.name
    rollout = _ROLLOUT.match(path.stem)
    return rollout.group(1) if rollout else path.stem


def agent_id_for(path: Path) -> str | None:
    """The sub-agent id in an ``agent-<id>.jsonl`` file name, else None."""
    if path.suffix == ".jsonl" and path.stem.startswith("agent-"):
        return path.stem.removeprefix("agent-") or None
    return None


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def clip_strings(value: Any, limit: int = INPUT_CHARS) -> Any:
    """A copy of a JSON value with every string longer than ``limit`` cut."""
    if isinstance(value, str):
        return clip(value, limit)
    if isinstance(value, dict):
        return {k: clip_strings(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [clip_strings(v, limit) for v in value]
    return value


def has_marker(value: Any) -> bool:
    """Whether Lore's context marker occurs in any string inside a JSON value."""
    if isinstance(value, str):
        return LORE_CONTEXT_MARKER in value
    if isinstance(value, dict):
        return any(has_marker(v) for v in value.values())
    if isinstance(value, list):
        return any(has_marker(v) for v in value)
    return False


_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def readable(text: str) -> str:
    """Text without terminal escape codes: local-command and shell output are full of them."""
    return _ANSI.sub("", text) if "\x1b" in text else text


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def is_absolute(path: str) -> bool:
    return PurePosixPath(path).is_absolute() or PureWindowsPath(path).is_absolute()


K = TypeVar("K")
V = TypeVar("V")


class Recent(Generic[K, V]):
    """A dict that forgets its oldest entries beyond ``limit``: a huge transcript stays in bounded memory."""

    def __init__(self, limit: int = 10_000) -> None:
        self._items: dict[K, V] = {}
        self._limit = limit

    def put(self, key: K, value: V) -> tuple[K, V] | None:
        """Store ``value``; return the entry pushed out, if any, so the caller can still use it."""
        self._items.pop(key, None)
        self._items[key] = value
        if len(self._items) <= self._limit:
            return None
        oldest = next(iter(self._items))
        return oldest, self._items.pop(oldest)

    def get(self, key: K) -> V | None:
        return self._items.get(key)

    def pop(self, key: K) -> V | None:
        return self._items.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def drain(self) -> list[V]:
        values = list(self._items.values())
        self._items.clear()
        return values
