"""Text helpers of rule extraction: normalise a message, cut clauses and phrases, make titles
and rule sentences, and the fields a matched phrasing yields (:class:`Core`, :class:`Extracted`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_CHARS = 4000
TITLE_MAX = 90
RULE_MAX = 300
LINE_MAX = 160  # a rule line as a user would write it in CLAUDE.md
PHRASE_MAX = 80
REASON_MAX = 200
CONTEXT_MAX = 160

_I = re.IGNORECASE


@dataclass(frozen=True, slots=True)
class Extracted:
    """The fields of a preference lesson, as read from one message."""

    title: str            # short rule, capitalised, no trailing period
    rule: str             # one or two sentences for a future session
    rejected: str | None  # what the user does not want
    preferred: str | None  # what the user wants instead
    reasoning: str | None  # the user's stated reason
    context: str | None   # what was being worked on, from the proposal
    shape: str            # which phrasing matched
    kind: str             # preference | anti_pattern | project_rule
    scope_hint: str | None  # global | project | None
    globs: tuple[str, ...] = ()  # the files the rule is for ("in Python files" -> *.py)


@dataclass(frozen=True, slots=True)
class Core:
    shape: str
    kind: str
    title: str
    rule: str
    rejected: str | None = None
    preferred: str | None = None
    scope: str | None = None
    pos: int = 0  # where the phrasing starts in the message


# ---- text helpers -------------------------------------------------------------------

QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " "})

# Where a phrase ends: sentence and clause punctuation, a dash, and the words that start a
# reason, a condition or a contrast.
_STOP = re.compile(
    r"[.!?](?=\s|$)|[;,\n()]|:(?=\s|$)|\s[-\u2013\u2014]+\s|"
    r"\s+(?:because|'cause|cuz|since|so\s+that|so|and\s+then|then|as\s+(?=(?:it|its|this|that|they|we|"
    r"the|our|there|you)\b)|which|unless|otherwise|but|though|although|whereas|instead|"
    r"rather\s+than|like\s+i\s+(?:said|asked)|as\s+i\s+(?:said|asked)|please|thanks|thank\s+you)\b",
    _I,
)
# Where the phrase before a keyword starts ("..., use Y instead of X").
_BACK_STOP = re.compile(
    r"[.!?](?=\s|$)|[;,\n(]|:(?=\s|$)|\s[-\u2013\u2014]+\s|"
    r"\s+(?:because|since|but|so|and\s+then|then|though|although)\s+",
    _I,
)
_SPANS = re.compile(r"`[^`\n]*`|\"[^\"\n]*\"")

# Openers that carry no content: "no,", "actually,", "hey claude,", "please".
_LEAD = re.compile(
    r"^(?:(?:i\s+(?:already\s+|just\s+)?(?:told|asked)\s+you(?:\s+(?:before|already|earlier|twice|"
    r"this|that))?(?=\s*[,:.;!\-]|\s+(?:no|not|to|don'?t|never|always|use)\b)|"
    r"(?:as|like)\s+i\s+(?:said|told\s+you|mentioned|asked)(?:\s+(?:before|already|earlier))?|"
    r"i\s+(?:already\s+)?said(?=\s*[,:.;!\-]|\s+(?:no|not|don'?t|never|always|use)\b)|again(?=\s*[,:!])|"
    r"no+(?!\s+need\b|\s+more\b)|nope|nah|actually|please|pls|plz|ok(?:ay)?|hm+|um+|uh+|ugh+|"
    r"well|wait|hold\s+on|oh|oops|sorry|yeah|yes|yep|right|so|also|and|but|hey\s+\w+(?=\s*[,:!])|"
    r"hey|hi\s+\w+(?=\s*[,:!])|hi|claude|codex|on\s+second\s+thought|one\s+more\s+thing|btw|"
    r"by\s+the\s+way|fyi|stop(?=\s*[.!,]))\b[\s,.!:;\-]*)+",
    _I,
)
_TRAIL = re.compile(
    r"(?:[\s,.!;:-]*\b(?:please|pls|plz|thanks|thank\s+you|thx|ty|cheers|ok\??|okay\??))+[\s.!?]*$", _I
)
# Words in front of a phrase that carry no content: "just", "you should", "let's".
_FILLER = re.compile(
    r"^(?:(?:i\s+think|i\s+guess|i\s+believe|maybe|perhaps|probably|just|please|simply|so|and|but|"
    r"then|also|ok(?:ay)?|no|yes|rather|instead|you\s+should|we\s+should|you\s+need\s+to|"
    r"we\s+need\s+to|you\s+must|we\s+must|you\s+can|we\s+can|let'?s|let\s+us|can\s+you|could\s+you|"
    r"would\s+you|will\s+you|i'?d\s+like\s+(?:you\s+)?to|i\s+want\s+(?:you\s+)?to|we\s+want\s+to|"
    r"i\s+need\s+(?:you\s+)?to|(?:it'?s|it\s+is|it'?d\s+be|it\s+would\s+be)\s+(?:\w+\s+){0,2}to|"
    r"better\s+to|go\s+ahead\s+and|try\s+to|make\s+sure\s+(?:to|you)|be\s+sure\s+to|"
    r"remember\s+to|(?:it|this|that|you|we)\s+should|should)\b[\s,]*)+",
    _I,
)
_TAIL_NOISE = re.compile(
    r"(?:\s+(?:(?:in|for|across|within|on)\s+(?:this|all|every|any|our|my)\s+(?:\w+\s+)?"
    r"(?:project|repo|repository|monorepo|workspace|codebase|code\s*base|package|app|service|file)s?|globally|"
    r"in\s+general|any\s*more|again|here|for\s+now|ever|from\s+now\s+on|going\s+forward|instead|"
    r"too|as\s+well|please|then|at\s+all|ok(?:ay)?|thanks|pls|now))+$",
    _I,
)
_DANGLING = re.compile(r"(?:\s+(?:a|an|the|and|or|to|of|for|with|in|on|at|by|from|not|but|is|are))+$", _I)
_WRAPPED = re.compile(r"(?<![\w])[\"']([^\"'\n]{1,80})[\"'](?![\w])")

USE_VERB = re.compile(
    r"(?:use|using|uses|switch(?:ing)?\s+(?:over\s+)?to|go(?:ing)?\s+with|stick(?:ing)?\s+(?:to|with)|"
    r"mov(?:e|ing)\s+to|try|trying|pick|prefer|rely(?:ing)?\s+on|opt\s+for)\s+",
    _I,
)
VERBS = frozenset(
    "add run call write put keep make create return raise throw log store read pass check move split "
    "rename delete remove test mock spin hit import install switch go stick ask wait let set update edit "
    "fix commit push send open print show handle wrap inline extract inject rely stay leave skip avoid "
    "do be have cache load save fetch query parse validate build deploy merge rebase squash lint format "
    "annotate document comment name define declare reuse refactor replace convert compute pin bump "
    "drop sort filter group limit start stop restart use prefer follow mirror copy link point tell "
    "explain describe note mention include exclude export expose hide guard catch retry batch stream "
    "type describe reply respond answer look search grep find list count measure profile benchmark "
    "wire hook register configure define ship release tag branch cherry-pick revert reset stash clean "
    "touch modify change chain nest flatten inline memoize debounce throttle await block lock stage "
    "redact hardcode vendor generate regenerate rerun keep".split()
)
_FINITE = re.compile(
    r"\s(?:is|are|was|were|lives?|belongs?|goes|go|should|must|needs?|has|have|runs?|stays?|sits?|"
    r"gets?|comes?|uses|works?|looks?|means?)\b",
    _I,
)
_INNER_USE = re.compile(r"\b(?:use|using|uses|switch\s+to|go\s+with|stick\s+(?:to|with))\s+", _I)
_NOUN_ING = frozenset("thing string spring something nothing anything everything ceiling ring king".split())
PRONOUNS = frozenset("it this that these those them there here so now me you one".split())
_VAGUE = frozenset("do does doing did that this it again so one thing things stuff like".split())


def vague(x: str) -> bool:
    """Nothing to learn from: "do that", "this", "it again"."""
    return not x or all(w in _VAGUE or w in PRONOUNS for w in x.lower().split())


def normalise(text: str) -> str:
    t = text[:MAX_CHARS].translate(QUOTES)
    t = re.sub(r"```.*?(?:```|\Z)", "\n", t, flags=re.DOTALL)  # fenced code says nothing here
    t = re.sub(r"[ \t\r\f\v]+", " ", t)
    t = re.sub(r" ?\n[\s]*", "\n", t)
    return t.strip()


def strip_openers(t: str) -> tuple[str, bool]:
    """The text without greeting, "no," and politeness; and whether it opened with a no."""
    m = _LEAD.match(t)
    opened_no = bool(m and re.search(r"(?:^|\W)(?:no+|nope|nah)\b", m.group(0), _I))
    t = t[m.end():] if m else t
    cut = max(0, len(t) - 200)  # politeness sits at the end; a bounded tail keeps this linear
    return (t[:cut] + _TRAIL.sub("", t[cut:])).strip(), opened_no


def first_stop(s: str, pattern: re.Pattern[str]) -> int:
    spans = [m.span() for m in _SPANS.finditer(s)]
    for m in pattern.finditer(s):
        if not any(a < m.start() < b for a, b in spans):
            return m.start()
    return len(s)


def first_clause(s: str) -> str:
    """``s`` up to the first clause boundary (outside backticks and double quotes)."""
    s = s[:600]
    return s[: first_stop(s, _STOP)]


def last_clause(s: str) -> str:
    """The clause that ends ``s``."""
    s = s[-600:]
    spans = [m.span() for m in _SPANS.finditer(s)]
    end = 0
    for m in _BACK_STOP.finditer(s):
        if not any(a < m.start() < b for a, b in spans):
            end = m.end()
    return s[end:]


def defill(s: str) -> str:
    s = s.strip()
    m = _FILLER.match(s)
    return s[m.end():].strip() if m else s


def skip_boundary(s: str) -> str:
    return defill(re.sub(r"^[\s,;.:!?\-\u2013\u2014]+", "", s))


def cut_at(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters at a word boundary."""
    text = text.strip()
    if len(text) <= limit:
        return text
    head = text[: limit + 1]
    space = head.rfind(" ")
    head = head[:space] if space > limit // 3 else text[:limit]
    head = head.rstrip(" ,;:(-\u2013\u2014")
    return _DANGLING.sub("", head).rstrip(" ,;:")


