"""Which reader understands a transcript file. Adding an agent is one module plus one entry in READERS."""

from __future__ import annotations

from pathlib import Path

from lore.capture.claude_code import ClaudeCodeReader
from lore.capture.codex import CodexReader
from lore.capture.transcripts import TranscriptReader

# Most specific first: Claude Code accepts any .jsonl whose first line it cannot rule out, so it goes last.
READERS: list[TranscriptReader] = [CodexReader(), ClaudeCodeReader()]


def reader_for(path: Path) -> TranscriptReader | None:
    """The first reader that recognises ``path``, or None."""
    return next((reader for reader in READERS if reader.matches(path)), None)
