"""One correction or stated preference turned into the fields of a preference lesson.

Heuristics only, no model and no network: the message is matched against the phrasings
people use to redirect a coding agent — "don't use X, use Y", "Y instead of X", "I prefer X
over Y", "Y rather than X", "always X", "never X", "stop X", "from now on X", "don't X",
"we use X" — and the pieces are trimmed into a title, a rule, what is rejected and what is
preferred. Anything else falls back to the message's first sentence. The proposal the
message answers gives the context, and the rejected thing when the message only says what
to use instead.

Messages are cut to :data:`MAX_CHARS` first and every pattern is bounded, so a pasted log
costs little.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["MAX_CHARS", "Extracted", "extract"]

MAX_CHARS = 4000
TITLE_MAX = 90
RULE_MAX = 300
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


@dataclass(frozen=True, slots=True)
class _Core:
    shape: str
    kind: str
    title: str
    rule: str
    rejected: str | None = None
    preferred: str | None = None
    scope: str | None = None
    pos: int = 0  # where the phrasing starts in the message


# ---- text helpers -------------------------------------------------------------------

_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " "})

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
    r"^(?:(?:no+(?!\s+need\b|\s+more\b)|nope|nah|actually|please|pls|plz|ok(?:ay)?|hm+|um+|uh+|ugh+|"
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
    r"(?:\s+(?:(?:in|for|across|within|on)\s+(?:this|the|all|every|any|our|my)\s+(?:\w+\s+)?"
    r"(?:project|repo|repository|codebase|code\s*base|package|app|service|file)s?|globally|"
    r"in\s+general|any\s*more|again|here|for\s+now|ever|from\s+now\s+on|going\s+forward|instead|"
    r"too|as\s+well|please|then|at\s+all|ok(?:ay)?|thanks|pls|now))+$",
    _I,
)
_DANGLING = re.compile(r"(?:\s+(?:a|an|the|and|or|to|of|for|with|in|on|at|by|from|not|but|is|are))+$", _I)
_WRAPPED = re.compile(r"(?<![\w])[\"']([^\"'\n]{1,80})[\"'](?![\w])")

_USE_VERB = re.compile(
    r"(?:use|using|uses|switch(?:ing)?\s+(?:over\s+)?to|go(?:ing)?\s+with|stick(?:ing)?\s+(?:to|with)|"
    r"mov(?:e|ing)\s+to|try|trying|pick|prefer|rely(?:ing)?\s+on|opt\s+for)\s+",
    _I,
)
_VERBS = frozenset(
    "add run call write put keep make create return raise throw log store read pass check move split "
    "rename delete remove test mock spin hit import install switch go stick ask wait let set update edit "
    "fix commit push send open print show handle wrap inline extract inject rely stay leave skip avoid "
    "do be have cache load save fetch query parse validate build deploy merge rebase squash lint format "
    "annotate document comment name define declare reuse refactor replace convert compute pin bump "
    "drop sort filter group limit start stop restart use prefer follow mirror copy link point tell "
    "explain describe note mention include exclude export expose hide guard catch retry batch stream "
    "type describe reply respond answer look search grep find list count measure profile benchmark "
    "wire hook register configure define ship release tag branch cherry-pick revert reset stash clean "
    "touch modify change chain nest flatten inline memoize debounce throttle await block lock".split()
)
_FINITE = re.compile(
    r"\s(?:is|are|was|were|lives?|belongs?|goes|go|should|must|needs?|has|have|runs?|stays?|sits?|"
    r"gets?|comes?|uses|works?|looks?|means?)\b",
    _I,
)
_INNER_USE = re.compile(r"\b(?:use|using|uses|switch\s+to|go\s+with|stick\s+(?:to|with))\s+", _I)
_NOUN_ING = frozenset("thing string spring something nothing anything everything ceiling ring king".split())
_PRONOUNS = frozenset("it this that these those them there here so now me you one".split())
_VAGUE = frozenset("do does doing did that this it again so one thing things stuff like".split())


def _vague(x: str) -> bool:
    """Nothing to learn from: "do that", "this", "it again"."""
    return not x or all(w in _VAGUE or w in _PRONOUNS for w in x.lower().split())


def _normalise(text: str) -> str:
    t = text[:MAX_CHARS].translate(_QUOTES)
    t = re.sub(r"```.*?(?:```|\Z)", "\n", t, flags=re.DOTALL)  # fenced code says nothing here
    t = re.sub(r"[ \t\r\f\v]+", " ", t)
    t = re.sub(r" ?\n[\s]*", "\n", t)
    return t.strip()


def _strip_openers(t: str) -> tuple[str, bool]:
    """The text without greeting, "no," and politeness; and whether it opened with a no."""
    m = _LEAD.match(t)
    opened_no = bool(m and re.match(r"\W*(?:no+|nope|nah)\b", m.group(0), _I))
    t = t[m.end():] if m else t
    cut = max(0, len(t) - 200)  # politeness sits at the end; a bounded tail keeps this linear
    return (t[:cut] + _TRAIL.sub("", t[cut:])).strip(), opened_no


def _first_stop(s: str, pattern: re.Pattern[str]) -> int:
    spans = [m.span() for m in _SPANS.finditer(s)]
    for m in pattern.finditer(s):
        if not any(a < m.start() < b for a, b in spans):
            return m.start()
    return len(s)


def _clause(s: str) -> str:
    """``s`` up to the first clause boundary (outside backticks and double quotes)."""
    s = s[:600]
    return s[: _first_stop(s, _STOP)]


def _last_clause(s: str) -> str:
    """The clause that ends ``s``."""
    s = s[-600:]
    spans = [m.span() for m in _SPANS.finditer(s)]
    end = 0
    for m in _BACK_STOP.finditer(s):
        if not any(a < m.start() < b for a, b in spans):
            end = m.end()
    return s[end:]


def _defill(s: str) -> str:
    s = s.strip()
    m = _FILLER.match(s)
    return s[m.end():].strip() if m else s


def _skip_boundary(s: str) -> str:
    return _defill(re.sub(r"^[\s,;.:!?\-\u2013\u2014]+", "", s))


def _cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters at a word boundary."""
    text = text.strip()
    if len(text) <= limit:
        return text
    head = text[: limit + 1]
    space = head.rfind(" ")
    head = head[:space] if space > limit // 3 else text[:limit]
    head = head.rstrip(" ,;:(-\u2013\u2014")
    return _DANGLING.sub("", head).rstrip(" ,;:")


