"""The HTTP providers against real servers on 127.0.0.1 that speak each protocol.

Each server answers from a script of replies (status, headers, body, delay) and records
what it received, so the assertions look at what actually went over the wire.
"""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic import BaseModel

from lore.cli import cli
from lore.config import LLMConfig, LLMCostConfig
from lore.errors import BudgetExceeded, ConfigError, ProviderError, UnusableReply
from lore.llm import Request, complete_json, open_provider, second_opinion, usage_today
from lore.llm.ledger import log_path

# Test-only secrets in the shapes the redactor knows (not real keys).
ANTHROPIC_SECRET = "sk-ant-api03-" + "Q" * 40
GITHUB_SECRET = "ghp_" + "x1" * 18


@dataclass
class Reply:
    body: Any = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


class LoopbackServer:
    """A threaded HTTP server; ``replies`` are used in order, the last one repeats."""

    def __init__(self) -> None:
        self.replies: list[Reply | Callable[[dict[str, Any]], Reply]] = []
        self.received: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                body = json.loads(raw)
                owner.received.append({"path": self.path, "headers": {k.lower(): v for k, v in
                                                                      self.headers.items()},
                                       "body": body, "raw": raw.decode()})
                reply = owner.replies.pop(0) if len(owner.replies) > 1 else owner.replies[0]
                if callable(reply):
                    reply = reply(body)
                time.sleep(reply.delay)
                payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                data = payload.encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        # A short poll: shutdown() waits up to one interval (0.5 s by default) for the loop.
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    srv = LoopbackServer()
    srv.thread.start()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()


