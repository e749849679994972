"""lore.capture.git on real repositories made here: renames, binaries, merges, submodules, files
that never count, and the errors for places git cannot answer."""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gitrepo import Repo, lines
from lore.capture.git import (
    EMPTY_TREE,
    changes_in_commit,
    changes_in_range,
    changes_since_ref,
    changes_since_time,
    path_reason,
    session_changes,
)
from lore.errors import GitError, GitNotInstalled, MissingRef, NotARepository


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    # git must find no repository above tmp_path, and no user configuration.
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    r = Repo(tmp_path / "project")
    r.commit("Initial layout", ("README.md", "# demo\n"), ("src/app.py", lines(10)))
    return r


def by_path(changes) -> dict:
    return {f.path: f for f in changes.files}


def test_one_commit_files_counts_and_message(repo: Repo) -> None:
    sha = repo.commit("Fix the parser bug\n\nThe tokenizer dropped the last line.",
                      ("src/app.py", lines(12)), ("src/parser.py", lines(30)))
    got = changes_in_commit(repo.path, "HEAD")
    assert got.head == sha and got.base == repo.git("rev-parse", "HEAD~1")
    assert [c.subject for c in got.commits] == ["Fix the parser bug"]
    assert got.commits[0].body == "The tokenizer dropped the last line."
    files = by_path(got)
    app = files["src/app.py"]
    assert (app.status, app.added, app.removed) == ("modified", 2, 0)
    assert (files["src/parser.py"].status, files["src/parser.py"].added) == ("added", 30)
    assert got.lines_changed == 32 and got.branch == "main" and not got.detached
    assert "+line 29" in got.patch and not got.patch_truncated


def test_rename_with_an_edit(repo: Repo) -> None:
    repo.commit("Add utilities", ("src/util.py", lines(40)))
    repo.git("mv", "src/util.py", "src/helpers.py")
    repo.write("src/helpers.py", lines(40) + "extra\n")
    repo.commit("Rename util to helpers")
    got = changes_in_commit(repo.path, "HEAD")
    assert [(f.path, f.old_path, f.status, f.added, f.removed) for f in got.files] == [
        ("src/helpers.py", "src/util.py", "renamed", 1, 0)]
    assert got.renames == got.files


def test_binary_files_are_counted_never_read(repo: Repo) -> None:
    repo.commit("Add a logo", ("assets/logo.png", b"\x89PNG\r\n\x1a\n\0\0\0IHDR" + bytes(range(256))),
                ("src/app.py", lines(11)))
    got = changes_in_commit(repo.path, "HEAD")
    logo = by_path(got)["assets/logo.png"]
    assert logo.binary and (logo.added, logo.removed) == (0, 0)
    assert len(got.binary_files) == 1 and len(got.files) == 2
    assert "logo.png" not in got.patch and "IHDR" not in got.patch


def test_lockfiles_vendored_minified_never_count(repo: Repo) -> None:
    repo.commit("Add dependencies",
                ("package-lock.json", '{"lockfileVersion": 3, "secret_marker": 1}\n' + lines(500)),
                ("poetry.lock", lines(300)),
                ("vendor/lib/thing.go", "package thing // vendored_marker\n" + lines(200)),
                ("web/node_modules/left-pad/index.js", lines(50)),
                ("web/static/app.min.js", "var a=1;" * 10 + "\n"),
                ("src/feature.py", lines(5)))
    got = changes_in_commit(repo.path, "HEAD")
    assert [f.path for f in got.files] == ["src/feature.py"]
    reasons = {s.path: s.reason for s in got.skipped}
    assert reasons == {"package-lock.json": "lockfile", "poetry.lock": "lockfile",
                       "vendor/lib/thing.go": "vendored", "web/node_modules/left-pad/index.js": "vendored",
                       "web/static/app.min.js": "minified"}
    assert got.lines_changed == 5
    assert "secret_marker" not in got.patch and "vendored_marker" not in got.patch


