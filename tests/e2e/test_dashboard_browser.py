"""The dashboard in a real headless Chromium (Debian's `chromium`, driven by Playwright): search,
read the explanation, open a lesson, follow a link in its graph with the keyboard, and the
pages at phone width, and the review queue: approve, reject with a reason, edit then approve,
checked with the CLI against the same home. With LORE_SCREENSHOTS=1 the main pages are saved
into docs/images/."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from server_util import running  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"

pytestmark = [
    pytest.mark.skipif(not Path(CHROMIUM).exists(),
                       reason="Chromium is not installed (apt-get install chromium; `make test` "
                              "installs it where apt is available)"),
]


@pytest.fixture
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def seeded(lore):
    ids = {
        "sessions": lore.lessons.add(
            "Use local file sessions, not Redis",
            "For auth in this project the user rejected Redis; sessions live in var/sessions.",
            kind="preference", tags=["auth", "sessions"], file_types=["py"],
            preference={"rejected": "Redis sessions", "preferred": "file sessions",
                        "reasoning": "one less server"},
            evidence=[{"quote": "No, don't use Redis for sessions", "session_id": "s-1",
                       "observed_at": "2026-11-20T10:00:00.000Z"}]).id,
        "expiry": lore.lessons.add("Sessions expire after a day",
                                  "Expired session files are removed nightly.",
                                  kind="project_rule", tags=["auth"]).id,
        "cron": lore.lessons.add("Clean-up jobs run from cron, not the app",
                                "Nightly jobs live in ops/cron.", kind="decision").id,
        "numpy": lore.lessons.add("Pin numpy below 2 for the old wheels",
                                 "Binary wheels built for numpy 1 break on 2.", kind="bug_fix",
                                 file_types=["toml"]).id,
    }
    lore.lessons.link(ids["sessions"], ids["expiry"], "related_to")
    lore.lessons.link(ids["expiry"], ids["cron"], "depends_on")
    return ids


def shoot(page, name: str) -> None:
    if os.environ.get("LORE_SCREENSHOTS") == "1":
        IMAGES.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(IMAGES / name), full_page=True)


def test_search_and_open_a_lesson(browser, lore, seeded):
    with running(lore) as url:
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.goto(url + "/")
        page.get_by_label("Query").fill("where do we keep login state?")
        page.keyboard.press("Enter")
        page.wait_for_url("**/?q=*")
        titles = page.locator("ol.results > li h2").all_inner_texts()
        assert "Use local file sessions, not Redis" in titles[:2], titles
        assert "Pin numpy below 2 for the old wheels" not in titles[:2]
        first = page.locator("ol.results > li", has_text="Use local file sessions, not Redis")
        first.locator("summary").focus()
        page.keyboard.press("Enter")  # the explanation opens from the keyboard
        assert first.locator("table.explain").is_visible()
        assert "similarity" in first.locator("table.explain").inner_text()
        shoot(page, "search.png")

        first.locator("h2 a").click()
        page.wait_for_url(f"**/lessons/{seeded['sessions']}")
        assert page.locator("h1").inner_text() == "Use local file sessions, not Redis"
        assert "No, don't use Redis for sessions" in page.locator("#evidence ~ blockquote").inner_text()
        assert page.locator("svg.graph a").count() == 3  # itself, one link away, two links away
        shoot(page, "lesson.png")

        # The graph's nodes are links reachable with the keyboard.
        page.locator(f'svg.graph a[href="/lessons/{seeded["cron"]}"]').focus()
        page.keyboard.press("Enter")
        page.wait_for_url(f"**/lessons/{seeded['cron']}")
        assert page.locator("h1").inner_text() == "Clean-up jobs run from cron, not the app"

        for path, name in (("/rules", "rules.png"), ("/stats", "stats.png"),
                           ("/lessons", "lessons.png")):
            page.goto(url + path)
            assert page.locator("main h1").is_visible()
            shoot(page, name)


def test_pages_fit_a_phone(browser, lore, seeded):
    with running(lore) as url:
        page = browser.new_page(viewport={"width": 375, "height": 740}, is_mobile=True)
        for path in ("/?q=sessions", "/lessons", f"/lessons/{seeded['sessions']}", "/rules", "/stats"):
            page.goto(url + path)
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 376, f"{path} scrolls sideways at phone width ({width}px)"
        shoot(page, "phone-stats.png")


def test_add_a_lesson_with_the_form(browser, lore, seeded):
    with running(lore) as url:
        page = browser.new_page()
        page.goto(url + "/lessons")
        page.get_by_label("Title").fill("Prefer pathlib over os.path")
        page.get_by_label("Tags (comma-separated)").fill("python, style")
        page.get_by_role("button", name="Save lesson").click()
        page.wait_for_url("**/lessons/*")
        assert page.locator("h1").inner_text() == "Prefer pathlib over os.path"
        assert lore.lessons.count() == 5


# ---- the review queue ---------------------------------------------------------------------------

def waiting(lore, text: str, previous: str, project: str = "/srv/shop") -> str:
    out = lore.learning.record(text, previous, project=project, session_id="s-7")
    assert out.lesson is not None, out
    if out.lesson.status == "candidate":
        lore.lessons.update(out.lesson.id, status="proposed")
    return out.lesson.id


def lore_cli(*args: str) -> subprocess.CompletedProcess:
    """The CLI in its own process against the same home (LORE_HOME is the test's)."""
    return subprocess.run([sys.executable, "-m", "lore", *args], capture_output=True, text=True,
                          timeout=120, env=os.environ.copy())


@pytest.fixture
def queue(lore):
    return {
        "httpx": waiting(lore, "No, don't use requests here, use httpx instead",
                         "I'll add requests to fetch the price list."),
        "tabs": waiting(lore, "Always indent the Makefile with tabs, never spaces",
                        "I indented the new Makefile target with four spaces."),
        "black": waiting(lore, "Don't run black on the generated files",
                         "I formatted everything under gen/ with black."),
    }


def test_review_in_the_browser(browser, lore, queue):
    with running(lore) as url:
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.goto(url + "/review")
        cards = page.locator("article.review")
        assert cards.count() == 3
        httpx_card = cards.filter(has_text="use httpx instead")
        assert "I'll add requests to fetch the price list." in httpx_card.inner_text()
        assert "scope /srv/shop" in httpx_card.inner_text() and "session s-7" in httpx_card.inner_text()
        shoot(page, "review.png")

        # Approve with the keyboard: focus the button, press Enter.
        httpx_card.get_by_role("button", name="Approve").focus()
        page.keyboard.press("Enter")
        page.wait_for_url("**/review")
        assert page.get_by_role("status").inner_text().startswith("Approved: “")
        assert page.locator("article.review").count() == 2

        # Reject with a reason.
        tabs = page.locator("article.review", has_text="Makefile")
        tabs.get_by_label("Reason").fill("this repository has no Makefile")
        tabs.get_by_role("button", name="Reject").click()
        page.wait_for_url("**/review")
        assert "(this repository has no Makefile)" in page.get_by_role("status").inner_text()

        # Edit, then approve.
        black = page.locator("article.review", has_text="black")
        black.locator("summary").click()
        black.get_by_label("Title").fill("Never reformat generated code under gen/")
        black.get_by_role("button", name="Save and approve").click()
        page.wait_for_url("**/review")
        rules_left = page.locator('article.review[aria-labelledby^="r-"]')
        assert rules_left.count() == 0
        assert "No rule waits for review." in page.locator("main").inner_text()
        # The approved rules' words call for checks, which wait for review on their own.
        checks = page.locator('article.review[aria-labelledby^="c-"]')
        assert checks.count() >= 1 and "gen/" in checks.first.inner_text()

    shown = lore_cli("recall", "preferences", "--project", "/srv/shop", "--json")
    assert shown.returncode == 0, shown.stderr
    rules = {r["id"]: r for r in json.loads(shown.stdout)["preferences"]}
    assert rules[queue["httpx"]]["status"] == "active"
    assert rules[queue["black"]]["title"] == "Never reformat generated code under gen/"
    assert rules[queue["black"]]["status"] == "active" and queue["tabs"] not in rules
    rejected = lore.lessons.get(queue["tabs"])
    assert rejected.status == "rejected"
    assert rejected.metadata["learning"]["rejected_reason"] == "this repository has no Makefile"


def test_review_and_trends_fit_a_phone(browser, lore, queue):
    from datetime import UTC, datetime, timedelta

    # Weeks of history: the same correction again and again, fewer as the rule settles in.
    for weeks_ago, times in ((5, 3), (4, 3), (3, 2), (2, 2), (1, 1)):
        for i in range(times):
            at = (datetime.now(UTC) - timedelta(weeks=weeks_ago, hours=i))
            lore.learning.record("No, don't use requests here, use httpx instead",
                                "I'll add requests to fetch the price list.", project="/srv/shop",
                                session_id=f"s-{weeks_ago}-{i}",
                                at=at.isoformat(timespec="milliseconds").replace("+00:00", "Z"))
    lore.review.decide(queue["httpx"], "approve")
    lore.review.decide(queue["tabs"], "reject", reason="this repository has no Makefile")
    with running(lore) as url:
        page = browser.new_page(viewport={"width": 375, "height": 740}, is_mobile=True)
        for path in ("/review", "/trends", "/trends?period=month"):
            page.goto(url + path)
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 376, f"{path} scrolls sideways at phone width ({width}px)"
        shoot(page, "phone-trends.png")
        wide = browser.new_page(viewport={"width": 1100, "height": 900})
        wide.goto(url + "/trends")
        assert wide.locator("svg.chart").count() >= 2
        bars = wide.locator("svg.chart").first.locator("rect title").all_text_contents()
        assert any(t.endswith("repeated 3") for t in bars), bars  # five weeks ago
        assert "this repository has no Makefile" in wide.locator("main").inner_text()
        shoot(wide, "trends.png")


def test_a_long_project_path_stays_in_its_own_column_on_stats(browser, lore):
    long_path = "/home/someone/src/" + "/".join(f"averylongfoldername_{i}" for i in range(8))
    lore.lessons.add("Use pnpm, not npm", "The lockfile is pnpm's.", kind="preference",
                    project=long_path)
    with running(lore) as url:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(url + "/stats")
        boxes = page.evaluate("""() => [...document.querySelectorAll('.grid table.explain')]
            .map(t => { const r = t.getBoundingClientRect();
                        return {left: r.left, right: r.right, scroll: t.scrollWidth,
                                width: t.clientWidth, text: t.caption ? t.caption.innerText : ''}; })""")
    assert any(b["text"] == "By project" for b in boxes)
    ordered = sorted(boxes, key=lambda b: (round(b["left"]), b["right"]))
    for a, b in zip(ordered, ordered[1:], strict=False):
        if round(a["left"]) < round(b["left"]):  # side by side: the first ends before the next
            assert a["right"] <= b["left"] + 1, (a, b)
    assert all(b["scroll"] <= b["width"] + 1 for b in boxes), boxes
