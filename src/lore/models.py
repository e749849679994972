"""Values passed between the layers: frozen, slotted dataclasses.

``Lesson.to_dict()`` is the stable JSON shape of a lesson: ``--json`` output,
export lines, MCP results and the web API all use it (docs/json.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

TRADE_OFF_TYPES = ("pro", "con")
DIRECTIONS = ("out", "in", "both")
# Kinds of lesson that state a rule: learned from corrections, injected at session start.
RULE_KINDS = ("preference", "project_rule", "anti_pattern")


@dataclass(frozen=True, slots=True)
class CodeExample:
    code: str
    language: str = ""
    context: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"language": self.language, "code": self.code, "context": self.context}


@dataclass(frozen=True, slots=True)
class TradeOff:
    type: str  # "pro" | "con"
    description: str

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "description": self.description}


@dataclass(frozen=True, slots=True)
class Evidence:
    """A verbatim quote that supports a lesson, with where it was said."""

    quote: str
    session_id: str | None = None
    message_id: str | None = None
    observed_at: str | None = None
    source: str | None = None  # transcript path, commit, agent …
    context: str | None = None  # the agent's turn the quote answers

    def to_dict(self) -> dict[str, Any]:
        return {
            "quote": self.quote,
            "context": self.context,
            "session_id": self.session_id,
            "message_id": self.message_id,
            "observed_at": self.observed_at,
            "source": self.source,
        }


@dataclass(frozen=True, slots=True)
class Preference:
    """What the user rejected, what they preferred, in which situation and why."""

    context: str = ""
    rejected: str = ""
    preferred: str = ""
    reasoning: str = ""

    def is_empty(self) -> bool:
        return not (self.context or self.rejected or self.preferred or self.reasoning)

    def to_dict(self) -> dict[str, Any]:
        return {
            "context": self.context,
            "rejected": self.rejected,
            "preferred": self.preferred,
            "reasoning": self.reasoning,
        }


@dataclass(frozen=True, slots=True)
class Edge:
    from_id: str
    to_id: str
    relation: str
    created_at: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "from": self.from_id,
            "to": self.to_id,
            "relation": self.relation,
            "created_at": self.created_at,
        }


@dataclass(frozen=True, slots=True)
class Lesson:
    id: str
    title: str
    content: str
    kind: str
    status: str
    confidence: str
    score: float | None = None
    source: str | None = None
    source_notes: str | None = None
    project: str | None = None
    summary: str | None = None
    problem_solved: str | None = None
    when_to_apply: str | None = None
    when_not_to_apply: str | None = None
    preference: Preference | None = None
    file_types: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    contexts: tuple[str, ...] = ()
    anti_contexts: tuple[str, ...] = ()
    examples: tuple[CodeExample, ...] = ()
    trade_offs: tuple[TradeOff, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    edges: tuple[Edge, ...] = ()  # every edge that touches this lesson, both directions
    metadata: dict[str, Any] = field(default_factory=dict)
    usage_count: int = 0
    last_used: str | None = None
    created_at: str = ""
    updated_at: str = ""
    content_hash: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "content": self.content,
            "kind": self.kind,
            "status": self.status,
            "confidence": self.confidence,
            "score": self.score,
            "source": self.source,
            "source_notes": self.source_notes,
            "project": self.project,
            "summary": self.summary,
            "problem_solved": self.problem_solved,
            "when_to_apply": self.when_to_apply,
            "when_not_to_apply": self.when_not_to_apply,
            "preference": self.preference.to_dict() if self.preference else None,
            "file_types": list(self.file_types),
            "tags": list(self.tags),
            "contexts": list(self.contexts),
            "anti_contexts": list(self.anti_contexts),
            "examples": [e.to_dict() for e in self.examples],
            "trade_offs": [t.to_dict() for t in self.trade_offs],
            "evidence": [e.to_dict() for e in self.evidence],
            "edges": [e.to_dict() for e in self.edges],
            "metadata": dict(self.metadata),
            "usage_count": self.usage_count,
            "last_used": self.last_used,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "content_hash": self.content_hash,
        }


@dataclass(frozen=True, slots=True)
class ScoreParts:
    """Every component of a hybrid score, for ``--explain``."""

    vector_rank: int | None
    similarity: float | None
    keyword_rank: int | None
    bm25: float | None
    rrf: float
    relevance: float  # rrf divided by the best possible rrf: 0..1
    confidence_bonus: float
    usage_bonus: float
    recency_bonus: float
    context_factor: float  # 1.0, or the anti-context demotion factor
    total: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "vector_rank": self.vector_rank,
            "similarity": _round(self.similarity),
            "keyword_rank": self.keyword_rank,
            "bm25": _round(self.bm25),
            "rrf": _round(self.rrf),
            "relevance": _round(self.relevance),
            "confidence_bonus": _round(self.confidence_bonus),
            "usage_bonus": _round(self.usage_bonus),
            "recency_bonus": _round(self.recency_bonus),
            "context_factor": _round(self.context_factor),
            "total": _round(self.total),
        }


@dataclass(frozen=True, slots=True)
class SearchResult:
    """A lightweight hit: enough to decide whether to fetch the whole lesson."""

    id: str
    title: str
    snippet: str
    score: float
    kind: str
    confidence: str
    parts: ScoreParts | None = None

    def to_dict(self, explain: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "title": self.title,
            "snippet": self.snippet,
            "score": _round(self.score),
            "kind": self.kind,
            "confidence": self.confidence,
        }
        if explain and self.parts is not None:
            out["explain"] = self.parts.to_dict()
        return out


@dataclass(frozen=True, slots=True)
class Filters:
    """Restrictions applied before ranking. Empty means no restriction.

    Scoping fields (project, file_types, contexts) keep the lessons scoped to the
    given value *and* the unscoped ones, which apply everywhere.
    """

    tags: tuple[str, ...] = ()
    contexts: tuple[str, ...] = ()
    min_confidence: str | None = None
    sources: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ("active",)
    project: str | None = None
    file_types: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # A folder inside a repository means the repository, as every face resolves it.
        if self.project:
            from lore.normalize import project_root

            object.__setattr__(self, "project", project_root(self.project))

    def to_dict(self) -> dict[str, Any]:
        return {
            "tags": list(self.tags),
            "contexts": list(self.contexts),
            "min_confidence": self.min_confidence,
            "sources": list(self.sources),
            "kinds": list(self.kinds),
            "statuses": list(self.statuses),
            "project": self.project,
            "file_types": list(self.file_types),
        }


@dataclass(frozen=True, slots=True)
class RelatedLesson:
    id: str
    title: str
    kind: str
    depth: int
    relation: str  # relation of the edge that reached it
    direction: str  # "out" (followed from_id -> to_id) or "in"
    via: str  # id of the lesson it was reached from

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "kind": self.kind,
            "depth": self.depth,
            "relation": self.relation,
            "direction": self.direction,
            "via": self.via,
        }


@dataclass(frozen=True, slots=True)
class RefItem:
    """A row of a reference table (confidence levels, sources, kinds, relations)."""

    name: str
    description: str = ""
    ordinal: int | None = None
    typical_confidence: str | None = None
    count: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.ordinal is not None:
            out["ordinal"] = self.ordinal
        if self.typical_confidence is not None:
            out["typical_confidence"] = self.typical_confidence
        if self.count is not None:
            out["count"] = self.count
        return out


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


@dataclass(slots=True)
class ImportReport:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    edges: int = 0
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (line number, reason)

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added, "updated": self.updated, "unchanged": self.unchanged,
            "edges": self.edges,
            "skipped": [{"line": n, "error": e} for n, e in self.skipped],
        }
