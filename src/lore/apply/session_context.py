"""The context printed at SessionStart: what Lore knows that applies here, as plain facts.

Order: this project's and the user's active preferences and rules, then the ones learned
from corrections but not confirmed yet (marked so; only those seen at least
``learning.inject_proposed_min_seen`` times), then other lessons. A rule that a file Claude
Code reads at start-up already states (the block ``lore apply`` wrote in CLAUDE.md,
CLAUDE.local.md, ``.claude/rules`` or ``~/.claude/CLAUDE.md``, or a line of the user's own) is
not repeated: each rule reaches the agent once. A rule is told as the rule and its reason,
never with the agent turn it corrected. A lesson an active lesson supersedes is left out.
Only the user's own words steer the agent (:mod:`lore.extract.steer`): a learned rule that
nobody approved is told only when all its evidence is text the user typed and it asks the
agent to run, fetch or send nothing; and no text of a lesson can close or open the
``<lore-context>`` wrapper (its bracket becomes a look-alike).
Everything fits a character budget (Claude Code caps hook context at 10,000 characters); a
last line says how many items were left out and how to see them. Nothing is printed when
there is nothing to say. Ranking uses what the database holds: no model on this path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lore.capture.transcripts import LORE_CONTEXT_MARKER
from lore.extract.steer import held, neutral
from lore.normalize import clip_words, project_root
from lore.store import SessionStore
from lore.store.rows import ContextRule
from lore.tuning import Bench, constant

CLOSE = LORE_CONTEXT_MARKER.replace("<", "</")
HARD_LIMIT = 10_000


@dataclass(frozen=True)
class ContextTuning:
    """What SessionStart tells, beyond the settings ``context.max_chars|max_items`` (lore.tuning).
    Not chosen by a benchmark (docs/learning.md, The lifecycle and its gates)."""

    # a proposed (unreviewed) rule is told once learned this many times; active rules always are
    inject_proposed_min_seen: int = constant(
        2, ge=1, by=Bench("", "docs/learning.md#The lifecycle and its gates"))


CONTEXT = ContextTuning()


@dataclass(frozen=True, slots=True)
class Built:
    """The context and what went into it: the lessons shown and those the budget left out."""

    text: str
    shown: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    dropped_chars: int = 0
    in_files: tuple[str, ...] = ()  # rules left out because a file the agent reads states them

    def record(self) -> dict[str, Any]:
        """What the hook passes on for ``lore context`` (ids and sizes, no text)."""
        return {"shown": list(self.shown), "dropped": list(self.dropped),
                "chars": len(self.text), "dropped_chars": self.dropped_chars,
                "in_files": list(self.in_files)}


def from_file(db: Path | str, project: str | None, max_chars: int, max_items: int,
              proposed_min_seen: int = CONTEXT.inject_proposed_min_seen, user: str | None = None) -> Built:
    """The context straight from the database (a file or a server URL), for the SessionStart
    hook: the tables only, no migration, no model, no numpy (the hook runs on the agent's
    critical path). ``user``: whose personal lessons are told."""
    from lore.store import session_reader

    project = project_root(project)
    carried = carried_lines(project, Path.home())
    with session_reader(db, user) as queries:
        return build_report(queries, project, max_chars, max_items, proposed_min_seen, carried)


def build(queries: SessionStore, project: str | None, max_chars: int = 4000,
          max_items: int = 60, proposed_min_seen: int = CONTEXT.inject_proposed_min_seen,
          carried: Collection[str] = ()) -> str:
    return build_report(queries, project, max_chars, max_items, proposed_min_seen,
                        carried).text


def build_report(queries: SessionStore, project: str | None, max_chars: int = 4000,
                 max_items: int = 60, proposed_min_seen: int = CONTEXT.inject_proposed_min_seen,
                 carried: Collection[str] = ()) -> Built:
    """Approved rules first, then unconfirmed ones, then other lessons; whole lines only,
    so nothing is cut mid-word; a last line says what was left out and how to search it.
    ``proposed_min_seen``: a proposed rule is told only once learned that many times
    (``learning.inject_proposed_min_seen``); active ones always are. ``carried``: the
    normalised lines of the files the agent reads anyway (``carried_lines``): a rule among
    them is not told again."""
    max_chars = min(max_chars, HARD_LIMIT)
    project = project_root(project)  # a session in a repository's subfolder: the repository's
    active = steering(queries.rules_and_preferences(project, max_items * 3), max_items)
    in_files = tuple(r["id"] for r in active if rule_line(r) in carried)
    sections = [
        ("Preferences and rules (follow them unless the user says otherwise):",
         [(r["id"], _rule(r)) for r in active if r["id"] not in in_files]),
        ("Learned from the user's corrections, not confirmed yet (follow unless told otherwise):",
         [(r["id"], _rule(r, unconfirmed=True))
          for r in steering(queries.rules_and_preferences(project, max_items * 3, "proposed",
                                                           proposed_min_seen), max_items)]),
        ("Lessons learned here before:",
         [(r["id"], neutral(f"- {r['title']}")) for r in queries.other_lessons(project, max_items)]),
    ]
    total = sum(len(items) for _, items in sections)
    if total == 0:
        return Built("", in_files=in_files)
    head = f"{LORE_CONTEXT_MARKER}\nWhat Lore remembers for this project:\n"
    tail_reserve = 160 + len(CLOSE)
    out = [head]
    used = len(head)
    shown: list[str] = []
    dropped: list[str] = []
    dropped_chars = 0
    for title, items in sections:
        section: list[str] = []
        full = False
        for lesson_id, item in items:
            extra = len(item) + 1 + (len(title) + 2 if not section else 0)
            if full or used + extra > max_chars - tail_reserve:
                full = True  # later items go too: the order is the ranking
                dropped.append(lesson_id)
                dropped_chars += len(item) + 1
                continue
            section.append(item)
            shown.append(lesson_id)
            used += extra
        if section:
            out.append(f"\n{title}\n" + "\n".join(section) + "\n")
    if dropped:
        out.append(f"\n{len(dropped)} more item(s) not shown ({dropped_chars} characters): "
                   "search them with the MCP tool lore_search "
                   "or `lore search QUERY --project .`\n")
    else:
        out.append("\nNothing was left out; search past work with the MCP tool lore_search "
                   "or `lore search QUERY --project .`\n")
    out.append(CLOSE)
    return Built("".join(out), tuple(shown), tuple(dropped), dropped_chars, in_files)


def steering(rows: list[ContextRule], limit: int) -> list[ContextRule]:
    """The rows that may reach the agent (:func:`lore.extract.steer.held`), at most ``limit``."""
    out = []
    for r in rows:
        raw = r.get("learning")
        try:
            meta = json.loads(raw) if raw else None
        except ValueError:
            meta = {}  # unreadable: nothing says a person decided or the user typed it
        if meta is not None and not isinstance(meta, dict):
            meta = {}
        if not held(meta, " ".join((r["title"] or "", r["content"] or "",
                                    r["pref_preferred"] or ""))):
            out.append(r)
    return out[:limit]


def _rule(r: ContextRule, unconfirmed: bool = False) -> str:
    """The rule and why: never the agent turn it corrected (``pref_context``), which would
    read as an instruction; no text of it can open or close the wrapper."""
    return neutral(_line(r, unconfirmed))


def _line(r: ContextRule, unconfirmed: bool) -> str:
    mark = " (unconfirmed)" if unconfirmed else ""
    body = " ".join((r["content"] or "").split())
    if r["pref_preferred"] and r["pref_rejected"]:
        text = f"- {r['title']}{mark}"
        if r["pref_reasoning"]:
            text += f" (why: {clip_words(r['pref_reasoning'], 160)})"
        return text
    if body and body.rstrip(".").lower() != r["title"].rstrip(".").lower():
        return f"- {r['title']}{mark}: {clip_words(body, 300)}"
    return f"- {r['title']}{mark}"


def rule_line(r: ContextRule) -> str:
    """A stored rule as ``lore apply`` writes its line, normalised for comparing."""
    from lore.apply.rules import AppliedRule, normalise, phrase

    return normalise(phrase(AppliedRule(
        id=r["id"], text=" ".join((r["title"] or r["content"] or "").split()),
        preferred=r["pref_preferred"] or "", rejected=r["pref_rejected"] or "")))


# "In `**/*.py` files: use …": how a file read for every file says which files a rule is for.
_FOR_FILES = re.compile(r"^\s*(?:[-*+]\s+)?In `[^\n]*?` files:\s*", re.I)
_MAX_READ = 1 << 20


def carried_lines(project: str | None, home: Path | None) -> frozenset[str]:
    """The normalised lines of the instruction files Claude Code loads for a session in
    ``project``: its CLAUDE.md and CLAUDE.local.md, its ``.claude/rules/*.md`` and the user's
    ``~/.claude/CLAUDE.md``. Unreadable or oversized files count as empty (the rule is told)."""
    from lore.apply.rules import normalise, without_reason

    paths: list[Path] = []
    if home is not None:
        paths.append(home / ".claude" / "CLAUDE.md")
    if project and Path(project).is_absolute():
        root = Path(project)
        paths += [root / "CLAUDE.md", root / "CLAUDE.local.md", root / ".claude" / "CLAUDE.md"]
        try:
            paths += sorted((root / ".claude" / "rules").glob("*.md"))
        except OSError:
            pass
    out: set[str] = set()
    for path in paths:
        try:
            if not path.is_file() or path.stat().st_size > _MAX_READ:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            line = _FOR_FILES.sub("", line)
            if norm := normalise(line):
                out.add(norm)
            if bare := normalise(without_reason(line)):  # a rule line written with its reason
                out.add(bare)
    return frozenset(out)
