"""The four-stage analysis of a session's changes through the language model:
WHAT was done, WHY, which PATTERNS it shows, and the KNOWLEDGE entries worth keeping.

Each stage is one :func:`lore.llm.complete_json` call with its prompt
(``lore/llm/prompts/analysis_*.md``) and a pydantic model for its reply; a reply that does
not fit is asked again showing the model its error. The diff and the session text are
redacted and cut to a token budget here, before anything is sent, whatever provider is
passed in (the provider's limits redact and cut once more, which changes nothing).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from lore.capture.git import GitChanges
from lore.extract.significance import Correction
from lore.llm.base import CHARS_PER_TOKEN, Message, Provider, Request
from lore.llm.jsonreply import complete_json
from lore.llm.limits import cut_messages
from lore.llm.opinion import prompt
from lore.models import CodeExample, Evidence, TradeOff
from lore.redact import redact

MAX_INPUT_TOKENS = 6000  # per stage; the diff gets most of it
DIFF_SHARE = 0.75  # of stage 1's budget; the rest is the file list and the commit messages
SESSION_CHARS = 6000  # the session highlights sent to stage 2
MAX_ENTRIES = 5
STAGE_TOKENS = {"what": 800, "why": 900, "patterns": 1200, "knowledge": 3000}  # reply caps
EXAMPLE_LINES = 30

LANGUAGES = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".jsx": "jsx", ".ts": "typescript", ".tsx": "tsx", ".go": "go", ".rs": "rust", ".java": "java",
    ".kt": "kotlin", ".kts": "kotlin", ".scala": "scala", ".rb": "ruby", ".php": "php", ".cs": "csharp",
    ".swift": "swift", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".cxx": "cpp",
    ".m": "objective-c", ".ex": "elixir", ".exs": "elixir", ".erl": "erlang", ".hs": "haskell",
    ".ml": "ocaml", ".clj": "clojure", ".lua": "lua", ".dart": "dart", ".r": "r", ".jl": "julia",
    ".sh": "bash", ".bash": "bash", ".zsh": "zsh", ".ps1": "powershell", ".sql": "sql", ".html": "html",
    ".css": "css", ".scss": "scss", ".vue": "vue", ".svelte": "svelte", ".json": "json", ".yaml": "yaml",
    ".yml": "yaml", ".toml": "toml", ".xml": "xml", ".md": "markdown", ".proto": "protobuf",
    ".graphql": "graphql", ".tf": "hcl", ".zig": "zig", ".nix": "nix",
}
NAMED_LANGUAGES = {"Dockerfile": "dockerfile", "Makefile": "makefile", "CMakeLists.txt": "cmake"}


def language_for(path: str) -> str:
    """The code-fence language of a file, from its name or extension ("" when unknown)."""
    p = PurePosixPath(path)
    return NAMED_LANGUAGES.get(p.name) or LANGUAGES.get(p.suffix.lower(), "")


# ---- the replies --------------------------------------------------------------------------------
class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


def _lower(value: Any) -> Any:
    return value.strip().lower().replace("-", "_").replace(" ", "_") if isinstance(value, str) else value


def _as_list(value: Any) -> Any:
    if value is None:
        return []
    return [value] if isinstance(value, (str, dict)) else value


class FileRole(_Reply):
    path: str
    role: str = ""
    change_type: Literal["added", "modified", "deleted", "renamed"] = "modified"

    @field_validator("change_type", mode="before")
    @classmethod
    def _known(cls, value: Any) -> Any:
        value = _lower(value)
        return value if value in ("added", "modified", "deleted", "renamed") else "modified"


class WhatReply(_Reply):
    summary: str
    files: list[FileRole] = Field(default_factory=list)
    change_type: Literal["feature", "bug_fix", "refactoring", "optimization", "documentation", "other"]

    @field_validator("change_type", mode="before")
    @classmethod
    def _kind(cls, value: Any) -> Any:
        value = {"bugfix": "bug_fix", "fix": "bug_fix", "refactor": "refactoring", "docs": "documentation",
                 "performance": "optimization"}.get(_lower(value), _lower(value))
        known = ("feature", "bug_fix", "refactoring", "optimization", "documentation")
        return value if value in known else "other"


class TradeOffConsidered(_Reply):
    consideration: str
    decision: str = ""
    reasoning: str = ""


class WhyReply(_Reply):
    problem: str
    trade_offs: list[TradeOffConsidered] = Field(default_factory=list)
    alternatives_considered: list[str] = Field(default_factory=list)
    principles: list[str] = Field(default_factory=list)

    @field_validator("trade_offs", "alternatives_considered", "principles", mode="before")
    @classmethod
    def _lists(cls, value: Any) -> Any:
        return _as_list(value)


class Pattern(_Reply):
    name: str
    category: Literal["code_pattern", "architecture", "convention"] = "code_pattern"
    description: str = ""
    applicability: str = ""

    @field_validator("category", mode="before")
    @classmethod
    def _category(cls, value: Any) -> Any:
        value = _lower(value)
        return value if value in ("code_pattern", "architecture", "convention") else "code_pattern"


class AvoidedAntiPattern(_Reply):
    pattern: str
    why_avoided: str = ""


class PatternsReply(_Reply):
    patterns: list[Pattern] = Field(default_factory=list)
    best_practices: list[str] = Field(default_factory=list)
    anti_patterns_avoided: list[AvoidedAntiPattern] = Field(default_factory=list)


class ExampleReply(_Reply):
    code: str
    file: str = ""
    context: str = ""
    language: str = ""


class TradeOffReply(_Reply):
    type: Literal["pro", "con"]
    description: str

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, value: Any) -> Any:
        value = _lower(value)
        return {"pros": "pro", "cons": "con", "advantage": "pro", "disadvantage": "con"}.get(value, value)


class EntryReply(_Reply):
    title: str = Field(min_length=3)
    category: Literal["code_pattern", "bug_fix", "architecture", "project_rule"]
    summary: str
    problem: str = ""
    solution: str = ""
    when_to_apply: str = ""
    when_not_to_apply: str = ""
    trade_offs: list[TradeOffReply] = Field(default_factory=list)
    code_examples: list[ExampleReply] = Field(default_factory=list)
    related_patterns: list[str] = Field(default_factory=list)
    confidence: int = Field(default=3, ge=1, le=5)
    tags: list[str] = Field(default_factory=list)

    @field_validator("category", mode="before")
    @classmethod
    def _category(cls, value: Any) -> Any:
        return {"bugfix": "bug_fix", "rule": "project_rule", "pattern": "code_pattern"}.get(_lower(value),
                                                                                           _lower(value))

    @field_validator("confidence", mode="before")
    @classmethod
    def _confidence(cls, value: Any) -> Any:
        if isinstance(value, float) and 0 < value <= 1:  # a 0-1 score where 1-5 was asked
            return max(1, round(value * 5))
        return value

    @field_validator("related_patterns", "tags", "trade_offs", "code_examples", mode="before")
    @classmethod
    def _lists(cls, value: Any) -> Any:
        return _as_list(value)


class KnowledgeReply(_Reply):
    entries: list[EntryReply]

    @model_validator(mode="before")
    @classmethod
    def _bare_array(cls, value: Any) -> Any:
        return {"entries": value} if isinstance(value, list) else value


# ---- the values ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class KnowledgeEntry:
    """A knowledge entry as a lesson candidate written by the model."""

    title: str
    kind: str  # code_pattern | bug_fix | architecture | project_rule
    summary: str
    problem: str
    solution: str
    when_to_apply: str
    when_not_to_apply: str
    trade_offs: tuple[TradeOff, ...] = ()
    examples: tuple[CodeExample, ...] = ()
    related_patterns: tuple[str, ...] = ()
    confidence: int = 3
    tags: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    analysed: bool = True


@dataclass(frozen=True, slots=True)
class Analysis:
    what: WhatReply
    why: WhyReply
    patterns: PatternsReply
    entries: tuple[KnowledgeEntry, ...]
    diff_cut: bool  # the diff sent was shorter than the one read


# ---- what is sent -------------------------------------------------------------------------------
def diff_for_budget(patch: str, max_chars: int) -> tuple[str, bool]:
    """The redacted patch cut to ``max_chars``: every file keeps its header and at most an equal
    share of the room (the beginning and the end of a long one), files that no longer fit are
    named only."""
    sections = [s for s in re.split(r"(?m)^(?=diff --git )", redact(patch)) if s.strip()]
    if sum(len(s) for s in sections) <= max_chars:
        return "".join(sections), False
    messages = tuple(Message("user", s) for s in sections)
    named_room = sum(len(s.split("\n", 1)[0]) + 1 for s in sections)
    if named_room * 2 > max_chars:  # too many files to show each: show what fits, name the rest
        kept, size = [], 0
        for s in sections:
            if size + len(s) > max_chars // 2:
                break
            kept.append(s)
            size += len(s)
        rest = [s.split("\n", 1)[0] for s in sections[len(kept):]]
        return "".join(kept) + "\n[… not shown: " + "; ".join(rest)[:max_chars // 2] + "]\n", True
    return "".join(m.content if m.content.endswith("\n") else m.content + "\n"
                   for m in cut_messages(messages, max_chars)), True


def _files_block(changes: GitChanges) -> str:
    rows = []
    for f in changes.files:
        moved = f" (from {f.old_path})" if f.old_path else ""
        counts = "binary" if f.binary else f"+{f.added} -{f.removed}"
        rows.append(f"{f.status} {f.path}{moved} {counts}")
    rows += [f"submodule {s.path} {(s.old_commit or 'none')[:10]} -> {(s.new_commit or 'none')[:10]}"
             for s in changes.submodules]
    return "\n".join(rows[:400]) + (f"\n… and {len(rows) - 400} more" if len(rows) > 400 else "")


def _commits_block(changes: GitChanges) -> str:
    return "\n\n".join(redact(f"{c.short} {c.subject}\n{c.body}".strip()) for c in changes.commits[:50])


def _session_block(text: str, max_chars: int) -> str:
    cut = cut_messages((Message("user", redact(text)),), max_chars)
    return cut[0].content if cut else ""


def _ask(provider: Provider, stage: str, body: str, schema: type[Any], system: str | None = None) -> Any:
    request = Request(messages=(Message("user", body),), system=system or prompt(f"analysis_{stage}"),
                      max_tokens=STAGE_TOKENS[stage], temperature=0.0, purpose=f"analysis_{stage}")
    return complete_json(provider, request, schema)


def analyze_changes(provider: Provider, changes: GitChanges, *, session_text: str = "",
                    corrections: Sequence[Correction] = (), session_id: str | None = None,
                    max_input_tokens: int = MAX_INPUT_TOKENS, max_entries: int = MAX_ENTRIES) -> Analysis:
    """Run the four stages over ``changes`` (and the session's highlights and corrections)."""
    room = max_input_tokens * CHARS_PER_TOKEN
    files, commits = _files_block(changes), _commits_block(changes)
    diff, cut = diff_for_budget(changes.patch, max(1000, int(room * DIFF_SHARE) - len(files) - len(commits)))
    what: WhatReply = _ask(provider, "what", f"<files>\n{files}\n</files>\n\n<commits>\n{commits}\n</commits>"
                                             f"\n\n<diff>\n{diff}\n</diff>", WhatReply)
    said = "\n".join(f"- {redact(c.text)}" for c in corrections[:20])
    session = _session_block(session_text, min(SESSION_CHARS, room // 2))
    why: WhyReply = _ask(provider, "why", f"<changes>\n{what.model_dump_json()}\n</changes>\n\n"
                                          f"<session>\n{session}\n</session>\n\n"
                                          f"<corrections>\n{said}\n</corrections>", WhyReply)
    patterns: PatternsReply = _ask(provider, "patterns", f"<what>\n{what.model_dump_json()}\n</what>\n\n"
                                                         f"<why>\n{why.model_dump_json()}\n</why>",
                                   PatternsReply)
    system = prompt("analysis_knowledge").replace("{max_entries}", str(max_entries))
    knowledge: KnowledgeReply = _ask(
        provider, "knowledge", f"<what>\n{what.model_dump_json()}\n</what>\n\n<why>\n{why.model_dump_json()}"
                               f"\n</why>\n\n<patterns>\n{patterns.model_dump_json()}\n</patterns>\n\n"
                               f"<files>\n{files}\n</files>", KnowledgeReply, system=system)
    evidence = tuple(Evidence(quote=redact(c.subject), session_id=session_id, source=f"commit {c.sha}")
                     for c in changes.commits if not c.is_merge)
    changed = {f.path for f in changes.files}
    entries = tuple(_entry(e, evidence, changed) for e in knowledge.entries[:max_entries])
    return Analysis(what=what, why=why, patterns=patterns, entries=entries, diff_cut=cut)


def _entry(reply: EntryReply, evidence: tuple[Evidence, ...], changed: set[str]) -> KnowledgeEntry:
    examples = []
    for ex in reply.code_examples:
        code = "\n".join(ex.code.strip("\n").splitlines()[:EXAMPLE_LINES])
        if not code.strip():
            continue
        # The language comes from the file the example is taken from, not from the model's word.
        language = language_for(ex.file) if ex.file else ""
        context = ex.context if ex.file in changed or not ex.file else f"{ex.context} ({ex.file})".strip()
        examples.append(CodeExample(code=redact(code), language=language or _lower(ex.language) or "",
                                    context=redact(context)))
    return KnowledgeEntry(
        title=redact(reply.title.strip()), kind=reply.category, summary=redact(reply.summary),
        problem=redact(reply.problem), solution=redact(reply.solution),
        when_to_apply=redact(reply.when_to_apply), when_not_to_apply=redact(reply.when_not_to_apply),
        trade_offs=tuple(TradeOff(t.type, redact(t.description)) for t in reply.trade_offs),
        examples=tuple(examples), related_patterns=tuple(reply.related_patterns), confidence=reply.confidence,
        tags=tuple(dict.fromkeys(t.strip().lower() for t in reply.tags if t.strip())), evidence=evidence)
