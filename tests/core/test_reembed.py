"""Re-embedding after a model change: lessons and chunks, a batch a transaction, resumable,
never two models' vectors side by side; doctor and status say when it is needed or half done."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from conftest import FakeEmbedder, make_settings
from lore.api import Lore
from lore.cli import cli
from lore.core.reembed import STARTED, reembed
from lore.errors import BackendUnavailable, EmbeddingMismatch

SRC = str(Path(__file__).resolve().parents[2] / "src")
WORDS = ("redis postgres queue deploy cache retry timeout pool socket schema index worker "
         "token login build docker python rust lint typing parser").split()


def fill(lore: Lore, lessons: int, chunks: int) -> None:
    """Lessons and one-turn chunks with varied words, embedded by the model ``lore`` holds."""
    for i in range(lessons):
        lore.lessons.add(f"Lesson {i}: {WORDS[i % len(WORDS)]} and {WORDS[(i * 7) % len(WORDS)]}",
                        f"Always check the {WORDS[(i * 3) % len(WORDS)]} before the "
                        f"{WORDS[(i * 5) % len(WORDS)]} (case {i})")
    turns = [(f"u{i}", "user" if i % 2 else "assistant",
              f"turn {i} about the {WORDS[i % len(WORDS)]} {WORDS[(i * 11) % len(WORDS)]} "
              f"and why the {WORDS[(i * 13) % len(WORDS)]} failed",
              f"2026-10-{1 + i % 28:02d}T10:{i % 60:02d}:00Z") for i in range(chunks)]
    if turns:
        lore.conversations.add_turns("s1", "test", "/p", turns, per_turn=True)
        lore.conversations.embed_pending()


def vectors(db: Path) -> dict[str, dict[int, bytes]]:
    conn = sqlite3.connect(db)
    try:
        return {"lessons": dict(conn.execute("SELECT seq, embedding FROM lesson_vectors")),
                "chunks": dict(conn.execute("SELECT chunk_id, embedding FROM chunk_vectors"))}
    finally:
        conn.close()


def meta(db: Path, key: str) -> str | None:
    conn = sqlite3.connect(db)
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None
    finally:
        conn.close()


class Interrupt:
    """A progress callback that presses Ctrl-C once ``after`` items are stored."""

    def __init__(self, after: int) -> None:
        self.after = after
        self.seen: list[tuple[int, int]] = []

    def __call__(self, done: int, total: int) -> None:
        self.seen.append((done, total))
        if done >= self.after:
            raise KeyboardInterrupt


def test_model_change_reembeds_lessons_and_chunks(settings):
    with Lore.open(settings, embedder=FakeEmbedder("model-a", 64)) as lore:
        fill(lore, 5, 12)
    with Lore.open(settings, embedder=FakeEmbedder("model-b", 32)) as lore:
        assert lore.admin.embedding_state()["state"] == "needed"
        heard: list[tuple[int, int]] = []
        report = lore.admin.reembed(progress=lambda d, t: heard.append((d, t)))
        assert (report.lessons, report.chunks, report.restarted) == (5, 12, True)
        assert report.complete and heard[-1] == (17, 17)
        assert lore.admin.stored_model() == ("model-b", 32)
        assert lore.admin.embedding_state()["state"] == "ok"
        assert lore.store.meta(STARTED) is None
        hits = lore.conversations.search("redis", mode="vector", project=None, limit=3)
        assert hits  # the chunks are searched by meaning again, with the new model
    got = vectors(settings.db_path)
    assert len(got["lessons"]) == 5 and len(got["chunks"]) == 12
    assert {len(b) for part in got.values() for b in part.values()} == {32 * 4}


def test_interrupted_run_keeps_batches_searches_one_model_and_resumes(settings):
    with Lore.open(settings, embedder=FakeEmbedder("model-a", 64)) as lore:
        fill(lore, 6, 20)
    new = FakeEmbedder("model-b", 32)
    with Lore.open(settings, embedder=new) as lore:
        stop = Interrupt(after=6 + 8)  # the lessons and two batches of chunks
        with pytest.raises(KeyboardInterrupt):
            reembed(lore.store, lore.engine.embedding, lore.conversations, progress=stop, batch=4)
        state = lore.admin.embedding_state()
        assert state["state"] == "half done"
        assert state["missing"] == {"lessons": 0, "chunks": 12}
        assert state["started"]["from"] == "model-a" and state["started"]["to"] == "model-b"
        # Only vectors of the new model are left: 8 chunks searched by meaning, the rest by words.
        stored = vectors(settings.db_path)
        assert len(stored["chunks"]) == 8
        assert {len(b) for part in stored.values() for b in part.values()} == {32 * 4}
        by_meaning = lore.conversations.search("turn redis", mode="vector", project=None,
                                               limit=50)
        assert {h.chunk_id for h in by_meaning} <= set(stored["chunks"])
        by_words = lore.conversations.search("turn", mode="hybrid", project=None, limit=50)
        assert len(by_words) == 20  # every chunk is still found by its keywords
        assert lore.search.query("Lesson check", track=False)  # lessons search with the new model
        done = reembed(lore.store, lore.engine.embedding, lore.conversations, batch=4)
        assert (done.lessons, done.chunks, done.resumed, done.restarted) == (0, 12, True, False)
        assert lore.admin.embedding_state()["state"] == "ok"
        assert lore.store.meta(STARTED) is None
    assert vectors(settings.db_path)["chunks"].keys() == stored["chunks"].keys() | set(
        range(min(stored["chunks"]), min(stored["chunks"]) + 20))


@hsettings(max_examples=12, deadline=None,
           suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lessons=st.integers(0, 7), chunks=st.integers(0, 9), batch=st.integers(1, 5),
       stop_at=st.integers(1, 16), force=st.booleans())
def test_any_interruption_then_resume_equals_one_run(tmp_path_factory, lessons, chunks, batch,
                                                     stop_at, force):
    base = tmp_path_factory.mktemp("base")
    first = make_settings(base)
    with Lore.open(first, embedder=FakeEmbedder("model-a", 16)) as lore:
        fill(lore, lessons, chunks)
    model = "model-a" if force else "model-b"
    homes = []
    for name in ("once", "twice"):
        home = tmp_path_factory.mktemp(name)
        shutil.copy(first.db_path, home / "lore.db")
        homes.append(make_settings(home))
    with Lore.open(homes[0], embedder=FakeEmbedder(model, 24)) as lore:
        reembed(lore.store, lore.engine.embedding, lore.conversations, force=force, batch=batch)
    with Lore.open(homes[1], embedder=FakeEmbedder(model, 24)) as lore:
        try:
            reembed(lore.store, lore.engine.embedding, lore.conversations, force=force, batch=batch,
                    progress=Interrupt(stop_at))
        except KeyboardInterrupt:
            pass
        reembed(lore.store, lore.engine.embedding, lore.conversations, batch=batch)  # no force: go on
        assert lore.admin.embedding_state()["state"] == "ok"
    assert vectors(homes[0].db_path) == vectors(homes[1].db_path)
    for key in ("embedding_model", "embedding_dimensions", STARTED):
        assert meta(homes[0].db_path, key) == meta(homes[1].db_path, key)


class Broken(FakeEmbedder):
    def embed_query(self, text):
        raise BackendUnavailable("cannot load embedding model 'model-b'")

    def embed_documents(self, texts):
        raise BackendUnavailable("cannot load embedding model 'model-b'")


def test_a_model_that_cannot_load_changes_nothing(settings):
    with Lore.open(settings, embedder=FakeEmbedder("model-a", 64)) as lore:
        fill(lore, 3, 4)
    before = vectors(settings.db_path)
    with Lore.open(settings, embedder=Broken("model-b", 32)) as lore:
        with pytest.raises(BackendUnavailable):
            lore.admin.reembed()
        assert lore.admin.stored_model() == ("model-a", 64)
        assert lore.store.meta(STARTED) is None
    assert vectors(settings.db_path) == before


def test_nothing_to_do_is_quick_and_complete(settings):
    emb = FakeEmbedder("model-a", 64)
    with Lore.open(settings, embedder=emb) as lore:
        fill(lore, 2, 3)
        emb.calls.clear()
        report = lore.admin.reembed()
        assert (report.total, report.restarted, report.complete) == (0, False, True)
        assert emb.calls == []


def test_cli_reports_json_and_stays_quiet_without_a_terminal(lore_home):
    model = FakeEmbedder("model-a", 64)
    with Lore.open(make_settings(lore_home), embedder=model) as lore:
        fill(lore, 2, 5)
    runner = CliRunner()
    out = runner.invoke(cli, ["admin", "reembed", "--force", "--json"],
                        obj={"embedder": FakeEmbedder("model-a", 64)})
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data == {"embedded": 7, "lessons": 2, "chunks": 5, "restarted": True,
                    "resumed": False, "complete": True, "model": "model-a", "dimensions": 64}
    assert out.stderr == ""  # no progress bar in a pipe
    plain = runner.invoke(cli, ["admin", "reembed"], obj={"embedder": model})
    assert plain.stderr.strip() == ("embedded 0 lessons and 0 conversation chunks with model-a")


def test_doctor_and_status_say_needed_then_half_done(lore_home):
    s = make_settings(lore_home)
    with Lore.open(s, embedder=FakeEmbedder("model-a", 64)) as lore:
        fill(lore, 2, 9)
    runner = CliRunner()
    new = FakeEmbedder("all-MiniLM-L6-v2", 24)  # the configured name: doctor loads no model

    def report() -> tuple[dict, str]:
        doctor = runner.invoke(cli, ["doctor", "--json"], obj={"embedder": new})
        check = next(c for c in json.loads(doctor.stdout) if c["check"] == "embeddings")
        status = runner.invoke(cli, ["status"], obj={"embedder": new})
        return check, status.stdout

    with Lore.open(s, embedder=new) as lore:
        lore.store.set_meta("embedding_model", "model-old")
    check, status = report()
    assert not check["ok"] and "model-old" in check["detail"]
    assert check["fix"] == "lore admin reembed" and "lore admin reembed" in status
    with Lore.open(s, embedder=new) as lore:
        with pytest.raises(KeyboardInterrupt):
            reembed(lore.store, lore.engine.embedding, lore.conversations, batch=3,
                    progress=Interrupt(2 + 3))
    check, status = report()
    assert check["ok"] and "half done" in check["detail"] and "6 conversation chunks" in (
        check["detail"])
    assert "half done" in status
    status_json = json.loads(runner.invoke(cli, ["status", "--json"],
                                           obj={"embedder": new}).stdout)
    assert status_json["embeddings"]["state"] == "half done"
    assert runner.invoke(cli, ["admin", "reembed"], obj={"embedder": new}).exit_code == 0
    check, status = report()
    assert check["ok"] and check["fix"] == "" and "Embeddings" not in status


# ---- a real process, killed mid-way ----------------------------------------------------

def run_reembed(home: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "LORE_HOME": str(home), "LORE_WORKER_AUTOSTART": "0",
           "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen([sys.executable, "-m", "lore", "admin", "reembed", "--json"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def chunk_vectors(db: Path) -> int:
    conn = sqlite3.connect(db, timeout=30)
    try:
        return int(conn.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0])
    finally:
        conn.close()


def new_chunk_vectors(db: Path) -> int:
    """Chunk vectors of the new model (0 while the old ones are still there)."""
    return chunk_vectors(db) if meta(db, STARTED) is not None else 0


@pytest.fixture(scope="module")
def one_run(tmp_path_factory) -> tuple[Path, Path]:
    """A database embedded by an old model (its home) and the same database after one
    uninterrupted `lore admin reembed` to the default model (its home): made once for the
    killed runs below, which each start from a copy of the first and must end as the second."""
    root = tmp_path_factory.mktemp("reembed")
    seed, once = root / "seed", root / "once"
    seed.mkdir()
    with Lore.open(make_settings(seed), embedder=FakeEmbedder("old-model", 48)) as lore:
        fill(lore, 10, 400)
    once.mkdir()
    shutil.copy(seed / "lore.db", once / "lore.db")
    proc = run_reembed(once)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert json.loads(out)["embedded"] == 410
    return seed, once


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_killed_process_resumes_to_the_state_of_one_run(tmp_path, how, one_run):
    """The real default model in a subprocess, killed after its first batches of chunks and
    run again, ends with the vectors an uninterrupted run stores."""
    seed, once = one_run
    homes = {"once": once, "killed": tmp_path / "killed"}
    homes["killed"].mkdir()
    shutil.copy(seed / "lore.db", homes["killed"] / "lore.db")

    db = homes["killed"] / "lore.db"
    proc = run_reembed(homes["killed"])
    try:
        deadline = time.monotonic() + 300
        while new_chunk_vectors(db) < 64 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert proc.poll() is None, "the run finished before it could be interrupted"
        proc.send_signal(how)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode in (-signal.SIGKILL, 130)
    kept = chunk_vectors(db)
    assert 64 <= kept < 400  # whole batches were kept, the rest is missing
    assert json.loads(meta(db, STARTED) or "{}").get("from") == "old-model"
    assert meta(db, "embedding_model") == "all-MiniLM-L6-v2"
    again = run_reembed(homes["killed"])
    out, err = again.communicate(timeout=600)
    assert again.returncode == 0, err
    second = json.loads(out)
    assert (second["resumed"], second["restarted"], second["complete"]) == (True, False, True)
    assert second["chunks"] == 400 - kept and second["lessons"] == 0

    want, got = vectors(homes["once"] / "lore.db"), vectors(db)
    for part in ("lessons", "chunks"):
        assert want[part].keys() == got[part].keys()
        a = np.vstack([np.frombuffer(want[part][k], dtype=np.float32) for k in sorted(want[part])])
        b = np.vstack([np.frombuffer(got[part][k], dtype=np.float32) for k in sorted(got[part])])
        assert a.shape[1] == 384
        np.testing.assert_allclose(a, b, atol=1e-5)  # batches pad differently, nothing more
    for key in ("embedding_model", "embedding_dimensions", "embedding_backend", STARTED):
        assert meta(homes["once"] / "lore.db", key) == meta(db, key)


def test_an_interrupted_reembed_on_postgres_resumes_to_one_model(pg_url, lore_home):
    """The same rules on a server's database: the old vectors go in one transaction, the
    batches stay, the next run ends the work."""
    s = make_settings(lore_home, database=pg_url)
    with Lore.open(s, embedder=FakeEmbedder("model-a", 64)) as lore:
        fill(lore, 4, 10)
    with Lore.open(s, embedder=FakeEmbedder("model-b", 32)) as lore:
        with pytest.raises(KeyboardInterrupt):
            reembed(lore.store, lore.engine.embedding, lore.conversations, batch=3,
                    progress=Interrupt(4 + 3))
        state = lore.admin.embedding_state()
        assert state["state"] == "half done" and state["missing"] == {"lessons": 0, "chunks": 7}
        hits = lore.conversations.search("turn redis", mode="vector", project=None, limit=20)
        assert len(hits) == 3  # only the re-embedded chunks are searched by meaning
        report = lore.admin.reembed()
        assert (report.chunks, report.resumed, report.complete) == (7, True, True)
        assert lore.admin.embedding_state()["state"] == "ok" and lore.admin.stored_model() == ("model-b", 32)
        assert len(lore.conversations.search("turn", mode="vector", project=None, limit=20)) == 10


def test_a_process_still_on_the_old_model_cannot_write_after_a_reembed_started(settings):
    """A worker that checked the model before the re-embed began stops at its next batch
    instead of storing old-model vectors beside the new ones."""
    with Lore.open(settings, embedder=FakeEmbedder("model-a", 64)) as lore:
        fill(lore, 2, 0)
        lore.conversations.add_turns("s1", "test", "/p", [
            (f"u{i}", "user", f"turn {i} about the queue", "2026-10-01T10:00:00Z")
            for i in range(9)], per_turn=True)
    old = Lore.open(settings, embedder=FakeEmbedder("model-a", 64))
    try:
        def switch(done: int, total: int) -> None:
            if done == 3:  # between two batches of the old process: the new model takes over
                with Lore.open(settings, embedder=FakeEmbedder("model-b", 32)) as new:
                    with pytest.raises(KeyboardInterrupt):
                        reembed(new.store, new.engine.embedding, new.conversations, batch=2,
                                progress=Interrupt(2 + 2))
        with pytest.raises(EmbeddingMismatch, match="model-b now"):
            old.conversations.embed_pending(switch, batch=3)
        with pytest.raises(EmbeddingMismatch):
            old.lessons.add("Another lesson", "by the old process")
    finally:
        old.close()
    stored = vectors(settings.db_path)
    assert {len(b) for part in stored.values() for b in part.values()} == {32 * 4}
    assert meta(settings.db_path, "embedding_model") == "model-b"
