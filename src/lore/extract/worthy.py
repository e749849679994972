"""Is a captured correction worth a rule? The gate between a candidate and a proposed rule.

A rule a user would write in CLAUDE.md says what to do and is *specific*: it names a tool, a
library, a file type, a command, a path or an identifier, or a concrete coding practice (type
hints, docstrings, commit messages, tests …). "Be more careful" or "that's not what I meant"
are bare reactions: true in the moment, useless in the next session.

    verdict = worthiness("No, use httpx instead of requests", detection)
    verdict.specific   # True: names a library
    verdict.reason     # '' when it may be proposed, else why not ("not specific enough …")

Two checks decide what an explicit record (``lore learn correction``, the MCP tool) does:
:func:`refusal` (nothing to learn at all: thanks, a question, pasted text, a traceback, a
statement of fact) and :func:`worthiness` (learned, but kept as a candidate unless specific
and durable). Stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lore.extract.detect import Detection, words_of
from lore.extract.features import clean, cues, looks_like_log_or_code

# Detector reasons that mean the words hold no rule, whoever asserts they do.
NOT_A_RULE = {
    "reads as thanks or approval": "reads as thanks or approval",
    "agrees with the agent": "agrees with the agent",
    "reads as a greeting": "reads as a greeting",
    "asks to continue": "asks to continue",
    "reads as a question": "reads as a question, not a rule",
    "declines an offer": "declines an offer, no rule in it",
    "reports a symptom": "reports a symptom, not what to do",
    "pasted text": "pasted text, not the user's own words",
    "only a client wrapper": "only an editor selection or client wrapper, no words of the user",
    "pasted log or code": "a pasted log, traceback or code, not a rule",
    "empty": "empty",
    "not English": "not in a language the rule reader understands",
}

# Tools, libraries and services a rule commonly names (lower case).
TOOLS = frozenset("""
git github gitlab docker podman kubernetes kubectl helm terraform ansible make cmake bazel
npm pnpm yarn bun node deno pip pipx uv poetry conda venv virtualenv cargo rustup go gofmt
pytest unittest tox nox ruff black isort flake8 pylint mypy pyright jest vitest mocha cypress
playwright eslint prettier tsc webpack vite babel rollup esbuild storybook tailwind bootstrap
react vue svelte angular nextjs next.js nuxt django flask fastapi starlette express nestjs
rails laravel spring redis postgres postgresql mysql sqlite mongodb mongo kafka rabbitmq
elasticsearch s3 aws gcp azure lambda httpx requests aiohttp urllib numpy pandas polars scipy
torch pytorch tensorflow sklearn pydantic sqlalchemy alembic celery click typer argparse rich
loguru logging structlog jinja graphql grpc protobuf openapi swagger nginx bash zsh powershell
vim emacs vscode pre-commit precommit makefile dockerfile systemd cron jq sed awk curl wget
pathlib subprocess asyncio typing dataclasses attrs marshmallow lodash axios zod prisma
""".split())

# Language keywords and built-ins a rule may name ("never use var, use const").
KEYWORDS = frozenset("""
var let const null undefined nil none any unknown interface enum lambda goto struct typedef
println printf console.log assert eval exec global nonlocal isinstance getattr setattr
""".split())

# Languages and file types.
FILE_TYPES = frozenset("""
python py typescript ts tsx javascript js jsx java kotlin swift rust rs golang ruby rb php c
cpp c++ csharp c# scala elixir haskell lua perl r sql html css scss sass less json yaml yml
toml ini xml csv markdown md rst shell sh dockerfile proto graphql jupyter notebook ipynb
""".split())

EXTRA_EXTENSIONS = frozenset({"txt", "lock", "cfg", "env", "ini", "log", "sh", "gitignore"})

# Concrete practices a rule may be about.
PRACTICES = re.compile(
    r"\b(?:type\s+hints?|type\s+annotations?|annotations?|docstrings?|comments?|commit\s+"
    r"messages?|commits?|branch(?:es)?|pull\s+requests?|\bprs?\b|changelog|readme|tests?|unit\s+"
    r"tests?|fixtures?|mocks?|logging|logs?|log\s+level|print\s+statements?|f-?strings?|tabs|"
    r"spaces|indent\w*|line\s+length|imports?|exceptions?|error\s+handling|retries|timeouts?|"
    r"migrations?|schema|env(?:ironment)?\s+variables?|secrets?|api\s+keys?|dependencies|"
    r"lock\s*files?|version\s+pins?|pinn?ed\s+versions?|semver|naming|variable\s+names?|"
    r"function\s+names?|snake_case|camelcase|kebab-case|async|await|threads?|globals?|"
    r"dataclass(?:es)?|enums?|constants?|magic\s+numbers?|emojis?|headings?|bullet\s+points?|"
    r"tables?|trailing\s+commas?|quotes|semicolons?|null\s+checks?|assertions?|asserts?|"
    r"lint\w*|format\w*|ci|pipelines?|deploy\w*|releases?|tags?|queries|indexes|transactions?|"
    r"force[- ]?push\w*|push\s+(?:-f|--force)\w*|rebas\w+|squash\w*|"
    r"generated\s+(?:files?|code|folders?|dir\w*)|codegen|vendored|vendor\s+(?:files?|code|"
    r"folders?|dir\w*))\b", re.IGNORECASE)

_CODE = re.compile(r"`[^`\n]{1,80}`")
_PATH = re.compile(r"(?:~|\.{1,2})?/?\w[\w.-]*/[\w.-]+")
_FILE = re.compile(r"(?:\b[\w-]+)?\.([a-z][a-z0-9]{0,5})\b")
_FLAG = re.compile(r"(?:^|\s)--?[a-z][\w-]+")
_IDENT = re.compile(r"\b(?:[a-z]+_[a-z0-9_]+|[a-z]+[A-Z]\w+|[A-Z][a-z]+[A-Z]\w+|\w+\(\)|"
                    r"[a-z_]{2,}\.[a-z_]{2,}\b)")
_WORD = re.compile(r"[A-Za-z][\w.+#-]*")
# "don't edit gen/", "leave vendor/ alone": a folder named by its trailing slash.
_FOLDER = re.compile(r"(?<![\w/.-])[\w][\w.-]*/(?=[\s,.;:)'\"`]|$)")
# "use date-fns instead of moment", "prefer dayjs over moment": a choice between two names.
_CHOICE = re.compile(r"\b(?:use|using|prefer|pick|choose|switch\s+to|go\s+with|stick\s+(?:to|with)|"
                     r"migrate\s+to)\s+`?([\w@][\w.@/+-]*)`?\s*,?\s+(?:instead\s+of|over|"
                     r"rather\s+than|not)\s+`?([\w@][\w.@/+-]*)", re.IGNORECASE)
_NOT_NAMES = frozenset("""
a an the it its this that these those them one ones something anything everything nothing
me you us him her my your our their his what which who how why when where here there now
then same other another else more less all any some each every both either neither just
only also too very really again yes no not ok okay
""".split())

# What to do: a rule cue, or a message that opens with an instruction.
_DIRECTIVE_CUES = frozenset({"always_never", "from_now_on", "make_rule", "i_prefer", "must_caps",
                             "we_convention", "instead", "instead_of", "use_instead", "rather",
                             "not_but", "dont_do", "dont_anywhere", "no_need", "should_be",
                             "names_tool", "undo", "important"})
_IMPERATIVE = re.compile(
    r"^\W*(?:(?:no|nope|actually|please|pls|and|but|so|just|wait|stop)\W+)*(?:use|run|add|keep|"
    r"put|write|prefer|avoid|stop|make|call|name|pin|store|check|test|format|commit|remove|drop|"
    r"delete|import|install|return|raise|log|wrap|set|move|split|prefix|suffix|document|type|"
    r"annotate|validate|sort|group|follow|mention|ask|include|exclude|skip|leave|limit|cap|prefer|"
    r"switch|replace|rename|reuse|default|never|always|only|don'?t|do\s+not)\b", re.IGNORECASE)


# A reaction with nothing else in it ("never mind" holds "never" but lays down nothing).
_BARE = re.compile(r"^\W*(?:never\s*mind|nvm|forget\s+(?:it|that)|no\s+worries|ok(?:ay)?|sure|fine|"
                   r"whatever|hm+|oops|got\s+it|i\s+see|cool|nice|right)\W*"
                   r"(?:(?:then|again|thanks|thank\s+you|please)\W*)?$", re.IGNORECASE)
_NEVER_MIND = re.compile(r"\bnever\s*mind\b", re.IGNORECASE)


# "local file sessions, not Redis": a choice between two named things.
_X_NOT_Y = re.compile(r"\w(?:,|\s+-+|;)\s*(?:and\s+)?not\s+(?:the\s+|a\s+)?[`'\"\w]")


# A title that is no rule: a greeting or a bare reaction, a heading, an unfinished sentence.
_GREETING = re.compile(r"^(?:hi|hello|hey|thanks|thank\s+you|good\s+(?:morning|evening)|ok(?:ay)?|"
                       r"sure|great|cool|nice|perfect|awesome)\b", re.I)
_DANGLING = frozenset("""
a an the to of and or but with for from in on at by as is are be was were should would could
must will can may not no this that these those my your our their its than then if when so
""".split())


UNFINISHED = "an unfinished sentence"


def fragment(title: str) -> str:
    """What makes ``title`` a fragment rather than a rule ('' when it reads as one): a number
    or symbols, one word, a heading ("The pages should be:"), a greeting or bare reaction
    ("Now", "Thanks"), or a sentence that stops mid-way ("Don't be")."""
    text = " ".join(title.split()).strip()
    words = re.findall(r"[A-Za-z][A-Za-z'-]*", text)
    if not words:
        return "a number or symbols"
    if text.endswith(":"):
        return "a heading"
    if len(words) < 2:
        return "a single word"
    if _GREETING.match(text) and len(words) <= 3:
        return "a greeting or a bare reaction"
    if words[-1].lower() in _DANGLING and not re.search(r"[.!?)`'\"]$", text):
        return UNFINISHED
    return ""


@dataclass(frozen=True, slots=True)
class Worthiness:
    specific: bool      # names a tool, library, file type, command, path or a concrete practice
    directive: bool     # says what to do
    durable: bool       # meant to hold beyond the current task
    what: str = ""      # what made it specific ("names a tool: ruff")
    reason: str = ""    # '' when it may be proposed; else why it stays a candidate

    @property
    def proposable(self) -> bool:
        return not self.reason


def specific(text: str) -> str:
    """What makes ``text`` specific ('' when nothing does)."""
    if _CODE.search(text):
        return "names code"
    for word in _WORD.findall(text):
        w = word.lower().rstrip(".")
        if w in TOOLS:
            return f"names a tool: {w}"
        if w in KEYWORDS:
            return f"names code: {w}"
        if w in FILE_TYPES and (w not in ("c", "r", "go", "md") or word.isupper()):
            return f"names a language or file type: {w}"
    if _PATH.search(text) or any(ext in FILE_TYPES | EXTRA_EXTENSIONS
                                 for ext in _FILE.findall(text.lower())):
        return "names a path or file"
    if _FOLDER.search(text):
        return "names a path or file"
    m = _CHOICE.search(text)
    if m and not {m.group(1).lower(), m.group(2).lower()} & _NOT_NAMES:
        return f"names a choice: {m.group(1)} over {m.group(2)}"
    if _FLAG.search(text):
        return "names a command option"
    if _IDENT.search(text):
        return "names an identifier"
    p = PRACTICES.search(text)
    if p:
        return f"names a practice: {p.group(0).lower()}"
    return ""


def directive(text: str, found: dict[str, float] | None = None) -> bool:
    """Does ``text`` say what to do (a rule cue, or an instruction)?"""
    if _NEVER_MIND.search(text):
        text = _NEVER_MIND.sub(" ", text)
        found = None
    found = cues(text) if found is None else found
    return (bool(_DIRECTIVE_CUES & set(found)) or bool(_IMPERATIVE.search(text))
            or bool(_X_NOT_Y.search(text)))


def worthiness(message: str, detection: Detection) -> Worthiness:
    """May the rule read from ``message`` be proposed on its own (one sighting)?"""
    said = words_of(message)[0]
    text = clean(said)
    found = cues(text)
    what = specific(text)
    does = directive(text, found)
    durable = detection.durable or detection.label == "preference"
    if not does:
        reason = "says nothing to do"
    elif not what:
        reason = "not specific enough to be a rule"
    elif not durable:
        reason = "a one-off fix, not a standing rule"
    else:
        reason = ""
    return Worthiness(bool(what), does, durable, what, reason)


def refusal(message: str, detection: Detection) -> str:
    """Why an explicit record learns nothing at all ('' when it may be learned)."""
    said, why = words_of(message)
    if why:
        return NOT_A_RULE.get(why, why)
    if detection.reason in NOT_A_RULE:
        return NOT_A_RULE[detection.reason]
    text = clean(said)
    if _BARE.match(text):
        return "a bare reaction, no rule in it"
    if looks_like_log_or_code(text):
        return NOT_A_RULE["pasted log or code"]
    found = cues(text)
    if not detection.positive and ({"question_start", "question_end"} & set(found)) \
            and not (_DIRECTIVE_CUES & set(found)):
        return NOT_A_RULE["reads as a question"]
    if not detection.positive and "approval" in found and not (_DIRECTIVE_CUES & set(found)):
        return NOT_A_RULE["reads as thanks or approval"]
    if not directive(text, found):
        return "says nothing to do (a statement or a reaction, not a rule)"
    return ""
