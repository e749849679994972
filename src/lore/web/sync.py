"""Sync across devices (`lore sync`): /api/v1/sync/info, /state and /pull (read scope), /push
(write scope). A pushed batch is validated whole, then stored in one transaction; the core
checks the batch's content name, binds the device to the pushing token and dedups by device,
record id and content, so a retried batch stores nothing twice (docs/server.md)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from lore import __version__
from lore.core.sync.records import MAX_BATCH, MAX_CURSOR, PROTOCOL, PULL_LIMIT
from lore.web import models as m
from lore.web.api import Read
from lore.web.auth import authorize, bearer
from lore.web.errors import HTTPProblem
from lore.web.state import ServerState, state_of

MAX_BODY = 32 * 1024 * 1024  # bytes in one pushed batch (the gate, lore.web.gate, holds it)
DEVICE = r"^[0-9A-HJKMNP-TV-Z]{26}$"  # a ULID, made once per home
RECORD_ID = Annotated[str, Field(min_length=1, max_length=300)]
TEXT = str  # no length limit of its own: the body limit holds, and a long text must not
# stop a device's stream for good


router = APIRouter(prefix="/api/v1/sync", tags=["sync"],
                   responses={**m.ERROR_RESPONSES, 413: {"model": m.ErrorOut,
                                                         "description": "Batch too large"}})


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SessionData(Strict):
    id: str = Field(min_length=1, max_length=300)
    agent: str = Field(min_length=1, max_length=100)
    project: str | None = None
    device: str | None = None  # where the transcript was read; the server records the pusher
    git_branch: str | None = None
    source_file: str | None = None
    title: str | None = None


class MessageData(Strict):
    session_id: str = Field(min_length=1, max_length=300)
    parent_uuid: str | None = None
    role: str = Field(min_length=1, max_length=50)
    speaker: str | None = None
    text: TEXT
    tool_calls: list[Any] = Field(default_factory=list)
    timestamp: str | None = None
    is_sidechain: int = Field(default=0, ge=0, le=1)
    agent_id: str | None = None
    is_meta: int = Field(default=0, ge=0, le=1)
    injected: int = Field(default=0, ge=0, le=1)


class EditData(Strict):
    session_id: str = Field(min_length=1, max_length=300)
    message_uuid: str = Field(min_length=1, max_length=300)
    tool: str = Field(min_length=1, max_length=100)
    file_path: str = Field(min_length=1, max_length=4096)
    file_type: str | None = None
    old_text: TEXT | None = None
    new_text: TEXT | None = None
    timestamp: str | None = None
    succeeded: int | None = Field(default=None, ge=0, le=1)


class CorrectionData(Strict):
    session_id: str | None = None
    project: str | None = None
    user_message: TEXT = Field(min_length=1)
    assistant_proposal: TEXT | None = None
    files: list[str] = Field(default_factory=list)
    at: str = Field(min_length=1)
    origin: str = "hook"
    message_uuid: str | None = None
    proposal_uuid: str | None = None
    diff: TEXT | None = None
    correction_type: str | None = None


class SessionRecord(Strict):
    kind: Literal["session"]
    id: RECORD_ID
    data: SessionData


class MessageRecord(Strict):
    kind: Literal["message"]
    id: RECORD_ID
    data: MessageData


class EditRecord(Strict):
    kind: Literal["edit"]
    id: RECORD_ID
    data: EditData


class CorrectionRecord(Strict):
    kind: Literal["correction"]
    id: RECORD_ID
    data: CorrectionData


class LessonRecordIn(Strict):
    kind: Literal["lesson"]
    id: RECORD_ID
    device: str = Field(pattern=DEVICE, description="the device that wrote this version")
    data: dict[str, Any] = Field(description="the lesson as `lore admin import` reads it; needs "
                                             "updated_at")


SyncRecord = Annotated[SessionRecord | MessageRecord | EditRecord | CorrectionRecord
                       | LessonRecordIn, Field(discriminator="kind")]


Cursor = Annotated[int, Field(ge=0, le=MAX_CURSOR)]


class PushIn(Strict):
    """One batch of a device's records; applied whole or not at all. ``stream``, ``after`` and
    ``end`` are required since sync protocol 3 (optional here so that an older client is told
    to upgrade rather than that its batch is malformed)."""

    protocol: int = Field(ge=1)
    device: str = Field(pattern=DEVICE)
    batch_id: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9:._-]+$",
                          description="sha256-HEX of the canonical JSON of [stream, after, end, "
                                      "records]; the server computes it again")
    stream: Literal["lessons", "corrections", "messages", "edits"] | None = None
    after: Cursor | None = Field(default=None, description="the device's cursor before")
    end: Cursor | None = Field(default=None, description="its cursor once this is stored")
    records: list[SyncRecord] = Field(max_length=MAX_BATCH)


class PushOut(BaseModel):
    batch_id: str
    received: int
    stored: int = Field(description="records new to the server (0 for a repeated batch)")
    refused: int = Field(description="records of another device's session, not stored")
    repeated: bool = Field(description="a batch of these very records was stored before")
    clamped: int = Field(default=0, description="lesson dates more than five minutes ahead of "
                                                "the server's clock, stored as its now")
    ahead: float = Field(default=0.0, description="seconds the furthest of those was ahead")


class StateOut(BaseModel):
    device: str
    acked: dict[str, int] = Field(description="stream -> the device's cursor after the last "
                                              "batch of it the server stored")
    records: int = Field(description="the device's records the server holds")


class SyncInfo(BaseModel):
    protocol: int
    version: str
    device: str
    max_batch: int
    max_bytes: int


class PullRecord(BaseModel):
    kind: str
    id: str
    device: str
    data: dict[str, Any]


class PullOut(BaseModel):
    cursor: int
    check: str | None = Field(default=None, description="the lesson of the change at `cursor`; "
                                                       "send it with the next pull")
    rewound: bool = Field(default=False, description="the cursor was not this server's "
                                                     "(`check` did not match): answered from 0")
    more: bool
    records: list[PullRecord]


@router.get("/info", response_model=SyncInfo)
def info(state: Read) -> dict[str, Any]:
    """The server's sync protocol, Lore version and device id, and its batch limits."""
    device = state.call(lambda lore: lore.sync.device_id())
    return {"protocol": PROTOCOL, "version": __version__, "device": device,
            "max_batch": MAX_BATCH, "max_bytes": MAX_BODY}


