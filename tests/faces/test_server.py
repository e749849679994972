"""`lore serve`: the REST API and the dashboard's forms against a real Uvicorn server over
loopback, with httpx; tokens, CSRF, error shapes and paths that must never reach a file."""

from __future__ import annotations

import re

import httpx
import pytest

from lore.ids import new_id
from server_util import running

pytest.importorskip("fastapi")

SESSIONS = {"title": "Use local file sessions, not Redis",
            "content": "For auth in this project the user rejected Redis; sessions live in var/sessions.",
            "kind": "preference", "tags": ["auth", "sessions"], "file_types": ["py"],
            "preference": {"rejected": "Redis sessions", "preferred": "file sessions"},
            "evidence": [{"quote": "No, don't use Redis for sessions", "session_id": "s-1"}]}


@pytest.fixture
def base(lore):
    with running(lore) as url:
        yield url


@pytest.fixture
def client(base):
    with httpx.Client(base_url=base, timeout=30) as c:
        yield c


def error_of(response: httpx.Response) -> dict:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    assert body["error"]["message"]
    return body["error"]


def test_lessons_round_trip(client):
    created = client.post("/api/v1/lessons", json=SESSIONS)
    assert created.status_code == 201, created.text
    lesson = created.json()
    assert created.headers["location"] == f"/api/v1/lessons/{lesson['id']}"
    assert lesson["preference"]["preferred"] == "file sessions" and lesson["tags"] == ["auth", "sessions"]
    assert client.get(f"/api/v1/lessons/{lesson['id']}").json() == lesson

    other = client.post("/api/v1/lessons", json={"title": "Deploy with the blue-green script",
                                                 "kind": "project_rule", "project": "/srv/shop"}).json()
    page = client.get("/api/v1/lessons", params={"tag": "auth"}).json()
    assert page["total"] == 1 and [r["id"] for r in page["lessons"]] == [lesson["id"]]
    both = client.get("/api/v1/lessons", params={"limit": 1}).json()
    assert both["total"] == 2 and [r["id"] for r in both["lessons"]] == [other["id"]]  # newest first
    second = client.get("/api/v1/lessons", params={"limit": 1, "offset": 1}).json()
    assert [r["id"] for r in second["lessons"]] == [lesson["id"]]

    changed = client.patch(f"/api/v1/lessons/{lesson['id']}", json={"tags": ["login"]})
    assert changed.status_code == 200 and changed.json()["tags"] == ["login"]
    assert client.delete(f"/api/v1/lessons/{lesson['id']}").json() == {"deleted": lesson["id"]}
    assert error_of(client.get(f"/api/v1/lessons/{lesson['id']}"))["code"] == "not_found"


def test_search_explains_and_finds_by_meaning(client):
    ids = [client.post("/api/v1/lessons", json=body).json()["id"] for body in (
        SESSIONS, {"title": "Pin numpy below 2 for the old wheels", "content": "Binary wheels break."})]
    found = client.get("/api/v1/search", params={"q": "where do we keep login state?",
                                                 "explain": "true"}).json()
    assert found["query"] == "where do we keep login state?"
    top = found["results"][0]
    assert top["id"] == ids[0]
    assert {"vector_rank", "similarity", "rrf", "total", "confidence_bonus"} <= set(top["explain"])
    plain = client.get("/api/v1/search", params={"q": "numpy wheels", "mode": "keyword"}).json()
    assert plain["results"][0]["id"] == ids[1] and "explain" not in plain["results"][0]
    filtered = client.get("/api/v1/search", params={"q": "sessions", "kind": "project_rule"}).json()
    assert filtered["results"] == []


def test_graph_preferences_conversations_stats(client):
    a = client.post("/api/v1/lessons", json=SESSIONS).json()
    b = client.post("/api/v1/lessons", json={"title": "Sessions expire after a day"}).json()
    related = client.get(f"/api/v1/lessons/{a['id']}/related").json()
    assert related == []
    prefs = client.get("/api/v1/preferences", params={"project": "all"}).json()
    assert [p["id"] for p in prefs["preferences"]] == [a["id"]]
    assert client.get("/api/v1/preferences", params={"file_type": "ts"}).json()["preferences"] == []
    conv = client.get("/api/v1/conversations/search", params={"q": "redis"}).json()
    assert conv == {"query": "redis", "project": None, "results": [], "reranked_by": None,
                    "rerank_error": None}
    stats = client.get("/api/v1/stats").json()
    assert stats["lessons"] == 2 and stats["by_kind"]["preference"] == 1
    assert b["id"] != a["id"]


