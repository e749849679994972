"""The hooks' pre-filter: could this user message be a correction or a preference?

One regular expression of the words every teaching cue of the full detector
(:mod:`lore.extract.detect`) is built on — "no", "not", "don't", "instead", "always",
"never", "rule", "you didn't" … It over-fires on purpose (about two messages in three pass)
and costs well under a millisecond, so the Stop and prompt hooks stay within their budget;
the worker's detector decides. The detector runs the same pre-filter first, so whatever it
would catch, the hook has queued (`lore eval corrections --detector prefilter` measures it).
"""

from __future__ import annotations

PREFILTER = (
    r"n't\b|\b(?:no+|nope|nah|not|dont|doesnt|didnt|isnt|shouldnt|wont|cant|never|always|"
    r"instead|rather|actually|wait|hold\s+on|hm+|ugh+|oops|stop|quit|avoid|wrong|incorrect|"
    r"untrue|undo|revert|roll\s*back|put\s+\w+\s+back|go\s+back|restore|back\s+out|rid|"
    r"regress\w*|broke|broken|messed|work(?:ing|ed)?|too|overkill|over-?\w+|redo|re-do|scratch|"
    r"start\s+over|careful\w*|yourself|how\s+about\s+you|missed|forgot|left\s+out|already|"
    r"from\s+now|going\s+forward|future|next\s+time|every\s*time|each\s+time|whenever|default|"
    r"rules?|general|at\s+all\s+times|prefer\w*|hate|like|want|important|essential|crucial|"
    r"remember|mem\w*|claude\.md|agents\.md|cursorrules|mdc|convention|guideline|must|should|"
    r"needs?|has\s+to|have\s+to|unnecessary|why|said|told|asked|meant|thought|remind\w*|"
    r"specified|stated|described|according|you(?:'re|\s+are|'ve|\s+have|\s+just)?\s+\w+ed|"
    r"you(?:'re|\s+are)\s+\w+ing|you\s+(?:keep|still|again))\b"
)
_compiled = None


def might_teach(text: str) -> bool:
    """The pre-filter: False only for messages the full detector would never call positive."""
    global _compiled
    if _compiled is None:
        import re  # only the Stop and prompt hooks pay for it

        _compiled = re.compile(PREFILTER, re.IGNORECASE)
    t = text[:4000].replace("\u2019", "'")
    return bool(t.strip()) and _compiled.search(t) is not None
