"""The proposal a correction answers: the assistant's plan, read for the context of a rule and
for the thing a message rejects when it only says what to use instead (:mod:`lore.extract.shapes`)."""
from __future__ import annotations

import re

from lore.extract.phrases import (
    CONTEXT_MAX,
    MAX_CHARS,
    PRONOUNS,
    QUOTES,
    as_phrase,
    cut_at,
)

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


def proposal_text(proposal: str | None) -> str:
    if not proposal or not proposal.strip():
        return ""
    p = proposal if len(proposal) <= MAX_CHARS else proposal[:2000] + "\n" + proposal[-2000:]
    p = p.translate(QUOTES)
    p = re.sub(r"```.*?(?:```|\Z)", "\n", p, flags=re.DOTALL)
    p = re.sub(r"\*\*|__|^#+\s*|^\s*[-*]\s+", "", p, flags=re.MULTILINE)
    return re.sub(r"[ \t]+", " ", p).strip()


def split_sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+|\n+", text)
    return [p.strip() for p in parts if p.strip()]


def proposal_context(proposal: str) -> str | None:
    sentences = split_sentences(proposal)
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


def proposal_noun(proposal: str, preferred: str) -> str | None:
    """A plausible thing the proposal was going to use, other than ``preferred``."""
    if not proposal:
        return None
    sentences = split_sentences(proposal)
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
