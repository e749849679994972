"""Approved rules as lines in a file: phrasing, order, and no repeats of what the file says.

A rule is one line that says what to do. Lines are grouped under a short heading per topic;
topics are sorted by name and rules inside a topic by id (ids are ULIDs, so by age): a new
rule adds one line and a removed rule deletes one, which keeps diffs minimal. A rule the file
already states outside Lore's block, word for word after normalising case, punctuation and
markdown bullets, or nearly so by word overlap, is left out and reported.
"""

from __future__ import annotations

import difflib
import os
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

HEADING = "## Rules learned by Lore"
GENERAL = "General"
NEAR_DUPLICATE = 0.8  # word-sequence similarity at or above which a rule may repeat a line
# Words whose presence or absence does not change what a line asks for. Negations and
# "always"/"never" are not among them: they turn a rule around.
_MINOR = frozenset("a an the this that these those to of in on at for with by from and or "
                   "be is are it its your you when every each all any please".split())
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)]|#{1,6}|>)\s+(?:\[[ xX]\]\s+)?")
_WORD = re.compile(r"\w+")
_PROHIBITION = re.compile(r"^(?:don'?t|do not|never|avoid|stop)\s+(?:using\s+|use\s+)?", re.I)


@dataclass(frozen=True, slots=True)
class AppliedRule:
    """An approved rule, as plain values.

    ``text`` is one line saying what to do. ``globs`` ties the rule to files ("*.py",
    "src/**/*.ts"); a bare extension such as "py" means every file of that type. A preference
    may carry what is ``preferred`` and what is ``rejected``, so a bare prohibition ("Don't use
    npm") can be phrased as what to do instead ("Use pnpm, not npm.").
    """

    id: str
    text: str
    scope: Literal["global", "project"] = "project"
    topic: str = ""
    globs: tuple[str, ...] = ()
    kind: str = "project_rule"
    preferred: str = ""
    rejected: str = ""
    reason: str = ""  # why, in the user's words ("it shares the vite config")


@dataclass(frozen=True, slots=True)
class Skip:
    """A rule left out of a file, and why."""

    rule_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Selection:
    rules: tuple[AppliedRule, ...]
    skipped: tuple[Skip, ...] = field(default=())


def phrase(rule: AppliedRule, *, reason: bool = True) -> str:
    """The rule as one line that says what to do, capitalised and ending in a full stop, with
    the user's reason when they gave one ("Use vitest, not jest: it shares the vite config.")."""
    text = " ".join(rule.text.split())
    text = _BULLET.sub("", text)
    if rule.preferred and _PROHIBITION.match(text):
        rejected = rule.rejected or _PROHIBITION.sub("", text).rstrip(".!")
        text = f"Use {rule.preferred.strip()}, not {rejected.strip()}"
    if text and text[0].islower():
        text = text[0].upper() + text[1:]
    why = " ".join(rule.reason.split()).rstrip(".!;:, ") if reason else ""
    if text and why and normalise(why) not in normalise(text):
        joint = ", " if _BECAUSE.match(why) else ": "
        text = text.rstrip(".!;:, ") + joint + why
    if text and text[-1] not in ".!?":
        text += "."
    return text


_BECAUSE = re.compile(r"(?i)(?:because|since|as|so that|otherwise)\b")
_REASON_TAIL = re.compile(r"(?i)(?::\s|,\s+(?=(?:because|since|as|so that|otherwise)\b))")


def without_reason(line: str) -> str:
    """A written rule line without the reason :func:`phrase` appends ('' when it has none):
    "Use vitest, not jest: it shares the vite config." -> "Use vitest, not jest"."""
    parts = _REASON_TAIL.split(line, maxsplit=1)
    return parts[0] if len(parts) > 1 else ""


def claude_glob(glob: str) -> str:
    """A project-relative glob for Claude Code's ``paths:``: "py", ".py", "*.py" -> "**/*.py".

    Claude Code reads "*.py" as the project root only; a rule about a file type means every
    such file, so a pattern without a slash is anchored anywhere.
    """
    g = glob.strip()
    if re.fullmatch(r"\.?[\w+-]+", g):
        g = "*." + g.lstrip(".")
    if "/" not in g:
        g = "**/" + g
    return g


def normalise(text: str) -> str:
    """Lower case, no markdown bullets, no punctuation, single spaces: for comparing lines."""
    text = unicodedata.normalize("NFKC", text)
    text = _BULLET.sub("", text.strip())
    return " ".join(_WORD.findall(text.casefold()))


