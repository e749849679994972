"""Check patterns that cannot hang the agent (docs/reliability.md, "Checks that hold against
rewording and cannot hang").

Every command and content pattern runs under a time bound on each match (:data:`MATCH_SECONDS`,
less when the hook's deadline is nearer): a match past it raises :class:`Slow` and the caller
lets the call through. In the main thread (the hook, the CLI) the standard library's ``re``
runs it under a real-time timer (``re`` answers signals while it backtracks, so the timer stops
it); elsewhere (the server's threads) the ``regex`` module runs it with its own ``timeout``.
A pattern is refused when it is added, proposed or edited if it can backtrack without end:

- a repeat inside a repeat where the inner one can stop at more than one place each time
  round (``(a+)+``, ``(\\w+\\s?)*``, ``(x+x+)+y``): refused from its syntax alone;
- anything else that takes over :data:`PROBE_SECONDS` on one of the adversarial texts built
  from the pattern's own characters (``(a|aa)+$``): refused by measurement.
"""

from __future__ import annotations

import time

# typing and functools cost the hook milliseconds: neither is imported here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from typing import Any

MATCH_SECONDS = 0.2  # one pattern on one text, at the moment of action
PROBE_SECONDS = 0.1  # one pattern on one adversarial text (CPU time), when it is added
PROBE_CHARS = 1000  # the length of each adversarial text
_REGEX: dict[tuple[str, int], Any] = {}
_UNSAFE: dict[str, str | None] = {}


class Slow(Exception):
    """A match that ran past its time bound."""


class _Ring(BaseException):
    """The timer went off (a BaseException: no ``except Exception`` in between swallows it)."""


def compile_(source: str, multiline: bool = False) -> re.Pattern[str]:
    import re

    return re.compile(source, re.MULTILINE if multiline else 0)


def search(compiled: re.Pattern[str], text: str, seconds: float = MATCH_SECONDS,
           cpu: bool = False) -> Any:
    """``compiled.search(text)`` within ``seconds`` (of the clock, or of this process's CPU
    time with ``cpu``: a probe on a busy machine is not refused for waiting its turn); raises
    Slow past them."""
    return _bounded(compiled, "search", text, seconds, cpu)


def match(compiled: re.Pattern[str], text: str, seconds: float = MATCH_SECONDS) -> Any:
    """``compiled.match(text)`` (from the text's start) within ``seconds``."""
    return _bounded(compiled, "match", text, seconds, False)


def _ring(_signum: int, _frame: Any) -> None:
    raise _Ring


def _bounded(compiled: re.Pattern[str], how: str, text: str, seconds: float, cpu: bool) -> Any:
    try:  # the C module: signal.py builds its enums on import, a millisecond of the hook's
        import _signal as signal  # time
    except ImportError:  # pragma: no cover - another interpreter
        import signal  # type: ignore[no-redef]

    seconds = max(seconds, 0.0005)
    which, number = ((signal.ITIMER_VIRTUAL, signal.SIGVTALRM) if cpu
                     else (signal.ITIMER_REAL, signal.SIGALRM))
    try:
        before = signal.signal(number, _ring)
    except (ValueError, AttributeError, OSError):  # not the main thread, or no such signal
        return _with_regex(compiled, how, text, seconds)
    outer, interval = signal.setitimer(which, 0)  # a deadline already set (the hook's)
    start = time.monotonic()
    try:
        signal.setitimer(which, min(seconds, outer) if outer > 0 else seconds)
        return getattr(compiled, how)(text)
    except _Ring:
        raise Slow from None
    finally:
        signal.setitimer(which, 0)
        signal.signal(number, before)
        left = outer - (time.monotonic() - start)
        if left > 0:  # the outer timer again, less the time spent here (once past, the
            signal.setitimer(which, left, interval)  # caller sees its deadline)


def _with_regex(compiled: re.Pattern[str], how: str, text: str, seconds: float) -> Any:
    import regex

    key = (compiled.pattern, compiled.flags)
    rx = _REGEX.get(key)
    if rx is None:
        rx = _REGEX[key] = regex.compile(compiled.pattern, compiled.flags & regex.MULTILINE)
    try:
        return getattr(rx, how)(text, timeout=seconds)
    except TimeoutError:
        raise Slow from None


