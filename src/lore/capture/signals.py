"""The quick correction check: cheap enough for the Stop and prompt hooks (stdlib only).

Measured on the labelled development messages with `lore eval corrections`; the full
detector of the worker is the next step (docs/benchmarks.md).
"""

from __future__ import annotations

# Seed 002 / 004 patterns: a reply that rejects what was proposed and says what to do instead.
CORRECTION_PATTERNS = (
    r"^\s*no\b[,.!]?\s", r"^\s*nope\b", r"\bdon'?t\s+(use|do|add|put|make|write|call|create)\b",
    r"\binstead\s+of\b", r"\buse\s+[\w.\-/]+(\s+[\w.\-/]+)?\s+instead\b", r"\bnot\s+that\b",
    r"\bnever\s+(use|do|add|put|commit|push|write)\b", r"\bi\s+(prefer|want|said)\b",
    r"\bplease\s+(always|never|don'?t)\b", r"\bstop\s+(using|doing|adding)\b",
    r"\bwrong\b", r"\bthat'?s\s+not\s+(what|right|correct)\b", r"^\s*actually\b",
    r"\brather\s+than\b", r"\btoo\s+(verbose|complex|long|much)\b",
)
# "No bugs found", "no problem": a "no" that answers a question rather than rejecting a proposal.
NOT_CORRECTION_PATTERN = (
    r"^\s*no\s+(bugs?|errors?|issues?|problems?|worries|thanks|rush|need|changes?)\b|"
    r"^\s*no,?\s+(that'?s|it'?s)\s+(fine|good|ok|great|perfect)\b|"
    r"^\s*(perfect|great|thanks|thank you|looks good|lgtm)\b"
)


def looks_like_correction(text: str) -> bool:
    """The quick check on the Stop path; the worker and extraction look closer later."""
    import re  # only the Stop hooks pay for it

    t = text.strip()
    if not t or re.search(NOT_CORRECTION_PATTERN, t, re.IGNORECASE):
        return False
    return any(re.search(p, t, re.IGNORECASE) for p in CORRECTION_PATTERNS)
