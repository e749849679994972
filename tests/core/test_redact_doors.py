"""Every secret format of the generated corpus, through every door, and nowhere at rest.

The secrets of bench/secret_corpus.py go in as a user would give them: prompts, shell
commands, MCP tool inputs with secret-named fields, written files, a transcript, lessons,
corrections and search queries from the API, the CLI, the web API and MCP. Then the queue
(pending files and done.jsonl), every text cell of every table and every answer that shows
them (stats, the /stats page, `lore stats --counts`, MCP's lore_status) are searched for them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from click.testing import CliRunner
from test_llm_http import LoopbackServer, Reply, openai_body
from test_llm_http import server as judge  # noqa: F401 - a fixture: the judge's loopback server
from test_private import leaked

from bench.secret_corpus import STRUCTURED, secret_cases, structured_case
from conftest import FakeEmbedder, make_settings
from lore import hooks
from lore.api import Lore
from lore.cli import cli
from lore.worker import Worker
from server_util import running

CASES = secret_cases(1)  # one draw of every format (the unit tests draw three and more)
SECRETS = [secret for _, _, secret in CASES]
TEXTS = [text for _, text, _ in CASES]


def _structured() -> tuple[list[Any], list[str]]:
    values, secrets = [], []
    for seed in range(2):
        for _, value in STRUCTURED:
            drawn, found = structured_case(value, seed)
            values.append(drawn)
            secrets += found
    return values, secrets


TOOL_INPUTS, FIELD_SECRETS = _structured()
ALL = SECRETS + FIELD_SECRETS


def holds(text: str, secret: str) -> bool:
    """Whether ``text`` holds ``secret``; a PIN (digits) only where no digit touches it: four
    digits turn up inside any timestamp or id."""
    return secret in text and (not secret.isdigit() or re.search(rf"(?<!\d){secret}(?!\d)", text)
                               is not None)


def leaks(text: str) -> list[str]:
    return [s for s in ALL if holds(text, s)]


def files_leaking(root: Path) -> dict[str, list[str]]:
    out = {}
    for p in root.rglob("*"):
        if p.is_file() and not p.name.startswith("lore.db"):
            found = leaks(p.read_text(encoding="utf-8", errors="replace"))
            if found:
                out[str(p.relative_to(root))] = found[:3]
    return out


def table_leaks(conn: Any) -> list[str]:
    """Every text cell of every table (FTS shadow tables included) that holds a secret."""
    return leaked(conn, ALL, holds)


def chunks(items: list[str], n: int) -> list[list[str]]:
    return [items[i:i + n] for i in range(0, len(items), n)]


def _transcript(path: Path) -> Path:
    """A session where the user pastes every secret and the agent calls tools with them."""
    lines = []
    for i, part in enumerate(chunks(TEXTS, 10)):
        lines.append({"type": "user", "uuid": f"u{i}", "sessionId": "s1",
                      "timestamp": f"2026-11-01T10:{i:02d}:00Z",
                      "message": {"role": "user", "content": "No, use these instead:\n" + "\n".join(part)}})
        lines.append({"type": "assistant", "uuid": f"a{i}", "sessionId": "s1",
                      "timestamp": f"2026-11-01T10:{i:02d}:30Z",
                      "message": {"role": "assistant", "content": [
                          {"type": "text", "text": "Running it:\n" + part[0]},
                          {"type": "tool_use", "id": f"t{i}", "name": "Bash",
                           "input": {"command": " && ".join(part)}},
                          {"type": "tool_use", "id": f"m{i}", "name": "mcp__db__connect",
                           "input": TOOL_INPUTS[i % len(TOOL_INPUTS)]}]}})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


# ---- the hook path, the queue and the worker's writes -----------------------------------------
def test_hook_events_the_queue_and_the_database_hold_no_secret(lore_home: Path, tmp_path: Path):
    transcript = _transcript(tmp_path / "session.jsonl")
    base = {"session_id": "s1", "cwd": str(tmp_path), "transcript_path": str(transcript)}
    for part in chunks(TEXTS, 10):
        hooks.run("user-prompt-submit", json.dumps(
            {**base, "prompt": "No, don't do that, use these:\n" + "\n".join(part)}))
        hooks.run("post-tool-use", json.dumps(
            {**base, "tool_name": "Bash", "tool_input": {"command": "; ".join(part)},
             "tool_response": {"stdout": "\n".join(part)}}))
        hooks.run("post-tool-use", json.dumps(
            {**base, "tool_name": "Write", "tool_input": {
                "file_path": str(tmp_path / "settings.env"), "content": "\n".join(part)}}))
    for value in TOOL_INPUTS:
        hooks.run("post-tool-use", json.dumps(
            {**base, "tool_name": "mcp__db__connect", "tool_input": value}))
    hooks.run("stop", json.dumps(base))
    hooks.run("session-end", json.dumps({**base, "reason": "exit"}))

    pending = list((lore_home / "queue" / "pending").iterdir())
    assert len(pending) == 3 * len(chunks(TEXTS, 10)) + len(TOOL_INPUTS) + 2
    assert files_leaking(lore_home) == {}
    # the structured inputs kept their shape: only the secret fields changed
    mcp = [json.loads(p.read_text()) for p in pending]
    inputs = [e["payload"]["tool_input"] for e in mcp
              if e["payload"].get("tool_name") == "mcp__db__connect"]
    assert {"host": "db", "user": "app", "password": "[REDACTED:password]"} in inputs

    settings = make_settings(lore_home)
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        worker = Worker(settings, lore)
        assert worker.run(once=True) == len(pending)
        assert not (lore_home / "queue" / "quarantine").exists() or not any(
            (lore_home / "queue" / "quarantine").iterdir())
        conn = lore.store.conn
        assert conn.execute("SELECT count(*) FROM messages").fetchone()[0] > 0
        assert conn.execute("SELECT count(*) FROM corrections").fetchone()[0] > 0
        assert conn.execute("SELECT count(*) FROM file_edits").fetchone()[0] > 0
        assert table_leaks(conn) == []
    assert (lore_home / "queue" / "done.jsonl").stat().st_size > 0
    assert files_leaking(lore_home) == {}


def test_lessons_and_corrections_from_the_api_hold_no_secret(fake_lore: Lore):
    for i, part in enumerate(chunks(TEXTS, 20)):
        fake_lore.lessons.add(f"Deploy notes {i}: {part[0]}", "\n".join(part),
                             metadata={"inputs": TOOL_INPUTS[i % len(TOOL_INPUTS)]})
        fake_lore.learning.capture("No, use this one:\n" + "\n".join(part), "I'll use the old key",
                                  project="/p", session_id=f"s{i}")
    assert table_leaks(fake_lore.store.conn) == []


# ---- search queries: logged and shown on every face ---------------------------------------------
def _no_secret_shown(payload: str) -> None:
    assert leaks(payload) == [], leaks(payload)[:3]


def test_search_queries_are_redacted_in_the_log_and_in_stats(lore_home: Path):
    settings = make_settings(lore_home)
    shown = TEXTS[:5]  # searched three times each: the top queries
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        lore.lessons.add("Keep sessions in files", "not Redis")
        for text in TEXTS:
            lore.search.query(text, interface="api")
        for text in shown * 2:
            lore.search.query(text, interface="api")
        assert table_leaks(lore.store.conn) == []
        stats = lore.admin.stats()
        assert len(stats["top_queries"]) == 5
        assert all("[REDACTED:" in q["query"] for q in stats["top_queries"])
        _no_secret_shown(json.dumps(stats))


def test_the_cli_logs_and_shows_queries_redacted(lore_home: Path):
    runner = CliRunner()
    obj = {"embedder": FakeEmbedder()}
    for text in TEXTS[:40] + TEXTS[:3] * 3:
        res = runner.invoke(cli, ["search", text], obj=obj)
        assert res.exit_code == 0, res.output
    out = runner.invoke(cli, ["stats", "--counts"], obj=obj)
    assert out.exit_code == 0 and "[REDACTED:" in out.output
    _no_secret_shown(out.output)
    as_json = runner.invoke(cli, ["stats", "--counts", "--json"], obj=obj)
    _no_secret_shown(as_json.output)
    with Lore.open(make_settings(lore_home), embedder=FakeEmbedder()) as lore:
        assert table_leaks(lore.store.conn) == []


def test_the_web_api_logs_and_shows_queries_redacted(fake_lore: Lore):
    _, read = fake_lore.tokens.create("read", "phone")
    as_reader = {"authorization": f"Bearer {read}"}
    with running(fake_lore, require_token=True) as base, httpx.Client(base_url=base) as c:
        for text in TEXTS + TEXTS[:5] * 2:
            got = c.get("/api/v1/search", params={"q": text}, headers=as_reader)
            assert got.status_code == 200, got.text
        stats = c.get("/api/v1/stats", headers=as_reader)
        assert stats.status_code == 200
        assert all("[REDACTED:" in q["query"] for q in stats.json()["top_queries"])
        _no_secret_shown(stats.text)
        csrf = re.search(r'name="csrf" value="([^"]+)"', c.get("/login").text).group(1)
        c.post("/login", data={"token": read, "csrf": csrf})
        page = c.get("/stats")
        assert page.status_code == 200 and "REDACTED" in page.text
        _no_secret_shown(page.text)
    assert table_leaks(fake_lore.store.conn) == []


def test_mcp_logs_and_shows_queries_redacted(lore_home: Path):
    from lore.mcp.server import build_server

    settings = make_settings(lore_home)
    lore = Lore.open(settings, embedder=FakeEmbedder())
    server, tools = build_server(settings, profile="all", lore=lore)

    async def steps() -> str:
        for text in TEXTS[:40] + TEXTS[:3] * 3:
            r = await server.call_tool("lore_search", {"query": text})
            assert not r.is_error, r.content
        status = await server.call_tool("lore_status", {})
        assert not status.is_error
        return json.dumps(status.structured_content)

    try:
        shown = anyio.run(steps)
        assert "[REDACTED:" in shown
        _no_secret_shown(shown)
        assert table_leaks(lore.store.conn) == []
    finally:
        tools.close()


# ---- a search log written before queries were redacted -------------------------------------
OLD = [(f"2026-01-0{i + 1}T00:00:00", text) for i, text in enumerate(TEXTS[:5])]


def _old_rows(conn: Any) -> None:
    for at, query in OLD * 2:
        conn.execute("INSERT INTO search_log (at, query, filters, result_ids, took_ms, interface) "
                     "VALUES (?, ?, ?, '[]', 1.0, 'cli')", (at, query, json.dumps(
                         {"tags": [], "project": query[:30]})))


def test_an_old_search_log_is_shown_redacted_and_migrated(lore_home: Path):
    settings = make_settings(lore_home)
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        with lore.store.atomic():
            _old_rows(lore.store.conn)
            lore.store.conn.execute("DELETE FROM schema_migrations WHERE version = 22")
        _no_secret_shown(json.dumps(lore.admin.stats()))  # redacted as shown, before the migration
        assert table_leaks(lore.store.conn) != []
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:  # schema 22 runs on open
        assert table_leaks(lore.store.conn) == []
        queries = [r[0] for r in lore.store.conn.execute("SELECT query FROM search_log")]
        assert len(queries) == 10 and all("[REDACTED:" in q for q in queries)


def test_the_migrated_search_log_leaves_no_byte_of_a_secret_in_the_files(lore_home: Path):
    """An update leaves the old text in the free space of a page (the table's root, once the
    table outgrew it): the migration rewrites the rows with secure_delete on."""
    settings = make_settings(lore_home)
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        with lore.store.atomic():
            for _ in range(40):  # a few pages: the root page splits
                _old_rows(lore.store.conn)
            lore.store.conn.execute("DELETE FROM schema_migrations WHERE version = 22")
    secrets = [s for _, t, s in CASES[:5]]

    def in_files() -> int:
        return sum(p.read_bytes().count(s.encode()) for p in lore_home.glob("lore.db*")
                   for s in secrets)

    assert in_files() > 0
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        assert lore.store.conn.execute("SELECT count(*) FROM search_log").fetchone()[0] == 400
    assert in_files() == 0


def test_postgres_logs_shows_and_migrates_queries_redacted(pg_url: str, lore_home: Path):
    import psycopg

    from lore.store.postgres.migrations import SCHEMA_VERSION

    settings = make_settings(lore_home, database=pg_url)
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        lore.lessons.add("Keep sessions in files", "not Redis")
        for text in TEXTS[:60] + TEXTS[:3] * 3:
            lore.search.query(text, interface="web")
        stats = lore.admin.stats()
        assert all("[REDACTED:" in q["query"] for q in stats["top_queries"])
        _no_secret_shown(json.dumps(stats))
        with lore.store.atomic():
            _old_rows(lore.store.conn)
            lore.store.conn.execute("DELETE FROM schema_migrations WHERE version = 22")
        _no_secret_shown(json.dumps(lore.admin.stats()))
    schema = pg_url.rsplit("schema=", 1)[1]
    server = pg_url.rsplit("schema=", 1)[0].rstrip("?&")

    def logged() -> list[str]:
        with psycopg.connect(server, autocommit=True) as conn:
            return [r[0] + r[1] for r in conn.execute(
                f'SELECT query, filters FROM "{schema}".search_log').fetchall()]

    assert any(leaks(q) for q in logged())  # the old rows, before the migration
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        assert lore.store.schema_version() == SCHEMA_VERSION
    rows = logged()
    assert len(rows) == 60 + 9 + 10 and not [q for q in rows if leaks(q)]


@pytest.mark.parametrize("event", ["user-prompt-submit", "post-tool-use"])
def test_a_secret_across_the_hook_cut_leaves_no_prefix(tmp_path: Path, event: str):
    """The secret's middle sits on the cut: what the queue keeps is a prefix of the whole
    text redacted, so not one character of the secret."""
    from lore.capture.tail import MAX_FIELD
    from lore.redact import redact

    for i, (text, secret) in enumerate([(t, s) for _, t, s in CASES if "\n" not in t][::5]):
        at = MAX_FIELD - len(secret) // 2 - text.index(secret)
        long = "x " * (at // 2) + " " * (at % 2) + text + " more" * 2000
        field = {"prompt": long} if event == "user-prompt-submit" else {
            "tool_name": "Bash", "tool_input": {"command": long}}
        queue = tmp_path / f"q{i}"
        hooks.run(event, json.dumps({"session_id": "s1", **field}), queue_root=queue)
        [p] = (queue / "pending").iterdir()
        payload = json.loads(p.read_text())["payload"]
        kept = payload.get("prompt") or payload["tool_input"]["command"]
        assert len(kept) <= MAX_FIELD + 1 and kept.endswith("…")
        assert secret not in kept
        assert redact(long).startswith(kept[:-1]), (secret, kept[-100:])


# ---- credential files, commands that set a secret, other languages: every door, every byte ----
NEW_SHAPES = ("pgpass-line", "pgpass-plain-word", "wpa-supplicant-psk", "networkmanager-psk",
              "wp-config-db-password", "wp-config-auth-salt", "netrc-multiline", "my-cnf-password",
              "heroku-config-set", "flyctl-secrets-set", "dotnet-user-secrets", "passwd-stdin-printf",
              "gcloud-secrets-create", "kubectl-from-literal-any-name", "aws-configure-set-short-secret",
              "password-german", "password-french", "password-chinese", "password-korean",
              "password-russian", "pin-in-prose")
SHAPES = {name: (text, secret) for name, text, secret in secret_cases(1) if name in NEW_SHAPES}


def _judge(body: dict[str, Any]) -> Reply:
    """A model that takes every message for a correction and quotes its first words."""
    user = body["messages"][-1]["content"]
    items = [{"id": ref, "label": "correction", "durable": True, "quote": said.strip()[:24],
              "rule": "Use the connection settings the user gave: " + said.strip()[:200]}
             for ref, said in re.findall(r'<message id="(m\d+)">.*?<developer_message>\n(.*?)\n'
                                         r"</developer_message>", user, re.S)]
    return Reply(openai_body(json.dumps({"items": items})))


def _bytes_leaking(root: Path, secrets: list[str]) -> dict[str, list[str]]:
    """Every file under ``root`` (the database, its -wal and -shm files too) that holds one."""
    out = {}
    for p in root.rglob("*"):
        if p.is_file():
            text = p.read_bytes().decode("utf-8", errors="replace")
            found = [s for s in secrets if holds(text, s)]
            if found:
                out[str(p.relative_to(root))] = found
    return out


def test_credential_files_and_setters_leave_no_byte_in_the_home(lore_home: Path, tmp_path: Path,
                                                                judge: LoopbackServer) -> None:  # noqa: F811
    """A .pgpass line, a wpa_supplicant psk, wp-config's define('DB_PASSWORD'), secret-setting
    commands and passwords in other languages, given as prompts, Bash commands and a written
    wp-config.php: the queue, done.jsonl, lore.db and its WAL, the judge's request, the export
    and the review folder hold none of them, byte for byte."""
    assert len(SHAPES) == len(NEW_SHAPES)
    secrets = [secret for _, secret in SHAPES.values()]
    judge.replies = [_judge]
    settings = make_settings(lore_home, llm={"provider": "openai", "base_url": judge.url + "/v1",
                                             "model": "small-1", "timeout": 5.0, "max_retries": 1})
    base = {"session_id": "s-doors", "cwd": str(tmp_path)}
    for name, (text, _) in SHAPES.items():
        hooks.run("user-prompt-submit", json.dumps(
            {**base, "prompt": f"No, don't use the old one. Use this instead ({name}):\n{text}"}))
        hooks.run("post-tool-use", json.dumps(
            {**base, "tool_name": "Bash", "tool_input": {"command": text},
             "tool_response": {"stdout": "ok"}}))
    hooks.run("post-tool-use", json.dumps(
        {**base, "tool_name": "Write", "tool_input": {
            "file_path": str(tmp_path / "wp-config.php"),
            "content": "<?php\n" + "\n".join(t for n, (t, _) in SHAPES.items() if "wp-config" in n)}}))
    hooks.run("session-end", json.dumps({**base, "reason": "exit"}))
    assert _bytes_leaking(lore_home, secrets) == {}  # the pending events

    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        assert Worker(settings, lore).run(once=True) > 0
        requests = [r["raw"] for r in judge.received]
        assert requests and all("[REDACTED:" in r for r in requests)
        assert [s for s in secrets for r in requests if holds(r, s)] == []
        exported = list(lore.lessons.export())  # the judge's rule, which quotes a message as sent
        assert exported and "[REDACTED:" in json.dumps(exported)
        lore.review.export_folder(lore_home / "review")
        with (lore_home / "export.jsonl").open("w") as f:
            f.writelines(json.dumps(row) + "\n" for row in exported)
        assert table_leaks(lore.store.conn) == []
        assert (lore_home / "lore.db-wal").stat().st_size > 0  # grepped while it holds the writes
        assert (lore_home / "queue" / "done.jsonl").stat().st_size > 0
        assert any((lore_home / "review").rglob("*.md"))
        assert _bytes_leaking(lore_home, secrets) == {}
    assert _bytes_leaking(lore_home, secrets) == {}


def test_id_and_path_fields_that_are_not_strings_are_redacted(tmp_path: Path):
    """session_id, cwd and tool_name are kept as Claude Code sends them (a string); a malformed
    event that puts a secret in a dict or a list there queues none of it."""
    pgpass, _ = SHAPES["pgpass-line"]
    psk, psk_secret = SHAPES["wpa-supplicant-psk"]
    queue = tmp_path / "queue"
    hooks.run("post-tool-use", json.dumps({"session_id": [psk], "cwd": str(tmp_path),
                                           "tool_name": {"name": pgpass}, "tool_input": {}}),
              queue_root=queue)
    [event] = [json.loads(p.read_text()) for p in (queue / "pending").iterdir()]
    text = json.dumps(event)
    assert SHAPES["pgpass-line"][1] not in text and psk_secret not in text
    assert event["payload"]["cwd"] == str(tmp_path)  # a path that is a string stays whole
