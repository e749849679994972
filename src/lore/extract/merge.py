"""Does a new rule restate a known one, contradict it, or say the user changed their mind?"""

from __future__ import annotations

import re
from typing import Any

from lore.extract.shapes import Extracted

CHANGE_OF_MIND = re.compile(
    r"\b(?:from\s+now\s+on|going\s+forward|from\s+here\s+on|actually|instead|any\s*more|no\s+longer|"
    r"changed\s+my\s+mind|switch(?:ed)?\s+to|moved\s+to|migrated\s+to|we\s+now\s+use|these\s+days)\b",
    re.IGNORECASE)
_FILLER = frozenset("the a an to of for in on with use using uses used our my your this that it "
                    "please always never instead rather than not no just".split())


def phrase_tokens(text: str | None) -> tuple[str, ...]:
    words = re.findall(r"[a-z0-9@#+./_-]+", (text or "").lower())
    return tuple(w.strip("./-") for w in words if w.strip("./-") and w not in _FILLER)


def same_phrase(a: str | None, b: str | None) -> bool:
    """Two short phrases name the same thing ("Redis" / "a Redis cache")."""
    ta, tb = phrase_tokens(a), phrase_tokens(b)
    if not ta or not tb:
        return False
    sa, sb = set(ta), set(tb)
    if sa <= sb or sb <= sa:
        return True
    return len(sa & sb) / len(sa | sb) >= 0.6


def contradicts(ex: Extracted, c: dict[str, Any]) -> bool:
    """The new rule prefers what the known one rejects, or rejects what it prefers."""
    crossed = (same_phrase(ex.preferred, c["pref_rejected"])
               or same_phrase(ex.rejected, c["pref_preferred"]))
    agrees = same_phrase(ex.preferred, c["pref_preferred"]) or same_phrase(ex.rejected,
                                                                           c["pref_rejected"])
    return crossed and not agrees


def same_rule(ex: Extracted, c: dict[str, Any]) -> bool:
    """Both name what to use (and agree on it), or both name what to avoid (and agree)."""
    pref_ok = same_phrase(ex.preferred, c["pref_preferred"])
    rej_ok = same_phrase(ex.rejected, c["pref_rejected"])
    if ex.preferred and c["pref_preferred"] and pref_ok:
        return not (ex.rejected and c["pref_rejected"]) or rej_ok
    if ex.rejected and c["pref_rejected"] and rej_ok:
        return not (ex.preferred and c["pref_preferred"])
    return False
