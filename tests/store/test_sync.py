"""`lore sync`: two device homes and a real `lore serve` on a loopback port (a third home).
Pushes, pulls, a connection cut in the middle of a push, retries, tampered batches, tokens."""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FakeEmbedder, make_settings
from lore.api import Lore
from lore.capture.transcripts import FileEdit
from lore.core.sync.client import Client, run
from lore.core.sync.records import PROTOCOL, batch_name, record_hash, sane
from lore.errors import BackendUnavailable, ConfigError, InvalidInput
from server_util import running
from tables import history

pytest.importorskip("fastapi")

RULE = {"title": "Use uv, not pip, to install packages",
        "content": "The user asked to run uv pip install instead of pip install in this repo.",
        "kind": "preference", "status": "active", "tags": ["python", "packaging"],
        "preference": {"rejected": "pip install", "preferred": "uv pip install"}}


@pytest.fixture
def homes(tmp_path: Path, real_embedder) -> Iterator[tuple[Lore, Lore, Lore]]:
    """Device A, device B and the server, each its own home and database."""
    opened = [Lore.open(make_settings(tmp_path / name), embedder=real_embedder)
              for name in ("a", "b", "server")]
    try:
        yield opened[0], opened[1], opened[2]
    finally:
        for lore in opened:
            lore.close()


def sync(lore: Lore, url: str, token: str | None = None, **kwargs):
    client = Client(url, token, timeout=30)
    try:
        return run(lore.sync, client, **kwargs)
    finally:
        client.close()


def capture(lore: Lore, n: int, start: int = 0, session: str = "s-1") -> None:
    """``n`` captured corrections and as many conversation messages, with one edit."""
    c = lore.store.corrections
    with lore.store.atomic():
        for i in range(start, start + n):
            c.add_correction(event_id=f"ev-{i}", session_id=session, project="/srv/app",
                             user_message=f"no, use the other helper number {i}",
                             proposal=f"I will call helper {i}", files=["app.py"],
                             at=f"2026-11-01T10:{i % 60:02d}:00.000Z", origin="hook")
    lore.conversations.add_turns(session, "claude-code", "/srv/app", [
        (f"{session}-m{i}", "user" if i % 2 else "assistant", f"turn {i} about the helper", None)
        for i in range(start, start + n)])
    lore.conversations.record_edits(session, "/srv/app", None, [
        FileEdit(session, f"{session}-m{start}", "Edit", "/srv/app/app.py", "a = 1", f"a = {start}")])


def push_body(device: str, records: list[dict], stream: str = "corrections", after: int = 0,
              end: int = 0, **extra) -> dict:
    """A push as a client of this protocol sends it, named by its content."""
    return {"protocol": PROTOCOL, "device": device, "stream": stream, "after": after,
            "end": end, "batch_id": batch_name(stream, after, end, records), "records": records,
            **extra}


def server_counts(server: Lore) -> dict[str, int]:
    store = server.store

    def rows(table: str) -> int:
        return int(store.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])  # type: ignore[attr-defined]

    return {"corrections": rows("corrections"), "messages": rows("messages"),
            "edits": rows("file_edits"), "sessions": rows("sessions"),
            "records": store.sync.record_count(), "lessons": store.count()}


def test_a_pushes_b_pulls_the_approved_rule(homes, run_cli, monkeypatch):
    a, b, server = homes
    rule = a.lessons.add(RULE["title"], RULE["content"],
                        **{k: v for k, v in RULE.items() if k not in ("title", "content")})
    proposed = a.lessons.add("Maybe prefer tabs", "Unreviewed guess.", kind="preference",
                            status="proposed")
    capture(a, 5)
    with running(server) as url:
        report = sync(a, url)
        assert report.pushed == {"lessons": 2, "corrections": 5, "messages": 5, "edits": 1}
        assert sync(b, url).merge.added == 1  # only what a person decided travels back
    counts = server_counts(server)
    assert counts["corrections"] == 5 and counts["messages"] == 5 and counts["edits"] == 1
    assert counts["lessons"] == 2
    pulled = b.lessons.get(rule.id)
    assert pulled.title == rule.title and pulled.updated_at == rule.updated_at
    assert pulled.preference.preferred == "uv pip install" and pulled.tags == rule.tags
    with pytest.raises(Exception, match="no lesson"):
        b.lessons.get(proposed.id)
    # Every record keeps its device: the corrections and sessions on the server name A.
    device_a = a.sync.device_id()
    assert device_a != b.sync.device_id() != server.sync.device_id()
    assert server.store.sync.record_count(device_a) == counts["records"]
    assert server.store.conversations.session("s-1")["device"] == device_a
    # The server searches what arrived: the messages were chunked and keyword-indexed.
    assert server.conversations.search("helper", mode="keyword", project="/srv/app")
    # B's `lore recall preferences` shows A's rule.
    monkeypatch.setenv("LORE_HOME", str(b.settings.home))
    out = run_cli("recall", "preferences", "--json")
    assert out.exit_code == 0, out.output
    assert rule.id in out.output
    assert b.sync.status()["pending_total"] == 0  # a pulled lesson is not pushed back


def test_secrets_never_leave_the_device(homes):
    """Text stored before redaction (an older Lore, a restored backup) is redacted on the way
    out, and the server redacts what it receives again."""
    a, _, server = homes
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    with a.store.atomic():
        a.store.corrections.add_correction(
            event_id="ev-secret", session_id="s-9", project=None,
            user_message=f"no, push with {secret} instead", proposal=None, files=[],
            at="2026-11-01T10:00:00.000Z", origin="hook")
    batch = a.sync.next_batch("corrections", 10)
    assert batch is not None and secret not in json.dumps(batch.records)
    with running(server) as url:
        sync(a, url)
        with httpx.Client(base_url=f"{url}/api/v1/sync") as http:  # a client that did not redact
            answer = http.post("/push", json=push_body("0" * 26, [{
                "kind": "correction", "id": "raw-1", "data": {
                    "user_message": f"and the key is AKIAIOSFODNN7EXAMPLE, {secret}",
                    "at": "2026-11-01T10:00:00.000Z"}}]))
            assert answer.status_code == 200, answer.text
    stored = [r[0] for r in server.store.conn.execute(  # type: ignore[attr-defined]
        "SELECT user_message FROM corrections ORDER BY id")]
    assert len(stored) == 2 and all("[REDACTED:" in m for m in stored)
    assert not any(secret in m or "AKIAIOSFODNN7EXAMPLE" in m for m in stored)


def test_push_twice_and_nothing_twice(homes):
    a, _, server = homes
    capture(a, 30)
    a.lessons.add(RULE["title"], RULE["content"], kind="preference", status="active")
    with running(server) as url:
        sync(a, url, batch_size=7)
        first = server_counts(server)
        again = sync(a, url, batch_size=7)
        assert again.batches == 0 and again.stored == 0
        # Forget every cursor (a restored backup): everything is sent again, nothing stored.
        with a.store.atomic():
            for stream in ("lessons", "corrections", "messages", "edits"):
                a.store.delete_meta(f"sync.push.{stream}")
        resent = sync(a, url, batch_size=11)
        assert resent.batches > 0 and resent.stored == 0
    assert server_counts(server) == first
    assert first["corrections"] == 30 and first["messages"] == 30


class CuttingProxy:
    """A loopback TCP proxy in front of the server that cuts every connection once ``up``
    bytes went to the server (a request cut half-way) or ``down`` bytes came back (the server
    stored a batch but its answer is lost)."""

    def __init__(self, target: str, up: int | None = None, down: int | None = None) -> None:
        host, port = target.removeprefix("http://").split(":")
        self.target = (host, int(port))
        self.budget = {"up": up, "down": down}
        self.cut = threading.Event()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            for src, dst, way in ((conn, upstream, "up"), (upstream, conn, "down")):
                threading.Thread(target=self.pump, args=(src, dst, way, conn, upstream),
                                 daemon=True).start()

    def pump(self, src: socket.socket, dst: socket.socket, way: str, *both: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                left = self.budget[way]
                if self.cut.is_set() or (left is not None and len(data) > left):
                    if left and not self.cut.is_set():
                        dst.sendall(data[:left])
                    self.cut.set()
                    break
                if left is not None:
                    self.budget[way] = left - len(data)
                dst.sendall(data)
        except OSError:
            pass
        for s in both:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self) -> None:
        self.sock.close()


