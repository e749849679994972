"""Each rule reaches the agent once: a rule `lore apply` wrote into a file Claude Code reads is not
repeated in the SessionStart context, which carries what no file carries (rules not written,
proposed rules seen twice, relevant lessons); a rule is told as the rule and its reason, never
with the agent's rejected turn; a superseded lesson is left out."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gitrepo import Repo
from lore.apply.session_context import carried_lines


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    repo = Repo(tmp_path / "shop")
    return repo.path.resolve()


def _approve(lore, title: str, **kw) -> str:
    lesson = lore.lessons.add(title, kw.pop("content", title), status="active", **kw)
    return lesson.id


def test_a_rule_written_by_apply_is_not_repeated_at_session_start(fake_lore, project):
    pnpm = _approve(fake_lore, "Use pnpm, not npm", kind="preference", project=str(project),
                    preference={"context": "I'll add lodash with `npm install lodash`",
                                "rejected": "npm", "preferred": "pnpm",
                                "reasoning": "the lockfile is pnpm's"})
    typed = _approve(fake_lore, "Use type hints", kind="project_rule", project=str(project),
                     file_types=["py"])
    before = fake_lore.apply.session_context(str(project))
    assert "Use pnpm, not npm (why: the lockfile is pnpm's)" in before
    assert "npm install lodash" not in before and "context:" not in before
    assert "Use type hints" in before
    plan = fake_lore.apply.plan(str(project), Path(os.environ["HOME"]), include_global=True)
    plan.write()
    assert "Use pnpm, not npm" in (project / "CLAUDE.md").read_text()
    (project / "sub").mkdir()
    after = fake_lore.apply.session_context(str(project / "sub"))
    assert "Use pnpm" not in after and "Use type hints" not in after
    # A rule proposed and seen twice is in no file: the context still carries it.
    fake_lore.lessons.add("Use httpx, not requests", "x", kind="preference", status="proposed",
                         project=str(project), preference={"rejected": "requests",
                                                          "preferred": "httpx"},
                         metadata={"learning": {"occurrences": 2, "untyped": ""}})
    ctx = fake_lore.apply.session_context(str(project))
    assert "Use httpx, not requests (unconfirmed)" in ctx
    assert pnpm and typed


def test_the_hook_leaves_out_what_the_files_say_and_records_it(fake_lore, project, lore_home):
    from lore.apply.session_context import from_file

    rule = _approve(fake_lore, "Run ruff before committing", kind="project_rule",
                    project=str(project))
    (project / "CLAUDE.md").write_text("# Shop\n\n- run ruff before committing\n")
    built = from_file(fake_lore.settings.db_location, str(project), 4000, 60)
    assert built.in_files == (rule,) and "ruff" not in built.text
    assert built.record()["in_files"] == [rule]
    # Another project's files do not count.
    other = Repo(project.parent / "blog").path
    built = from_file(fake_lore.settings.db_location, str(other), 4000, 60)
    assert built.in_files == ()


def test_a_global_rule_in_the_home_file_with_a_file_prefix_counts_as_carried(project):
    home = Path(os.environ["HOME"])
    (home / ".claude").mkdir()
    (home / ".claude" / "CLAUDE.md").write_text(
        "<!-- lore:begin -->\n## Rules learned by Lore\n\n### Python files\n\n"
        "- In `**/*.py` files: use pathlib, not os.path.\n<!-- lore:end -->\n")
    lines = carried_lines(str(project), home)
    assert "use pathlib not os path" in lines
    # A negated line does not carry the rule it negates.
    (project / "CLAUDE.md").write_text("- Don't use pnpm, not npm\n")
    assert "use pnpm not npm" not in carried_lines(str(project), home)


def test_unreadable_or_missing_files_carry_nothing(project, tmp_path):
    assert carried_lines(None, None) == frozenset()
    assert carried_lines("relative/name", None) == frozenset()
    assert carried_lines(str(tmp_path / "gone"), tmp_path / "no-home") == frozenset()
    (project / "CLAUDE.md").mkdir()  # a folder where the file should be
    big = project / ".claude" / "rules"
    big.mkdir(parents=True)
    (big / "huge.md").write_text("- Use pnpm, not npm.\n" * 60_000)  # over the read cap
    assert carried_lines(str(project), None) == frozenset()  # fail open: the rule is told
    if os.geteuid() != 0:  # root reads any file
        md = project / "CLAUDE.local.md"
        md.write_text("- Use pnpm, not npm.\n")
        md.chmod(0)
        try:
            assert carried_lines(str(project), None) == frozenset()
        finally:
            md.chmod(0o644)
    (project / "CLAUDE.local.md").write_bytes(b"\xff\xfe- Use pnpm, not npm.\n")
    assert "use pnpm not npm" in carried_lines(str(project), None)


def test_a_superseded_lesson_is_not_told_its_successor_is(fake_lore, project):
    old = fake_lore.lessons.add("Store Django sessions in Redis", "Redis for sessions.",
                               project=str(project))
    new = fake_lore.lessons.add("Use local file sessions, not Redis", "File sessions.",
                               project=str(project))
    fake_lore.lessons.link(new.id, old.id, "supersedes")
    ctx = fake_lore.apply.session_context(str(project))
    assert "Use local file sessions" in ctx and "Django sessions in Redis" not in ctx
    # A successor that is no longer active does not hide it.
    fake_lore.lessons.update(new.id, status="archived")
    assert "Django sessions in Redis" in fake_lore.apply.session_context(str(project))


def test_the_session_start_hook_output_for_a_subfolder(fake_lore, project):
    from lore.hooks import session_context

    _approve(fake_lore, "Use pnpm, not npm", kind="preference", project=str(project),
             preference={"context": "npm install lodash", "rejected": "npm",
                         "preferred": "pnpm"})
    fake_lore.apply.plan(str(project), Path(os.environ["HOME"]), include_global=True).write()
    _approve(fake_lore, "Pin the major version", kind="project_rule", project=str(project))
    (project / "src").mkdir()
    output, record = session_context(str(project / "src"))
    assert output is not None and record is not None
    text = json.loads(output)["hookSpecificOutput"]["additionalContext"]
    assert "Pin the major version" in text
    assert "pnpm" not in text and "lodash" not in text
    assert len(record["in_files"]) == 1
