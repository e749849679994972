"""The REST API under /api/v1: lessons, search, the graph, preferences, conversations, stats,
health, the review queue, the scheduled analysis and the digests. Each route checks access,
calls the facade once under the lock and returns the shape of docs/json.md; errors become
``{"error": {"code", "message"}}`` in app.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from lore import __version__, policy
from lore.models import Filters
from lore.web import models as m
from lore.web.auth import LOCAL, authorize, bearer
from lore.web.state import ServerState, state_of

router = APIRouter(prefix="/api/v1", responses=m.ERROR_RESPONSES)

StrList = Annotated[list[str], Query()]
# Each request's limit, bounded by the request policy (lore.policy).
LessonsLimit = Annotated[int, Query(ge=1, le=policy.REQUESTS["lessons"].most)]
SearchLimit = Annotated[int, Query(ge=1, le=policy.REQUESTS["search"].most)]
RulesLimit = Annotated[int, Query(ge=1, le=policy.REQUESTS["preferences"].most)]
TalkLimit = Annotated[int, Query(ge=1, le=policy.REQUESTS["conversations"].most)]
ReviewLimit = Annotated[int, Query(ge=1, le=policy.REQUESTS["review"].most)]


def access(*, write: bool) -> Callable[[Request], ServerState]:
    """A dependency: the server state, once the request's bearer token may read (or write)."""
    def check(request: Request) -> ServerState:
        state = state_of(request)
        authorize(state, bearer(request.headers.get("authorization")), write=write)
        return state

    return check


Read = Annotated[ServerState, Depends(access(write=False))]
Write = Annotated[ServerState, Depends(access(write=True))]


def filters(tag: list[str], kind: list[str], status: list[str], source: list[str],
            min_confidence: str | None, project: str | None, file_type: list[str],
            context: list[str], request: str = "search") -> Filters:
    return Filters(tags=tuple(tag), kinds=tuple(kind), statuses=policy.statuses(status, request),
                   sources=tuple(source), min_confidence=min_confidence or None,
                   project=policy.scope(project, request).filter, file_types=tuple(file_type),
                   contexts=tuple(context))


@router.get("/health", response_model=m.Health, tags=["server"])
def health(request: Request) -> dict[str, Any]:
    """Whether the server answers, and which Lore it is. Needs no token."""
    state = state_of(request)
    return {"status": "ok", "version": __version__, "read_only": state.lore.admin.read_only}


@router.get("/lessons", response_model=m.LessonPage, tags=["lessons"])
def list_lessons(state: Read, tag: StrList = [], kind: StrList = [],  # noqa: B006 - FastAPI
                 status: StrList = [], source: StrList = [],  # noqa: B006
                 file_type: StrList = [], context: StrList = [],  # noqa: B006
                 min_confidence: str | None = None, project: str | None = None,
                 limit: LessonsLimit = policy.REQUESTS["lessons"].limit,
                 offset: Annotated[int, Query(ge=0)] = 0) -> dict[str, Any]:
    """Lessons matching the filters (default: active ones), newest first, one page at a time."""
    f = filters(tag, kind, status, source, min_confidence, project, file_type, context, "lessons")
    total, rows = state.call(lambda lore: lore.lessons.list(f, limit, offset))
    return {"total": total, "limit": limit, "offset": offset, "lessons": rows}


@router.post("/lessons", response_model=m.LessonOut, status_code=201, tags=["lessons"])
def create_lesson(state: Write, body: m.LessonCreate, response: Response) -> dict[str, Any]:
    """Store a new lesson (validated, indexed and embedded); answers the stored lesson."""
    fields = body.model_dump(exclude_unset=True, exclude={"title", "content"})
    lesson = state.call(lambda lore: lore.lessons.add(body.title, body.content or "", **fields))
    response.headers["Location"] = f"/api/v1/lessons/{lesson.id}"
    return lesson.to_dict()


