"""Validation of lesson data arriving from outside: the API's keyword arguments,
export lines, MCP and web payloads. Strict pydantic models; messages name the field.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from lore.errors import InvalidInput, TooLarge

# How large a lesson may be. A lesson is a few paragraphs; these bounds leave room for long
# ones and keep a pasted file (or a hostile 20 MB body) from reaching the index, the
# embedding model and every search that reads it. Checked here, so every door (CLI, MCP, the
# web, import, sync) refuses the same way.
TITLE_MAX = 500          # characters in a title
TEXT_MAX = 100_000       # characters in the content, a code example or an evidence quote
FIELD_MAX = 10_000       # characters in any other text field
ITEM_MAX = 500           # characters in one tag, context, file type, id or name
LIST_MAX = 200           # items in one list (tags, examples, evidence …)
METADATA_MAX = 64 * 1024  # characters of the metadata as JSON
LESSON_MAX = 1_000_000   # characters in all the fields together

Title = Annotated[str, Field(max_length=TITLE_MAX)]
Text = Annotated[str, Field(max_length=TEXT_MAX)]
Short = Annotated[str, Field(max_length=FIELD_MAX)]
Item = Annotated[str, Field(max_length=ITEM_MAX)]
TOO_LONG = ("string_too_long", "too_long")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)


class ExampleIn(_Strict):
    code: Text = Field(min_length=1)
    language: Item = ""
    context: Short = ""


class TradeOffIn(_Strict):
    type: Literal["pro", "con"]
    description: Short = Field(min_length=1)


class EvidenceIn(_Strict):
    quote: Text = Field(min_length=1)
    session_id: Item | None = None
    message_id: Item | None = None
    observed_at: Item | None = None
    source: Item | None = None
    context: Short | None = None


class PreferenceIn(_Strict):
    context: Short = ""
    rejected: Short = ""
    preferred: Short = ""
    reasoning: Short = ""


class EdgeIn(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    from_id: str = Field(alias="from")
    to_id: str = Field(alias="to")
    relation: str = Field(min_length=1)
    created_at: str | None = None


class LessonFields(_Strict):
    """Every settable field; None means "not given" (defaults on add, unchanged on update)."""

    title: Title | None = None
    content: Text | None = None
    kind: Item | None = None
    status: Item | None = None
    confidence: Item | None = None
    score: float | None = Field(default=None, ge=0, le=1)
    source: Item | None = None
    source_notes: Short | None = None
    project: Short | None = None
    summary: Short | None = None
    problem_solved: Short | None = None
    when_to_apply: Short | None = None
    when_not_to_apply: Short | None = None
    preference: PreferenceIn | None = None
    file_types: list[Item] | None = Field(default=None, max_length=LIST_MAX)
    tags: list[Item] | None = Field(default=None, max_length=LIST_MAX)
    contexts: list[Item] | None = Field(default=None, max_length=LIST_MAX)
    anti_contexts: list[Item] | None = Field(default=None, max_length=LIST_MAX)
    examples: list[ExampleIn] | None = Field(default=None, max_length=LIST_MAX)
    trade_offs: list[TradeOffIn] | None = Field(default=None, max_length=LIST_MAX)
    evidence: list[EvidenceIn] | None = Field(default=None, max_length=LIST_MAX)
    metadata: dict[str, Any] | None = None

    @field_validator("title")
    @classmethod
    def _title(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("title must not be empty")
        return v.strip() if v is not None else None

    @model_validator(mode="after")
    def _size(self) -> LessonFields:
        # TooLarge is no ValueError: it leaves pydantic as it is, typed.
        if self.metadata is not None and len(_json(self.metadata)) > METADATA_MAX:
            raise TooLarge(f"metadata: {len(_json(self.metadata))} characters as JSON, over the "
                           f"{METADATA_MAX}-character limit; keep large data out of a lesson")
        total = len(_json(self.model_dump(exclude_none=True)))
        if total > LESSON_MAX:
            raise TooLarge(f"the lesson holds {total} characters, over the {LESSON_MAX}-"
                           "character limit; split it into smaller lessons")
        return self


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


class LessonRecord(LessonFields):
    """One line of an export: the fields plus identity, history and edges."""

    id: Item
    title: Title
    content: Text
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
        raise refusal(exc) from None


def refusal(exc: ValidationError) -> InvalidInput:
    """The typed error for a validation failure: TooLarge for a field or lesson over its
    bound (the client should send less), InvalidInput for anything else."""
    too_long = exc.errors()[0]["type"] in TOO_LONG
    return (TooLarge if too_long else InvalidInput)(describe(exc))


def describe(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "value"
    if err["type"] == "extra_forbidden":
        return f"unknown field '{where}'"
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] in TOO_LONG:
        msg += "; shorten it or split the lesson"
    return f"{where}: {msg}"
