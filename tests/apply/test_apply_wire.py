"""`lore apply`, `lore context` and `lore ingest --claude-memory` on real files in
temporary projects and home folders (click's CliRunner, the real model, the MCP tool)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from conftest import make_settings
from lore import hooks
from lore.api import Lore
from lore.apply.session_context import build_report
from lore.capture.queue import Queue


@pytest.fixture
def where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(project, user home): HOME points at a temporary folder, so ~/.claude is a test's."""
    project, home = tmp_path / "shop", tmp_path / "user"
    project.mkdir()
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project)
    return project.resolve(), home


def add_rules(lore: Lore, project: Path) -> dict[str, str]:
    ids = {}
    ids["pnpm"] = lore.lessons.add("Use pnpm, not npm", "The user said so twice.", kind="preference",
                                  status="active", project=str(project), tags=["tooling"],
                                  preference={"rejected": "npm", "preferred": "pnpm"}).id
    ids["pytest"] = lore.lessons.add("Use pytest fixtures, not setUp", "", kind="preference",
                                    status="active", project=str(project), tags=["testing"],
                                    file_types=["py"]).id
    ids["global"] = lore.lessons.add("Write commit messages in English", "", kind="project_rule",
                                    status="active").id
    ids["proposed"] = lore.lessons.add("Prefer tabs", "", kind="preference", status="proposed",
                                      project=str(project)).id
    return ids


def test_apply_dry_run_writes_then_reruns_to_nothing_and_drops_a_rejected_rule(run, where, settings,
                                                                               real_embedder):
    project, home = where
    user_text = "# Shop\r\n\r\nCafé rules: ünïcode stays.\r\nNo trailing newline"
    (project / "CLAUDE.md").write_bytes(user_text.encode())
    with Lore.open(settings, embedder=real_embedder) as lore:
        ids = add_rules(lore, project)

    r = run("apply", "--dry-run")
    assert r.exit_code == 0, r.output
    assert "+- Use pnpm, not npm." in r.stdout and "Prefer tabs" not in r.stdout
    assert "+- Write commit messages in English." in r.stdout
    assert (project / "CLAUDE.md").read_bytes() == user_text.encode()  # nothing written
    assert not (home / ".claude").exists()

    refused = run("apply")  # CliRunner's stdin is not a terminal
    assert refused.exit_code == 2 and "add --yes" in refused.stderr

    r = run("apply", "--yes")
    assert r.exit_code == 0, r.output
    text = (project / "CLAUDE.md").read_bytes().decode()
    assert text.startswith(user_text + "\r\n\r\n<!-- lore:begin")  # the user's bytes, untouched
    assert "- Use pnpm, not npm.\r\n" in text and "\n- Use pytest" not in text
    rules_file = project / ".claude" / "rules" / "testing.md"
    assert '"**/*.py"' in rules_file.read_text() and "Use pytest fixtures" in rules_file.read_text()
    assert "Write commit messages in English." in (home / ".claude" / "CLAUDE.md").read_text()

    stamp = (project / "CLAUDE.md").stat().st_mtime_ns
    again = run("apply", "--yes", "--json")
    assert json.loads(again.stdout)["changed"] == []
    assert (project / "CLAUDE.md").stat().st_mtime_ns == stamp  # idempotent: not rewritten

    with Lore.open(settings, embedder=real_embedder) as lore:
        lore.lessons.update(ids["pnpm"], status="rejected")
        assert ids["pnpm"] not in {x.id for x in lore.apply.rules(str(project))}
    r = run("apply", "--yes")
    assert r.exit_code == 0
    assert "pnpm" not in (project / "CLAUDE.md").read_text()
    with Lore.open(settings, embedder=real_embedder) as lore:
        lore.lessons.update(ids["pytest"], status="superseded")
    run("apply", "--yes")
    assert not rules_file.exists()  # Lore's own file, now empty, goes