@contextmanager
def proxy(url: str, **budget: int) -> Iterator[CuttingProxy]:
    p = CuttingProxy(url, **budget)
    try:
        yield p
    finally:
        p.close()


@pytest.mark.parametrize("cut", [{"up": 60_000}, {"down": 1400}])
def test_a_cut_connection_resumes_with_every_record_once(homes, cut):
    a, _, server = homes
    capture(a, 400)
    with running(server) as url:
        with proxy(url, **cut) as p, pytest.raises(BackendUnavailable, match="run `lore sync` again"):
            sync(a, p.url, batch_size=50, pull=False)
        assert p.cut.is_set()
        halfway = a.sync.status()["pending_total"]
        assert 0 < halfway < 801
        sync(a, url, batch_size=50)
    counts = server_counts(server)
    assert counts["corrections"] == 400 and counts["messages"] == 400 and counts["edits"] == 1
    assert counts["records"] == 400 + 400 + 1 + 1  # + the session, once
    assert a.sync.status()["pending_total"] == 0


def test_tampered_batch_is_refused_whole(homes):
    a, _, server = homes
    capture(a, 3)
    device = a.sync.device_id()
    batch = a.sync.next_batch("corrections", 10)
    assert batch is not None
    body = push_body(device, batch.records, after=batch.after, end=batch.end)
    assert body["batch_id"] == batch.batch_id
    with running(server) as url, httpx.Client(base_url=f"{url}/api/v1/sync") as http:
        bad_kind = json.loads(json.dumps(body))
        bad_kind["records"][1]["kind"] = "dossier"
        bad_field = json.loads(json.dumps(body))
        bad_field["records"][2]["data"]["user_message"] = ""
        bad_lesson = json.loads(json.dumps(body))
        bad_lesson["records"].append({"kind": "lesson", "id": "x", "device": device, "data": {
            "id": "01JZZZZZZZZZZZZZZZZZZZZZZZ", "title": "t", "content": "",
            "confidence": "certain", "updated_at": "2026-11-01T00:00:00.000Z"}})
        renamed = json.loads(json.dumps(body))
        renamed["records"][0]["data"]["user_message"] = "not what the batch id names"
        for tampered in (bad_kind, bad_field, bad_lesson, renamed):
            answer = http.post("/push", json=tampered)
            assert answer.status_code == 422, answer.text
            assert answer.json()["error"]["code"] == "invalid_input"
            assert answer.json()["error"]["message"]
        spec = httpx.get(f"{url}/api/v1/openapi.json").json()["paths"]
        assert {"/api/v1/sync/push", "/api/v1/sync/pull", "/api/v1/sync/info"} <= set(spec)
        assert "PushIn" in json.dumps(spec["/api/v1/sync/push"]["post"]["requestBody"])
        assert "413" in spec["/api/v1/sync/push"]["post"]["responses"]
        assert http.post("/push", content=b"{not json",
                         headers={"content-type": "application/json"}).status_code == 400
        too_big = http.post("/push", content=b"x" * (33 * 1024 * 1024),
                            headers={"content-type": "application/json"})
        assert too_big.status_code == 413 and too_big.json()["error"]["code"] == "too_large"
        assert server_counts(server)["corrections"] == 0 and server.store.sync.record_count() == 0
        old = http.post("/push", json={**body, "protocol": PROTOCOL + 1})
        assert old.status_code == 409 and "protocol" in old.json()["error"]["message"]
        good = http.post("/push", json=body).json()
        assert good == {"batch_id": batch.batch_id, "received": 3, "stored": 3, "refused": 0,
                        "repeated": False, "clamped": 0, "ahead": 0.0}
        assert http.post("/push", json=body).json()["repeated"] is True
    assert server_counts(server)["corrections"] == 3


def test_a_batch_too_large_is_sent_in_smaller_parts(homes, monkeypatch):
    from lore.web import sync as web_sync

    a, _, server = homes
    capture(a, 40)
    monkeypatch.setattr(web_sync, "MAX_BODY", 6_000)  # about 20 corrections a request
    with running(server) as url:
        report = sync(a, url, batch_size=500, pull=False)
        assert report.batches > 2 and report.pushed["corrections"] == 40
        monkeypatch.setattr(web_sync, "MAX_BODY", 100)  # not even one record fits
        capture(a, 1, start=100, session="s-2")
        with pytest.raises(BackendUnavailable, match="ev-100 alone is larger than"):
            sync(a, url, pull=False)
    assert server_counts(server)["corrections"] == 40


def test_another_protocol_is_refused_before_anything_is_sent(homes, monkeypatch):
    from lore.web import sync as web_sync

    a, _, server = homes
    capture(a, 2)
    monkeypatch.setattr(web_sync, "PROTOCOL", PROTOCOL + 1)  # a newer server
    with running(server) as url, pytest.raises(ConfigError, match=f"speaks sync protocol {PROTOCOL + 1}"):
        sync(a, url)
    assert server_counts(server)["corrections"] == 0 and a.sync.status()["pending_total"] == 5


def test_tokens_unreachable_and_scopes(homes):
    a, b, server = homes
    a.lessons.add(RULE["title"], RULE["content"], kind="preference", status="active")
    _, read = server.tokens.create("read", "phone")
    _, write = server.tokens.create("write", "laptop")
    with running(server, require_token=True) as url:
        with pytest.raises(ConfigError, match="refused the token \\(401\\)"):
            sync(a, url)
        with pytest.raises(ConfigError, match="refused the token \\(401\\)"):
            sync(a, url, "lore_nope_nope")
        with pytest.raises(ConfigError, match="403.*write token"):
            sync(a, url, read)
        assert server.store.count() == 0
        assert sync(a, url, write).pushed == {"lessons": 1}
        assert sync(b, url, read, push=False).merge.added == 1  # reading needs only read
    with pytest.raises(BackendUnavailable, match="cannot reach the sync server"):
        sync(a, url, write)


def test_conflict_latest_wins_everywhere_and_keeps_history(homes):
    a, b, server = homes
    lesson = a.lessons.add(RULE["title"], RULE["content"], kind="preference", status="active")
    with running(server) as url:
        sync(a, url)
        sync(b, url)
        a.lessons.update(lesson.id, content="A says: use uv for installs.")
        b.lessons.update(lesson.id, content="B says: use uv and lock with uv.lock.")  # later
        sync(a, url)
        report = sync(b, url)
        assert report.merge.conflicts == 0  # the server took B's newer version
        assert sync(a, url).merge.conflicts == 1  # A's own edit lost to B's newer one
    for lore in (a, b, server):
        assert lore.lessons.get(lesson.id).content == "B says: use uv and lock with uv.lock."
    kept = history(server.store, lesson.id)
    assert [h["outcome"] for h in kept] == ["replaced"]
    assert kept[0]["data"]["content"] == "A says: use uv for installs."
    assert kept[0]["device"] == a.sync.device_id()
    assert history(a.store, lesson.id)[0]["data"]["content"] == "A says: use uv for installs."


def test_merge_ties_go_to_the_greater_device(tmp_path):
    with Lore.open(make_settings(tmp_path / "x"), embedder=FakeEmbedder()) as x:
        lesson = x.lessons.add("Prefer ruff", "Lint with ruff.", status="active")
        data = lesson.to_dict()
        low, high = "0" * 26, "Z" * 26
        tie = {**data, "content": "from the low device"}
        assert x.sync.merge([(low, tie)]).conflicts == 1
        mine = x.sync.device_id()
        assert x.lessons.get(lesson.id).content == ("from the low device" if low > mine
                                                   else "Lint with ruff.")
        x.sync.merge([(high, {**data, "content": "from the high device"})])
        assert x.lessons.get(lesson.id).content == "from the high device"
        with pytest.raises(InvalidInput):
            x.sync.merge([(high, {"id": lesson.id})])


