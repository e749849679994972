"""Short excerpts of a lesson around the words of the query."""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)
_ESCAPED_BREAK = re.compile(r"\\[nrt]")  # a line break written as backslash-n (escaped JSON)
WIDTH = 160


def snippet(text: str, query: str, width: int = WIDTH) -> str:
    """About ``width`` characters of ``text`` on one line, starting near the first query word."""
    if text.count("\\n") >= 2:  # quoted JSON or code; a single one is likely a path
        text = _ESCAPED_BREAK.sub(" ", text)
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    terms = {w.lower() for w in _WORD.findall(query) if len(w) > 2}
    start = 0
    for m in _WORD.finditer(flat):
        word = m.group(0).lower()
        if any(word.startswith(t[:5]) or t.startswith(word[:5]) for t in terms if len(word) > 2):
            start = max(0, m.start() - width // 4)
            break
    if start:
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < m.start() else start
    end = start + width
    if end < len(flat):
        space = flat.rfind(" ", start, end)
        end = space if space > start + width // 2 else end
    out = flat[start:end].strip()
    return ("…" if start else "") + out + ("…" if end < len(flat) else "")
