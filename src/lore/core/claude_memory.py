"""Claude Code's own auto memory as lessons waiting for review.

Every entry under ``~/.claude/projects/*/memory/`` (read by :mod:`lore.apply.automemory`,
which never writes there) becomes a proposed lesson with the file and its date as evidence.
An entry is imported once: the store remembers a hash of its project and text, so running
the import again (or after Claude Code added entries) adds only what is new, and an entry
the user rejected or deleted does not come back.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lore.apply.automemory import MemoryCandidate, read_auto_memory
from lore.core.lessons import Lessons
from lore.store import Store

# Claude Code's memory types onto Lore's kinds: feedback is how the user wants the agent to
# work (a preference), user is who they are and what they like, project and reference are facts.
KINDS = {"feedback": "preference", "user": "preference", "project": "learning",
         "reference": "learning", "unknown": "learning"}
TAG = "claude-memory"


@dataclass(slots=True)
class MemoryImport:
    added: list[dict[str, Any]] = field(default_factory=list)
    known: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"added": self.added, "known": self.known, "skipped": self.skipped}


def entry_key(c: MemoryCandidate) -> str:
    digest = hashlib.sha256(f"{c.project}\0{' '.join(c.text.split())}".encode()).hexdigest()
    return f"claude_memory:{digest[:32]}"


def fields_of(c: MemoryCandidate) -> dict[str, Any]:
    """The lesson an entry proposes: its description (else its first line) as the title."""
    first = c.text.strip().splitlines()[0] if c.text.strip() else c.name
    title = " ".join((c.description or first).split())
    if len(title) > 200:
        title = title[:200].rsplit(" ", 1)[0] + "…"
    content = c.text.strip()
    if c.why:
        content += f"\n\nWhy: {c.why}"
    observed = datetime.fromtimestamp(c.mtime, UTC).isoformat(timespec="seconds")
    return {
        "title": title, "content": content, "kind": KINDS.get(c.kind, "learning"),
        "status": "proposed", "source": "conversation",
        "source_notes": f"Claude Code auto memory ({c.kind}): {c.file}",
        "project": c.project or None, "tags": [TAG],
        "when_to_apply": c.how_to_apply or None,
        "evidence": [{"quote": c.text.strip()[:2000], "source": str(c.file),
                      "observed_at": observed}],
    }


def import_memory(store: Store, lessons: Lessons, claude_home: Path, *,
                  dry_run: bool = False) -> MemoryImport:
    scan = read_auto_memory(claude_home)
    report = MemoryImport(skipped=[{"file": str(s.file), "reason": s.reason} for s in scan.skipped])
    seen: set[str] = set()
    for c in scan.candidates:
        key = entry_key(c)
        if key in seen or store.meta(key) is not None:
            report.known += 1
            continue
        seen.add(key)
        data = fields_of(c)
        entry = {"title": data["title"], "kind": data["kind"], "project": data["project"],
                 "file": str(c.file)}
        if not dry_run:
            with store.atomic():  # the lesson and the note that it was imported, together
                lesson = lessons.add(**data)
                store.set_meta(key, lesson.id)
            entry["id"] = lesson.id
        report.added.append(entry)
    return report
