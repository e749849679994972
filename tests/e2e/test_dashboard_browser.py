"""The dashboard in a real headless Chromium (Debian's `chromium`, driven by Playwright): search,
read the explanation, open a lesson, follow a link in its graph with the keyboard, and the
pages at phone width. With LORE_SCREENSHOTS=1 the main pages are saved into docs/images/."""

from __future__ import annotations

import os
import shutil
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
        "sessions": lore.add_lesson(
            "Use local file sessions, not Redis",
            "For auth in this project the user rejected Redis; sessions live in var/sessions.",
            kind="preference", tags=["auth", "sessions"], file_types=["py"],
            preference={"rejected": "Redis sessions", "preferred": "file sessions",
                        "reasoning": "one less server"},
            evidence=[{"quote": "No, don't use Redis for sessions", "session_id": "s-1",
                       "observed_at": "2026-11-20T10:00:00.000Z"}]).id,
        "expiry": lore.add_lesson("Sessions expire after a day",
                                  "Expired session files are removed nightly.",
                                  kind="project_rule", tags=["auth"]).id,
        "cron": lore.add_lesson("Clean-up jobs run from cron, not the app",
                                "Nightly jobs live in ops/cron.", kind="decision").id,
        "numpy": lore.add_lesson("Pin numpy below 2 for the old wheels",
                                 "Binary wheels built for numpy 1 break on 2.", kind="bug_fix",
                                 file_types=["toml"]).id,
    }
    lore.link(ids["sessions"], ids["expiry"], "related_to")
    lore.link(ids["expiry"], ids["cron"], "depends_on")
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
        assert lore.lesson_count() == 5
