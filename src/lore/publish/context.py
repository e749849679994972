"""The context printed at SessionStart: what Lore knows that applies here, as plain facts.

Order: this project's and the user's active preferences and rules, then corrections
recorded in earlier sessions of this project, then other lessons. Everything fits a
character budget (Claude Code caps hook context at 10,000 characters); a last line says
how many items were left out and how to see them. Nothing is printed when there is
nothing to say. Ranking uses what the database holds: no model on this path.
"""

from __future__ import annotations

import json
from typing import Any

from lore.capture.transcripts import LORE_CONTEXT_MARKER
from lore.store import context as queries

CLOSE = LORE_CONTEXT_MARKER.replace("<", "</")
HARD_LIMIT = 10_000


def build(conn: Any, project: str | None, max_chars: int = 4000, max_items: int = 60) -> str:
    max_chars = min(max_chars, HARD_LIMIT)
    sections = [
        ("Preferences and rules (follow them unless the user says otherwise):",
         [_rule(r) for r in queries.rules_and_preferences(conn, project, max_items)]),
        ("Corrections the user made in earlier sessions of this project:",
         [_correction(c) for c in _safe_corrections(conn, project, max_items)]),
        ("Lessons learned here before:",
         [f"- {r['title']}" for r in queries.other_lessons(conn, project, max_items)]),
    ]
    total = sum(len(items) for _, items in sections)
    if total == 0:
        return ""
    head = f"{LORE_CONTEXT_MARKER}\nWhat Lore remembers for this project:\n"
    tail_reserve = 160 + len(CLOSE)
    out = [head]
    used = len(head)
    shown = 0
    for title, items in sections:
        section: list[str] = []
        for item in items:
            extra = len(item) + 1 + (len(title) + 2 if not section else 0)
            if used + extra > max_chars - tail_reserve:
                break
            section.append(item)
            used += extra
        if section:
            out.append(f"\n{title}\n" + "\n".join(section) + "\n")
            shown += len(section)
    left = total - shown
    if left:
        out.append(f"\n{left} more item(s) not shown: search them with the MCP tool lore_search "
                   "or `lore recall search QUERY --project .`\n")
    out.append(CLOSE)
    return "".join(out)


def _rule(r: dict[str, Any]) -> str:
    if r["pref_preferred"]:
        where = f"{r['pref_context']}: " if r["pref_context"] else ""
        text = f"- {where}use {r['pref_preferred']}"
        if r["pref_rejected"]:
            text += f", not {r['pref_rejected']}"
        if r["pref_reasoning"]:
            text += f" ({r['pref_reasoning']})"
        return text + "."
    body = " ".join((r["content"] or "").split())
    return f"- {r['title']}" + (f": {body[:300]}" if body else "")


def _correction(c: dict[str, Any]) -> str:
    said = " ".join(c["user_message"].split())[:300]
    text = f'- The user said: "{said}"'
    if c["assistant_proposal"]:
        proposal = " ".join(c["assistant_proposal"].split())[:160]
        text += f' (in reply to: "{proposal}")'
    files = json.loads(c["files"] or "[]")
    if files:
        text += f" [files: {', '.join(files[:3])}]"
    return text


def _safe_corrections(conn: Any, project: str | None, limit: int) -> list[dict[str, Any]]:
    try:
        return queries.recent_corrections(conn, project, limit)
    except Exception:  # noqa: BLE001 - a database from before corrections existed
        return []