def test_status_and_cli(homes, run_cli, monkeypatch, tmp_path):
    a, _, server = homes
    capture(a, 4)
    status = a.sync.status()
    assert status["pending"] == {"lessons": 0, "corrections": 4, "messages": 4, "edits": 1}
    assert status["server"] is None and len(status["device"]) == 26
    _, write = server.tokens.create("write", "laptop")
    monkeypatch.setenv("LORE_HOME", str(a.settings.home))
    with running(server, require_token=True) as url:
        token_file = a.settings.home / "sync-token"
        token_file.write_text(write + "\n")
        token_file.chmod(0o644)
        out = run_cli("sync", "--server", url)
        assert out.exit_code == 1 and "chmod 600" in out.output
        token_file.chmod(0o600)
        out = run_cli("sync", "--server", url, "--json")
        assert out.exit_code == 0, out.output
        assert json.loads(out.stdout)["pushed"] == {"corrections": 4, "messages": 4, "edits": 1}
    out = run_cli("sync", "--status", "--json")
    shown = json.loads(out.stdout)
    assert shown["server"] == url and shown["pending_total"] == 0 and shown["last_push"]
    assert run_cli("sync").exit_code == 2  # no server anywhere
    assert run_cli("sync", "--server", url, "--push-only", "--pull-only").exit_code == 2
    assert run_cli("sync", "--server", "ftp://elsewhere").exit_code == 2
    out = run_cli("sync", "--server", url)  # the server is gone
    assert out.exit_code == 1 and "cannot reach" in out.output and "Traceback" not in out.output


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(splits=st.lists(st.integers(1, 40), min_size=1, max_size=12),
       retries=st.lists(st.booleans(), min_size=1, max_size=12))
def test_dedup_over_any_split_and_retry(tmp_path_factory, splits, retries):
    """However the records are cut into batches and whichever batches are sent twice, the
    server holds each record once."""
    root = tmp_path_factory.mktemp("dedup")
    with Lore.open(make_settings(root / "a"), embedder=FakeEmbedder()) as a, \
            Lore.open(make_settings(root / "s"), embedder=FakeEmbedder()) as server:
        capture(a, 60)
        records = [r for s in ("corrections", "messages", "edits")
                   for r in a.sync.next_batch(s, 1000).records]  # type: ignore[union-attr]
        device = a.sync.device_id()
        i = n = 0
        while i < len(records):
            size = splits[n % len(splits)]
            part = records[i:i + size]
            batch = {"stream": "messages", "after": n, "end": n + 1, "records": part,
                     "batch_id": batch_name("messages", n, n + 1, part)}
            server.sync.server.receive(device, batch)
            if retries[n % len(retries)]:
                server.sync.server.receive(device, batch)                   # the same batch again
                server.sync.server.receive(device, {**batch, "records": part[::-1],  # re-cut
                                             "batch_id": batch_name("messages", n, n + 1,
                                                                    part[::-1])})
            i, n = i + size, n + 1
        counts = server_counts(server)
        unique = {(r["kind"], r["id"], record_hash(r["kind"], r["data"])) for r in records}
        assert counts["records"] == len(unique)
        assert counts["corrections"] == 60 and counts["messages"] == 60 and counts["edits"] == 1


@pytest.fixture
def run_cli(real_embedder):
    from click.testing import CliRunner

    from lore.cli import cli

    def invoke(*args: str):
        return CliRunner().invoke(cli, list(args), obj={"embedder": real_embedder})

    return invoke


def test_a_server_on_postgres_receives_and_hands_out_as_on_sqlite(tmp_path, pg_url,
                                                                  real_embedder):
    """The same push and pull with the server's memory in a shared Postgres database."""
    a, b = (Lore.open(make_settings(tmp_path / n), embedder=real_embedder) for n in ("a", "b"))
    server = Lore.open(make_settings(tmp_path / "server", database=pg_url),
                       embedder=real_embedder)
    try:
        rule = a.lessons.add(RULE["title"], RULE["content"],
                            **{k: v for k, v in RULE.items() if k not in ("title", "content")})
        capture(a, 4)
        with running(server) as url:
            report = sync(a, url)
            assert report.pushed == {"lessons": 1, "corrections": 4, "messages": 4, "edits": 1}
            again = sync(a, url)  # nothing new: nothing sent, nothing stored twice
            assert sum(again.pushed.values()) == 0
            assert sync(b, url).merge.added == 1
        counts = server_counts(server)
        assert counts["corrections"] == 4 and counts["messages"] == 4 and counts["edits"] == 1
        kinds = dict(server.store.conn.execute(  # type: ignore[attr-defined]
            "SELECT kind, count(*) FROM sync_records GROUP BY kind").fetchall())
        assert kinds == {"lesson": 1, "correction": 4, "message": 4, "edit": 1, "session": 1}
        assert counts["lessons"] == 1 and counts["records"] == 11
        assert server.store.sync.record_count(a.sync.device_id()) == 11
        # Received messages are kept as evidence, not pushed on, whatever the stamp says.
        assert server.store.sync.pending_count("corrections", 0) == 0
        assert server.store.sync.origins([rule.id]) == {
            rule.id: (a.sync.device_id(), rule.updated_at)}
        assert b.lessons.get(rule.id).title == rule.title
        assert server.conversations.search("helper", mode="keyword", project="/srv/app")
    finally:
        for lore in (a, b, server):
            lore.close()


def test_a_deletion_travels_and_does_not_come_back(homes):
    """A deletes a lesson both devices hold: the server and B delete it too, and A's next
    sync does not bring it back; nothing is pushed twice."""
    a, b, server = homes
    lesson = a.lessons.add(RULE["title"], RULE["content"], kind="preference", status="active")
    kept = a.lessons.add("Pin numpy below 2", "numpy 2 broke the build", status="active")
    with running(server) as url:
        sync(a, url)
        assert sync(b, url).merge.added == 2
        a.lessons.delete(lesson.id)
        assert a.sync.status()["pending"]["lessons"] == 1
        report = sync(a, url)
        assert report.pushed == {"lessons": 1} and report.merge.deleted == 0
        assert server.store.existing_ids([lesson.id, kept.id]) == {kept.id}
        assert sync(b, url).merge.deleted == 1
        again = sync(a, url)
        assert again.pulled == 0 and a.sync.status()["pending_total"] == 0
        assert sync(b, url).stored == 0 and b.sync.status()["pending_total"] == 0
    for lore in (a, b, server):
        assert lore.store.existing_ids([lesson.id, kept.id]) == {kept.id}
    # The deleted version is kept nowhere as a conflict: one device deleted what all held.
    assert history(server.store, lesson.id) == []


def test_an_edit_later_than_a_deletion_wins_and_an_earlier_one_loses(homes):
    """The rule of edits holds for deletions: the later of the two wins, everywhere, and the
    loser is kept in the history."""
    a, b, server = homes
    first = a.lessons.add(RULE["title"], RULE["content"], kind="preference", status="active")
    second = a.lessons.add("Pin numpy below 2", "numpy 2 broke the build", status="active")
    with running(server) as url:
        sync(a, url)
        sync(b, url)
        # first: B edits after A deleted it; second: B edits before A deletes it.
        b.lessons.update(second.id, content="numpy 2 broke the build; pin <2 until the fix")
        a.lessons.delete(first.id)
        a.lessons.delete(second.id)
        b.lessons.update(first.id, content="B still wants this rule, edited after the deletion")
        sync(a, url)
        report = sync(b, url)
        assert report.merge.deleted == 1 and report.merge.conflicts >= 1
        assert sync(a, url).merge.added == 1
    for lore in (a, b, server):
        assert lore.store.existing_ids([first.id, second.id]) == {first.id}, lore.settings.home
        assert lore.lessons.get(first.id).content.startswith("B still wants")
    outcomes = {h["lesson_id"]: h for h in history(server.store, first.id)
                + history(server.store, second.id)}
    assert outcomes[first.id]["data"].get("deleted") and outcomes[first.id]["outcome"] == "replaced"
    assert outcomes[second.id]["data"]["content"].endswith("pin <2 until the fix")
    assert outcomes[second.id]["outcome"] == "refused"


