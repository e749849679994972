"""Lore's own model calls, told apart from the user's sessions so that Lore never learns from them.

A `claude -p` call is a Claude Code session: Claude Code may write its transcript under
``~/.claude/projects/<folder named after the working directory>/``. Lore runs the call with
``--no-session-persistence`` (no transcript at all) in a folder of its own,
``$LORE_HOME/`` :data:`CALL_FOLDER`, so a Claude Code that writes one anyway files it under a
project folder whose name ends in :data:`CALL_FOLDER`. Calls made before that ran in the
system's temporary folder: their one user message opens with one of :data:`OPENINGS`, the
first words of every request Lore builds. Transcript import, the learning backfill and the
worker skip such transcripts, and the next import removes sessions already imported from them.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path

CALL_FOLDER = "lore-model-calls"
# The first words of the user part of every request Lore builds (judge, second opinion,
# session learnings, the four analysis stages, checks, re-ranking, `lore llm check`).
OPENINGS = ("<messages>", "<known_rules>", "<transcript>", "<files>", "<changes>", "<what>",
            "<assistant_turn>", "<rule>", "<query>", "Reply with the single word: ok")
HEAD_BYTES = 64 << 10  # of a transcript read to find its first prompt


def call_folder(home: Path) -> Path:
    """Where Lore runs `claude -p`: a folder of its home, made private when missing."""
    from lore.private import private_dir

    folder = home / CALL_FOLDER
    private_dir(folder)
    return folder


def project_folder_name(cwd: str | Path) -> str:
    """The folder Claude Code files a working directory's transcripts under (every character
    that is not a letter or a digit becomes ``-``)."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


def temp_folders() -> set[str]:
    temp = tempfile.gettempdir()
    names = {temp}
    try:
        names.add(str(Path(temp).resolve()))
    except OSError:
        pass
    return names


def is_lore_prompt(text: str) -> bool:
    """Whether ``text`` (a session's first prompt) is a request Lore built."""
    return text.lstrip().startswith(OPENINGS)


def own_session(cwd: str | None, first_prompt: str | None) -> bool:
    """Whether a session that ran in ``cwd`` and began with ``first_prompt`` is one of Lore's
    own model calls: run in its call folder, or in the temporary folder with Lore's prompt."""
    if not cwd:
        return False
    if Path(cwd).name == CALL_FOLDER:
        return True
    return cwd.rstrip("/") in temp_folders() and first_prompt is not None and is_lore_prompt(first_prompt)


def _own_folder(folder: str) -> bool | None:
    """True: a project folder only Lore's calls use; None: the temporary folder's (look at the
    prompt); False: anyone else's."""
    if folder.endswith(project_folder_name(CALL_FOLDER)):
        return True
    if folder in {project_folder_name(t) for t in temp_folders()}:
        return None
    return False


def own_transcript(path: Path) -> bool:
    """Whether the Claude Code transcript ``path`` records one of Lore's own model calls: its
    project folder is Lore's call folder, or the temporary folder and its first prompt is
    Lore's. Other files are not read."""
    kind = _own_folder(path.parent.name)
    if kind is not None:
        return kind
    cwd, prompt = _first_prompt(path)
    return own_session(cwd, prompt)


def _first_prompt(path: Path) -> tuple[str | None, str | None]:
    """The working directory and text of the first user record in the transcript's head."""
    try:
        with path.open("rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError:
        return None, None
    for line in head.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get("type") != "user":
            continue
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        return (record.get("cwd") if isinstance(record.get("cwd"), str) else None,
                _text(content))
    return None, None


def _text(content: object) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: Iterable[object] = (b.get("text") for b in content if isinstance(b, dict))
        return "".join(p for p in parts if isinstance(p, str))
    return None
