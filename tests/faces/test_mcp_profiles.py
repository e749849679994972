"""A lean MCP face: the default profile holds what an agent needs in a session and costs at most
6 KB of every model request; administration is opt-in; the seed-compatible names stay available;
the server reports Lore's version; the chosen profile alone is imported and the model loads
after the client listed the tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from conftest import FakeEmbedder, make_settings
from lore import __version__
from lore.api import Lore
from lore.mcp.server import DEFAULT_PROFILE, PROFILES, build_server, schema_size

SESSION = {"lore_search", "lore_search_conversations", "lore_get", "lore_preferences",
           "lore_record_correction", "lore_suggest_rule"}
ADMIN_ONLY = {"lore_add", "lore_update", "lore_delete", "lore_link", "lore_unlink", "lore_values",
              "lore_review_approve",
              "lore_review_export", "lore_review_import", "lore_apply"}


def listed(profile: str) -> list:
    server, tools = build_server(make_settings(Path("/nonexistent-lore-home")), profile)
    tools._warm_started = True  # listing must not load anything here
    return anyio.run(server.list_tools)


def test_the_default_profile_is_what_a_session_needs_within_6_kb():
    assert DEFAULT_PROFILE == "session"
    tools = listed(DEFAULT_PROFILE)
    assert {t.name for t in tools} == SESSION
    assert schema_size(tools) <= 6 * 1024
    # What a client sends per tool is bigger than the compact form only by its own framing;
    # the SDK's whole tool record (annotations included) stays under the bound as well.
    full = sum(len(json.dumps(t.model_dump(by_alias=True, exclude_none=True))) for t in tools)
    assert full <= 6 * 1024


def test_administration_is_opt_in_and_seed_names_stay_available():
    admin = {t.name for t in listed("admin")}
    assert SESSION <= admin and ADMIN_ONLY <= admin
    assert not ADMIN_ONLY & {t.name for t in listed("session")}
    assert {"learn", "recall"} <= {t.name for t in listed("ai-lessons")}
    assert {"record_correction", "suggest_rule"} <= {t.name for t in listed("reinforcement")}
    assert schema_size(listed("admin")) > 3 * schema_size(listed("session"))


def test_schema_size_counts_utf8_bytes():
    class T:
        name, description, input_schema = "t", "é", {"type": "object"}

    assert schema_size([T()]) == len('{"name":"t","description":"é","input_schema":{"type":"object"}}'
                                      .encode())
    assert schema_size([]) == 0


def test_an_unknown_profile_is_refused(settings):
    from lore.errors import LoreError

    with pytest.raises(LoreError, match="unknown profile 'nope'"):
        build_server(settings, "nope")
    assert len(PROFILES) == len(set(PROFILES))


def test_the_session_tools_work_on_a_real_database(settings, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lore = Lore.open(settings, embedder=FakeEmbedder())
    server, tools = build_server(settings, lore=lore)

    async def call(name: str, args: dict) -> dict:
        result = await server.call_tool(name, args)
        return json.loads(result.content[0].text)

    try:
        rec = anyio.run(call, "lore_record_correction",
                        {"text": "No, don't use npm, use pnpm instead",
                         "previous": "I'll run npm install."})
        assert rec["rule"]["title"]
        got = anyio.run(call, "lore_get", {"id": rec["rule"]["id"]})
        assert got["project"] == str(tmp_path.resolve())
        prefs = anyio.run(call, "lore_preferences", {})
        assert [p["id"] for p in prefs["preferences"]] == [rec["rule"]["id"]]
        assert anyio.run(call, "lore_preferences", {"project": "all"})["count"] == 1
        found = anyio.run(call, "lore_search", {"query": "pnpm"})
        assert "results" in found
        sug = anyio.run(call, "lore_suggest_rule", {"rule": "Use httpx instead of requests",
                                                    "file_types": ["py"]})
        assert sug["rule"]["status"] in ("proposed", "candidate")
        conv = anyio.run(call, "lore_search_conversations", {"query": "pnpm"})
        assert conv["count"] == 0
    finally:
        tools.close()


def test_a_bad_call_is_a_tool_error(settings):
    from mcp.server.mcpserver.exceptions import ToolError

    lore = Lore.open(settings, embedder=FakeEmbedder())
    server, tools = build_server(settings, lore=lore)
    try:
        with pytest.raises(ToolError, match="no lesson"):
            anyio.run(server.call_tool, "lore_get", {"id": "01JD8X3Q5M0000000000000000"})
        with pytest.raises(ToolError):
            anyio.run(server.call_tool, "lore_search", {"query": "x", "limit": 0})
    finally:
        tools.close()


def _raw_session(args: list[str], env: dict[str, str]) -> tuple[dict, dict]:
    """initialize, then tools/list over real pipes, as a client that waits for the tools."""
    proc = subprocess.Popen([sys.executable, "-m", "lore", *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        assert proc.stdin is not None and proc.stdout is not None

        def send(obj: dict) -> None:
            proc.stdin.write((json.dumps(obj) + "\n").encode())
            proc.stdin.flush()

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}})
        init = json.loads(proc.stdout.readline())
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        tools = json.loads(proc.stdout.readline())
        return init, tools
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_lore_mcp_reports_its_version_and_lists_the_session_tools(lore_home):
    env = {**os.environ, "LORE_HOME": str(lore_home)}
    env.pop("LORE_MCP_PROFILE", None)
    init, tools = _raw_session(["mcp"], env)
    info = init["result"]["serverInfo"]
    assert (info["name"], info["version"]) == ("lore", __version__)
    assert {t["name"] for t in tools["result"]["tools"]} == SESSION
    assert "lore_record_correction" in init["result"]["instructions"]


def test_only_the_chosen_profile_is_imported_and_nothing_heavy_before_the_list(tmp_path):
    code = (
        "import sys, anyio\n"
        "from pathlib import Path\n"
        "from lore.config import Config, Settings\n"
        "from lore.mcp.server import build_server\n"
        "home = Path(sys.argv[1])\n"
        "s = Settings(config=Config.model_validate({}), home=home, config_path=home / 'c.yaml')\n"
        "server, tools = build_server(s)\n"
        "tools.start_warm = lambda: None  # what is imported before the model loads\n"
        "anyio.run(server.list_tools)\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(('lore', 'numpy')))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "h")],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    loaded = set(out.split())
    assert "lore.mcp.session" in loaded
    assert not {"lore.mcp.lessons", "lore.mcp.aliases", "lore.api", "numpy"} & loaded


def test_the_model_loads_after_the_tools_are_listed(settings, monkeypatch):
    import lore.mcp.server as srv

    server, tools = build_server(settings)
    started: list[float] = []
    monkeypatch.setattr(tools, "start_warm", lambda: started.append(time.monotonic()))
    assert not started
    anyio.run(server.list_tools)
    assert len(started) == 1
    assert srv.WARM_AFTER_S > 0


@pytest.mark.parametrize("args, env, want", [
    (["mcp"], None, "session"),
    (["mcp"], "admin", "admin"),
    (["mcp"], "nonsense", None),  # the CLI reports it
    (["mcp", "--profile", "ai-lessons"], "admin", "ai-lessons"),
    (["mcp", "--profile=all"], None, "all"),
    (["mcp", "--profile", "bogus"], None, None),
    (["mcp", "--help"], None, None),
    (["mcp", "--profile"], None, None),
    (["--db", "x.db", "mcp"], None, None),
    (["search", "x"], None, None),
    ([], None, None),
])
def test_plain_lore_mcp_takes_the_fast_path_and_nothing_else_does(args, env, want, monkeypatch):
    from lore.entry import mcp_profile

    if env is None:
        monkeypatch.delenv("LORE_MCP_PROFILE", raising=False)
    else:
        monkeypatch.setenv("LORE_MCP_PROFILE", env)
    assert mcp_profile(args) == want


def test_the_config_is_read_by_the_first_tool_call_and_its_error_is_a_tool_error(lore_home):
    """`lore mcp` answers the handshake before reading the config; a broken config is the
    first call's one-line tool error, and the server lives on."""
    from mcp import Client, StdioServerParameters

    lore_home.mkdir(parents=True, exist_ok=True)
    (lore_home / "config.yaml").write_text("search: [unclosed\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORE_")}
    env["LORE_HOME"] = str(lore_home)

    async def main() -> tuple[set[str], list[str]]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "lore", "mcp"], env=env)
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            texts = []
            for _ in range(2):
                r = await client.call_tool("lore_preferences", {})
                assert r.is_error
                texts.append(r.content[0].text)
            return names, texts

    names, texts = anyio.run(main)
    assert names == SESSION
    for text in texts:
        assert "config.yaml" in text and "\n" not in text and "Traceback" not in text


