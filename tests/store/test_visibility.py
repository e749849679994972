"""Who may be shown a lesson, through every read that returns lessons to a person: two people
share one database; ana's personal rule is never applied, looked up, shown, walked to or
offered for review to ben, and ben sees it once ana makes it a team rule."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import FakeEmbedder, make_settings
from lore.api import Lore
from lore.errors import NotFound
from lore.models import Filters

PROJECT = "/work/shop"


@pytest.fixture
def people(tmp_path: Path) -> Iterator[dict[str, Lore]]:
    db = str(tmp_path / "shared.db")
    opened = {name: Lore.open(make_settings(tmp_path / name, user=name, database=db),
                              embedder=FakeEmbedder()) for name in ("ana", "ben")}
    yield opened
    for lore in opened.values():
        lore.close()


def rules_applied(lore: Lore, home: Path) -> str:
    plan = lore.apply.plan(PROJECT, home, include_global=True)
    return "".join(c.new.decode() for c in plan.changes if c.new)


def test_a_personal_rule_reaches_no_one_else_until_it_is_shared(people, tmp_path):
    ana, ben = people["ana"], people["ben"]
    mine = ana.lessons.add("Use pnpm, not npm", "pnpm for installs", kind="preference",
                          source="correction", project=PROJECT)
    team = ana.lessons.add("Pin numpy below 2", "numpy 2 broke the build", kind="preference",
                          project=PROJECT)
    hub = ana.lessons.add("Package managers", "notes on the tools")
    ana.lessons.link(hub.id, mine.id)
    proposed = ana.lessons.add("Squash before merging", "one commit per change",
                              kind="preference", source="correction", status="proposed",
                              metadata={"learning": {"occurrences": 2}})

    # ana sees her own rule everywhere
    assert "Use pnpm" in rules_applied(ana, tmp_path / "ana-home")
    assert mine.id in {x.id for x in ana.search.preferences(PROJECT)}
    assert mine.id in {x.id for x in ana.review.approved()}
    assert [r.id for r in ana.search.related(hub.id)] == [mine.id]
    assert proposed.id in {w["id"] for w in ana.review.waiting()}

    # ben: not applied, not a preference, not shown, not reached through a link
    applied = rules_applied(ben, tmp_path / "ben-home")
    assert "Pin numpy below 2" in applied and "Use pnpm" not in applied
    assert {x.id for x in ben.search.preferences(PROJECT)} == {team.id}
    assert mine.id not in {x.id for x in ben.review.approved()}
    with pytest.raises(NotFound, match=f"no lesson with id {mine.id}"):
        ben.lessons.get(mine.id)
    with pytest.raises(NotFound):
        ben.lessons.update(mine.id, title="Use yarn")
    with pytest.raises(NotFound):
        ben.search.related(mine.id)
    assert ben.search.related(hub.id) == [] and list(ben.search.subgraph(hub.id).nodes) == [hub.id]
    assert proposed.id not in {w["id"] for w in ben.review.waiting()}
    assert mine.id not in {h.id for h in ben.search.query("pnpm installs", Filters(project=PROJECT))}
    assert "Use pnpm" not in ben.apply.session_context(PROJECT)

    ana.lessons.set_visibility(mine.id, "team")
    assert "Use pnpm" in rules_applied(ben, tmp_path / "ben-home")
    assert ben.lessons.get(mine.id).title == "Use pnpm, not npm"
    assert [r.id for r in ben.search.related(hub.id)] == [mine.id]
