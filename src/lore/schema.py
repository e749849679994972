"""Validation of lesson data arriving from outside: the API's keyword arguments,
export lines, MCP and web payloads. Strict pydantic models; messages name the field.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from lore.errors import InvalidInput


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)


class ExampleIn(_Strict):
    code: str = Field(min_length=1)
    language: str = ""
    context: str = ""


class TradeOffIn(_Strict):
    type: Literal["pro", "con"]
    description: str = Field(min_length=1)


class EvidenceIn(_Strict):
    quote: str = Field(min_length=1)
    session_id: str | None = None
    message_id: str | None = None
    observed_at: str | None = None
    source: str | None = None
    context: str | None = None


class PreferenceIn(_Strict):
    context: str = ""
    rejected: str = ""
    preferred: str = ""
    reasoning: str = ""


class EdgeIn(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    from_id: str = Field(alias="from")
    to_id: str = Field(alias="to")
    relation: str = Field(min_length=1)
    created_at: str | None = None


class LessonFields(_Strict):
    """Every settable field; None means "not given" (defaults on add, unchanged on update)."""

    title: str | None = None
    content: str | None = None
    kind: str | None = None
    status: str | None = None
    confidence: str | None = None
    score: float | None = Field(default=None, ge=0, le=1)
    source: str | None = None
    source_notes: str | None = None
    project: str | None = None
    summary: str | None = None
    problem_solved: str | None = None
    when_to_apply: str | None = None
    when_not_to_apply: str | None = None
    preference: PreferenceIn | None = None
    file_types: list[str] | None = None
    tags: list[str] | None = None
    contexts: list[str] | None = None
    anti_contexts: list[str] | None = None
    examples: list[ExampleIn] | None = None
    trade_offs: list[TradeOffIn] | None = None
    evidence: list[EvidenceIn] | None = None
    metadata: dict[str, Any] | None = None

    @field_validator("title")
    @classmethod
    def _title(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("title must not be empty")
        return v.strip() if v is not None else None


class LessonRecord(LessonFields):
    """One line of an export: the fields plus identity, history and edges."""

    id: str
    title: str
    content: str
    created_at: str | None = None
    updated_at: str | None = None
    usage_count: int = Field(default=0, ge=0)
    last_used: str | None = None
    content_hash: str | None = None  # recomputed on import
    edges: list[EdgeIn] = Field(default_factory=list)


def validate_fields(data: dict[str, Any]) -> LessonFields:
    try:
        return LessonFields.model_validate(data)
    except ValidationError as exc:
        raise InvalidInput(describe(exc)) from None


def describe(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "value"
    if err["type"] == "extra_forbidden":
        return f"unknown field '{where}'"
    msg = err["msg"].removeprefix("Value error, ")
    return f"{where}: {msg}"