# ---- nothing lost, nothing forged (sync protocol 3) ----------------------------------------
def reopen(lore: Lore, backup: Path | None = None, embedder=None) -> Lore:
    """Close a home and open it again with its database moved away (``mv lore.db* away``), or
    replaced by ``backup`` (a restore); its ``device`` file stays."""
    settings, db = lore.settings, lore.settings.db_path
    lore.close()
    for f in db.parent.glob(db.name + "*"):
        f.rename(f.with_name("gone-" + f.name))
    if backup is not None:
        db.write_bytes(backup.read_bytes())
    return Lore.open(settings, embedder=embedder or FakeEmbedder())


def backup(lore: Lore, to: Path) -> Path:
    """A consistent copy of a home's database as a backup tool makes it (SQLite's backup)."""
    import sqlite3

    with sqlite3.connect(lore.settings.db_path) as src, sqlite3.connect(to) as dst:
        src.backup(dst)
    return to


def edits(lore: Lore, session: str, n: int, start: int = 0) -> None:
    lore.conversations.record_edits(session, "/srv/app", None, [
        FileEdit(session, f"{session}-m{start}", "Edit", f"/srv/app/f{i}.py", "x = 0", f"x = {i}")
        for i in range(start, start + n)])


def pushed_ids(server: Lore, device: str) -> dict[str, set[str]]:
    """What the server holds of ``device``, by kind, read from the tables themselves."""
    from lore.core.sync.records import edit_id

    q = server.store.conn.execute  # type: ignore[attr-defined]
    sessions = {r[0] for r in q("SELECT id FROM sessions WHERE device = ?", (device,))}
    marks = ",".join("?" * len(sessions)) or "''"
    return {
        "correction": {r[0].split(":", 1)[1] for r in q(
            "SELECT event_id FROM corrections WHERE device = ?", (device,))},
        "session": sessions,
        "message": {r[0] for r in q(f"SELECT uuid FROM messages WHERE session_id IN ({marks})",
                                    list(sessions))},
        "edit": {edit_id(dict(r)) for r in q(
            "SELECT message_uuid, file_path, old_text, new_text FROM file_edits "
            f"WHERE session_id IN ({marks})", list(sessions))},
    }


def held_ids(lore: Lore) -> dict[str, set[str]]:
    """Every record of a device's database as it would push it, by kind."""
    t = lore.store.sync
    out: dict[str, set[str]] = {"correction": set(), "session": set(), "message": set(),
                                "edit": set()}
    for stream, read in (("corrections", t.corrections_after), ("messages", t.messages_after),
                         ("edits", t.edits_after)):
        for r in lore.sync.row_records(stream, read(0, 10**6)):
            out[r["kind"]].add(r["id"])
    return out


def test_a_reset_database_sends_everything_new(tmp_path):
    """The attack of the report: a device's database moved away while its `device` file
    stays, new activity, `lore sync`: every new record arrives, edits too, whatever the
    batch sizes (batch ids and edit ids used to repeat and be taken as sent)."""
    a = Lore.open(make_settings(tmp_path / "a"), embedder=FakeEmbedder())
    server = Lore.open(make_settings(tmp_path / "server"), embedder=FakeEmbedder())
    try:
        device = a.sync.device_id()
        capture(a, 30)
        edits(a, "s-1", 4)
        with running(server) as url:
            assert sync(a, url, batch_size=10).stored == 30 + 30 + 5 + 1
            a = reopen(a)
            assert a.sync.device_id() == device and a.sync.status()["pending_total"] == 0
            capture(a, 25, start=100, session="s-2")
            edits(a, "s-2", 4, start=100)
            assert a.sync.status()["pending_total"] == 25 + 25 + 5
            report = sync(a, url, batch_size=7)
            assert report.behind and report.stored == 25 + 25 + 5 + 1
            assert a.sync.status()["pending_total"] == 0
        held = pushed_ids(server, device)
        assert len(held["correction"]) == 55 and len(held["message"]) == 55
        assert len(held["edit"]) == 10 and held["session"] == {"s-1", "s-2"}
        assert held_ids(a)["edit"] <= held["edit"]
        assert server_counts(server)["edits"] == 10
    finally:
        a.close()
        server.close()


def test_a_restored_backup_and_a_restored_server_lose_nothing(tmp_path):
    """A device restored from an older backup numbers its new rows as the lost ones were:
    they arrive. A server restored from an older backup lacks what it had acknowledged: the
    device sees its cursor ahead of the server's view and sends those rows again."""
    a = Lore.open(make_settings(tmp_path / "a"), embedder=FakeEmbedder())
    server = Lore.open(make_settings(tmp_path / "server"), embedder=FakeEmbedder())
    try:
        device = a.sync.device_id()
        capture(a, 10)
        with running(server) as url:
            sync(a, url, batch_size=4)
            old = backup(a, tmp_path / "a-old.db")
            server_old = backup(server, tmp_path / "server-old.db")
            capture(a, 10, start=10, session="s-2")
            edits(a, "s-2", 3, start=10)
            sync(a, url, batch_size=4)
            a = reopen(a, old)  # back to before s-2: the same row numbers come again
            capture(a, 6, start=50, session="s-3")
            report = sync(a, url, batch_size=5)
            assert report.stored == 6 + 6 + 1 + 1 and not report.resent
        assert len(pushed_ids(server, device)["message"]) == 26
        server = reopen(server, server_old)  # the server loses s-2 and s-3
        assert len(pushed_ids(server, device)["message"]) == 10
        with running(server) as url:
            report = sync(a, url, batch_size=5)
            assert set(report.resent) == {"corrections", "messages", "edits"}
            assert report.stored == 6 + 6 + 1 + 1
        held = pushed_ids(server, device)
        assert held["message"] == held_ids(a)["message"] and len(held["message"]) == 16
        assert a.sync.status()["pending_total"] == 0
    finally:
        a.close()
        server.close()


@pytest.fixture
def guarded(tmp_path):
    """Device A and device B with a write token each, and a server that requires tokens."""
    a, b, server = (Lore.open(make_settings(tmp_path / n), embedder=FakeEmbedder())
                    for n in ("a", "b", "server"))
    _, token_a = server.tokens.create("write", "a")
    _, token_b = server.tokens.create("write", "b")
    try:
        with running(server, require_token=True) as url:
            yield a, b, server, url, token_a, token_b
    finally:
        for lore in (a, b, server):
            lore.close()


def forge(url: str, token: str, device: str, records: list[dict], stream: str = "lessons",
          after: int = 0, end: int = 0, **body) -> httpx.Response:
    with httpx.Client(base_url=f"{url}/api/v1/sync",
                      headers={"Authorization": f"Bearer {token}"}) as http:
        return http.post("/push", json={**push_body(device, records, stream=stream, after=after,
                                                    end=end), **body})


def test_a_token_pushes_only_for_its_own_device(guarded):
    """Device B's token cannot push A's batches, claim A's records or stop A's; a device
    moves to a new token only once its old one is revoked."""
    a, b, server, url, token_a, token_b = guarded
    device_a, device_b = a.sync.device_id(), b.sync.device_id()
    capture(a, 5)
    edits(a, "s-1", 5)
    sync(a, url, token_a)
    capture(a, 5, start=10, session="s-2")
    edits(a, "s-2", 5, start=10)
    # B pre-pushes A's next batches (the very ones A will send) under A's device id: before
    # B's token pushed anything (A's device is another token's), and after (B's token is B's).
    for turn in ("unbound", "bound"):
        if turn == "bound":
            capture(b, 1, session="s-b")
            sync(b, url, token_b)  # a device is bound to its token on its first push
        for stream in ("corrections", "edits"):
            batch = a.sync.next_batch(stream, 100)
            assert batch is not None
            answer = forge(url, token_b, device_a, batch.records, stream=stream,
                           after=batch.after, end=batch.end, batch_id=batch.batch_id)
            assert answer.status_code == 403, answer.text
            assert ("pushes with another token" if turn == "unbound" else
                    f"pushes for device {device_b}") in answer.json()["error"]["message"]
    # B's token cannot push for a third device either.
    answer = forge(url, token_b, "7" * 26, [])
    assert answer.status_code == 403 and "pushes for device" in answer.json()["error"]["message"]
    with pytest.raises(ConfigError, match="403.*pushes for device"):
        sync(a, url, token_b)
    report = sync(a, url, token_a)
    assert report.stored == 5 + 5 + 1 + 6 and a.sync.status()["pending_total"] == 0
    held = pushed_ids(server, device_a)
    assert len(held["correction"]) == 10 and len(held["edit"]) == 12
    assert server.store.sync.record_count(device_b) == 4  # its correction, turn, edit, session
    # A new token for A is refused while the old one is valid, taken once it is revoked.
    info, token_a2 = server.tokens.create("write", "a, again")
    capture(a, 1, start=40, session="s-3")
    with pytest.raises(ConfigError, match="pushes with another token"):
        sync(a, url, token_a2)
    old_id = token_a.split("_")[1]
    server.tokens.revoke(old_id)
    assert sync(a, url, token_a2).stored == 4