def pusher(request: Request) -> tuple[ServerState, str | None]:
    """The server and the write token a push acts with (None on a loopback server without
    tokens)."""
    state = state_of(request)
    info = authorize(state, bearer(request.headers.get("authorization")), write=True)
    return state, (None if isinstance(info, str) else info.id)


Pusher = Annotated[tuple[ServerState, str | None], Depends(pusher)]


@router.get("/state", response_model=StateOut)
def device_state(state: Read, device: Annotated[str, Query(pattern=DEVICE)]) -> dict[str, Any]:
    """The server's view of ``device``: how far each of its streams was stored. A device whose
    cursor is ahead of it sends those rows again (the server lost them)."""
    return state.call(lambda lore: lore.sync.server.view(device))


@router.post("/push", response_model=PushOut)
def push(who: Pusher, body: PushIn) -> dict[str, Any]:
    """Store a batch of a device's records in one transaction. The batch id must name its
    records; the device must be the pushing token's own; a record this device sent before
    (same id, same content) is skipped; a batch of the same records answers as before."""
    state, token = who
    if body.protocol != PROTOCOL:
        side = "this device" if body.protocol < PROTOCOL else "the server"
        raise HTTPProblem(409, f"this server speaks sync protocol {PROTOCOL}, the client "
                               f"{body.protocol}: upgrade Lore on {side}", code="protocol")
    if body.stream is None or body.after is None or body.end is None:
        raise HTTPProblem(422, f"sync protocol {PROTOCOL} needs a batch's stream, after and "
                               "end", code="invalid_input")
    batch = {"batch_id": body.batch_id, "stream": body.stream, "after": body.after,
             "end": body.end,  # as sent: the batch id is the hash of what the client sent
             "records": [r.model_dump(exclude_unset=True) for r in body.records]}
    return state.call(lambda lore: lore.sync.server.receive(body.device, batch, token))


@router.get("/pull", response_model=PullOut)
def pull(state: Read, device: Annotated[str, Query(pattern=DEVICE)],
         cursor: Annotated[int, Query(ge=0, le=MAX_CURSOR)] = 0,
         limit: Annotated[int, Query(ge=1, le=PULL_LIMIT)] = PULL_LIMIT,
         check: Annotated[str | None, Query(min_length=1, max_length=300)] = None,
         ) -> dict[str, Any]:
    """Lessons a person decided on (approved or reviewed rules, active lessons) changed after
    ``cursor``, without the versions ``device`` wrote itself; ask again from the answer's
    ``cursor`` and ``check`` while ``more``. A cursor whose ``check`` does not match this
    server's change log is answered from 0 (``rewound``)."""
    return state.call(lambda lore: lore.sync.server.changes(device, cursor, limit, check))
