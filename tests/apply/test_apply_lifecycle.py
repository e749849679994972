"""A rule's life through `lore apply`, the session context and the MCP tool: a superseded or
rejected rule is never written, a re-approved one comes back, and a rule keeps its reason."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from conftest import FakeEmbedder
from lore.api import Lore


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    root = tmp_path / "shop"
    root.mkdir()
    return root.resolve()


def applied(lore: Lore, project: Path) -> str:
    lore.apply.plan(str(project), project.parent / "user", include_global=False).write()
    md = project / "CLAUDE.md"
    return md.read_text(encoding="utf-8") if md.exists() else ""


def learned(lore: Lore, project: Path, text: str, session: str) -> str:
    out = lore.learning.record(text, "I'll set it up with jest.", project=str(project),
                              session_id=session)
    assert out.lesson is not None, out.notice()
    lore.review.decide(out.lesson.id, "approve", via="cli")
    return out.lesson.id


def mcp_apply(settings, project: Path) -> dict:
    """The MCP tool, through a server with its own connection to the same store."""
    from lore.mcp.server import build_server

    server, tools = build_server(settings, "admin", lore=Lore.open(settings,
                                                                   embedder=FakeEmbedder()))
    try:
        async def call() -> dict:
            result = await server.call_tool("lore_apply", {"project": str(project),
                                                           "dry_run": False})
            return json.loads(result.content[0].text)

        return anyio.run(call)
    finally:
        tools.close()


def test_a_rule_line_keeps_the_users_reason(fake_lore: Lore, project: Path):
    learned(fake_lore, project, "use vitest instead of jest because it shares the vite config",
            "s1")
    text = applied(fake_lore, project)
    assert "- Use vitest, not jest: it shares the vite config." in text
    # the session context knows CLAUDE.md says it, reason and all, and does not repeat it
    assert "vitest" not in fake_lore.apply.session_context(str(project))


def test_a_rule_edited_in_review_is_written_as_the_person_wrote_it(fake_lore: Lore,
                                                                  project: Path):
    lid = learned(fake_lore, project, "use vitest instead of jest because it shares the vite "
                                      "config", "s1")
    fake_lore.review.decide(lid, "edit", title="Use vitest for every test", via="cli")
    text = applied(fake_lore, project)
    assert "- Use vitest for every test." in text and "vite config" not in text


def test_the_file_already_saying_a_rule_without_its_reason_is_enough(fake_lore: Lore,
                                                                     project: Path):
    (project / "CLAUDE.md").write_text("# Shop\n\n- Use vitest, not jest.\n", encoding="utf-8")
    learned(fake_lore, project, "use vitest instead of jest because it shares the vite config",
            "s1")
    plan = fake_lore.apply.plan(str(project), project.parent / "user", include_global=False)
    assert not plan.changed


def test_superseded_rejected_and_reapproved_through_apply_context_and_mcp(fake_lore: Lore,
                                                                          settings,
                                                                          project: Path):
    old = learned(fake_lore, project, "No, use yarn instead of npm in this repo", "s1")
    text = applied(fake_lore, project)
    assert "Use yarn, not npm." in text

    new = learned(fake_lore, project, "always run scripts with bun, never with node", "s2")
    fake_lore.lessons.link(new, old, "supersedes")  # a person says the new rule replaces the old
    assert fake_lore.lessons.get(old).status == "active"  # approved, but replaced
    text = applied(fake_lore, project)
    assert "Use yarn, not npm." not in text and "bun" in text
    context = fake_lore.apply.session_context(str(project))
    assert "Use yarn" not in context
    left = {x["id"]: x["reason"] for x in fake_lore.apply.left_out(str(project))}
    assert "superseded" in left[old]
    done = mcp_apply(settings, project)
    assert "Use yarn, not npm." not in (project / "CLAUDE.md").read_text()
    assert not done["diff"] or "+- Use yarn" not in done["diff"]

    fake_lore.review.decide(new, "reject", reason="we stay on node", via="cli")
    text = applied(fake_lore, project)
    assert "bun" not in text
    assert "Use yarn, not npm." in text  # its successor is rejected: the old rule holds again
    assert "bun" not in fake_lore.apply.session_context(str(project))

    fake_lore.review.decide(new, "approve", via="cli")
    mcp_apply(settings, project)
    text = (project / "CLAUDE.md").read_text()
    assert "bun" in text and "Use yarn, not npm." not in text


def test_a_rule_the_learner_supersedes_leaves_the_file(fake_lore: Lore, project: Path):
    old = learned(fake_lore, project, "No, use yarn instead of npm in this repo", "s1")
    assert "Use yarn, not npm." in applied(fake_lore, project)
    out = fake_lore.learning.record("No, use pnpm instead of yarn in this repo", None,
                                   project=str(project), session_id="s2")
    assert fake_lore.lessons.get(old).status == "superseded", out.action
    assert "Use yarn, not npm." not in applied(fake_lore, project)
