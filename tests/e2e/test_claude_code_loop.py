"""The whole loop with the real Claude Code CLI and a scripted Messages API on 127.0.0.1.

Session 1 proposes Redis; the user corrects it (`claude -p --resume`); the hooks queue the
correction; the worker records it; session 2 in the same project starts with the
correction in the context Claude Code sends to the model; a session elsewhere does not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import npm_tool as tool

LORE = str(Path(sys.executable).parent / "lore")
PROPOSAL = "I'll use JWT with Redis session storage."
CORRECTION = "No, don't use Redis, use local file sessions instead"


class Scripted(BaseHTTPRequestHandler):
    requests: list[dict] = []

    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802
        self._json({})

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            req = json.loads(body)
        except ValueError:
            req = {}
        type(self).requests.append({"path": self.path, "body": body.decode("utf-8", "replace")})
        if "count_tokens" in self.path:
            self._json({"input_tokens": 10})
            return
        said = json.dumps(req.get("messages", []))
        text = PROPOSAL if "Add authentication" in said and "Redis" not in said else "OK."
        self._reply(req, {"type": "text", "text": ""}, {"type": "text_delta", "text": text},
                    "end_turn", {"type": "text", "text": text})

    def _reply(self, req: dict, block: dict, delta: dict, stop: str, whole: dict) -> None:
        """One content block as the Messages API sends it: streamed (server-sent events) when
        the request asks to stream, else one JSON message."""
        message = {"id": "msg_1", "type": "message", "role": "assistant",
                   "model": req.get("model", "claude"), "content": [], "stop_reason": None,
                   "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}
        if not req.get("stream"):
            self._json({**message, "content": [whole], "stop_reason": stop})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for name, data in [
            ("message_start", {"type": "message_start", "message": message}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": block}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop,
                                                                  "stop_sequence": None},
                               "usage": {"output_tokens": 5}}),
            ("message_stop", {"type": "message_stop"}),
        ]:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    def _json(self, data):
        raw = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


def claude_env(home: Path, api: str, **extra: str) -> dict[str, str]:
    """Claude Code's environment for a test: a home of its own, the scripted API, no Lore
    variables from outside, nothing sent elsewhere."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LORE_", "ANTHROPIC_"))}
    env.update(HOME=str(home), ANTHROPIC_BASE_URL=api, ANTHROPIC_API_KEY="sk-ant-test",
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1",
               DISABLE_AUTOUPDATER="1", CI="true", **extra)
    return env


@pytest.fixture
def api():
    Scripted.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_correction_reaches_the_next_session(tmp_path, api):
    claude = tool("claude")
    home = tmp_path / "home"
    shop, blog = tmp_path / "shop", tmp_path / "blog"
    for d in (home, shop, blog):
        d.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LORE_", "ANTHROPIC_"))}
    env.update(HOME=str(home), LORE_HOME=str(home / ".lore"), ANTHROPIC_BASE_URL=api,
               ANTHROPIC_API_KEY="sk-ant-test", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
               DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1", CI="true")
    subprocess.run([LORE, "install"], env=env, cwd=shop, check=True, capture_output=True)

    def ask(cwd: Path, prompt: str, *extra: str) -> dict:
        t0 = time.perf_counter()
        out = subprocess.run([claude, "-p", prompt, "--output-format", "json", *extra], env=env,
                             cwd=cwd, capture_output=True, text=True, timeout=180)
        assert out.returncode == 0, out.stdout + out.stderr
        data = json.loads(out.stdout)
        data["seconds"] = time.perf_counter() - t0
        return data

    first = ask(shop, "Add authentication")
    assert first["result"] == PROPOSAL
    ask(shop, CORRECTION, "--resume", first["session_id"])

    # The SessionStart hook started a worker; wait until it has recorded the correction.
    db = home / ".lore" / "lore.db"
    deadline = time.time() + 180  # a cold worker loads the embedding model first
    recorded = []
    while time.time() < deadline and not recorded:
        time.sleep(0.5)
        if db.exists():
            import sqlean

            conn = sqlean.connect(str(db))
            try:
                recorded = conn.execute("SELECT user_message, assistant_proposal, project, "
                                        "lesson_id FROM corrections WHERE status <> 'new'"
                                        ).fetchall()
            except sqlean.OperationalError:
                recorded = []
            conn.close()
    assert recorded, "the correction was not recorded"
    assert recorded[0][0] == CORRECTION and recorded[0][1] == PROPOSAL
    assert recorded[0][2] == str(shop.resolve())
    assert recorded[0][3], "the correction did not become a preference"

    # Seen once, the rule waits for review; approved, the next session is told it as a rule,
    # not the raw quote.
    listed = subprocess.run([LORE, "review", "--json"], env=env, capture_output=True, text=True,
                            check=True)
    [waiting] = json.loads(listed.stdout)["waiting"]
    assert waiting["id"] == recorded[0][3] and waiting["status"] == "proposed"
    assert waiting["evidence"][0]["said"] == CORRECTION
    subprocess.run([LORE, "review", "approve", waiting["id"]], env=env, check=True,
                   capture_output=True)
    Scripted.requests = []
    ask(shop, "Add user profiles")
    sent = "\n".join(r["body"] for r in Scripted.requests)
    assert "<lore-context>" in sent and "Use local file sessions, not Redis" in sent
    assert "(unconfirmed)" not in sent and CORRECTION not in sent

    Scripted.requests = []
    ask(blog, "Add user profiles")
    sent = "\n".join(r["body"] for r in Scripted.requests)
    assert "local file sessions" not in sent

    subprocess.run([LORE, "worker", "stop"], env=env, capture_output=True, timeout=60)


def test_hooks_never_break_claude(tmp_path, api):
    """Worker down, database locked, home unwritable: `claude -p` still answers, quickly."""
    claude = tool("claude")
    home = tmp_path / "home"
    project = tmp_path / "p"
    home.mkdir()
    project.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LORE_", "ANTHROPIC_"))}
    env.update(HOME=str(home), ANTHROPIC_BASE_URL=api, ANTHROPIC_API_KEY="sk-ant-test",
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1",
               DISABLE_AUTOUPDATER="1", CI="true")
    subprocess.run([LORE, "install"], env={**env, "LORE_HOME": str(home / ".lore")},
                   cwd=project, check=True, capture_output=True)
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("x")
    lore_home = home / ".lore"
    subprocess.run([LORE, "learn", "add", "Prefer pytest", "x", "--kind", "project_rule", "--global"],
                   env={**env, "LORE_HOME": str(lore_home)}, check=True, capture_output=True)
    import sqlean

    locker = sqlean.connect(str(lore_home / "lore.db"), isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")  # another process holds the write lock throughout
    try:
        for case_home in (blocked, lore_home):
            out = subprocess.run([claude, "-p", "hello", "--output-format", "json"], cwd=project,
                                 env={**env, "LORE_HOME": str(case_home)}, capture_output=True,
                                 text=True, timeout=180)
            assert out.returncode == 0, out.stderr
            assert json.loads(out.stdout)["result"] == "OK."
        sent = "\n".join(r["body"] for r in Scripted.requests)
        assert "Prefer pytest" in sent  # the context was read despite the lock (WAL readers)
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    subprocess.run([LORE, "worker", "stop"], env={**env, "LORE_HOME": str(home / ".lore")},
                   capture_output=True, timeout=60)
