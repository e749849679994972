"""Lessons through the core API: every field, validation, tags, re-embedding rules."""

from __future__ import annotations

import pytest

from conftest import FakeEmbedder, make_settings
from lore.api import Lore, content_hash
from lore.errors import InvalidInput, NotFound
from lore.ids import is_id, new_id

FULL = dict(
    kind="preference",
    status="proposed",
    confidence="high",
    score=0.8,
    source="correction",
    source_notes="said twice in one week",
    project="/home/dev/shop",
    summary="Sessions are files.",
    problem_solved="Redis was one more server to run.",
    when_to_apply="small deployments",
    when_not_to_apply="several app servers",
    preference={"context": "auth", "rejected": "Redis sessions", "preferred": "file sessions",
                "reasoning": "simplicity"},
    file_types=["*.PY", ".toml"],
    tags=["Auth", "Session Storage", "auth"],
    contexts=["Small  Deployments"],
    anti_contexts=["multi-region"],
    examples=[{"code": "SESSION_ENGINE = 'file'", "language": "python", "context": "settings"}],
    trade_offs=[{"type": "pro", "description": "no server"},
                {"type": "con", "description": "one host only"}],
    evidence=[{"quote": "No, don't use Redis, use files", "session_id": "s1",
               "message_id": "m1", "observed_at": "2026-11-01T10:00:00Z"}],
    metadata={"origin": "test"},
)


def test_add_and_get_every_field(fake_lore):
    lesson = fake_lore.lessons.add("Use file sessions, not Redis", "Keep sessions on disk.", **FULL)
    got = fake_lore.lessons.get(lesson.id)
    assert got == lesson
    assert is_id(lesson.id)
    assert lesson.kind == "preference" and lesson.status == "proposed"
    assert lesson.confidence == "high" and lesson.score == 0.8
    assert lesson.tags == ("auth", "session-storage")  # lower case, hyphenated, de-duplicated
    assert lesson.contexts == ("small deployments",)
    assert lesson.anti_contexts == ("multi-region",)
    assert lesson.file_types == ("py", "toml")
    assert lesson.preference.rejected == "Redis sessions"
    assert lesson.examples[0].language == "python"
    assert [t.type for t in lesson.trade_offs] == ["pro", "con"]
    assert lesson.evidence[0].session_id == "s1"
    assert lesson.metadata == {"origin": "test"}
    assert lesson.content_hash == content_hash(lesson.title, lesson.content)
    assert lesson.created_at.endswith("Z") and lesson.created_at == lesson.updated_at
    data = lesson.to_dict()
    assert data["preference"]["preferred"] == "file sessions"
    assert set(data) >= {"id", "title", "content", "kind", "status", "confidence", "score",
                         "source", "tags", "contexts", "anti_contexts", "examples", "trade_offs",
                         "evidence", "edges", "usage_count", "last_used", "content_hash"}


def test_defaults(fake_lore):
    lesson = fake_lore.lessons.add("Something learned", "details")
    assert (lesson.kind, lesson.status, lesson.confidence) == ("learning", "active", "medium")
    assert lesson.project is None and lesson.preference is None and lesson.score is None


def test_score_alone_sets_the_confidence_level(fake_lore):
    assert fake_lore.lessons.add("a", "x", score=0.9).confidence == "very-high"
    assert fake_lore.lessons.add("b", "x", score=0.55).confidence == "medium"
    assert fake_lore.lessons.add("c", "x", score=0.1).confidence == "very-low"


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"title": "   "}, "title"),
        ({"confidence": "sure"}, "valid: very-low, low, medium, high, very-high"),
        ({"source": "twitter"}, "invalid source 'twitter'; valid: conversation"),
        ({"kind": "gossip"}, "invalid kind 'gossip'"),
        ({"status": "maybe"}, "invalid status 'maybe'"),
        ({"score": 1.5}, "score"),
        ({"trade_offs": [{"type": "meh", "description": "x"}]}, "trade_offs"),
        ({"examples": [{"code": ""}]}, "examples"),
        ({"colour": "blue"}, "unknown field 'colour'"),
        ({"tags": "auth"}, "tags"),
    ],
)
def test_invalid_input_changes_nothing(fake_lore, fields, message):
    args = {"title": "Fine title", "content": "body", **fields}
    with pytest.raises(InvalidInput, match=message.replace("(", r"\(")):
        fake_lore.lessons.add(**args)
    assert fake_lore.store.count() == 0
    assert fake_lore.store.conn.execute("SELECT count(*) FROM lessons_fts").fetchone()[0] == 0


def test_update_changes_given_fields_and_replaces_lists(fake_lore):
    lesson = fake_lore.lessons.add("Title", "Body", **FULL)
    updated = fake_lore.lessons.update(lesson.id, confidence="very-high", tags=["python"],
                                      preference={"preferred": "signed cookies"})
    assert updated.confidence == "very-high"
    assert updated.tags == ("python",)
    assert updated.preference.preferred == "signed cookies"
    assert updated.preference.rejected == ""  # the preference object is replaced as a whole
    assert updated.contexts == lesson.contexts and updated.evidence == lesson.evidence
    assert updated.created_at == lesson.created_at
    assert updated.updated_at >= lesson.updated_at