def anthropic_body(text: str, tokens_in: int = 21, tokens_out: int = 7, **usage: int) -> dict[str, Any]:
    """The shape of a Messages API reply."""
    return {"id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
            "model": "claude-haiku-4-5-20251001", "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out, **usage}}


def openai_body(text: str, usage: bool = True, tokens_in: int = 30, tokens_out: int = 9) -> dict[str, Any]:
    """The shape of a chat completions reply (llama.cpp, Ollama and vLLM answer alike)."""
    body: dict[str, Any] = {
        "id": "chatcmpl-7", "object": "chat.completion", "created": 1763900000, "model": "llama3.2:3b",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": "stop"}]}
    if usage:
        body["usage"] = {"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                         "total_tokens": tokens_in + tokens_out}
    return body


def error_body(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def config(server: LoopbackServer, provider: str = "anthropic", **kw: Any) -> LLMConfig:
    base = server.url if provider == "anthropic" else server.url + "/v1"
    values: dict[str, Any] = {"provider": provider, "base_url": base, "timeout": 5.0, "max_retries": 3}
    if provider == "openai":
        values["model"] = "llama3.2:3b"
    values.update(kw)
    return LLMConfig(**values)


ENV = {"ANTHROPIC_API_KEY": "test-key-1234", "LOCAL_LLM_KEY": "local-secret"}


def provider_for(server: LoopbackServer, home: Path, provider: str = "anthropic", **kw: Any):
    return open_provider(config(server, provider, **kw), home, env=ENV)


def log_lines(home: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log_path(home).read_text().splitlines()]


# ---- the two protocols ------------------------------------------------------------------------


def test_anthropic_request_shape_and_usage(server: LoopbackServer, tmp_path: Path) -> None:
    server.replies = [Reply(anthropic_body("ok", 12, 3, cache_read_input_tokens=4))]
    p = provider_for(server, tmp_path)
    done = p.complete(Request.ask("ping", system="Be brief.", stop=("END",), max_tokens=50))
    got = server.received[0]
    assert got["path"] == "/v1/messages"
    assert got["headers"]["x-api-key"] == "test-key-1234"
    assert got["headers"]["anthropic-version"] == "2023-06-01"
    assert got["body"]["system"] == "Be brief."
    assert got["body"]["messages"] == [{"role": "user", "content": "ping"}]
    assert got["body"]["stop_sequences"] == ["END"] and got["body"]["max_tokens"] == 50
    assert got["body"]["model"] == "claude-haiku-4-5"
    assert (done.text, done.input_tokens, done.output_tokens) == ("ok", 16, 3)
    assert done.model == "claude-haiku-4-5-20251001" and done.stop_reason == "end_turn"
    assert not done.estimated and done.attempts == 1


def test_anthropic_without_key_is_a_config_error(server: LoopbackServer, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\$ANTHROPIC_API_KEY"):
        open_provider(config(server), tmp_path, env={})


def test_openai_compatible_with_and_without_usage(server: LoopbackServer, tmp_path: Path) -> None:
    server.replies = [Reply(openai_body("fine", tokens_in=40, tokens_out=2)),
                      Reply(openai_body("a reply of some length", usage=False))]
    p = provider_for(server, tmp_path, "openai")
    first = p.complete(Request.ask("hello", system="sys"))
    got = server.received[0]
    assert got["path"] == "/v1/chat/completions"
    assert "authorization" not in got["headers"]  # no key configured: none sent
    assert got["body"]["messages"][0] == {"role": "system", "content": "sys"}
    assert (first.input_tokens, first.output_tokens, first.estimated) == (40, 2, False)
    second = p.complete(Request.ask("hello again"))
    assert second.estimated and second.input_tokens > 0 and second.output_tokens == 6
    assert [line["estimated"] for line in log_lines(tmp_path)] == [False, True]


def test_openai_compatible_bearer_key(server: LoopbackServer, tmp_path: Path) -> None:
    server.replies = [Reply(openai_body("ok"))]
    provider_for(server, tmp_path, "openai", api_key_env="LOCAL_LLM_KEY").complete(Request.ask("x"))
    assert server.received[0]["headers"]["authorization"] == "Bearer local-secret"


# ---- retries, timeouts, errors ----------------------------------------------------------------


def test_429_honours_retry_after(server: LoopbackServer, tmp_path: Path) -> None:
    server.replies = [Reply(error_body("rate_limit_error", "slow down"), 429, {"retry-after": "1"}),
                      Reply(anthropic_body("ok"))]
    started = time.monotonic()
    done = provider_for(server, tmp_path).complete(Request.ask("x"))
    assert time.monotonic() - started >= 0.95
    assert done.attempts == 2 and len(server.received) == 2
    assert log_lines(tmp_path)[-1]["attempts"] == 2


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_500_and_503_then_success(server: LoopbackServer, tmp_path: Path, provider: str) -> None:
    ok = anthropic_body("ok") if provider == "anthropic" else openai_body("ok")
    server.replies = [Reply(error_body("api_error", "boom"), 500), Reply("upstream down", 503), Reply(ok)]
    done = provider_for(server, tmp_path, provider).complete(Request.ask("x"))
    assert done.text == "ok" and done.attempts == 3 and len(server.received) == 3


def test_retries_run_out(server: LoopbackServer, tmp_path: Path) -> None:
    server.replies = [Reply(error_body("overloaded_error", "Overloaded"), 529)]
    with pytest.raises(ProviderError) as err:
        provider_for(server, tmp_path, max_retries=1).complete(Request.ask("x"))
    assert len(server.received) == 2
    assert str(err.value) == "anthropic: HTTP 529 (Overloaded); the server failed; try again later"
    assert log_lines(tmp_path)[-1] | {"ts": "", "latency_s": 0} == {
        "ts": "", "latency_s": 0, "provider": "anthropic", "model": "claude-haiku-4-5", "purpose": "other",
        "input_tokens": 0, "output_tokens": 0, "estimated": False, "cost_usd": None, "attempts": 2,
        "outcome": "error"}


def test_401_is_one_line_without_retry(server: LoopbackServer, tmp_path: Path) -> None:
    server.replies = [Reply(error_body("authentication_error", "invalid x-api-key"), 401)]
    with pytest.raises(ProviderError) as err:
        provider_for(server, tmp_path).complete(Request.ask("x"))
    message = str(err.value)
    assert len(server.received) == 1
    assert "\n" not in message and "401" in message and "$ANTHROPIC_API_KEY" in message
    assert "test-key-1234" not in message


def test_other_4xx_is_not_retried(server: LoopbackServer, tmp_path: Path) -> None:
    server.replies = [Reply({"error": "model 'nope' not found"}, 404)]
    with pytest.raises(ProviderError, match="model 'nope' not found.*llm.model"):
        provider_for(server, tmp_path, "openai").complete(Request.ask("x"))
    assert len(server.received) == 1


def test_slow_reply_hits_the_timeout(server: LoopbackServer, tmp_path: Path) -> None:
    server.replies = [Reply(anthropic_body("late"), delay=2.0)]
    started = time.monotonic()
    with pytest.raises(ProviderError, match=r"no reply .* within 0.3 s"):
        provider_for(server, tmp_path, timeout=0.3, max_retries=0).complete(Request.ask("x"))
    assert time.monotonic() - started < 1.5


def test_long_retry_after_is_reported_not_slept(server: LoopbackServer, tmp_path: Path) -> None:
    server.replies = [Reply(error_body("rate_limit_error", "quota"), 429, {"retry-after": "3600"})]
    started = time.monotonic()
    with pytest.raises(ProviderError, match="wait 3600 s"):
        provider_for(server, tmp_path).complete(Request.ask("x"))
    assert time.monotonic() - started < 1.0 and len(server.received) == 1


def test_a_refused_connection_fails_at_once_and_says_so(tmp_path: Path) -> None:
    """Refused is refused: no retry, no waiting out the timeout, no advice to raise it."""
    closed = LoopbackServer()
    url = closed.url
    closed.httpd.server_close()  # the port is now refused
    p = open_provider(LLMConfig(provider="openai", model="m", base_url=url + "/v1", max_retries=3,
                                timeout=30), tmp_path, env={})
    with pytest.raises(ProviderError) as err:
        p.complete(Request.ask("x"))
    assert str(err.value) == ("openai: cannot reach 127.0.0.1: connection refused; is the server "
                              "running and llm.base_url right?")
    assert err.value.attempts == 1
    assert log_lines(tmp_path)[-1]["outcome"] == "error"


def test_an_unknown_host_fails_at_once_and_says_so(tmp_path: Path) -> None:
    p = open_provider(LLMConfig(provider="openai", model="m", base_url="http://lore-test.invalid/v1",
                                max_retries=3, timeout=30), tmp_path, env={})
    with pytest.raises(ProviderError) as err:
        p.complete(Request.ask("x"))
    assert str(err.value) == ("openai: cannot reach lore-test.invalid: unknown host; is the server "
                              "running and llm.base_url right?")
    assert err.value.attempts == 1 and "llm.timeout" not in str(err.value)


def test_not_json_reply(server: LoopbackServer, tmp_path: Path) -> None:
    server.replies = [Reply("<html>proxy login</html>")]
    with pytest.raises(ProviderError, match="not JSON"):
        provider_for(server, tmp_path).complete(Request.ask("x"))


# ---- what is sent -----------------------------------------------------------------------------


def test_secrets_are_redacted_before_sending(server: LoopbackServer, tmp_path: Path) -> None:
    server.replies = [Reply(anthropic_body("ok"))]
    p = provider_for(server, tmp_path)
    p.complete(Request.ask(f"my key is {ANTHROPIC_SECRET}, use it",
                           system=f"token {GITHUB_SECRET} and password=hunter2hunter2"))
    raw = server.received[0]["raw"]
    for secret in (ANTHROPIC_SECRET, GITHUB_SECRET, "hunter2hunter2"):
        assert secret not in raw
    body = server.received[0]["body"]
    assert "[REDACTED:" in body["system"] and "[REDACTED:" in body["messages"][0]["content"]
    assert body["messages"][0]["content"].startswith("my key is ")


def test_long_input_is_cut_to_the_token_budget(server: LoopbackServer, tmp_path: Path) -> None:
    server.replies = [Reply(anthropic_body("ok"))]
    history = "BEGIN " + "word " * 3000 + " END"
    provider_for(server, tmp_path, max_input_tokens=200).complete(Request.ask(history, system="short"))
    sent = server.received[0]["body"]["messages"][0]["content"]
    assert len(sent) + len("short") <= 200 * 4
    assert sent.startswith("BEGIN") and sent.endswith("END") and "[…]" in sent


# ---- budget and log ---------------------------------------------------------------------------


def test_token_budget_refuses_before_calling(server: LoopbackServer, tmp_path: Path) -> None:
    server.replies = [Reply(anthropic_body("ok", tokens_in=700, tokens_out=200))]
    p = provider_for(server, tmp_path, daily_token_budget=1000)
    p.complete(Request.ask("first", max_tokens=200))
    with pytest.raises(BudgetExceeded, match=r"used 900 of 1,000 tokens.*daily_token_budget"):
        p.complete(Request.ask("second", max_tokens=200))
    assert len(server.received) == 1  # the refused call never left the machine
    assert [line["outcome"] for line in log_lines(tmp_path)] == ["ok", "budget"]


def test_cost_budget_and_cost_in_the_log(server: LoopbackServer, tmp_path: Path) -> None:
    server.replies = [Reply(anthropic_body("ok", tokens_in=1_000_000, tokens_out=100_000))]
    p = provider_for(server, tmp_path, daily_token_budget=None, daily_cost_budget=2.0,
                     cost_per_mtok=LLMCostConfig(input=1.0, output=5.0))
    # A reply of up to 110,000 tokens: the usage claimed is within ten times what was asked.
    p.complete(Request.ask("x", max_tokens=110_000))
    assert log_lines(tmp_path)[0]["cost_usd"] == pytest.approx(1.5)
    with pytest.raises(BudgetExceeded, match=r"spent \$1.5000 of \$2.00"):
        p.complete(Request.ask("y", max_tokens=200_000))
    assert usage_today(tmp_path)["anthropic"].cost_usd == pytest.approx(1.5)


def test_log_lines_have_counts_and_no_prompt_text(server: LoopbackServer, tmp_path: Path) -> None:
    server.replies = [Reply(anthropic_body("the secret answer zebra", 33, 5))]
    p = provider_for(server, tmp_path)
    p.complete(Request.ask("tell me about pelicans", system="you know birds", purpose="second_opinion"))
    path = log_path(tmp_path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    text = path.read_text()
    for said in ("pelicans", "birds", "zebra"):
        assert said not in text
    line = log_lines(tmp_path)[0]
    assert (line["provider"], line["model"], line["purpose"]) == (
        "anthropic", "claude-haiku-4-5-20251001", "second_opinion")
    assert (line["input_tokens"], line["output_tokens"], line["outcome"]) == (33, 5, "ok")
    assert line["latency_s"] >= 0 and line["ts"].startswith(time.strftime("%Y-", time.gmtime()))
    usage = usage_today(tmp_path)["anthropic"]
    assert (usage.calls, usage.input_tokens, usage.output_tokens, usage.failures) == (1, 33, 5, 0)


# ---- structured replies -----------------------------------------------------------------------


class Verdict(BaseModel):
    label: str
    confidence: float


def test_malformed_json_is_retried_showing_the_error(server: LoopbackServer, tmp_path: Path) -> None:
    server.replies = [Reply(anthropic_body('Sure! {"label": "none", "confidence": "very high"}')),
                      Reply(anthropic_body('{"label": "none", "confidence": 0.9}'))]
    result = complete_json(provider_for(server, tmp_path), Request.ask("classify"), Verdict)
    assert result == Verdict(label="none", confidence=0.9)
    retry = server.received[1]["body"]["messages"]
    assert [m["role"] for m in retry] == ["user", "assistant", "user"]
    assert "confidence" in retry[2]["content"] and "could not be used" in retry[2]["content"]


def test_json_that_never_comes_raises(server: LoopbackServer, tmp_path: Path) -> None:
    server.replies = [Reply(anthropic_body("I would rather not answer in JSON."))]
    with pytest.raises(UnusableReply, match="no usable JSON after 3 replies"):
        complete_json(provider_for(server, tmp_path), Request.ask("classify"), Verdict)
    assert len(server.received) == 3


def test_second_opinion_over_http(server: LoopbackServer, tmp_path: Path) -> None:
    answer = ('```json\n{"label": "Correction", "durable": true, "confidence": 0.82,\n'
              ' "rule": "Use uv, not pip, in this repository.", "reason": "rejects the pip command",}\n```')
    server.replies = [Reply(openai_body(answer))]
    opinion = second_opinion(provider_for(server, tmp_path, "openai"),
                             "no, we use uv here, never pip", "I ran pip install -r requirements.txt.")
    assert (opinion.label, opinion.durable, opinion.rule) == (
        "correction", True, "Use uv, not pip, in this repository.")
    sent = server.received[0]["body"]
    assert "correction" in sent["messages"][0]["content"] and "durable" in sent["messages"][0]["content"]
    assert "never pip" in sent["messages"][1]["content"] and "pip install" in sent["messages"][1]["content"]
    assert log_lines(tmp_path)[0]["purpose"] == "second_opinion"


# ---- the commands -----------------------------------------------------------------------------


def write_config(home: Path, server: LoopbackServer, provider: str = "openai") -> None:
    home.mkdir(parents=True, exist_ok=True)
    base = server.url + ("/v1" if provider == "openai" else "")
    (home / "config.yaml").write_text(
        f"llm:\n  provider: {provider}\n  model: llama3.2:3b\n  base_url: {base}\n  max_retries: 0\n")


JUDGE_OK = json.dumps({"items": [{"id": "m1", "label": "correction", "durable": True,
                                   "quote": "use local files",
                                   "rule": "Keep sessions in local files, not Redis: deploys run on "
                                           "one box."}]})


def check_replies(judge: str = JUDGE_OK) -> Callable[[dict[str, Any]], Reply]:
    """The ping gets "ok"; the judge's probe gets ``judge``."""
    def reply(body: dict[str, Any]) -> Reply:
        if "single word" in body["messages"][-1]["content"]:
            return Reply(openai_body("ok", tokens_in=14, tokens_out=1))
        return Reply(openai_body(judge, tokens_in=900, tokens_out=40))
    return reply


def test_llm_check_and_usage(server: LoopbackServer, lore_home: Path) -> None:
    server.replies = [check_replies()]
    write_config(lore_home, server)
    runner = CliRunner()
    result = runner.invoke(cli, ["llm", "check"])
    assert result.exit_code == 0, result.output
    assert "provider openai" in result.output and "model llama3.2:3b" in result.output
    assert "tokens 14 in / 1 out" in result.output and "latency" in result.output
    assert "judge: correction, durable: 'Keep sessions in local files, not Redis" in result.output
    checked = json.loads(runner.invoke(cli, ["llm", "check", "--json"]).output)
    judge = checked.pop("judge")
    assert checked | {"latency_s": 0} == {"provider": "openai", "model": "llama3.2:3b", "latency_s": 0,
                                          "input_tokens": 14, "output_tokens": 1, "estimated": False,
                                          "attempts": 1, "reply": "ok"}
    # What the server counted for the request, beside Lore's estimate of its prompt.
    assert judge["label"] == "correction" and judge["input_tokens"] == 900
    assert judge["prompt_tokens"] > 1000 and judge["output_tokens"] == 40
    assert server.received[0]["body"]["max_tokens"] == 16
    usage = runner.invoke(cli, ["llm", "usage", "--json"])
    data = json.loads(usage.output)
    assert data["providers"] == [{"provider": "openai", "calls": 4, "failures": 0, "input_tokens": 1828,
                                  "output_tokens": 82, "cost_usd": 0.0}]
    assert "openai" in runner.invoke(cli, ["llm", "usage"]).output


@pytest.mark.parametrize("judge, why", [
    ("ok", "could not be read"),
    (JUDGE_OK.replace("use local files", "never use Redis"), "quoted words that are not in the message"),
    (json.dumps({"items": [{"id": "m1", "label": "none"}]}), "did not keep the correction"),
])
def test_llm_check_fails_a_judge_that_gets_a_plain_correction_wrong(
        server: LoopbackServer, lore_home: Path, judge: str, why: str) -> None:
    server.replies = [check_replies(judge)]
    write_config(lore_home, server)
    result = CliRunner().invoke(cli, ["llm", "check"])
    assert result.exit_code == 1 and why in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_llm_check_errors_are_one_line(server: LoopbackServer, lore_home: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    server.replies = [Reply(error_body("authentication_error", "invalid x-api-key"), 401)]
    write_config(lore_home, server, "anthropic")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "wrong")
    result = CliRunner().invoke(cli, ["llm", "check"])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: anthropic: HTTP 401")
    (lore_home / "config.yaml").write_text("llm:\n  provider: gemini\n")
    result = CliRunner().invoke(cli, ["llm", "check"])
    assert result.exit_code == 1
    assert "unknown llm.provider 'gemini' (installed: anthropic, claude-cli, openai" in result.output
