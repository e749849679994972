"""Lore as a Claude Code plugin, with the real Claude Code CLI and a scripted Messages API.

In a fresh HOME: `claude plugin marketplace add <this checkout>` and `claude plugin install
lore@lore`; a session where the hooks fire and Lore's MCP tools are in the first request;
a correction becomes a rule waiting for review; the next session's context carries the one
line that says so (once that day); `/lore:review` and `/lore:approve ID` typed in print mode
reach the store (an id prefix is enough); after `claude plugin uninstall` nothing of Lore
runs: the worker the hooks started leaves by itself, then no hook, no MCP server, no worker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_claude_code_loop import CORRECTION, PROPOSAL, Scripted, api, claude_env  # noqa: F401
from test_claude_code_receives import model_requests

from conftest import npm_tool as tool
from conftest import stop_workers

ROOT = Path(__file__).resolve().parents[2]
LORE = str(Path(sys.executable).parent / "lore")
NUDGE = "for the user's review"
UNINSTALLED_EXIT = 10  # seconds: the documented bound for the worker to leave after uninstall
TOOLS = "mcp__plugin_lore_lore__"  # a plugin's MCP tools: mcp__plugin_<plugin>_<server>__<tool>


def lore_processes(home: Path) -> list[str]:
    """Command lines of running processes whose environment names this test's home."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes()
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if f"HOME={home}".encode() in environ and "lore" in cmdline and "pytest" not in cmdline:
            found.append(cmdline)
    return found


