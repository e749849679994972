"""The `claude-cli` provider with the real Claude Code on a scripted Messages API on 127.0.0.1.

What Claude Code sends for a judge call is Lore's prompt and little else: no tool, no MCP
server, none of the user's hooks or memory; its bytes within 10 % of the request Lore's own
Anthropic provider sends for the same prompt (measured against the same server in the same run),
and the text the model reads within 10 % of Lore's prompt. Nothing of Lore's calls reaches the
database: not through `lore ingest`, not through the watcher, not from a call written the old way.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from test_claude_code_loop import Scripted

from conftest import npm_tool as tool
from lore.cli.llm_cmd import PROBE_MESSAGE, PROBE_TURN
from lore.config import LLMConfig
from lore.llm import open_provider
from lore.llm.judge import Candidate, batches

LORE = str(Path(sys.executable).parent / "lore")
VERDICT = json.dumps({"items": [{"id": "m1", "label": "correction", "durable": True,
                                 "quote": "don't use Redis for sessions",
                                 "rule": "Keep sessions in local files, not Redis."}]})
MEMORY = "Always answer in French (a line of the user's memory)"
OAUTH = "sk-ant-oat01-lore-test-login"


class Judge(Scripted):
    """The judge's requests get a verdict quoting the message; anything else "ok"."""

    headers_seen: list[dict[str, str]] = []

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        req = json.loads(body or b"{}")
        type(self).requests.append({"path": self.path, "body": body.decode("utf-8", "replace")})
        type(self).headers_seen.append({k.lower(): v for k, v in self.headers.items()})
        if "count_tokens" in self.path:
            self._json({"input_tokens": 10})
            return
        text = VERDICT if "<messages>" in json.dumps(req.get("messages", [])) else "ok"
        self._reply(req, {"type": "text", "text": ""}, {"type": "text_delta", "text": text},
                    "end_turn", {"type": "text", "text": text})