def _phrase(raw: str, limit: int = PHRASE_MAX) -> str:
    """A trimmed name or phrase: no backticks, wrapping quotes, fillers or trailing noise."""
    s = raw.replace("`", "").strip()
    s = _WRAPPED.sub(r"\1", s)
    s = _defill(s)
    s = s.strip(" \t\n.,;:!?\"'-\u2013\u2014")
    s = _TAIL_NOISE.sub("", s)
    s = re.sub(r"\s+", " ", s).strip(" .,;:!?\"'")
    return _cut(s, limit)


def _term(raw: str, default: str) -> tuple[str, str]:
    """A phrase and its form: ``noun`` (a thing to use), ``gerund`` or ``verb`` (an action),
    or ``statement`` ("the migrations live under db/")."""
    s = _phrase(raw)
    m = _USE_VERB.match(s)
    if m and s[m.end():].strip():
        return _phrase(s[m.end():]), "noun"
    first = s.split(" ", 1)[0].lower() if s else ""
    if first.endswith("ing") and len(first) > 4 and first not in _NOUN_ING:
        return s, "gerund"
    if first in _VERBS:
        return s, "verb"
    if default == "noun" and _FINITE.search(s):
        return s, "statement"
    return s, default


def _before(raw: str) -> str:
    """The phrase in front of a keyword, from its last "use" when it has one:
    "I want you to use ruff" -> "use ruff"."""
    s = _defill(raw)
    uses = list(_INNER_USE.finditer(s))
    return s[uses[-1].start():] if uses and uses[-1].start() > 0 else s


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:] if s[:1].islower() else s


def _lower_first(s: str) -> str:
    if len(s) > 1 and s[0].isupper() and not s[1].isupper():
        return s[0].lower() + s[1:]
    return s


def _title(s: str) -> str:
    return _cap(_cut(s, TITLE_MAX).rstrip(" ."))


def _sentence(s: str) -> str:
    s = _cut(s.strip(), RULE_MAX).rstrip(" ,;:")
    s = _cap(s)
    return s if s.endswith((".", "!", "?")) else s + "."


def _preceding_word(t: str, pos: int) -> str:
    m = re.search(r"([\w']+)\W*$", t[max(0, pos - 40): pos])
    return m.group(1).lower() if m else ""


def _at_clause_start(t: str, pos: int) -> bool:
    before = t[max(0, pos - 600): pos].rstrip()
    return not before or before[-1] in ".!?;:,\n-" or not _defill(_last_clause(before))


def _words(s: str) -> str:
    return s.split(" ", 1)[0].lower() if s else ""


# ---- titles and rules -----------------------------------------------------------------

def _pair(shape: str, pref: str, pform: str, rej: str, rform: str) -> _Core:
    """Title and rule for "this, not that"."""
    left = f"Use {pref}" if pform == "noun" else (f"Prefer {pref}" if pform == "gerund" else pref)
    if rform == "verb":
        title = f"{left}, don't {rej}"
        rule = f"Don't {rej}; {_lower_first(left)} instead."
    elif rform == "gerund":
        title = f"{left} instead of {rej}"
        rule = f"{left} instead of {rej}."
    elif pform == "noun":
        title = f"Use {pref}, not {rej}"
        rule = f"Use {pref} instead of {rej}."
    else:
        title = f"{left}, not {rej}"
        rule = f"{left}, not {rej}."
    return _Core(shape, "preference", _title(title), _sentence(rule), rej, pref)


def _single(shape: str, kind: str, head: str, *, rejected: str | None = None,
            preferred: str | None = None, pos: int = 0) -> _Core:
    return _Core(shape, kind, _title(head), _sentence(head), rejected, preferred, pos=pos)


