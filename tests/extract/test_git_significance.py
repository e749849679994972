"""The significance score and the summary without a model, over real repositories."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitrepo import Repo, lines
from lore.capture.git import FileChange, GitChanges, changes_in_commit, session_changes
from lore.extract.significance import Correction, architecture_reasons, score, summarize


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    r = Repo(tmp_path / "project")
    r.commit("Initial layout", ("README.md", "# demo\n"), ("src/app.py", lines(10)))
    return r


def points(sig) -> dict[str, int]:
    return {p.name: p.points for p in sig.parts}


def test_a_small_change_scores_low(repo: Repo) -> None:
    repo.commit("Tweak the greeting", ("src/app.py", lines(11)))
    sig = score(changes_in_commit(repo.path, "HEAD"))
    assert sig.score == 0 and not sig.significant
    assert points(sig) == {"files": 0, "lines": 0, "new_patterns": 0, "keywords": 0, "architecture": 0,
                           "corrections": 0}
    assert sig.explain()[-1] == "score 0, threshold 5: not significant"
    assert score(changes_in_commit(repo.path, "HEAD"), force=True).significant


def test_every_part_scores(repo: Repo) -> None:
    repo.commit("Refactor storage into a plugin package",
                ("src/plugins/base.py", lines(60)), ("src/plugins/sqlite.py", lines(60)),
                ("tests/test_plugins.py", lines(20)), ("docs/plugins.md", lines(10)),
                ("pyproject.toml", "[project]\nname = 'demo'\n"))
    sig = score(changes_in_commit(repo.path, "HEAD"), corrections=2, iterations=0)
    assert points(sig) == {"files": 3, "lines": 2, "new_patterns": 5, "keywords": 2, "architecture": 4,
                           "corrections": 1}
    assert sig.score == 17 and sig.significant
    text = "\n".join(sig.explain())
    assert "'refactor' in commit" in text and "build or dependency manifest (pyproject.toml)" in text
    assert "2 new code files in new folders: src/plugins" in text


def test_lockfiles_and_vendored_code_do_not_inflate_the_score(repo: Repo) -> None:
    repo.commit("Update dependencies", ("package-lock.json", lines(4000)), ("vendor/a/x.go", lines(900)),
                ("vendor/a/y.go", lines(900)), ("node_modules/b/i.js", lines(900)), ("yarn.lock", lines(10)),
                ("src/app.py", lines(12)))
    sig = score(changes_in_commit(repo.path, "HEAD"))
    assert points(sig)["files"] == 0 and points(sig)["lines"] == 0 and sig.score == 0


def test_keyword_needs_a_word_not_a_prefix(repo: Repo) -> None:
    repo.commit("Add fixtures for the prefix tests", ("src/app.py", lines(12)))
    assert points(score(changes_in_commit(repo.path, "HEAD")))["keywords"] == 0
    repo.commit("Fixes the off-by-one in paging", ("src/app.py", lines(13)))
    assert points(score(changes_in_commit(repo.path, "HEAD")))["keywords"] == 2


def test_new_test_folders_are_not_new_patterns(repo: Repo) -> None:
    repo.commit("More tests", ("tests/unit/test_a.py", lines(3)), ("tests/unit/test_b.py", lines(3)))
    assert points(score(changes_in_commit(repo.path, "HEAD")))["new_patterns"] == 0


def test_iterations_alone_count(repo: Repo) -> None:
    sig = score(changes_in_commit(repo.path, "HEAD"), corrections=1, iterations=3)
    assert points(sig)["corrections"] == 1
    assert "1 correction, 3 iterations" in sig.parts[-1].detail


@pytest.mark.parametrize(("path", "status", "reason"), [
    ("db/migrations/0003_add_index.py", "added", "database schema or migration"),
    (".github/workflows/ci.yml", "modified", "CI configuration"),
    ("api/service.proto", "modified", "interface definition"),
    ("requirements-dev.txt", "modified", "build or dependency manifest"),
])
def test_architecture_reasons(path: str, status: str, reason: str) -> None:
    got = architecture_reasons([FileChange(path=path, status=status)])  # type: ignore[arg-type]
    assert got == [f"{reason} ({path})"]


def test_three_moves_are_a_restructuring() -> None:
    moves = [FileChange(f"new/{n}.py", "renamed", old_path=f"old/{n}.py") for n in "abc"]
    assert architecture_reasons(moves) == ["3 files moved"]
    assert architecture_reasons(moves[:2]) == []


def test_the_summary_names_what_where_commits_and_corrections(repo: Repo) -> None:
    repo.commit("Fix the cache expiry bug", ("src/cache/store.py", lines(40)),
                ("src/cache/ttl.py", lines(30)), ("Cargo.lock", lines(300)))
    repo.commit("Add a regression test for expiry", ("tests/test_cache.py", lines(25)))
    changes = session_changes(repo.path, "2026-01-01T10:01:30Z")
    corrections = [Correction("No, keep the TTL in seconds, and the key is sk-ant-api03-" + "Q" * 40, "m-7")]
    sig = score(changes, corrections=len(corrections))
    lesson = summarize(changes, sig, corrections=corrections, session_id="s-1")
    assert lesson.analysed is False and lesson.kind == "bug_fix"
    assert lesson.title == "Fix the cache expiry bug (and 1 more commits)"
    assert lesson.content.startswith("Not analysed:")
    assert "Changed 3 files (+95 −0 lines) in 2 commits on main." in lesson.content
    assert "src/cache (2 files, +70 −0)" in lesson.content
    assert "Not counted: 1 file (1 lockfile)." in lesson.content
    assert "sk-ant" not in lesson.content and "[REDACTED:api-key]" in lesson.content
    shas = [c.sha for c in changes.commits]
    assert [e.source for e in lesson.evidence] == [f"commit {s}" for s in shas] + ["correction"]
    assert all(e.session_id == "s-1" for e in lesson.evidence)
    assert lesson.evidence[-1].message_id == "m-7"
    assert lesson.metadata["commits"] == shas and lesson.metadata["user_corrections"] == 1
    assert lesson.tags == ("git", "py")


def test_the_summary_of_uncommitted_work_and_of_no_git(repo: Repo, tmp_path: Path) -> None:
    repo.write("src/app.py", lines(10) + "x\n")
    changes = session_changes(repo.path, "2026-01-01T11:00:00Z")
    lesson = summarize(changes)
    assert lesson.title == "Uncommitted changes to 1 file in src" and lesson.kind == "learning"
    assert "not committed" in lesson.content
    nothing = summarize(GitChanges(unavailable="git-missing", detail="git cannot be run"))
    assert "Git could not be read (git-missing)" in nothing.content and nothing.evidence == ()


@pytest.mark.parametrize("name", ["a.py", ".bashrc", "..x", "a.tar.gz", "noext", "x.", ".a.b", "...", "a..b"])
def test_suffix_of_is_splitext(name: str) -> None:
    import posixpath

    from lore.extract.significance import suffix_of

    assert suffix_of(name) == posixpath.splitext(name)[1]