def as_phrase(raw: str, limit: int = PHRASE_MAX) -> str:
    """A trimmed name or phrase: no backticks, wrapping quotes, fillers or trailing noise."""
    s = raw.replace("`", "").strip()
    s = _WRAPPED.sub(r"\1", s)
    s = defill(s)
    s = s.strip(" \t\n.,;:!?\"'-\u2013\u2014")
    s = _TAIL_NOISE.sub("", s)
    s = re.sub(r"\s+", " ", s).strip(" .,;:!?\"'")
    return cut_at(s, limit)


def term(raw: str, default: str) -> tuple[str, str]:
    """A phrase and its form: ``noun`` (a thing to use), ``gerund`` or ``verb`` (an action),
    or ``statement`` ("the migrations live under db/")."""
    s = as_phrase(raw)
    m = USE_VERB.match(s)
    if m and s[m.end():].strip():
        return as_phrase(s[m.end():]), "noun"
    first = s.split(" ", 1)[0].lower() if s else ""
    if first.endswith("ing") and len(first) > 4 and first not in _NOUN_ING:
        return s, "gerund"
    if first in VERBS and (default != "noun" or " " in s):  # "fetch" alone is a name
        return s, "verb"
    if default == "noun" and _FINITE.search(s):
        return s, "statement"
    return s, default