# ---- the proposal -----------------------------------------------------------------------

_PLAN = re.compile(
    r"\b(?:let\s+me|let'?s|i'?ll|i\s+will|i'?m\s+going\s+to|i\s+am\s+going\s+to|would\s+you\s+like\s+me\s+to|"
    r"shall\s+i|should\s+i|i\s+plan\s+to|i'?m\s+about\s+to|i\s+can|i'?d\s+suggest|i\s+suggest|"
    r"i\s+propose|i'?ll\s+now|next,?\s+i)\b",
    _I,
)
_CANDIDATE = re.compile(
    r"\b(?P<verb>use|using|add|adding|install|installing|introduce|introducing|set\s+up|setting\s+up|"
    r"switch\s+to|configure|configuring|with|via|try|trying|pull\s+in|bring\s+in|rely\s+on|"
    r"based\s+on|run|running)\s+(?:a\s+|an\s+|the\s+|some\s+|new\s+)?"
    r"(?!(?:to|for|in|on|with|so|and|or|that|which|as|it|this|these|those|them|you|me|us|a|an|the)\b)"
    r"(?P<name>`[^`\n]{1,60}`|[A-Za-z@][\w.@/+-]{0,40}"
    r"(?:\s+(?!(?:for|to|in|on|with|so|and|or|that|which|as|into|from|of|by|at|instead|now|here|then|"
    r"first|if|when|because|since)\b)[A-Za-z][\w.@/+-]{0,40}){0,2})",
    _I,
)
_LOOSE_VERBS = ("use", "using", "install", "installing", "add", "adding", "switch", "via", "run", "running")
_FILE = re.compile(r"\.(?:py|js|ts|tsx|jsx|md|json|toml|ya?ml|txt|rs|go|rb|java|cfg|ini|lock|sh)$", _I)


def _proposal_text(proposal: str | None) -> str:
    if not proposal or not proposal.strip():
        return ""
    p = proposal if len(proposal) <= MAX_CHARS else proposal[:2000] + "\n" + proposal[-2000:]
    p = p.translate(_QUOTES)
    p = re.sub(r"```.*?(?:```|\Z)", "\n", p, flags=re.DOTALL)
    p = re.sub(r"\*\*|__|^#+\s*|^\s*[-*]\s+", "", p, flags=re.MULTILINE)
    return re.sub(r"[ \t]+", " ", p).strip()


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+|\n+", text)
    return [p.strip() for p in parts if p.strip()]


def _context(proposal: str) -> str | None:
    sentences = _sentences(proposal)
    if not sentences:
        return None
    plans = [s for s in sentences if _PLAN.search(s)]
    chosen = plans[-1] if plans else sentences[0]
    return _cut(chosen, CONTEXT_MAX) or None


def _overlaps(a: str, b: str) -> bool:
    """Whether one phrase contains the other as whole words."""
    def within(x: str, y: str) -> bool:
        return re.search(rf"(?<!\w){re.escape(x)}(?!\w)", y) is not None

    return within(a, b) or within(b, a)


def _proposal_noun(proposal: str, preferred: str) -> str | None:
    """A plausible thing the proposal was going to use, other than ``preferred``."""
    if not proposal:
        return None
    sentences = _sentences(proposal)
    plans = [s for s in sentences if _PLAN.search(s)]
    ordered = ([plans[-1]] if plans else []) + sentences
    pref = preferred.lower()
    for sentence in ordered:
        for m in _CANDIDATE.finditer(sentence):
            raw = m.group("name")
            if m.group("verb").lower().startswith("run"):
                raw = raw.split(" ", 1)[0]  # "run npm install" -> npm
            name = _phrase(raw, 60)
            low = name.lower()
            if not name or low in _PRONOUNS or low.split(" ", 1)[0] in _PRONOUNS:
                continue
            if _overlaps(low, pref) or _FILE.search(name):
                continue
            named = raw.startswith("`") or any(c.isupper() or c.isdigit() or c in "@/._-" for c in name)
            if named or m.group("verb").lower().split()[0] in _LOOSE_VERBS:
                return name
    return None


# ---- shapes -----------------------------------------------------------------------------

_DONT = r"(?:don'?t|do\s+not|dont)"
_NOT_STARTS = (
    r"(?!sure\b|only\b|just\b|really\b|quite\b|yet\b|now\b|that\b|this\b|exactly\b|necessarily\b|"
    r"always\b|entirely\b|at\s+all\b|a\s+(?:big\s+)?(?:deal|problem|fan|bad)\b|too\b|bad\b|working\b|"
    r"what\b|right\b|correct\b|true\b|needed\b|necessary\b|important\b|relevant\b|so\b|much\b|"
    r"enough\b|even\b|being\b|the\s+(?:point|issue|problem)\b|to\b|for\s+now\b|here\b|it\b)"
)


@dataclass(frozen=True, slots=True)
class _Ctx:
    proposal: str
    opened_no: bool