def test_forged_records_are_refused_and_stored_nowhere(guarded):
    """B's own token, B's own device: a lesson version claiming A's device, a record id
    that is not its lesson's, dates that would win every conflict or are no dates, an edit
    whose id is not its content; B's session record for A's session (a rename), messages
    and edits into A's session. Each is refused (422, the batch stores nothing) or left
    out (counted as refused); A's lesson and session stay A's."""
    a, b, server, url, token_a, token_b = guarded
    device_a, device_b = a.sync.device_id(), b.sync.device_id()
    lesson = a.lessons.add(RULE["title"], RULE["content"], kind="preference", status="active")
    a.conversations.add_turns("s-a", "claude-code", "/srv/app", [
        ("a-m1", "user", "the first prompt of A", "2026-11-01T10:00:00.000Z")],
        title="A's own title")
    sync(a, url, token_a)
    theirs = lesson.to_dict()

    def refused(records: list[dict], match: str, stream: str = "lessons") -> None:
        answer = forge(url, token_b, device_b, records, stream=stream)
        assert answer.status_code == 422, answer.text
        assert match in answer.json()["error"]["message"], answer.text

    later = {**theirs, "content": "B's content", "updated_at": "2026-11-20T00:00:00.000Z"}
    refused([{"kind": "lesson", "id": lesson.id, "device": device_a, "data": later}],
            "pushes only the versions it wrote")
    refused([{"kind": "lesson", "id": "01JAAAAAAAAAAAAAAAAAAAAAAA", "device": device_b,
              "data": later}], "a record's id is its lesson's id")
    for when, why in (("9999-12-31T00:00:00.000Z", "more than a day ahead"),
                      ("not a date", "is not a date"), ("1970-01-01T00:00:00Z", "before 2000")):
        refused([{"kind": "lesson", "id": lesson.id, "device": device_b,
                  "data": {**later, "updated_at": when}}], why)
    refused([{"kind": "lesson", "id": lesson.id, "device": device_b,
              "data": {**later, "created_at": "9999-01-01T00:00:00Z"}}], "created_at")
    edit = {"session_id": "s-a", "message_uuid": "a-m1", "tool": "Edit",
            "file_path": "/srv/app/app.py", "old_text": "a", "new_text": "b"}
    refused([{"kind": "edit", "id": "1", "data": edit}], "not named by its content",
            stream="edits")
    # B's session record for A's session, and turns into it: left out, not stored.
    from lore.core.sync.records import edit_id

    session = {"id": "s-a", "agent": "claude-code", "title": "renamed by B",
               "git_branch": "b-branch"}
    answer = forge(url, token_b, device_b, [
        {"kind": "session", "id": "s-a", "data": session},
        {"kind": "message", "id": "b-m1", "data": {"session_id": "s-a", "role": "user",
                                                   "text": "B speaking in A's session"}},
        {"kind": "edit", "id": edit_id(edit), "data": edit}], stream="messages")
    assert answer.status_code == 200 and answer.json()["refused"] == 3, answer.text
    assert answer.json()["stored"] == 0
    stored = server.store.conversations.session("s-a")
    assert stored["title"] == "A's own title" and stored["device"] == device_a
    assert stored["git_branch"] is None
    assert pushed_ids(server, device_a)["message"] == {"a-m1"}
    assert server_counts(server)["edits"] == 0
    # A's lesson is A's, and A's own later edit still replaces it.
    assert server.lessons.get(lesson.id).content == RULE["content"]
    a.lessons.update(lesson.id, content="A's real edit")
    sync(a, url, token_a)
    assert server.lessons.get(lesson.id).content == "A's real edit"
    assert server.store.sync.record_count(device_b) == 0


def test_a_stored_far_future_lesson_loses_to_a_real_edit(tmp_path):
    """A version stored before dates were checked (9999-12-31, or no date at all) no longer
    wins every conflict: a real edit replaces it, and the forged one is kept in the history."""
    with Lore.open(make_settings(tmp_path / "x"), embedder=FakeEmbedder()) as x:
        for forged in ("9999-12-31T00:00:00.000Z", "not a date"):
            lesson = x.lessons.add(f"Prefer ruff ({forged})", "Lint with ruff.", status="active")
            x.store.conn.execute("UPDATE lessons SET updated_at = ? WHERE id = ?",  # type: ignore[attr-defined]
                                 (forged, lesson.id))
            real = {**lesson.to_dict(), "content": "A real edit",
                    "updated_at": "2026-11-02T00:00:00.000Z"}
            report = x.sync.merge([("Z" * 26, real)])
            assert report.updated == 1 and report.conflicts == 1
            assert x.lessons.get(lesson.id).content == "A real edit"
            # Pulled versions with such dates are refused, not merged.
            bad = {**real, "content": "far future", "updated_at": "9999-12-31T00:00:00.000Z"}
            assert x.sync.merge([("Z" * 26, bad)]).refused == 1
            assert x.lessons.get(lesson.id).content == "A real edit"


def test_bad_cursors_and_older_peers_get_one_line(homes):
    """Out-of-range or garbage cursors are a 4xx with one line, never a 500; a client or
    server of another protocol is told which side to upgrade."""
    a, _, server = homes
    device = a.sync.device_id()
    with running(server) as url, httpx.Client(base_url=f"{url}/api/v1/sync") as http:
        for cursor in (str(2**63), str(2**64), "-1", "abc", "1e3", "9" * 400):
            answer = http.get("/pull", params={"device": device, "cursor": cursor})
            assert 400 <= answer.status_code < 500, (cursor, answer.text)
            assert answer.json()["error"]["message"] and "\n" not in answer.text
        assert http.get("/pull", params={"device": device, "cursor": 2**63 - 1}).json() == {
            "cursor": 2**63 - 1, "check": None, "rewound": False, "more": False, "records": []}
        assert http.get("/state", params={"device": "nope"}).status_code == 422
        # A client of protocol 2 (no stream or cursors, the batch named by its position).
        old = http.post("/push", json={"protocol": 2, "device": device,
                                       "batch_id": f"{device}:corrections:0-3", "records": []})
        assert old.status_code == 409
        assert "upgrade Lore on this device" in old.json()["error"]["message"]
        half = http.post("/push", json={**push_body(device, []), "stream": None})
        assert half.status_code == 422 and "stream, after and end" in half.text
        far = http.post("/push", json={**push_body(device, []), "end": 2**63})
        assert far.status_code == 422


def test_an_older_server_is_named_as_the_side_to_upgrade(homes, monkeypatch):
    from lore.web import sync as web_sync

    a, _, server = homes
    monkeypatch.setattr(web_sync, "PROTOCOL", PROTOCOL - 1)
    with running(server) as url, pytest.raises(ConfigError, match="upgrade Lore on the server"):
        sync(a, url)