@router.get("/lessons/{lesson_id}", response_model=m.LessonOut, tags=["lessons"])
def get_lesson(state: Read, lesson_id: str) -> dict[str, Any]:
    return state.call(lambda lore: lore.lessons.get(lesson_id)).to_dict()


@router.patch("/lessons/{lesson_id}", response_model=m.LessonOut, tags=["lessons"])
def update_lesson(state: Write, lesson_id: str, body: m.LessonUpdate) -> dict[str, Any]:
    """Change the given fields; a list replaces the old list."""
    changes = body.model_dump(exclude_unset=True)
    return state.call(lambda lore: lore.lessons.update(lesson_id, **changes)).to_dict()


@router.delete("/lessons/{lesson_id}", response_model=m.Deleted, tags=["lessons"])
def delete_lesson(state: Write, lesson_id: str) -> dict[str, Any]:
    lesson = state.call(lambda lore: lore.lessons.delete(lesson_id))
    return {"deleted": lesson.id}


@router.get("/lessons/{lesson_id}/related", response_model=list[m.RelatedOut], tags=["graph"])
def related(state: Read, lesson_id: str, depth: Annotated[int, Query(ge=1, le=5)] = 1,
            relation: StrList = [],  # noqa: B006
            direction: Literal["both", "out", "in"] = "both") -> list[dict[str, Any]]:
    """Lessons linked to this one within ``depth`` links, nearest first."""
    found = state.call(lambda lore: lore.search.related(lesson_id, depth, relation, direction))
    return [r.to_dict() for r in found]


@router.get("/lessons/{lesson_id}/graph", response_model=m.GraphOut, tags=["graph"])
def graph(state: Read, lesson_id: str, depth: Annotated[int, Query(ge=1, le=3)] = 1,
          relation: StrList = []) -> dict[str, Any]:  # noqa: B006
    """The lessons within ``depth`` links and every link among them."""
    return state.call(lambda lore: lore.search.subgraph(lesson_id, depth, relation)).to_dict()


@router.get("/search", response_model=m.SearchOut, response_model_exclude_none=True,
            tags=["search"])
def search(state: Read, q: Annotated[str, Query(min_length=1, max_length=2000)],
           limit: SearchLimit = policy.REQUESTS["search"].limit,
           mode: Literal["hybrid", "keyword", "vector"] = "hybrid", explain: bool = False,
           tag: StrList = [], kind: StrList = [], status: StrList = [],  # noqa: B006
           source: StrList = [], file_type: StrList = [], context: StrList = [],  # noqa: B006
           min_confidence: str | None = None, project: str | None = None) -> Response:
    """Hybrid search (vectors and keywords fused); ``explain`` adds each part of the score."""
    f = filters(tag, kind, status, source, min_confidence, project, file_type, context)
    hits = state.call(lambda lore: lore.search.query(q, f, limit, mode=mode, interface="web"))
    # The shape of SearchOut without the model's validation on the way out (measured: about
    # 5 ms of a 20 ms search at 10 explained hits); the parts a hit has no value for are left
    # out, as response_model_exclude_none would.
    results = [h.to_dict(explain=explain) for h in hits]
    for r in results:
        if "explain" in r:
            r["explain"] = {k: v for k, v in r["explain"].items() if v is not None}
    return JSONResponse({"query": q, "results": results})


@router.get("/preferences", response_model=m.PreferencesOut, tags=["preferences"])
def preferences(state: Read, project: str | None = None, file_type: str | None = None,
                status: StrList = [],  # noqa: B006
                limit: RulesLimit = policy.REQUESTS["preferences"].limit
                ) -> dict[str, Any]:
    """Preferences and rules of a project and the global ones (``project=global``: the global
    ones only; ``all`` or none: every project), active and proposed unless ``status`` says
    otherwise (``all``: every status)."""
    scope = policy.scope(project, "preferences")
    found = state.call(lambda lore: lore.search.preferences(
        scope.project, all_projects=scope.every, file_type=file_type or None,
        statuses=policy.statuses(status, "preferences"), limit=limit))
    return {"project": scope.project, "preferences": [p.to_dict() for p in found]}


