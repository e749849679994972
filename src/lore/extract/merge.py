"""Does a new rule restate a known one, contradict it, or say the user changed their mind?

Meaning decides a restatement (the embedding similarity the pipeline computes), but names
veto it: two rules that name a different library, file, command, value, number, path or
identifier are two rules however alike their words ("use library-new-1 instead of
library-old-1 for handler 1" and the same with 7). :func:`names` reads those names and
:func:`may_restate` compares them, side by side.
"""

from __future__ import annotations

import re

from lore.extract.shapes import Extracted
from lore.store.rows import RuleCandidate

CHANGE_OF_MIND = re.compile(
    r"\b(?:from\s+now\s+on|going\s+forward|from\s+here\s+on|actually|instead|any\s*more|no\s+longer|"
    r"changed\s+my\s+mind|switch(?:ed)?\s+to|moved\s+to|migrated\s+to|we\s+now\s+use|these\s+days)\b",
    re.IGNORECASE)
_FILLER = frozenset("the a an to of for in on with use using uses used our my your this that it "
                    "please always never instead rather than not no just".split())

# A code span, or a word that carries a digit, an inner capital or an inner . / _ - @ + :
# (library-new-1, os.path, src/app, snake_case, useEffect, @scope/pkg, v2.1, 120).
_SPAN = re.compile(r"`([^`\n]{1,80})`")
_WORD = re.compile(r"[@A-Za-z0-9][\w@./+:-]*")
_NAMED = re.compile(r"\d|[a-z][A-Z]|\w[./_@+:-]\w")
# Words that are not names even with a digit or a dot in them.
_NOT_NAMES = frozenset("e.g i.e etc.".split())


def names(text: str | None) -> frozenset[str]:
    """The names in ``text``: code spans, identifiers with digits, dots, hyphens, underscores or
    slashes, versions and numbers, lower-cased."""
    if not text:
        return frozenset()
    out = {m.group(1).strip().lower() for m in _SPAN.finditer(text)}
    for m in _WORD.finditer(_SPAN.sub(" ", text)):
        word = m.group(0).rstrip(".:-/+")
        if word and _NAMED.search(word) and word.lower() not in _NOT_NAMES:
            out.add(word.lower())
    return frozenset(out)


def rule_names(title: str | None, preferred: str | None, rejected: str | None) -> frozenset[str]:
    """The names a rule is about: in its title and its two sides."""
    return names(title) | names(preferred) | names(rejected)


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


def _name_like(phrase: str) -> bool:
    """A side that is a name rather than a description: one or two words ("pnpm", "Redis")."""
    return 0 < len(phrase_tokens(phrase)) <= 2


# Words that frame a rule rather than name its subject: swapping one for another is a
# rewording ("avoid" / "don't"), as is swapping an adverb ("directly" / "straight").
_FRAME = frozenset("prefer avoid don't dont do never always stop keep make sure should must over "
                   "instead rather than not no please be is are you we i ever again any more "
                   "only all every".split())


def _one_swap(a: str | None, b: str | None) -> bool:
    """The same words but one, swapped for another that is neither a framing word nor an
    adverb: "run ruff before committing" / "run mypy before committing"."""
    ta, tb = phrase_tokens(a), phrase_tokens(b)
    if len(ta) != len(tb) or len(ta) < 2:
        return False
    diff = [(x, y) for x, y in zip(ta, tb, strict=True) if x != y]
    if len(diff) != 1:
        return False
    x, y = diff[0]
    return not ({x, y} & _FRAME or x.endswith("ly") or y.endswith("ly"))


def _spelled_apart(name: str, text: str) -> bool:
    """A hyphenated word the other rule writes as separate words ("force-push" / "force
    push"): the same words, not a different name."""
    return bool(_HYPHENATED.fullmatch(name)) and re.search(
        r"\b" + re.escape(name.replace("-", " ")) + r"\b", " ".join(text.lower().split())) is not None


_HYPHENATED = re.compile(r"[a-z]+(?:-[a-z]+)+")


def may_restate(ex: Extracted, c: RuleCandidate) -> bool:
    """Whether ``ex`` may restate the known rule ``c`` (a candidate row: title,
    pref_preferred, pref_rejected): the same names overall; on each side both fill, the names
    of one within the other's and, when both are one or two words, the same thing; and no
    title or side that differs from the other in one swapped word."""
    ours_text = " ".join(filter(None, (ex.title, ex.preferred, ex.rejected)))
    theirs_text = " ".join(filter(None, (c["title"], c["pref_preferred"], c["pref_rejected"])))
    our_names = {n for n in rule_names(ex.title, ex.preferred, ex.rejected)
                 if not _spelled_apart(n, theirs_text)}
    their_names = {n for n in rule_names(c["title"], c["pref_preferred"], c["pref_rejected"])
                   if not _spelled_apart(n, ours_text)}
    if our_names != their_names:
        return False
    if _one_swap(ex.title, c["title"]):
        return False
    for mine, theirs in ((ex.preferred, c["pref_preferred"]), (ex.rejected, c["pref_rejected"])):
        if not (mine and theirs):
            continue
        a, b = names(mine), names(theirs)
        if not (a <= b or b <= a):  # "Node 18" and "Node 18 for CI" may agree; 18 and 16 never
            return False
        if _name_like(mine) and _name_like(theirs) and not same_phrase(mine, theirs):
            return False
        if _one_swap(mine, theirs):
            return False
    return True


def contradicts(ex: Extracted, c: RuleCandidate) -> bool:
    """The new rule prefers what the known one rejects, or rejects what it prefers."""
    crossed = (same_phrase(ex.preferred, c["pref_rejected"])
               or same_phrase(ex.rejected, c["pref_preferred"]))
    agrees = same_phrase(ex.preferred, c["pref_preferred"]) or same_phrase(ex.rejected,
                                                                           c["pref_rejected"])
    return crossed and not agrees


def same_rule(ex: Extracted, c: RuleCandidate) -> bool:
    """Both name what to use (and agree on it), or both name what to avoid (and agree)."""
    pref_ok = same_phrase(ex.preferred, c["pref_preferred"])
    rej_ok = same_phrase(ex.rejected, c["pref_rejected"])
    if ex.preferred and c["pref_preferred"] and pref_ok:
        return not (ex.rejected and c["pref_rejected"]) or rej_ok
    if ex.rejected and c["pref_rejected"] and rej_ok:
        return not (ex.preferred and c["pref_preferred"])
    return False
