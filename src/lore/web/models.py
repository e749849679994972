"""Pydantic models of the API's requests and answers: the shapes of docs/json.md, so the
OpenAPI document at /api/v1/openapi.json describes them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from lore.validation import LessonFields


class LessonCreate(LessonFields):
    """A new lesson: only ``title`` is required."""

    title: str = Field(min_length=1)  # type: ignore[assignment]


class LessonUpdate(LessonFields):
    """The fields to change; a list replaces the old list."""


class EdgeOut(BaseModel):
    from_: str = Field(alias="from", serialization_alias="from")
    to: str
    relation: str
    created_at: str | None = None


class LessonOut(LessonFields):
    """A stored lesson (docs/json.md): the fields a client may send, and what the store adds."""

    model_config = ConfigDict(extra="forbid")

    id: str
    title: str  # type: ignore[assignment]
    content: str  # type: ignore[assignment]
    kind: str  # type: ignore[assignment]
    status: str  # type: ignore[assignment]
    confidence: str  # type: ignore[assignment]
    # Stored children come back with every key, null where unset.
    preference: dict[str, str | None] | None = None  # type: ignore[assignment]
    examples: list[dict[str, Any]] = []  # type: ignore[assignment]
    trade_offs: list[dict[str, Any]] = []  # type: ignore[assignment]
    evidence: list[dict[str, Any]] = []  # type: ignore[assignment]
    edges: list[EdgeOut] = []
    usage_count: int = 0
    last_used: str | None = None
    created_at: str
    updated_at: str
    content_hash: str | None = None


class LessonBrief(BaseModel):
    id: str
    title: str
    kind: str
    confidence: str
    usage_count: int
    updated_at: str


class LessonPage(BaseModel):
    total: int
    limit: int
    offset: int
    lessons: list[LessonBrief]


class Deleted(BaseModel):
    deleted: str


class Explain(BaseModel):
    vector_rank: int | None = None
    similarity: float | None = None
    keyword_rank: int | None = None
    bm25: float | None = None
    rrf: float | None = None
    relevance: float | None = None
    confidence_bonus: float | None = None
    usage_bonus: float | None = None
    recency_bonus: float | None = None
    context_factor: float | None = None
    total: float | None = None


class SearchHit(BaseModel):
    id: str
    title: str
    snippet: str
    score: float
    kind: str
    confidence: str
    explain: Explain | None = None


class SearchOut(BaseModel):
    query: str
    results: list[SearchHit]


class RelatedOut(BaseModel):
    id: str
    title: str
    kind: str
    depth: int
    relation: str
    direction: str
    via: str


class GraphNode(BaseModel):
    id: str
    title: str
    kind: str


class GraphOut(BaseModel):
    nodes: list[GraphNode]
    edges: list[EdgeOut]


class PreferencesOut(BaseModel):
    project: str | None
    preferences: list[LessonOut]


class ConversationsOut(BaseModel):
    query: str
    project: str | None
    results: list[dict[str, Any]]
    reranked_by: str | None = None  # the model that re-ordered the results, when one did
    rerank_error: str | None = None  # why the search's own order was kept


class Health(BaseModel):
    status: str
    version: str
    read_only: bool


class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorOut(BaseModel):
    error: ErrorDetail


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorOut, "description": text}
    for status, text in ((400, "Bad request"), (401, "No valid token"),
                         (403, "The token may not do this"), (404, "No such lesson"),
                         (409, "Conflict with the database's state"),
                         (422, "Invalid input"), (503, "The database or model is unavailable"))
}