def text_before(raw: str) -> str:
    """The phrase in front of a keyword, from its last "use" when it has one:
    "I want you to use ruff" -> "use ruff"."""
    s = defill(raw)
    uses = list(_INNER_USE.finditer(s))
    return s[uses[-1].start():] if uses and uses[-1].start() > 0 else s


def cap(s: str) -> str:
    return s[:1].upper() + s[1:] if s[:1].islower() else s


def lower_first(s: str) -> str:
    if len(s) > 1 and s[0].isupper() and not s[1].isupper():
        return s[0].lower() + s[1:]
    return s


def as_title(s: str) -> str:
    return cap(cut_at(s, TITLE_MAX).rstrip(" ."))


def as_sentence(s: str) -> str:
    s = cut_at(s.strip(), RULE_MAX).rstrip(" ,;:")
    s = cap(s)
    return s if s.endswith((".", "!", "?")) else s + "."


def preceding_word(t: str, pos: int) -> str:
    m = re.search(r"([\w']+)\W*$", t[max(0, pos - 40): pos])
    return m.group(1).lower() if m else ""


def at_clause_start(t: str, pos: int) -> bool:
    before = t[max(0, pos - 600): pos].rstrip()
    return not before or before[-1] in ".!?;:,\n-" or not defill(last_clause(before))


def first_word(s: str) -> str:
    return s.split(" ", 1)[0].lower() if s else ""


# ---- titles and rules -----------------------------------------------------------------

def pair(shape: str, pref: str, pform: str, rej: str, rform: str) -> Core:
    """Title and rule for "this, not that"."""
    left = f"Use {pref}" if pform == "noun" else (f"Prefer {pref}" if pform == "gerund" else pref)
    if rform == "verb":
        title = f"{left}, don't {rej}"
        rule = f"Don't {rej}; {lower_first(left)} instead."
    elif rform == "gerund":
        title = f"{left} instead of {rej}"
        rule = f"{left} instead of {rej}."
    elif pform == "noun":
        title = f"Use {pref}, not {rej}"
        rule = f"Use {pref} instead of {rej}."
    else:
        title = f"{left}, not {rej}"
        rule = f"{left} instead of {rej}."
    return Core(shape, "preference", as_title(title), as_sentence(rule), rej,
                pref if pform == "noun" else lower_first(pref))


def single(shape: str, kind: str, head: str, *, rejected: str | None = None,
            preferred: str | None = None, pos: int = 0) -> Core:
    return Core(shape, kind, as_title(head), as_sentence(head), rejected, preferred, pos=pos)