def test_skipped_files_stay_out_when_most_files_count(repo: Repo) -> None:
    # With more files to read than to skip, git is told what to leave out instead.
    repo.commit("Feature and deps", ("yarn.lock", "secret_marker\n" * 50),
                ("node_modules/x/index.js", "vendored_marker\n"),
                *[(f"src/m{i}.py", lines(i + 1)) for i in range(6)])
    got = changes_in_commit(repo.path, "HEAD")
    assert {f.path: f.added for f in got.files} == {f"src/m{i}.py": i + 1 for i in range(6)}
    assert "secret_marker" not in got.patch and "vendored_marker" not in got.patch
    assert got.patch.count("diff --git") == 6


def test_linguist_attributes_and_generated_headers(repo: Repo) -> None:
    repo.commit("Mark generated code", (".gitattributes", "api/*.pb.go linguist-generated=true\n"
                                                          "ext/** linguist-vendored\n"))
    repo.commit("Regenerate clients",
                ("api/service.pb.go", "package api\n" + lines(80)),
                ("ext/copied.c", lines(30)),
                ("src/schema_gen.py", "# Code generated by schema-tool. DO NOT EDIT.\n" + lines(90)),
                ("src/bundle.js", "x" * 600 + "\n"),
                ("src/real.py", "def f():\n    return 1\n"),
                ("docs/guide.md", "Prose generated by hand, do not edit lightly.\n" + "word " * 150 + "\n"))
    got = changes_in_commit(repo.path, "HEAD")
    assert [f.path for f in got.files] == ["docs/guide.md", "src/real.py"]  # prose and long lines count
    assert {s.path: s.reason for s in got.skipped} == {
        "api/service.pb.go": "generated", "ext/copied.c": "vendored", "src/schema_gen.py": "generated",
        "src/bundle.js": "minified"}
    assert "schema-tool" not in got.patch and "return 1" in got.patch


def test_git_ignored_files_never_count(repo: Repo) -> None:
    repo.commit("Ignore local settings", (".gitignore", "*.local\nsecrets/\n"))
    repo.write("config.local", "token=abc\n")
    repo.git("add", "-f", "config.local")  # tracked although ignored
    repo.commit("Track a local file by force", ("src/app.py", lines(13)))
    got = changes_in_commit(repo.path, "HEAD")
    assert [f.path for f in got.files] == ["src/app.py"]
    assert [(s.path, s.reason) for s in got.skipped] == [("config.local", "ignored")]
    # Untracked and ignored: not even listed in the working tree.
    repo.write("secrets/key.txt", "hunter2\n")
    repo.write("notes.md", "two\nlines\n")
    work = changes_since_ref(repo.path, "HEAD", worktree=True)
    assert [(f.path, f.untracked, f.added) for f in work.files] == [("notes.md", True, 2)]
    assert "hunter2" not in work.patch


def test_merge_commit_and_range(repo: Repo) -> None:
    start = repo.git("rev-parse", "HEAD")
    repo.git("checkout", "-q", "-b", "topic")
    repo.commit("Add the exporter", ("src/export.py", lines(20)))
    repo.git("checkout", "-q", "main")
    repo.commit("Refactor the app", ("src/app.py", lines(15)))
    repo.clock += 60
    repo.git("merge", "-q", "--no-ff", "-m", "Merge branch topic", "topic", when=repo.clock)
    merge = changes_in_commit(repo.path, "HEAD")
    assert merge.commits[0].is_merge and len(merge.commits[0].parents) == 2
    assert [f.path for f in merge.files] == ["src/export.py"]  # against the first parent
    whole = changes_in_range(repo.path, f"{start}..HEAD")
    assert {c.subject for c in whole.commits} == {"Merge branch topic", "Refactor the app",
                                                  "Add the exporter"}
    assert sorted(f.path for f in whole.files) == ["src/app.py", "src/export.py"]
    assert changes_in_range(repo.path, f"{start}..").head == repo.git("rev-parse", "HEAD")


