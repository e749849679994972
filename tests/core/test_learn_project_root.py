"""A correction made while the agent runs in a repository's subfolder is a rule for the
repository (the folder `lore apply` writes to), found by walking up to `.git` as git does."""

from __future__ import annotations

from pathlib import Path

from gitrepo import Repo
from lore.normalize import project_root


def toplevel(repo: Repo, folder: Path) -> str:
    return repo.git("-C", str(folder), "rev-parse", "--show-toplevel")


def test_the_project_is_what_git_calls_the_top_level(tmp_path):
    repo = Repo(tmp_path / "app")
    repo.write("README.md", "app\n")
    repo.git("add", "-A")
    repo.git("commit", "-qm", "first")
    deep = repo.path / "src" / "pkg" / "sub"
    deep.mkdir(parents=True)
    assert project_root(str(deep)) == toplevel(repo, deep) == str(repo.path.resolve())
    assert project_root(str(repo.path)) == str(repo.path.resolve())
    # A worktree has a .git file, not a folder: its own top level, as git says.
    repo.git("worktree", "add", "-q", str(tmp_path / "feature"), "-b", "feature")
    inside = tmp_path / "feature" / "docs"
    inside.mkdir()
    assert project_root(str(inside)) == toplevel(repo, inside) == str((tmp_path / "feature")
                                                                        .resolve())
    # Through a symlink: the resolved path, as git prints it.
    (tmp_path / "link").symlink_to(deep, target_is_directory=True)
    assert project_root(str(tmp_path / "link")) == str(repo.path.resolve())


def test_folders_outside_a_repository_and_odd_values_are_kept_as_given(tmp_path):
    plain = tmp_path / "notes"
    plain.mkdir()
    assert project_root(str(plain)) == str(plain)
    assert project_root("/no/such/folder") == "/no/such/folder"
    assert project_root(None) is None and project_root("") == ""
    assert project_root("bad\0name") == "bad\0name"


def test_a_correction_in_a_subfolder_is_learned_for_the_repository(fake_lore, tmp_path):
    repo = Repo(tmp_path / "service")
    sub = repo.path / "api" / "handlers"
    sub.mkdir(parents=True)
    top = toplevel(repo, sub)
    # As the hooks' worker does: capture with the session's cwd, then learn.
    cid = fake_lore.learning.capture("No, don't use requests, use httpx instead",
                                    "I'll call the API with requests.", project=str(sub),
                                    session_id="s1")
    assert cid is not None
    [outcome] = fake_lore.learning.process_pending()
    assert outcome.lesson is not None and outcome.lesson.project == top
    [item] = fake_lore.review.waiting(top, all_projects=False)
    assert item["scope"] == top
    fake_lore.review.decide(outcome.lesson.id, "approve")
    assert [r.id for r in fake_lore.apply.rules(top)] == [outcome.lesson.id]
    # A later session started in another subfolder is told the rule.
    other = repo.path / "docs"
    other.mkdir()
    assert "Use httpx, not requests" in fake_lore.apply.session_context(str(other))