_NEXT_USE = re.compile(
    r"(?:^|[.;,!?:]\s*|\s[-\u2013\u2014]+\s*|\s+(?:but|and|so)\s+)"
    r"(?:(?:and|but|just|instead|rather|always|only|so|please)\b[\s,]*)*"
    r"(?:use|switch(?:\s+over)?\s+to|go\s+with|stick\s+(?:to|with)|move\s+to|rely\s+on|opt\s+for)\s+",
    _I,
)


# "don't use X, use Y" / "never use X, always use Y" / "not X, use Y"
_DONT_USE = re.compile(
    r"\b(?:" + _DONT + r"|never)\s+(?:ever\s+)?use\s+|(?:^|(?<=[.!?;:,\n]))\s*not\s+" + _NOT_STARTS, _I
)


def _dont_use_instead(t: str, ctx: _Ctx) -> _Core | None:
    for m in _DONT_USE.finditer(t):
        after = t[m.end():]
        x_raw = _clause(after)
        # The "use Y" may come a clause later: "don't use X, it's huge; use Y instead".
        v = _NEXT_USE.search(after, len(x_raw), len(x_raw) + 240)
        if not x_raw.strip() or not v:
            continue
        x, _ = _term(x_raw, "noun")
        y = _phrase(_clause(after[v.end():]))
        if x and y:
            return _pair("dont_use_instead", y, "noun", x, "noun")
    # "don't X, Y instead"
    for m in re.finditer(r"\b" + _DONT + r"\s+", t, _I):
        after = t[m.end():]
        x_raw = _clause(after)
        rest = _skip_boundary(after[len(x_raw):])
        y_raw = _clause(rest)
        if not x_raw.strip() or not y_raw.strip():
            continue
        if not re.match(r"\s+instead\b(?!\s+of\b)", rest[len(y_raw):], _I):
            continue
        x, xform = _term(x_raw, "verb")
        y, yform = _term(y_raw, "noun")
        if x and y:
            return _pair("dont_use_instead", y, yform, x, "noun" if xform == "noun" else "verb")
    return None


def _use_instead_of(t: str, ctx: _Ctx) -> _Core | None:
    for m in re.finditer(r"\binstead\s+of\s+", t, _I):
        before = _before(_last_clause(t[: m.start()]))
        after = t[m.end():]
        x_raw = _clause(after)
        if before:
            y_raw = before
        else:  # "instead of X, (use) Y"
            y_raw = _clause(_skip_boundary(after[len(x_raw):]))
        x, xform = _term(x_raw, "noun")
        y, yform = _term(y_raw, "noun")
        if x and y:
            return _pair("use_instead_of", y, yform, x, "gerund" if xform == "gerund" else "noun")
    return None


_PREFER = re.compile(
    r"\b(?:(?:i|we)(?:'d|\s+would)?\s+)?(?:really\s+|much\s+|generally\s+|strongly\s+|always\s+)?"
    r"prefer(?:s|red)?\s+(?:to\s+use\s+|using\s+|that\s+you\s+use\s+|you\s+use\s+|to\s+)?",
    _I,
)
_RATHER = re.compile(
    r"\b(?:(?:i|we)(?:'d|\s+would)\s+(?:much\s+|really\s+)?rather|^rather)\s+"
    r"(?:you\s+|we\s+)?(?:use\s+|used\s+)?",
    _I,
)


def _prefer_over(t: str, ctx: _Ctx) -> _Core | None:
    for m in _PREFER.finditer(t):
        if re.search(r"\b(?:if|whatever|whichever|do|would|what|which|how)\s+(?:you|u)\s*$",
                     t[max(0, m.start() - 20): m.start()], _I):
            continue
        after = t[m.end():]
        verbish = bool(re.search(r"\bto\s+$", m.group(0), _I))
        x_raw = _clause(after)
        y_raw = ""
        sep = re.search(r"\s+(?:over|than|vs\.?|versus)\s+(?:using\s+|to\s+use\s+|use\s+)?", x_raw, _I)
        if sep is None and not verbish:
            sep = re.search(r"\s+to\s+(?:using\s+)?", x_raw, _I)
        if sep:
            x_raw, y_raw = x_raw[: sep.start()], x_raw[sep.end():]
        else:
            tail = re.match(r"\s+(?:rather\s+than|instead\s+of)\s+(?:using\s+|use\s+)?",
                            after[len(x_raw):], _I)
            if tail:
                y_raw = _clause(after[len(x_raw) + tail.end():])
        x, xform = _term(x_raw, "verb" if verbish else "noun")
        if not x:
            continue
        y, yform = _term(y_raw, "noun") if y_raw else ("", "noun")
        if not y:
            head = f"Prefer {x}" if xform != "verb" else f"Prefer to {x}"
            return _single("prefer_over", "preference", head, preferred=x)
        if xform == "verb":
            return _pair("prefer_over", x, xform, y, yform)
        head = f"Prefer {x} over {y}"
        return _single("prefer_over", "preference", head, preferred=x, rejected=y)
    for m in _RATHER.finditer(t):
        after = t[m.end():]
        x_raw = _clause(after)
        sep = re.search(r"\s+than\s+(?:use\s+|using\s+)?", x_raw, _I)
        if not sep:
            continue
        x, xform = _term(x_raw[: sep.start()], "noun" if m.group(0).lower().endswith("use ") else "verb")
        y, yform = _term(x_raw[sep.end():], xform)
        if not (x and y):
            continue
        if xform == "verb":
            return _pair("prefer_over", x, xform, y, "verb" if yform == "verb" else yform)
        return _single("prefer_over", "preference", f"Prefer {x} over {y}", preferred=x, rejected=y)
    return None