def test_related_and_graph_follow_links(lore, client):
    a = client.post("/api/v1/lessons", json=SESSIONS).json()["id"]
    b = client.post("/api/v1/lessons", json={"title": "Sessions expire after a day"}).json()["id"]
    c = client.post("/api/v1/lessons", json={"title": "Clear expired sessions nightly"}).json()["id"]
    # Links are made through the facade (the server is idle between requests).
    lore.lessons.link(a, b, "related_to")
    lore.lessons.link(b, c, "depends_on")
    near = client.get(f"/api/v1/lessons/{a}/related", params={"depth": 2}).json()
    assert [(r["id"], r["depth"]) for r in near] == [(b, 1), (c, 2)]
    graph = client.get(f"/api/v1/lessons/{a}/graph", params={"depth": 2}).json()
    assert {n["id"] for n in graph["nodes"]} == {a, b, c} and len(graph["edges"]) == 2
    page = client.get(f"/lessons/{a}")
    assert page.status_code == 200
    svg = re.search(r"<svg class=\"graph\".*?</svg>", page.text, re.S)
    assert svg and f'href="/lessons/{c}"' in svg.group(0) and "depends_on" in svg.group(0)


def test_errors_have_one_shape_and_meaningful_codes(client):
    assert error_of(client.get("/api/v1/lessons/not-an-id")).get("code") == "invalid_input"
    assert client.get("/api/v1/lessons/not-an-id").status_code == 422
    missing = client.get(f"/api/v1/lessons/{new_id()}")
    assert missing.status_code == 404 and error_of(missing)["code"] == "not_found"
    bad_json = client.post("/api/v1/lessons", content=b"{not json",
                           headers={"content-type": "application/json"})
    assert bad_json.status_code == 400 and error_of(bad_json)["code"] == "bad_request"
    no_title = client.post("/api/v1/lessons", json={"content": "x"})
    assert no_title.status_code == 422 and "title" in error_of(no_title)["message"]
    bad_kind = client.post("/api/v1/lessons", json={"title": "t", "kind": "nonsense"})
    assert bad_kind.status_code == 422 and "kind" in error_of(bad_kind)["message"]
    unknown_field = client.post("/api/v1/lessons", json={"title": "t", "colour": "red"})
    assert unknown_field.status_code == 422
    assert client.get("/api/v1/search").status_code == 422
    assert client.get("/api/v1/lessons", params={"limit": 0}).status_code == 422
    assert error_of(client.get("/api/v1/nothing-here"))["code"] == "not_found"
    assert error_of(client.put("/api/v1/stats"))["code"] == "method_not_allowed"
    assert client.get("/lessons/not-an-id").status_code == 422  # a page: an HTML error page
    assert "text/html" in client.get("/lessons/not-an-id").headers["content-type"]


@pytest.mark.parametrize("path", [
    "/api/v1/lessons/..%2F..%2F..%2Fetc%2Fpasswd",
    "/api/v1/lessons/%2e%2e%2fpyproject.toml",
    "/api/v1/lessons/....//....//etc/passwd",
    "/lessons/..%2F..%2Fsrc%2Florerc",
    "/static/..%2F__init__.py",
    "/static/../../pyproject.toml",
    "/static/templates/base.html",
    "/static/%2e%2e/app.py",
])
def test_no_client_path_reaches_the_file_system(client, path):
    response = client.get(path)
    assert response.status_code in (404, 422), (path, response.status_code)
    assert "import" not in response.text and "root:" not in response.text
    assert client.get("/static/style.css").status_code == 200


def test_openapi_and_health(client):
    spec = client.get("/api/v1/openapi.json").json()
    assert {"/api/v1/lessons", "/api/v1/lessons/{lesson_id}", "/api/v1/search",
            "/api/v1/lessons/{lesson_id}/related", "/api/v1/preferences",
            "/api/v1/conversations/search", "/api/v1/stats", "/api/v1/health"} <= set(spec["paths"])
    assert "LessonOut" in spec["components"]["schemas"] and "ErrorOut" in spec["components"]["schemas"]
    assert not any(p.startswith("/lessons") for p in spec["paths"])  # pages stay out of the API
    health = client.get("/api/v1/health").json()
    assert health["status"] == "ok" and health["read_only"] is False


def test_loopback_server_refuses_other_host_names(client):
    rebound = client.get("/api/v1/stats", headers={"host": "attacker.example:8420"})
    assert rebound.status_code == 400 and error_of(rebound)["code"] == "bad_request"
    assert client.get("/api/v1/stats", headers={"host": "localhost:8420"}).status_code == 200


