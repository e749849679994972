"""Canonical forms of the free-text keys people type (tags, contexts, file types), and text made
storable: what arrives from outside (transcripts, hook payloads, import lines, MCP arguments) may
hold lone UTF-16 surrogates, NULs or invalid UTF-8, which UTF-8 and SQLite cannot hold.

Standard library only: the hooks use it.
"""

from __future__ import annotations

import json
import re

from lore.projects import project_root  # noqa: F401 - where every face finds it

TYPE_CHECKING = False  # typing itself is not imported: the hooks pay for every import
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

REPLACEMENT = "\ufffd"
# A lone surrogate (JavaScript writes one when it cuts a string inside an emoji; a JSON "\ud83d"
# escape decodes to it) cannot be encoded as UTF-8; a NUL cuts C strings short.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# The escapes that can decode to an unstorable character (NUL, a surrogate); \u2192 and the
# like, common in tool output, cannot, so their texts skip the walk over every string.
_RISKY_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")


def _risky(text: str, decoded: bool) -> bool:
    """Whether ``text`` may hold an unstorable character once parsed. Substring tests and a
    regular expression with a literal start run at C speed; one expression with a character
    class in front went character by character (a third of an import's time)."""
    if "\x00" in text or ("\\u" in text and _RISKY_ESCAPE.search(text)):
        return True
    if decoded or text.isascii():  # bytes decoded with "replace" hold no lone surrogate
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


_SPACES = re.compile(r"\s+")


def clip_words(text: str, limit: int) -> str:
    """At most ``limit`` characters on one line, cut at a space (never inside a word), with
    "…" when cut."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    cut = head.rsplit(" ", 1)[0] if " " in head else head
    return cut.rstrip(",;:") + "…"


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


def storable(text: str) -> str:
    """``text`` with each lone surrogate and NUL replaced by U+FFFD; everything else kept."""
    return _UNSTORABLE.sub(REPLACEMENT, text) if _UNSTORABLE.search(text) else text


def storable_json(value: Any) -> Any:
    """A JSON value with every string in it, keys included, made ``storable``."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, dict):
        return {storable(k) if isinstance(k, str) else k: storable_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [storable_json(v) for v in value]
    return value


def json_value(raw: str | bytes) -> Any:
    """Parse one JSON text into storable values: invalid UTF-8 bytes become U+FFFD, raw control
    characters inside strings are accepted, lone surrogates and NULs become U+FFFD.

    Raises ValueError for anything that is not JSON, including nesting too deep to parse.
    """
    decoded = isinstance(raw, bytes)
    text = raw.decode("utf-8-sig", "replace") if isinstance(raw, bytes) else raw
    try:
        value = json.loads(text, strict=False)
        if _risky(text, decoded):  # one pass over the line, not one per string in it
            value = storable_json(value)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    return value


def date_words(stamp: str | None) -> str:
    """'2023-05-08T13:56:00Z' -> '8 May, 2023': questions say dates the way people do."""
    if not stamp:
        return ""
    from lore.ids import parse_time

    try:
        d = parse_time(stamp)
    except ValueError:
        return ""
    return f"{d.day} {d.strftime('%B')}, {d.year}"
