"""What a request passes before any of it is parsed, against a real Uvicorn server over
loopback: the body's size (declared and streamed), the token of a change, where a browser's
request came from; lessons and fields capped at every door; no path for read tokens."""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from lore.validation import FIELD_MAX, LIST_MAX, TEXT_MAX, TITLE_MAX
from lore.web.gate import MAX_BODY
from lore.web.sync import MAX_BODY as SYNC_MAX
from server_util import running

pytest.importorskip("fastapi")


def error_of(response: httpx.Response) -> dict:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    assert "\n" not in body["error"]["message"]
    return body["error"]


def raw(url: str, head: str, chunks: int = 0, chunk: bytes = b"") -> tuple[int, int]:
    """Send ``head`` (the request line and headers), then up to ``chunks`` chunks of a chunked
    body while the server keeps reading; (status, chunks sent before the answer)."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as s:
        s.sendall(head.replace("\n", "\r\n").encode() + b"\r\n")
        sent = 0
        s.setblocking(False)
        answer = b""
        while sent < chunks:
            try:
                answer += s.recv(65536)
                if b"\r\n" in answer:
                    break
            except BlockingIOError:
                pass
            try:
                s.setblocking(True)
                s.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                s.setblocking(False)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += 1
        s.setblocking(True)
        while b"\r\n" not in answer:
            got = s.recv(65536)
            if not got:
                break
            answer += got
    match = re.match(rb"HTTP/1\.1 (\d{3})", answer)
    assert match, answer[:200]
    return int(match.group(1)), sent


def rss_kb() -> int:
    with open(f"/proc/{os.getpid()}/status") as f:
        return int(next(line for line in f if line.startswith("VmRSS")).split()[1])


@pytest.fixture
def tokens(lore):
    _, read = lore.tokens.create("read", "phone")
    _, write = lore.tokens.create("write", "laptop")
    return {"read": {"authorization": f"Bearer {read}"},
            "write": {"authorization": f"Bearer {write}"}}


@pytest.fixture
def guarded(lore, tokens):
    with running(lore, require_token=True) as url:
        yield url


@pytest.mark.parametrize("path", ["/api/v1/lessons", "/api/v1/sync/push", "/lessons",
                                  "/api/v1/schedule/run"])
def test_a_huge_declared_body_is_refused_before_it_is_sent(guarded, path):
    # 400 MB announced, not one byte sent: the answer comes without waiting for the body.
    status, _ = raw(guarded, f"POST {path} HTTP/1.1\nHost: 127.0.0.1\n"
                             f"Content-Length: {400 * 1024 * 1024}\n"
                             "Content-Type: application/json\n")
    assert status == 413


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc")
@pytest.mark.parametrize("path", ["/api/v1/lessons", "/api/v1/sync/push", "/review/x"])
def test_a_streamed_body_without_a_token_is_never_read(guarded, path):
    before = rss_kb()
    status, sent = raw(guarded, f"POST {path} HTTP/1.1\nHost: 127.0.0.1\n"
                                "Transfer-Encoding: chunked\nContent-Type: application/json\n",
                       chunks=400, chunk=b"x" * (1024 * 1024))
    # 401 for the API; a page sends the browser to sign in.
    assert status in (401, 303)
    assert sent < 400  # the answer came while the 400 MB were still being sent
    assert rss_kb() - before < 100 * 1024  # the server held none of it


@pytest.mark.parametrize(("path", "limit"), [("/api/v1/lessons", MAX_BODY),
                                             ("/api/v1/sync/push", SYNC_MAX)])
def test_a_streamed_body_past_the_bound_is_cut_off(guarded, tokens, path, limit):
    auth = tokens["write"]["authorization"]
    status, sent = raw(guarded, f"POST {path} HTTP/1.1\nHost: 127.0.0.1\n"
                                f"Authorization: {auth}\nTransfer-Encoding: chunked\n"
                                "Content-Type: application/json\n",
                       chunks=limit // (256 * 1024) + 40, chunk=b" " * (256 * 1024))
    assert status == 413
    assert sent <= limit // (256 * 1024) + 40


def test_writes_need_a_token_before_the_body_and_a_read_token_cannot_write(guarded, tokens):
    with httpx.Client(base_url=guarded, timeout=30) as c:
        for path in ("/api/v1/lessons", "/api/v1/schedule/run", "/api/v1/sync/push"):
            none = c.post(path, content=b"{not json")
            assert none.status_code == 401 and error_of(none)["code"] == "unauthorized"
            reader = c.post(path, content=b"{not json", headers=tokens["read"])
            assert reader.status_code == 403
        bad = c.post("/api/v1/lessons", content=b"{not json",
                     headers={**tokens["write"], "content-type": "application/json"})
        assert bad.status_code == 400  # only now is the body read
        # Signing in and out need no token (they set and clear the cookie); CSRF still holds.
        assert c.post("/login", data={"token": "x"}).status_code == 403
        assert c.post("/logout", data={}).status_code == 403


def test_stats_show_the_database_path_to_writers_only(lore, guarded, tokens):
    with httpx.Client(base_url=guarded, timeout=30) as c:
        as_reader = c.get("/api/v1/stats", headers=tokens["read"])
        as_writer = c.get("/api/v1/stats", headers=tokens["write"])
    assert as_reader.status_code == as_writer.status_code == 200
    assert "database" not in as_reader.json() and as_reader.json()["lessons"] == 0
    home = str(lore.settings.home)
    assert home not in as_reader.text
    assert as_writer.json()["database"] == lore.settings.db_shown


# ---- same origin -----------------------------------------------------------------------
CROSS = [{"origin": "https://evil.example"}, {"origin": "null"},
         {"sec-fetch-site": "cross-site"}, {"sec-fetch-site": "same-site"},
         {"referer": "https://evil.example/page.html"},
         {"origin": "http://127.0.0.1:1"}]  # another port is another origin


@pytest.fixture
def local(lore):
    with running(lore) as url:
        yield url


@pytest.mark.parametrize("headers", CROSS)
def test_a_web_page_cannot_make_a_loopback_server_change_anything(lore, local, headers):
    with httpx.Client(base_url=local, timeout=30) as c:
        run = c.post("/api/v1/schedule/run", headers=headers)
        assert run.status_code == 403 and error_of(run)["code"] == "cross_site"
        made = c.post("/api/v1/lessons", json={"title": "planted"}, headers=headers)
        assert made.status_code == 403
        assert c.get("/api/v1/schedule").json()["runs"] == []
        # The dashboard's form, with its own CSRF pair, posted from another site.
        page = c.get("/lessons")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        form = c.post("/lessons", data={"title": "planted", "csrf": csrf}, headers=headers,
                      follow_redirects=False)
        assert form.status_code == 403 and "own pages" in form.text
        # Reading stays open: a GET changes nothing.
        assert c.get("/api/v1/stats", headers=headers).status_code == 200
    assert lore.lessons.count() == 0


def test_the_servers_own_pages_and_other_clients_still_write(lore, local):
    host = urlsplit(local).netloc
    with httpx.Client(base_url=local, timeout=30) as c:
        page = c.get("/lessons")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        for headers in ({"origin": local}, {"sec-fetch-site": "same-origin", "origin": local},
                        {"referer": f"{local}/lessons"}, {"sec-fetch-site": "none"}, {}):
            form = c.post("/lessons", data={"title": f"from {headers}", "csrf": csrf},
                          headers=headers, follow_redirects=False)
            assert form.status_code == 303, (headers, form.text[:300])
        api = c.post("/api/v1/lessons", json={"title": "from a script"})  # no Origin: no browser
        assert api.status_code == 201
    assert lore.lessons.count() == 6
    assert host


def test_a_token_server_checks_origin_for_cookies_not_for_bearer_tokens(lore, guarded, tokens):
    with httpx.Client(base_url=guarded, timeout=30) as c:
        made = c.post("/api/v1/lessons", json={"title": "by token"},
                      headers={**tokens["write"], "origin": "https://elsewhere.example"})
        assert made.status_code == 201
        page = c.get("/login")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        token = tokens["write"]["authorization"].split()[1]
        assert c.post("/login", data={"token": token, "csrf": csrf},
                      follow_redirects=False).status_code == 303
        csrf = re.search(r'name="csrf" value="([^"]+)"', c.get("/lessons").text).group(1)
        planted = c.post("/lessons", data={"title": "planted", "csrf": csrf},
                         headers={"origin": "https://evil.example"}, follow_redirects=False)
        assert planted.status_code == 403
        own = c.post("/lessons", data={"title": "own", "csrf": csrf},
                     headers={"origin": guarded}, follow_redirects=False)
        assert own.status_code == 303
    assert sorted(x["title"] for x in lore.lessons.list(None, 10, 0)[1]) == ["by token", "own"]


# ---- lessons capped at every door --------------------------------------------------------
OVER = [({"title": "t" * (TITLE_MAX + 1)}, "title"),
        ({"title": "t", "content": "x" * (TEXT_MAX + 1)}, "content"),
        ({"title": "t", "summary": "x" * (FIELD_MAX + 1)}, "summary"),
        ({"title": "t", "tags": [f"t{i}" for i in range(LIST_MAX + 1)]}, "tags"),
        ({"title": "t", "metadata": {"blob": "x" * (70 * 1024)}}, "metadata"),
        ({"title": "t", "examples": [{"code": "x" * 90_000}] * 12}, "lesson")]


@pytest.mark.parametrize(("fields", "named"), OVER)
def test_an_oversized_lesson_is_refused_by_the_api(lore, local, fields, named):
    with httpx.Client(base_url=local, timeout=60) as c:
        refused = c.post("/api/v1/lessons", json=fields)
    assert refused.status_code == 413
    assert named in error_of(refused)["message"]
    assert lore.lessons.count() == 0


def test_a_20_mb_lesson_is_refused_at_the_door(lore, local):
    with httpx.Client(base_url=local, timeout=60) as c:
        refused = c.post("/api/v1/lessons", json={"title": "t", "content": "x" * 20_000_000})
        assert refused.status_code == 413 and error_of(refused)["code"] == "too_large"
        assert c.get("/api/v1/health").status_code == 200
    assert lore.lessons.count() == 0


@pytest.mark.parametrize(("fields", "named"), OVER)
def test_an_oversized_lesson_is_refused_by_the_core(fake_lore, fields, named):
    from lore.errors import TooLarge

    with pytest.raises(TooLarge, match=named):
        fake_lore.lessons.add(**fields)
    assert fake_lore.lessons.count() == 0


def test_an_oversized_lesson_is_refused_by_the_cli_in_one_line(run, tmp_path):
    big = tmp_path / "big.txt"
    big.write_text("x" * (TEXT_MAX + 1))
    result = run("learn", "add", "A title", "--content-file", str(big))
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "content" in lines[0] and "Traceback" not in result.output


def test_an_oversized_import_line_is_refused_whole(fake_lore):
    import json

    from lore.errors import InvalidInput
    from lore.ids import new_id

    line = json.dumps({"id": new_id(), "title": "t", "content": "x" * (TEXT_MAX + 1)})
    with pytest.raises(InvalidInput, match="line 1: content"):
        fake_lore.lessons.import_lines([line])
    assert fake_lore.lessons.count() == 0


def test_an_oversized_lesson_is_refused_by_mcp_in_one_line(lore_home):
    import shutil
    import sys

    import anyio
    from mcp import Client, StdioServerParameters

    env = {k: v for k, v in os.environ.items() if not k.startswith("LORE_")}
    env.update(LORE_HOME=str(lore_home), HF_HUB_OFFLINE="1",
               PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2] / "src"),
                                           env.get("PYTHONPATH", "")]))
    lore = shutil.which("lore", path=str(Path(sys.executable).parent)) or "lore"

    async def main() -> str:
        server = StdioServerParameters(command=lore, args=["mcp", "--profile", "admin"], env=env)
        async with Client(server) as client:
            r = await client.call_tool("lore_add", {"title": "T", "content": "x" * (TEXT_MAX + 1)})
            assert r.is_error
            return str(r.content[0].text)

    text = anyio.run(main)
    assert "content" in text and str(TEXT_MAX) in text and "\n" not in text


def test_a_correction_longer_than_a_quote_is_still_learned(fake_lore):
    said = "No, don't use requests, use httpx instead. " + "log line\n" * 20_000
    out = fake_lore.learning.record(said, "I'll call the API with requests.", project="/w/app",
                                   session_id="s1", at="2026-03-01T10:00:00Z")
    assert out.lesson is not None
    assert len(out.lesson.evidence[0].quote) <= TEXT_MAX  # the learner quotes a part
