"""The dashboard: server-rendered pages with plain forms (no script). Search with each part of
the score, lessons and their pages (evidence, history, the graph around them), the rules per
project and file type, the review queue, the trends (digests, charts, the scheduled analysis)
and the numbers. Forms that change something carry a CSRF token."""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import quote, unquote, urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from lore import __version__, policy
from lore.models import Filters
from lore.web import charts_svg, graph_svg
from lore.web.auth import CSRF_COOKIE, TOKEN_COOKIE, authorize, check_csrf, new_csrf
from lore.web.state import ServerState, state_of

if TYPE_CHECKING:
    from lore.api import Lore, ScheduleRun

router = APIRouter(include_in_schema=False)
templates = Environment(loader=PackageLoader("lore.web", "templates"),
                        autoescape=select_autoescape(["html"]), trim_blocks=True,
                        lstrip_blocks=True)


def markdown(text: str | None) -> Markup:
    """An agent's turn as the agent wrote it, rendered: CommonMark with raw HTML escaped and
    only safe link schemes (markdown-it's defaults), so nothing in it runs in the page."""
    from markdown_it import MarkdownIt

    return Markup(MarkdownIt("commonmark", {"html": False}).render(text or ""))


templates.filters["markdown"] = markdown
# Read once from the package: no request path ever names a file.
STYLE = resources.files("lore.web").joinpath("static/style.css").read_bytes()
PAGE_SIZE = 50
FLASH_COOKIE = "lore_flash"
REVIEW_DONE = {"approve": "Approved", "edit": "Edited and approved", "reject": "Rejected",
               "defer": "Deferred"}
EXPLAIN_PARTS = ("vector_rank", "similarity", "keyword_rank", "bm25", "rrf", "relevance",
                 "confidence_bonus", "usage_bonus", "recency_bonus", "context_factor", "total")


def access(request: Request, *, write: bool = False) -> ServerState:
    state = state_of(request)
    authorize(state, request.cookies.get(TOKEN_COOKIE), write=write)
    return state


def can_write(request: Request) -> bool:
    state = state_of(request)
    if not state.require_token:
        return True
    info = state.verify(request.cookies.get(TOKEN_COOKIE))
    return info is not None and info.scope == "write"


def render(request: Request, name: str, http_status: int = 200, **context: Any) -> HTMLResponse:
    """A page, with the CSRF cookie its forms repeat (made on the first page seen) and the
    flash line the last form left (shown once)."""
    csrf = request.cookies.get(CSRF_COOKIE) or new_csrf()
    state = state_of(request)
    flash = request.cookies.get(FLASH_COOKIE)
    html = templates.get_template(name).render(
        csrf=csrf, version=__version__, path=request.url.path, flash=unquote(flash or ""),
        signed_in=state.require_token and bool(request.cookies.get(TOKEN_COOKIE)),
        tokens=state.require_token, writable=can_write(request) and not state.lore.admin.read_only,
        **context)
    response = HTMLResponse(html, status_code=http_status)
    if request.cookies.get(CSRF_COOKIE) != csrf:
        response.set_cookie(CSRF_COOKIE, csrf, httponly=True, samesite="strict", path="/")
    if flash:
        response.delete_cookie(FLASH_COOKIE, path="/")
    return response


def error_page(request: Request, status: int, message: str) -> Response:
    if status == 401:
        return RedirectResponse("/login", status_code=303)
    return render(request, "error.html", http_status=status, status_code=status, message=message)


def see(url: str, flash: str | None = None) -> RedirectResponse:
    """Back to a page after a form; ``flash`` is the line it shows once."""
    response = RedirectResponse(url, status_code=303)
    if flash:
        response.set_cookie(FLASH_COOKIE, quote(flash[:300]), httponly=True, samesite="strict",
                            path="/", max_age=60)
    return response


def form_gate(request: Request, csrf: str | None, *, write: bool) -> ServerState:
    check_csrf(request.cookies.get(CSRF_COOKIE), csrf)
    return access(request, write=write)


@router.get("/static/style.css")
def style() -> Response:
    return Response(STYLE, media_type="text/css", headers={"Cache-Control": "max-age=3600"})


@router.get("/", response_class=HTMLResponse)
def search_page(request: Request, q: Annotated[str, Query(max_length=2000)] = "",
                mode: str = "hybrid") -> Response:
    state = access(request)
    if mode not in ("hybrid", "keyword", "vector"):
        mode = "hybrid"
    hits = []
    if q.strip():
        found = state.call(lambda lore: lore.search.query(q, None, 20, mode=mode,  # type: ignore[arg-type]
                                                    interface="web"))
        hits = [h.to_dict(explain=True) for h in found]
    return render(request, "search.html", q=q, mode=mode, hits=hits, parts=EXPLAIN_PARTS)