@router.get("/conversations/search", response_model=m.ConversationsOut, tags=["conversations"])
def conversations(state: Read, q: Annotated[str, Query(min_length=1, max_length=2000)],
                  project: str | None = None,
                  limit: TalkLimit = policy.REQUESTS["conversations"].limit,
                  mode: Literal["hybrid", "keyword", "vector"] = "hybrid",
                  explain: bool = False, rerank: bool | None = None) -> dict[str, Any]:
    """Past sessions that match (imported with `lore ingest`); ``project=all`` or none searches
    every project. ``rerank``: the configured language model re-orders the best results
    (default: ``conversations.rerank``)."""
    scope = policy.scope(project, "conversations").project
    found = state.call(lambda lore: lore.conversations.find(q, project=scope, limit=limit,
                                                            mode=mode, rerank=rerank))
    return {"query": q, "project": scope, **found.outcome(),
            "results": [h.to_dict(explain=explain) for h in found.hits]}


@router.get("/stats", tags=["server"])
def stats(request: Request, state: Read) -> dict[str, Any]:
    """The numbers of `lore stats --counts --json`; where the database lies only to those who
    may write (a read token learns no path of the server's machine)."""
    numbers = state.call(lambda lore: lore.admin.stats())
    who = authorize(state, bearer(request.headers.get("authorization")), write=False)
    if who != LOCAL and getattr(who, "scope", None) != "write":
        numbers.pop("database", None)
    return numbers


# ---- review, the scheduled analysis, digests ---------------------------------------------
class ReviewIn(BaseModel):
    """A person's decision on a learned rule (`lore review approve|edit|reject|defer`)."""

    model_config = ConfigDict(extra="forbid")
    action: Literal["approve", "edit", "reject", "defer"]
    reason: str | None = Field(default=None, max_length=500)
    title: str | None = Field(default=None, max_length=300)
    content: str | None = Field(default=None, max_length=20_000)
    status: Literal["active", "proposed"] | None = None


@router.get("/review", tags=["review"])
def review_queue(state: Read, project: str | None = None,
                 limit: ReviewLimit = policy.REQUESTS["review"].limit) -> dict[str, Any]:
    """What waits for review, as `lore review --json` lists it (``project``: its rules and the
    global ones; none: every project)."""
    scope = policy.scope(project, "review")
    items = state.call(lambda lore: lore.review.waiting(scope.project, all_projects=scope.every,
                                                         limit=limit))
    return {"count": len(items), "waiting": items}


@router.post("/lessons/{lesson_id}/review", response_model=m.LessonOut, tags=["review"])
def review_decide(state: Write, lesson_id: str, body: ReviewIn) -> dict[str, Any]:
    """Approve, edit (then approve), reject (with a reason) or defer a learned rule."""
    return state.call(lambda lore: lore.review.decide(
        lesson_id, body.action, reason=body.reason, title=body.title, content=body.content,
        status=body.status)).to_dict()


@router.get("/schedule", tags=["server"])
def schedule(state: Read) -> dict[str, Any]:
    """The scheduled analysis: its cron expression, the next run, the latest runs."""
    runs = state.call(lambda lore: lore.admin.schedule_runs(10))
    return state.scheduler.status(runs)


@router.post("/schedule/run", status_code=202, tags=["server"])
def schedule_run(state: Write) -> dict[str, Any]:
    """Start one scheduled analysis now, in the background; ``started`` is false (and the run
    recorded as skipped) while another is going."""
    return {"started": state.scheduler.start_in_background("api")}


@router.get("/digest", tags=["server"])
def digest(state: Read, period: Literal["week", "month"] = "week",
           at: Annotated[str | None, Query(max_length=20)] = None) -> dict[str, Any]:
    """The digest of a week (``at=2026-W47``) or month (``at=2026-11``); default: the current one."""
    from lore.measure import digest as digests

    return state.call(lambda lore: digests.build(lore, period, at))
