"""The application: the API and the pages on one FastAPI app, errors translated once, and
`serve()`, which runs it on Uvicorn."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from lore import __version__
from lore.errors import LoreError
from lore.web import api, pages, sync
from lore.web.auth import check_host
from lore.web.errors import (
    HTTP_CODES,
    HTTPProblem,
    body,
    one_line,
    translate,
    validation_message,
)
from lore.web.gate import Gate
from lore.web.state import LOOPBACK_HOSTS, ServerState

if TYPE_CHECKING:
    from lore.api import Lore
    from lore.config import Settings
    from lore.schedule import Scheduler

API_PREFIX = "/api/"
OPENAPI_URL = "/api/v1/openapi.json"


def create_app(lore: Lore, *, require_token: bool = False, scheduler: Scheduler | None = None
               ) -> FastAPI:
    """The app over an open facade. Without ``require_token`` it answers loopback names only.
    ``scheduler`` runs the scheduled analysis (default: one for the facade's home that runs
    when asked; serve() starts its clock)."""
    from lore.schedule import Scheduler
    # The API's description is served by the route below, behind the token like the API.
    app = FastAPI(title="Lore", version=__version__, openapi_url=None,
                  docs_url=None, redoc_url=None,
                  description="A local-first learning memory for AI coding agents: lessons, "
                              "hybrid search, preferences and past conversations.")
    if scheduler is None:
        scheduler = Scheduler(lore.settings, embedder=lambda: lore.admin.embedder)
    app.state.lore = ServerState(lore, require_token=require_token, scheduler=scheduler)
    app.include_router(api.router)

    @app.get(OPENAPI_URL, include_in_schema=False)
    def openapi(_: api.Read) -> JSONResponse:
        return JSONResponse(app.openapi())

    app.include_router(sync.router)
    app.include_router(pages.router)
    # Added first, so it runs inside the host check below and its answers get the headers.
    app.add_middleware(Gate, respond=lambda scope, exc: problem(
        Request(scope), exc.status, exc.code, exc.message))

    @app.middleware("http")
    async def host_and_headers(request: Request, call_next: Any) -> Response:
        try:
            check_host(app.state.lore, request.headers.get("host"))
        except HTTPProblem as exc:
            return problem(request, exc.status, exc.code, exc.message)
        started = time.perf_counter()
        response: Response = await call_next(request)
        # How long the server took, for browsers' developer tools and bench/serve_bench.py.
        response.headers["Server-Timing"] = f"app;dur={(time.perf_counter() - started) * 1000:.1f}"
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        if not request.url.path.startswith(API_PREFIX):
            response.headers.setdefault("Content-Security-Policy",
                                        "default-src 'self'; img-src 'self' data:; "
                                        "form-action 'self'; frame-ancestors 'none'")
        return response

    @app.exception_handler(LoreError)
    async def lore_error(request: Request, exc: LoreError) -> Response:
        status, code = translate(exc)
        return problem(request, status, code, str(exc))

    @app.exception_handler(HTTPProblem)
    async def http_problem(request: Request, exc: HTTPProblem) -> Response:
        return problem(request, exc.status, exc.code, exc.message)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        status, code, message = validation_message(list(exc.errors()))
        return problem(request, status, code, message)

    @app.exception_handler(OverflowError)
    @app.exception_handler(ValueError)
    async def out_of_range(request: Request, exc: Exception) -> Response:
        # A parameter that passed the route's types but not the code under it (a number past
        # 64 bits, a date past year 9999): the client's mistake, said in one line.
        reason = " ".join(str(exc).split())[:200] or "out of range"
        return problem(request, 400, "bad_request", f"a parameter cannot be used: {reason}")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        message = {404: "no such page or resource", 405: "this method is not allowed here"}.get(
            exc.status_code, str(exc.detail))
        return problem(request, exc.status_code, HTTP_CODES.get(exc.status_code, "error"),
                       message)

    return app


def problem(request: Request, status: int, code: str, message: str) -> Response:
    """The API's one error shape; a page's error is a page."""
    if request.url.path.startswith(API_PREFIX):
        return JSONResponse(body(code, message), status_code=status)
    return pages.error_page(request, status, one_line(message))


def is_loopback(host: str) -> bool:
    import ipaddress

    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(settings: Settings, host: str, port: int, *, require_token: bool = False,
          ready: Any = None) -> None:
    """Open the database and serve until interrupted. A host other than loopback needs tokens,
    and at least one must exist."""
    import uvicorn

    from lore.api import Lore
    from lore.errors import InvalidInput
    from lore.web.limits import server_options

    require_token = require_token or not is_loopback(host)
    lore = Lore.open(settings)
    scheduler: Scheduler | None = None
    try:
        if require_token and lore.tokens.active_count() == 0:
            raise InvalidInput(f"serving on {host} needs a token; make one with `lore serve token "
                               "create --scope write` (or serve on 127.0.0.1)")
        from lore.schedule import Scheduler

        scheduler = Scheduler(settings, embedder=lambda: lore.admin.embedder)
        app = create_app(lore, require_token=require_token, scheduler=scheduler)
        threading.Thread(target=lore.search.warm, name="lore-warm", daemon=True).start()
        scheduler.start()
        if ready is not None:
            ready(require_token, scheduler)
        uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False,
                    **server_options())
    finally:
        if scheduler is not None:
            scheduler.stop()
        lore.close()