def test_apply_options_and_config_choose_the_files(run, where, lore_home, real_embedder):
    project, home = where
    (home / ".claude").mkdir()
    (home / ".claude" / "CLAUDE.md").write_text("mine\n")
    with Lore.open(make_settings(lore_home), embedder=real_embedder) as lore:
        add_rules(lore, project)
    r = run("apply", "--yes", "--no-global", "--agents-md", "--local")
    assert r.exit_code == 0, r.output
    assert (home / ".claude" / "CLAUDE.md").read_text() == "mine\n"  # --no-global: untouched
    assert "Use pnpm, not npm." in (project / "CLAUDE.local.md").read_text()
    assert not (project / "CLAUDE.md").exists()
    agents = (project / "AGENTS.md").read_text()
    assert "In `**/*.py` files: use pytest fixtures" in agents
    assert "commit messages" not in agents  # a global rule stays out of the project's files

    (lore_home / "config.yaml").write_text("apply:\n  project_file: CLAUDE.md\n  agents_md: false\n"
                                           "  global_file: false\n")
    r = run("apply", "--yes")
    assert r.exit_code == 0, r.output
    assert not (project / "CLAUDE.local.md").exists() and not (project / "AGENTS.md").exists()
    assert "Use pnpm" in (project / "CLAUDE.md").read_text()
    assert (home / ".claude" / "CLAUDE.md").read_text() == "mine\n"
    (lore_home / "config.yaml").write_text("apply:\n  project_file: AGENTS.md\n")
    bad = run("apply", "--dry-run")
    assert bad.exit_code == 1 and "apply.project_file" in bad.stderr


def test_apply_refuses_a_missing_project_and_broken_markers_without_writing(run, where, settings,
                                                                           real_embedder):
    project, _ = where
    r = run("apply", "--dry-run", "--project", str(project / "nope"))
    assert r.exit_code == 2 and "no such folder" in r.stderr
    with Lore.open(settings, embedder=real_embedder) as lore:
        add_rules(lore, project)
    (project / "CLAUDE.md").write_text("x\n<!-- lore:begin -->\n- a\n")
    r = run("apply", "--yes")
    assert r.exit_code == 1 and "CLAUDE.md:2" in r.stderr and "Traceback" not in r.output
    assert (project / "CLAUDE.md").read_text() == "x\n<!-- lore:begin -->\n- a\n"


def test_mcp_lore_apply_shows_the_diff_by_default_and_writes_when_asked(where, settings, real_embedder):
    from lore.mcp.server import build_server

    project, _ = where
    lore = Lore.open(settings, embedder=real_embedder)
    add_rules(lore, project)
    server, tools = build_server(settings, "admin", lore=lore)
    try:
        async def call(args: dict) -> dict:
            result = await server.call_tool("lore_apply", args)
            return json.loads(result.content[0].text)

        dry = anyio.run(call, {"project": str(project)})
        assert dry["dry_run"] and "+- Use pnpm, not npm." in dry["diff"] and not dry["written"]
        assert not (project / "CLAUDE.md").exists()
        done = anyio.run(call, {"project": str(project), "dry_run": False})
        assert str(project / "CLAUDE.md") in done["written"]
        assert "Use pnpm, not npm." in (project / "CLAUDE.md").read_text()
    finally:
        tools.close()


# ---- what SessionStart gave the session -----------------------------------------------------

def test_the_budget_keeps_approved_rules_first_whole_and_reports_what_it_left_out(fake_lore: Lore):
    rule = fake_lore.lessons.add("Use pnpm, not npm", "alpha beta gamma " * 30, kind="preference",
                                status="active")
    others = [fake_lore.lessons.add(f"Lesson number {i} about caching " + "word " * 30,
                                   kind="learning", status="active").id for i in range(30)]
    built = build_report(fake_lore.store.sessions, None, max_chars=900, max_items=60)
    assert built.shown[0] == rule.id
    assert built.dropped and set(built.dropped) <= set(others)
    assert len(built.text) <= 900
    assert f"{len(built.dropped)} more item(s) not shown ({built.dropped_chars} characters)" in built.text
    assert "lore search" in built.text and "lore_search" in built.text
    lines = [line for line in built.text.splitlines() if line.startswith("- ")]
    assert lines[0].endswith("…") and lines[0][:-1].split()[-1] in ("alpha", "beta", "gamma")
    assert all(line.endswith("word") for line in lines[1:])  # whole items, never cut
    small = build_report(fake_lore.store.sessions, None, max_chars=10_000, max_items=100)
    assert not small.dropped and "Nothing was left out" in small.text