def test_the_server_view_is_seeded_from_batches_of_protocol_2(tmp_path):
    """A server upgraded from protocol 2 knows how far each device pushed from the names its
    old batches had, so no device sends everything again."""
    from lore.store.sqlite.migrations import seed_sync_cursors

    with Lore.open(make_settings(tmp_path / "s"), embedder=FakeEmbedder()) as server:
        conn = server.store.conn  # type: ignore[attr-defined]
        device = "01JBBBBBBBBBBBBBBBBBBBBBBB"
        rows = [(f"{device}:messages:0-500", "2026-11-01T00:00:01Z"),
                (f"{device}:messages:500-733", "2026-11-01T00:00:02Z"),
                (f"{device}:edits:0-9", "2026-11-01T00:00:03Z"),
                (f"{'C' * 26}:edits:0-4", "2026-11-01T00:00:04Z"),  # another device's name
                ("sha256-" + "0" * 64, "2026-11-01T00:00:05Z")]
        for batch_id, at in rows:
            conn.execute("INSERT INTO sync_batches (batch_id, device, received_at, records, "
                         "stored) VALUES (?, ?, ?, 1, 1)", (batch_id, device, at))
        conn.execute("DELETE FROM sync_cursors")
        seed_sync_cursors(conn)
        assert server.sync.server.view(device)["acked"] == {"messages": 733, "edits": 9}


# ---- the property: whatever happens, every record of the honest device arrives once ------
class Flaky(httpx.BaseTransport):
    """Real HTTP to the server, but a push may be lost on the way ("lose": the server never
    reads it) or its reply lost ("drop": the server stored the batch, the device hears
    nothing), one fault per push in order."""

    def __init__(self, faults: list[str]) -> None:
        self.inner = httpx.HTTPTransport()
        self.faults = list(faults)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        fault = self.faults.pop(0) if request.url.path.endswith("/push") and self.faults else "ok"
        if fault == "lose":
            raise httpx.ConnectError("the connection was cut before the server read the batch")
        response = self.inner.handle_request(request)
        if fault == "drop":
            response.read()
            response.close()
            raise httpx.ReadError("the connection was cut before the reply arrived")
        return response

    def close(self) -> None:
        self.inner.close()


def activity(lore: Lore, turns: int, n_edits: int, titles: dict[str, str]) -> None:
    """A session of ``turns`` turns with as many corrections and ``n_edits`` edits, every id
    random as the agent's are."""
    import uuid

    sid = str(uuid.uuid4())
    uuids = [str(uuid.uuid4()) for _ in range(turns)]
    with lore.store.atomic():
        for i in range(turns):
            lore.store.corrections.add_correction(
                event_id=str(uuid.uuid4()), session_id=sid, project="/srv/app",
                user_message=f"no, not that, {sid[:8]} {i}", proposal="I will", files=[],
                at="2026-11-01T10:00:00.000Z", origin="hook")
    titles[sid] = f"session {sid[:8]}"
    lore.conversations.add_turns(sid, "claude-code", "/srv/app", [
        (u, "user" if i % 2 else "assistant", f"turn {i} of {sid[:8]}", None)
        for i, u in enumerate(uuids)], title=titles[sid])
    lore.conversations.record_edits(sid, "/srv/app", None, [
        FileEdit(sid, uuids[0], "Edit", f"/srv/app/{sid[:8]}.py", "a = 0", f"a = {k}")
        for k in range(n_edits)])


EXAMPLES = int(os.environ.get("LORE_SYNC_EXAMPLES", "30"))
OPS = st.one_of(
    st.tuples(st.just("capture"), st.integers(1, 9), st.integers(0, 3)),
    st.tuples(st.just("lesson"), st.booleans()),
    st.tuples(st.just("sync"), st.integers(1, 8),
              st.lists(st.sampled_from(["ok", "lose", "drop"]), max_size=5)),
    st.just(("reset",)), st.just(("backup",)), st.just(("restore",)),
    st.tuples(st.just("hostile"), st.sampled_from(
        ["as_a", "lesson_device", "lesson_id", "far_future", "not_a_date", "session", "edit_id"])),
)


def lessons_of(lore: Lore) -> list:
    return [lore.lessons.get(b["id"]) for b in lore.lessons.list(limit=10_000)[1]]


def attack(url: str, token_b: str, device_a: str, device_b: str, server: Lore, how: str) -> None:
    """B, with its own write token, forges against what the server holds of A (what B can
    read); each forgery is refused whole, or left out."""
    from lore.core.sync.records import edit_id

    q = server.store.conn.execute  # type: ignore[attr-defined]
    sessions = [r[0] for r in q("SELECT id FROM sessions WHERE device = ? ORDER BY id",
                                (device_a,))]
    lesson = next(iter(q("SELECT id FROM lessons ORDER BY id LIMIT 1")), None)
    later = {"title": "B's version", "content": "forged", "status": "active",
             "updated_at": "2026-11-20T00:00:00.000Z"}
    if how == "as_a":
        records = [{"kind": "correction", "id": "forged-1",
                    "data": {"user_message": "forged", "at": "2026-11-01T10:00:00Z"}}]
        answer = forge(url, token_b, device_a, records, stream="corrections", end=10**6)
        assert answer.status_code == 403, answer.text
        return
    if how == "session":
        if not sessions:
            return
        sid = sessions[0]
        edit = {"session_id": sid, "message_uuid": "forged", "tool": "Edit",
                "file_path": "/etc/passwd", "old_text": "a", "new_text": "b"}
        answer = forge(url, token_b, device_b, [
            {"kind": "session", "id": sid, "data": {"id": sid, "agent": "x", "title": "forged"}},
            {"kind": "message", "id": f"forged-{sid}", "data": {
                "session_id": sid, "role": "user", "text": "forged"}},
            {"kind": "edit", "id": edit_id(edit), "data": edit}], stream="messages")
        assert answer.status_code == 200 and answer.json()["stored"] == 0, answer.text
        assert answer.json()["refused"] == 3
        return
    if how == "edit_id":
        row = next(iter(q("SELECT e.session_id, message_uuid, file_path, old_text, new_text "
                          "FROM file_edits e JOIN sessions s ON s.id = e.session_id "
                          "WHERE s.device = ? LIMIT 1", (device_a,))), None)
        if row is None:
            return
        data = {**dict(row), "tool": "Edit", "new_text": "forged"}
        answer = forge(url, token_b, device_b, [
            {"kind": "edit", "id": edit_id(dict(row)), "data": data}], stream="edits")
        assert answer.status_code == 422, answer.text
        return
    if lesson is None:
        return
    lid = lesson[0]
    record = {"kind": "lesson", "id": lid, "device": device_b, "data": {**later, "id": lid}}
    if how == "lesson_device":
        record["device"] = device_a
    elif how == "lesson_id":
        record["id"] = "01JAAAAAAAAAAAAAAAAAAAAAAA"
    elif how == "far_future":
        record["data"]["updated_at"] = "9999-12-31T23:59:59.999Z"
    else:
        record["data"]["updated_at"] = "not a date"
    answer = forge(url, token_b, device_b, [record])
    assert answer.status_code == 422, answer.text


