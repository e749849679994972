"""One review queue: learned rules and the lessons the analysis of the work proposes, ranked
by how often they recurred (sessions seen), then by how recently."""

from __future__ import annotations

import json

from click.testing import CliRunner

from conftest import FakeEmbedder, make_settings
from lore.api import Lore
from lore.cli import cli


def work_lesson(lore: Lore, title: str, sessions: list[str], at: str) -> str:
    """A lesson as `lore analyze` proposes it (git changes, no model)."""
    lesson = lore.lessons.add(
        title, f"{title}.", kind="code_pattern", status="proposed", source="git", project="/p",
        tags=["analysis"],
        evidence=[{"quote": f"commit for {title}", "session_id": s, "observed_at": at,
                   "source": "commit abc1234"} for s in sessions],
        metadata={"analysis": {"analysed": False, "occurrences": len(sessions), "last_seen": at}})
    return lesson.id


def test_proposed_lessons_from_the_work_wait_for_review_ranked_by_recurrence(lore_home) -> None:
    settings = make_settings(lore_home)
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        once_old = work_lesson(lore, "Retry the upload with backoff", ["w1"], "2026-01-01T00:00:00Z")
        twice = work_lesson(lore, "Validate config keys at load time", ["w2", "w3"],
                            "2026-01-02T00:00:00Z")
        rule = lore.learning.record("No, don't use Redis, use local file sessions instead",
                                   "I'll add Redis.", project="/p", session_id="s1", asserted=False)
        lore.learning.record("no Redis, use local file sessions", "I'll start Redis.", project="/p",
                            session_id="s2", asserted=False)
        once_new = work_lesson(lore, "Keep migrations reversible", ["w4"], "2027-01-01T00:00:00Z")
        queue = lore.review.waiting()
        order = [item["id"] for item in queue]
    assert rule.lesson is not None
    assert order == [rule.lesson.id, twice, once_new, once_old]
    assert [q["sessions"] for q in queue] == [2, 2, 1, 1]  # the rule: seen later than "twice"
    assert [q["origin"] for q in queue] == ["correction", "work", "work", "work"]

    runner = CliRunner()
    listed = json.loads(runner.invoke(cli, ["review", "--json"], obj={"embedder": FakeEmbedder()}).output)
    assert [w["id"] for w in listed["waiting"]] == order
    out = runner.invoke(cli, ["review", "approve", twice], obj={"embedder": FakeEmbedder()})
    assert out.exit_code == 0, out.output
    out = runner.invoke(cli, ["review", "reject", once_old, "--reason", "not a pattern"],
                        obj={"embedder": FakeEmbedder()})
    assert out.exit_code == 0, out.output
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        assert [item["id"] for item in lore.review.waiting()] == [rule.lesson.id, once_new]
        approved = lore.lessons.get(twice)
        assert approved.status == "active" and "learning" not in approved.metadata
        assert approved.metadata["analysis"]["review"]["action"] == "approve"
        assert lore.lessons.get(once_old).status == "rejected"
        lore.learning.rescore()  # a decided lesson from the work is not a learned rule to score
        assert lore.lessons.get(twice).status == "active"


def test_a_deferred_lesson_from_the_work_returns_when_seen_again(lore_home) -> None:
    settings = make_settings(lore_home)
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        lid = work_lesson(lore, "Pin the toolchain version", ["w1"], "2026-01-01T00:00:00Z")
        lore.review.decide(lid, "defer")
        assert lore.review.waiting() == []
        lesson = lore.lessons.get(lid)
        meta = {**lesson.metadata["analysis"], "occurrences": 2}
        lore.lessons.update(lid, metadata={**lesson.metadata, "analysis": meta})
        assert [item["id"] for item in lore.review.waiting()] == [lid]


def test_a_lesson_from_the_work_is_decided_in_the_review_folder(lore_home, tmp_path) -> None:
    settings = make_settings(lore_home)
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        lid = work_lesson(lore, "Keep migrations reversible", ["w1"], "2026-01-01T00:00:00Z")
        folder = tmp_path / "review"
        lore.review.export_folder(folder)
        [path] = [p for p in (folder / "reviews").glob("*.md") if lid[-6:].lower() in p.name]
        path.write_text(path.read_text().replace("- [ ] approve", "- [x] approve"))
        report = lore.review.import_folder(folder)
        assert report["approved"] == 1 and report["warnings"] == []
        assert lore.lessons.get(lid).metadata["analysis"]["review"]["via"] == "folder"
        again = lore.review.import_folder(folder)
        assert again["unchanged"] == 1 and again["applied"] == []