def test_submodule_is_named_not_entered(repo: Repo, tmp_path: Path) -> None:
    lib = Repo(tmp_path / "lib")
    lib.commit("Library", ("lib.py", lines(100)))
    before = repo.git("rev-parse", "HEAD")
    repo.git("submodule", "add", "-q", str(lib.path), "deps/lib")
    repo.commit("Add the library as a submodule")
    got = changes_since_ref(repo.path, before)
    assert [(s.path, s.old_commit) for s in got.submodules] == [("deps/lib", None)]
    assert got.submodules[0].new_commit == lib.git("rev-parse", "HEAD")
    assert [f.path for f in got.files] == [".gitmodules"]
    assert "lib.py" not in got.patch
    # Moving the submodule to a new commit: named with both commits.
    old = lib.git("rev-parse", "HEAD")
    lib.commit("More", ("lib.py", lines(120)))
    repo.git("-C", "deps/lib", "pull", "-q", "origin", "main")
    repo.commit("Bump the library")
    bump = changes_in_commit(repo.path, "HEAD")
    assert [(s.path, s.old_commit, s.new_commit) for s in bump.submodules] == [
        ("deps/lib", old, lib.git("rev-parse", "HEAD"))]
    assert bump.files == () and bump.lines_changed == 0


def test_detached_head_is_fine(repo: Repo) -> None:
    first = repo.git("rev-parse", "HEAD")
    repo.commit("Second", ("src/app.py", lines(14)))
    repo.git("checkout", "-q", "--detach", "HEAD")
    got = changes_since_ref(repo.path, first)
    assert got.detached and got.branch is None
    assert [c.subject for c in got.commits] == ["Second"]


def test_no_commits_compares_against_the_empty_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    r = Repo(tmp_path / "fresh")
    r.write("main.py", lines(7))
    r.write("staged.py", lines(3))
    r.git("add", "staged.py")
    got = changes_since_time(r.path, "2026-01-01T00:00:00Z")
    assert got.no_commits and got.base == EMPTY_TREE and got.head is None and got.commits == ()
    assert {(f.path, f.added, f.untracked) for f in got.files} == {("main.py", 7, True),
                                                                   ("staged.py", 3, False)}
    with pytest.raises(MissingRef, match="names no commit"):
        changes_since_ref(r.path, "HEAD")


def test_since_time_takes_the_commits_after_it_and_the_working_tree(repo: Repo) -> None:
    repo.commit("Before the session", ("src/old.py", lines(5)))
    started = datetime.fromtimestamp(repo.clock + 30, UTC)
    base = repo.git("rev-parse", "HEAD")
    repo.commit("During the session: fix the cache", ("src/cache.py", lines(25)))
    repo.write("src/app.py", lines(10) + "changed\n")  # uncommitted
    repo.write("src/new_module.py", lines(4))  # untracked
    got = changes_since_time(repo.path, started)
    assert got.base == base and got.head is None
    assert [c.subject for c in got.commits] == ["During the session: fix the cache"]
    assert {f.path: f.added for f in got.files} == {"src/app.py": 1, "src/cache.py": 25,
                                                    "src/new_module.py": 4}
    committed_only = changes_since_time(repo.path, started.isoformat(), worktree=False)
    assert [f.path for f in committed_only.files] == ["src/cache.py"]


def test_new_directories(repo: Repo) -> None:
    repo.commit("A new package", ("src/plugins/base.py", lines(3)), ("src/plugins/http/client.py", lines(3)),
                ("src/app.py", lines(11)))
    assert changes_in_commit(repo.path, "HEAD").new_directories == ("src/plugins",)


def test_unusual_file_names_survive(repo: Repo) -> None:
    names = ["docs/ünïcode file.md", 'src/quote"d.py', "src/tab\tname.py"]
    repo.commit("Odd names", *[(n, lines(2)) for n in names])
    got = changes_in_commit(repo.path, "HEAD")
    assert sorted(f.path for f in got.files) == sorted(names)
    assert all(f.added == 2 for f in got.files)


