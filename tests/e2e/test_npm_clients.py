"""`lore mcp` against real MCP clients from npm: the MCP Inspector CLI and Claude Code.

`make test` installs both into .npm-tools/. Without npm on the machine these tests
skip and say so; with npm but without the tools they fail, since the install broke.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest  # noqa: F401

from conftest import npm_tool

LORE = str(Path(sys.executable).parent / "lore")


def tool(name: str) -> str:
    return npm_tool(name)


def env_for(home: Path, lore_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LORE_", "ANTHROPIC_"))}
    env.update(HOME=str(home), LORE_HOME=str(lore_home), CI="true", NO_COLOR="1")
    return env


def test_inspector_lists_and_calls_tools(tmp_path, lore_home):
    inspector = tool("mcp-inspector")
    env = env_for(tmp_path / "home", lore_home)
    (tmp_path / "home").mkdir()
    listed = subprocess.run(
        [inspector, "--cli", "--method", "tools/list", "--format", "json", "-q", "--",
         LORE, "mcp", "--profile", "all"],
        env=env, capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    names = {t["name"] for t in json.loads(listed.stdout)["result"]["tools"]}
    assert {"lore_search", "lore_add", "learn", "learn_search", "recall"} <= names

    added = subprocess.run(
        [inspector, "--cli", "--method", "tools/call", "--tool-name", "lore_add",
         "--tool-args-json", json.dumps({"title": "Added by the Inspector",
                                         "content": "through tools/call", "project": "global"}),
         "--format", "json", "-q", "--", LORE, "mcp", "--profile", "admin"],
        env=env, capture_output=True, text=True, timeout=120)
    assert added.returncode == 0, added.stderr
    lesson = json.loads(added.stdout)["result"]["structuredContent"]
    assert lesson["title"] == "Added by the Inspector"

    bad = subprocess.run(
        [inspector, "--cli", "--method", "tools/call", "--tool-name", "lore_get",
         "--tool-args-json", json.dumps({"id": "01JD8X3Q5M0000000000000000"}),
         "--format", "json", "-q", "--", LORE, "mcp"],
        env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 5  # the Inspector's exit code for a tool error
    assert "no lesson with id" in bad.stdout + bad.stderr


def test_claude_code_reports_the_server_connected(tmp_path, lore_home):
    claude = tool("claude")
    home = tmp_path / "home"
    home.mkdir()
    env = env_for(home, lore_home)
    added = subprocess.run([claude, "mcp", "add", "lore", "--", LORE, "mcp"], cwd=home, env=env,
                           capture_output=True, text=True, timeout=120)
    assert added.returncode == 0, added.stdout + added.stderr
    listed = subprocess.run([claude, "mcp", "list"], cwd=home, env=env, capture_output=True,
                            text=True, timeout=180)
    line = next((ln for ln in listed.stdout.splitlines() if ln.startswith("lore:")), "")
    assert "Connected" in line, listed.stdout + listed.stderr
