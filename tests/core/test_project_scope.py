"""One project for every face: a folder means the git top level of the folder (else the folder),
whichever command, tool or hook names it; every way of adding a rule defaults to the current
project; `lore apply` names the approved rules it did not write; `lore learn update --project` moves a rule;
stored project keys migrate."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FakeEmbedder
from gitrepo import Repo
from lore.cli import cli
from lore.normalize import project_root


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    r = Repo(tmp_path / "shop")
    (r.path / "src" / "api").mkdir(parents=True)
    return r


@pytest.fixture
def cli_in(lore_home: Path, monkeypatch: pytest.MonkeyPatch):
    """The CLI in-process with the fake embedder, run from a given folder."""
    monkeypatch.setenv("HOME", str(lore_home.parent))

    def invoke(folder: Path, *args: str) -> tuple[int, str, str]:
        monkeypatch.chdir(folder)
        result = CliRunner().invoke(cli, list(args), obj={"embedder": FakeEmbedder()},
                                    catch_exceptions=False)
        return result.exit_code, result.stdout, result.stderr

    return invoke


def _json(out: str) -> dict:
    return json.loads(out)


def test_every_face_names_the_same_project_for_a_subfolder(repo, fake_lore, monkeypatch):
    from lore.cli.common import resolve_project
    from lore.mcp.tools import LoreTools
    from lore.models import Filters
    from lore.worker.events import project_of as _project

    top = str(repo.path.resolve())
    sub = repo.path / "src" / "api"
    monkeypatch.chdir(sub)
    assert resolve_project(".") == top
    assert resolve_project(str(sub)) == top
    tools = LoreTools(fake_lore.settings, fake_lore)
    assert asyncio.run(tools.project(None, None)) == top  # no client roots: the cwd's project
    assert asyncio.run(tools.project(None, str(sub))) == top
    assert asyncio.run(tools.project(None, "all")) is None
    assert asyncio.run(tools.project(None, "global")) == ""
    assert _project({"cwd": str(sub)}) == top
    assert _project({"cwd": 3}) is None
    assert Filters(project=str(sub)).project == top
    # A folder outside any repository is itself, symlinks resolved; a name stays a name.
    plain = repo.path.parent / "notes"
    plain.mkdir()
    link = repo.path.parent / "notes-link"
    link.symlink_to(plain, target_is_directory=True)
    assert resolve_project(str(link)) == str(plain.resolve())
    assert resolve_project("elsewhere-project") == "elsewhere-project"


def test_a_worktree_is_its_own_project_found_through_its_git_file(repo):
    repo.write("README.md", "shop\n")
    repo.git("add", "-A")
    repo.git("commit", "-qm", "first")
    tree = repo.path.parent / "shop-feature"
    repo.git("worktree", "add", "-q", str(tree), "-b", "feature")
    assert (tree / ".git").is_file()
    (tree / "lib").mkdir()
    assert project_root(str(tree / "lib")) == str(tree.resolve())


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.text(st.characters(codec="utf-8", exclude_characters="/\0"),
                              min_size=1, max_size=12).filter(lambda s: s not in (".", "..")),
                      min_size=1, max_size=4))
def test_any_folder_below_the_top_level_resolves_to_it(repo, parts):
    folder = repo.path.joinpath(*parts)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:  # a name the file system refuses
        return
    assert project_root(str(folder)) == str(repo.path.resolve())
    assert project_root(project_root(str(folder))) == project_root(str(folder))  # idempotent


def test_adding_a_lesson_and_recording_a_correction_both_default_to_the_current_project(
        repo, cli_in):
    sub = repo.path / "src" / "api"
    top = str(repo.path.resolve())
    code, out, _ = cli_in(sub, "learn", "add", "Use pnpm, not npm", "The lockfile is pnpm's.",
                          "--kind", "preference", "--json")
    assert code == 0 and _json(out)["project"] == top
    code, out, _ = cli_in(sub, "learn", "correction", "No, don't use requests, use httpx instead",
                          "--previous", "I'll call it with requests.", "--json")
    assert code == 0 and _json(out)["lesson"]["project"] == top
    code, out, _ = cli_in(sub, "learn", "add", "Sign commits", "Everywhere.", "--global", "--json")
    assert code == 0 and _json(out)["project"] is None


def test_the_same_correction_in_another_folder_of_the_repository_reinforces(repo, cli_in):
    first = repo.path / "src"
    second = repo.path / "src" / "api"
    text = "No, don't use requests, use httpx instead"
    code, out, _ = cli_in(first, "learn", "correction", text, "--json")
    one = _json(out)
    code, out, _ = cli_in(second, "learn", "correction", text, "--json")
    two = _json(out)
    assert one["lesson"]["id"] == two["lesson"]["id"]
    assert two["action"] in ("reinforced", "duplicate")
    code, out, _ = cli_in(repo.path, "recall", "preferences", "--status", "active",
                          "--status", "proposed", "--status", "candidate", "--json")
    titles = [p["title"] for p in _json(out)["preferences"]]
    assert titles.count(one["lesson"]["title"]) == 1


def test_apply_names_every_approved_rule_it_did_not_write_and_scope_moves_it(
        repo, tmp_path, cli_in):
    other = Repo(tmp_path / "blog")
    code, out, _ = cli_in(other.path, "learn", "add", "Use httpx, not requests", "HTTP client.",
                          "--kind", "preference", "--status", "active", "--json")
    rule = _json(out)["id"]
    code, out, _ = cli_in(repo.path, "learn", "add", "Sign every commit", "Policy.",
                          "--kind", "project_rule", "--status", "active", "--global", "--json")
    global_rule = _json(out)["id"]
    code, out, err = cli_in(repo.path, "apply", "--dry-run", "--no-global", "--json")
    assert code == 0
    left = {r["id"]: r for r in _json(out)["not_written"]}
    assert set(left) == {rule, global_rule}
    assert str(other.path.resolve()) in left[rule]["reason"]
    assert "global" in left[global_rule]["reason"]
    assert "lore learn update" in left[rule]["reason"]
    code, out, err = cli_in(repo.path, "apply", "--dry-run", "--no-global")
    assert "not written here: 1 approved rule(s) of 1 other project(s)" in err
    assert f"not written: {global_rule}" in err and f"not written: {rule}" not in err
    # Move it here: now it is written, and nothing is left out.
    code, out, err = cli_in(repo.path / "src", "learn", "update", rule, "--project", ".")
    assert code == 0 and str(repo.path.resolve()) in err
    code, out, _ = cli_in(repo.path, "apply", "--dry-run", "--global", "--json")
    data = _json(out)
    assert data["not_written"] == []
    assert "Use httpx, not requests" in data["diff"]
    code, out, _ = cli_in(repo.path, "learn", "update", rule, "--global", "--json")
    assert _json(out)["project"] is None


def test_scope_refuses_bad_input_and_changes_nothing(repo, cli_in):
    code, out, _ = cli_in(repo.path, "learn", "add", "Use ruff", "Lint.", "--json")
    lesson = _json(out)
    for args in ([], ["--global", "--project", "."], ["--project", str(repo.path / "nope")]):
        result = CliRunner().invoke(cli, ["learn", "update", lesson["id"], *args],
                                    obj={"embedder": FakeEmbedder()})
        assert result.exit_code == 2, args
        assert "Traceback" not in result.output
    result = CliRunner().invoke(cli, ["learn", "update", "01JD8X3Q5M4Z2Y7T6R1W0V9K8J", "--global"],
                                obj={"embedder": FakeEmbedder()})
    assert result.exit_code != 0 and "Traceback" not in result.output
    code, out, _ = cli_in(repo.path, "recall", "show", lesson["id"], "--json")
    assert _json(out)["project"] == lesson["project"]


def test_lists_show_the_project_when_several_are_involved(repo, tmp_path, cli_in):
    other = Repo(tmp_path / "blog")
    cli_in(repo.path, "learn", "add", "Use pnpm, not npm", "x", "--kind", "preference")
    cli_in(other.path, "learn", "add", "Use pnpm, not npm", "x", "--kind", "preference")
    code, out, _ = cli_in(repo.path, "recall", "preferences", "--project", "all")
    assert code == 0
    assert "shop" in out and "blog" in out
    code, out, _ = cli_in(repo.path, "recall", "preferences")
    assert "blog" not in out and "project" in out


def test_stored_project_keys_migrate_to_their_repository(repo, lore_home, tmp_path):
    from lore.store.sqlite import connect, migrate
    from lore.store.sqlite.migrations import MIGRATIONS, project_keys

    assert "m023_project_roots" in [m.__name__ for m in MIGRATIONS]
    db = tmp_path / "old.db"
    conn = connect(str(db))
    migrate(conn)
    sub = str(repo.path / "src" / "api")
    gone = str(tmp_path / "deleted-folder")
    rows = [("01JD8X3Q5M4Z2Y7T6R1W0V9K8A", sub), ("01JD8X3Q5M4Z2Y7T6R1W0V9K8B", gone),
            ("01JD8X3Q5M4Z2Y7T6R1W0V9K8C", None)]
    for lesson_id, project in rows:
        conn.execute("INSERT INTO lessons (id, title, content, kind, status, confidence, project, "
                     "metadata, created_at, updated_at, content_hash) VALUES "
                     "(?, 't', 'c', 'learning', 'active', 'medium', ?, '{}', 'x', 'x', ?)",
                     (lesson_id, project, lesson_id))
    conn.commit()
    assert project_keys(conn) == 1
    conn.commit()
    got = dict(conn.execute("SELECT id, project FROM lessons").fetchall())
    assert got == {"01JD8X3Q5M4Z2Y7T6R1W0V9K8A": str(repo.path.resolve()),
                   "01JD8X3Q5M4Z2Y7T6R1W0V9K8B": gone, "01JD8X3Q5M4Z2Y7T6R1W0V9K8C": None}
    assert project_keys(conn) == 0  # twice changes nothing
    conn.close()


def test_an_older_database_is_migrated_when_opened(repo, lore_home, tmp_path):
    from lore.store.sqlite import connect, migrate

    db = tmp_path / "older.db"
    conn = connect(str(db))
    migrate(conn)
    conn.execute("DELETE FROM schema_migrations WHERE version = 23")
    conn.execute("INSERT INTO corrections (event_id, user_message, project, at) "
                 "VALUES ('e1', 'no', ?, 'x')", (str(repo.path / "src"),))
    conn.commit()
    conn.close()
    raw = sqlite3.connect(db)
    assert raw.execute("SELECT project FROM corrections").fetchone()[0].endswith("src")
    raw.close()
    conn = connect(str(db))
    assert migrate(conn) == 1
    assert conn.execute("SELECT project FROM corrections").fetchone()[0] == \
        str(repo.path.resolve())
    conn.close()


def test_postgres_migrates_project_keys_when_opened(pg_url, repo):
    from lore.store import open_store

    store = open_store(pg_url)
    try:
        conn = store.conn  # type: ignore[attr-defined]
        conn.execute("INSERT INTO corrections (event_id, user_message, project, at) "
                     "VALUES ('e-pg', 'no', ?, 'x')", (str(repo.path / "src" / "api"),))
        conn.execute("DELETE FROM schema_migrations WHERE version = 23")
    finally:
        store.close()
    again = open_store(pg_url)
    try:
        row = again.conn.execute(  # type: ignore[attr-defined]
            "SELECT project FROM corrections WHERE event_id = 'e-pg'").fetchone()
        assert row[0] == str(repo.path.resolve())
    finally:
        again.close()


def test_search_takes_all_for_every_project_as_the_other_commands_do(repo, tmp_path, cli_in):
    other = Repo(tmp_path / "blog")
    cli_in(other.path, "learn", "add", "Write posts in Markdown", "Not HTML.")
    code, out, _ = cli_in(repo.path, "search", "posts markdown", "--project", "all",
                          "--json", "--no-track")
    assert code == 0 and [r["title"] for r in _json(out)["results"]] == ["Write posts in Markdown"]
    code, out, _ = cli_in(repo.path, "search", "posts markdown", "--project", ".",
                          "--json", "--no-track")
    assert _json(out)["results"] == []