def test_not_a_repository_missing_ref_and_no_git(repo: Repo, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(NotARepository, match="not inside a git work tree"):
        changes_since_ref(plain, "HEAD")
    with pytest.raises(NotARepository, match="not a folder"):
        changes_since_ref(tmp_path / "absent", "HEAD")
    with pytest.raises(MissingRef, match="'no-such-branch' names no commit"):
        changes_since_ref(repo.path, "no-such-branch")
    with pytest.raises(MissingRef):
        changes_in_range(repo.path, "--output=x..HEAD")
    with pytest.raises(GitNotInstalled, match="install git"):
        changes_since_ref(repo.path, "HEAD", git=str(tmp_path / "no-git-here"))


def test_session_changes_says_why_instead_of_raising(repo: Repo, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert session_changes(plain, "2026-01-01T00:00:00Z").unavailable == "not-a-repository"
    missing = session_changes(repo.path, "2026-01-01T00:00:00Z", git=str(tmp_path / "nope"))
    assert missing.unavailable == "git-missing" and "install git" in missing.detail
    assert missing.files == () and missing.commits == ()
    ok = session_changes(repo.path, "2026-01-01T00:00:00Z")
    assert ok.unavailable is None and [c.subject for c in ok.commits] == ["Initial layout"]


def test_a_slow_git_is_cut_off(repo: Repo, tmp_path: Path) -> None:
    slow = tmp_path / "slow-git"
    slow.write_text("#!/bin/sh\nsleep 5\n")
    slow.chmod(slow.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(GitError, match="took longer than 0.3 s"):
        changes_since_ref(repo.path, "HEAD", git=str(slow), timeout=0.3)
    failed = session_changes(repo.path, "2026-01-01T00:00:00Z", git=str(slow), timeout=0.3)
    assert failed.unavailable == "git-failed"


def test_reading_changes_nothing_in_the_repository(repo: Repo) -> None:
    repo.write("src/app.py", lines(10) + "edit\n")
    index = repo.path / ".git" / "index"
    before = (index.stat().st_mtime_ns, index.read_bytes())
    changes_since_ref(repo.path, "HEAD", worktree=True)
    assert (index.stat().st_mtime_ns, index.read_bytes()) == before
    assert repo.git("status", "--porcelain") == "M src/app.py"


@pytest.mark.parametrize(("path", "reason"), [
    ("yarn.lock", "lockfile"), ("sub/Cargo.lock", "lockfile"), ("go.sum", "lockfile"),
    ("third_party/x/y.c", "vendored"), ("dist/app.js", "vendored"), ("a/build/out.o", "vendored"),
    ("static/jquery-3.7.min.js", "minified"), ("src/build.py", None), ("src/distance.py", None),
    ("docs/lockfiles.md", None)])
def test_path_reasons(path: str, reason: str | None) -> None:
    assert path_reason(path) == reason


def test_counts_read_from_the_patch_match_git_numstat(repo: Repo) -> None:
    """The lines are counted from the one patch git writes; git's own --numstat is the referee,
    on the names and contents that make a patch header or a hunk unusual."""
    repo.commit("Before", ("docs/a file.md", lines(30)), ("src/old name.py", lines(50)),
                ("src/gone.py", lines(7)), ("src/mode.sh", "echo hi\n"), ("img.bin", bytes(range(256)) * 4),
                ("src/tab\tname.py", lines(3)), ("src/noeol.py", "a\nb"))
    repo.write("docs/a file.md", lines(30).replace("line 3\n", "diff --git a/x b/x\n") + "+++ b/y\n--- a/z\n")
    repo.git("mv", "src/old name.py", "src/new name.py")
    repo.write("src/new name.py", lines(50) + "one more\n")
    (repo.path / "src/gone.py").unlink()
    (repo.path / "src/mode.sh").chmod(0o755)
    repo.write("img.bin", bytes(range(255, -1, -1)) * 4)
    repo.write("src/tab\tname.py", lines(2))
    repo.write("src/noeol.py", "a\nc")
    repo.write("src/empty.py", "")
    repo.write("src/ünï.py", "-- not a header\n++ nor this\n")
    repo.commit("After")
    repo.git("config", "diff.noprefix", "true")  # a user's setting that changes patch headers
    numstat = repo.git("diff", "-z", "--numstat", "-M", "HEAD~1", "HEAD").split("\0")
    expected, i = {}, 0
    while i < len(numstat) and numstat[i]:
        plus, minus, path = numstat[i].split("\t", 2)
        if not path:
            path, i = numstat[i + 2], i + 3
        else:
            i += 1
        expected[path] = (0, 0, True) if plus == "-" else (int(plus), int(minus), False)
    got = {f.path: (f.added, f.removed, f.binary) for f in changes_in_commit(repo.path, "HEAD").files}
    assert got == expected and len(got) == 9