def test_update_invalid_value_changes_nothing(fake_lore):
    lesson = fake_lore.lessons.add("Title", "Body", tags=["a"])
    with pytest.raises(InvalidInput):
        fake_lore.lessons.update(lesson.id, tags=["b"], confidence="certain")
    assert fake_lore.lessons.get(lesson.id) == lesson


def test_unknown_ids(fake_lore):
    for call in (fake_lore.lessons.get, fake_lore.lessons.delete,
                 lambda i: fake_lore.lessons.update(i, title="x")):
        with pytest.raises(NotFound, match="no lesson with id"):
            call("01JD8X3Q5M0000000000000000")


def test_unchanged_text_is_never_re_embedded(settings):
    emb = FakeEmbedder()
    with Lore.open(settings, embedder=emb) as lore:
        lesson = lore.lessons.add("Pin numpy", "Floating versions broke CI")
        assert len(emb.calls) == 1
        lore.lessons.update(lesson.id, tags=["deps"], confidence="high", kind="decision")
        assert len(emb.calls) == 1  # metadata only: no new vector
        lore.lessons.update(lesson.id, content="Floating versions broke CI twice")
        assert len(emb.calls) == 2
        assert emb.calls[-1] == "Pin numpy\n\nFloating versions broke CI twice"
        assert lore.admin.reembed().total == 0  # nothing stale
        assert len(emb.calls) == 2


def test_keyword_index_follows_updates_and_deletes(fake_lore):
    lesson = fake_lore.lessons.add("Alpha title", "zebra content", tags=["kiwi"])
    fts = "SELECT count(*) FROM lessons_fts WHERE lessons_fts MATCH ?"
    q = fake_lore.store.conn.execute
    assert q(fts, ("zebra",)).fetchone()[0] == 1
    assert q(fts, ("kiwi",)).fetchone()[0] == 1
    fake_lore.lessons.update(lesson.id, content="giraffe content")
    assert q(fts, ("zebra",)).fetchone()[0] == 0
    assert q(fts, ("giraffe",)).fetchone()[0] == 1
    fake_lore.lessons.delete(lesson.id)
    assert q(fts, ("giraffe",)).fetchone()[0] == 0


def test_tag_aliases_from_config_and_merge(lore_home):
    s = make_settings(lore_home, tag_aliases={"JS": "JavaScript", "py": "python"})
    with Lore.open(s, embedder=FakeEmbedder()) as lore:
        a = lore.lessons.add("One", "x", tags=["js", "PY", "Web Dev"])
        assert a.tags == ("javascript", "python", "web-dev")
        b = lore.lessons.add("Two", "x", tags=["frontend"])
        assert lore.lessons.merge_tags("frontend", "web-dev") == 1
        assert lore.lessons.get(b.id).tags == ("web-dev",)
        # The merged name is remembered as an alias for new lessons and for filters.
        assert lore.lessons.add("Three", "x", tags=["Frontend"]).tags == ("web-dev",)
        with pytest.raises(NotFound):
            lore.lessons.merge_tags("nonexistent", "x")
        with pytest.raises(InvalidInput):
            lore.lessons.merge_tags("web-dev", "Web Dev")


def test_known_tags_warning_list(lore_home):
    s = make_settings(lore_home, known_tags=["python", "git"])
    with Lore.open(s, embedder=FakeEmbedder()) as lore:
        assert lore.lessons.unknown_tags(["Python", "gti"]) == ["gti"]


def test_stats(fake_lore):
    a = fake_lore.lessons.add("One", "x", kind="bug_fix", project="/p")
    fake_lore.lessons.add("Two", "x", tags=["t"])
    fake_lore.lessons.link(a.id, fake_lore.search.query("Two", track=False)[0].id)
    st = fake_lore.admin.stats()
    assert st["lessons"] == 2 and st["edges"] == 1 and st["vectors"] == 2
    assert st["by_kind"] == {"bug_fix": 1, "learning": 1}
    assert st["by_project"] == {"/p": 1, "(global)": 1}
    assert st["embedding_model"] == "fake-bow" and st["embedding_dimensions"] == 64
    assert st["size_bytes"] > 0


def test_a_malformed_id_is_bad_input_not_a_missing_lesson(fake_lore):
    """'abc' cannot name a lesson: the caller is told what an id looks like."""
    for call in (lambda: fake_lore.lessons.get("abc"), lambda: fake_lore.lessons.delete("abc"),
                 lambda: fake_lore.lessons.update("abc", title="x"),
                 lambda: fake_lore.search.related("abc"), lambda: fake_lore.lessons.link("abc", "def")):
        with pytest.raises(InvalidInput, match="is not a lesson id"):
            call()
    with pytest.raises(NotFound, match="no lesson with id"):
        fake_lore.lessons.get(new_id())


def test_a_new_lesson_is_created_and_updated_at_one_instant(fake_lore, monkeypatch):
    """The clock is read once: two readings a millisecond apart made them differ now and then."""
    import itertools

    import lore.core.lessons as lessons

    ticks = itertools.count()
    monkeypatch.setattr(lessons, "now", lambda: f"2026-11-26T19:49:04.{next(ticks):03d}Z")
    lesson = fake_lore.lessons.add("Use file sessions, not Redis", "Keep sessions on disk.")
    assert lesson.created_at == lesson.updated_at
    edited = fake_lore.lessons.update(lesson.id, content="Keep sessions on local disk.")
    assert edited.created_at == lesson.created_at and edited.updated_at > lesson.updated_at
