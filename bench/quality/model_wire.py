"""What the language model costs a day, measured at the wire: every request each provider sends
for real sessions, received by a loopback server speaking the Messages API and the OpenAI API.

    python -m bench.quality.model_wire FOLDER [FOLDER …] [--sessions-per-day 30]
        [--providers claude-cli,claude-cli-login,claude-cli-agent,anthropic,openai]

Each transcript file under the folders is one finished session, replayed through the product's
path as the worker meets it: the messages the user typed are captured and the detector passes
its candidates to the judge (``Learner.backfill``, which judges each session it read), then the
session's end runs the session pass (``Analyzer.session_ended``, told whether the judge asked
the model about the session). The server answers the judge with a verdict of "none" for every
message, the session pass with no learning and anything else with "ok"; what is measured is what
arrives: requests, bytes and the text the model reads, tool schemas included (at four
characters a token, the product's own estimate, so the providers compare on the same scale).

Providers: ``claude-cli`` is the user's Claude Code (the `claude` on PATH) signed in with
ANTHROPIC_API_KEY, ``claude-cli-login`` signed in by a login kept in its config folder,
``claude-cli-before`` as Lore ran it before (an agent session: Claude Code's system prompt,
tools and settings; and the session pass asked of the model at every session end),
``anthropic`` and ``openai`` Lore's own HTTP providers.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench.harness import pct
from lore.api import Lore
from lore.capture.backfill import transcripts
from lore.config import Settings
from lore.config_models import Config

PROVIDERS = ("claude-cli", "claude-cli-login", "claude-cli-before", "anthropic", "openai")


class Wire(BaseHTTPRequestHandler):
    """Records each request to a model and answers it the way Lore's parsers accept."""

    seen: list[dict[str, Any]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.loads(raw or b"{}")
        if "count_tokens" in self.path:
            return self._send({"input_tokens": 1})
        text = _read(body)
        tools = body.get("tools") or []  # their schemas are read as input too
        type(self).seen.append({"path": self.path, "bytes": len(raw),
                                "read": len(text) + (len(json.dumps(tools)) if tools else 0),
                                "tools": len(tools)})
        if "<messages>" in text:
            refs = dict.fromkeys(re.findall(r'<message id="(m\d+)">', text))
            answer = json.dumps({"items": [{"id": ref, "label": "none"} for ref in refs]})
        elif "<transcript>" in text:
            answer = json.dumps({"learnings": []})
        else:
            answer = "ok"
        if self.path.endswith("/chat/completions"):
            return self._send({"choices": [{"message": {"role": "assistant", "content": answer},
                                            "finish_reason": "stop"}],
                               "usage": {"prompt_tokens": len(text) // 4, "completion_tokens": 20},
                               "model": body.get("model")})
        message = {"id": "msg_1", "type": "message", "role": "assistant", "model": body.get("model"),
                   "stop_reason": "end_turn", "stop_sequence": None,
                   "usage": {"input_tokens": len(text) // 4, "output_tokens": 20}}
        if not body.get("stream"):
            return self._send({**message, "content": [{"type": "text", "text": answer}]})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        start: dict[str, Any] = {"message": {**message, "content": [], "stop_reason": None}}
        events: list[tuple[str, dict[str, Any]]] = [
                  ("message_start", start),
                  ("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
                  ("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": answer}}),
                  ("content_block_stop", {"index": 0}),
                  ("message_delta", {"delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                     "usage": {"output_tokens": 20}}),
                  ("message_stop", {})]
        for name, data in events:
            self.wfile.write(f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode())
        self.wfile.flush()

    def do_GET(self) -> None:  # noqa: N802
        self._send({})

    def _send(self, data: dict[str, Any]) -> None:
        out = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def _read(body: dict[str, Any]) -> str:
    """The text a model reads from a request: the system part and every message's text."""
    system = body.get("system") or ""
    parts = [system] if isinstance(system, str) else [b.get("text", "") for b in system]
    for m in body.get("messages") or []:
        content = m.get("content")
        parts += [content] if isinstance(content, str) else [
            b.get("text", "") for b in content or [] if isinstance(b, dict)]
    return "".join(p for p in parts if isinstance(p, str))


@contextmanager
def server() -> Iterator[str]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Wire)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


@contextmanager
def provider_env(name: str, url: str, root: Path) -> Iterator[dict[str, Any]]:
    """The llm: section for ``name`` and the environment its calls run in."""
    saved = dict(os.environ)
    llm: dict[str, Any] = {"daily_token_budget": None, "max_retries": 0, "timeout": 120}
    if name == "openai":
        llm |= {"provider": "openai", "model": "local", "base_url": url + "/v1"}
    elif name == "anthropic":
        llm |= {"provider": "anthropic", "base_url": url}
        os.environ["ANTHROPIC_API_KEY"] = "sk-ant-bench"
    else:
        llm |= {"provider": "claude-cli", "model": "haiku"}
        home = root / "user"
        (home / ".claude").mkdir(parents=True, exist_ok=True)
        os.environ.update(HOME=str(home), ANTHROPIC_BASE_URL=url, DISABLE_TELEMETRY="1",
                          DISABLE_AUTOUPDATER="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")
        os.environ.pop("CLAUDE_CONFIG_DIR", None)
        if name == "claude-cli-login":
            os.environ.pop("ANTHROPIC_API_KEY", None)
            (home / ".claude" / ".credentials.json").write_text(json.dumps({"claudeAiOauth": {
                "accessToken": "sk-ant-oat01-bench", "refreshToken": "sk-ant-ort01-bench",
                "expiresAt": int(time.time() * 1000) + 3_600_000, "scopes": ["user:inference"]}}))
        else:
            os.environ["ANTHROPIC_API_KEY"] = "sk-ant-bench"
    try:
        yield llm
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextmanager
def as_before(enabled: bool) -> Iterator[None]:
    """With ``enabled``, `claude -p` as Lore ran it before: an agent session in the temporary
    folder (Claude Code's system prompt, tools and settings), only LORE_DISABLED added; and the
    model's session pass at every session end with messages."""
    from lore.core import analyzer
    from lore.llm import claude_cli

    if not enabled:
        yield
        return
    cls = claude_cli.ClaudeCliProvider
    saved = cls.command, cls.environment, cls.workdir
    rule = analyzer._why_no_model
    analyzer._why_no_model = lambda *a, **k: None  # type: ignore[assignment]

    def command(self: Any, request: Any) -> list[str]:
        cmd = [self._path, "-p", "--output-format", "json", "--max-turns", "1", "--model", "haiku"]
        return cmd + (["--system-prompt", request.system] if request.system else [])

    cls.command = command  # type: ignore[method-assign]
    cls.environment = lambda self: dict(os.environ, LORE_DISABLED="1")  # type: ignore[method-assign]
    cls.workdir = lambda self: tempfile.gettempdir()  # type: ignore[method-assign]
    try:
        yield
    finally:
        cls.command, cls.environment, cls.workdir = saved  # type: ignore[method-assign]
        analyzer._why_no_model = rule


def replay(name: str, files: list[Path]) -> dict[str, Any]:
    """Every file a finished session through the product's path with provider ``name``."""
    per_session: list[dict[str, int]] = []
    with tempfile.TemporaryDirectory() as tmp, server() as url, \
            provider_env(name, url, Path(tmp)) as llm, as_before(name == "claude-cli-before"):
        home = Path(tmp) / "lore"
        settings = Settings(config=Config.model_validate({"llm": llm}), home=home,
                            config_path=home / "config.yaml")
        with Lore.open(settings) as lore:
            for path in files:
                before = len(Wire.seen)
                lore.learning.backfill([path])
                judged = len(Wire.seen) > before
                lore.analysis.session_ended(path.stem, None, str(path), "2026-01-01T12:00:00+00:00",
                                            model_called=judged)
                sent = Wire.seen[before:]
                per_session.append({"requests": len(sent), "bytes": sum(r["bytes"] for r in sent),
                                    "tokens": sum(r["read"] for r in sent) // 4,
                                    "tools": max((r["tools"] for r in sent), default=0),
                                    "judge": int(judged)})
    Wire.seen = []
    return {"provider": name, "sessions": per_session}


def summary(result: dict[str, Any], per_day: int) -> dict[str, Any]:
    rows = result["sessions"]
    asked = [r for r in rows if r["requests"]]
    n = len(rows)
    return {"provider": result["provider"], "sessions": n, "with_requests": len(asked),
            "requests_per_session": sum(r["requests"] for r in rows) / n,
            "max_requests": max(r["requests"] for r in rows),
            "bytes_median": statistics.median(r["bytes"] for r in asked) if asked else 0,
            "bytes_p90": pct([r["bytes"] for r in asked], 0.9) if asked else 0,
            "tokens_median": statistics.median(r["tokens"] for r in asked) if asked else 0,
            "tokens_p90": pct([r["tokens"] for r in asked], 0.9) if asked else 0,
            "tools": max(r["tools"] for r in rows),
            "requests_per_day": per_day * sum(r["requests"] for r in rows) / n,
            "kb_per_day": per_day * sum(r["bytes"] for r in rows) / n / 1024,
            "tokens_per_day": per_day * sum(r["tokens"] for r in rows) / n}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("folders", type=Path, nargs="+")
    ap.add_argument("--sessions-per-day", type=int, default=30)
    ap.add_argument("--providers", default=",".join(PROVIDERS))
    args = ap.parse_args()
    files, _ = transcripts(args.folders)
    print(f"{len(files)} transcript files, each one finished session; a day of "
          f"{args.sessions_per_day} sessions", file=sys.stderr)
    print("| provider | sessions sending | requests / session (max) | bytes / session sending, median (p90) "
          "| tokens read / session sending, median (p90) | tools offered | a day: requests | a day: KB "
          "| a day: tokens |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.providers.split(","):
        s = summary(replay(name, files), args.sessions_per_day)
        print(f"| {name} | {s['with_requests']} of {s['sessions']} | {s['requests_per_session']:.2f} "
              f"({s['max_requests']}) | {s['bytes_median']:,.0f} ({s['bytes_p90']:,}) | "
              f"{s['tokens_median']:,.0f} ({s['tokens_p90']:,}) | {s['tools']} | "
              f"{s['requests_per_day']:.0f} | {s['kb_per_day']:,.0f} | {s['tokens_per_day']:,.0f} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
