"""One correction or stated preference turned into the fields of a preference lesson.

Heuristics only, no model and no network: the message is matched against the phrasings
people use to redirect a coding agent — "X is wrong, it should be Y", "don't use X, use Y",
"we use Y", "Y instead of X", "I prefer Y over X", "Y rather than X", "not X but Y", "use Y
not X", "use Y instead", "always Y", "never X", "stop X", "don't X", "from now on …" — and the
pieces are trimmed into a title, a one-line rule, what is rejected and what is preferred. Both
halves are kept: a "never X" or "stop X" said beside an instruction ("open a PR instead",
"pnpm is our package manager") becomes one rule with both, and a pronoun in the instruction
takes the thing the rejected half named. A leading "when Z," gives the context and a language
or file extension ("in Python files") the files the rule is for. Anything else falls back to
the message's first sentence. The proposal the message answers gives the context, and the
rejected thing when the message only says what to use instead.

Messages are cut to :data:`MAX_CHARS` first and every pattern is bounded, so a pasted log
costs little.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from lore.extract.phrases import (
    CONTEXT_MAX,
    LINE_MAX,
    MAX_CHARS,
    PRONOUNS,
    QUOTES,
    REASON_MAX,
    RULE_MAX,
    TITLE_MAX,
    USE_VERB,
    VERBS,
    Core,
    Extracted,
    as_phrase,
    as_sentence,
    as_title,
    at_clause_start,
    cap,
    cut_at,
    defill,
    first_clause,
    first_stop,
    first_word,
    last_clause,
    lower_first,
    normalise,
    pair,
    preceding_word,
    single,
    skip_boundary,
    strip_openers,
    term,
    text_before,
    vague,
)

__all__ = ["MAX_CHARS", "Extracted", "extract", "names_what_was_said", "RuleExtractor"]

_I = re.IGNORECASE
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
_LIBRARY = re.compile(r"^[a-z][\w-]*\.js$", _I)  # moment.js, chart.js: a library, not a file
_LOOSE_VERBS = ("use", "using", "install", "installing", "add", "adding", "switch", "via", "run", "running")
_FILE = re.compile(r"\.(?:py|js|ts|tsx|jsx|md|json|toml|ya?ml|txt|rs|go|rb|java|cfg|ini|lock|sh)$", _I)


def _proposal_text(proposal: str | None) -> str:
    if not proposal or not proposal.strip():
        return ""
    p = proposal if len(proposal) <= MAX_CHARS else proposal[:2000] + "\n" + proposal[-2000:]
    p = p.translate(QUOTES)
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
    return cut_at(chosen, CONTEXT_MAX) or None


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
        # The tool a step goes "with", "via" or "using" first: "install the dependencies with pip".
        found = sorted(_CANDIDATE.finditer(sentence),
                       key=lambda m: m.group("verb").lower() not in ("with", "via", "use", "using"))
        for m in found:
            raw = m.group("name")
            if m.group("verb").lower().startswith("run"):
                raw = raw.split(" ", 1)[0]  # "run npm install" -> npm
            name = as_phrase(raw, 60)
            name = re.sub(r"\s+(?:package|library|module|crate|gem|plugin|dependency)$", "", name, flags=_I)
            low = name.lower()
            if not name or low in PRONOUNS or low.split(" ", 1)[0] in PRONOUNS:
                continue
            if _overlaps(low, pref) or (_FILE.search(name) and not _LIBRARY.match(name)):
                continue
            named = raw.startswith("`") or any(c.isupper() or c.isdigit() or c in "@/._-" for c in name)
            verb = m.group("verb").lower().split()[0]
            tool = verb == "with" and not re.search(  # "install it with pip", not "start with tests"
                r"\b(?:start|begin|deal|help|go|work|continue|along|together|done|agree)\w*\s*$",
                sentence[: m.start()], _I)
            if named or verb in _LOOSE_VERBS or tool:
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


# "no Redis, use local file sessions": the opener "no" was stripped, a short noun phrase and
# an instruction to use something else remain.
_NO_X_USE = re.compile(
    r"^(?!(?:that|this|it|i|you|we|they|there|the\s+\w+\s+(?:is|are|was))\b)"
    r"(?P<x>(?:[\w.@/+#`-]+\s+){0,3}[\w.@/+#`-]+)\s*[,;:.]\s*"
    r"(?=(?:(?:just|instead|rather|always|only|please)\s+)*(?:use|switch(?:\s+over)?\s+to|go\s+with|"
    r"stick\s+(?:to|with)|keep)\s)", _I)
_NOT_A_NOUN = re.compile(r"\b(?:is|are|was|were|be|'s|wrong|right|fine|ok|okay|good|bad|please|"
                         r"thanks|wait|stop|not|don'?t|that|this|it)\b", _I)


def _dont_use_instead(t: str, ctx: _Ctx) -> Core | None:
    if ctx.opened_no:
        m = _NO_X_USE.match(t)
        if m and not _NOT_A_NOUN.search(m.group("x")):
            v = _NEXT_USE.search(t, m.end("x"))
            y = as_phrase(first_clause(t[v.end():])) if v else ""
            x, _ = term(m.group("x"), "noun")
            if x and y and not vague(y):
                return pair("dont_use_instead", y, "noun", x, "noun")
    for m in _DONT_USE.finditer(t):
        after = t[m.end():]
        x_raw = first_clause(after)
        # The "use Y" may come a clause later: "don't use X, it's huge; use Y instead".
        v = _NEXT_USE.search(after, len(x_raw), len(x_raw) + 240)
        if not x_raw.strip() or not v:
            continue
        purpose = re.search(r"\s+for\s+(?!(?:it|this|that|now)\b(?!\s+\w))\S", x_raw, _I)
        x, _ = term(x_raw[: purpose.start()] if purpose else x_raw, "noun")
        y = as_phrase(first_clause(after[v.end():]))
        if x and y:
            if purpose:  # "don't use X for Z, use Y": the rule keeps Z, the rejected side is X
                return replace(pair("dont_use_instead", y, "noun", as_phrase(x_raw), "noun"), rejected=x)
            return pair("dont_use_instead", y, "noun", x, "noun")
    # "don't X, Y instead"
    for m in re.finditer(r"\b" + _DONT + r"\s+", t, _I):
        after = t[m.end():]
        x_raw = first_clause(after)
        rest = skip_boundary(after[len(x_raw):])
        y_raw = first_clause(rest)
        if not x_raw.strip() or not y_raw.strip():
            continue
        if not re.match(r"\s+instead\b(?!\s+of\b)", rest[len(y_raw):], _I):
            continue
        x, xform = term(x_raw, "verb")
        y, yform = term(y_raw, "noun")
        if x and y:
            x, y = _resolve(x, xform, y)
            return pair("dont_use_instead", y, yform, x, "noun" if xform == "noun" else "verb")
    return None


_PRONOUN = re.compile(r"\b(?:them|it|those|these|that|this|they)\b", _I)
_FOR_WHAT = re.compile(
    r"^(?P<thing>.+?)\s+(?:for|in|to|with|on)\s+(?P<what>[\w.@/ -]{2,40})$", _I)


def _resolve(x: str, xform: str, y: str) -> tuple[str, str]:
    """"don't use Redis for sessions, keep them in local files": the pronoun in ``y`` is what
    ``x`` was for, and the rejected thing is what ``x`` named ("Redis")."""
    if xform != "noun" or not _PRONOUN.search(y):
        return x, y
    m = _FOR_WHAT.match(x)
    if not m:
        return x, _PRONOUN.sub(x, y, count=1)
    return m.group("thing"), _PRONOUN.sub(m.group("what"), y, count=1)


def _use_instead_of(t: str, ctx: _Ctx) -> Core | None:
    for m in re.finditer(r"\binstead\s+of\s+", t, _I):
        before = text_before(last_clause(t[: m.start()]))
        after = t[m.end():]
        x_raw = first_clause(after)
        if before:
            y_raw = before
        else:  # "instead of X, (use) Y" / "instead of X use Y"
            inner = re.search(r"\s+(?:use|switch\s+to|go\s+with)\s+", x_raw, _I)
            if inner:
                x_raw, y_raw = x_raw[: inner.start()], x_raw[inner.start():]
            else:
                y_raw = first_clause(skip_boundary(after[len(x_raw):]))
        purpose = re.search(r"\s+for\s+(?!(?:it|this|that|now)\b(?!\s+\w))\S", x_raw, _I)
        x, xform = term(x_raw[: purpose.start()] if purpose else x_raw, "noun")
        y, yform = term(y_raw, "noun")
        if x and y:
            core = pair("use_instead_of", y, yform, x, "gerund" if xform == "gerund" else "noun")
            if purpose:  # "use Y instead of X for Z": the rule keeps Z, the rejected side is X
                whole = pair("use_instead_of", y, yform, as_phrase(x_raw), "gerund" if xform == "gerund"
                             else "noun")
                return replace(whole, rejected=core.rejected)
            return core
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


def _prefer_over(t: str, ctx: _Ctx) -> Core | None:
    for m in _PREFER.finditer(t):
        if re.search(r"\b(?:if|whatever|whichever|do|would|what|which|how)\s+(?:you|u)\s*$",
                     t[max(0, m.start() - 20): m.start()], _I):
            continue
        after = t[m.end():]
        verbish = bool(re.search(r"\bto\s+$", m.group(0), _I))
        x_raw = first_clause(after)
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
                y_raw = first_clause(after[len(x_raw) + tail.end():])
        x, xform = term(x_raw, "verb" if verbish else "noun")
        if not x:
            continue
        y, yform = term(y_raw, "noun") if y_raw else ("", "noun")
        if not y:
            head = f"Prefer {x}" if xform != "verb" else f"Prefer to {x}"
            return single("prefer_over", "preference", head, preferred=x)
        if xform == "verb":
            return pair("prefer_over", x, xform, y, yform)
        head = f"Prefer {x} over {y}"
        return single("prefer_over", "preference", head, preferred=x, rejected=y)
    for m in _RATHER.finditer(t):
        after = t[m.end():]
        x_raw = first_clause(after)
        sep = re.search(r"\s+than\s+(?:use\s+|using\s+)?", x_raw, _I)
        if not sep:
            continue
        x, xform = term(x_raw[: sep.start()], "noun" if m.group(0).lower().endswith("use ") else "verb")
        y, yform = term(x_raw[sep.end():], xform)
        if not (x and y):
            continue
        if xform == "verb":
            return pair("prefer_over", x, xform, y, "verb" if yform == "verb" else yform)
        return single("prefer_over", "preference", f"Prefer {x} over {y}", preferred=x, rejected=y)
    return None


_NOT_BUT = re.compile(
    r"(?:^|(?<=[.!?;:,\n])\s*|\b(?:it'?s|it\s+is|that'?s|should\s+be|is|are|use)\s+)not\s+"
    + _NOT_STARTS
    + r"(?P<x>(?:[^\n,;.]|\.(?=\w)){1,80}?)(?:\s*,?\s+but\s+(?:rather\s+|instead\s+)?|\s*[,;]\s*rather\s+)"
    r"(?P<y>[^\n]{1,200})",
    _I,
)


def _rather_than(t: str, ctx: _Ctx) -> Core | None:
    for m in re.finditer(r"\brather\s+than\s+", t, _I):
        y_raw = text_before(last_clause(t[: m.start()]))
        x_raw = first_clause(t[m.end():])
        if not y_raw:  # "rather than X, Y"
            y_raw = first_clause(skip_boundary(t[m.end() + len(x_raw):]))
        y, yform = term(y_raw, "noun")
        x, xform = term(x_raw, "noun")
        if x and y:
            return pair("rather_than", y, yform, x, "gerund" if xform == "gerund" else "noun")
    m2 = _NOT_BUT.search(t)
    if m2:
        x, _ = term(m2.group("x"), "noun")
        y, yform = term(first_clause(m2.group("y")), "noun")
        if x and y:
            return pair("rather_than", y, yform, x, "noun")
    for m in re.finditer(r"\s+(?:and\s+)?not\s+" + _NOT_STARTS, t, _I):  # "use Y not X"
        before = text_before(last_clause(t[: m.start()]))
        if not USE_VERB.match(before) or len(before.split()) > 6:
            continue
        y, yform = term(before, "noun")
        x, xform = term(first_clause(t[m.end():]), "noun")
        if x and y and not vague(x):
            return pair("rather_than", y, yform, x, "gerund" if xform == "gerund" else "noun")
    for m in re.finditer(r",\s*(?:and\s+)?not\s+" + _NOT_STARTS, t, _I):
        y_raw = text_before(last_clause(t[: m.start()]))
        x_raw = first_clause(t[m.end():])
        y, yform = term(y_raw, "noun")
        x, xform = term(x_raw, "noun")
        if x and y:
            return pair("rather_than", y, yform, x, "gerund" if xform == "gerund" else "noun")
    return None


def _use_instead(t: str, ctx: _Ctx) -> Core | None:
    y_raw = ""
    said_instead = True
    for m in re.finditer(r"\binstead\b(?!\s+of\b)", t, _I):
        before = text_before(last_clause(t[: m.start()]))
        y_raw = before or first_clause(skip_boundary(t[m.end():]))
        if y_raw:
            break
    if not y_raw and ctx.opened_no:
        v = USE_VERB.match(defill(t))  # "no, use Y"
        if v and v.group(0).split()[0].lower() in ("use", "switch", "go", "stick"):
            y_raw, said_instead = first_clause(defill(t)), False
    if not y_raw:
        return None
    y, yform = term(y_raw, "noun")
    if vague(y):
        return None
    rejected = _proposal_noun(ctx.proposal, y) if said_instead else None
    if rejected:
        return pair("use_instead", y, yform, rejected, "noun")
    head = f"Use {y}" if yform == "noun" else (f"Prefer {y}" if yform == "gerund" else y)
    return single("use_instead", "preference", head, preferred=y)


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


def _we_use(t: str, ctx: _Ctx) -> Core | None:
    m = _WE_DONT_USE.search(t)
    if m:
        x, _ = term(first_clause(t[m.end():]), "noun")
        if x:
            return Core("we_use", "project_rule", as_title(f"Don't use {x}"),
                         as_sentence(f"Don't use {x} in this project"), x, None, "project")
    for m in _WE_USE.finditer(t):
        if re.search(r"\b(?:how|can|could|should|why|do|did|would|if|what)\s+$",
                     t[max(0, m.start() - 12): m.start()], _I):
            continue
        after = t[m.end():]
        x_raw = first_clause(after)
        rest = after[len(x_raw):][:300]
        inner = re.search(r"\s+(?:and\s+|but\s+)?(?:not|never)\s+(?:using\s+)?", x_raw, _I)
        if inner:  # "we're using vitest here not jest"
            x_raw, rest = x_raw[: inner.start()], x_raw[inner.start():]
        purpose = ""
        split = re.search(r"\s+for\s+", x_raw, _I)
        if split:
            x_raw, purpose = x_raw[: split.start()], as_phrase(x_raw[split.end():])
        x, _ = term(x_raw, "noun")
        if not x or x.lower() in PRONOUNS:
            continue
        r = re.match(
            r"[\s,;.:\-]*(?:and\s+|but\s+|so\s+)?(?:not|never|instead\s+of|rather\s+than|"
            + _DONT + r"\s+use|no)\s+(?:using\s+)?",
            rest,
            _I,
        )
        rejected = term(first_clause(rest[r.end():]), "noun")[0] or None if r else None
        use = f"{x} for {purpose}" if purpose else x
        title = f"Use {use}, not {rejected}" if rejected else f"Use {use}"
        rule = f"Use {use}" + (f" instead of {rejected}" if rejected else "") + " in this project"
        return Core("we_use", "project_rule", as_title(title), as_sentence(rule), rejected, x, "project")
    return None


def _stop_doing(t: str, ctx: _Ctx) -> Core | None:
    for m in re.finditer(r"\b(?:(?:stop|quit|cease)\s+(?:doing\s+|with\s+)?|no\s+more\s+)", t, _I):
        before = t[max(0, m.start() - 60): m.start()]
        lead = re.search(r"(?:please|just|and|so|now|pls|can\s+you|could\s+you|will\s+you|"
                         r"you\s+(?:need|have)\s+to|you\s+should|you\s+must)\s*$", before, _I)
        if not (at_clause_start(t, m.start()) or lead):
            continue
        x = as_phrase(first_clause(t[m.end():]))
        if vague(x) or first_word(x) in PRONOUNS:
            continue
        return single("stop_doing", "anti_pattern", f"Avoid {x}", rejected=term(x, "verb")[0],
                       pos=m.start())
    return None


def _never(t: str, ctx: _Ctx) -> Core | None:
    pattern = r"\b(?:never(?:\s+ever)?|" + _DONT + r"\s+(?:you\s+)?ever|do\s+not\s+ever)\s+(?!mind\b)"
    for m in re.finditer(pattern, t, _I):
        if preceding_word(t, m.start()) in ("i", "you", "it", "he", "she", "they", "that", "this",
                                              "i've", "you've", "i'd", "would", "have", "has", "had"):
            continue
        x = as_phrase(first_clause(t[m.end():]))
        if vague(x):
            continue
        rejected, _ = term(x, "verb")
        return single("never", "anti_pattern", f"Never {x}", rejected=rejected, pos=m.start())
    return None


def _always(t: str, ctx: _Ctx) -> Core | None:
    for m in re.finditer(r"\balways\s+", t, _I):
        if preceding_word(t, m.start()) in ("i", "you", "it", "he", "she", "they", "that", "this", "almost",
                                              "not", "was", "is", "are", "were", "has", "have", "had"):
            continue
        after = t[m.end():]
        x_raw = first_clause(after)
        x = as_phrase(x_raw)
        if vague(x):
            continue
        preferred, _ = term(x, "verb")
        rest = after[len(x_raw):][:300]
        r = re.match(r"[\s,;.\-]*(?:and\s+|but\s+)?(?:never|not|" + _DONT + r")\s+(?:use\s+|using\s+)?",
                     rest, _I)
        rejected = as_phrase(first_clause(rest[r.end():])) or None if r else None
        head = f"Always {x}" + (f", never {rejected}" if rejected else "")
        return single("always", "preference", head, preferred=preferred, rejected=rejected, pos=m.start())
    return None


_DONT_SKIP = frozenset(
    "know think see understand worry mind care remember get believe recall mean feel agree expect "
    "forget apologize apologise".split()
)


def _dont(t: str, ctx: _Ctx) -> Core | None:
    pattern = (r"\b(?:" + _DONT + r"|doesn'?t\s+need\s+to|does\s+not\s+need\s+to|no\s+need\s+to|"
               r"there'?s\s+no\s+need\s+to|avoid|shouldn'?t|should\s+not)\s+")
    for m in re.finditer(pattern, t, _I):
        after = t[m.end():]
        if first_word(after).strip(",.") in _DONT_SKIP:
            continue
        subject = preceding_word(t, m.start())
        x_raw = first_clause(after)
        lead = re.match(r"(?:want\s+(?:you\s+|us\s+)?to|need\s+to|have\s+to|bother\s+(?:to\s+)?|even\s+|"
                        r"want|like|need)\s+", x_raw, _I)
        noun = False
        if lead:
            word = lead.group(0).split()[0].lower()
            noun = word in ("want", "like", "need") and not re.search(r"\bto\s+$", lead.group(0), _I)
            x_raw = x_raw[lead.end():]
        elif subject == "i":
            continue  # "I don't ..." without want/like/need is a statement, not a rule
        x = as_phrase(x_raw)
        if vague(x):
            continue
        rejected, form = term(x, "verb")
        verb = m.group(0).split()[0].lower()
        head = f"Avoid {x}" if noun or verb == "avoid" else f"Don't {x}"
        return single("dont", "anti_pattern", head, rejected=rejected if form == "noun" else x,
                       pos=m.start())
    return None


_WRONG = re.compile(
    r"^(?:(?P<x>(?:[^,;.!?\n]|\.(?=\w)){1,60}?)\s+(?:is|are|was|were)\s+(?:wrong|incorrect|not\s+right)|"
    r"(?:that'?s|this\s+is|it'?s|that\s+is|it\s+is)\s+(?:wrong|incorrect|not\s+right))\b(?:\s+(?:here|there))?"
    r"[\s,;.:!\-\u2013\u2014]*(?:(?:it|this|that|they|these|the\s+[\w ]{1,30}?)\s+)?"
    r"(?:should|must|needs\s+to|has\s+to|ought\s+to)\s+(?P<verb>be|use|go|live|say|return|call)\s+",
    _I,
)


def _wrong_should_be(t: str, ctx: _Ctx) -> Core | None:
    """"X is wrong, it should be Y" / "that's wrong, it should be Y" (X from the proposal)."""
    m = _WRONG.match(t)
    if not m:
        return None
    y = as_phrase(first_clause(t[m.end():]))
    if vague(y):
        return None
    x = as_phrase(m.group("x") or "")
    if vague(x) or x.lower() in PRONOUNS:
        x = _proposal_noun(ctx.proposal, y) or ""
    verb = m.group("verb").lower()
    head = f"Use {y}" if verb in ("be", "use") else f"{verb.capitalize()} {y}"
    if x:
        return Core("wrong_should_be", "preference", as_title(f"{head}, not {x}"),
                    as_sentence(f"{head} instead of {x}"), x, y)
    return single("wrong_should_be", "preference", head, preferred=y)


# Tried in order, the first match wins.
_PAIRS: tuple[Callable[[str, _Ctx], Core | None], ...] = (
    _wrong_should_be, _dont_use_instead, _we_use, _use_instead_of, _prefer_over, _rather_than,
    _use_instead,
)
# One-sided rules: the one that comes first in the message wins.
_SINGLES: tuple[Callable[[str, _Ctx], Core | None], ...] = (_stop_doing, _never, _always, _dont)
_NEGATIVE = (_stop_doing, _never, _dont)

# "pnpm is our package manager", "the source of truth is the schema file"
_IS_OURS = re.compile(
    r"(?:^|(?<=[.!?;,:\n])\s*|\s[-\u2013\u2014]\s)(?P<y>`[^`\n]{1,60}`|[\w.@/+-]{2,40}(?:\s+[\w.@/+-]{2,40})?)"
    r"\s+is\s+(?:our|the|what\s+we\s+use\s+(?:as|for))\s+(?P<what>[\w -]{2,40}?)\s*(?:[.!?;,\n]|$)",
    _I,
)
# A sentence that says what to use: "Use a real SQLite file."
_USE_SENTENCE = re.compile(
    r"(?:^|[.!?;]\s+|\n|\s[-\u2013\u2014]\s)(?:(?:just|instead|please|rather)[\s,]+)?"
    r"(?P<v>use|switch\s+to|go\s+with|stick\s+(?:to|with))\s+", _I)


def _positive(t: str, ctx: _Ctx, negative: Core) -> Core | None:
    """What to do, said beside a "never"/"don't"/"stop": "always Y", "Y is our Z", "use Y"."""
    always = _always(t, ctx)
    if always is not None and always.pos != negative.pos:
        return always
    m = _IS_OURS.search(t)
    if m:
        y = as_phrase(m.group("y"))
        if y and not vague(y) and first_word(y) not in PRONOUNS | {"this", "that", "it"}:
            return single("is_ours", "preference", f"Use {y}", preferred=y)
    for m in _USE_SENTENCE.finditer(t):
        if m.start() <= negative.pos <= m.end():
            continue
        y = as_phrase(first_clause(t[m.end():]))
        if y and not vague(y):
            return single("use", "preference", f"Use {y}", preferred=y, pos=m.start())
    # A later clause that is an instruction: "don't commit to main; open a PR", past a reason
    # ("never use sudo, it is not needed; run it as the current user"). A new sentence counts
    # only when it points back ("Redact them first") or says "instead".
    at = negative.pos
    for _ in range(3):
        said = first_clause(t[at:])
        nxt = re.match(r"\s*(?:(?P<end>[.!])|[;,]|\s[-\u2013\u2014]+)\s*", t[at + len(said):])
        if not nxt:
            return None
        at += len(said) + nxt.end()
        clause = first_clause(t[at:])
        y = as_phrase(clause)
        if re.match(r"(?:it|that|this|they|these|those|we|there)\b", y, _I):
            continue  # a reason or a remark
        if nxt.group("end") and not (_PRONOUN.search(y) or re.search(r"\binstead\b", t[at:at + 200], _I)):
            return None
        if _PRONOUN.search(y) and len(y.split()) <= 2:
            return None  # "run it": nothing to learn without what "it" is
        if first_word(y) in VERBS and first_word(y) not in ("use", "stop", "avoid", "do", "be") \
                and not vague(y):
            return single("imperative", "preference", y, preferred=lower_first(y), pos=at)
        return None
    return None


def _both(pos: Core, neg: Core) -> Core:
    """One rule from what to do and what never to do: "Open a PR; never commit to main."."""
    if pos.rejected:
        return pos
    rejected = neg.rejected
    plain_use = ("avoid using", "never use", "don't use", "avoid " + (rejected or "").lower())
    # "stop using X … use Y": X names a thing used, so the rule keeps it as the alternative
    used = neg.title.lower().startswith(("avoid using ", "never use ", "don't use ", "stop using "))
    if pos.title.startswith("Use ") and rejected and (used or " " not in rejected.strip()) and \
            neg.title.lower().startswith(plain_use):
        return pair("both", pos.preferred or pos.title[4:], "noun", rejected, "noun")
    pos_title, preferred = pos.title, pos.preferred
    obj = re.match(r"(\w+)\s+((?:the\s+|a\s+|an\s+)?[\w.@/-]+"
                   r"(?:\s+(?!(?:in|on|to|for|from|with|at|into|by)\b)[\w.@/-]+)?)", rejected or "")
    acted = rejected and re.search(rf"\b(?:never|don't|avoid)\s+{re.escape(rejected)}", neg.title, _I)
    if obj and acted and _PRONOUN.search(pos_title):
        pos_title = _PRONOUN.sub(obj.group(2), pos_title, count=1)  # "put them in the vault"
        preferred = lower_first(pos_title)
    neg_head = neg.title if neg.title.startswith(("Never", "Avoid", "Don't")) else neg.rule.rstrip(".")
    title = f"{pos_title}; {lower_first(neg_head)}"
    rule = as_sentence(title) if len(title) <= LINE_MAX else pos.rule
    return Core("both", "preference", as_title(title if len(title) <= TITLE_MAX else pos.title), rule,
                rejected, preferred, pos.scope, min(pos.pos, neg.pos))


def _negatives(t: str, ctx: _Ctx) -> Core | None:
    found = [c for c in (shape(t, ctx) for shape in _NEGATIVE) if c is not None]
    return min(found, key=lambda c: c.pos) if found else None


def _match(t: str, ctx: _Ctx) -> Core | None:
    for shape in _PAIRS:
        core = shape(t, ctx)
        if core is not None:
            if core.shape == "use_instead":  # "never X, Y instead": X is in the message
                neg = _negatives(t, ctx)
                if neg is not None and neg.rejected:
                    plain = _use_instead(t, _Ctx("", ctx.opened_no))
                    return _both(plain or core, neg)
            return core
    found = [c for c in (shape(t, ctx) for shape in _SINGLES) if c is not None]
    if not found:
        return None
    first = min(found, key=lambda c: c.pos)
    if first.shape != "always" and first.kind == "anti_pattern":
        pos = _positive(t, ctx, first)
        if pos is not None:
            return _both(pos, first)
    return first


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


def _from_now_on(t: str, ctx: _Ctx) -> Core | None:
    for m in _FROM_NOW_ON.finditer(t):
        post = t[m.end():]
        rest = ""
        if at_clause_start(t, m.start()):
            rest = skip_boundary(post)
        elif m.group(0).lower().startswith(_TRAILING_MARKERS) and re.match(r"\s*(?:[,;.!?\n]|$)", post):
            before = t[: m.start()]
            start = max((x.end() for x in re.finditer(r"[.!?](?=\s)|\n", before)), default=0)
            rest = (before[start:].rstrip() + post).strip()
        if not rest:
            continue
        rest = defill(rest)
        core = _match(rest, ctx)
        if core is not None:
            return Core("from_now_on", core.kind, core.title, core.rule, core.rejected, core.preferred,
                         core.scope)
        first = _first_sentence(rest)
        if not first:
            continue
        phrase = as_phrase(first, TITLE_MAX)
        preferred, form = term(phrase, "verb")
        head = f"Use {preferred}" if form == "noun" else phrase
        return Core("from_now_on", "preference", as_title(head), as_sentence(first), None, preferred or None)
    return None


def _first_sentence(t: str) -> str:
    sentences = _sentences(t)
    return sentences[0] if sentences else ""


def _generic(t: str) -> Core:
    sentences = _sentences(t)
    if len(sentences) > 1 and _REJECTION_ONLY.match(sentences[0]):
        sentences = sentences[1:]
    first = sentences[0] if sentences else t
    head = first.rstrip(".!? ")
    if len(head) > TITLE_MAX:
        comma = first_stop(head, re.compile(r"[,;:]"))
        if 12 <= comma <= TITLE_MAX:
            head = head[:comma]
    rule = ""
    for s in sentences:
        if rule and len(rule) + 1 + len(s) > RULE_MAX:
            break
        rule = f"{rule} {s}".strip()
    return Core("generic", "preference", as_title(head.replace("`", "")) or "(empty)",
                 as_sentence(rule or first))


# ---- reasoning and scope --------------------------------------------------------------

_REASON = re.compile(
    r"(?P<cause>(?:\bbecause|(?<!\w)'cause|\bcuz|\bsince|\bgiven\s+that)\s+(?!of\b)|[,;]\s*as\s+(?=(?:it|its|it's|this|"
    r"that|they|we|the|our|there|you|i)\b))"
    r"|(?P<keep>\b(?:because\s+of|due\s+to|so\s+that|in\s+order\s+to|otherwise)\s+|"
    r"\bso\s+(?=(?:it|its|it's|we|the|that|you|they|tests?|ci|builds?|there|nothing|our|i)\b))"
    r"|(?P<stmt>(?:^|(?<=[.!?;,:\n])|(?<=[.!?;,:\n]\s)|(?<=\s[-\u2013\u2014]\s))(?=(?:it'?s|it\s+is|it\s+was|"
    r"that'?s|they'?re|they\s+\w+|we\s+(?:need|rely|depend|have|run|deploy|ship|still|only|use|are|'re)|"
    r"(?:it|this|that)\s+(?:\w+s|won'?t|doesn'?t|don'?t|can'?t|will|would|isn'?t|aren'?t|are)|"
    r"(?:the|our)\s+(?:whole\s+|entire\s+)?(?:[\w.-]+\s+){0,2}(?:is|are|runs|uses|needs|has|must|"
    r"breaks|fails|lives|expects))\b))",
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


def _reasoning(t: str, core: Core) -> tuple[str, str] | None:
    """The stated reason and how it joins the rule (``because``, ``keep`` or ``stmt``)."""
    said = [p.lower() for p in (core.preferred, core.rejected) if p]
    for m in _REASON.finditer(t):
        join = m.lastgroup or "stmt"
        text = t[m.end():] if join == "cause" else t[m.start():].lstrip(" ,;")
        text = text[: first_stop(text[:600], _REASON_END)]
        if join == "stmt":  # "it breaks the CLI tests, use click.echo" -> the first part
            text = text[: first_stop(text, _DIRECTIVE)]
        text = re.sub(r"[\s,;]+(?:please|thanks|thank\s+you|thx|ok)\b.*$", "", text, flags=_I)
        text = text.replace("`", "").strip(" ,;:-")
        if join == "stmt" and (_NOT_A_REASON.match(text) or any(p in text.lower() for p in said)):
            continue
        text = cut_at(text, REASON_MAX)
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
        out = f"{base}, {lower_first(text)}."
    else:  # a statement: "Use httpx, not requests: the whole service is async."
        keep = re.match(r"[A-Z]{2}|I\b", text)  # an acronym or "I" keeps its capital
        out = f"{base}: {text if keep else lower_first(text)}."
    return out if len(out) <= RULE_MAX + REASON_MAX else rule


# First person and filler a rule line must not keep ("I don't want you to X" -> "Don't X").
_FIRST_PERSON = (
    (re.compile(r"^(?:i|we)\s+(?:really\s+)?(?:don'?t|do\s+not)\s+want\s+(?:you\s+|us\s+)?to\s+", _I),
     "Don't "),
    (re.compile(r"^(?:i|we)\s+(?:really\s+)?(?:want|need|would\s+like|'d\s+like)\s+(?:you\s+|us\s+)?to\s+",
                _I), ""),
    (re.compile(r"\b(?:only\s+)?work\s+for\s+me\b", _I), "work only on one machine"),
    (re.compile(r"\bon\s+my\s+(?:machine|computer|laptop|box)\b", _I), "on one machine"),
)
_SOLUTION_ASKED = re.compile(
    r"\b(?:would|is|could)\s+there\s+(?:be\s+)?(?:a|an|some)\s+(?P<what>[\w-]+(?:\s+[\w-]+)?)\s+"
    r"(?:solution|way|approach|option)\b[^.!?\n]*\?", _I)


def _third_person(rule: str, text: str) -> str:
    """The line without first person; a question asking for a kind of solution ("would there
    be a cross-platform solution?") is kept as what to prefer."""
    out = rule
    for pattern, repl in _FIRST_PERSON:
        out = pattern.sub(repl, out)
    out = cap(out.strip())
    asked = _SOLUTION_ASKED.search(text)
    if asked and asked.group("what").lower() not in out.lower():
        what = asked.group("what")
        out = f"{out.rstrip(' .')}; prefer a {what} solution."
    return out


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


def _scope(t: str, core: Core) -> str | None:
    if _GLOBAL.search(t):
        return "global"
    if core.scope or _PROJECT.search(t):
        return "project"
    return None


# ---- conditions and files ---------------------------------------------------------------

_LANG_GLOBS = {
    "python": ("*.py",), "typescript": ("*.ts", "*.tsx"), "javascript": ("*.js", "*.jsx"),
    "go": ("*.go",), "rust": ("*.rs",), "ruby": ("*.rb",), "java": ("*.java",),
    "shell": ("*.sh",), "bash": ("*.sh",), "markdown": ("*.md",), "yaml": ("*.yaml", "*.yml"),
    "json": ("*.json",), "toml": ("*.toml",), "css": ("*.css",), "html": ("*.html",),
    "sql": ("*.sql",), "react": ("*.jsx", "*.tsx"), "c": ("*.c", "*.h"), "kotlin": ("*.kt",),
    "swift": ("*.swift",), "php": ("*.php",), "terraform": ("*.tf",), "vue": ("*.vue",),
}
_FILES = re.compile(
    r"\b(?:in|for|inside|within)\s+(?:all\s+|any\s+|the\s+|our\s+)?"
    r"(?P<what>" + "|".join(_LANG_GLOBS) + r"|\*?\.[a-z0-9]{1,8})\s+files?\b", _I)
_WHEN = re.compile(
    r"^(?P<lead>(?:when(?:ever)?|if|while|before|after|for)\s+(?P<z>[^,;.!?\n]{3,80}?)),\s*(?=\S)", _I)


# "in TypeScript" / "for Python code" at the end of a clause: the language's files.
_IN_LANGUAGE = re.compile(
    r"\b(?:[Ii]n|[Ff]or)\s+(?:the\s+)?(?P<what>Python|TypeScript|JavaScript|Go|Rust|Ruby|Java|Kotlin|Swift|PHP|SQL)"
    r"(?:\s+code)?(?=\s*(?:[,.;!?\n]|$))")


def _file_scope(t: str) -> tuple[str, tuple[str, ...], str]:
    """The text without "in Python files", the globs it names, and the words to put back."""
    m = _FILES.search(t) or _IN_LANGUAGE.search(t)
    if not m:
        return t, (), ""
    what = m.group("what").lower()
    globs = _LANG_GLOBS.get(what) or (f"*.{what.lstrip('*.')}",)
    head, tail = t[: m.start()].rstrip(" "), t[m.end():].lstrip(" ")
    rest = (head.rstrip(",") + " " + tail.lstrip(",")).strip() if not head or not tail \
        else (head + tail if tail[:1] in ",.;!?" else f"{head} {tail}")
    label = m.group("what") if what in _LANG_GLOBS else "*." + what.lstrip("*.")
    if what in _LANG_GLOBS and label.islower() and what not in ("c", "shell", "bash"):
        label = {"javascript": "JavaScript", "typescript": "TypeScript", "html": "HTML", "css": "CSS",
                 "sql": "SQL", "json": "JSON", "yaml": "YAML", "toml": "TOML", "php": "PHP"}.get(
                     what, label.capitalize())
    return rest, globs, f"In {label} files"


def _condition(t: str) -> tuple[str, str]:
    """ "When writing tests, use X" -> ("use X", "When writing tests")."""
    m = _WHEN.match(t)
    if not m or not t[m.end():].strip():
        return t, ""
    return t[m.end():], cap(m.group("lead").strip())


def _framed(text: str, frame: str, limit: int) -> str:
    if not frame:
        return text
    out = f"{frame}, {lower_first(text)}"
    return out if len(out) <= limit else text


def _line(rule: str, bare: str) -> str:
    """The rule as one line of at most :data:`LINE_MAX` characters."""
    if len(rule) <= LINE_MAX:
        return rule
    if len(bare) <= LINE_MAX:
        return bare
    return as_sentence(cut_at(bare, LINE_MAX - 1))


# ---- entry point -------------------------------------------------------------------------

def extract(message: str, proposal: str | None = None) -> Extracted | None:
    """The lesson fields in ``message``, a correction or preference answering ``proposal``;
    None when the message has no text to read."""
    if not message or not message.strip():
        return None
    normal = normalise(message)
    body, opened_no = strip_openers(normal)
    if not body:
        body = normal.strip(" .!?") or normal or " ".join(message[:MAX_CHARS].split())
    prop = _proposal_text(proposal)
    ctx = _Ctx(prop, opened_no)
    text, globs, where = _file_scope(body)
    text, when = _condition(text)
    text = text or body
    core = _from_now_on(text, ctx) or _match(text, ctx) or _generic(text)
    reason = _reasoning(text, core)
    frame = ", ".join(f for f in (where, lower_first(when) if where else when) if f)
    bare = _framed(core.rule, frame, LINE_MAX)
    context = cut_at(when.split(" ", 1)[1], CONTEXT_MAX) if when else (_context(prop) if prop else None)
    return Extracted(
        title=_third_person(_framed(core.title, frame, TITLE_MAX), "").rstrip("."),
        rule=_line(_third_person(_with_reason(bare, reason), text), _third_person(bare, "")),
        rejected=core.rejected or None,
        preferred=core.preferred or None,
        reasoning=reason[0] if reason else None,
        context=context,
        shape=core.shape,
        kind=core.kind,
        scope_hint=_scope(normal, core),
        globs=globs,
    )


class RuleExtractor:
    """The built-in extractor: the phrasings above, no model (entry point ``rules``)."""

    name = "rules"

    def extract(self, message: str, proposal: str | None = None) -> Extracted | None:
        return extract(message, proposal)


_WORD = re.compile(r"[A-Za-z][\w.+#/-]*[\w+#]|[A-Za-z]")
_PLAIN = frozenset("""a an the and or but not no nor of to in on at by for with from into onto
over under as is are be been being was were it its this that these those there here then than
so if when while do does did done don't dont use using used make made keep kept always never
instead rather should must will would can could may might please just only also every each
any all some more less new other one own same such your you we our us i me my they them their
he she his her what which who whom why how whose now ever again before after because since
file files code project rule rules way thing things work""".split())


def _stems(text: str) -> set[str]:
    return {w.lower().strip("./-")[:6] for w in _WORD.findall(text.translate(QUOTES))
            if w.lower() not in _PLAIN and len(w) > 2}


def names_what_was_said(rule: str, message: str) -> bool:
    """Whether a rule line written by a model names something the message named: a tool,
    file, command or practice (compared by word stems, function words aside). A line that
    shares nothing with the message was not read from it."""
    said = _stems(message)
    return bool(said & _stems(rule)) if said else True
