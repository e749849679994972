"""The commit a session starts from, read by the SessionStart hook from .git's files (no git
process), on real repositories: a branch, a detached HEAD, packed refs, a linked worktree (a .git
file), no commit yet, no repository; and the end of the session diffing from it."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import make_settings
from gitrepo import Repo, lines
from lore import hooks
from lore.api import Lore
from lore.capture.githead import read_head
from lore.capture.queue import Queue
from lore.worker import Worker


@pytest.fixture(autouse=True)
def _git_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    r = Repo(tmp_path / "project")
    r.commit("Initial layout", ("README.md", "hello\n"), ("src/app.py", lines(5)))
    return r


def test_a_branch_from_a_subfolder(repo: Repo) -> None:
    got = read_head(str(repo.path / "src"))
    assert got == {"state": "commit", "commit": repo.git("rev-parse", "HEAD"), "branch": "main",
                   "root": str(repo.path)}


def test_detached_head(repo: Repo) -> None:
    first = repo.git("rev-parse", "HEAD")
    repo.commit("Second", ("src/b.py", lines(2)))
    repo.git("checkout", "-q", "--detach", first)
    assert read_head(str(repo.path)) == {"state": "commit", "commit": first, "branch": None,
                                         "root": str(repo.path)}


def test_packed_refs(repo: Repo) -> None:
    repo.git("checkout", "-q", "-b", "feature/x")
    repo.commit("On the feature", ("src/f.py", lines(2)))
    sha = repo.git("rev-parse", "HEAD")
    repo.git("pack-refs", "--all")
    assert not (repo.path / ".git/refs/heads/feature/x").exists()
    assert read_head(str(repo.path))["commit"] == sha
    assert read_head(str(repo.path))["branch"] == "feature/x"


def test_linked_worktree_with_a_git_file(repo: Repo, tmp_path: Path) -> None:
    repo.git("worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))
    side = Repo(tmp_path / "side", init=False)
    sha = side.commit("Work on the side", ("side.py", lines(3)))
    assert (tmp_path / "side/.git").is_file()
    assert read_head(str(tmp_path / "side")) == {"state": "commit", "commit": sha, "branch": "side",
                                                 "root": str(tmp_path / "side")}
    repo.git("pack-refs", "--all")  # the branch now only in the common folder's packed-refs
    assert read_head(str(tmp_path / "side"))["commit"] == sha
    assert read_head(str(repo.path))["commit"] != sha


def test_no_commits_yet_and_no_repository(tmp_path: Path) -> None:
    empty = Repo(tmp_path / "empty")
    assert read_head(str(empty.path)) == {"state": "no-commits", "commit": None, "branch": "main",
                                          "root": str(empty.path)}
    plain = tmp_path / "plain"
    plain.mkdir()
    assert read_head(str(plain))["state"] == "no-git"
    assert read_head(None)["state"] == "no-git"
    assert read_head(str(tmp_path / "gone"))["state"] == "no-git"


def test_a_broken_git_file_is_unreadable_not_an_error(tmp_path: Path) -> None:
    odd = tmp_path / "odd"
    (odd / ".git").mkdir(parents=True)
    (odd / ".git/HEAD").write_text("ref: refs/heads/../../etc\n")
    assert read_head(str(odd))["state"] == "unreadable"


def test_the_hook_queues_the_start_commit(repo: Repo, lore_home: Path, tmp_path: Path) -> None:
    queue = tmp_path / "q"
    hooks.run("session-start", json.dumps({"session_id": "s-h", "cwd": str(repo.path)}), queue_root=queue)
    events = list(Queue(queue).take())
    assert events[0].payload["lore_git"]["commit"] == repo.git("rev-parse", "HEAD")


# ---- the end of the session diffs from the start commit ----------------------------------------
def _worker(lore: Lore) -> Worker:
    w = Worker(lore.settings, lore=lore)
    w.retry_delays = (0.0,)
    return w


def _start(home: Path, cwd: Path, session_id: str) -> Queue:
    q = Queue(home / "queue")
    hooks.run("session-start", json.dumps({"session_id": session_id, "cwd": str(cwd)}),
              queue_root=home / "queue")
    return q


def test_session_end_diffs_from_the_start_commit(lore_home: Path, repo: Repo, real_embedder: Any) -> None:
    start = repo.git("rev-parse", "HEAD")
    with Lore.open(make_settings(lore_home), embedder=real_embedder) as lore:
        q = _start(lore_home, repo.path, "s-c")
        assert _worker(lore).run(once=True) == 1
        # A commit made in the session but dated before it (an amend or a rebase keeps the
        # author's old date; here the committer's too): the start time alone would take it as
        # the base and miss its six files.
        repo.commit("Refactor the storage modules", *((f"src/m{i}.py", lines(40, f"m{i}")) for i in range(6)))
        repo.git("commit", "-q", "--amend", "--no-edit", when=1_700_000_000)
        repo.write("src/wip.py", lines(3))  # and uncommitted work
        q.append("SessionEnd", {"session_id": "s-c", "cwd": str(repo.path)})
        assert _worker(lore).run(once=True) == 1
        st = lore.analysis.status()
        run = st["last_run"]
        assert run["base"] == start and run["score"] >= 5
        assert st["last_session_start"]["commit"] == start and st["last_session_start"]["branch"] == "main"
        report = lore.analysis.session_ended("s-c", str(repo.path), None, "2026-01-01T12:00:00Z")
        assert report.start and report.start["diff_from"] == "the commit the session started from"
        assert {"src/wip.py", "src/m0.py"} <= {f.path for f in report.changes.files}


def test_a_start_commit_gone_from_history_falls_back_to_the_time(lore_home: Path, repo: Repo,
                                                                 real_embedder: Any) -> None:
    with Lore.open(make_settings(lore_home), embedder=real_embedder) as lore:
        lore.analysis.session_started("s-g", str(repo.path), "2026-01-01T09:00:00Z",
                                      {"state": "commit", "commit": "ab" * 20, "branch": "main"})
        report = lore.analysis.session_ended("s-g", str(repo.path), None, "2026-01-01T12:00:00Z")
    assert report.start["diff_from"].startswith("the start commit is gone")
    assert report.changes is not None and report.changes.unavailable is None


def test_a_repository_with_no_commit_at_the_start(lore_home: Path, tmp_path: Path,
                                                   real_embedder: Any) -> None:
    fresh = Repo(tmp_path / "fresh")
    with Lore.open(make_settings(lore_home), embedder=real_embedder) as lore:
        q = _start(lore_home, fresh.path, "s-0")
        _worker(lore).run(once=True)
        fresh.clock = int(time.time()) - 3600  # a commit dated before the start: still counted
        fresh.commit("First files", *((f"pkg/f{i}.py", lines(40)) for i in range(6)))
        report = lore.analysis.session_ended("s-0", str(fresh.path), None, "2026-01-01T12:00:00Z")
        del q
    assert report.start["git"] == "no-commits" and report.start["diff_from"].startswith("no commit yet")
    assert len(report.changes.files) == 6
