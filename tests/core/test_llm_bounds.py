"""Model calls are bounded whatever the server does: a whole-call deadline (a server that
trickles its reply is cut off), a reply size cap, nesting-safe parsing, usage a provider
claims checked against Lore's own estimate, and an endpoint that cannot be reached failing at
once. Real servers on 127.0.0.1: a raw socket server where HTTP must be bent (a trickle, a
chunked flood), the scripted HTTP server of test_llm_http elsewhere."""

# ruff: noqa: F811 - the tests take the imported `server` fixture as a parameter
from __future__ import annotations

import json
import math
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from test_llm_http import LoopbackServer, Reply, anthropic_body, openai_body, server  # noqa: F401

from conftest import FakeEmbedder, make_settings
from lore.api import Lore
from lore.cli import cli
from lore.config import LLMConfig
from lore.errors import ProviderError, UnusableReply
from lore.llm import Request, open_provider, usage_today
from lore.llm.base import MAX_DEPTH, Completion, TooDeep, loads
from lore.llm.http import CALL_FACTOR, MAX_REPLY_BYTES
from lore.llm.jsonreply import NoJSON, extract_json
from lore.llm.ledger import log_path
from lore.llm.limits import USAGE_FACTOR, believable

OK = json.dumps(anthropic_body("ok")).encode()


