"""The shapes of a choice between two things: "don't use X, use Y", "use Y instead of X", "I
prefer Y over X", "Y rather than X", "not X but Y", "use Y instead", "we use Y" (the other
shapes and the entry point: :mod:`lore.extract.shapes`). Each takes the normalised text and
the :class:`Ctx` of the message and returns a :class:`~lore.extract.phrases.Core` or None."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from lore.extract.phrases import (
    PRONOUNS,
    USE_VERB,
    Core,
    as_phrase,
    as_sentence,
    as_title,
    defill,
    first_clause,
    last_clause,
    pair,
    single,
    skip_boundary,
    term,
    text_before,
    vague,
)
from lore.extract.proposal import proposal_noun

_I = re.IGNORECASE


# ---- shapes -----------------------------------------------------------------------------

DONT = r"(?:don'?t|do\s+not|dont)"
_NOT_STARTS = (
    r"(?!sure\b|only\b|just\b|really\b|quite\b|yet\b|now\b|that\b|this\b|exactly\b|necessarily\b|"
    r"always\b|entirely\b|at\s+all\b|a\s+(?:big\s+)?(?:deal|problem|fan|bad)\b|too\b|bad\b|working\b|"
    r"what\b|right\b|correct\b|true\b|needed\b|necessary\b|important\b|relevant\b|so\b|much\b|"
    r"enough\b|even\b|being\b|the\s+(?:point|issue|problem)\b|to\b|for\s+now\b|here\b|it\b)"
)


@dataclass(frozen=True, slots=True)
class Ctx:
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
    r"\b(?:" + DONT + r"|never)\s+(?:ever\s+)?use\s+|(?:^|(?<=[.!?;:,\n]))\s*not\s+" + _NOT_STARTS, _I
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


def dont_use_instead(t: str, ctx: Ctx) -> Core | None:
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
    for m in re.finditer(r"\b" + DONT + r"\s+", t, _I):
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


PRONOUN = re.compile(r"\b(?:them|it|those|these|that|this|they)\b", _I)
_FOR_WHAT = re.compile(
    r"^(?P<thing>.+?)\s+(?:for|in|to|with|on)\s+(?P<what>[\w.@/ -]{2,40})$", _I)


def _resolve(x: str, xform: str, y: str) -> tuple[str, str]:
    """"don't use Redis for sessions, keep them in local files": the pronoun in ``y`` is what
    ``x`` was for, and the rejected thing is what ``x`` named ("Redis")."""
    if xform != "noun" or not PRONOUN.search(y):
        return x, y
    m = _FOR_WHAT.match(x)
    if not m:
        return x, PRONOUN.sub(x, y, count=1)
    return m.group("thing"), PRONOUN.sub(m.group("what"), y, count=1)


def use_instead_of(t: str, ctx: Ctx) -> Core | None:
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


def prefer_over(t: str, ctx: Ctx) -> Core | None:
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


def rather_than(t: str, ctx: Ctx) -> Core | None:
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


def use_instead(t: str, ctx: Ctx) -> Core | None:
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
    rejected = proposal_noun(ctx.proposal, y) if said_instead else None
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


def we_use(t: str, ctx: Ctx) -> Core | None:
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
            + DONT + r"\s+use|no)\s+(?:using\s+)?",
            rest,
            _I,
        )
        rejected = term(first_clause(rest[r.end():]), "noun")[0] or None if r else None
        use = f"{x} for {purpose}" if purpose else x
        title = f"Use {use}, not {rejected}" if rejected else f"Use {use}"
        rule = f"Use {use}" + (f" instead of {rejected}" if rejected else "") + " in this project"
        return Core("we_use", "project_rule", as_title(title), as_sentence(rule), rejected, x, "project")
    return None