def test_session_start_records_what_it_injected_through_the_worker(run, lore_home, settings,
                                                                    real_embedder, tmp_path,
                                                                    monkeypatch):
    from lore.worker import Worker

    monkeypatch.setattr(hooks, "ensure_worker", lambda: None)  # this test runs the worker

    with Lore.open(settings, embedder=real_embedder) as lore:
        rule = lore.lessons.add("Use pnpm, not npm", "", kind="preference", status="active")
    payload = {"session_id": "s-1", "cwd": str(tmp_path), "hook_event_name": "SessionStart"}
    out = hooks.run("session-start", json.dumps(payload), queue_root=lore_home / "queue")
    assert out is not None
    assert "Use pnpm, not npm" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    [event] = list(Queue(lore_home / "queue").take())
    assert event.payload["lore_context"]["shown"] == [rule.id]

    with Lore.open(settings, embedder=real_embedder) as lore:
        assert Worker(settings, lore).run(once=True) == 1
    r = run("context", "--json")
    loads = json.loads(r.stdout)["loads"]
    assert loads[0]["session_id"] == "s-1" and loads[0]["shown"][0]["id"] == rule.id
    assert loads[0]["shown"][0]["title"] == "Use pnpm, not npm" and loads[0]["dropped"] == []
    assert loads[0]["chars"] > 0
    text = run("context", "--session", "s-1").stdout
    assert "+ " + rule.id in text and "left out: 0" in text
    none = run("context", "--session", "other")
    assert none.exit_code == 0 and "no session start recorded" in none.stderr


def test_a_broken_database_still_queues_the_session_start(lore_home, tmp_path, monkeypatch):
    monkeypatch.setattr(hooks, "ensure_worker", lambda: None)
    lore_home.mkdir(parents=True, exist_ok=True)
    (lore_home / "lore.db").write_bytes(b"not a database at all" * 100)
    out = hooks.run("session-start", json.dumps({"session_id": "s", "cwd": str(tmp_path)}),
                    queue_root=lore_home / "queue")
    assert out is None
    assert [e.kind for e in Queue(lore_home / "queue").take()] == ["SessionStart"]


# ---- Claude Code's auto memory --------------------------------------------------------------

def memory_folder(home: Path, project: Path) -> Path:
    key = "".join(c if c.isalnum() else "-" for c in str(project))
    folder = home / ".claude" / "projects" / key / "memory"
    folder.mkdir(parents=True)
    (folder / "testing.md").write_text(
        "---\nname: test-runner\ndescription: Run the tests with pytest -q\nmetadata:\n"
        "  type: feedback\n---\n\nRun the tests with `pytest -q`, never unittest.\n\n"
        "**Why:** the suite uses fixtures.\n**How to apply:** before every commit.\n")
    (folder / "MEMORY.md").write_text("- [Test runner](testing.md): pytest -q\n"
                                      "- The staging server is staging.shop.example\n")
    return folder


def test_import_claude_memory_adds_proposed_lessons_once_and_never_edits_its_files(run, where,
                                                                                   settings,
                                                                                   real_embedder):
    project, home = where
    folder = memory_folder(home, project)
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()}

    dry = run("ingest", "--claude-memory", "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    assert len(json.loads(dry.stdout)["added"]) == 2
    with Lore.open(settings, embedder=real_embedder) as lore:
        assert lore.lessons.count() == 0

    r = run("ingest", "--claude-memory", "--json")
    added = json.loads(r.stdout)["added"]
    assert {a["kind"] for a in added} == {"preference", "learning"}
    with Lore.open(settings, embedder=real_embedder) as lore:
        pref = lore.lessons.get(next(a["id"] for a in added if a["kind"] == "preference"))
        assert pref.status == "proposed" and pref.project == str(project)
        assert pref.title == "Run the tests with pytest -q" and "claude-memory" in pref.tags
        assert pref.when_to_apply == "before every commit." and "Why: the suite" in pref.content
        assert pref.evidence[0].source == str(folder / "testing.md") and pref.evidence[0].observed_at
        assert lore.apply.rules(str(project)) == []  # candidates wait for review

    again = run("ingest", "--claude-memory")
    assert again.exit_code == 0 and "added 0 entries for review, 2 already imported" in again.stderr
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()} == before
    missing = run("ingest", "--claude-memory", "--claude-home", str(home / "nowhere"))
    assert missing.exit_code == 1 and "no such folder" in missing.stderr


# ---- skills -----------------------------------------------------------------------------------

