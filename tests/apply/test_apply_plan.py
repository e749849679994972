"""Where rules go, how they read, and how the plan writes: rules files, symlinks, modes, limits."""

from __future__ import annotations

import dataclasses
import os
import stat
from pathlib import Path

import pytest
import yaml

from lore.apply import files
from lore.apply.blocks import find_block
from lore.apply.files import ChangedSincePlanned, UnsafeTarget
from lore.apply.rules import AppliedRule, claude_glob, normalise, phrase, select
from lore.apply.targets import Targets, plan
from lore.errors import InvalidInput


@pytest.fixture
def where(tmp_path: Path) -> Targets:
    (tmp_path / "project").mkdir()
    (tmp_path / "home").mkdir()
    return Targets(home=tmp_path / "home", project=tmp_path / "project")


def rule(i: int, text: str, **kw) -> AppliedRule:
    return AppliedRule(f"01J{i:023d}", text, **kw)


def paths_of(p: files.Plan, root: Path) -> set[str]:
    return {str(c.path.relative_to(root)) for c in p.changed}


# --- phrasing and de-duplication ---------------------------------------------------------

def test_phrase_says_what_to_do_on_one_line():
    assert phrase(rule(1, "use pnpm,\n  not npm")) == "Use pnpm, not npm."
    assert phrase(rule(1, "- [ ] run `make lint`")) == "Run `make lint`."
    assert phrase(rule(1, "Don't use npm", preferred="pnpm")) == "Use pnpm, not npm."
    assert phrase(rule(1, "Never use print for logging", preferred="the logging module",
                       rejected="print()")) == "Use the logging module, not print()."
    assert phrase(rule(1, "Don't use npm")) == "Don't use npm."  # nothing better is known


def test_normalised_comparison_ignores_case_punctuation_and_bullets():
    assert normalise("- **Use pnpm**, not npm!") == normalise("1. use PNPM not npm") == "use pnpm not npm"


def test_repeats_of_the_file_and_near_repeats_are_left_out_and_reported():
    existing = "# Mine\n\n* Use PNPM, not npm!\n- Always run the test suite with pytest before committing\n"
    rules = [rule(1, "use pnpm, not npm."),
             rule(2, "Always run the test suite with pytest before every commit"),
             rule(3, "Write docstrings in English."),
             rule(4, "write docstrings in english")]
    chosen = select(rules, existing)
    assert [r.id for r in chosen.rules] == [rules[2].id]
    reasons = {s.rule_id: s.reason for s in chosen.skipped}
    assert "already says this" in reasons[rules[0].id]
    assert "nearly the same" in reasons[rules[1].id]
    assert "another rule" in reasons[rules[3].id]


def test_near_duplicates_need_the_same_words_in_the_same_order():
    existing = "- Use tabs for indentation in all Go source files.\n- Use pnpm, not npm.\n"
    assert select([rule(1, "Use spaces for indentation in all Go source files.")], existing).rules
    assert select([rule(1, "Use npm, not pnpm.")], existing).rules
    assert not select([rule(1, "Use tabs for the indentation in every Go source file.")], existing).rules
    assert select([rule(1, "Use tabs.")], "- Use tab.\n").rules  # too short to call near


def test_file_type_globs_match_everywhere_in_the_project():
    assert [claude_glob(g) for g in ("py", ".py", "*.py", "src/**/*.ts", "**/*.md")] == [
        "**/*.py", "**/*.py", "**/*.py", "src/**/*.ts", "**/*.md"]


# --- targets -------------------------------------------------------------------------------

def test_each_rule_goes_where_its_agent_reads_it(where):
    rules = [rule(1, "Use pnpm, not npm.", topic="tooling"),
             rule(2, "Answer in British English.", scope="global"),
             rule(3, "Use pytest fixtures, not setUp.", topic="python", globs=("py",)),
             rule(4, "Prefer f-strings.", scope="global", topic="python", globs=("*.py",))]
    p = plan(rules, Targets(home=where.home, project=where.project, agents_md=True))
    root = where.project.parent
    assert paths_of(p, root) == {"project/CLAUDE.md", "home/.claude/CLAUDE.md",
                                 "project/.claude/rules/python.md", "project/AGENTS.md"}
    p.write()
    project_md = (where.project / "CLAUDE.md").read_text()
    assert "Use pnpm" in project_md and "pytest fixtures" not in project_md
    home_md = (where.home / ".claude" / "CLAUDE.md").read_text()
    assert "- Answer in British English." in home_md
    assert "- In `**/*.py` files: prefer f-strings." in home_md
    agents = (where.project / "AGENTS.md").read_text()
    assert "- In `**/*.py` files: use pytest fixtures, not setUp." in agents and "Use pnpm" in agents
    assert "British" not in agents


