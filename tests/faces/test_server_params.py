"""Every GET route of the API and the dashboard, with hostile query parameters drawn by
hypothesis, against a real server: never a 500, and an API error is one line."""

from __future__ import annotations

from urllib.parse import quote

import httpx
import pytest
from fastapi.routing import APIRoute
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lore.web import api, pages, sync
from server_util import running

pytest.importorskip("fastapi")

# Values that broke or could break a parameter: numbers past 64 bits, dates at the ends of the
# calendar, periods that do not exist, separators, NULs, paths, long and foreign text.
EDGES = ["", " ", "0", "-1", "1", "500", "501", str(2**31), str(2**63 - 1), str(2**63),
         str(2**64), str(-(2**63) - 1), "1e309", "nan", "inf", "-0", "0x10", "1_000",
         "9999-W52", "9999-W53", "9999-12", "9999-13", "0001-01", "0001-W01", "0000-00",
         "1969-12", "1970-W01", "1970-01", "9998-12", "9998-W52", "9998-W53", "2026-W53",
         "2026-W00", "2026-00", "2026-11", "2026-W47",
         "٢٠٢٦-١١", "２０２６-W47", "week", "month", "year", "hybrid", "keyword", "vector",
         "all", "*", "global", "true", "false", "none", "null", "\x00", "%00", "a\nb",
         "../../etc/passwd", "/etc/passwd", "C:\\Windows", "<script>", "'; DROP TABLE x;--",
         "01JD8X3Q5M0000000000000000", "01JD8X3Q5M000000000000000", "x" * 5000, "é" * 300]
VALUES = st.one_of(st.sampled_from(EDGES), st.text(max_size=40),
                   st.integers(min_value=-(2**70), max_value=2**70).map(str))


def get_routes() -> list[tuple[str, list[str]]]:
    """(path, query parameter names) of every GET route."""
    routes = []
    for router in (api.router, pages.router, sync.router):
        for route in router.routes:
            if isinstance(route, APIRoute) and "GET" in route.methods:
                names = [p.alias for p in route.dependant.query_params]
                routes.append((route.path, names))
    return routes


ROUTES = get_routes()


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, list[tuple[str, str]]]:
    path, names = draw(st.sampled_from(ROUTES))
    for segment in ("{lesson_id}",):
        path = path.replace(segment, quote(draw(VALUES), safe="") or "x")
    params = []
    for name in draw(st.lists(st.sampled_from(names), max_size=4)) if names else []:
        params.append((name, draw(VALUES)))
    return path, params


def test_the_routes_are_all_drawn():
    paths = {p for p, _ in ROUTES}
    assert {"/api/v1/digest", "/trends", "/api/v1/sync/pull", "/api/v1/lessons", "/"} <= paths


@pytest.fixture
def server(lore):
    lore.lessons.add("Use pnpm, not npm", "The user said so.", kind="preference",
                    tags=["tooling"])
    with running(lore) as url, httpx.Client(base_url=url, timeout=60) as client:
        yield client


KNOWN = [("/api/v1/digest", [("at", "9999-W52")]),
         ("/api/v1/digest", [("period", "month"), ("at", "9999-12")]),
         ("/trends", [("period", "month"), ("at", "0001-01")]),
         ("/api/v1/sync/pull", [("device", "01JD8X3Q5M0000000000000000"),
                                ("cursor", str(2**63))])]


def check(client: httpx.Client, path: str, params: list[tuple[str, str]]) -> None:
    r = client.get(path, params=params, follow_redirects=False)
    assert r.status_code < 500, (path, params, r.text[:500])
    if r.status_code >= 400 and path.startswith("/api/"):
        error = r.json()["error"]
        assert error["message"] and "\n" not in error["message"], (path, params, error)


@pytest.mark.parametrize(("path", "params"), KNOWN)
def test_parameters_that_gave_500s_answer_one_4xx_line(server, path, params):
    r = server.get(path, params=params)
    assert 400 <= r.status_code < 500, r.text[:300]
    check(server, path, params)


@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(request=requests())
def test_no_query_parameter_makes_a_500(server, request):
    path, params = request
    check(server, path, params)


FIELDS = ["title", "content", "kind", "status", "confidence", "score", "tags", "preference",
          "examples", "evidence", "metadata", "project", "file_types", "trade_offs", "summary",
          "contexts", "action", "reason", "unknown"]
JSON = st.recursive(st.none() | st.booleans() | st.integers(-(2**70), 2**70)
                    | st.floats(allow_nan=True) | st.text(max_size=30)
                    | st.sampled_from(EDGES),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.sampled_from(FIELDS), inner, max_size=5),
                    max_leaves=12)


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(route=st.sampled_from([("POST", "/api/v1/lessons"), ("PATCH", "/api/v1/lessons/{id}"),
                              ("POST", "/api/v1/lessons/{id}/review"),
                              ("PATCH", "/api/v1/lessons/01JD8X3Q5M0000000000000000")]),
       body=st.one_of(st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=6), JSON))
def test_no_lesson_body_makes_a_500(lore, server, route, body):
    import json

    lesson_id = lore.lessons.list(None, 1, 0)[1][0]["id"]
    method, path = route
    r = server.request(method, path.replace("{id}", lesson_id),
                       content=json.dumps(body, allow_nan=True),
                       headers={"content-type": "application/json"})
    assert r.status_code < 500, (route, body, r.text[:300])
    if r.status_code >= 400:
        assert "\n" not in r.json()["error"]["message"]