def test_skills_propose_groups_by_meaning_and_write_never_overwrites_a_users_skill(run, where,
                                                                                   settings,
                                                                                   real_embedder):
    project, home = where
    with Lore.open(settings, embedder=real_embedder) as lore:
        pytest_ids = [lore.lessons.add(t, c, tags=["testing"], status="active").id for t, c in (
            ("Use pytest fixtures for setup", "Fixtures replace setUp methods in the test suite."),
            ("Parametrize pytest tests", "Use pytest.mark.parametrize for tests of many inputs."),
            ("Run pytest with -x while debugging", "Stop at the first failing test."),
            ("Mark slow pytest tests", "Slow tests carry pytest.mark.slow and skip by default."))]
        lore.lessons.add("Cache pip downloads in CI", "The CI workflow caches ~/.cache/pip.",
                        tags=["testing"], status="active")
        lore.lessons.add("Unreviewed pytest idea", "pytest tests", tags=["testing"], status="proposed")

    r = run("skills", "--json")
    assert r.exit_code == 0, r.output
    [proposal] = json.loads(r.stdout)["proposals"]
    assert proposal["name"] == "learned-testing"
    assert sorted(x["id"] for x in proposal["lessons"]) == sorted(pytest_ids)  # CI caching: apart

    dry = run("skills", "1", "--global", "--dry-run")
    assert dry.exit_code == 0 and "+name: learned-testing" in dry.stdout
    assert not (home / ".claude" / "skills").exists()

    mine = home / ".claude" / "skills" / "learned-testing"
    mine.mkdir(parents=True)
    (mine / "SKILL.md").write_text("---\nname: learned-testing\ndescription: mine\n---\n\nMine.\n")
    r = run("skills", "learned-testing", "--global")
    assert r.exit_code == 0, r.output
    assert (mine / "SKILL.md").read_text().endswith("Mine.\n")  # the user's skill is untouched
    written = home / ".claude" / "skills" / "learned-testing-2"
    from lore.apply.skills import validate_skill
    assert validate_skill(written) == []
    assert "Parametrize pytest tests" in (written / "reference.md").read_text()

    missing = run("skills", "7")
    assert missing.exit_code == 1 and "lore skills" in missing.stderr


# ---- are rules followed, and the learning curve -------------------------------------------------

def test_stats_flag_a_rule_corrected_again_after_approval_and_draw_the_curve(run, where, settings,
                                                                             real_embedder,
                                                                             tmp_path):
    from bench.quality import learning_curve
    from lore.measure.learning import learning_curve as curve
    from lore.measure.learning import replay, rule_follow

    folder = tmp_path / "transcripts"
    folder.mkdir()
    approved_at = learning_curve.synthetic(folder, 12, 6, 0.9, 0.3, seed=3).isoformat()
    files = sorted(folder.glob("*.jsonl"))
    with Lore.open(settings, embedder=real_embedder) as lore:
        replay(lore, files[:6])
        learned = lore.search.preferences(learning_curve.PROJECT, statuses=("active", "proposed"))
        assert learned
        for lesson in learned:  # the user approves each rule, back-dated to mid-history
            lore.review.decide(lesson.id, "approve")
            reviewed = lore.lessons.get(lesson.id)
            lore.lessons.update(lesson.id, metadata={**reviewed.metadata, "approved_at": approved_at})
        replay(lore, files[6:])
        points = curve(lore)
        assert len(points) == 12 and all(p.repeated <= p.corrections for p in points)
        assert sum(p.repeated for p in points[:6]) > 0  # the same corrections came back
        follow = {r.id: r for r in rule_follow(lore)}
        assert follow and set(follow) == {x.id for x in lore.apply.rules(learning_curve.PROJECT)}
        corrected_again = [c for c in lore.sessions.learned_corrections()
                           if c["action"] == "reinforced" and c["at"] > approved_at]
        for r in follow.values():
            mine = [c for c in corrected_again if c["lesson_id"] == r.id]
            assert r.re_corrected == len(mine) and r.flagged == bool(mine)
            assert r.followed + len({c["session_id"] for c in mine}) == r.situations

    r = run("stats", "--rules", "--json")
    assert r.exit_code == 0, r.output
    assert {x["id"] for x in json.loads(r.stdout)["rules"]} == set(follow)
    text = run("stats", "--rules").stdout
    assert ("RE-CORRECTED" in text) == any(x.flagged for x in follow.values())
    chart = tmp_path / "curve.png"
    r = run("stats", "--learning", "--chart", str(chart))
    assert r.exit_code == 0, r.output
    assert "repeated corrections per session" in r.stdout
    assert chart.read_bytes().startswith(b"\x89PNG")
    bad = run("stats", "--learning", "--chart", str(tmp_path / "curve.gif"))
    assert bad.exit_code == 2 and ".png or .svg" in bad.stderr
    assert run("stats", "--chart", str(chart)).exit_code == 2  # --chart needs --learning


def test_a_chart_without_matplotlib_names_the_extra(tmp_path, monkeypatch):
    import builtins

    from lore.errors import InvalidInput
    from lore.measure.learning import chart

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(InvalidInput, match=r"loreloop\[charts\]"):
        chart([], tmp_path / "x.png")