@router.get("/lessons", response_class=HTMLResponse)
def lessons_page(request: Request, kind: str = "", status: str = "active", tag: str = "",
                 project: str = "", page: Annotated[int, Query(ge=1, le=100_000)] = 1) -> Response:
    state = access(request)
    f = Filters(kinds=(kind,) if kind else (), statuses=policy.statuses([status], "lessons"),
                tags=(tag,) if tag else (), project=policy.scope(project, "lessons").filter)

    def load(lore: Lore) -> tuple[int, list[dict[str, Any]], Any, Any]:
        total, rows = lore.lessons.list(f, PAGE_SIZE, (page - 1) * PAGE_SIZE)
        return total, rows, lore.lessons.reference("kind"), lore.lessons.reference("status")

    total, rows, kinds, statuses = state.call(load)
    pages = max(1, -(-total // PAGE_SIZE))
    return render(request, "lessons.html", rows=rows, total=total, page=page, pages=pages,
                  kind=kind, status=status, tag=tag, project=project, kinds=kinds,
                  statuses=statuses)


@router.post("/lessons")
def lesson_create(request: Request, title: Annotated[str, Form()],
                  content: Annotated[str, Form()] = "", kind: Annotated[str, Form()] = "",
                  tags: Annotated[str, Form()] = "", project: Annotated[str, Form()] = "",
                  csrf: Annotated[str | None, Form()] = None) -> Response:
    state = form_gate(request, csrf, write=True)
    fields: dict[str, Any] = {"tags": [t.strip() for t in tags.split(",") if t.strip()]}
    if kind:
        fields["kind"] = kind
    if project.strip():
        fields["project"] = project.strip()
    lesson = state.call(lambda lore: lore.lessons.add(title, content, **fields))
    return see(f"/lessons/{lesson.id}")


@router.get("/lessons/{lesson_id}", response_class=HTMLResponse)
def lesson_page(request: Request, lesson_id: str) -> Response:
    state = access(request)

    def load(lore: Lore) -> tuple[Any, Any, Any]:
        lesson = lore.lessons.get(lesson_id)
        return lesson, lore.search.subgraph(lesson.id, 2), lore.search.related(lesson.id, 2)

    lesson, sub, near = state.call(load)
    history = sorted(
        [(lesson.created_at, "created"), (lesson.updated_at, "last changed")]
        + ([(lesson.last_used, f"last recalled ({lesson.usage_count} time"
                                f"{'' if lesson.usage_count == 1 else 's'} in all)")]
           if lesson.last_used else [])
        + [(e.observed_at, f"evidence: “{e.quote[:80]}”") for e in lesson.evidence if e.observed_at],
        key=lambda item: item[0])
    learning = lesson.metadata.get("learning") if isinstance(lesson.metadata, dict) else None
    return render(request, "lesson.html", lesson=lesson, graph=graph_svg.render(sub, lesson.id),
                  related=near, history=history, learning=learning)


@router.post("/lessons/{lesson_id}/delete")
def lesson_delete(request: Request, lesson_id: str,
                  csrf: Annotated[str | None, Form()] = None) -> Response:
    state = form_gate(request, csrf, write=True)
    state.call(lambda lore: lore.lessons.delete(lesson_id))
    return see("/lessons")


@router.get("/rules", response_class=HTMLResponse)
def rules_page(request: Request, project: str = "all", file_type: str = "") -> Response:
    state = access(request)
    scope = policy.scope(project, "preferences")

    def load(lore: Lore) -> tuple[Any, list[str]]:
        found = lore.search.preferences(scope.project, all_projects=scope.every,
                                        file_type=file_type or None, limit=500)
        projects = sorted(p for p in lore.admin.stats()["by_project"] if p != "(global)")
        return found, projects

    found, projects = state.call(load)
    groups: dict[str, dict[str, list[Any]]] = {}
    for p in found:
        where = p.project or "Global"
        for ft in p.file_types or ["any file"]:
            groups.setdefault(where, {}).setdefault(ft, []).append(p)
    return render(request, "rules.html", groups=groups, projects=projects, project=project,
                  file_type=file_type, count=len(found))


@router.get("/review", response_class=HTMLResponse)
def review_page(request: Request, project: str = "") -> Response:
    """What waits for a person's word, as `lore review` lists it, with a form per decision."""
    state = access(request)
    every = state.call(lambda lore: lore.review.waiting(None, all_projects=True, limit=200))
    checks = state.call(lambda lore: lore.review.waiting_checks(project or None))
    # A project's queue is its rules and the global ones, as `lore review --project`.
    items = [i for i in every if not project or i["scope"] in (project, "global")]
    projects = sorted({i["scope"] for i in every} - {"global"} | ({project} if project else set()))
    return render(request, "review.html", items=items, project=project, projects=projects,
                  checks=checks)


@router.post("/review/check/{check_id}")
def review_check(request: Request, check_id: str, action: Annotated[str, Form()],
                 mode: Annotated[str, Form()] = "", project: Annotated[str, Form()] = "",
                 csrf: Annotated[str | None, Form()] = None) -> Response:
    """Approve (in its mode or the one given) or reject a check, as `lore guard`."""
    state = form_gate(request, csrf, write=True)
    check = state.call(lambda lore: lore.review.decide_check(check_id, action, mode=mode or None))
    back = "/review" + (f"?{urlencode({'project': project})}" if project else "") + "#checks"
    done = "Approved" if action == "approve" else "Rejected"
    return see(back, f"{done}: {check['words']} (rule “{check['rule']}”).")


@router.post("/review/{lesson_id}")
def review_decide(request: Request, lesson_id: str, action: Annotated[str, Form()],
                  reason: Annotated[str, Form()] = "", title: Annotated[str, Form()] = "",
                  content: Annotated[str, Form()] = "", project: Annotated[str, Form()] = "",
                  csrf: Annotated[str | None, Form()] = None) -> Response:
    state = form_gate(request, csrf, write=True)
    lesson = state.call(lambda lore: lore.review.decide(
        lesson_id, action, reason=reason.strip() or None, title=title.strip() or None,
        content=content.strip() or None))
    back = "/review" + (f"?{urlencode({'project': project})}" if project else "")
    why = f" ({reason.strip()})" if action == "reject" and reason.strip() else ""
    return see(back, f"{REVIEW_DONE.get(action, action)}: “{lesson.title}”{why}.")


@router.get("/trends", response_class=HTMLResponse)
def trends_page(request: Request, period: str = "week", at: str = "") -> Response:
    """The digest of a week or a month beside the previous one, its charts, and the
    scheduled analysis (next run, the last runs)."""
    from lore.measure import digest

    state = access(request)
    if period not in digest.KINDS:
        period = "week"

    def load(lore: Lore) -> tuple[dict[str, Any], list[ScheduleRun], list[dict[str, Any]]]:
        from lore.measure.learning import rule_follow  # the figures `lore stats --rules` shows

        return (digest.build(lore, period, at or None), lore.admin.schedule_runs(5),
                [r.to_dict() for r in rule_follow(lore)])

    d, runs, rules = state.call(load)
    shown = digest.parse_period(period, d["period"])
    weekly = d["weekly"]
    labels = [w["week"].split("-")[-1] for w in weekly]  # W47
    charts = {
        "repeated": charts_svg.bars("Corrections per week, and how many repeated a known rule",
                                    labels, [("corrections", [w["corrections"] for w in weekly]),
                                             ("repeated", [w["repeated"] for w in weekly])]),
        "learned": charts_svg.bars("Lessons added and rules learned per week", labels,
                                   [("lessons added", [w["lessons_added"] for w in weekly]),
                                    ("rules learned", [w["learned"] for w in weekly])]),
        "loads": charts_svg.bars("Lessons each session start loaded", [
            (ld["session_id"] or "?") for ld in d["context_loads"]],
            [("shown", [ld["shown"] for ld in d["context_loads"]]),
             ("left out", [ld["dropped"] for ld in d["context_loads"]])], short=6)
        if d["context_loads"] else None,
    }
    return render(request, "trends.html", d=d, period=period, charts=charts, rules=rules,
                  before=shown.previous().label,
                  after=digest.period_of(period, shown.end).label,
                  schedule=state.scheduler.status(runs), compared=digest.COMPARED)


@router.post("/schedule/run")
def schedule_run(request: Request, csrf: Annotated[str | None, Form()] = None) -> Response:
    state = form_gate(request, csrf, write=True)
    started = state.scheduler.start_in_background("dashboard")
    return see("/trends", "The analysis is running; reload to see its outcome." if started
               else "An analysis is already running; this one was skipped.")


@router.get("/stats", response_class=HTMLResponse)
def stats_page(request: Request) -> Response:
    state = access(request)
    return render(request, "stats.html", stats=state.call(lambda lore: lore.admin.stats()))


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request) -> Response:
    return render(request, "login.html", failed=False)


@router.post("/login")
def login(request: Request, token: Annotated[str, Form()],
          csrf: Annotated[str | None, Form()] = None) -> Response:
    check_csrf(request.cookies.get(CSRF_COOKIE), csrf)
    state = state_of(request)
    if state.require_token and state.verify(token) is None:
        return render(request, "login.html", http_status=401, failed=True)
    response = see("/")
    response.set_cookie(TOKEN_COOKIE, token.strip(), httponly=True, samesite="strict", path="/")
    return response


@router.post("/logout")
def logout(request: Request, csrf: Annotated[str | None, Form()] = None) -> Response:
    check_csrf(request.cookies.get(CSRF_COOKIE), csrf)
    response = see("/login" if state_of(request).require_token else "/")
    response.delete_cookie(TOKEN_COOKIE, path="/")
    return response