def test_rules_file_has_claude_code_paths_frontmatter(where):
    plan([rule(1, "Use pytest fixtures.", topic="Python tests", globs=("py", "src/**/*.pyi"))],
         where).write()
    path = where.project / ".claude" / "rules" / "python-tests.md"
    text = path.read_text()
    assert text.startswith('---\npaths:\n  - "**/*.py"\n  - "src/**/*.pyi"\n---\n\n<!-- lore:begin created')
    front = yaml.safe_load(text.split("---\n")[1])
    assert front == {"paths": ["**/*.py", "src/**/*.pyi"]}
    assert not text.startswith("\ufeff")  # a BOM would make the rule load everywhere


def test_a_users_rules_file_of_the_same_name_is_never_touched(where):
    folder = where.project / ".claude" / "rules"
    folder.mkdir(parents=True)
    mine = folder / "python.md"
    mine.write_bytes(b"---\npaths: ['**/*.py']\n---\nMy own Python rules.\n")
    before = mine.read_bytes()
    rules = [rule(1, "Use pytest fixtures.", topic="python", globs=("py",))]
    plan(rules, where).write()
    assert mine.read_bytes() == before
    assert "Use pytest fixtures." in (folder / "python-lore.md").read_text()
    assert plan(rules, where).changed == ()  # Lore finds its own file again
    plan([], where).write()
    assert not (folder / "python-lore.md").exists() and mine.read_bytes() == before


def test_one_topic_with_two_sets_of_globs_gets_two_files(where):
    plan([rule(1, "Use strict mode.", topic="lint", globs=("ts",)),
          rule(2, "Use ruff.", topic="lint", globs=("py",))], where).write()
    names = sorted(p.name for p in (where.project / ".claude" / "rules").iterdir())
    assert names == ["lint-py.md", "lint-ts.md"]


def test_a_removed_rule_leaves_and_an_empty_set_removes_every_block(where):
    rules = [rule(1, "Use pnpm, not npm."), rule(2, "Keep commits small."),
             rule(3, "Use ruff.", globs=("py",), topic="python"),
             rule(4, "Reply tersely.", scope="global")]
    (where.project / "CLAUDE.md").write_text("# Mine\n")
    plan(rules, where).write()
    plan(rules[1:], where).write()
    text = (where.project / "CLAUDE.md").read_text()
    assert "pnpm" not in text and "Keep commits small." in text
    plan([], where).write()
    assert (where.project / "CLAUDE.md").read_text() == "# Mine\n"
    assert not (where.home / ".claude" / "CLAUDE.md").exists()  # Lore created it, now empty
    assert not (where.project / ".claude" / "rules" / "python.md").exists()


def test_a_created_file_the_user_wrote_into_is_kept(where):
    plan([rule(1, "Reply tersely.", scope="global")], where).write()
    home_md = where.home / ".claude" / "CLAUDE.md"
    home_md.write_text("My own line.\n\n" + home_md.read_text())
    plan([], where).write()
    assert home_md.read_text() == "My own line.\n"


def test_local_setting_writes_claude_local_md_and_moves_the_block(where):
    rules = [rule(1, "Use pnpm, not npm.")]
    plan(rules, where).write()
    local = Targets(home=where.home, project=where.project, local=True)
    p = plan(rules, local)
    assert paths_of(p, where.project) == {"CLAUDE.md", "CLAUDE.local.md"}
    p.write()
    assert not (where.project / "CLAUDE.md").exists()
    assert "Use pnpm" in (where.project / "CLAUDE.local.md").read_text()


def test_agents_md_is_cleaned_when_the_option_is_turned_off(where):
    rules = [rule(1, "Use pnpm, not npm.")]
    (where.project / "AGENTS.md").write_text("# Agents\n")
    plan(rules, Targets(home=where.home, project=where.project, agents_md=True)).write()
    plan(rules, where).write()
    assert (where.project / "AGENTS.md").read_text() == "# Agents\n"


def test_project_rule_without_a_project_is_an_error(where):
    with pytest.raises(InvalidInput, match="no project folder"):
        plan([rule(1, "Use pnpm.")], Targets(home=where.home))


# --- writing -------------------------------------------------------------------------------

def test_symlinked_claude_md_is_written_through_once(where):
    agents = where.project / "AGENTS.md"
    agents.write_text("# Shared instructions\n")
    (where.project / "CLAUDE.md").symlink_to("AGENTS.md")
    rules = [rule(1, "Use pnpm, not npm."), rule(2, "Use ruff.", globs=("py",), topic="python")]
    p = plan(rules, Targets(home=where.home, project=where.project, agents_md=True))
    assert len([c for c in p.changed if c.real == agents.resolve()]) == 1
    p.write()
    assert (where.project / "CLAUDE.md").is_symlink()
    assert agents.read_text().count("<!-- lore:begin") == 1 and "Use pnpm" in agents.read_text()
    plan([], where).write()
    assert (where.project / "CLAUDE.md").is_symlink() and agents.read_text() == "# Shared instructions\n"


