"""Compliance per approved rule: sessions that loaded it, its checks' matches, followed only
where it was relevant, held by a block, re-corrections, last relevant, archiving after 90
quiet days; `lore stats --rules` and the dashboard read the same figures."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from html import unescape

import httpx
import pytest

from lore.measure.learning import rule_follow
from server_util import running

pytest.importorskip("fastapi")

CORRECTION = "No, don't use npm here, use pnpm instead"
AGENT_TURN = "I'll run npm install to add the dependency."


def matched(lore, event: str, lesson_id: str, check_id: str, session: str, outcome: str,
            at: str) -> None:
    lore.checks.record(event, {"lore_guard": [{"check_id": check_id, "lesson_id": lesson_id,
                                               "outcome": outcome, "matched": "npm i"}],
                               "session_id": session, "cwd": "/shop", "tool_name": "Bash"}, at)


def approved_rule(lore):
    out = lore.learning.record(CORRECTION, AGENT_TURN, project="/shop", session_id="s0")
    lore.review.decide(out.lesson.id, "approve")
    return lore.lessons.get(out.lesson.id)


def test_compliance_counts_only_where_the_rule_was_relevant(fake_lore):
    rule = approved_rule(fake_lore)
    check = fake_lore.checks.add(rule.id, {"command": r"npm(?=\s|$)", "mode": "block"},
                                 status="active")
    since = fake_lore.review.approved_at(rule)
    later = (datetime.fromisoformat(since.replace("Z", "+00:00")) + timedelta(minutes=5))
    at = later.isoformat().replace("+00:00", "Z")
    # Three sessions loaded the rule; in s1 a block stopped npm, in s2 the user allowed it,
    # s3 never came near it; s4 re-corrected it without a check matching.
    for s in ("s1", "s2", "s3"):
        fake_lore.sessions.record_context_load(f"load-{s}", s, "/shop", at, {"shown": [rule.id]})
    fake_lore.sessions.record_context_load("load-x", "sx", "/shop", at, {"shown": ["someone-else"]})
    matched(fake_lore, "e1", rule.id, check["id"], "s1", "blocked", at)
    matched(fake_lore, "e2", rule.id, check["id"], "s2", "allowed", at)
    matched(fake_lore, "e3", rule.id, check["id"], "s2", "reminded", at)
    fake_lore.learning.record(CORRECTION, AGENT_TURN, project="/shop", session_id="s4")
    [r] = [x for x in rule_follow(fake_lore) if x.id == rule.id]
    assert r.loaded == 3
    assert r.matches == {"blocked": 1, "allowed": 1, "reminded": 1}
    assert r.re_corrected == 1 and r.flagged
    # Relevant: s1 (blocked), s2 (matched), s4 (re-corrected); s3 only loaded it.
    assert r.situations == 3
    assert r.held == 1  # s1: the block held the rule
    assert r.followed == 1  # s2: the user allowed the call; not s1 (stopped) nor s4 (corrected)
    assert r.checks == 1 and r.last_relevant and not r.archive


def test_a_rule_quiet_for_90_days_is_proposed_for_archiving(fake_lore, run):
    rule = approved_rule(fake_lore)
    since = datetime.fromisoformat(fake_lore.review.approved_at(rule).replace("Z", "+00:00"))
    out = run("stats", "--rules")
    assert "ARCHIVE?" not in out.stdout and "not relevant for 90 days" not in out.stderr
    [soon] = rule_follow(fake_lore, at=since + timedelta(days=30))
    [late] = rule_follow(fake_lore, at=since + timedelta(days=91))
    assert not soon.archive and late.archive and late.last_relevant is None
    check = fake_lore.checks.add(rule.id, {"command": "npm"}, status="active")
    at = (since + timedelta(days=80)).isoformat().replace("+00:00", "Z")
    matched(fake_lore, "e9", rule.id, check["id"], "s9", "reminded", at)
    [now] = rule_follow(fake_lore, at=since + timedelta(days=91))
    assert not now.archive and now.last_relevant == at
    # Approved 120 days ago and never relevant since: the CLI proposes archiving it.
    old = fake_lore.lessons.add("Use tabs in the Makefile", kind="project_rule", metadata={
        "approved_at": (datetime.now(UTC) - timedelta(days=120)).isoformat()})
    out = run("stats", "--rules")
    assert "ARCHIVE?" in out.stdout
    assert f"lore learn update {old.id} --status archived" in out.stderr


def test_stats_and_the_dashboard_show_the_same_figures(fake_lore, run):
    rule = approved_rule(fake_lore)
    check = fake_lore.checks.add(rule.id, {"command": "npm"}, status="active")
    at = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    matched(fake_lore, "e1", rule.id, check["id"], "s1", "blocked", at)
    fake_lore.learning.record(CORRECTION, AGENT_TURN, project="/shop", session_id="s2")
    cli = json.loads(run("stats", "--rules", "--json").stdout)["rules"]
    [mine] = [r for r in cli if r["id"] == rule.id]
    text = run("stats", "--rules").stdout
    assert "RE-CORRECTED" in text
    learning = json.loads(run("stats", "--learning", "--json").stdout)["learning"]
    with running(fake_lore) as url, httpx.Client(base_url=url, timeout=30) as client:
        page = unescape(client.get("/trends").text)
    row = re.search(rf'<tr><td><a href="/lessons/{rule.id}">.*?</tr>', page, re.S)[0]
    cells = [re.sub("<[^>]+>", "", c).strip() for c in re.findall(r"<td>(.*?)</td>", row)]
    m = mine["matches"]
    assert cells[1:8] == [mine["approved_at"][:10], str(mine["loaded"]),
                          f"{mine['followed']}/{mine['situations']}", str(mine["held"]),
                          f"{m['blocked']} / {m['reminded']} / {m['allowed']}",
                          str(mine["re_corrected"]), (mine["last_relevant"] or "never")[:10]]
    assert "re-corrected" in cells[8]
    # The re-correction the CLI flags is the one the Trends page lists, and the corrections
    # `lore stats` counts are the digest's.
    assert f'/lessons/{rule.id}">' in page.split('id="t-recorrected"')[1].split("</section>")[0]
    from lore.measure import digest

    d = digest.build(fake_lore, "week")
    assert learning["corrections"] == d["corrections"] == 2
    assert learning["repeated"] == d["repeated"] == 1


def test_the_dashboard_reviews_checks_with_their_replay(fake_lore):
    rule = approved_rule(fake_lore)
    [check] = fake_lore.checks.checks(rule.id)  # proposed when the rule was approved
    with running(fake_lore) as url, httpx.Client(base_url=url, timeout=30) as client:
        page = client.get("/review")
        text = unescape(page.text)
        assert "Checks waiting for review" in text and check["words"] in text
        assert "Would have matched 0 of 0 recorded tool calls" in text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)[1]
        bad = client.post(f"/review/check/{check['id']}", data={"action": "maybe", "csrf": csrf})
        assert bad.status_code == 422  # the one error shape for bad input
        missing = client.post("/review/check/01NOPE", data={"action": "approve", "csrf": csrf})
        assert missing.status_code == 404
        assert client.post(f"/review/check/{check['id']}",
                           data={"action": "approve", "csrf": "forged"}).status_code == 403
        done = client.post(f"/review/check/{check['id']}",
                           data={"action": "approve", "mode": "remind", "csrf": csrf})
        assert done.status_code == 303
        after = unescape(client.get("/review").text)
        assert "Approved: Reminds of the rule at" in after and "No check waits for review" in after
    [held] = fake_lore.checks.checks(rule.id)
    assert (held["status"], held["mode"]) == ("active", "remind")


def test_a_change_the_user_allowed_is_not_held_against_the_rule(fake_lore):
    rule = approved_rule(fake_lore)
    check = fake_lore.checks.add(rule.id, {"path": "gen/", "mode": "block"}, status="active")
    at = (datetime.fromisoformat(fake_lore.review.approved_at(rule).replace("Z", "+00:00"))
          + timedelta(minutes=5)).isoformat().replace("+00:00", "Z")
    matched(fake_lore, "a1", rule.id, check["id"], "s1", "allowed", at)
    matched(fake_lore, "a2", rule.id, check["id"], "s1", "ran", at)
    matched(fake_lore, "r1", rule.id, check["id"], "s2", "reminded", at)
    matched(fake_lore, "r2", rule.id, check["id"], "s2", "ran", at)
    [r] = [x for x in rule_follow(fake_lore) if x.id == rule.id]
    assert (r.situations, r.followed) == (2, 1)  # s1 followed (allowed); s2 ran after a reminder


def test_a_rule_the_session_read_from_claude_md_counts_as_loaded(fake_lore):
    """The SessionStart context leaves out a rule CLAUDE.md already holds (in_files): the
    session had it all the same, so stats --rules and `lore review why` count it."""
    rule = approved_rule(fake_lore)
    since = fake_lore.review.approved_at(rule)
    at = (datetime.fromisoformat(since.replace("Z", "+00:00")) + timedelta(minutes=5)
          ).isoformat().replace("+00:00", "Z")
    fake_lore.sessions.record_context_load("load-a", "sa", "/shop", at, {"shown": [rule.id]})
    fake_lore.sessions.record_context_load("load-b", "sb", "/shop", at, {"shown": [],
                                                                  "in_files": [rule.id]})
    fake_lore.sessions.record_context_load("load-c", "sc", "/shop", at, {"shown": ["other"]})
    [r] = [x for x in rule_follow(fake_lore) if x.id == rule.id]
    assert r.loaded == 2
    assert fake_lore.review.why(rule.id[:12].lower())["told"]["sessions"] == 2