def test_every_record_of_the_honest_device_arrives_once_and_nothing_forged(tmp_path_factory):
    """Random activity, database resets, restores from older backups, batch sizes, lost
    requests and lost replies, and a hostile second device with its own write token: after a
    last clean sync the server holds every record the device held at any completed sync (and
    none it never held), each once, its sessions as it named them, no lesson version of
    another device under its name, no date that wins every conflict."""
    root = tmp_path_factory.mktemp("property")
    with Lore.open(make_settings(root / "server"), embedder=FakeEmbedder()) as server:
        with running(server, require_token=True) as url:
            count = [0]

            @settings(max_examples=EXAMPLES, deadline=None,
                      suppress_health_check=[HealthCheck.too_slow])
            @given(ops=st.lists(OPS, min_size=2, max_size=14))
            def check(ops: list[tuple]) -> None:
                count[0] += 1
                home = root / f"run-{count[0]}"
                _, token_a = server.tokens.create("write", f"a{count[0]}")
                _, token_b = server.tokens.create("write", f"b{count[0]}")
                a = Lore.open(make_settings(home / "a"), embedder=FakeEmbedder())
                b = Lore.open(make_settings(home / "b"), embedder=FakeEmbedder())
                try:
                    run_example(server, url, a, b, token_a, token_b, ops, home)
                finally:
                    b.close()

            def run_example(server, url, a, b, token_a, token_b, ops, home) -> None:
                device_a, device_b = a.sync.device_id(), b.sync.device_id()
                capture(b, 1, session=f"b-{device_b}")
                assert sync(b, url, token_b).stored == 4  # B's token is B's
                ever = held_ids(a)
                acked = {k: set() for k in ever}
                lessons_ever: set[str] = set()
                lessons_acked: dict[str, str] = {}
                titles: dict[str, str] = {}
                backups: list[Path] = []

                def note(into: dict[str, set[str]]) -> None:
                    for kind, ids in held_ids(a).items():
                        into[kind] |= ids

                def completed() -> None:
                    note(acked)
                    for lesson in lessons_of(a):
                        if lesson.updated_at >= lessons_acked.get(lesson.id, ""):
                            lessons_acked[lesson.id] = lesson.updated_at

                try:
                    for op in ops:
                        if op[0] == "capture":
                            activity(a, op[1], op[2], titles)
                            note(ever)
                        elif op[0] == "lesson":
                            mine = lessons_of(a)
                            if op[1] and mine:
                                a.lessons.update(mine[0].id, content=f"edited {len(ops)}")
                            else:
                                made = a.lessons.add(f"Rule {len(lessons_ever)} of {device_a}",
                                                    "Prefer the small change.", status="active")
                                lessons_ever.add(made.id)
                        elif op[0] == "sync":
                            client = Client(url, token_a, timeout=30, transport=Flaky(op[2]))
                            try:
                                run(a.sync, client, batch_size=op[1])
                                completed()
                            except BackendUnavailable:
                                pass  # a cut connection: the next sync resumes
                            finally:
                                client.close()
                        elif op[0] == "reset":
                            a = reopen(a)
                        elif op[0] == "backup":
                            backups.append(backup(a, home / f"backup-{len(backups)}.db"))
                        elif op[0] == "restore" and backups:
                            a = reopen(a, backups[-1])
                        elif op[0] == "hostile":
                            attack(url, token_b, device_a, device_b, server, op[1])
                    assert a.sync.device_id() == device_a
                    report = sync(a, url, token_a, batch_size=5)
                    completed()
                    assert a.sync.status()["pending_total"] == 0, report
                    on_server = pushed_ids(server, device_a)
                    for kind in ("correction", "session", "message", "edit"):
                        assert acked[kind] <= on_server[kind], kind  # nothing lost
                        assert on_server[kind] <= ever[kind] | acked[kind], kind  # none forged
                    q = server.store.conn.execute  # type: ignore[attr-defined]
                    sids = list(on_server["session"])
                    marks = ",".join("?" * len(sids)) or "''"
                    rows = {t: int(q(f"SELECT count(*) FROM {t} WHERE session_id IN ({marks})",
                                     sids).fetchone()[0]) for t in ("messages", "file_edits")}
                    assert rows == {"messages": len(on_server["message"]),  # each once
                                    "file_edits": len(on_server["edit"])}
                    assert int(q("SELECT count(*) FROM corrections WHERE device = ?",
                                 (device_a,)).fetchone()[0]) == len(on_server["correction"])
                    for sid in sids:  # named as A named them, never renamed
                        assert server.store.conversations.session(sid)["title"] == titles[sid]
                    for lid, updated_at in lessons_acked.items():
                        held = server.lessons.get(lid)
                        assert held.updated_at >= updated_at and held.content != "forged"
                    assert all(sane(lesson.updated_at) for lesson in lessons_of(server))
                    assert server.store.sync.record_count(device_b) == 4  # B's own, no more
                finally:
                    a.close()

            check()


def test_the_cli_says_when_a_device_is_behind_the_server(homes, run_cli, monkeypatch):
    a, _, server = homes
    capture(a, 3)
    monkeypatch.setenv("LORE_HOME", str(a.settings.home))
    with running(server) as url:
        assert run_cli("sync", "--server", url).exit_code == 0
        a = reopen(a)
        try:
            capture(a, 2, start=10, session="s-2")
        finally:
            a.close()
        out = run_cli("sync", "--server", url, "--json")
        assert out.exit_code == 0, out.output
        shown = json.loads(out.stdout)
        assert shown["stored"] == 2 + 2 + 1 + 1 and set(shown["behind"]) >= {"corrections"}
        out = run_cli("sync", "--server", url)
        assert out.exit_code == 0 and "behind" not in out.output  # caught up
    assert len(pushed_ids(server, a.sync.device_id())["correction"]) == 5


def test_a_lesson_with_an_unbelievable_date_is_left_out_and_named(homes):
    """A device's own lesson dated 9999 (an import, a clock far ahead) would be refused by the
    server and stop the stream: the device leaves it out, names it, and sends the others."""
    a, _, server = homes
    bad = a.lessons.add("Dated far ahead", "An imported lesson.", status="active")
    good = a.lessons.add(RULE["title"], RULE["content"], status="active")
    a.store.conn.execute("UPDATE lessons SET updated_at = '9999-01-01T00:00:00.000Z' "  # type: ignore[attr-defined]
                         "WHERE id = ?", (bad.id,))
    with running(server) as url:
        report = sync(a, url)
        assert report.skipped == [bad.id] and report.pushed == {"lessons": 1}
        assert report.to_dict()["skipped"] == [bad.id]
    assert server.store.existing_ids([bad.id, good.id]) == {good.id}


def test_a_server_on_postgres_binds_devices_and_keeps_its_view(tmp_path, pg_url):
    """The same guarantees with the server's memory in Postgres: a token pushes for its own
    device only, a reset device's new records arrive, forged dates are refused, and the view
    is seeded from protocol 2 batch ids."""
    from lore.store.sqlite.migrations import seed_sync_cursors  # Postgres runs the same

    a, b = (Lore.open(make_settings(tmp_path / n), embedder=FakeEmbedder()) for n in ("a", "b"))
    server = Lore.open(make_settings(tmp_path / "server", database=pg_url),
                       embedder=FakeEmbedder())
    try:
        _, token_a = server.tokens.create("write", "a")
        _, token_b = server.tokens.create("write", "b")
        device_a, device_b = a.sync.device_id(), b.sync.device_id()
        lesson = a.lessons.add(RULE["title"], RULE["content"], status="active")
        capture(a, 4)
        with running(server, require_token=True) as url:
            sync(a, url, token_a, batch_size=3)
            capture(b, 1, session="s-b")
            sync(b, url, token_b)
            a = reopen(a)
            capture(a, 3, start=10, session="s-2")
            edits(a, "s-2", 2, start=10)
            batch = a.sync.next_batch("corrections", 100)
            assert batch is not None
            stolen = forge(url, token_b, device_a, batch.records, stream="corrections",
                           after=batch.after, end=batch.end, batch_id=batch.batch_id)
            assert stolen.status_code == 403, stolen.text
            dated = forge(url, token_b, device_b, [{
                "kind": "lesson", "id": lesson.id, "device": device_b, "data": {
                    **lesson.to_dict(), "updated_at": "9999-12-31T00:00:00.000Z"}}])
            assert dated.status_code == 422, dated.text
            report = sync(a, url, token_a, batch_size=2)
            assert report.behind and report.stored == 3 + 3 + 1 + 3
        q = server.store.conn.execute  # type: ignore[attr-defined]
        assert int(q("SELECT count(*) FROM corrections WHERE device = ?",
                     (device_a,)).fetchone()[0]) == 7
        assert server.lessons.get(lesson.id).updated_at == lesson.updated_at
        assert set(server.sync.server.view(device_a)["acked"]) == {"lessons", "corrections",
                                                              "messages", "edits"}
        with server.store.atomic():
            q("DELETE FROM sync_cursors")
            q("INSERT INTO sync_batches (batch_id, device, received_at, records, stored) "
              "VALUES (?, ?, '2026-11-01T00:00:00Z', 1, 1)", (f"{device_a}:edits:4-17", device_a))
            seed_sync_cursors(server.store.conn)  # type: ignore[attr-defined]
        assert server.sync.server.view(device_a)["acked"] == {"edits": 17}
    finally:
        for lore in (a, b, server):
            lore.close()