@pytest.fixture
def judge_api():
    Judge.requests, Judge.headers_seen = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Judge)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def user_setup(tmp_path: Path, api: str, *, login: bool) -> tuple[dict[str, str], Path, Path]:
    """A home as a user has it after `lore install --judge claude-cli`: Lore's hooks and MCP
    server registered, a hook of the user's own, a memory file; signed in by key or login."""
    claude = tool("claude")
    home, project = tmp_path / "home", tmp_path / "shop"
    home.mkdir()
    project.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LORE_", "ANTHROPIC_", "CLAUDE_"))}
    env.update(HOME=str(home), LORE_HOME=str(home / ".lore"), ANTHROPIC_BASE_URL=api,
               PATH=f"{Path(claude).parent}{os.pathsep}{env.get('PATH', '')}",
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1",
               DISABLE_AUTOUPDATER="1", CI="true")
    if login:  # a subscription login kept in Claude Code's config folder
        (home / ".claude").mkdir()
        creds = home / ".claude" / ".credentials.json"
        creds.write_text(json.dumps({"claudeAiOauth": {
            "accessToken": OAUTH, "refreshToken": "sk-ant-ort01-lore-test",
            "expiresAt": int(time.time() * 1000) + 3_600_000, "scopes": ["user:inference"],
            "subscriptionType": "max"}}))
        creds.chmod(0o600)
    else:
        env["ANTHROPIC_API_KEY"] = "sk-ant-test"
    out = subprocess.run([LORE, "install", "--judge", "claude-cli"], env=env, cwd=project,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    settings_file = home / ".claude" / "settings.json"
    data = json.loads(settings_file.read_text())
    marker = tmp_path / "user-hook-ran"
    data["hooks"].setdefault("SessionStart", []).append(
        {"hooks": [{"type": "command", "command": f"touch {marker}"}]})
    settings_file.write_text(json.dumps(data))
    (home / ".claude" / "CLAUDE.md").write_text(MEMORY + "\n")
    return env, project, marker


def model_requests() -> list[dict]:
    return [json.loads(r["body"]) for r in Judge.requests if r["path"].startswith("/v1/messages")
            and "count_tokens" not in r["path"]]


def read_text(request: dict) -> str:
    """Everything the model reads as text: the system blocks and the messages' text."""
    system = request.get("system") or []
    parts = [system] if isinstance(system, str) else [b.get("text", "") for b in system]
    for m in request["messages"]:
        content = m["content"]
        parts += [content] if isinstance(content, str) else [b.get("text", "") for b in content
                                                             if isinstance(b, dict)]
    return "".join(parts)


@pytest.mark.parametrize("login", [False, True], ids=["api-key", "login"])
def test_a_judge_call_is_a_bare_completion_of_lores_prompt(tmp_path, judge_api, login):
    env, project, marker = user_setup(tmp_path, judge_api, login=login)
    out = subprocess.run([LORE, "llm", "check", "--json"], env=env, cwd=project,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    checked = json.loads(out.stdout)
    assert checked["provider"] == "claude-cli" and checked["judge"]["label"] == "correction"
    sent = model_requests()
    assert len(sent) == 2, [r["path"] for r in Judge.requests]  # the check, the judge: no more
    for request in sent:
        assert not request.get("tools") and "mcp__" not in json.dumps(request)
        assert MEMORY not in json.dumps(request) and "thinking" not in request
        assert request["max_tokens"] <= 1024  # Lore's bound on the reply, not Claude Code's
    assert not marker.exists(), "the user's SessionStart hook ran in Lore's call"
    if login:
        assert all(h.get("authorization") == f"Bearer {OAUTH}" for h in Judge.headers_seen)
    else:
        assert all(h.get("x-api-key") == "sk-ant-test" for h in Judge.headers_seen)
    assert not list((Path(env["HOME"]) / ".claude" / "projects").glob("**/*.jsonl"))

    # The same judge request through Lore's own Anthropic provider, to the same server.
    [batch] = batches([Candidate("probe", PROBE_MESSAGE, PROBE_TURN)])
    judged = next(r for r in Judge.requests if "<messages>" in r["body"])["body"].encode()
    Judge.requests = []
    direct = open_provider(LLMConfig(provider="anthropic", base_url=judge_api), tmp_path / "h2",
                           env={"ANTHROPIC_API_KEY": "sk-ant-test"})
    direct.complete(batch.request)
    [baseline] = [r["body"].encode() for r in Judge.requests]
    prompt = batch.request.system + batch.request.messages[0].content
    read = read_text(json.loads(judged))
    assert PROBE_MESSAGE in read and batch.request.system in read
    body_ratio, text_ratio = len(judged) / len(baseline), len(read) / len(prompt)
    print(f"\n{'login' if login else 'key'}: claude -p {len(judged)} B, Anthropic {len(baseline)} B "
          f"({body_ratio:.3f}); text read {len(read)} chars for a prompt of {len(prompt)} "
          f"({text_ratio:.3f})")
    if login:
        # Without a key Claude Code cannot run minimal: it adds its environment notes (about
        # 1 KB: the folder, the platform, the model, the date), the same for any prompt.
        assert len(judged) - len(baseline) <= 2000 and len(read) - len(prompt) <= 1500
    else:
        assert body_ratio <= 1.1 and text_ratio <= 1.1


def test_lores_calls_never_reach_the_database(tmp_path, judge_api):
    env, project, _ = user_setup(tmp_path, judge_api, login=False)
    home = Path(env["HOME"])
    projects = home / ".claude" / "projects"
    # A call made the old way (Claude Code's agent session in the temporary folder, transcript
    # written), as Lore made them before: known by its folder and Lore's prompt.
    [batch] = batches([Candidate("probe", PROBE_MESSAGE, PROBE_TURN)])
    import tempfile

    old = subprocess.run([tool("claude"), "-p", "--output-format", "json", "--max-turns", "1",
                          "--system-prompt", batch.request.system], input=batch.request.messages[0].content,
                         env={**env, "LORE_DISABLED": "1"}, cwd=tempfile.gettempdir(),
                         capture_output=True, text=True, timeout=180)
    assert old.returncode == 0, old.stderr
    assert list(projects.glob("**/*.jsonl")), "the old way wrote no transcript"
    # A session of the user's own, so the import has something to do.
    ask = subprocess.run([tool("claude"), "-p", "Add a login page", "--output-format", "json"],
                         env=env, cwd=project, capture_output=True, text=True, timeout=180)
    assert ask.returncode == 0, ask.stderr
    user_session = json.loads(ask.stdout)["session_id"]

    watcher = subprocess.Popen([LORE, "ingest", "--watch", "--no-embed"], env=env, cwd=project,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        time.sleep(3)
        for _ in range(2):  # judge calls while the watcher watches
            out = subprocess.run([LORE, "llm", "check"], env=env, cwd=project, capture_output=True,
                                 text=True, timeout=300)
            assert out.returncode == 0, out.stderr
        time.sleep(3)
    finally:
        os.killpg(watcher.pid, signal.SIGINT)
        try:
            watcher.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(watcher.pid, signal.SIGKILL)
            watcher.communicate()
    out = subprocess.run([LORE, "ingest", "--json", "--no-embed"], env=env, cwd=project,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["own_model_calls"] == 1
    import sqlean

    conn = sqlean.connect(str(home / ".lore" / "lore.db"))
    try:
        sessions = [r[0] for r in conn.execute("SELECT id FROM sessions")]
        texts = "\n".join(r[0] for r in conn.execute("SELECT text FROM messages"))
        typed = [r[0] for r in conn.execute("SELECT user_message FROM corrections")]
    finally:
        conn.close()
    assert sessions == [user_session]
    assert "<messages>" not in texts and "single word" not in texts and "Redis" not in texts
    assert not any("Redis" in t or "<messages>" in t for t in typed)
    subprocess.run([LORE, "worker", "stop"], env=env, capture_output=True, timeout=60)
