"""A language model proposes checks for an approved rule (docs/apply.md, "Checks").

The rule's words go to the model with ``prompts/check.md``; the reply is a list of check fields
(command, path, content, tool, mode) with a reason. Nothing here decides: every proposal is
validated by the checks' own rules and waits for a person's review like the ones the shapes
propose, so a bad pattern is dropped and a bad idea is rejected at review.
"""

from __future__ import annotations

from typing import Any

from lore.errors import UnusableReply
from lore.llm.base import Provider, Request
from lore.llm.jsonreply import NoJSON, extract_json
from lore.llm.opinion import prompt
from lore.redact import redact

PURPOSE = "check"
MAX_TOKENS = 600
FIELDS = ("command", "path", "content", "tool")
MAX_CHECKS = 2


def rule_text(title: str, *, reasoning: str = "", preferred: str = "", rejected: str = "",
              file_types: tuple[str, ...] = (), content: str = "") -> str:
    """The rule as the model reads it: its line, what it rejects and prefers, why, its files."""
    parts = [f"rule: {title.strip()}"]
    for label, value in (("rejected", rejected), ("preferred", preferred), ("why", reasoning)):
        if value and value.strip():
            parts.append(f"{label}: {value.strip()}")
    if file_types:
        parts.append("file types: " + ", ".join(file_types))
    if content and content.strip() and content.strip() != title.strip():
        parts.append("details: " + " ".join(content.split())[:600])
    return "<rule>\n" + redact("\n".join(parts)) + "\n</rule>"


def request(text: str) -> Request:
    return Request.ask(text, system=prompt("check"), max_tokens=MAX_TOKENS, temperature=0.0,
                       purpose=PURPOSE)


def parse(reply: str) -> list[dict[str, Any]]:
    """The proposed checks of a reply: each {fields…, "mode", "why"}; raises UnusableReply
    when the reply holds no such object. Items that are not checks are skipped."""
    try:
        data = extract_json(reply)
    except NoJSON as exc:
        raise UnusableReply(f"the model's reply held no JSON object ({exc})") from None
    items = data.get("checks") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise UnusableReply("the model's reply has no 'checks' list")
    out: list[dict[str, Any]] = []
    for item in items[:MAX_CHECKS]:
        if not isinstance(item, dict):
            continue
        fields = {k: item[k] for k in FIELDS if isinstance(item.get(k), str) and item[k].strip()}
        if not fields:
            continue
        mode = item.get("mode") if item.get("mode") in ("remind", "block") else "remind"
        why = item.get("why")
        out.append({**fields, "mode": mode,
                    "why": " ".join(why.split())[:300] if isinstance(why, str) else ""})
    return out


def propose(provider: Provider, text: str) -> list[dict[str, Any]]:
    """Ask the model for checks on the rule ``text`` (from :func:`rule_text`)."""
    return parse(provider.complete(request(text)).text)
