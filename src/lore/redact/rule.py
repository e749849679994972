"""One redaction rule: a pattern compiled on first use and run only where its triggers or
anchors are (:class:`Rule`; :class:`LineRule` for a whole line), and the marks a redacted
text holds. The rules themselves are the table in :mod:`lore.redact`."""

from __future__ import annotations

from functools import lru_cache

from lore.redact import patterns as p

TYPE_CHECKING = False  # typing is not imported: the hooks pay for every import
if TYPE_CHECKING:
    import re
    from collections.abc import Callable

IGNORECASE = 2  # re.IGNORECASE, spelled out: ``re`` is imported only when a rule first runs
MULTILINE = 8  # re.MULTILINE
DOTALL = 16  # re.DOTALL
MARK = "[REDACTED:"


class Rule:
    """One pattern, compiled on first use, run only when one of its triggers is in the text.

    An anchored rule's matches start where one of its ``anchors`` occurs: it is tried only
    there (``str.find`` is much faster than a case-insensitive scan of every position)."""

    __slots__ = ("triggers", "source", "flags", "replace", "anchors", "in_runs", "values",
                 "wide", "gate", "words", "_compiled")

    def __init__(self, triggers: tuple[str, ...], source: str, flags: int, replace,  # type: ignore[no-untyped-def]
                 anchors: tuple[str, ...] = (), in_runs: bool = False,
                 values: bool = False, wide: tuple[str, ...] = (),
                 gate: Callable[[str], bool] | None = None, words: bool = False) -> None:
        self.triggers = triggers
        # triggers looked up only in a text that is not ASCII (words of other scripts)
        self.wide = wide
        # a cheap test the text must pass besides a trigger (.pgpass: four colons)
        self.gate = gate
        # every match starts a word (the pattern opens with \b): an anchor inside a word
        # ("git " in "digit ") is no start, and no start means no compiling
        self.words = words
        self.source = source
        self.flags = flags
        self.replace = replace
        self.anchors = anchors
        self.in_runs = in_runs  # a fixed format: only inside a run of _RUNS
        # ``replace`` gives the new ``value`` group only, and matches may overlap: one command
        # line can hold several commands, each with its own flag (`a -p X && b -w Y`).
        self.values = values
        self._compiled: re.Pattern[str] | None = None

    def pattern(self) -> re.Pattern[str]:
        if self._compiled is None:
            import re

            self._compiled = re.compile(self.source, self.flags)
        return self._compiled

    def wanted(self, seen: str) -> bool:
        """Whether the rule can match ``seen``: a trigger is in it and the gate lets it by."""
        if not (any(t in seen for t in self.triggers)
                or (self.wide and not seen.isascii() and self._wide_in(seen))):
            return False
        return self.gate is None or self.gate(seen)

    def _wide_in(self, seen: str) -> bool:
        # A hook's one text is cheaper to search word by word than to compile a pattern for;
        # past 100 KB (an import, the worker) the pattern pays for itself.
        if WIDE_SCANNED[0] < 100_000:
            WIDE_SCANNED[0] += len(seen)
            return any(t in seen for t in self.wide)
        return wide_pattern(self.wide).search(seen) is not None

    def _starts(self, seen: str) -> set[int]:
        starts = set()
        ascii_only = seen.isascii()
        for a in self.anchors:
            if ascii_only and not a.isascii():
                continue
            i = seen.find(a)
            while i >= 0:
                if not (self.words and i and seen[i - 1].isalnum()):
                    starts.add(i)
                i = seen.find(a, i + 1)
        return starts

    def _values(self, pattern: re.Pattern[str], text: str, starts: set[int] | None) -> str:
        found: dict[tuple[int, int], str] = {}
        if starts is None:  # lower-casing moved the offsets: every match, no overlap
            matches = list(pattern.finditer(text))
        else:  # each anchor, even inside an earlier match
            matches = [m for i in sorted(starts) if (m := pattern.match(text, i))]
        for m in matches:
            span = m.span("value")
            if span not in found and not inside_mark(text, span[0]):
                found[span] = self.replace(m)
        out: list[str] = []
        last = 0
        for (start, end), new in sorted(found.items()):
            if start >= last and new != text[start:end]:
                out += (text[last:start], new)
                last = end
        if not out:
            return text
        out.append(text[last:])
        return "".join(out)

    def apply(self, text: str, seen: str) -> str:
        """Run the rule over ``text``; ``seen`` is the text as the triggers are looked up.
        An anchored rule is compiled only once one of its anchors is found."""
        anchored = bool(self.anchors) and len(seen) == len(text)
        starts = self._starts(seen) if anchored else set()
        if anchored and not starts:
            return text
        pattern = self.pattern()
        if self.values:
            return self._values(pattern, text, starts if anchored else None)
        if not anchored:
            return pattern.sub(self.replace, text)
        out: list[str] = []
        last = 0
        for i in sorted(starts):
            if i < last:
                continue
            m = pattern.match(text, i)
            if m is None or m.end() == i:
                continue
            out += (text[last:i], self.replace(m))
            last = m.end()
        if not out:
            return text
        out.append(text[last:])
        return "".join(out)


WIDE_SCANNED = [0]  # characters searched word by word so far in this process


@lru_cache(maxsize=8)
def wide_pattern(words: tuple[str, ...]) -> re.Pattern[str]:
    """The words as one pattern: one scan of a long text instead of one a word."""
    import re

    return re.compile("|".join(re.escape(w) for w in words))


class LineRule(Rule):
    """A pattern that must match a whole line, tried only on lines with ``colons`` colons or
    more: a scan of every line start costs more than splitting the text."""

    __slots__ = ("colons",)

    def __init__(self, source: str, replace, colons: int) -> None:  # type: ignore[no-untyped-def]
        super().__init__((":",), source, 0, replace, gate=port_field)
        self.colons = colons

    def apply(self, text: str, seen: str) -> str:
        lines = text.split("\n")
        changed = False
        for i, line in enumerate(lines):
            if line.count(":") < self.colons or not port_field(line):
                continue
            if m := self.pattern().fullmatch(line):
                new = self.replace(m)
            else:  # pasted into a sentence: the value ends at the next blank
                new = PGPASS_INLINE.pattern().sub(self.replace, line)
            changed = changed or new != line
            lines[i] = new
        return "\n".join(lines) if changed else text


PGPASS_INLINE = Rule((), p.PGPASS_WORDS, 0, None)


def port_field(seen: str) -> bool:
    """Four colons, and a field between two of them that is a port or `*` (.pgpass)."""
    if seen.count(":") < 4:
        return False
    return any(len(f) <= 5 and (f.isdigit() or f == "*") for f in seen.split(":")[1:-1])



def inside_mark(text: str, pos: int) -> bool:
    """Whether ``pos`` falls inside a ``[REDACTED:kind]`` left by an earlier rule."""
    start = text.rfind(MARK, max(0, pos - 40), pos)
    return start >= 0 and "]" not in text[start:pos]