# ---- refusing patterns that backtrack -------------------------------------------------------------
def unsafe(source: str) -> str | None:
    """Why ``source`` may run without end (None: it is safe to hold)."""
    if source in _UNSAFE:
        return _UNSAFE.get(source)
    why = _unsafe(source)
    if len(_UNSAFE) > 512:
        _UNSAFE.clear()
    _UNSAFE[source] = why
    return why


def _unsafe(source: str) -> str | None:
    if _nested_repeat(source):
        return ("it nests a repeat inside a repeat that can match the same text in many ways, "
                "which takes exponential time; write the repeat once")
    compiled = compile_(source, multiline=True)
    for text in probes(source):
        try:
            search(compiled, text, PROBE_SECONDS, cpu=True)
        except Slow:
            return (f"it took over {PROBE_SECONDS:g} s of CPU time on a text of {len(text)} "
                    "characters built to make it backtrack; simplify it")
    return None


def probes(source: str) -> list[str]:
    """Adversarial texts for a pattern: runs of each character it names or classes it uses,
    alone, in pairs and with its literal words, each ending in characters that fail it."""
    chars = _alphabet(source)
    words = [w for w in _literals(source) if len(w) > 1][:4]
    n = PROBE_CHARS
    out = []
    for c in chars:
        out.append(c * n + "!")
        out.append(c * n + "\n")
    for i, a in enumerate(chars[:6]):
        for b in chars[i + 1:6]:
            out.append((a + b) * (n // 2) + "\x01")
    for w in words:
        out.append((w + " ") * (n // (len(w) + 1)) + "\x01")
        out.append(w * (n // len(w)) + "\x01")
    return out


_BASE = "a A0_ -.\t/:=,"


def _alphabet(source: str) -> list[str]:
    seen: list[str] = []
    for c in "".join(_literals(source)) + _BASE:  # the pattern's own characters first
        if c not in seen and (c.isprintable() or c == "\t"):
            seen.append(c)
    return seen[:16]


def _literals(source: str) -> list[str]:
    """The runs of plain characters in a pattern (escapes resolved roughly)."""
    runs, run, i = [], "", 0
    while i < len(source):
        ch = source[i]
        if ch == "\\" and i + 1 < len(source):
            nxt = source[i + 1]
            if not nxt.isalnum():
                run += nxt
            else:
                runs.append(run)
                run = ""
            i += 2
            continue
        if ch in ".^$*+?{}[]()|":
            runs.append(run)
            run = ""
        else:
            run += ch
        i += 1
    runs.append(run)
    return [r for r in runs if r]


# ---- nested repeats ---------------------------------------------------------------------------------
def _nested_repeat(source: str) -> str | None:
    """The first repeat inside a repeat whose end is ambiguous, as ``(inner)`` text, else None.

    Read with the standard library's parser (the syntax ``regex`` adds beyond it is left to
    the probes). For each repeat R of body B, every unbounded repeat S inside B is checked:
    when a character S can take may also start what follows S (within B, or B again after
    its end), S can stop in many places each time round and R backtracks exponentially."""
    try:
        from re import _parser as sre  # type: ignore[attr-defined]

        tree = sre.parse(source)
    except Exception:  # noqa: BLE001 - left to the probes
        return None
    from re import _constants as c  # type: ignore[attr-defined]

    universe = set(_BASE + "\n!\x01é9Zz") | set("".join(_literals(source)))
    an = _Analysis(c, universe)
    try:
        return an.find(list(tree))
    except RecursionError:
        return "nesting too deep"


class _Analysis:
    def __init__(self, c: Any, universe: set[str]) -> None:
        self.c = c
        self.u = universe
        self.repeats = {c.MAX_REPEAT, c.MIN_REPEAT}

    # first characters and whether it can match nothing
    def first(self, seq: list[Any]) -> tuple[set[str], bool]:
        out: set[str] = set()
        for op, av in seq:
            f, nullable = self.first_item(op, av)
            out |= f
            if not nullable:
                return out, False
        return out, True

    def first_item(self, op: Any, av: Any) -> tuple[set[str], bool]:
        c = self.c
        if op is c.LITERAL:
            return {chr(av)}, False
        if op is c.NOT_LITERAL:
            return self.u - {chr(av)}, False
        if op is c.ANY:
            return self.u - {"\n"}, False
        if op is c.IN:
            return {ch for ch in self.u if self.in_set(av, ch)}, False
        if op is c.SUBPATTERN:
            return self.first(list(av[-1]))
        if op is c.ATOMIC_GROUP:
            return self.first(list(av))
        if op is c.BRANCH:
            out: set[str] = set()
            nullable = False
            for alt in av[1]:
                f, n = self.first(list(alt))
                out |= f
                nullable = nullable or n
            return out, nullable
        if op in self.repeats or op is c.POSSESSIVE_REPEAT:
            lo, _hi, body = av
            f, n = self.first(list(body))
            return f, n or lo == 0
        if op is c.GROUPREF or op is c.GROUPREF_EXISTS:
            return set(self.u), True
        return set(), True  # anchors, lookarounds

    def in_set(self, items: Any, ch: str) -> bool:
        c = self.c
        negate = False
        hit = False
        for op, av in items:
            if op is c.NEGATE:
                negate = True
            elif op is c.LITERAL:
                hit = hit or ch == chr(av)
            elif op is c.RANGE:
                hit = hit or av[0] <= ord(ch) <= av[1]
            elif op is c.CATEGORY:
                hit = hit or self.category(av, ch)
        return hit != negate

    def category(self, cat: Any, ch: str) -> bool:
        name = str(cat).upper()
        word = ch.isalnum() or ch == "_"
        if "NOT_DIGIT" in name:
            return not ch.isdecimal()
        if "DIGIT" in name:
            return ch.isdecimal()
        if "NOT_SPACE" in name:
            return not ch.isspace()
        if "SPACE" in name:
            return ch.isspace()
        if "NOT_WORD" in name:
            return not word
        if "WORD" in name:
            return word
        return True

    # the search
    def find(self, seq: list[Any]) -> str | None:
        for op, av in seq:
            for sub in self.children(op, av):
                found = self.find(sub)
                if found:
                    return found
            if op in self.repeats and av[1] > 1:
                body = list(av[2])
                wrap, _ = self.first(body)
                found = self.scan(body, wrap, True)
                if found:
                    return found
        return None

    def children(self, op: Any, av: Any) -> list[list[Any]]:
        c = self.c
        if op is c.SUBPATTERN:
            return [list(av[-1])]
        if op is c.BRANCH:
            return [list(alt) for alt in av[1]]
        if op in self.repeats or op is c.POSSESSIVE_REPEAT:
            return [list(av[2])]
        if op is c.ASSERT or op is c.ASSERT_NOT:
            return [list(av[1])]
        if op is c.ATOMIC_GROUP:
            return [list(av)]
        return []

    def scan(self, seq: list[Any], tail: set[str], tail_nullable: bool) -> str | None:
        """Inside a repeat's body: an unbounded repeat whose characters may also start what
        follows it."""
        c = self.c
        for k, (op, av) in enumerate(seq):
            after, nullable = self.first(seq[k + 1:])
            follow = after | tail if nullable else after
            follow_nullable = nullable and tail_nullable
            if op in self.repeats:
                lo, hi, body = av
                body = list(body)
                mine, _ = self.first(body)
                if hi > 1 and mine & follow:
                    return "nested"
                inner = self.scan(body, follow | (mine if hi > 1 else set()), follow_nullable)
                if inner:
                    return inner
            elif op is c.SUBPATTERN:
                found = self.scan(list(av[-1]), follow, follow_nullable)
                if found:
                    return found
            elif op is c.BRANCH:
                for alt in av[1]:
                    found = self.scan(list(alt), follow, follow_nullable)
                    if found:
                        return found
        return None