def test_a_pull_cursor_the_restored_server_does_not_know_starts_again(tmp_path):
    """B's pull cursor points into the change log of a server that was since restored from
    an older backup and wrote other changes at those positions: the server sees that the
    change at the cursor is not the one B saw, answers from the beginning, and B misses
    nothing (a lesson written on the server itself, and A's)."""
    a, b = (Lore.open(make_settings(tmp_path / n), embedder=FakeEmbedder()) for n in ("a", "b"))
    server = Lore.open(make_settings(tmp_path / "server"), embedder=FakeEmbedder())
    try:
        first = a.lessons.add("Prefer uv", "Install with uv.", status="active")
        with running(server) as url:
            sync(a, url)
            sync(b, url)
            old = backup(server, tmp_path / "server-old.db")
            second = a.lessons.add("Pin numpy below 2", "numpy 2 broke the build.",
                                  status="active")
            sync(a, url)
            assert sync(b, url).merge.added == 1
        server = reopen(server, old)
        own = server.lessons.add("Run the tests with -x", "Stop at the first failure.",
                                status="active")
        with running(server) as url:
            third = a.lessons.add("Prefer pathlib", "Not os.path.", status="active")
            assert set(sync(a, url).resent) >= {"lessons"}  # the server lacked `second`
            report = sync(b, url)
            assert report.resent.get("pull") and report.merge.added == 2
        assert b.store.existing_ids([first.id, second.id, own.id, third.id]) == {
            first.id, second.id, own.id, third.id}
    finally:
        for lore in (a, b, server):
            lore.close()


@pytest.mark.parametrize(("kind", "data", "named"), [
    ("session", {"id": "s-b"}, "agent"),
    ("message", {"session_id": "s-b", "role": "user"}, "text"),
    ("message", {"session_id": "s-b", "role": "user", "text": 3}, "text"),
    ("edit", {"session_id": "s-b", "tool": "Edit", "file_path": "a.py"}, "message_uuid"),
    ("correction", {"user_message": "no, use pnpm"}, "at"),
])
def test_a_record_without_what_the_receiver_stores_is_one_line(kind, data, named):
    # The server's request models check these too; the library refuses them for any caller.
    from lore.core.sync.records import check_record

    with pytest.raises(InvalidInput, match=f"{kind} record r-1 lacks {named}"):
        check_record("dev-b", {"kind": kind, "id": "r-1", "data": data})


def test_a_lesson_dated_hours_ahead_is_clamped_to_the_servers_clock(guarded):
    """A forged push: B's version of a lesson dated 23 hours ahead (inside the day the date
    check allows). The server stores it at its own now and says so in its answer, so A's
    real edit a moment later still wins the conflict; a retry of the same batch is the same
    record (nothing stored twice)."""
    from datetime import UTC, datetime, timedelta

    a, b, server, url, token_a, token_b = guarded
    device_b = b.sync.device_id()
    lesson = a.lessons.add(RULE["title"], RULE["content"], kind="preference", status="active")
    sync(a, url, token_a)
    ahead = (datetime.now(UTC) + timedelta(hours=23)).isoformat(timespec="milliseconds")
    forged = {**lesson.to_dict(), "content": "B's forged content", "updated_at": ahead,
              "created_at": ahead}
    records = [{"kind": "lesson", "id": lesson.id, "device": device_b, "data": forged}]
    before = datetime.now(UTC)
    answer = forge(url, token_b, device_b, records)
    assert answer.status_code == 200, answer.text
    got = answer.json()
    assert got["stored"] == 1 and got["clamped"] == 1
    assert 22.9 * 3600 < got["ahead"] <= 23 * 3600, got
    stored = server.lessons.get(lesson.id)
    assert stored.content == "B's forged content"
    stamp = datetime.fromisoformat(stored.updated_at.replace("Z", "+00:00"))
    assert before - timedelta(seconds=1) <= stamp <= datetime.now(UTC)  # the server's now
    again = forge(url, token_b, device_b, records)
    assert again.json()["repeated"] is True and again.json()["stored"] == 0
    a.lessons.update(lesson.id, content="A's real edit")
    sync(a, url, token_a)
    assert server.lessons.get(lesson.id).content == "A's real edit"
    # A date within the tolerance is kept as it was sent; a creation ahead of a clamped
    # change is not left after it.
    near = (datetime.now(UTC) + timedelta(minutes=2)).isoformat(timespec="milliseconds")
    other = b.lessons.add("Prefer ruff over flake8", "Lint with ruff.", status="active")
    data = {**other.to_dict(), "updated_at": near}
    answer = forge(url, token_b, device_b, [{"kind": "lesson", "id": other.id,
                                             "device": device_b, "data": data}])
    assert answer.json()["clamped"] == 0
    assert server.lessons.get(other.id).updated_at == near
    third = b.lessons.add("Prefer uv over pip", "Install with uv.", status="active")
    data = {**third.to_dict(), "created_at": near, "updated_at": ahead}
    answer = forge(url, token_b, device_b, [{"kind": "lesson", "id": third.id,
                                             "device": device_b, "data": data}])
    assert answer.json()["clamped"] == 1
    stored = server.lessons.get(third.id)
    assert stored.created_at <= stored.updated_at < near


def test_a_device_whose_clock_runs_ahead_is_told(guarded, tmp_path):
    """A device's own lesson written with its clock an hour ahead: `lore sync` reports the
    clamped date, `lore sync --status` keeps saying so until a sync finds nothing wrong."""
    from datetime import UTC, datetime, timedelta

    from click.testing import CliRunner

    from lore.cli import cli

    a, _, server, url, token_a, _ = guarded
    lesson = a.lessons.add("Use uv to install packages", "Run uv pip install.", status="active")
    ahead = (datetime.now(UTC) + timedelta(hours=1)).isoformat(timespec="milliseconds")
    a.store.conn.execute("UPDATE lessons SET updated_at = ? WHERE id = ?",  # type: ignore[attr-defined]
                         (ahead, lesson.id))
    a.store.conn.commit()  # type: ignore[attr-defined]
    report = sync(a, url, token_a)
    assert report.clamped == 1 and report.skew == 0.0  # the machine's clock itself agrees
    problem = report.clock_problem()
    assert problem and "set 1 lesson date up to 60 minutes ahead" in problem
    assert a.sync.status()["clock"]["problem"] == problem
    assert server.lessons.get(lesson.id).updated_at < ahead
    env = {"LORE_HOME": str(a.settings.home), "LORE_DB": str(a.settings.db_location)}
    out = CliRunner().invoke(cli, ["sync", "--status"], env=env)
    assert out.exit_code == 0 and "clock      " + problem in out.output, out.output
    a.lessons.update(lesson.id, content="Run uv pip install, never pip.")  # this clock's now
    assert sync(a, url, token_a).clock_problem() is None
    assert a.sync.status()["clock"] is None


@given(st.integers(-10**6, 10**6), st.integers(0, 5))
def test_clock_skew_from_the_date_header(offset, trip):
    """The Date header's time against the request's round trip: within it (its one-second
    resolution after it, five seconds of a late-renewed cached header before it) no skew;
    outside, the distance to the nearer end."""
    from datetime import UTC, datetime, timedelta
    from email.utils import format_datetime

    from lore.core.sync.client import clock_skew

    sent = datetime(2026, 11, 28, 9, 0, 0, tzinfo=UTC)
    received = sent + timedelta(seconds=trip)
    theirs = sent + timedelta(seconds=offset)
    skew = clock_skew(format_datetime(theirs, usegmt=True), sent, received)
    assert skew is not None
    if -5 <= offset <= trip + 1:
        assert skew == 0.0
    elif offset < 0:
        assert skew == -offset
    else:
        assert skew == -(offset - trip)
    assert clock_skew("not a date", sent, received) is None
    assert clock_skew(None, sent, received) is None