_NOT_BUT = re.compile(
    r"(?:^|(?<=[.!?;:,\n])\s*|\b(?:it'?s|it\s+is|that'?s|should\s+be|is|are|use)\s+)not\s+"
    + _NOT_STARTS
    + r"(?P<x>[^\n,;.]{1,80}?)(?:\s*,?\s+but\s+(?:rather\s+|instead\s+)?|\s*[,;]\s*rather\s+)"
    r"(?P<y>[^\n]{1,200})",
    _I,
)


def _rather_than(t: str, ctx: _Ctx) -> _Core | None:
    for m in re.finditer(r"\brather\s+than\s+", t, _I):
        y_raw = _before(_last_clause(t[: m.start()]))
        x_raw = _clause(t[m.end():])
        if not y_raw:  # "rather than X, Y"
            y_raw = _clause(_skip_boundary(t[m.end() + len(x_raw):]))
        y, yform = _term(y_raw, "noun")
        x, xform = _term(x_raw, "noun")
        if x and y:
            return _pair("rather_than", y, yform, x, "gerund" if xform == "gerund" else "noun")
    m2 = _NOT_BUT.search(t)
    if m2:
        x, _ = _term(m2.group("x"), "noun")
        y, yform = _term(_clause(m2.group("y")), "noun")
        if x and y:
            return _pair("rather_than", y, yform, x, "noun")
    for m in re.finditer(r",\s*(?:and\s+)?not\s+" + _NOT_STARTS, t, _I):
        y_raw = _before(_last_clause(t[: m.start()]))
        x_raw = _clause(t[m.end():])
        y, yform = _term(y_raw, "noun")
        x, xform = _term(x_raw, "noun")
        if x and y:
            return _pair("rather_than", y, yform, x, "gerund" if xform == "gerund" else "noun")
    return None


def _use_instead(t: str, ctx: _Ctx) -> _Core | None:
    y_raw = ""
    said_instead = True
    for m in re.finditer(r"\binstead\b(?!\s+of\b)", t, _I):
        before = _before(_last_clause(t[: m.start()]))
        y_raw = before or _clause(_skip_boundary(t[m.end():]))
        if y_raw:
            break
    if not y_raw and ctx.opened_no:
        v = _USE_VERB.match(_defill(t))  # "no, use Y"
        if v and v.group(0).split()[0].lower() in ("use", "switch", "go", "stick"):
            y_raw, said_instead = _clause(_defill(t)), False
    if not y_raw:
        return None
    y, yform = _term(y_raw, "noun")
    if _vague(y):
        return None
    rejected = _proposal_noun(ctx.proposal, y) if said_instead else None
    if rejected:
        return _pair("use_instead", y, yform, rejected, "noun")
    head = f"Use {y}" if yform == "noun" else (f"Prefer {y}" if yform == "gerund" else y)
    return _single("use_instead", "preference", head, preferred=y)


_WE_DONT_USE = re.compile(
    r"\b(?:we|this\s+(?:project|repo|codebase)|the\s+(?:project|repo|codebase))\s+"
    r"(?:don'?t|do\s+not|doesn'?t|does\s+not|never)\s+(?:use|rely\s+on)\s+",
    _I,
)
_WE_USE = re.compile(
    r"\b(?:(?:here\s+)?we(?:'re|\s+are)?\s+(?:always\s+|only\s+|just\s+)?(?:use|using|rely\s+on|relying\s+on|"
    r"standardi[sz]ed\s+on|stick\s+(?:to|with)|go\s+with)|(?:the|this|our)\s+(?:project|repo|repository|"
    r"codebase|team|app|service|monorepo)\s+(?:uses|is\s+using|relies\s+on|standardi[sz]ed\s+on|"
    r"sticks\s+(?:to|with)))\s+",
    _I,
)


