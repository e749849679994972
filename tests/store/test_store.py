"""The database file: migrations, PRAGMAs, permissions, refusal of foreign files."""

from __future__ import annotations

import os
import sqlite3 as stdlib_sqlite3
import stat

import pytest

from lore.api import Lore
from lore.errors import MigrationError, NotALoreDatabase
from lore.store.sqlite import SCHEMA_VERSION, connect, migrate
from lore.store.sqlite.migrations import MIGRATIONS, numbers


def test_blank_database_gets_every_migration(settings):
    with Lore.open(settings) as lore:
        rows = lore.store.conn.execute("SELECT version, name FROM schema_migrations").fetchall()
        assert [r[0] for r in rows] == numbers()
        assert rows[0][1] == "m001_core"
        assert lore.store.meta("app") == "lore"


def test_reopening_runs_nothing(settings):
    Lore.open(settings).close()
    conn = connect(settings.db_path)
    assert migrate(conn) == 0
    conn.close()


def test_pragmas(settings):
    with Lore.open(settings) as lore:
        q = lore.store.conn.execute
        assert q("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert q("PRAGMA foreign_keys").fetchone()[0] == 1
        assert q("PRAGMA busy_timeout").fetchone()[0] >= 1000
        assert q("SELECT vec_version()").fetchone()[0].startswith("v")


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_database_file_is_private(settings):
    Lore.open(settings).close()
    assert stat.S_IMODE(settings.db_path.stat().st_mode) == 0o600


def test_newer_database_is_refused(settings):
    Lore.open(settings).close()
    conn = stdlib_sqlite3.connect(settings.db_path)
    conn.execute("INSERT INTO schema_migrations VALUES (?, 'm999_future', 'x')",
                 (SCHEMA_VERSION + 1,))
    conn.commit()
    conn.close()
    with pytest.raises(MigrationError, match="newer Lore"):
        Lore.open(settings)


def test_text_file_is_not_a_database(settings):
    settings.db_path.parent.mkdir(parents=True)
    settings.db_path.write_text("hello, I am notes\n" * 100)
    with pytest.raises(NotALoreDatabase, match="not a Lore database"):
        Lore.open(settings)
    assert settings.db_path.read_text().startswith("hello")  # untouched


def test_other_sqlite_database_is_refused_untouched(settings):
    settings.db_path.parent.mkdir(parents=True)
    conn = stdlib_sqlite3.connect(settings.db_path)
    conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.commit()
    conn.close()
    with pytest.raises(NotALoreDatabase):
        Lore.open(settings)
    conn = stdlib_sqlite3.connect(settings.db_path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert tables == {"invoices"}


def test_failed_migration_rolls_back(settings, monkeypatch):
    def broken(conn):
        conn.execute("CREATE TABLE half_done (x)")
        raise RuntimeError("boom")

    expected = numbers()
    monkeypatch.setattr("lore.store.sqlite.migrations.MIGRATIONS", [*MIGRATIONS, broken])
    monkeypatch.setattr("lore.store.sqlite.migrations.SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with pytest.raises(RuntimeError):
        Lore.open(settings)
    conn = stdlib_sqlite3.connect(settings.db_path)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations")]
    conn.close()
    assert "half_done" not in names
    assert versions == expected


def test_reference_tables_are_extensible_by_insert(fake_lore):
    fake_lore.store.conn.execute(
        "INSERT INTO lesson_kinds (name, description) VALUES ('runbook', 'an operations step')"
    )
    fake_lore.store.conn.execute(
        "INSERT INTO source_types (name, description, typical_confidence) "
        "VALUES ('pairing', 'learned while pairing', 'high')"
    )
    lesson = fake_lore.lessons.add("Restart the worker after deploys", "systemctl restart",
                                  kind="runbook", source="pairing")
    assert (lesson.kind, lesson.source) == ("runbook", "pairing")
    assert "runbook" in [k.name for k in fake_lore.lessons.reference("kind")]


def test_reference_values_are_seeded(fake_lore):
    assert [c.name for c in fake_lore.lessons.reference("confidence")] == [
        "very-low", "low", "medium", "high", "very-high"]
    assert {"tested", "documented", "observed", "inferred", "hearsay"} <= {
        s.name for s in fake_lore.lessons.reference("source")}
    assert {"code_pattern", "bug_fix", "architecture", "project_rule", "preference", "decision",
            "pattern", "anti_pattern", "learning", "reflection"} <= {
        k.name for k in fake_lore.lessons.reference("kind")}
    assert {"related_to", "derived_from", "contradicts", "supersedes", "example_of"} <= {
        r.name for r in fake_lore.lessons.reference("relation")}


def test_foreign_keys_cascade_on_delete(fake_lore):
    a = fake_lore.lessons.add("A lesson", "body", tags=["x"], evidence=[{"quote": "q"}],
                             examples=[{"code": "print(1)", "language": "python"}])
    b = fake_lore.lessons.add("B lesson", "body")
    fake_lore.lessons.link(a.id, b.id)
    fake_lore.lessons.delete(a.id)
    q = fake_lore.store.conn.execute
    for table in ("lesson_tags", "evidence", "code_examples", "edges"):
        assert q(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table
    assert q("SELECT count(*) FROM lesson_vectors").fetchone()[0] == 1
    assert q("SELECT count(*) FROM lesson_vec_i8").fetchone()[0] == 1


def test_database_of_the_previous_schema_is_upgraded_in_place(settings, monkeypatch):
    """A database made before conversation memory (schema 1) gains it, keeping its lessons."""
    from conftest import FakeEmbedder

    monkeypatch.setattr("lore.store.sqlite.migrations.MIGRATIONS", MIGRATIONS[:1])
    monkeypatch.setattr("lore.store.sqlite.migrations.SCHEMA_VERSION", 1)
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        # Written with schema 1's columns, as the release that had only schema 1 wrote it.
        kept_id = "01JD8X3Q5M4Z2Y7T6R1W0V9K8J"
        lore.store.conn.execute(
            "INSERT INTO lessons (id, title, content, kind, status, confidence, created_at, "
            "updated_at, content_hash) VALUES (?, 'Written by schema 1', 'body', 'learning', "
            "'active', 'medium', '2025-01-01', '2025-01-01', 'x')", (kept_id,))
        lore.store.conn.execute("INSERT INTO lesson_tags VALUES (?, 'old')", (kept_id,))
        lore.store.conn.execute("INSERT INTO evidence (id, lesson_id, position, quote) "
                          "VALUES ('e1', ?, 0, 'said so')", (kept_id,))
        assert "sessions" not in {r[0] for r in lore.store.conn.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table'")}
    monkeypatch.undo()
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        versions = [r[0] for r in lore.store.conn.execute("SELECT version FROM schema_migrations")]
        assert versions == numbers()
        assert lore.lessons.get(kept_id).tags == ("old",)
        assert lore.lessons.get(kept_id).evidence[0].context is None
        assert lore.conversations.store.stats()["sessions"] == 0
