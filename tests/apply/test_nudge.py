"""The nudge and the status line: what waits is counted as `lore review` lists it; the
SessionStart line comes once a day per project; the status line never fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lore.apply.nudge import STATE, nudge, statusline, today_start, waiting_rules, waits
from lore.store.glance import glance

LORE = str(Path(sys.executable).parent / "lore")
NOON = time.mktime((2026, 3, 14, 12, 0, 0, 0, 0, -1))


def learn(lore, text: str, previous: str, project: str) -> str:
    outcome = lore.learning.record(text, previous, project=project, force=True)
    assert outcome.lesson is not None
    return outcome.lesson.id


def test_the_count_is_what_review_lists_and_follows_each_decision(lore, settings, tmp_path):
    shop, blog = str(tmp_path / "shop"), str(tmp_path / "blog")
    a = learn(lore, "No, don't use npm, use pnpm instead", "I'll run npm install", shop)
    b = learn(lore, "Don't use requests, use httpx instead", "I'll add requests", shop)
    learn(lore, "Never use tabs, use spaces instead", "I indented with tabs", blog)
    db = settings.db_path

    def counted(project: str | None) -> int:
        return waiting_rules(glance(db, project, today_start()))

    assert counted(shop) == len(lore.review.waiting(shop, all_projects=False)) == 2
    assert counted(None) == len(lore.review.waiting()) == 3
    lore.review.decide(a, "approve")
    lore.review.decide(b, "defer")
    assert counted(shop) == len(lore.review.waiting(shop, all_projects=False)) == 0
    assert counted(None) == 1


def test_waits_mirrors_the_review_rules():
    assert waits("proposed", {"learning": {}})
    assert waits("candidate", {"learning": {"occurrences": 2}})
    assert not waits("proposed", {})  # added by hand: nothing to review
    assert not waits("proposed", {"learning": {"reviewed": True}})
    assert not waits("rejected", {"learning": {}})
    assert not waits("proposed", {"learning": {"deferred_at": "x", "deferred_seen": 1}})
    assert waits("proposed", {"learning": {"deferred_at": "x", "deferred_seen": 1,
                                           "occurrences": 2}})
    assert waits("proposed", {"analysis": {}}) and not waits("active", {"analysis": {}})


def test_the_nudge_comes_once_a_day_per_project(lore, settings, lore_home, tmp_path):
    shop, blog = str(tmp_path / "shop"), str(tmp_path / "blog")
    db = settings.db_path
    assert nudge(db, shop, lore_home, plugin=True, now=NOON) is None  # nothing waits
    learn(lore, "No, don't use npm, use pnpm instead", "I'll run npm install", shop)
    line = nudge(db, shop, lore_home, plugin=True, now=NOON)
    assert line is not None and "1 rule" in line and "/lore:review" in line and "\n" not in line
    assert nudge(db, shop, lore_home, plugin=True, now=NOON + 3600) is None  # same day
    assert nudge(db, blog, lore_home, plugin=True, now=NOON) is None  # nothing waits there
    later = nudge(db, shop, lore_home, plugin=False, now=NOON + 86400)
    assert later is not None and "lore review" in later and "/lore:" not in later
    state = lore_home / STATE
    assert oct(state.stat().st_mode & 0o777) == "0o600"
    assert set(json.loads(state.read_text())) == {shop}


def test_a_state_file_that_cannot_be_written_means_no_nudge(lore, settings, lore_home, tmp_path):
    shop = str(tmp_path / "shop")
    learn(lore, "No, don't use npm, use pnpm instead", "I'll run npm install", shop)
    (lore_home / STATE).mkdir()  # a folder where the file should be
    assert nudge(settings.db_path, shop, lore_home, plugin=True, now=NOON) is None
    (lore_home / STATE).rmdir()
    (lore_home / STATE).write_text("{not json")  # a broken file starts again
    assert nudge(settings.db_path, shop, lore_home, plugin=True, now=NOON) is not None


def test_no_database_or_an_old_one_is_nothing_to_say(tmp_path):
    assert statusline(tmp_path / "missing.db", None, plugin=True) == "Lore: nothing waits"
    import sqlite3

    old = tmp_path / "old.db"
    sqlite3.connect(old).execute("CREATE TABLE lessons (id TEXT)").connection.close()
    assert statusline(old, "/x", plugin=False) == "Lore: nothing waits"
    assert nudge(old, "/x", tmp_path, plugin=False) is None


def test_the_status_line_counts_rules_checks_and_blocks(lore, settings, tmp_path):
    shop = str(tmp_path / "shop")
    rule = learn(lore, "No, don't use npm, use pnpm instead", "I'll run npm install", shop)
    assert statusline(settings.db_path, shop, plugin=True) == \
        "Lore: 1 rule to review (/lore:review)"
    lore.review.decide(rule, "approve")  # proposes a check on npm
    [check] = lore.checks.checks(rule, statuses=("proposed",))
    assert statusline(settings.db_path, shop, plugin=False) == \
        "Lore: 1 check to review (lore review)"
    lore.review.decide_check(check["id"], "approve")
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    lore.checks.record("ev1", {"session_id": "s", "cwd": shop, "tool_name": "Bash",
                               "lore_guard": [{"check": check["id"], "rule": rule,
                                               "outcome": "blocked", "matched": "npm i"}]},
                       stamp)
    line = statusline(settings.db_path, shop, plugin=True)
    if "blocked" in line:  # recorded as the worker records a PreToolUse block
        assert line == "Lore: 1 call blocked today"


def run_statusline(stdin: str, *args: str, env: dict[str, str] | None = None):
    return subprocess.run([LORE, "statusline", *args], input=stdin, capture_output=True,
                          text=True, timeout=60,
                          # HOME: the test's own, so the user's Claude Code settings stay out.
                          env={**os.environ, "HOME": os.environ["LORE_HOME"], **(env or {})})


def test_the_command_never_fails_on_bad_input(lore, tmp_path):
    shop = tmp_path / "shop"
    shop.mkdir()
    learn(lore, "No, don't use npm, use pnpm instead", "I'll run npm install", str(shop))
    good = run_statusline(json.dumps({"workspace": {"current_dir": str(shop)}}))
    assert good.returncode == 0 and good.stdout == "Lore: 1 rule to review (lore review)\n"
    plugin = run_statusline(json.dumps({"cwd": str(shop)}), env={"LORE_PLUGIN": "1"})
    assert plugin.stdout == "Lore: 1 rule to review (/lore:review)\n"
    # The plugin enabled in the project's settings: the line names its command too.
    (shop / ".claude").mkdir()
    (shop / ".claude" / "settings.json").write_text(json.dumps({"enabledPlugins": {"lore@lore": True}}))
    enabled = run_statusline(json.dumps({"cwd": str(shop)}))
    assert enabled.stdout == "Lore: 1 rule to review (/lore:review)\n"
    (shop / ".claude" / "settings.json").write_text("{broken")
    assert run_statusline(json.dumps({"cwd": str(shop)})).stdout.endswith("(lore review)\n")
    for bad in ("", "[1, 2]", "{not json", '{"cwd": 5}'):
        out = run_statusline(bad)
        assert out.returncode == 0 and out.stdout.startswith("Lore") and not out.stderr
    broken = run_statusline("{}", env={"LORE_DB": str(tmp_path / "a-folder-not-a-file")})
    (tmp_path / "a-folder-not-a-file").mkdir()
    assert broken.returncode == 0 and broken.stdout.startswith("Lore")
    wrong = run_statusline("{}", "extra")
    assert wrong.returncode == 2 and "no arguments" in wrong.stderr and not wrong.stdout


def test_the_status_line_loads_no_click_no_backend_no_model(lore, tmp_path):
    learn(lore, "No, don't use npm, use pnpm instead", "I'll run npm install", str(tmp_path))
    probe = ("import atexit, sys\n"
             "heavy = ('click', 'lore.store.protocol', 'lore.store.sqlite', 'numpy', 'yaml',"
             " 'pydantic', 'lore.config', 'pathlib')\n"
             "atexit.register(lambda: sys.stderr.write(repr([m for m in heavy"
             " if m in sys.modules])))\n"
             "sys.argv = ['lore', 'statusline']\n"
             "from lore.entry import main\n"
             "main()\n")
    out = subprocess.run([sys.executable, "-c", probe], input=json.dumps({"cwd": str(tmp_path)}),
                         capture_output=True, text=True, timeout=60)
    assert out.stdout == "Lore: 1 rule to review (lore review)\n"
    assert out.stderr == "[]"


META = st.fixed_dictionaries({}, optional={
    "reviewed": st.booleans(), "by_hand": st.booleans(),
    "occurrences": st.integers(1, 4), "deferred_at": st.just("2026-01-01T00:00:00.000Z"),
    "deferred_seen": st.integers(0, 4)})


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.sampled_from(["candidate", "proposed", "active", "rejected"]),
                               st.sampled_from(["learning", "analysis", None]), META,
                               st.booleans()), min_size=1, max_size=6))
def test_the_glance_counts_what_review_lists_for_any_metadata(fake_lore, settings, tmp_path,
                                                               rows):
    """Whatever the review fields hold, the status line's SQL reading and `lore review`'s
    Python reading agree on how many rules wait."""
    project = str(tmp_path)
    made = []
    for status, key, meta, here in rows:
        metadata = {key: dict(meta)} if key else {}
        made.append(fake_lore.lessons.add(f"Rule {len(made)} {status}", "x", kind="preference",
                                         status=status, project=project if here else "/else",
                                         metadata=metadata).id)
    try:
        seen = glance(str(settings.db_path), project, today_start())
        assert waiting_rules(seen) == len(fake_lore.review.waiting(project, all_projects=False))
        everywhere = glance(str(settings.db_path), None, today_start())
        assert waiting_rules(everywhere) == len(fake_lore.review.waiting())
    finally:
        for lesson_id in made:
            fake_lore.lessons.delete(lesson_id)
