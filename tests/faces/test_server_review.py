"""The review queue, the scheduled analysis and the digests through a real Uvicorn server on
loopback (httpx), the CLI against the same home, and the schedule's clock."""

from __future__ import annotations

import json
import re
import time
from datetime import datetime, timedelta
from html import unescape
from pathlib import Path

import httpx
import pytest

from conftest import make_settings
from server_util import running

pytest.importorskip("fastapi")

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts" / "ai4curation-ai-blame"
CORRECTION = "No, don't use requests here, use httpx instead"
AGENT_TURN = "I'll add requests to fetch the page."


def waiting_rule(lore, text: str = CORRECTION, previous: str = AGENT_TURN, project: str = "/srv/app"):
    out = lore.learning.record(text, previous, project=project, session_id="s-1")
    assert out.lesson is not None, out
    if out.lesson.status == "candidate":
        lore.lessons.update(out.lesson.id, status="proposed")
    return out.lesson.id


def csrf_of(client: httpx.Client, path: str) -> str:
    page = client.get(path)
    assert page.status_code == 200, page.text
    return re.search(r'name="csrf" value="([^"]+)"', page.text)[1]


def wait_for_run(client: httpx.Client, count: int = 1, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = client.get("/api/v1/schedule").json()
        if len(status["runs"]) >= count and not status["running_since"]:
            return status
        time.sleep(0.2)
    raise AssertionError("the scheduled run did not finish")


# ---- review -------------------------------------------------------------------------------------

def test_review_queue_and_decisions_in_the_api(fake_lore):
    rule = waiting_rule(fake_lore)
    other = waiting_rule(fake_lore, "Always use tabs, never spaces, in the Makefile",
                         "I indented the Makefile with spaces.")
    with running(fake_lore) as url, httpx.Client(base_url=url, timeout=30) as client:
        queue = client.get("/api/v1/review").json()
        assert queue["count"] == 2
        item = next(i for i in queue["waiting"] if i["id"] == rule)
        assert item["evidence"][0]["said"] == CORRECTION
        assert item["evidence"][0]["agent_turn"] == AGENT_TURN
        assert item["scope"] == "/srv/app" and item["occurrences"] == 1

        bad = client.post(f"/api/v1/lessons/{rule}/review", json={"action": "maybe"})
        assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_input"
        assert client.post(f"/api/v1/lessons/{rule}/review",
                           json={"action": "edit"}).json()["error"]["code"] == "invalid_input"
        rejected = client.post(f"/api/v1/lessons/{rule}/review",
                               json={"action": "reject", "reason": "a one-off for this script"})
        assert rejected.status_code == 200 and rejected.json()["status"] == "rejected"
        edited = client.post(f"/api/v1/lessons/{other}/review",
                             json={"action": "edit", "title": "Indent Makefiles with tabs"}).json()
        assert edited["status"] == "active" and edited["title"] == "Indent Makefiles with tabs"
        assert client.get("/api/v1/review").json()["count"] == 0
    stored = fake_lore.lessons.get(rule).metadata["learning"]
    assert stored["rejected_reason"] == "a one-off for this script"


def test_review_forms_need_csrf_and_leave_a_flash_line(fake_lore):
    rule = waiting_rule(fake_lore)
    with running(fake_lore) as url, httpx.Client(base_url=url, timeout=30) as client:
        csrf = csrf_of(client, "/review")
        page = client.get("/review").text
        assert CORRECTION in unescape(page) and AGENT_TURN in unescape(page)
        assert "scope /srv/app" in page
        refused = client.post(f"/review/{rule}", data={"action": "approve"})
        assert refused.status_code == 403
        assert fake_lore.lessons.get(rule).status == "proposed"
        done = client.post(f"/review/{rule}", data={"action": "reject", "reason": "not a rule",
                                                    "csrf": csrf})
        assert done.status_code == 303 and done.headers["location"] == "/review"
        back = client.get("/review")
        assert "Rejected: “" in back.text and "(not a rule)" in back.text
        assert "Rejected: “" not in client.get("/review").text  # shown once
        unknown = client.post(f"/review/{rule}", data={"action": "maybe", "csrf": csrf})
        assert unknown.status_code == 422 and "unknown review action" in unknown.text
    assert fake_lore.lessons.get(rule).status == "rejected"


def test_a_read_token_cannot_decide(fake_lore):
    rule = waiting_rule(fake_lore)
    _, secret = fake_lore.tokens.create("read", "phone")
    with running(fake_lore, require_token=True) as url, httpx.Client(base_url=url, timeout=30) as c:
        headers = {"Authorization": f"Bearer {secret}"}
        assert c.get("/api/v1/review", headers=headers).json()["count"] == 1
        denied = c.post(f"/api/v1/lessons/{rule}/review", json={"action": "approve"},
                        headers=headers)
        assert denied.status_code == 403
        assert c.post("/api/v1/schedule/run", headers=headers).status_code == 403
    assert fake_lore.lessons.get(rule).status == "proposed"


# ---- the scheduled analysis ---------------------------------------------------------------------

def test_a_run_through_the_api_ingests_learns_and_writes_digests(tmp_path, lore_home):
    from conftest import FakeEmbedder
    from lore.api import Lore

    settings = make_settings(lore_home, schedule={"analysis": "0 3 * * *",
                                                  "transcripts": [str(FIXTURES)]})
    with Lore.open(settings, embedder=FakeEmbedder()) as lore, running(lore) as url, \
            httpx.Client(base_url=url, timeout=30) as client:
        before = client.get("/api/v1/schedule").json()
        assert before["expression"] == "0 3 * * *" and before["runs"] == []
        assert client.post("/api/v1/schedule/run").json() == {"started": True}
        status = wait_for_run(client)
        run = status["last_run"]
        assert run["outcome"] == "ok", run
        assert run["trigger"] == "api" and run["duration_ms"] > 0
        assert run["summary"]["ingested"]["files"] >= 2 and run["summary"]["ingested"]["messages"] > 0
        assert run["summary"]["learned"]["messages"] > 0
        digests = sorted(p.name for p in (lore_home / "digests").iterdir())
        assert len(digests) == 4  # this week, this month, and the ones that just ended
        assert any(re.fullmatch(r"\d{4}-W\d\d\.md", n) for n in digests)
        assert lore.conversations.search("blame", limit=1)

        # A second run finds nothing new; the trends page shows both runs.
        client.post("/api/v1/schedule/run")
        again = wait_for_run(client, 2)["last_run"]
        assert again["outcome"] == "ok" and again["summary"]["ingested"]["messages"] == 0
        page = client.get("/trends").text
        assert "Runs at <code>0 3 * * *</code>" in page and page.count("<td>api</td>") == 2


def test_one_run_at_a_time_the_other_is_recorded_as_skipped(fake_lore, lore_home):
    from lore.schedule import LOCK, Scheduler, _lock, _unlock

    held = _lock(lore_home / LOCK)  # as another process running it
    assert held is not None
    try:
        run = Scheduler(fake_lore.settings).run("command")
    finally:
        _unlock(held)
    assert run["outcome"] == "skipped" and "another process" in run["error"]
    assert fake_lore.admin.schedule_runs(1)[0]["outcome"] == "skipped"
    assert "skipped" in (lore_home / "logs" / "schedule.log").read_text()


def test_the_schedule_fires_on_its_own(fake_lore, lore_home):
    from lore.schedule import Scheduler

    settings = make_settings(lore_home, schedule={"analysis": "*/5 * * * *", "transcripts": [
        str(lore_home / "none")]})
    scheduler = Scheduler(settings, embedder=lambda: fake_lore.admin.embedder)
    first = datetime.now().astimezone() + timedelta(seconds=1)
    scheduler.start(first=first)
    try:
        deadline = time.monotonic() + 30
        while not fake_lore.admin.schedule_runs(1) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        scheduler.stop()
    [run] = fake_lore.admin.schedule_runs(5)
    assert run["trigger"] == "schedule" and run["outcome"] == "ok", run
    assert scheduler.next_run is not None and scheduler.next_run > first
    assert scheduler.next_run.minute % 5 == 0 and scheduler.next_run.second == 0


def test_a_bad_cron_expression_is_a_config_error_naming_the_key(run, lore_home):
    lore_home.mkdir(parents=True, exist_ok=True)
    (lore_home / "config.yaml").write_text('schedule:\n  analysis: "0 3 * *"\n')
    short = run("serve", "--run-schedule-now")
    assert short.exit_code == 1 and "schedule.analysis" in short.stderr
    assert "five fields" in short.stderr and "Traceback" not in short.stderr
    (lore_home / "config.yaml").write_text('schedule:\n  analysis: "61 3 * * *"\n')
    bad = run("recall", "values", "tags")
    assert bad.exit_code == 1 and "schedule.analysis" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_run_schedule_now_from_the_cli(run, lore_home):
    lore_home.mkdir(parents=True, exist_ok=True)
    (lore_home / "config.yaml").write_text(f"schedule:\n  transcripts: [{str(lore_home / 'none')!r}]\n")
    out = run("serve", "--run-schedule-now", "--json")
    assert out.exit_code == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["outcome"] == "ok" and result["trigger"] == "command"
    assert result["summary"]["transcripts"] == [] and len(result["summary"]["digests"]) >= 2


# ---- digests ------------------------------------------------------------------------------------

def test_digest_counts_decisions_and_compares_with_the_last_period(fake_lore, run):
    approved = waiting_rule(fake_lore)
    rejected = waiting_rule(fake_lore, "Always use tabs, never spaces, in the Makefile",
                            "I indented the Makefile with spaces.")
    fake_lore.review.decide(approved, "approve")
    fake_lore.review.decide(rejected, "reject", reason="this repository has no Makefile")
    # The same correction after approval: a re-correction, and a repeated one.
    fake_lore.learning.record(CORRECTION, AGENT_TURN, project="/srv/app", session_id="s-2")
    from lore.measure import digest

    d = digest.build(fake_lore, "week")
    assert [r["id"] for r in d["approved"]] == [approved]
    assert d["rejected"] == [{**d["rejected"][0], "id": rejected,
                              "reason": "this repository has no Makefile"}]
    assert d["repeated"] == 1 and d["re_corrected"][0]["id"] == approved
    assert d["corrections"] == 3 and d["sessions_with_corrections"] == 2
    assert d["previous"]["approved"] == 0 and d["weekly"][-1]["corrections"] == 3
    assert d["top_projects"][0]["project"] == "/srv/app"
    text = digest.markdown(d)
    assert "| rules approved | 1 | 0 | +1 |" in text
    assert "“this repository has no Makefile”" in text

    out = run("stats", "--digest", "week", "--out", str(fake_lore.settings.home / "w.md"))
    assert out.exit_code == 0, out.stderr
    assert (fake_lore.settings.home / "w.md").read_text().startswith("# Lore digest: week ")
    month = run("stats", "--digest", "month", "--json")
    assert json.loads(month.stdout)["approved"][0]["id"] == approved
    bad = run("stats", "--digest", "week", "--period", "2026-47")
    assert bad.exit_code == 1 and "write it like 2026-W47" in bad.stderr
    assert run("stats", "--out", "x.md").exit_code == 2


def test_trends_page_and_digest_api(fake_lore):
    rule = waiting_rule(fake_lore)
    fake_lore.review.decide(rule, "approve")
    fake_lore.sessions.record_context_load("e-1", "s-1", "/srv/app", datetime.now().astimezone().isoformat(),
                                  {"shown": [rule], "dropped": [], "chars": 120, "dropped_chars": 0})
    with running(fake_lore) as url, httpx.Client(base_url=url, timeout=30) as client:
        page = client.get("/trends")
        assert page.status_code == 200
        assert page.text.count('<svg class="chart"') == 3
        assert "Lessons each session start loaded" in page.text
        month = client.get("/trends", params={"period": "month"}).text
        assert "Trends: " in month and "by week" in month
        api = client.get("/api/v1/digest", params={"period": "month"}).json()
        assert api["kind"] == "month" and api["approved"][0]["id"] == rule
        assert api["context_loads"][0]["shown"] == 1
        bad = client.get("/api/v1/digest", params={"at": "last week"})
        assert bad.status_code == 422 and "2026-W47" in bad.json()["error"]["message"]


def test_the_agents_turn_is_rendered_as_markdown_and_nothing_in_it_runs(fake_lore):
    turn = ("I'll **add** `requests`:\n\n```python\nimport requests\n```\n"
            "<script>alert(1)</script> [click](javascript:alert(2))")
    waiting_rule(fake_lore, previous=turn)
    with running(fake_lore) as url, httpx.Client(base_url=url, timeout=30) as client:
        page = client.get("/review").text
    assert "<strong>add</strong>" in page and "<code>requests</code>" in page
    assert "<pre><code" in page and "**add**" not in page
    assert "<script>alert(1)" not in page and 'href="javascript:' not in page