def _we_use(t: str, ctx: _Ctx) -> _Core | None:
    m = _WE_DONT_USE.search(t)
    if m:
        x, _ = _term(_clause(t[m.end():]), "noun")
        if x:
            return _Core("we_use", "project_rule", _title(f"Don't use {x}"),
                         _sentence(f"This project does not use {x}"), x, None, "project")
    for m in _WE_USE.finditer(t):
        if re.search(r"\b(?:how|can|could|should|why|do|did|would|if|what)\s+$",
                     t[max(0, m.start() - 12): m.start()], _I):
            continue
        after = t[m.end():]
        x_raw = _clause(after)
        rest = after[len(x_raw):][:300]
        inner = re.search(r"\s+(?:and\s+|but\s+)?(?:not|never)\s+(?:using\s+)?", x_raw, _I)
        if inner:  # "we're using vitest here not jest"
            x_raw, rest = x_raw[: inner.start()], x_raw[inner.start():]
        purpose = ""
        split = re.search(r"\s+for\s+", x_raw, _I)
        if split:
            x_raw, purpose = x_raw[: split.start()], _phrase(x_raw[split.end():])
        x, _ = _term(x_raw, "noun")
        if not x or x.lower() in _PRONOUNS:
            continue
        r = re.match(
            r"[\s,;.:\-]*(?:and\s+|but\s+|so\s+)?(?:not|never|instead\s+of|rather\s+than|"
            + _DONT + r"\s+use|no)\s+(?:using\s+)?",
            rest,
            _I,
        )
        rejected = _term(_clause(rest[r.end():]), "noun")[0] or None if r else None
        use = f"{x} for {purpose}" if purpose else x
        title = f"Use {use}, not {rejected}" if rejected else f"Use {use}"
        rule = f"This project uses {use}" + (f", not {rejected}" if rejected else "")
        return _Core("we_use", "project_rule", _title(title), _sentence(rule), rejected, x, "project")
    return None


def _stop_doing(t: str, ctx: _Ctx) -> _Core | None:
    for m in re.finditer(r"\b(?:(?:stop|quit|cease)\s+(?:doing\s+|with\s+)?|no\s+more\s+)", t, _I):
        before = t[max(0, m.start() - 60): m.start()]
        lead = re.search(r"(?:please|just|and|so|now|pls|can\s+you|could\s+you|will\s+you|"
                         r"you\s+(?:need|have)\s+to|you\s+should|you\s+must)\s*$", before, _I)
        if not (_at_clause_start(t, m.start()) or lead):
            continue
        x = _phrase(_clause(t[m.end():]))
        if _vague(x) or _words(x) in _PRONOUNS:
            continue
        return _single("stop_doing", "anti_pattern", f"Avoid {x}", rejected=_term(x, "verb")[0],
                       pos=m.start())
    return None


def _never(t: str, ctx: _Ctx) -> _Core | None:
    pattern = r"\b(?:never(?:\s+ever)?|" + _DONT + r"\s+(?:you\s+)?ever|do\s+not\s+ever)\s+(?!mind\b)"
    for m in re.finditer(pattern, t, _I):
        if _preceding_word(t, m.start()) in ("i", "you", "it", "he", "she", "they", "that", "this",
                                              "i've", "you've", "i'd", "would", "have", "has", "had"):
            continue
        x = _phrase(_clause(t[m.end():]))
        if _vague(x):
            continue
        rejected, _ = _term(x, "verb")
        return _single("never", "anti_pattern", f"Never {x}", rejected=rejected, pos=m.start())
    return None


def _always(t: str, ctx: _Ctx) -> _Core | None:
    for m in re.finditer(r"\balways\s+", t, _I):
        if _preceding_word(t, m.start()) in ("i", "you", "it", "he", "she", "they", "that", "this", "almost",
                                              "not", "was", "is", "are", "were", "has", "have", "had"):
            continue
        after = t[m.end():]
        x_raw = _clause(after)
        x = _phrase(x_raw)
        if _vague(x):
            continue
        preferred, _ = _term(x, "verb")
        rest = after[len(x_raw):][:300]
        r = re.match(r"[\s,;.\-]*(?:and\s+|but\s+)?(?:never|not|" + _DONT + r")\s+(?:use\s+|using\s+)?",
                     rest, _I)
        rejected = _phrase(_clause(rest[r.end():])) or None if r else None
        head = f"Always {x}" + (f", never {rejected}" if rejected else "")
        return _single("always", "preference", head, preferred=preferred, rejected=rejected, pos=m.start())
    return None


_DONT_SKIP = frozenset(
    "know think see understand worry mind care remember get believe recall mean feel agree expect "
    "forget apologize apologise".split()
)


def _dont(t: str, ctx: _Ctx) -> _Core | None:
    pattern = (r"\b(?:" + _DONT + r"|doesn'?t\s+need\s+to|does\s+not\s+need\s+to|no\s+need\s+to|"
               r"there'?s\s+no\s+need\s+to|avoid|shouldn'?t|should\s+not)\s+")
    for m in re.finditer(pattern, t, _I):
        after = t[m.end():]
        if _words(after).strip(",.") in _DONT_SKIP:
            continue
        subject = _preceding_word(t, m.start())
        x_raw = _clause(after)
        lead = re.match(r"(?:want\s+(?:you\s+|us\s+)?to|need\s+to|have\s+to|bother\s+(?:to\s+)?|even\s+|"
                        r"want|like|need)\s+", x_raw, _I)
        noun = False
        if lead:
            word = lead.group(0).split()[0].lower()
            noun = word in ("want", "like", "need") and not re.search(r"\bto\s+$", lead.group(0), _I)
            x_raw = x_raw[lead.end():]
        elif subject == "i":
            continue  # "I don't ..." without want/like/need is a statement, not a rule
        x = _phrase(x_raw)
        if _vague(x):
            continue
        rejected, form = _term(x, "verb")
        verb = m.group(0).split()[0].lower()
        head = f"Avoid {x}" if noun or verb == "avoid" else f"Don't {x}"
        return _single("dont", "anti_pattern", head, rejected=rejected if form == "noun" else x,
                       pos=m.start())
    return None


