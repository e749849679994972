"""Requests written to files for a model, or a person, to answer one file at a time
(``lore eval corrections --judge-prompts``, ``lore eval locomo --rerank-prompts``)."""

from __future__ import annotations

from pathlib import Path

from lore.errors import InvalidInput

REPLY_RULE = "the reply to <folder>/NAME.md is read from <replies>/NAME.md"


def request_folder(folder: Path) -> Path:
    """``folder``, which must be new or empty (stale requests would mix with the new ones)."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise InvalidInput(f"{folder} exists and is not an empty folder")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write_request(folder: Path, name: str, text: str) -> None:
    (folder / name).write_text(text, encoding="utf-8")
