"""A home's device id: one source (lore.home.device_id) for sync and for the device stamped
on written rows; a file in the home, made once; an SQLite home that synced keeps its id."""

from __future__ import annotations

import json
import socket
import sqlite3
import stat
from pathlib import Path

from conftest import FakeEmbedder, make_settings
from lore.api import Lore
from lore.home import DEVICE_FILE, device_id
from lore.ids import is_id
from lore.store import open_store


def test_made_once_private_and_one_per_home(tmp_path):
    home = tmp_path / "a"
    first = device_id(home)
    assert is_id(first)  # a ULID
    path = home / DEVICE_FILE
    assert path.read_text().strip() == first
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert device_id(home) == first
    assert device_id(tmp_path / "b") != first


def test_the_environment_wins_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("LORE_DEVICE", "build-box")
    assert device_id(tmp_path / "h") == "build-box"
    assert not (tmp_path / "h" / DEVICE_FILE).exists()


def test_a_kept_id_is_used_once_and_the_file_wins_after(tmp_path):
    home = tmp_path / "h"
    assert device_id(home, lambda: "01HOLDDEVICEIDFROMMETA0000") == "01HOLDDEVICEIDFROMMETA0000"
    assert device_id(home, lambda: "SOMETHING-ELSE") == "01HOLDDEVICEIDFROMMETA0000"
    (home / DEVICE_FILE).write_text("\n")  # an empty file is made again
    assert is_id(device_id(home))


def test_a_home_that_cannot_be_written_gets_a_stable_derived_id(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    home = blocker / "home"  # below a file: nothing can be created there
    got = device_id(home)
    assert got == device_id(home) and not is_id(got) and "-" in got


def _stamped_device(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return [r[0] for r in conn.execute("SELECT device FROM lessons ORDER BY seq")]
    finally:
        conn.close()


def test_sync_and_the_stamps_use_the_same_id(lore_home):
    with Lore.open(make_settings(lore_home), embedder=FakeEmbedder()) as lore:
        lore.lessons.add("Pin numpy below 2", "numpy 2 broke the build")
        mine = lore.sync.device_id()
    assert mine == (lore_home / DEVICE_FILE).read_text().strip()
    assert _stamped_device(lore_home / "lore.db") == [mine]


def test_a_home_that_synced_before_keeps_its_id(lore_home):
    """A home whose database held sync.device before the file existed: nothing changes."""
    with Lore.open(make_settings(lore_home), embedder=FakeEmbedder()) as lore:
        lore.store.set_meta("sync.device", "01JOLDHOMEDEVICE000000000A")
    (lore_home / DEVICE_FILE).unlink()
    with Lore.open(make_settings(lore_home), embedder=FakeEmbedder()) as lore:
        assert lore.sync.device_id() == "01JOLDHOMEDEVICE000000000A"
        lore.lessons.add("Use uv for installs", "faster")
        assert lore.sync.status()["device"] == "01JOLDHOMEDEVICE000000000A"
    assert _stamped_device(lore_home / "lore.db") == ["01JOLDHOMEDEVICE000000000A"]
    assert (lore_home / DEVICE_FILE).read_text().strip() == "01JOLDHOMEDEVICE000000000A"


def test_a_shared_database_never_gives_its_id_to_a_home(lore_home, tmp_path, pg_url):
    """Many devices share a Postgres database: a sync.device in its meta is no home's id."""
    store = open_store(pg_url)
    try:
        store.set_meta("sync.device", "SHARED")
    finally:
        store.close()
    ids = []
    for name in ("laptop", "desktop"):
        home = tmp_path / name
        with Lore.open(make_settings(home, database=pg_url), embedder=FakeEmbedder()) as lore:
            lesson = lore.lessons.add(f"Written on the {name}", "a rule")
            ids.append(lore.sync.device_id())
            row = lore.store.conn.execute("SELECT device FROM lessons WHERE id = ?",
                                          (lesson.id,)).fetchone()
            assert row[0] == ids[-1] == device_id(home)
    assert "SHARED" not in ids and ids[0] != ids[1]


def _session_devices(db: Path) -> dict[str, str]:
    conn = sqlite3.connect(db)
    try:
        return dict(conn.execute("SELECT id, device FROM sessions"))
    finally:
        conn.close()


def _import_sessions(lore: Lore, folder: Path) -> None:
    """One transcript file, one session of hand-made turns and one of hook-seen edits."""
    folder.mkdir(parents=True, exist_ok=True)
    record = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s-file",
              "cwd": "/work/shop", "timestamp": "2026-11-01T10:00:00Z", "version": "2.1.0",
              "isSidechain": False, "message": {"role": "user", "content": "retry the upload"}}
    (folder / "s-file.jsonl").write_text(json.dumps(record) + "\n")
    lore.conversations.ingest([folder], embed=False)
    lore.conversations.add_turns("s-turns", "eval", None,
                                 [("t1", "ana", "the build needs uv", None)])
    lore.conversations.record_edits("s-edits", "/work/shop", None, [])


def test_imported_sessions_carry_the_homes_device_not_the_host_name(lore_home, tmp_path):
    with Lore.open(make_settings(lore_home), embedder=FakeEmbedder()) as lore:
        _import_sessions(lore, tmp_path / "projects")
        mine = lore.admin.device
    assert mine == (lore_home / DEVICE_FILE).read_text().strip() != socket.gethostname()
    assert _session_devices(lore_home / "lore.db") == {"s-file": mine, "s-turns": mine,
                                                       "s-edits": mine}


def test_lore_device_overrides_the_id_everywhere_it_is_stamped(lore_home, tmp_path, monkeypatch):
    monkeypatch.setenv("LORE_DEVICE", "build-box")
    with Lore.open(make_settings(lore_home), embedder=FakeEmbedder()) as lore:
        _import_sessions(lore, tmp_path / "projects")
        lore.lessons.add("Pin numpy below 2", "numpy 2 broke the build")
        assert lore.sync.device_id() == "build-box"
    assert set(_session_devices(lore_home / "lore.db").values()) == {"build-box"}
    assert _stamped_device(lore_home / "lore.db") == ["build-box"]