# Tried in order, the first match wins.
_PAIRS: tuple[Callable[[str, _Ctx], _Core | None], ...] = (
    _dont_use_instead, _we_use, _use_instead_of, _prefer_over, _rather_than, _use_instead,
)
# One-sided rules: the one that comes first in the message wins.
_SINGLES: tuple[Callable[[str, _Ctx], _Core | None], ...] = (_stop_doing, _never, _always, _dont)


def _match(t: str, ctx: _Ctx) -> _Core | None:
    for shape in _PAIRS:
        core = shape(t, ctx)
        if core is not None:
            return core
    found = [c for c in (shape(t, ctx) for shape in _SINGLES) if c is not None]
    return min(found, key=lambda c: c.pos) if found else None


_FROM_NOW_ON = re.compile(
    r"\b(?:from\s+now\s+on(?:wards?)?|from\s+here\s+on(?:\s+out)?|going\s+forward|moving\s+forward|"
    r"in\s+the\s+future|in\s+future|next\s+time|for\s+next\s+time|for\s+future\s+reference|henceforth)\b",
    _I,
)
_TRAILING_MARKERS = ("from now on", "from here on", "going forward", "moving forward", "next time",
                     "in future", "henceforth")
_REJECTION_ONLY = re.compile(
    r"^(?:(?:that|this|it)(?:'s|\s+is|\s+was)\s+(?:not\s+(?:right|correct|what\s+i\s+\w+|it|quite\s+right)|"
    r"wrong|incorrect)|wrong|not\s+quite|not\s+like\s+that|not\s+that)\b[^.!?\n]{0,40}[.!?]*$",
    _I,
)


def _from_now_on(t: str, ctx: _Ctx) -> _Core | None:
    for m in _FROM_NOW_ON.finditer(t):
        post = t[m.end():]
        rest = ""
        if _at_clause_start(t, m.start()):
            rest = _skip_boundary(post)
        elif m.group(0).lower().startswith(_TRAILING_MARKERS) and re.match(r"\s*(?:[,;.!?\n]|$)", post):
            before = t[: m.start()]
            start = max((x.end() for x in re.finditer(r"[.!?](?=\s)|\n", before)), default=0)
            rest = (before[start:].rstrip() + post).strip()
        if not rest:
            continue
        rest = _defill(rest)
        core = _match(rest, ctx)
        if core is not None:
            return _Core("from_now_on", core.kind, core.title, core.rule, core.rejected, core.preferred,
                         core.scope)
        first = _first_sentence(rest)
        if not first:
            continue
        phrase = _phrase(first, TITLE_MAX)
        preferred, form = _term(phrase, "verb")
        head = f"Use {preferred}" if form == "noun" else phrase
        return _Core("from_now_on", "preference", _title(head), _sentence(first), None, preferred or None)
    return None


def _first_sentence(t: str) -> str:
    sentences = _sentences(t)
    return sentences[0] if sentences else ""


def _generic(t: str) -> _Core:
    sentences = _sentences(t)
    if len(sentences) > 1 and _REJECTION_ONLY.match(sentences[0]):
        sentences = sentences[1:]
    first = sentences[0] if sentences else t
    head = first.rstrip(".!? ")
    if len(head) > TITLE_MAX:
        comma = _first_stop(head, re.compile(r"[,;:]"))
        if 12 <= comma <= TITLE_MAX:
            head = head[:comma]
    rule = ""
    for s in sentences:
        if rule and len(rule) + 1 + len(s) > RULE_MAX:
            break
        rule = f"{rule} {s}".strip()
    return _Core("generic", "preference", _title(head.replace("`", "")) or "(empty)",
                 _sentence(rule or first))


# ---- reasoning and scope --------------------------------------------------------------