class RawServer:
    """A TCP server on 127.0.0.1 answering every connection with ``serve(conn)`` in a thread
    of its own; records for each connection whether it sent all it meant to (``finished``)."""

    def __init__(self, serve: Callable[[socket.socket], None]) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.serve = serve
        self.finished: list[bool] = []
        self.threads: list[threading.Thread] = []
        self.accepting = threading.Thread(target=self._accept, daemon=True)
        self.accepting.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            thread = threading.Thread(target=self._one, args=(conn,), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            try:
                _read_request(conn)
                self.serve(conn)
            except OSError:  # the client hung up
                self.finished.append(False)
            else:
                self.finished.append(True)

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() in its thread
        except OSError:
            pass
        self.sock.close()
        for thread in self.threads:
            thread.join(30)
        self.accepting.join(5)


def _read_request(conn: socket.socket) -> None:
    def more() -> bytes:
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionResetError("the client hung up before its request was in")
        return chunk

    data = b""
    while b"\r\n\r\n" not in data:
        data += more()
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        body += more()


def trickle(data: bytes, every: float) -> Callable[[socket.socket], None]:
    def serve(conn: socket.socket) -> None:
        for i in range(len(data)):
            conn.sendall(data[i:i + 1])
            time.sleep(every)
    return serve


def http_reply(body: bytes, *, length: bool = True) -> bytes:
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
    head += b"content-length: %d\r\n" % len(body) if length else b"connection: close\r\n"
    return head + b"\r\n" + body


@pytest.fixture
def raw() -> Iterator[Callable[[Callable[[socket.socket], None]], RawServer]]:
    made: list[RawServer] = []

    def make(serve: Callable[[socket.socket], None]) -> RawServer:
        made.append(RawServer(serve))
        return made[-1]

    yield make
    for srv in made:
        srv.close()


def provider(url: str, home: Path, **kw: Any):
    values: dict[str, Any] = {"provider": "anthropic", "base_url": url, "timeout": 1.0,
                              "max_retries": 0, **kw}
    return open_provider(LLMConfig(**values), home, env={"ANTHROPIC_API_KEY": "test-key-1234"})


# ---- the deadline ---------------------------------------------------------------------------
@pytest.mark.parametrize("what", ["body", "head"])
def test_a_trickling_server_is_cut_off_at_the_deadline(raw, tmp_path: Path, what: str) -> None:
    """A byte every 0.5 s, each read well inside the 1 s timeout: the reply would take a
    minute and more; the call ends at its deadline and the server sees the connection go."""
    reply = http_reply(OK)
    if what == "body":
        head, _, body = reply.partition(b"\r\n\r\n")
        srv = raw(lambda conn: (conn.sendall(head + b"\r\n\r\n"), trickle(body, 0.5)(conn)))
    else:
        srv = raw(trickle(reply, 0.5))
    with pytest.raises(ProviderError) as err:
        provider(srv.url, tmp_path).complete(Request.ask("x"))
    assert str(err.value) == (f"anthropic: no reply from {srv.url}/v1/messages within 1 s; "
                              "raise llm.timeout or check the server")
    srv.close()  # waits for the server's threads: each stops at the first byte it cannot send
    assert srv.finished == [False]
    assert json.loads(log_path(tmp_path).read_text().splitlines()[-1])["outcome"] == "error"


def test_retries_share_the_calls_deadline(raw, tmp_path: Path) -> None:
    """Ten retries allowed, every attempt trickled: the call's deadline (CALL_FACTOR times
    the timeout) leaves room for a few attempts, never for the ten."""
    srv = raw(trickle(http_reply(OK), 0.5))
    with pytest.raises(ProviderError, match="within 1 s") as err:
        provider(srv.url, tmp_path, max_retries=10).complete(Request.ask("x"))
    srv.close()
    assert 1 <= err.value.attempts <= CALL_FACTOR + 1
    assert len(srv.finished) == err.value.attempts and not any(srv.finished)


def test_a_server_that_answers_in_time_is_read_whole(raw, tmp_path: Path) -> None:
    """The control: the same server without the trickle."""
    srv = raw(lambda conn: conn.sendall(http_reply(OK)))
    done = provider(srv.url, tmp_path).complete(Request.ask("x"))
    srv.close()
    assert done.text == "ok" and srv.finished == [True]


# ---- the size cap -----------------------------------------------------------------------------
def test_a_30_mb_reply_is_refused_by_its_announced_size(server: LoopbackServer, tmp_path: Path) -> None:
    server.replies = [Reply(anthropic_body("x" * (30 * 1024 * 1024)))]
    with pytest.raises(ProviderError) as err:  # a deadline a busy machine's 30 MB reply meets
        provider(server.url, tmp_path, timeout=30).complete(Request.ask("x"))
    message = str(err.value)
    assert message.startswith(f"anthropic: {server.url}/v1/messages sent a reply of more than "
                              f"{MAX_REPLY_BYTES:,} bytes") and "\n" not in message
    assert err.value.attempts == 1  # not retried: the same server sends the same


def test_a_30_mb_reply_without_a_length_is_cut_while_read(raw, tmp_path: Path) -> None:
    sent: list[int] = []

    def flood(conn: socket.socket) -> None:
        conn.sendall(http_reply(b"", length=False).rstrip(b"\r\n") + b"\r\n\r\n")
        chunk = b'{"content": [{"type": "text", "text": "' + b"x" * (1024 * 1024 - 40)
        for _ in range(30):
            conn.sendall(chunk)
            sent.append(len(chunk))

    srv = raw(flood)
    with pytest.raises(ProviderError, match="sent a reply of more than"):
        provider(srv.url, tmp_path, timeout=30).complete(Request.ask("x"))
    srv.close()
    assert srv.finished == [False] and sum(sent) < 30 * 1024 * 1024


# ---- nesting ---------------------------------------------------------------------------------
DEEP = "[" * 100_000 + "]" * 100_000


def test_a_deeply_nested_reply_envelope_is_one_line(server: LoopbackServer, tmp_path: Path) -> None:
    server.replies = [Reply(DEEP)]
    with pytest.raises(ProviderError) as err:
        provider(server.url, tmp_path).complete(Request.ask("x"))
    assert str(err.value) == (f"anthropic: {server.url}/v1/messages replied HTTP 200 with the JSON "
                              f"is nested deeper than {MAX_DEPTH} levels; is llm.base_url the "
                              "API's address?")


def test_a_deeply_nested_error_reply_is_one_line(server: LoopbackServer, tmp_path: Path) -> None:
    server.replies = [Reply(DEEP, status=400)]
    with pytest.raises(ProviderError) as err:
        provider(server.url, tmp_path).complete(Request.ask("x"))
    assert str(err.value).startswith("anthropic: HTTP 400 ([[[[") and "\n" not in str(err.value)


def test_learn_judge_with_a_deeply_nested_answer_is_one_line(
        server: LoopbackServer, lore_home: Path) -> None:
    server.replies = [Reply(openai_body(DEEP))]
    llm = {"provider": "openai", "base_url": server.url + "/v1", "model": "small-1",
           "timeout": 5.0, "max_retries": 0}
    lore_home.mkdir(parents=True)
    (lore_home / "config.yaml").write_text(
        f"llm:\n  provider: openai\n  model: small-1\n  max_retries: 0\n  base_url: {server.url}/v1\n")
    with Lore.open(make_settings(lore_home, llm=llm), embedder=FakeEmbedder()) as lore:
        lore.learning.capture("no, don't use Redis for this. Use local file sessions",
                             "I added a Redis-backed session store.", project="/p",
                             session_id="s1", origin="hook")
        lore.learning.process_pending()
    out = CliRunner().invoke(cli, ["learn", "judge"], obj={"embedder": FakeEmbedder()})
    assert out.exception is None or isinstance(out.exception, SystemExit), out.exception
    assert "Traceback" not in out.output and "RecursionError" not in out.output
    assert f"nested deeper than {MAX_DEPTH} levels" in out.output
    assert server.received  # the model was asked (and the reply refused, as above)


def test_the_web_api_rerank_with_a_deeply_nested_answer_keeps_the_search_order(
        server: LoopbackServer, lore_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx

    from server_util import running

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-1234")
    server.replies = [Reply(anthropic_body(DEEP))]
    llm = {"provider": "anthropic", "base_url": server.url, "timeout": 5.0, "max_retries": 0}
    with Lore.open(make_settings(lore_home, llm=llm), embedder=FakeEmbedder()) as lore:
        turns = [("u1", "user", "we dropped redis for the sessions", "2026-03-01T10:00:00Z"),
                 ("a1", "assistant", "noted: sessions in local files", "2026-03-01T10:01:00Z"),
                 ("u2", "user", "the payments worker retries twice", "2026-03-01T10:02:00Z"),
                 ("a2", "assistant", "ok, two retries", "2026-03-01T10:03:00Z")]
        lore.conversations.add_turns("s1", "claude-code", "/shop", turns, per_turn=True)
        lore.conversations.embed_pending()
        with running(lore) as url:
            got = httpx.get(f"{url}/api/v1/conversations/search",
                            params={"q": "redis sessions", "rerank": "true"}, timeout=60)
    assert got.status_code == 200, got.text
    data = got.json()
    assert data["reranked_by"] is None and data["results"]
    assert f"nested deeper than {MAX_DEPTH} levels" in data["rerank_error"]


# ---- usage a provider claims ---------------------------------------------------------------
@pytest.mark.parametrize("claimed", [10**9, -5, "lots", 1e308, math.inf, True])
def test_absurd_usage_is_not_believed(server: LoopbackServer, tmp_path: Path, claimed: Any) -> None:
    body = json.dumps(anthropic_body("a short answer", tokens_in=21)).replace(
        '"output_tokens": 7', f'"output_tokens": {json.dumps(claimed)}'.replace("Infinity", "1e999"))
    server.replies = [Reply(body)]
    p = provider(server.url, tmp_path, daily_token_budget=200_000)
    done = p.complete(Request.ask("what is two and two", max_tokens=50))
    assert done.estimated and done.input_tokens < 50 and 0 < done.output_tokens < 50
    record = json.loads(log_path(tmp_path).read_text().splitlines()[-1])
    assert record["estimated"] is True and record["outcome"] == "ok" and "claimed_tokens" in record
    assert usage_today(tmp_path)["anthropic"].tokens < 100  # the day's budget is not spent
    p.complete(Request.ask("and again", max_tokens=50))  # so the next call is not refused


def test_usage_within_reason_is_believed(server: LoopbackServer, tmp_path: Path) -> None:
    """The control: a count Lore's estimate cannot reach but within bounds (a tokenizer that
    counts more than four characters a token, a provider's own framing) is kept."""
    server.replies = [Reply(anthropic_body("ok", tokens_in=5000, tokens_out=40))]
    done = provider(server.url, tmp_path).complete(Request.ask("x", max_tokens=50))
    assert (done.input_tokens, done.output_tokens, done.estimated) == (5000, 40, False)
    assert "claimed_tokens" not in json.loads(log_path(tmp_path).read_text().splitlines()[-1])


@given(tokens_in=st.integers(-10, 10**8), tokens_out=st.integers(-10, 10**8),
       text=st.text(max_size=400), max_tokens=st.integers(1, 4096))
@settings(max_examples=200, deadline=None)
def test_the_counted_usage_is_bounded_by_the_estimate(tokens_in: int, tokens_out: int, text: str,
                                                      max_tokens: int) -> None:
    request = Request.ask("a question of some length " * 4, max_tokens=max_tokens)
    done, claimed = believable(request, Completion(text, tokens_in, tokens_out, "m", 0.1))
    assert min(done.input_tokens, done.output_tokens) >= 0
    estimate = done.input_tokens + max(-(-len(text) // 4), max_tokens) if claimed else None
    if claimed is None:
        assert (done.input_tokens, done.output_tokens) == (tokens_in, tokens_out)
    else:
        assert claimed == (tokens_in, tokens_out) and done.estimated
        assert estimate is not None and done.input_tokens + done.output_tokens <= estimate
    assert done.input_tokens + done.output_tokens <= USAGE_FACTOR * (
        len(request.messages[0].content) + max(len(text), 4 * max_tokens)) + 20_000


# ---- an endpoint that cannot be reached ----------------------------------------------------------
def test_a_refused_port_is_not_retried_and_not_waited_out(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    with pytest.raises(ProviderError) as err:
        provider(f"http://127.0.0.1:{port}", tmp_path, max_retries=5, timeout=60).complete(
            Request.ask("x"))
    assert str(err.value) == ("anthropic: cannot reach 127.0.0.1: connection refused; is the "
                              "server running and llm.base_url right?")
    assert err.value.attempts == 1


def test_an_unresolvable_host_is_not_retried(tmp_path: Path) -> None:
    with pytest.raises(ProviderError) as err:
        provider("http://no-such-model-server.invalid", tmp_path, max_retries=5,
                 timeout=60).complete(Request.ask("x"))
    assert str(err.value) == ("anthropic: cannot reach no-such-model-server.invalid: unknown "
                              "host; is the server running and llm.base_url right?")
    assert err.value.attempts == 1 and "llm.timeout" not in str(err.value)


# ---- the claude -p subprocess --------------------------------------------------------------------
HANGING_CLAUDE = '''#!{python}
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
with open({pids!r}, "w") as fh:
    fh.write(f"{{os.getpid()}} {{child.pid}}")
time.sleep(120)
'''


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1].startswith("Z")  # a zombie waits to be reaped
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_claude_p_past_the_deadline_is_killed_with_what_it_started(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pids = tmp_path / "pids"
    exe = bin_dir / "claude"
    exe.write_text(HANGING_CLAUDE.format(python=sys.executable, pids=str(pids)))
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    p = open_provider(LLMConfig(provider="claude-cli", timeout=3.0), tmp_path / "home", env={})
    with pytest.raises(ProviderError, match="gave no answer within 3 s"):
        p.complete(Request.ask("x"))
    parent, child = (int(v) for v in pids.read_text().split())
    for _ in range(100):  # the kill is sent at the deadline; the system reaps them soon after
        if _gone(parent) and _gone(child):
            break
        time.sleep(0.1)
    assert _gone(parent) and _gone(child)


# ---- the parser, under property tests --------------------------------------------------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                  max_size=4),
    max_leaves=30)


@given(st.text(alphabet="[]{}\"',:abc 0123\\\n", max_size=3000))
@settings(max_examples=300, deadline=None)
def test_extract_json_returns_or_says_why_for_any_text(text: str) -> None:
    try:
        extract_json(text)
    except NoJSON as exc:
        assert "\n" not in str(exc)


@given(st.integers(1, 3000), st.sampled_from(["[", '{"a":']))
@settings(max_examples=60, deadline=None)
def test_nesting_is_read_up_to_the_limit_and_refused_past_it(depth: int, opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    text = opener * depth + "1" + closer * depth
    if depth <= MAX_DEPTH:
        assert loads(text) == extract_json(f"Here: {text} done")
    else:
        with pytest.raises(TooDeep):
            loads(text)
        with pytest.raises(NoJSON, match=f"nested deeper than {MAX_DEPTH} levels"):
            extract_json(f"Here: {text} done")


@given(json_values)
@settings(max_examples=200, deadline=None)
def test_loads_agrees_with_json_within_the_limit(value: Any) -> None:
    text = json.dumps(value)
    assert loads(text) == json.loads(text)
    if isinstance(value, (list, dict)):
        assert extract_json(f"```json\n{text}\n```") == json.loads(text)


def test_a_rerank_reply_nested_too_deep_is_an_unusable_reply(server: LoopbackServer,
                                                             tmp_path: Path) -> None:
    from lore.llm.rerank import Excerpt, rerank

    server.replies = [Reply(anthropic_body(DEEP))]
    with pytest.raises(UnusableReply, match=f"nested deeper than {MAX_DEPTH} levels"):
        rerank(provider(server.url, tmp_path), "q", [Excerpt(1, "a"), Excerpt(2, "b")], 1)
