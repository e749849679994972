"""Checks with the real Claude Code CLI and a scripted Messages API on 127.0.0.1.

"Use pnpm, not npm" is approved with a blocking check. The model asks for `npm install
left-pad`: the PreToolUse hook denies it, the next request to the model carries the rule as
the reason, and `pnpm add left-pad` (a pnpm on PATH) runs. Switched to remind, the rule
arrives as context and npm runs. A check on generated files blocks an Edit of gen/models.py.
The worker records every match for `lore stats --rules`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from test_claude_code_loop import Scripted as Loop

from conftest import npm_tool as tool

LORE = str(Path(sys.executable).parent / "lore")
MARK = "[Lore check]"


class Scripted(Loop):
    """Plays the model: the prompt names the first tool call; each tool result the next
    (GET, JSON replies and quiet logs as the loop test's server)."""

    requests: list[dict] = []
    # id of the tool call whose result arrived -> the next call (None: end the turn)
    plan: dict[str, tuple[str, str, dict] | None] = {}
    first: dict[str, tuple[str, str, dict]] = {}  # a word of the prompt -> the first call

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            req = json.loads(body)
        except ValueError:
            req = {}
        type(self).requests.append({"path": self.path, "body": body.decode("utf-8", "replace"),
                                    "json": req})
        if "count_tokens" in self.path:
            self._json({"input_tokens": 10})
            return
        call = self._next(req)
        if call is None:
            self._reply(req, {"type": "text", "text": ""}, {"type": "text_delta", "text": "Done."},
                        "end_turn", {"type": "text", "text": "Done."})
            return
        tid, name, args = call
        self._reply(req, {"type": "tool_use", "id": tid, "name": name, "input": {}},
                    {"type": "input_json_delta", "partial_json": json.dumps(args)}, "tool_use",
                    {"type": "tool_use", "id": tid, "name": name, "input": args})

    def _next(self, req: dict) -> tuple[str, str, dict] | None:
        tools = {t.get("name") for t in req.get("tools") or [] if isinstance(t, dict)}
        messages = req.get("messages") or []
        if "Bash" not in tools or not messages:
            return None  # a side request (titles, summaries): plain text
        # The latest tool result of the conversation (hook context may follow it as a
        # message of its own).
        results = [b.get("tool_use_id") for m in messages
                   for b in (m.get("content") if isinstance(m.get("content"), list) else [])
                   if isinstance(b, dict) and b.get("type") == "tool_result"]
        if results:
            return type(self).plan.get(results[-1])
        said = json.dumps(messages)
        for word, call in type(self).first.items():
            if word in said:
                return call
        return None


@pytest.fixture
def api():
    Scripted.requests, Scripted.plan, Scripted.first = [], {}, {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def fake_tool(folder: Path, name: str, log: Path) -> None:
    """A stand-in for a package manager: records its arguments, prints a line."""
    script = folder / name
    script.write_text(f"#!/bin/sh\necho \"{name} $*\" >> '{log}'\necho \"{name}: done\"\n")
    script.chmod(0o755)


def tool_results(requests: list[dict], tool_id: str) -> list[str]:
    """The text of each tool_result for ``tool_id`` the model was sent (last request first)."""
    out = []
    for r in reversed(requests):
        for m in r["json"].get("messages") or []:
            for b in m.get("content") if isinstance(m.get("content"), list) else []:
                if isinstance(b, dict) and b.get("type") == "tool_result" \
                        and b.get("tool_use_id") == tool_id:
                    c = b.get("content")
                    out.append(c if isinstance(c, str) else json.dumps(c))
        if out:
            return out
    return out


def test_checks_block_remind_and_protect_generated_files(tmp_path, api):
    claude = tool("claude")
    home, shop, bin_ = tmp_path / "home", tmp_path / "shop", tmp_path / "bin"
    for d in (home, shop, bin_, shop / "gen"):
        d.mkdir(parents=True)
    (shop / ".git").mkdir()  # the project is the repository's top folder
    models = shop / "gen" / "models.py"
    models.write_text("# generated from schema.yaml\nclass User: ...\n")
    ran = tmp_path / "ran.log"
    fake_tool(bin_, "npm", ran)
    fake_tool(bin_, "pnpm", ran)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LORE_", "ANTHROPIC_"))}
    env.update(HOME=str(home), LORE_HOME=str(home / ".lore"), ANTHROPIC_BASE_URL=api,
               ANTHROPIC_API_KEY="sk-ant-test", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
               DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1", CI="true",
               PATH=f"{bin_}{os.pathsep}{env.get('PATH', '')}")

    def lore(*args: str) -> str:
        out = subprocess.run([LORE, *args], env=env, cwd=shop, capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stdout + out.stderr
        return out.stdout

    lore("install")
    rule = lore("learn", "add", "Use pnpm, not npm", "The lockfile is pnpm's; npm rewrites it.",
                "--kind", "project_rule", "--project", str(shop)).strip()
    [check] = json.loads(lore("guard", "propose", rule, "--json"))["checks"]
    assert check["mode"] == "block" and check["command"] == r"npm(?=\s|$)"
    lore("review", "approve", check["id"])

    def ask(prompt: str) -> dict:
        out = subprocess.run([claude, "-p", prompt, "--output-format", "json", "--allowedTools",
                              "Bash", "Read", "Edit"], env=env, cwd=shop, capture_output=True,
                             text=True, timeout=240)
        assert out.returncode == 0, out.stdout + out.stderr
        return json.loads(out.stdout)

    # Blocked: npm never runs, the model reads the rule, pnpm runs.
    Scripted.first = {"left-pad": ("toolu_npm", "Bash", {"command": "npm install left-pad",
                                                         "description": "Install left-pad"})}
    Scripted.plan = {"toolu_npm": ("toolu_pnpm", "Bash", {"command": "pnpm add left-pad",
                                                          "description": "Install left-pad"}),
                     "toolu_pnpm": None}
    assert ask("Add left-pad to the project")["result"] == "Done."
    [reason] = tool_results(Scripted.requests, "toolu_npm")
    assert MARK in reason and "Use pnpm, not npm" in reason and "npm rewrites it" in reason
    assert f"lore guard mode {check['id']} allow" in reason
    assert ran.read_text() == "pnpm add left-pad\n"
    assert "pnpm: done" in tool_results(Scripted.requests, "toolu_pnpm")[0]

    # Remind: the rule arrives next to the result, and the call runs.
    lore("guard", "mode", check["id"], "remind")
    Scripted.requests = []
    Scripted.plan = {"toolu_npm": None}
    ask("Add left-pad again")
    assert ran.read_text().splitlines()[-1] == "npm install left-pad"
    sent = "\n".join(r["body"] for r in Scripted.requests if "toolu_npm" in r["body"])
    assert MARK in sent and "Use pnpm, not npm" in sent

    # Generated files: the Edit is denied and the file stays as it was.
    gen = lore("learn", "add", "Do not edit gen/, it is generated", "Change schema.yaml and run "
               "make gen instead.", "--kind", "project_rule", "--project", str(shop)).strip()
    [protect] = json.loads(lore("guard", "propose", gen, "--json"))["checks"]
    assert protect["path"] == "gen/"
    lore("review", "approve", protect["id"])
    Scripted.requests = []
    Scripted.first = {"models": ("toolu_read", "Read", {"file_path": str(models)})}
    Scripted.plan = {"toolu_read": ("toolu_edit", "Edit", {
        "file_path": str(models), "old_string": "class User: ...",
        "new_string": "class User:\n    name: str"}), "toolu_edit": None}
    before = models.read_text()
    ask("Add a name to the User in gen/models.py")
    [denied] = tool_results(Scripted.requests, "toolu_edit")
    assert MARK in denied and "Do not edit gen/" in denied and "gen/models.py" in denied
    assert models.read_text() == before

    # The worker (started by the SessionStart hook) records each match.
    db = home / ".lore" / "lore.db"
    deadline, outcomes = time.time() + 180, []
    while time.time() < deadline and len(outcomes) < 3:
        time.sleep(0.5)
        import sqlean

        conn = sqlean.connect(str(db))
        try:
            outcomes = sorted(r[0] for r in conn.execute("SELECT outcome FROM check_events"))
        finally:
            conn.close()
    assert outcomes == ["blocked", "blocked", "reminded"]
    stats = json.loads(lore("stats", "--rules", "--json"))["rules"]
    pnpm = next(r for r in stats if r["id"] == rule)
    assert pnpm["matches"]["blocked"] == 1 and pnpm["matches"]["reminded"] == 1
    assert pnpm["loaded"] >= 1 and pnpm["checks"] == 1
    subprocess.run([LORE, "worker", "stop"], env=env, capture_output=True, timeout=60)