_REASON = re.compile(
    r"(?P<cause>(?:\bbecause|(?<!\w)'cause|\bcuz|\bsince|\bgiven\s+that)\s+(?!of\b)|[,;]\s*as\s+(?=(?:it|its|it's|this|"
    r"that|they|we|the|our|there|you|i)\b))"
    r"|(?P<keep>\b(?:because\s+of|due\s+to|so\s+that|in\s+order\s+to|otherwise)\s+|"
    r"\bso\s+(?=(?:it|its|it's|we|the|that|you|they|tests?|ci|builds?|there|nothing|our|i)\b))"
    r"|(?P<stmt>(?:^|(?<=[.!?;,:\n])|(?<=[.!?;,:\n]\s)|(?<=\s[-\u2013\u2014]\s))(?=(?:it'?s|it\s+is|it\s+was|"
    r"that'?s|they'?re|they\s+\w+|(?:it|this|that)\s+(?:\w+s|won'?t|doesn'?t|don'?t|can'?t|will|would|"
    r"isn'?t|aren'?t|are))\b))",
    _I,
)
_REASON_END = re.compile(r"[.!?](?=\s|$)|[;\n]|:(?=\s)|\s[-\u2013\u2014]+\s")
_DIRECTIVE = re.compile(
    r",\s*(?=(?:use|don'?t|do\s+not|never|always|please|just|instead|switch|stick|keep|prefer|go\s+with|"
    r"try|stop|avoid|rather|but|and\s+(?:use|don'?t))\b)",
    _I,
)
_NOT_A_REASON = re.compile(
    r"^(?:that'?s|it'?s|this\s+is|it\s+is)\s+(?:not\s+(?:right|correct|what|quite|it\b)|wrong|incorrect|"
    r"fine|good|great|ok|okay|better|correct|right|for\b|about\b|how\b|what\b|a\s+(?:\w+\s+)?rule\b|"
    r"important\b)|^(?:it|this|that)\s+(?:works|looks|seems|was)\b",
    _I,
)


def _reasoning(t: str, core: _Core) -> tuple[str, str] | None:
    """The stated reason and how it joins the rule (``because``, ``keep`` or ``stmt``)."""
    said = [p.lower() for p in (core.preferred, core.rejected) if p]
    for m in _REASON.finditer(t):
        join = m.lastgroup or "stmt"
        text = t[m.end():] if join == "cause" else t[m.start():].lstrip(" ,;")
        text = text[: _first_stop(text[:600], _REASON_END)]
        if join == "stmt":  # "it breaks the CLI tests, use click.echo" -> the first part
            text = text[: _first_stop(text, _DIRECTIVE)]
        text = re.sub(r"[\s,;]+(?:please|thanks|thank\s+you|thx|ok)\b.*$", "", text, flags=_I)
        text = text.replace("`", "").strip(" ,;:-")
        if join == "stmt" and (_NOT_A_REASON.match(text) or any(p in text.lower() for p in said)):
            continue
        text = _cut(text, REASON_MAX)
        if len(text) >= 3:
            return text, "because" if join == "cause" else join
    return None


def _with_reason(rule: str, reason: tuple[str, str] | None) -> str:
    if reason is None or reason[0].lower() in rule.lower():
        return rule
    text, join = reason
    base = rule.rstrip(" .")
    if join == "because":
        out = f"{base} because {text}."
    elif join == "keep":
        out = f"{base}, {_lower_first(text)}."
    else:
        out = f"{base}. {_cap(text)}."
    return out if len(out) <= RULE_MAX + REASON_MAX else rule


_GLOBAL = re.compile(
    r"\b(?:globally|global\s+(?:rule|preference|setting)|in\s+all\s+(?:of\s+)?(?:my\s+|our\s+|the\s+)?"
    r"(?:projects|repos|repositories|codebases)|(?:in|for|across)\s+(?:every|any)\s+(?:project|repo|"
    r"repository|codebase)|every\s+(?:project|repo|repository|codebase)|all\s+(?:of\s+)?(?:my|our)\s+"
    r"(?:projects|repos|repositories|codebases|code)|across\s+(?:all\s+)?(?:projects|repos|repositories)|"
    r"not\s+just\s+(?:for|in|on)\s+(?:this\s+)?[\w.@/-]+|in\s+general)\b",
    _I,
)
_PROJECT = re.compile(
    r"\b(?:(?:in|for|within|inside)\s+this\s+(?:project|repo|repository|codebase|code\s*base|package|"
    r"monorepo|service|app|workspace)|here\s+we|in\s+here|in\s+our\s+(?:project|repo|repository|codebase)|"
    r"(?:this|our)\s+(?:project|repo|repository|codebase|team)\s+(?:uses|relies|prefers))\b",
    _I,
)


def _scope(t: str, core: _Core) -> str | None:
    if _GLOBAL.search(t):
        return "global"
    if core.scope or _PROJECT.search(t):
        return "project"
    return None


# ---- entry point -------------------------------------------------------------------------

def extract(message: str, proposal: str | None = None) -> Extracted:
    """The lesson fields in ``message``, a correction or preference answering ``proposal``."""
    if not message or not message.strip():
        raise ValueError("empty message")
    normal = _normalise(message)
    body, opened_no = _strip_openers(normal)
    if not body:
        body = normal.strip(" .!?") or normal or " ".join(message[:MAX_CHARS].split())
    prop = _proposal_text(proposal)
    ctx = _Ctx(prop, opened_no)
    core = _from_now_on(body, ctx) or _match(body, ctx) or _generic(body)
    reason = _reasoning(body, core)
    return Extracted(
        title=core.title,
        rule=_with_reason(core.rule, reason),
        rejected=core.rejected or None,
        preferred=core.preferred or None,
        reasoning=reason[0] if reason else None,
        context=_context(prop) if prop else None,
        shape=core.shape,
        kind=core.kind,
        scope_hint=_scope(normal, core),
    )
