"""`lore sync`: two device homes and a real `lore serve` on a loopback port (a third home).
Pushes, pulls, a connection cut in the middle of a push, retries, tampered batches, tokens."""

from __future__ import annotations

import json
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
from lore.core.sync import PROTOCOL, Client, batch_name, record_hash, run
from lore.errors import BackendUnavailable, ConfigError, InvalidInput
from server_util import running

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
    rule = a.add_lesson(RULE["title"], RULE["content"],
                        **{k: v for k, v in RULE.items() if k not in ("title", "content")})
    proposed = a.add_lesson("Maybe prefer tabs", "Unreviewed guess.", kind="preference",
                            status="proposed")
    capture(a, 5)
    with running(server) as url:
        report = sync(a, url)
        assert report.pushed == {"lessons": 2, "corrections": 5, "messages": 5, "edits": 1}
        assert sync(b, url).merge.added == 1  # only what a person decided travels back
    counts = server_counts(server)
    assert counts["corrections"] == 5 and counts["messages"] == 5 and counts["edits"] == 1
    assert counts["lessons"] == 2
    pulled = b.get_lesson(rule.id)
    assert pulled.title == rule.title and pulled.updated_at == rule.updated_at
    assert pulled.preference.preferred == "uv pip install" and pulled.tags == rule.tags
    with pytest.raises(Exception, match="no lesson"):
        b.get_lesson(proposed.id)
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
    a.add_lesson(RULE["title"], RULE["content"], kind="preference", status="active")
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
                        "repeated": False}
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
    a.add_lesson(RULE["title"], RULE["content"], kind="preference", status="active")
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
    lesson = a.add_lesson(RULE["title"], RULE["content"], kind="preference", status="active")
    with running(server) as url:
        sync(a, url)
        sync(b, url)
        a.update_lesson(lesson.id, content="A says: use uv for installs.")
        b.update_lesson(lesson.id, content="B says: use uv and lock with uv.lock.")  # later
        sync(a, url)
        report = sync(b, url)
        assert report.merge.conflicts == 0  # the server took B's newer version
        assert sync(a, url).merge.conflicts == 1  # A's own edit lost to B's newer one
    for lore in (a, b, server):
        assert lore.get_lesson(lesson.id).content == "B says: use uv and lock with uv.lock."
    history = server.store.sync.history(lesson.id)
    assert [h["outcome"] for h in history] == ["replaced"]
    assert history[0]["data"]["content"] == "A says: use uv for installs."
    assert history[0]["device"] == a.sync.device_id()
    assert a.store.sync.history(lesson.id)[0]["data"]["content"] == "A says: use uv for installs."


def test_merge_ties_go_to_the_greater_device(tmp_path):
    with Lore.open(make_settings(tmp_path / "x"), embedder=FakeEmbedder()) as x:
        lesson = x.add_lesson("Prefer ruff", "Lint with ruff.", status="active")
        data = lesson.to_dict()
        low, high = "0" * 26, "Z" * 26
        tie = {**data, "content": "from the low device"}
        assert x.sync.merge([(low, tie)]).conflicts == 1
        mine = x.sync.device_id()
        assert x.get_lesson(lesson.id).content == ("from the low device" if low > mine
                                                   else "Lint with ruff.")
        x.sync.merge([(high, {**data, "content": "from the high device"})])
        assert x.get_lesson(lesson.id).content == "from the high device"
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
    out = run_cli("sync", "status", "--json")
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
            server.sync.receive(device, batch)
            if retries[n % len(retries)]:
                server.sync.receive(device, batch)                   # the same batch again
                server.sync.receive(device, {**batch, "records": part[::-1],  # re-cut
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
        rule = a.add_lesson(RULE["title"], RULE["content"],
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
        assert b.get_lesson(rule.id).title == rule.title
        assert server.conversations.search("helper", mode="keyword", project="/srv/app")
    finally:
        for lore in (a, b, server):
            lore.close()


def test_a_deletion_travels_and_does_not_come_back(homes):
    """A deletes a lesson both devices hold: the server and B delete it too, and A's next
    sync does not bring it back; nothing is pushed twice."""
    a, b, server = homes
    lesson = a.add_lesson(RULE["title"], RULE["content"], kind="preference", status="active")
    kept = a.add_lesson("Pin numpy below 2", "numpy 2 broke the build", status="active")
    with running(server) as url:
        sync(a, url)
        assert sync(b, url).merge.added == 2
        a.delete_lesson(lesson.id)
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
    assert server.store.sync.history(lesson.id) == []


def test_an_edit_later_than_a_deletion_wins_and_an_earlier_one_loses(homes):
    """The rule of edits holds for deletions: the later of the two wins, everywhere, and the
    loser is kept in the history."""
    a, b, server = homes
    first = a.add_lesson(RULE["title"], RULE["content"], kind="preference", status="active")
    second = a.add_lesson("Pin numpy below 2", "numpy 2 broke the build", status="active")
    with running(server) as url:
        sync(a, url)
        sync(b, url)
        # first: B edits after A deleted it; second: B edits before A deletes it.
        b.update_lesson(second.id, content="numpy 2 broke the build; pin <2 until the fix")
        a.delete_lesson(first.id)
        a.delete_lesson(second.id)
        b.update_lesson(first.id, content="B still wants this rule, edited after the deletion")
        sync(a, url)
        report = sync(b, url)
        assert report.merge.deleted == 1 and report.merge.conflicts >= 1
        assert sync(a, url).merge.added == 1
    for lore in (a, b, server):
        assert lore.store.existing_ids([first.id, second.id]) == {first.id}, lore.settings.home
        assert lore.get_lesson(first.id).content.startswith("B still wants")
    outcomes = {h["lesson_id"]: h for h in server.store.sync.history(first.id)
                + server.store.sync.history(second.id)}
    assert outcomes[first.id]["data"].get("deleted") and outcomes[first.id]["outcome"] == "replaced"
    assert outcomes[second.id]["data"]["content"].endswith("pin <2 until the fix")
    assert outcomes[second.id]["outcome"] == "refused"
