"""`lore mcp` as a subprocess, driven by the official MCP SDK client over stdio."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

LORE = str(Path(sys.executable).parent / "lore")

CANONICAL = {
    "lore_search", "lore_get", "lore_add", "lore_update", "lore_delete", "lore_related",
    "lore_link", "lore_unlink", "lore_values", "lore_status", "lore_record_correction",
    "lore_suggest_rule", "lore_preferences",
    "lore_review_list", "lore_review_approve", "lore_review_edit", "lore_review_reject",
    "lore_review_defer", "lore_review_export", "lore_review_import",
    "lore_apply",
    "lore_analyze", "lore_analysis_status",
}
AI_LESSONS = {"learn", "recall", "get_lesson", "update_lesson", "delete_lesson", "related", "link",
              "tags", "sources", "confidence_levels"}
SELF_LEARNING = {"learn_search", "learn_get", "learn_status", "learn_trigger"}
SELF_REFLECT = {"reflect_on_past", "store_reflection", "get_related_conversations"}
REINFORCEMENT = {"search_memory", "get_project_rules", "get_preferences", "why_this_rule",
                 "record_correction", "suggest_rule", "get_related_conversations"}


def params(home: Path, profile: str = "canonical", cwd: Path | None = None) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORE_")}
    env["LORE_HOME"] = str(home)
    return StdioServerParameters(command=LORE, args=["mcp", "--profile", profile], env=env,
                                 cwd=str(cwd) if cwd else None)


def session(home: Path, steps, profile: str = "canonical", cwd: Path | None = None) -> Any:
    """Run ``steps(client)`` against a fresh `lore mcp` process and return its result."""

    async def main() -> Any:
        async with Client(params(home, profile, cwd)) as client:
            return await steps(client)

    return anyio.run(main)


async def call(client: Client, tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
    r = await client.call_tool(tool, args)
    if r.is_error:
        return True, r.content[0].text
    return False, r.structured_content


SESSION = {"lore_search", "lore_search_conversations", "lore_get", "lore_preferences",
           "lore_record_correction", "lore_suggest_rule"}


@pytest.mark.parametrize("profile, names", [
    ("session", SESSION),
    ("admin", CANONICAL | {"lore_search_conversations"}),
    ("canonical", CANONICAL),
    ("ai-lessons", AI_LESSONS),
    ("self-learning", SELF_LEARNING),
    ("self-reflect", SELF_REFLECT),
    ("reinforcement", REINFORCEMENT),
    ("all", CANONICAL | AI_LESSONS | SELF_LEARNING | SELF_REFLECT | REINFORCEMENT
     | {"lore_search_conversations"}),
])
def test_tools_of_every_profile(lore_home, profile, names):
    async def steps(client):
        return (await client.list_tools()).tools

    tools = session(lore_home, steps, profile)
    assert {t.name for t in tools} == names
    for t in tools:
        assert t.description, t.name
        if profile != "session" and t.name != "lore_search_conversations":
            # Examples cost bytes in every request: only the opt-in profiles carry them.
            assert "Example" in t.description, t.name
        assert t.annotations is not None, t.name
        assert "ctx" not in t.input_schema.get("properties", {}), t.name
    hints = {t.name: t.annotations for t in tools}
    if "lore_delete" in hints:
        assert hints["lore_delete"].destructive_hint and not hints["lore_delete"].read_only_hint
        assert hints["lore_get"].read_only_hint and hints["lore_search"].read_only_hint
        assert not hints["lore_add"].read_only_hint and not hints["lore_add"].destructive_hint


def test_every_canonical_tool_with_good_and_bad_arguments(lore_home, tmp_path):
    project = tmp_path / "shop"
    project.mkdir()

    async def steps(client):
        out: dict[str, Any] = {}
        err, a = await call(client, "lore_add", {
            "title": "Use local file sessions, not Redis",
            "content": "The user rejected Redis for session storage; keep sessions in files.",
            "kind": "preference", "tags": ["Auth"], "confidence": "high",
            "preference": {"rejected": "Redis", "preferred": "file sessions"},
            "evidence": [{"quote": "No, don't use Redis", "session_id": "s1"}]})
        assert not err, a
        out["a"] = a
        err, b = await call(client, "lore_add", {"title": "Global rule", "content": "Always UTF-8",
                                                 "project": "global"})
        out["b"] = b
        out["search"] = await call(client, "lore_search",
                                   {"query": "where should login state live", "explain": True})
        out["search_all"] = await call(client, "lore_search", {"query": "utf-8", "project": "all"})
        out["get"] = await call(client, "lore_get", {"id": a["id"]})
        out["update"] = await call(client, "lore_update", {"id": a["id"], "confidence": "very-high",
                                                           "tags": ["auth", "sessions"]})
        out["link"] = await call(client, "lore_link", {"from_id": a["id"], "to_id": b["id"],
                                                       "relation": "derived_from"})
        out["related"] = await call(client, "lore_related", {"id": b["id"], "direction": "in"})
        out["unlink"] = await call(client, "lore_unlink", {"from_id": a["id"], "to_id": b["id"]})
        out["tags"] = await call(client, "lore_values", {"what": "tags"})
        out["sources"] = await call(client, "lore_values", {"what": "sources"})
        out["levels"] = await call(client, "lore_values", {"what": "confidence_levels"})
        out["kinds"] = await call(client, "lore_values", {"what": "kinds"})
        out["status"] = await call(client, "lore_status", {})
        out["delete"] = await call(client, "lore_delete", {"id": b["id"]})
        # bad arguments: each is a tool error the model can act on, and the server lives on
        out["bad_id"] = await call(client, "lore_get", {"id": "01JD8X3Q5M0000000000000000"})
        out["bad_conf"] = await call(client, "lore_add", {"title": "x", "content": "y",
                                                          "confidence": "sure"})
        out["bad_source"] = await call(client, "lore_search", {"query": "x", "sources": ["tv"]})
        out["bad_types"] = await call(client, "lore_search", {"query": 42, "limit": "many"})
        out["missing"] = await call(client, "lore_add", {"content": "no title"})
        out["empty_title"] = await call(client, "lore_add", {"title": "  ", "content": "x"})
        out["self_link"] = await call(client, "lore_link", {"from_id": a["id"], "to_id": a["id"]})
        out["no_change"] = await call(client, "lore_update", {"id": a["id"]})
        out["after"] = await call(client, "lore_status", {})
        return out

    out = session(lore_home, steps, cwd=project)
    a = out["a"]
    assert a["project"] == str(project.resolve())  # the server's cwd is the default scope
    assert a["tags"] == ["auth"] and a["preference"]["preferred"] == "file sessions"
    assert out["b"]["project"] is None
    err, found = out["search"]
    assert not err and found["results"][0]["id"] == a["id"]
    assert set(found["results"][0]) >= {"id", "title", "snippet", "score", "explain"}
    assert "content" not in found["results"][0]  # lightweight results
    assert out["search_all"][1]["results"][0]["title"] == "Global rule"
    assert out["get"][1]["evidence"][0]["quote"] == "No, don't use Redis"
    assert out["update"][1]["confidence"] == "very-high"
    assert out["link"][1]["relation"] == "derived_from"
    assert out["related"][1]["related"][0]["id"] == a["id"]
    assert out["unlink"][1] == {"removed": 1}
    assert {"tag": "sessions", "count": 1} in out["tags"][1]["tags"]
    assert "correction" in [s["name"] for s in out["sources"][1]["sources"]]
    assert [c["ordinal"] for c in out["levels"][1]["confidence_levels"]] == [1, 2, 3, 4, 5]
    assert "preference" in [k["name"] for k in out["kinds"][1]["kinds"]]
    assert out["status"][1]["lessons"] == 2 and out["status"][1]["embedding_model"]
    assert out["delete"][1]["deleted"] == out["b"]["id"]
    for key, needle in [("bad_id", "no lesson with id"),
                        ("bad_conf", "valid: very-low, low, medium, high, very-high"),
                        ("bad_source", "invalid source 'tv'; valid:"),
                        ("bad_types", "validation error"), ("missing", "title"),
                        ("empty_title", "title must not be empty"),
                        ("self_link", "cannot be linked to itself"),
                        ("no_change", "nothing to change")]:
        err, text = out[key]
        assert err and needle in text, (key, text)
    assert out["after"][1]["lessons"] == 1


def test_seed_profiles(lore_home, tmp_path):
    from gitrepo import Repo

    repo = Repo(tmp_path / "project")  # the server's project: learn_trigger analyses its last commit
    repo.commit("Fix the Jira client", ("src/jira.py", "def fetch():\n    return retry(get)\n"))

    async def steps(client):
        out: dict[str, Any] = {}
        out["learn"] = await call(client, "learn", {"title": "Jira rate limit",
                                                    "content": "Back off on HTTP 429 from Jira.",
                                                    "tags": ["jira"], "confidence": "medium",
                                                    "source": "tested"})
        lid = out["learn"][1]["id"]
        out["recall"] = await call(client, "recall", {"query": "jira throttling", "limit": 3})
        out["get"] = await call(client, "get_lesson", {"lesson_id": lid})
        out["update"] = await call(client, "update_lesson", {"lesson_id": lid,
                                                             "confidence": "high"})
        out["tags"] = await call(client, "tags", {"with_counts": True})
        out["levels"] = await call(client, "confidence_levels", {})
        out["learn_search"] = await call(client, "learn_search", {"query": "jira 429",
                                                                  "min_confidence": 4,
                                                                  "project": "all"})
        out["learn_search_type"] = await call(client, "learn_search", {"query": "jira",
                                                                       "type": "bug_fix",
                                                                       "project": "all"})
        out["learn_get"] = await call(client, "learn_get", {"id": lid})
        out["learn_status"] = await call(client, "learn_status", {})
        out["learn_trigger"] = await call(client, "learn_trigger", {"scope": "commit",
                                                                    "target": "HEAD"})
        out["bad_level"] = await call(client, "learn_search", {"query": "x", "min_confidence": 9})
        out["delete"] = await call(client, "delete_lesson", {"lesson_id": lid})
        return out

    out = session(lore_home, steps, "all", cwd=repo.path)
    lid = out["learn"][1]["id"]
    assert out["recall"][1]["results"][0]["id"] == lid
    assert out["get"][1]["source"] == "tested"
    assert out["update"][1] == {"updated": True, "id": lid}
    assert out["tags"][1]["tags"] == [{"tag": "jira", "count": 1}]
    assert out["learn_search"][1]["results"][0]["id"] == lid  # high >= 4
    assert out["learn_search_type"][1]["results"] == []  # it is a learning, not a bug_fix
    assert out["learn_get"][1]["id"] == lid
    assert out["learn_status"][1]["lessons"] == 1
    trigger = out["learn_trigger"][1]
    assert trigger["triggered"] is True and trigger["outcome"] == "summarised"  # no model configured
    assert trigger["reason"] == "manual trigger" and trigger["lessons"][0]["action"] == "created"
    assert out["learn_status"][1]["analysis"]["summarised"] == 0  # asked before the trigger
    assert out["bad_level"][0] is True
    assert out["delete"][1]["deleted"] is True


def test_cli_writes_are_seen_by_the_running_server(lore_home):
    env = {**os.environ, "LORE_HOME": str(lore_home)}

    def cli(*args: str) -> str:
        return subprocess.run([LORE, *args], env=env, check=True, capture_output=True,
                              text=True).stdout.strip()

    async def steps(client):
        first = await call(client, "lore_search", {"query": "websocket idle timeout",
                                                   "project": "all"})
        lid = cli("learn", "add", "Websocket idle timeout behind nginx",
                  "Set proxy_read_timeout to 3600s.")
        second = await call(client, "lore_search", {"query": "websocket idle timeout",
                                                    "project": "all"})
        err, added = await call(client, "lore_add", {"title": "Added through MCP",
                                                     "content": "server write", "project": "global"})
        shown = json.loads(cli("recall", "show", added["id"], "--json"))
        cli("learn", "delete", lid, "--yes")
        third = await call(client, "lore_search", {"query": "websocket idle timeout",
                                                   "project": "all"})
        return first, lid, second, shown, third

    first, lid, second, shown, third = session(lore_home, steps)
    assert first[1]["results"] == []
    assert second[1]["results"][0]["id"] == lid
    assert shown["title"] == "Added through MCP"
    assert lid not in [r["id"] for r in third[1]["results"]]


def test_a_database_error_is_a_tool_error_not_a_crash(lore_home):
    lore_home.mkdir(parents=True, exist_ok=True)
    (lore_home / "lore.db").write_text("not a database")

    async def steps(client):
        first = await call(client, "lore_status", {})
        second = await call(client, "lore_values", {"what": "tags"})
        return first, second

    first, second = session(lore_home, steps)
    assert first[0] and "not a Lore database" in first[1]
    assert second[0]  # still answering


def test_project_defaults_to_the_clients_root(lore_home, tmp_path):
    import mcp.types as types

    root = tmp_path / "client-project"
    root.mkdir()

    async def roots(context) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=root.as_uri(), name="project")])

    async def main():
        # Roots belong to the initialize-handshake protocol (deprecated in 2026-07-28).
        async with Client(params(lore_home, cwd=tmp_path), list_roots_callback=roots,
                          mode="legacy") as client:
            return await call(client, "lore_add", {"title": "Scoped by the root", "content": "x"})

    err, lesson = anyio.run(main)
    assert not err and lesson["project"] == str(root.resolve())


def test_a_locked_database_is_retried_then_reported(settings):
    """In-process: the tool wrapper retries StoreBusy, then returns a tool error."""
    from mcp.server.mcpserver.exceptions import ToolError

    from lore.errors import StoreBusy
    from lore.mcp.server import LoreTools

    tools = LoreTools(settings)
    tools._warm_started = True  # no background warm-up in this test
    attempts = []

    def busy(lore):
        attempts.append(1)
        raise StoreBusy("the database is locked by another Lore process; try again in a moment")

    with pytest.raises(ToolError, match="locked by another Lore process.*retried 3 times"):
        anyio.run(tools.run, busy)
    assert len(attempts) == 3

    def flaky(lore):
        attempts.append(1)
        if len(attempts) < 5:
            raise StoreBusy("locked")
        return "ok"

    assert anyio.run(tools.run, flaky) == "ok"
    tools.close()


def test_every_tool_rejects_bad_arguments_and_the_server_lives_on(lore_home):
    """Each tool of every profile, called with a wrong argument, answers with a tool error."""

    async def steps(client):
        tools = (await client.list_tools()).tools
        errors = {}
        for t in tools:
            props = t.input_schema.get("properties", {})
            required = t.input_schema.get("required", [])
            if required:
                args = {name: {"not": "a string"} for name in required}
            elif props:
                args = {name: {"not": "valid"} for name in props}
            else:
                args = {"unexpected": 1}
            r = await client.call_tool(t.name, args)
            errors[t.name] = (r.is_error, r.content[0].text if r.content else "")
        a = await call(client, "learn", {"title": "Alpha", "content": "first"})
        b = await call(client, "learn", {"title": "Beta", "content": "second"})
        linked = await call(client, "link", {"from_id": a[1]["id"], "to_id": b[1]["id"]})
        rel = await call(client, "related", {"lesson_id": a[1]["id"]})
        src = await call(client, "sources", {})
        return errors, linked, rel, src

    errors, linked, rel, src = session(lore_home, steps, "all")
    no_args = {"lore_status", "sources", "confidence_levels"}
    for name, (is_error, text) in errors.items():
        if name in no_args:
            continue  # nothing to get wrong: extra arguments are ignored
        assert is_error, (name, text)
        assert text.startswith(f"Error executing tool {name}"), (name, text)
    assert linked[1]["linked"] is True
    assert rel[1]["related"][0]["title"] == "Beta"
    assert "tested" in [s["name"] for s in src[1]["sources"]]


def test_self_reflect_profile(lore_home, tmp_path):
    folder = tmp_path / "projects" / "-work-api"
    folder.mkdir(parents=True)
    session_id = "99999999-0000-0000-0000-000000000000"
    lines = [
        {"type": "user", "uuid": "r1", "parentUuid": None, "sessionId": session_id,
         "cwd": str(tmp_path), "timestamp": "2026-11-01T10:00:00Z",
         "message": {"role": "user", "content": "The payments API returns ECONNRESET under load"}},
        {"type": "assistant", "uuid": "r2", "parentUuid": "r1", "sessionId": session_id,
         "cwd": str(tmp_path), "timestamp": "2026-11-01T10:01:00Z",
         "message": {"role": "assistant", "content": [
             {"type": "text", "text": "Raise the pool's keep-alive timeout to 65 seconds."}]}},
    ]
    (folder / f"{session_id}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    env = {**os.environ, "LORE_HOME": str(lore_home)}
    subprocess.run([LORE, "ingest", str(tmp_path / "projects")], env=env, check=True,
                   capture_output=True)

    async def steps(client):
        here = await call(client, "reflect_on_past", {"query": "connection reset by the payments API"})
        everywhere = await call(client, "get_related_conversations", {"query": "ECONNRESET"})
        elsewhere = await call(client, "reflect_on_past", {"query": "ECONNRESET",
                                                           "project": "/some/other/project"})
        stored = await call(client, "store_reflection", {"content": "Keep-alive must exceed the "
                                                          "load balancer idle timeout.",
                                                          "tags": ["networking"]})
        bad = await call(client, "reflect_on_past", {"query": "x", "limit": 0})
        return here, everywhere, elsewhere, stored, bad

    here, everywhere, elsewhere, stored, bad = session(lore_home, steps, "self-reflect", cwd=tmp_path)
    hit = here[1]["results"][0]
    assert hit["session_id"] == session_id and "ECONNRESET" in hit["snippet"]
    assert hit["project"] == str(tmp_path) and hit["date"].startswith("2026-11-01")
    assert everywhere[1]["results"][0]["session_id"] == session_id
    assert elsewhere[1]["results"] == []
    assert stored[1]["stored"] is True
    assert bad[0] is True


def test_corrections_through_mcp_become_scored_rules(lore_home, tmp_path):
    """record_correction / suggest_rule (the reinforcement profile's names) and the canonical
    tools share one pipeline."""
    project = tmp_path / "shop"
    project.mkdir()

    async def steps(client):
        out = {}
        out["first"] = await call(client, "record_correction", {
            "user_correction": "No, don't use Redis, use local file sessions instead",
            "previous": "I'll add Redis for the session store."})
        out["again"] = await call(client, "record_correction", {
            "user_correction": "use file sessions instead of Redis, again"})
        out["why"] = await call(client, "why_this_rule", {"rule_id": out["first"][1]["rule"]["id"]})
        out["suggest"] = await call(client, "suggest_rule", {
            "rule_text": "Use httpx instead of requests", "reason": "rewrote it twice"})
        out["rules"] = await call(client, "get_project_rules", {})
        out["unknown"] = await call(client, "record_correction", {
            "user_correction": "no, not like that", "assistant_msg_id": "no-such-message"})
        out["empty"] = await call(client, "record_correction", {"user_correction": "  "})
        return out

    out = session(lore_home, steps, "reinforcement", cwd=project)
    first, again = out["first"][1], out["again"][1]
    assert first["action"] == "created" and first["rule"]["status"] == "proposed"
    assert "Redis" in first["rule"]["rejected"] and "file sessions" in first["rule"]["preferred"]
    assert again["action"] == "reinforced" and again["rule"]["id"] == first["rule"]["id"]
    assert out["why"][1]["occurrences"] == 2 and len(out["why"][1]["evidence"]) == 2
    assert out["why"][1]["evidence"][0]["context"] == "I'll add Redis for the session store."
    assert out["suggest"][1]["rule"]["status"] == "proposed"
    titles = [p["title"] for p in out["rules"][1]["preferences"]]
    assert len(titles) == 2 and out["rules"][1]["project"] == str(project.resolve())
    assert out["unknown"][0] and "no imported message" in out["unknown"][1]
    assert out["empty"][0] and "empty" in out["empty"][1]

    async def canonical(client):
        return await call(client, "lore_preferences", {"statuses": ["proposed"]})

    listed = session(lore_home, canonical, cwd=project)
    assert listed[1]["count"] == 2


def test_review_through_mcp(lore_home, tmp_path):
    """lore_record_correction says why it did not learn; the review tools list and decide."""
    project = tmp_path / "shop"
    project.mkdir()

    async def steps(client):
        out = {}
        out["thanks"] = await call(client, "lore_record_correction", {"text": "thanks, looks great!"})
        out["vague"] = await call(client, "lore_record_correction", {
            "text": "don't do that again", "previous": "I rewrote the whole module."})
        out["forced"] = await call(client, "lore_record_correction", {
            "text": "be more careful", "force": True})
        out["list"] = await call(client, "lore_review_list", {})
        vague_id = out["vague"][1]["rule"]["id"]
        out["approve"] = await call(client, "lore_review_approve", {"lesson_id": vague_id})
        out["reject"] = await call(client, "lore_review_reject", {
            "lesson_id": out["forced"][1]["rule"]["id"], "reason": "too vague"})
        out["after"] = await call(client, "lore_review_list", {})
        out["missing"] = await call(client, "lore_review_defer", {"lesson_id": "01JD0000000000000000000000"})
        return out

    out = session(lore_home, steps, cwd=project)
    thanks = out["thanks"][1]
    assert thanks["action"] == "not-learned" and thanks["learned"] is False
    assert thanks["notice"] == "not learned: reads as thanks or approval"
    vague = out["vague"][1]
    assert vague["rule"]["status"] == "candidate" and vague["learned"] is False
    assert vague["notice"] == ("not learned yet: not specific enough to be a rule — kept; "
                               "proposed if it comes up in another session")
    assert out["forced"][1]["rule"]["status"] == "proposed" and out["forced"][1]["learned"]
    waiting = out["list"][1]["waiting"]
    assert {w["id"] for w in waiting} == {vague["rule"]["id"], out["forced"][1]["rule"]["id"]}
    ev = next(w for w in waiting if w["id"] == vague["rule"]["id"])["evidence"][0]
    assert ev["said"] == "don't do that again" and ev["agent_turn"] == "I rewrote the whole module."
    assert out["approve"][1]["status"] == "active" and out["approve"][1]["reviewed"] is True
    assert out["reject"][1]["status"] == "rejected" and out["reject"][1]["review"]["reason"] == "too vague"
    assert out["after"][1]["count"] == 0
    assert out["missing"][0]


def test_review_folder_through_mcp(lore_home, tmp_path):
    """lore_review_export writes the folder, the user ticks a box, lore_review_import applies it."""
    folder = tmp_path / "vault" / "Lore"

    async def record_and_export(client):
        rec = await call(client, "lore_record_correction", {
            "text": "No, don't use requests, use httpx instead", "project": "global"})
        return rec, await call(client, "lore_review_export", {"folder": str(folder)})

    (_, rec), (failed, exported) = session(lore_home, record_and_export)
    assert not failed and exported["waiting"] == 1 and exported["folder"] == str(folder.resolve())
    [path] = (folder / "reviews").glob("*.md")
    path.write_text(path.read_text(encoding="utf-8").replace("- [ ] approve", "- [x] approve"),
                    encoding="utf-8")

    async def import_twice(client):
        return [await call(client, "lore_review_import", {"folder": str(folder)}),
                await call(client, "lore_review_import", {"folder": str(folder)}),
                await call(client, "lore_review_import", {"folder": str(tmp_path / "none")}),
                await call(client, "lore_get", {"id": rec["rule"]["id"]})]

    first, second, missing, lesson = session(lore_home, import_twice)
    assert first[1]["approved"] == 1 and first[1]["warnings"] == []
    assert second[1]["approved"] == 0 and second[1]["unchanged"] == 1
    assert missing[0] and "run `lore review sync --only export` first" in missing[1]
    assert lesson[1]["status"] == "active"
