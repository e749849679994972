"""Canonical forms of the free-text keys people type: tags, contexts, file types."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

_SPACES = re.compile(r"\s+")


def tag(value: str) -> str:
    """Lower case, trimmed, inner whitespace as single hyphens: "Code Review" -> "code-review"."""
    return _SPACES.sub("-", value.strip().lower())


def context(value: str) -> str:
    """Lower case with single spaces, so "Shared  Team branch" matches "shared team branch"."""
    return _SPACES.sub(" ", value.strip().lower())


def file_type(value: str) -> str:
    """Extension without dot or glob: "*.PY", ".py" and "py" are all "py"."""
    return value.strip().lower().lstrip("*").lstrip(".")


def tags(values: Iterable[str], aliases: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Normalised, alias-resolved, de-duplicated, in first-seen order."""
    aliases = aliases or {}
    out: dict[str, None] = {}
    for value in values:
        t = tag(value)
        if not t:
            continue
        seen: set[str] = set()
        while t in aliases and t not in seen:  # alias chains, never loops
            seen.add(t)
            t = aliases[t]
        out[t] = None
    return tuple(out)


def unique(values: Iterable[str], norm) -> tuple[str, ...]:
    out: dict[str, None] = {}
    for value in values:
        v = norm(value)
        if v:
            out[v] = None
    return tuple(out)
