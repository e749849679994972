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
costs little. The shapes of a choice between two things are :mod:`lore.extract.choices`, the
proposal read for context :mod:`lore.extract.proposal`, and the reason, scope, files and
condition around a rule :mod:`lore.extract.qualifiers`; this module holds the other shapes
and puts the pieces together.
"""
from __future__ import annotations

import re
from collections.abc import Callable

from lore.extract.phrases import (
    CONTEXT_MAX,
    LINE_MAX,
    MAX_CHARS,
    PRONOUNS,
    QUOTES,
    RULE_MAX,
    TITLE_MAX,
    VERBS,
    Core,
    Extracted,
    as_phrase,
    as_sentence,
    as_title,
    at_clause_start,
    cut_at,
    defill,
    first_clause,
    first_stop,
    first_word,
    lower_first,
    normalise,
    pair,
    preceding_word,
    single,
    skip_boundary,
    strip_openers,
    term,
    vague,
)

__all__ = ["MAX_CHARS", "Extracted", "extract", "names_what_was_said", "RuleExtractor"]
from lore.extract.choices import (
    DONT,
    PRONOUN,
    Ctx,
    dont_use_instead,
    prefer_over,
    rather_than,
    use_instead,
    use_instead_of,
    we_use,
)
from lore.extract.proposal import proposal_context, proposal_noun, proposal_text, split_sentences
from lore.extract.qualifiers import (
    condition_of,
    file_scope,
    framed,
    reasoning_of,
    rule_line,
    scope_of,
    third_person,
    with_reason,
)

_I = re.IGNORECASE


# ---- negatives, positives and the rest (the choices: lore.extract.choices) ---------------

def _stop_doing(t: str, ctx: Ctx) -> Core | None:
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


def _never(t: str, ctx: Ctx) -> Core | None:
    pattern = r"\b(?:never(?:\s+ever)?|" + DONT + r"\s+(?:you\s+)?ever|do\s+not\s+ever)\s+(?!mind\b)"
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


def _always(t: str, ctx: Ctx) -> Core | None:
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
        r = re.match(r"[\s,;.\-]*(?:and\s+|but\s+)?(?:never|not|" + DONT + r")\s+(?:use\s+|using\s+)?",
                     rest, _I)
        rejected = as_phrase(first_clause(rest[r.end():])) or None if r else None
        head = f"Always {x}" + (f", never {rejected}" if rejected else "")
        return single("always", "preference", head, preferred=preferred, rejected=rejected, pos=m.start())
    return None


_DONT_SKIP = frozenset(
    "know think see understand worry mind care remember get believe recall mean feel agree expect "
    "forget apologize apologise".split()
)


def _dont(t: str, ctx: Ctx) -> Core | None:
    pattern = (r"\b(?:" + DONT + r"|doesn'?t\s+need\s+to|does\s+not\s+need\s+to|no\s+need\s+to|"
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


def _wrong_should_be(t: str, ctx: Ctx) -> Core | None:
    """"X is wrong, it should be Y" / "that's wrong, it should be Y" (X from the proposal)."""
    m = _WRONG.match(t)
    if not m:
        return None
    y = as_phrase(first_clause(t[m.end():]))
    if vague(y):
        return None
    x = as_phrase(m.group("x") or "")
    if vague(x) or x.lower() in PRONOUNS:
        x = proposal_noun(ctx.proposal, y) or ""
    verb = m.group("verb").lower()
    head = f"Use {y}" if verb in ("be", "use") else f"{verb.capitalize()} {y}"
    if x:
        return Core("wrong_should_be", "preference", as_title(f"{head}, not {x}"),
                    as_sentence(f"{head} instead of {x}"), x, y)
    return single("wrong_should_be", "preference", head, preferred=y)


# Tried in order, the first match wins.
_PAIRS: tuple[Callable[[str, Ctx], Core | None], ...] = (
    _wrong_should_be, dont_use_instead, we_use, use_instead_of, prefer_over, rather_than,
    use_instead,
)
# One-sided rules: the one that comes first in the message wins.
_SINGLES: tuple[Callable[[str, Ctx], Core | None], ...] = (_stop_doing, _never, _always, _dont)
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


def _positive(t: str, ctx: Ctx, negative: Core) -> Core | None:
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
        if nxt.group("end") and not (PRONOUN.search(y) or re.search(r"\binstead\b", t[at:at + 200], _I)):
            return None
        if PRONOUN.search(y) and len(y.split()) <= 2:
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
    if obj and acted and PRONOUN.search(pos_title):
        pos_title = PRONOUN.sub(obj.group(2), pos_title, count=1)  # "put them in the vault"
        preferred = lower_first(pos_title)
    neg_head = neg.title if neg.title.startswith(("Never", "Avoid", "Don't")) else neg.rule.rstrip(".")
    title = f"{pos_title}; {lower_first(neg_head)}"
    rule = as_sentence(title) if len(title) <= LINE_MAX else pos.rule
    return Core("both", "preference", as_title(title if len(title) <= TITLE_MAX else pos.title), rule,
                rejected, preferred, pos.scope, min(pos.pos, neg.pos))


def _negatives(t: str, ctx: Ctx) -> Core | None:
    found = [c for c in (shape(t, ctx) for shape in _NEGATIVE) if c is not None]
    return min(found, key=lambda c: c.pos) if found else None


def _match(t: str, ctx: Ctx) -> Core | None:
    for shape in _PAIRS:
        core = shape(t, ctx)
        if core is not None:
            if core.shape == "use_instead":  # "never X, Y instead": X is in the message
                neg = _negatives(t, ctx)
                if neg is not None and neg.rejected:
                    plain = use_instead(t, Ctx("", ctx.opened_no))
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


def _from_now_on(t: str, ctx: Ctx) -> Core | None:
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
    sentences = split_sentences(t)
    return sentences[0] if sentences else ""


def _generic(t: str) -> Core:
    sentences = split_sentences(t)
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
    prop = proposal_text(proposal)
    ctx = Ctx(prop, opened_no)
    text, globs, where = file_scope(body)
    text, when = condition_of(text)
    text = text or body
    core = _from_now_on(text, ctx) or _match(text, ctx) or _generic(text)
    reason = reasoning_of(text, core)
    frame = ", ".join(f for f in (where, lower_first(when) if where else when) if f)
    bare = framed(core.rule, frame, LINE_MAX)
    context = (cut_at(when.split(" ", 1)[1], CONTEXT_MAX) if when
               else proposal_context(prop) if prop else None)
    return Extracted(
        title=third_person(framed(core.title, frame, TITLE_MAX), "").rstrip("."),
        rule=rule_line(third_person(with_reason(bare, reason), text), third_person(bare, "")),
        rejected=core.rejected or None,
        preferred=core.preferred or None,
        reasoning=reason[0] if reason else None,
        context=context,
        shape=core.shape,
        kind=core.kind,
        scope_hint=scope_of(normal, core),
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
