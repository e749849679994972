"""Read Claude Code's auto memory, as candidates for Lore's review queue. Read-only.

Claude Code keeps one folder per project, ``~/.claude/projects/<key>/memory/``, where
``<key>`` is the project's path (its git root) with every character that is not a letter or
digit turned into "-". ``MEMORY.md`` is an index, one line per memory
(``- [Title](file.md) — hook``), and each topic file holds one fact under YAML frontmatter::

    ---
    name: short-kebab-case-slug
    description: one-line summary
    metadata:
      type: user | feedback | project | reference
    ---
    The fact. For feedback and project: **Why:** … and **How to apply:** … lines.

Versions up to 2.1.120 wrote ``type:`` at the top level; both layouts are read. Index lines
that are not links (Claude sometimes writes a fact straight into MEMORY.md) are candidates
too. A file that cannot be read is skipped with the reason; nothing is ever written.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from lore.apply.blocks import FRONTMATTER

KINDS = ("user", "feedback", "project", "reference")
MAX_FILE_BYTES = 256 * 1024  # a memory is one fact; anything larger is not one
_INDEX_LINK = re.compile(r"^\s*[-*+]\s*\[[^\]]*\]\([^)\s]+\)")  # - [Title](file.md) — hook
_BULLET = re.compile(r"^\s*[-*+]\s+")
_LABEL = re.compile(r"^\s*\*\*(?P<label>why|how to apply):\*\*\s*(?P<text>.*)$", re.I)


@dataclass(frozen=True, slots=True)
class MemoryCandidate:
    """One auto-memory entry, for review."""

    text: str  # the fact, without the Why / How to apply lines
    kind: str  # user, feedback, project, reference; "unknown" without a type
    project: str  # the project's path, decoded from the folder name
    file: Path
    mtime: float
    name: str = ""
    description: str = ""
    why: str = ""
    how_to_apply: str = ""
    source: str = "topic"  # "topic" file or "index" line written straight into MEMORY.md


@dataclass(frozen=True, slots=True)
class Skipped:
    file: Path
    reason: str


@dataclass(frozen=True, slots=True)
class MemoryScan:
    candidates: tuple[MemoryCandidate, ...]
    skipped: tuple[Skipped, ...]


def read_auto_memory(claude_home: Path) -> MemoryScan:
    """Every auto-memory entry under ``claude_home/projects/*/memory/`` (``claude_home`` is
    ``~/.claude`` or ``$CLAUDE_CONFIG_DIR``)."""
    candidates: list[MemoryCandidate] = []
    skipped: list[Skipped] = []
    projects = claude_home / "projects"
    if not projects.is_dir():
        return MemoryScan((), ())
    for folder in sorted(p for p in projects.iterdir() if (p / "memory").is_dir()):
        project = project_path(folder)
        memory = folder / "memory"
        for path in sorted(memory.glob("*.md")):
            if path.name == "MEMORY.md":
                _read_index(path, project, candidates, skipped)
            else:
                _read_topic(path, project, candidates, skipped)
    return MemoryScan(tuple(candidates), tuple(skipped))


def encode(path: str) -> str:
    """The folder name Claude Code uses for a project path."""
    return re.sub(r"[^A-Za-z0-9]", "-", path)


def project_path(folder: Path) -> str:
    """The project path behind a ``projects/<key>`` folder.

    The key loses every "/", "." and "-" alike, so it is read back from what can be checked:
    a transcript in the folder whose ``cwd`` encodes to the key, then a path on this disk
    that encodes to it, and only then the key with each "-" read as "/".
    """
    key = folder.name
    for transcript in sorted(folder.glob("*.jsonl"))[:20]:
        cwd = _transcript_cwd(transcript)
        if cwd and encode(cwd) == key:
            return cwd
    found = _on_disk(key)
    return found if found is not None else key.replace("-", "/")


def _transcript_cwd(path: Path) -> str | None:
    try:
        with path.open("r", encoding="utf-8", errors="replace") as f:
            for _, line in zip(range(50), f, strict=False):
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict) and isinstance(record.get("cwd"), str):
                    return record["cwd"]
    except OSError:
        return None
    return None


def _on_disk(key: str) -> str | None:
    """An existing path that encodes to ``key``: each "-" is a "/" or one of "-", ".", "_",
    " "; only names that some entry of the folder starts with are followed."""
    if not key.startswith("-"):
        return None
    pieces = key[1:].split("-")
    listings: dict[str, list[str]] = {}

    def names(folder: str) -> list[str]:
        if folder not in listings:
            try:
                listings[folder] = os.listdir(folder)
            except OSError:
                listings[folder] = []
        return listings[folder]

    def walk(folder: str, i: int, current: str) -> str | None:
        if not any(n.startswith(current) for n in names(folder)):
            return None
        path = os.path.join(folder, current)
        if i == len(pieces):
            return path if current in names(folder) else None
        if current in names(folder) and os.path.isdir(path):
            found = walk(path, i + 1, pieces[i])
            if found:
                return found
        for joiner in ("-", ".", "_", " "):
            found = walk(folder, i + 1, current + joiner + pieces[i])
            if found:
                return found
        return None

    return walk("/", 1, pieces[0])


def _read_text(path: Path, skipped: list[Skipped]) -> tuple[str, float] | None:
    try:
        st = path.stat()
        if st.st_size > MAX_FILE_BYTES:
            skipped.append(Skipped(path, f"{st.st_size} bytes, larger than a memory entry"))
            return None
        return path.read_bytes().decode("utf-8"), st.st_mtime
    except UnicodeDecodeError:
        skipped.append(Skipped(path, "not UTF-8 text"))
    except OSError as e:
        skipped.append(Skipped(path, f"unreadable ({e.strerror or e})"))
    return None


def _read_topic(path: Path, project: str, out: list[MemoryCandidate],
                skipped: list[Skipped]) -> None:
    read = _read_text(path, skipped)
    if read is None:
        return
    text, mtime = read
    text = text.removeprefix("\ufeff")
    front: object = {}
    body = text
    m = FRONTMATTER.match(text)
    if m:
        try:
            front = yaml.safe_load(m.group(1)) or {}
        except yaml.YAMLError as e:
            skipped.append(Skipped(path, f"frontmatter is not valid YAML ({str(e).splitlines()[0]})"))
            return
        body = text[m.end():]
    elif text.startswith("---"):
        skipped.append(Skipped(path, "frontmatter is not closed by a '---' line"))
        return
    if not isinstance(front, dict):
        skipped.append(Skipped(path, "frontmatter is not a mapping"))
        return
    fact, why, how = _split_labels(body)
    if not fact and not how:
        skipped.append(Skipped(path, "no text after the frontmatter"))
        return
    out.append(MemoryCandidate(
        text=fact or how, kind=_kind(front), project=project, file=path, mtime=mtime,
        name=_text(front.get("name")), description=_text(front.get("description")), why=why,
        how_to_apply=how))


def _kind(front: dict) -> str:
    meta = front.get("metadata")
    kind = meta.get("type") if isinstance(meta, dict) and meta.get("type") else front.get("type")
    kind = _text(kind).strip().lower()
    return kind if kind else "unknown"


def _split_labels(body: str) -> tuple[str, str, str]:
    """The fact, and the **Why:** and **How to apply:** parts of a feedback or project entry."""
    parts: dict[str, list[str]] = {"fact": [], "why": [], "how to apply": []}
    current = parts["fact"]
    for line in body.splitlines():
        m = _LABEL.match(line)
        if m:
            current = parts[m.group("label").lower()]
            line = m.group("text")
        current.append(line)
    fact, why, how = (" ".join(" ".join(p).split()) for p in parts.values())
    return fact, why, how


def _read_index(path: Path, project: str, out: list[MemoryCandidate],
                skipped: list[Skipped]) -> None:
    """Facts written straight into MEMORY.md; link lines only point at topic files."""
    read = _read_text(path, skipped)
    if read is None:
        return
    text, mtime = read
    for line in text.removeprefix("\ufeff").splitlines():
        if not line.strip() or line.lstrip().startswith(("#", ">")) or _INDEX_LINK.match(line):
            continue
        fact = _BULLET.sub("", line).strip()
        if fact:
            out.append(MemoryCandidate(text=fact, kind="unknown", project=project, file=path,
                                       mtime=mtime, source="index"))


def _text(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)
