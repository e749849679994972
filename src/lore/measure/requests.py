"""Requests written to files for a model, or a person, to answer one file at a time
(``lore eval corrections --judge-prompts``, ``lore eval locomo --rerank-prompts``)."""

from __future__ import annotations

import re
from pathlib import Path

from lore.errors import InvalidInput
from lore.private import open_private, private_dir

REPLY_RULE = "the reply to <folder>/NAME.md is read from <replies>/NAME.md"


def request_folder(folder: Path) -> Path:
    """``folder``, which must be new or empty (stale requests would mix with the new ones);
    a new one is created 0700: a judge's requests quote the user's messages."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise InvalidInput(f"{folder} exists and is not an empty folder")
    return private_dir(folder)


def write_request(folder: Path, name: str, text: str) -> None:
    """One request file, created 0600 like every file Lore writes."""
    with open(open_private(folder / name), "w", encoding="utf-8") as fh:
        fh.write(text)


def file_stem(text: str, default: str) -> str:
    """``text`` as part of a request file's name: lower case, runs of other characters as one
    ``-``, at most 60 characters (``default`` when nothing is left)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or default
