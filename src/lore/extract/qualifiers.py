"""What surrounds a rule in a message: the reason given for it, whether it holds for every
project or this one, the files and the condition it is for, and how the rule line is framed
with them (:mod:`lore.extract.shapes` reads the rule itself)."""
from __future__ import annotations

import re

from lore.extract.phrases import (
    LINE_MAX,
    REASON_MAX,
    RULE_MAX,
    Core,
    as_sentence,
    cap,
    cut_at,
    first_stop,
    lower_first,
)

_I = re.IGNORECASE


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


def reasoning_of(t: str, core: Core) -> tuple[str, str] | None:
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


def with_reason(rule: str, reason: tuple[str, str] | None) -> str:
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


def third_person(rule: str, text: str) -> str:
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


def scope_of(t: str, core: Core) -> str | None:
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


def file_scope(t: str) -> tuple[str, tuple[str, ...], str]:
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


def condition_of(t: str) -> tuple[str, str]:
    """ "When writing tests, use X" -> ("use X", "When writing tests")."""
    m = _WHEN.match(t)
    if not m or not t[m.end():].strip():
        return t, ""
    return t[m.end():], cap(m.group("lead").strip())


def framed(text: str, frame: str, limit: int) -> str:
    if not frame:
        return text
    out = f"{frame}, {lower_first(text)}"
    return out if len(out) <= limit else text


def rule_line(rule: str, bare: str) -> str:
    """The rule as one line of at most :data:`LINE_MAX` characters."""
    if len(rule) <= LINE_MAX:
        return rule
    if len(bare) <= LINE_MAX:
        return bare
    return as_sentence(cut_at(bare, LINE_MAX - 1))