def words(text: str) -> frozenset[str]:
    return frozenset(normalise(text).split())


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def near_duplicate(a: str, b: str, near: float = NEAR_DUPLICATE) -> bool:
    """Two normalised lines that ask for the same thing: the same words in nearly the same
    order, differing only in minor words or word endings ("commit" / "committing").

    Word order counts ("use pnpm not npm" is the opposite of "use npm not pnpm"), and one
    different content word ("tabs" / "spaces") is never minor.
    """
    wa = [w for w in a.split() if w not in _MINOR]
    wb = [w for w in b.split() if w not in _MINOR]
    if len(wa) < 3 or len(wb) < 3:
        return False
    sm = difflib.SequenceMatcher(None, wa, wb, autojunk=False)
    if sm.ratio() < near:
        return False
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            continue
        left, right = wa[i1:i2], wb[j1:j2]
        if not all(any(_same_stem(x, y) for y in right) for x in left):
            return False
        if not all(any(_same_stem(y, x) for x in left) for y in right):
            return False
    return True


def _same_stem(a: str, b: str) -> bool:
    n = len(os.path.commonprefix([a, b]))
    return n >= 4 and n >= min(len(a), len(b)) - 1


class _Lines:
    """The file's normalised lines, indexed by content word to find near repeats quickly."""

    def __init__(self, norms: Iterable[str]) -> None:
        self.lines = sorted(set(norms))
        self.index: dict[str, list[int]] = {}
        for i, line in enumerate(self.lines):
            for w in set(line.split()) - _MINOR:
                self.index.setdefault(w, []).append(i)

    def candidates(self, norm: str) -> list[str]:
        """Lines sharing at least half of ``norm``'s content words (a cheap first pass)."""
        content = set(norm.split()) - _MINOR
        counts = Counter(i for w in content for i in self.index.get(w, ()))
        need = max(1, len(content) // 2)
        return [self.lines[i] for i, n in counts.items() if n >= need]


def select(rules: Iterable[AppliedRule], existing: str,
           near: float = NEAR_DUPLICATE) -> Selection:
    """The rules to write, without repeats of each other or of ``existing`` (the file outside
    Lore's block). Repeats are reported as skips."""
    seen_norm = {n for line in existing.splitlines() if (n := normalise(line))}
    seen = _Lines(seen_norm)
    kept: list[AppliedRule] = []
    kept_norm: set[str] = set()
    skipped: list[Skip] = []
    for rule in sorted(rules, key=lambda r: r.id):
        norm = normalise(phrase(rule, reason=False))  # a line without the reason says it too
        if not norm:
            skipped.append(Skip(rule.id, "empty text"))
        elif norm in seen_norm or normalise(phrase(rule)) in seen_norm:
            skipped.append(Skip(rule.id, "the file already says this outside Lore's block"))
        elif norm in kept_norm:
            skipped.append(Skip(rule.id, "same text as another rule"))
        elif any(near_duplicate(norm, line, near) for line in seen.candidates(norm)):
            skipped.append(Skip(rule.id, "the file says nearly the same outside Lore's block"))
        else:
            kept.append(rule)
            kept_norm.add(norm)
    return Selection(tuple(kept), tuple(skipped))


def body_lines(rules: Sequence[AppliedRule], heading: str = HEADING,
               glob_prefix: bool = False) -> list[str]:
    """The block's lines: a heading, then one sub-heading per topic with one line per rule.

    ``glob_prefix`` says which files a file-bound rule is for, in files that are read for every
    file (CLAUDE.md, AGENTS.md).
    """
    if not rules:
        return []
    by_topic: dict[str, list[AppliedRule]] = {}
    for rule in rules:
        by_topic.setdefault(_topic(rule.topic), []).append(rule)
    out = [heading]
    for topic in sorted(by_topic, key=lambda t: (t == GENERAL, t.casefold(), t)):
        out += ["", f"### {topic}", ""]
        for rule in sorted(by_topic[topic], key=lambda r: r.id):
            line = phrase(rule)
            if glob_prefix and rule.globs:
                line = _for_files(rule) + (line[0].lower() + line[1:] if line[1:2].islower() else line)
            out.append(f"- {line}")
    return out


def _topic(topic: str) -> str:
    t = " ".join(topic.split())
    return t[:1].upper() + t[1:] if t else GENERAL


def _for_files(rule: AppliedRule) -> str:
    globs = ", ".join(f"`{claude_glob(g)}`" for g in rule.globs)
    return f"In {globs} files: "