def test_the_plugin_runs_the_loop_and_review_happens_in_the_session(tmp_path, api):  # noqa: F811
    claude = tool("claude")
    home = tmp_path / "home"
    shop = tmp_path / "shop"
    home.mkdir()
    shop.mkdir()
    env = claude_env(
        home, api, LORE_HOME=str(home / ".lore"), ENABLE_TOOL_SEARCH="false",
        # Claude Code connects a plugin's MCP servers in the background by default (the first
        # request may offer WaitForMcpServers instead of their tools); connecting before the
        # first request makes "the tools are in the first request" testable.
        MCP_CONNECTION_NONBLOCKING="false",
        # The plugin runs the `lore` it finds on the PATH, as after a user's pipx install.
        PATH=f"{Path(LORE).parent}{os.pathsep}{os.environ.get('PATH', '')}")

    def run(*args: str, cwd: Path = shop, ok: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(list(args), env=env, cwd=cwd, capture_output=True, text=True,
                              timeout=300)
        if ok:
            assert done.returncode == 0, done.stdout + done.stderr
        return done

    def ask(prompt: str, *extra: str) -> dict:
        out = run(claude, "-p", prompt, "--output-format", "json", *extra)
        return json.loads(out.stdout)

    try:
        run(claude, "plugin", "marketplace", "add", str(ROOT))
        run(claude, "plugin", "install", "lore@lore")
        settings = json.loads((home / ".claude" / "settings.json").read_text())
        assert settings["enabledPlugins"] == {"lore@lore": True}
        assert "hooks" not in settings  # the plugin's hooks, not the settings'
        doctor = json.loads(run(LORE, "doctor", "--json", ok=False).stdout)
        hooks = [c for c in doctor if c["check"] == "hooks"]
        assert hooks and hooks[0]["ok"] and "plugin" in hooks[0]["detail"]

        # Session 1: the hooks fire, Lore's tools are in the very first model request.
        Scripted.requests = []
        first = ask("Add authentication")
        assert first["result"] == PROPOSAL
        with_tools = [r for r in model_requests() if r.get("tools")]
        assert with_tools, "no request carried tools"
        names = {t["name"] for t in with_tools[0]["tools"]}
        ours = {n.removeprefix(TOOLS) for n in names if n.startswith(TOOLS)}
        assert {"lore_search", "lore_record_correction"} <= ours, sorted(names)
        # The model gets no tool that decides a review: only the user's commands do.
        assert not {n for n in ours if n.startswith("lore_review_")}
        # Nor is it told the review commands exist (disable-model-invocation: no Skill entry).
        sent = json.dumps(model_requests())
        assert not [c for c in ("lore:review", "lore:approve", "lore:reject", "lore:forget")
                    if c in sent]
        ask(CORRECTION, "--resume", first["session_id"])

        # The worker the hooks started records the correction as a rule waiting for review.
        deadline = time.time() + 180  # a cold worker loads the embedding model first
        waiting: list[dict] = []
        while time.time() < deadline and not waiting:
            time.sleep(1)
            listed = run(LORE, "review", "--json", ok=False)
            if listed.returncode == 0:
                waiting = json.loads(listed.stdout)["waiting"]
        assert waiting, "the correction did not become a rule waiting for review"
        [rule] = waiting
        assert rule["evidence"][0]["said"] == CORRECTION

        # Session 2 is told, in one line, that a rule waits and how to see it; session 3 the
        # same day is not told again.
        Scripted.requests = []
        ask("Add user profiles")
        sent = json.dumps(model_requests())
        assert NUDGE in sent and "/lore:review" in sent
        Scripted.requests = []
        ask("Add a settings page")
        assert NUDGE not in json.dumps(model_requests())

        # The user reviews in the session: /lore:review shows the rule with their words;
        # /lore:approve with a lower-case prefix of the id approves it in the store.
        Scripted.requests = []
        shown = ask("/lore:review")
        sent = json.dumps(model_requests())
        assert rule["id"] in sent and "local file sessions" in sent, shown
        ask(f"/lore:approve {rule['id'][:8].lower()}")
        stored = json.loads(run(LORE, "recall", "show", rule["id"], "--json").stdout)
        assert stored["status"] == "active"
        assert stored["metadata"]["learning"]["review"]["action"] == "approve"
        assert json.loads(run(LORE, "review", "--json").stdout)["waiting"] == []

        # Uninstalled, nothing of Lore runs: the worker the hooks started exits within
        # UNINSTALLED_EXIT seconds once idle (docs/plugin.md), a session starts none, and
        # Lore's tools are gone.
        deadline = time.time() + 180
        while time.time() < deadline:
            status = json.loads(run(LORE, "worker", "status", "--json").stdout)
            if not status["queue_depth"] and not status["embedding_backlog"]["chunks"]:
                break
            time.sleep(1)
        assert status["running"], status  # idle for far less than its idle time
        run(claude, "plugin", "uninstall", "lore@lore")
        gone_by = time.time() + UNINSTALLED_EXIT
        while time.time() < gone_by and lore_processes(home):
            time.sleep(0.2)
        assert not lore_processes(home), lore_processes(home)
        log = (home / ".lore" / "logs" / "worker.log").read_text()
        assert log.count("Lore is no longer installed in Claude Code") == 1, log[-2000:]
        queue = home / ".lore" / "queue" / "pending"
        before = sorted(queue.iterdir()) if queue.is_dir() else []
        Scripted.requests = []
        ask("Add a footer")
        sent = json.dumps(model_requests())
        assert TOOLS not in sent and "<lore-context>" not in sent
        time.sleep(1)
        assert not lore_processes(home), lore_processes(home)
        assert (sorted(queue.iterdir()) if queue.is_dir() else []) == before
    finally:
        stop_workers(tmp_path)


def test_without_lore_installed_the_first_session_says_how_to_install_it(tmp_path, api):  # noqa: F811
    claude = tool("claude")
    home = tmp_path / "home"
    home.mkdir()
    env = claude_env(home, api)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and not (Path(p) / "lore").exists())
    if any((Path(p) / "lore").exists() for p in env["PATH"].split(os.pathsep)):
        pytest.skip("a lore command is on every PATH entry")

    def run(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run(list(args), env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    run(claude, "plugin", "marketplace", "add", str(ROOT))
    run(claude, "plugin", "install", "lore@lore")
    for attempt in range(2):
        Scripted.requests = []
        out = json.loads(run(claude, "-p", "hello", "--output-format", "json").stdout)
        assert out["result"] == "OK."  # Claude Code works on without Lore
        sent = json.dumps(model_requests())
        told = "pipx install loreloop" in sent and "uv tool install loreloop" in sent
        assert told == (attempt == 0), sent[:2000]
