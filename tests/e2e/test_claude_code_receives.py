"""What the agent receives, with the real Claude Code CLI against a scripted Messages API on
127.0.0.1: every approved rule arrives once, in its own project only, never with the agent turn
it corrected; the first model request of a fresh session already lists Lore's tools; their
schemas cost at most 6 KB of each request."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from test_claude_code_loop import Scripted, api  # noqa: F401 - the model server fixture

from conftest import npm_tool as tool
from gitrepo import Repo

LORE = str(Path(sys.executable).parent / "lore")
REJECTED_TURN = "I'll add lodash with `npm install lodash`."


def model_requests() -> list[dict]:
    """The Messages API requests Claude Code made (token counts left out), parsed."""
    out = []
    for r in Scripted.requests:
        if "count_tokens" in r["path"]:
            continue
        try:
            out.append(json.loads(r["body"]))
        except ValueError:
            continue
    return out


def lore_tools(request: dict) -> list[dict]:
    return [t for t in request.get("tools") or [] if str(t.get("name", "")).startswith("mcp__lore__")]


def test_every_rule_arrives_once_in_its_project_with_the_tools_in_the_first_request(
        tmp_path, api):  # noqa: F811 - the fixture imported above
    claude = tool("claude")
    home = tmp_path / "home"
    home.mkdir()
    shop = Repo(tmp_path / "shop").path
    blog = Repo(tmp_path / "blog").path
    (shop / "src").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LORE_", "ANTHROPIC_"))}
    env.update(HOME=str(home), LORE_HOME=str(home / ".lore"), ANTHROPIC_BASE_URL=api,
               ANTHROPIC_API_KEY="sk-ant-test", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
               DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1", CI="true")

    def lore(cwd: Path, *args: str) -> str:
        done = subprocess.run([LORE, *args], env=env, cwd=cwd, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    lore(shop, "install")
    try:
        # Learned in a subfolder, recorded again at the top: one rule of the shop.
        first = json.loads(lore(shop / "src", "learn", "correction",
                                "No, don't use npm, use pnpm instead", "--previous",
                                REJECTED_TURN, "--json"))
        again = json.loads(lore(shop, "learn", "correction",
                                "No, don't use npm, use pnpm instead", "--json"))
        assert again["lesson"]["id"] == first["lesson"]["id"]
        pnpm = first["lesson"]["id"]
        lore(shop, "review", "approve", pnpm)
        # Added by hand with no option: the current project's, like the correction.
        ruff = json.loads(lore(shop / "src", "learn", "add", "Run ruff before committing",
                               "CI rejects unformatted code.", "--kind", "project_rule",
                               "--status", "active", "--json"))
        assert ruff["project"] == str(shop.resolve())
        blogs = json.loads(lore(blog, "learn", "add", "Write posts in Markdown", "Not HTML.",
                                "--kind", "project_rule", "--status", "active", "--json"))
        assert blogs["project"] == str(blog.resolve())
        applied = json.loads(lore(shop, "apply", "--yes", "--json"))
        assert str(shop / "CLAUDE.md") in applied["written"]
        assert [r["id"] for r in applied["not_written"]] == [blogs["id"]]
        text = (shop / "CLAUDE.md").read_text()
        assert "Use pnpm, not npm." in text and "Run ruff before committing." in text

        # Every tool's schema in every request (tool search off): Lore's are there from the
        # first request, and cost at most 6 KB.
        Scripted.requests = []
        out = subprocess.run([claude, "-p", "Add lodash", "--output-format", "json"],
                             env={**env, "ENABLE_TOOL_SEARCH": "false",
                                  # Claude Code may connect MCP servers in the background and
                                  # send the first request before the tools are listed.
                                  "MCP_CONNECTION_NONBLOCKING": "false"}, cwd=shop / "src",
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stdout + out.stderr
        requests = model_requests()
        main = [r for r in requests if r.get("tools")]
        assert main, "no request carried tools"
        first_request = main[0]
        names = {t["name"] for t in lore_tools(first_request)}
        assert "mcp__lore__lore_search" in names, sorted(t["name"] for t in first_request["tools"])
        assert "mcp__lore__lore_record_correction" in names
        assert "mcp__lore__lore_delete" not in names  # administration is opt-in
        for request in main:
            size = len(json.dumps(lore_tools(request), separators=(",", ":")).encode())
            assert size <= 6 * 1024, size
        for request in main:
            body = json.dumps(request, ensure_ascii=False)
            assert body.count("Use pnpm, not npm") == 1, body.count("Use pnpm, not npm")
            assert body.count("Run ruff before committing") == 1
            at = body.find("npm install lodash")
            assert at < 0, body[max(0, at - 600):at + 200]
            assert "[context:" not in body
            assert "Write posts in Markdown" not in body

        # Claude Code's default, tool search: the first request names Lore's tools among the
        # deferred ones; Lore is not among the servers "still connecting".
        Scripted.requests = []
        out = subprocess.run([claude, "-p", "Add lodash", "--output-format", "json"], env=env,
                             cwd=shop, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stdout + out.stderr
        first_body = json.dumps(model_requests()[0], ensure_ascii=False)
        assert "mcp__lore__lore_search" in first_body
        connecting = first_body.split("still connecting", 1)[1][:200] \
            if "still connecting" in first_body else ""
        assert "lore" not in connecting

        Scripted.requests = []
        out = subprocess.run([claude, "-p", "Write a post", "--output-format", "json"], env=env,
                             cwd=blog, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stdout + out.stderr
        body = json.dumps(model_requests(), ensure_ascii=False)
        assert "Write posts in Markdown" in body and "pnpm" not in body and "ruff" not in body
    finally:
        subprocess.run([LORE, "worker", "stop"], env=env, capture_output=True, timeout=60)
