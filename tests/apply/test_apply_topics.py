"""The rules block says why a rule is there: headings name what the rules under them cover (a
person's tag, the file types, what the rule names, its kind), never "Learned"; a file-bound rule
goes to `.claude/rules/<topic>.md`; the `learned.md` an earlier Lore wrote is replaced cleanly."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lore.apply import blocks
from lore.apply.approved import applied_rule, file_types_topic, topic
from lore.models import Lesson, Preference


def lesson(title: str, *, tags=("learned",), file_types=(), kind="preference",
           preferred="", rejected="", project="/p") -> Lesson:
    pref = Preference(rejected=rejected, preferred=preferred) if preferred or rejected else None
    return Lesson(id="01JD8X3Q5M4Z2Y7T6R1W0V9K8J", title=title, content="", kind=kind,
                  status="active", confidence="medium",
                  tags=tuple(tags), file_types=tuple(file_types), project=project,
                  preference=pref)


@pytest.mark.parametrize("kw, want", [
    ({"title": "Use pnpm, not npm", "preferred": "pnpm", "rejected": "npm"}, "Package management"),
    ({"title": "Use httpx, not requests"}, "HTTP and APIs"),
    ({"title": "Run ruff before committing"}, "Linting and formatting"),
    ({"title": "Never force-push to main"}, "Git and commits"),
    ({"title": "Use local file sessions, not Redis"}, "Data and storage"),
    ({"title": "Use type hints", "file_types": ["py"]}, "Python files"),
    ({"title": "Prefer interfaces", "file_types": ["ts", "tsx", "js"]},
     "TypeScript and JavaScript files"),
    ({"title": "Keep field numbers", "file_types": ["proto"]}, "`.proto` files"),
    ({"title": "Use pnpm", "tags": ["tooling", "learned"]}, "tooling"),
    ({"title": "Use pnpm", "tags": ["learned", "front-end"]}, "front end"),
    ({"title": "Be brief in replies"}, "Preferences"),
    ({"title": "Be brief in replies", "kind": "anti_pattern"}, "Things to avoid"),
    ({"title": "Be brief in replies", "kind": "project_rule"}, "Project rules"),
])
def test_the_topic_says_what_the_rule_covers(kw, want):
    got = topic(lesson(**kw), kw["title"])
    assert got == want
    assert got.lower() != "learned"


@given(st.lists(st.text(min_size=1, max_size=10), max_size=4))
def test_a_file_types_topic_always_names_files(types):
    got = file_types_topic(types)
    assert got == "General" if not types else got.endswith(" files")


def _plan(lore, project: Path, home: Path):
    return lore.apply.plan(str(project), home, include_global=True)


def test_the_block_has_topic_headings_and_file_rules_their_topic_file(fake_lore, tmp_path):
    project = tmp_path / "shop"
    project.mkdir()
    home = tmp_path / "user"
    for title, kw in (("Use pnpm, not npm", {"preference": {"rejected": "npm",
                                                             "preferred": "pnpm"}}),
                      ("Run pytest before committing", {}),
                      ("Use type hints", {"file_types": ["py"]})):
        fake_lore.lessons.add(title, "", kind="preference", status="active", tags=["learned"],
                             project=str(project), **kw)
    _plan(fake_lore, project, home).write()
    text = (project / "CLAUDE.md").read_text()
    assert "### Package management" in text and "### Testing" in text
    assert "### Learned" not in text
    rules = project / ".claude" / "rules"
    assert sorted(p.name for p in rules.iterdir()) == ["python-files.md"]
    body = (rules / "python-files.md").read_text()
    assert "### Python files" in body and "- Use type hints." in body
    assert '"**/*.py"' in body


def test_an_old_learned_md_is_replaced_cleanly(fake_lore, tmp_path):
    project = tmp_path / "shop"
    rules = project / ".claude" / "rules"
    rules.mkdir(parents=True)
    # What an earlier Lore wrote: every rule under "Learned", in learned.md.
    old = ("---\npaths:\n  - \"**/*.py\"\n---\n\n" + blocks.begin_marker(created=True) + "\n"
           "## Rules learned by Lore\n\n### Learned\n\n- Use type hints.\n"
           + blocks.END_MARKER + "\n")
    (rules / "learned.md").write_text(old)
    mine = rules / "style.md"
    mine.write_text("# my own rules\n")
    (project / "CLAUDE.md").write_text(
        "# Shop\n\n" + blocks.begin_marker(created=False) + "\n## Rules learned by Lore\n\n"
        "### Learned\n\n- Use pnpm, not npm.\n" + blocks.END_MARKER + "\n")
    fake_lore.lessons.add("Use type hints", "", kind="preference", status="active",
                         tags=["learned"], project=str(project), file_types=["py"])
    fake_lore.lessons.add("Use pnpm, not npm", "", kind="preference", status="active",
                         tags=["learned"], project=str(project),
                         preference={"rejected": "npm", "preferred": "pnpm"})
    plan = _plan(fake_lore, project, tmp_path / "user")
    diff = plan.diff()
    assert "-### Learned" in diff and "+### Package management" in diff
    plan.write()
    assert not (rules / "learned.md").exists()
    assert mine.read_text() == "# my own rules\n"  # a person's file stays
    assert "- Use type hints." in (rules / "python-files.md").read_text()
    claude_md = (project / "CLAUDE.md").read_text()
    assert claude_md.startswith("# Shop\n") and "### Learned" not in claude_md
    assert claude_md.count("Use pnpm, not npm") == 1
    assert not _plan(fake_lore, project, tmp_path / "user").changed  # twice: nothing


def test_a_persons_learned_md_is_never_touched(fake_lore, tmp_path):
    project = tmp_path / "shop"
    rules = project / ".claude" / "rules"
    rules.mkdir(parents=True)
    (rules / "learned.md").write_text("# what I learned\n")
    fake_lore.lessons.add("Use type hints", "", kind="preference", status="active",
                         tags=["learned"], project=str(project), file_types=["py"])
    _plan(fake_lore, project, tmp_path / "user").write()
    assert (rules / "learned.md").read_text() == "# what I learned\n"


def test_applied_rule_keeps_the_preference_phrase(fake_lore, tmp_path):
    x = fake_lore.lessons.add("Don't use npm", "", kind="preference", status="active",
                             preference={"rejected": "npm", "preferred": "pnpm"})
    rule = applied_rule(x)
    assert rule.scope == "global" and rule.topic == "Package management"