def test_tokens_read_write_and_revoked(lore):
    read_info, read = lore.tokens.create("read", "phone")
    _, write = lore.tokens.create("write")
    with running(lore, require_token=True) as url, httpx.Client(base_url=url, timeout=30) as c:
        assert c.get("/api/v1/health").status_code == 200  # liveness needs no token
        none = c.get("/api/v1/stats")
        assert none.status_code == 401 and error_of(none)["code"] == "unauthorized"
        assert c.get("/api/v1/stats", headers={"authorization": "Bearer lore_nonsense"}).status_code == 401
        forged = read[:-4] + ("AAAA" if not read.endswith("AAAA") else "BBBB")
        assert c.get("/api/v1/stats", headers={"authorization": f"Bearer {forged}"}).status_code == 401
        as_reader = {"authorization": f"Bearer {read}"}
        as_writer = {"authorization": f"Bearer {write}"}
        assert c.get("/api/v1/stats", headers=as_reader).status_code == 200
        refused = c.post("/api/v1/lessons", json={"title": "t"}, headers=as_reader)
        assert refused.status_code == 403 and error_of(refused)["code"] == "forbidden"
        made = c.post("/api/v1/lessons", json={"title": "t"}, headers=as_writer)
        assert made.status_code == 201
        assert c.delete(f"/api/v1/lessons/{made.json()['id']}", headers=as_reader).status_code == 403
        # Other host names are fine once tokens guard the server.
        assert c.get("/api/v1/stats", headers={**as_reader, "host": "lore.home:8420"}).status_code == 200
        # A page without a token goes to the sign-in form.
        assert c.get("/stats").status_code == 303
        revoked = lore.tokens.revoke(read_info.id)
        assert not revoked.active
        assert c.get("/api/v1/stats", headers=as_reader).status_code == 401
    listed = {t.id: t for t in lore.tokens.list()}
    assert listed[read_info.id].last_used_at is not None


def test_the_api_description_needs_a_token_when_the_api_does(lore):
    """/api/v1/openapi.json lists every route and model: behind the token like the API (a
    read token is enough); no Swagger or ReDoc page is served at all."""
    _, read = lore.tokens.create("read", "phone")
    with running(lore, require_token=True) as url, httpx.Client(base_url=url, timeout=30) as c:
        none = c.get("/api/v1/openapi.json")
        assert none.status_code == 401 and error_of(none)["code"] == "unauthorized"
        assert "paths" not in none.text
        bad = c.get("/api/v1/openapi.json", headers={"authorization": "Bearer lore_nonsense"})
        assert bad.status_code == 401
        spec = c.get("/api/v1/openapi.json", headers={"authorization": f"Bearer {read}"})
        assert spec.status_code == 200 and "/api/v1/lessons" in spec.json()["paths"]
        assert "/api/v1/openapi.json" not in spec.json()["paths"]
        for page in ("/docs", "/redoc", "/docs/oauth2-redirect"):
            assert c.get(page, headers={"authorization": f"Bearer {read}"}).status_code in (303, 404)
            assert "swagger" not in c.get(page).text.lower()


def test_tokens_are_stored_hashed(lore, settings):
    info, secret = lore.tokens.create("write", "laptop")
    assert secret.startswith(f"lore_{info.id}_")
    lore.store.optimize()
    raw = b"".join(p.read_bytes() for p in settings.home.glob("lore.db*"))
    assert secret[len(f"lore_{info.id}_"):].encode() not in raw and b"laptop" in raw
    assert lore.tokens.verify(secret) == lore.tokens.list()[0]
    with pytest.raises(Exception, match="invalid scope"):
        lore.tokens.create("admin")


def csrf_of(page: httpx.Response) -> str:
    match = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert match, "the form carries a CSRF field"
    return match.group(1)


def test_forms_need_their_csrf_token(lore, client):
    page = client.get("/lessons")
    token = csrf_of(page)
    assert "samesite=strict" in page.headers["set-cookie"].lower()
    missing = client.post("/lessons", data={"title": "Forged lesson"}, follow_redirects=False)
    assert missing.status_code == 403 and "CSRF" in missing.text
    wrong = client.post("/lessons", data={"title": "Forged lesson", "csrf": "x" * 43},
                        follow_redirects=False)
    assert wrong.status_code == 403
    assert lore.lessons.count() == 0
    made = client.post("/lessons", data={"title": "Real lesson", "tags": "a, b", "csrf": token},
                       follow_redirects=False)
    assert made.status_code == 303 and made.headers["location"].startswith("/lessons/")
    lesson_id = made.headers["location"].rsplit("/", 1)[1]
    assert list(lore.lessons.get(lesson_id).tags) == ["a", "b"]
    with httpx.Client(base_url=str(client.base_url), timeout=30) as stranger:  # no cookie
        assert stranger.post(f"/lessons/{lesson_id}/delete", data={"csrf": token},
                             follow_redirects=False).status_code == 403
    gone = client.post(f"/lessons/{lesson_id}/delete", data={"csrf": token}, follow_redirects=False)
    assert gone.status_code == 303 and lore.lessons.count() == 0