def test_symlink_out_of_the_project_is_refused_unless_allowed(where, tmp_path):
    elsewhere = tmp_path / "elsewhere.md"
    elsewhere.write_text("# Not in the project\n")
    (where.project / "CLAUDE.md").symlink_to(elsewhere)
    with pytest.raises(UnsafeTarget, match="outside"):
        plan([rule(1, "Use pnpm, not npm.")], where)
    assert elsewhere.read_text() == "# Not in the project\n"
    allowed = Targets(home=where.home, project=where.project, allow_outside=True)
    plan([rule(1, "Use pnpm, not npm.")], allowed).write()
    assert "Use pnpm" in elsewhere.read_text()


def test_file_mode_is_kept(where):
    path = where.project / "CLAUDE.md"
    path.write_text("# Mine\n")
    path.chmod(0o640)
    plan([rule(1, "Use pnpm, not npm.")], where).write()
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_new_files_follow_the_umask(where):
    old = os.umask(0o027)
    try:
        plan([rule(1, "Use pnpm, not npm.")], where).write()
    finally:
        os.umask(old)
    assert stat.S_IMODE((where.project / "CLAUDE.md").stat().st_mode) == 0o640


def test_files_over_the_size_limit_are_refused(where):
    path = where.project / "CLAUDE.md"
    path.write_bytes(b"x" * 2000 + b"\n")
    small = Targets(home=where.home, project=where.project, max_bytes=1000)
    with pytest.raises(UnsafeTarget, match="over the 1000-byte limit"):
        plan([rule(1, "Use pnpm, not npm.")], small)
    path.write_bytes(b"x" * 900 + b"\n")
    with pytest.raises(UnsafeTarget, match="would grow"):
        plan([rule(i, f"Rule number {i} about something.") for i in range(20)], small)


def test_non_utf8_and_folders_are_refused(where):
    (where.project / "CLAUDE.md").write_bytes(b"caf\xe9\n")
    with pytest.raises(UnsafeTarget, match="not UTF-8"):
        plan([rule(1, "Use pnpm.")], where)
    (where.project / "CLAUDE.md").unlink()
    (where.project / "CLAUDE.md").mkdir()
    with pytest.raises(UnsafeTarget, match="not a regular file"):
        plan([rule(1, "Use pnpm.")], where)


def test_a_file_changed_after_planning_stops_a_plan_that_cannot_be_made_again(where):
    path = where.project / "CLAUDE.md"
    path.write_text("# Mine\n")
    p = plan([rule(1, "Use pnpm, not npm."), rule(2, "Reply tersely.", scope="global")], where)
    path.write_text("# Mine, edited meanwhile\n")
    with pytest.raises(ChangedSincePlanned, match="changed since the plan"):
        dataclasses.replace(p, replan=None).write()
    assert path.read_text() == "# Mine, edited meanwhile\n"
    assert not (where.home / ".claude" / "CLAUDE.md").exists()  # nothing written at all


def test_a_file_changed_after_planning_is_planned_again_from_its_new_content(where):
    path = where.project / "CLAUDE.md"
    path.write_text("# Mine\n")
    p = plan([rule(1, "Use pnpm, not npm."), rule(2, "Reply tersely.", scope="global")], where)
    path.write_text("# Mine, edited meanwhile\n")
    assert set(p.write()) == {path, where.home / ".claude" / "CLAUDE.md"}
    text = path.read_text()
    assert text.startswith("# Mine, edited meanwhile\n") and "Use pnpm, not npm." in text
    assert plan([rule(1, "Use pnpm, not npm."), rule(2, "Reply tersely.", scope="global")],
                where).changed == ()


def test_stable_order_keeps_diffs_minimal(where):
    rules = [rule(i, f"Rule {i} says to do thing number {i}.", topic=("a", "b")[i % 2])
             for i in range(10)]
    plan(rules, where).write()
    p = plan([*rules, rule(99, "A brand new rule to follow.", topic="a")], where)
    added = [line for line in p.diff().splitlines() if line.startswith("+") and not line.startswith("+++")]
    removed = [line for line in p.diff().splitlines() if line.startswith("-") and not line.startswith("---")]
    assert added == ["+- A brand new rule to follow."] and removed == []
    text = (where.project / "CLAUDE.md").read_text()
    assert find_block(text, "CLAUDE.md") is not None


def test_text_a_user_adds_to_lores_rules_file_stays(where):
    rules = [rule(1, "Use ruff.", topic="python", globs=("py",))]
    plan(rules, where).write()
    path = where.project / ".claude" / "rules" / "python.md"
    path.write_text(path.read_text() + "\nMy own note about Python.\n")
    plan([*rules, rule(2, "Use mypy.", topic="python", globs=("py",))], where).write()
    assert path.read_text().endswith("- Use mypy.\n<!-- lore:end -->\n\nMy own note about Python.\n")
    plan([], where).write()
    assert path.read_text() == '---\npaths:\n  - "**/*.py"\n---\n\nMy own note about Python.\n'