def test_pages_render(lore, client):
    lesson = client.post("/api/v1/lessons", json=SESSIONS).json()
    for path in ("/", "/?q=redis+sessions", "/lessons", "/rules", "/rules?project=global&file_type=py",
                 "/stats", f"/lessons/{lesson['id']}", "/login"):
        page = client.get(path)
        assert page.status_code == 200, path
        assert "<main" in page.text and "Lore" in page.text
    found = client.get("/?q=where+do+we+keep+login+state%3F").text
    assert lesson["title"] in found and "similarity" in found
    shown = client.get(f"/lessons/{lesson['id']}").text
    assert "No, don&#39;t use Redis for sessions" in shown and "History" in shown
    rules = client.get("/rules").text
    assert "Global" in rules and ".py" in rules and lesson["title"] in rules


def test_sign_in_with_a_token_cookie(lore):
    _, read = lore.tokens.create("read")
    with running(lore, require_token=True) as url, httpx.Client(base_url=url, timeout=30) as c:
        token = csrf_of(c.get("/login"))
        bad = c.post("/login", data={"token": "lore_wrong", "csrf": token})
        assert bad.status_code == 401 and "not valid" in bad.text
        ok = c.post("/login", data={"token": read, "csrf": token}, follow_redirects=False)
        assert ok.status_code == 303 and "httponly" in ok.headers["set-cookie"].lower()
        assert c.get("/stats").status_code == 200
        assert "New lesson" not in c.get("/lessons").text  # a read token sees no write forms
        # The cookie opens pages, not the API: API clients send the header.
        assert c.get("/api/v1/stats").status_code == 401


def test_serve_cli_tokens_and_refusal(run):
    made = run("serve", "token", "create", "--scope", "read", "--name", "phone", "--json")
    assert made.exit_code == 0, made.output
    import json

    info = json.loads(made.stdout)
    assert info["scope"] == "read" and info["token"].startswith("lore_")
    listed = json.loads(run("serve", "token", "list", "--json").stdout)
    assert [t["name"] for t in listed] == ["phone"] and "token" not in listed[0]
    assert run("serve", "token", "revoke", info["id"]).exit_code == 0
    again = run("serve", "token", "revoke", "01ARZ3NDEKTSV4RRFFQ69G5FAV")
    assert again.exit_code == 1 and "no token" in again.output
    bad = run("serve", "token", "create", "--scope", "admin")
    assert bad.exit_code == 2
    refused = run("serve", "--host", "0.0.0.0", "--port", "9")
    assert refused.exit_code == 1 and "needs a token" in refused.output


def test_lore_serve_runs_until_stopped(lore_home):
    """The command itself: a subprocess serving on a free port, stopped with SIGINT."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from server_util import free_port

    port = free_port()
    lore_bin = Path(sys.executable).with_name("lore")
    proc = subprocess.Popen([str(lore_bin), "serve", "--port", str(port)], stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "LORE_HOME": str(lore_home)})
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/api/v1/health", timeout=5)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, "lore serve did not start"
                time.sleep(0.2)
        assert health.json()["status"] == "ok"
        made = httpx.post(f"http://127.0.0.1:{port}/api/v1/lessons", json={"title": "Served"},
                          timeout=60)
        assert made.status_code == 201
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert f"serving Lore on http://127.0.0.1:{port}/" in err and "Traceback" not in err


def test_a_database_of_the_previous_release_gains_the_token_table(settings, monkeypatch):
    from conftest import FakeEmbedder
    from lore.api import Lore
    from lore.store.sqlite.migrations import MIGRATIONS

    released = MIGRATIONS.index(next(m for m in MIGRATIONS if m.__name__ == "m008_server_tokens"))
    # Plus the who-wrote-it columns every write of this release fills in.
    who = next(m for m in MIGRATIONS if m.__name__ == "m013_who_and_where")
    with monkeypatch.context() as m:
        m.setattr("lore.store.sqlite.migrations.MIGRATIONS", [*MIGRATIONS[:released], who])
        m.setattr("lore.store.sqlite.migrations.SCHEMA_VERSION", 13)
        with Lore.open(settings, embedder=FakeEmbedder()) as old:
            kept = old.lessons.add("Made before the server existed").id
            with pytest.raises(Exception, match="server_tokens"):
                old.tokens.list()
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        assert lore.lessons.get(kept).title == "Made before the server existed"
        _, secret = lore.tokens.create("read")
        assert lore.tokens.verify(secret) is not None
