"""The learning pipeline: record, extract, merge, reinforce, conflict, supersede, score."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime, timedelta

import pytest

from lore.extract.merge import same_phrase
from lore.extract.score import confidence

PROPOSAL = "I'll add Redis as the session store and wire it into the auth middleware."


def test_confidence_follows_seed_004():
    recent = datetime.now(UTC).isoformat()
    old = (datetime.now(UTC) - timedelta(days=30)).isoformat()
    assert confidence(1, True, recent, False, 7) == 0.7   # 0.3 + 0.1 + 0.2 + 0.1
    assert confidence(3, True, recent, False, 7) == 0.9   # active at 0.85
    assert confidence(9, True, recent, False, 7) == 1.0   # repetition caps at +0.4
    assert confidence(1, False, old, False, 7) == 0.4     # evidence only
    assert confidence(2, True, recent, True, 7) == 0.5    # a conflict costs 0.3


def test_same_phrase():
    assert same_phrase("Redis", "a Redis cache")
    assert same_phrase("local file sessions", "file sessions")
    assert not same_phrase("Redis", "Postgres")
    assert not same_phrase("", "Redis")


def test_a_correction_becomes_a_proposed_preference_with_evidence(fake_lore):
    out = fake_lore.learning.record("No, don't use Redis, use local file sessions instead",
                                     PROPOSAL, project="/work/shop", session_id="s1",
                                     files=["/work/shop/auth.py", "/work/shop/app.py"])
    assert out.action == "created"
    lesson = out.lesson
    assert lesson is not None and lesson.kind in ("preference", "anti_pattern")
    assert lesson.status == "proposed" and lesson.score == 0.7
    assert lesson.preference is not None
    assert "redis" in (lesson.preference.rejected or "").lower()
    assert "file sessions" in (lesson.preference.preferred or "").lower()
    assert lesson.project == "/work/shop" and lesson.file_types == ("py",)
    [ev] = lesson.evidence
    assert ev.quote.startswith("No, don't use Redis") and ev.context == PROPOSAL
    assert ev.session_id == "s1"
    assert lesson.metadata["learning"]["occurrences"] == 1
    row = fake_lore.store.conn.execute("SELECT label, status, lesson_id, action FROM corrections").fetchone()
    assert tuple(row) == ("correction", "learned", lesson.id, "created")


def test_restating_reinforces_instead_of_duplicating(fake_lore):
    learning = fake_lore.learning
    first = learning.record("don't use Redis, use local file sessions instead", PROPOSAL,
                            project="/p", session_id="s1", origin="hook")
    second = learning.record("No! use file sessions instead of Redis", PROPOSAL, project="/p",
                             session_id="s2", origin="hook")
    third = learning.record("again: local file sessions, not Redis", PROPOSAL, project="/p",
                            session_id="s3", origin="hook")
    assert first.lesson and second.lesson and third.lesson
    assert second.action == "reinforced" and second.lesson.id == first.lesson.id
    assert third.action == "reinforced"
    lesson = fake_lore.lessons.get(first.lesson.id)
    assert lesson.metadata["learning"]["occurrences"] == 3
    assert len(lesson.evidence) == 3
    assert lesson.score == 0.9 and lesson.status == "active"  # three times: active
    count = fake_lore.store.conn.execute("SELECT count(*) FROM lessons").fetchone()[0]
    assert count == 1


def test_the_same_message_twice_is_stored_once(fake_lore):
    learning = fake_lore.learning
    a = learning.record("never commit the .env file", None, project="/p", session_id="s1")
    b = learning.record("never commit the .env file", None, project="/p", session_id="s1")
    assert a.action == "created" and b.action == "duplicate"
    assert fake_lore.lessons.get(a.lesson.id).metadata["learning"]["occurrences"] == 1


def test_a_contradiction_is_linked_and_both_lose_confidence(fake_lore):
    learning = fake_lore.learning
    old = learning.record("use Redis for sessions, not file sessions", None, project="/p",
                          session_id="s1").lesson
    new = learning.record("no, use file sessions, not Redis", PROPOSAL, project="/p",
                          session_id="s2")
    assert old is not None and new.lesson is not None
    assert new.action == "conflict" and new.related == [old.id]
    fresh_old = fake_lore.lessons.get(old.id)
    assert fresh_old.score == pytest.approx(old.score - 0.3)
    assert new.lesson.score == pytest.approx(0.4) and new.lesson.status == "candidate"
    assert any(e.relation == "contradicts" for e in fresh_old.edges)
    listed = fake_lore.search.preferences("/p", statuses=("active", "proposed", "candidate"))
    assert {p.id for p in listed} == {old.id, new.lesson.id}


def test_a_change_of_mind_supersedes_the_old_rule(fake_lore):
    learning = fake_lore.learning
    old = learning.record("use npm, not yarn", None, project="/p", session_id="s1").lesson
    new = learning.record("from now on use yarn instead of npm", None, project="/p",
                          session_id="s2")
    assert old is not None and new.action == "superseded" and new.related == [old.id]
    assert fake_lore.lessons.get(old.id).status == "superseded"
    assert any(e.relation == "supersedes" and e.to_id == old.id for e in new.lesson.edges)


def test_none_and_one_off_messages_make_no_lesson(fake_lore):
    learning = fake_lore.learning
    fake_lore.store.conn.execute(
        "INSERT INTO corrections (event_id, session_id, project, user_message, assistant_proposal, "
        "at) VALUES ('e1', 's1', '/p', 'looks good, thanks', 'Done.', '2026-11-01T00:00:00')")
    fake_lore.store.conn.execute(
        "INSERT INTO corrections (event_id, session_id, project, user_message, assistant_proposal, "
        "at) VALUES ('e2', 's1', '/p', 'revert that', 'I renamed the helper.', "
        "'2026-11-01T00:00:01')")
    outcomes = learning.process_pending()
    assert [o.action for o in outcomes] == ["none", "one-off"]
    assert fake_lore.store.conn.execute("SELECT count(*) FROM lessons").fetchone()[0] == 0
    assert learning.process_pending() == []


def test_secrets_are_redacted_before_storage(fake_lore):
    key = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    out = fake_lore.learning.record(f"no, never hardcode the key {key} in config.py, read it "
                                     "from the environment", None, project="/p")
    stored = json.dumps([r[0] for r in fake_lore.store.conn.execute("SELECT user_message FROM corrections")])
    assert key not in stored and "[REDACTED" in stored
    assert out.lesson is not None and key not in json.dumps(out.lesson.to_dict())


def test_huge_and_empty_input(fake_lore):
    learning = fake_lore.learning
    with pytest.raises(Exception, match="empty"):
        learning.record("   ", None)
    out = learning.record("never use eval here. " + "word " * 50_000, None, project="/p")
    stored = fake_lore.store.conn.execute("SELECT user_message FROM corrections").fetchone()[0]
    assert len(stored) <= 4000 and stored.endswith("…")
    assert out.lesson is not None


def test_rescore_lets_recency_fade(fake_lore):
    learning = fake_lore.learning
    lesson = learning.record("always use type hints", None, project="/p").lesson
    assert lesson is not None and lesson.status == "proposed"
    meta = dict(lesson.metadata)
    meta["learning"] = {**meta["learning"], "last_seen": "2020-01-01T00:00:00+00:00"}
    fake_lore.lessons.update(lesson.id, metadata=meta)
    assert learning.rescore() == 1
    faded = fake_lore.lessons.get(lesson.id)
    assert faded.score == 0.6 and faded.status == "proposed"


def test_suggested_rules_wait_for_review(fake_lore):
    out = fake_lore.learning.suggest_rule("Use httpx instead of requests", "rewrote it twice",
                                           project="/p", file_types=["py"])
    assert out.lesson is not None and out.lesson.status == "proposed"
    assert out.lesson.file_types == ("py",)


def test_preferences_filter_by_project_and_file_type(fake_lore):
    learning = fake_lore.learning
    learning.record("always use pathlib, not os.path", None, project="/a", files=["/a/x.py"])
    learning.record("never use var, use const", None, project="/a", files=["/a/x.ts"])
    learning.record("always write commit messages in English", None, project=None)
    learning.record("use tabs", None, project="/b")
    titles = [p.title for p in fake_lore.search.preferences("/a", file_type="py")]
    assert any("pathlib" in t for t in titles) and any("English" in t for t in titles)
    assert not any("const" in t for t in titles) and not any("tabs" in t.lower() for t in titles)
    assert len(fake_lore.search.preferences(None, all_projects=True)) == 4


def _git(repo, *args, when=None):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    if when:
        env.update(GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when)
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


@pytest.mark.skipif(subprocess.run(["git", "--version"], capture_output=True).returncode != 0,
                    reason="git is not installed")
def test_silent_fix_in_a_real_repository_becomes_a_preference(fake_lore, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    app = repo / "client.py"
    app.write_text("import json\n\n\ndef fetch(url):\n    return None\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "start", when="2026-11-01T10:00:00+00:00")
    store = fake_lore.conversations.store
    store.upsert_session("s1", "claude-code", str(repo), "dev", None, None, None)
    agent_new = "def fetch(url):\n    import requests\n    return requests.get(url, timeout=5).json()\n"
    app.write_text(f"import json\n\n\n{agent_new}")
    store.insert_edit({"session_id": "s1", "message_uuid": "m1", "tool": "Edit",
                       "file_path": str(app), "file_type": "py",
                       "old_text": "def fetch(url):\n    return None\n", "new_text": agent_new,
                       "timestamp": "2026-11-01T11:00:00+00:00", "succeeded": 1})
    # A formatting-only touch of another edit is not a fix.
    store.insert_edit({"session_id": "s1", "message_uuid": "m2", "tool": "Edit",
                       "file_path": str(app), "file_type": "py", "old_text": "import json",
                       "new_text": "import json", "timestamp": "2026-11-01T11:00:01+00:00",
                       "succeeded": 1})
    user = "def fetch(url):\n    import httpx\n    return httpx.get(url, timeout=5).json()\n"
    app.write_text(f"import json\n\n\n{user}")
    _git(repo, "commit", "-qam", "use httpx", when="2026-11-01T12:00:00+00:00")
    outcomes = fake_lore.learning.silent_fixes(project=str(repo))
    assert len(outcomes) == 1
    [o] = outcomes
    assert o.detection.type == "silent_fix" and o.lesson is not None
    assert o.lesson.source == "silent_fix" and o.lesson.file_types == ("py",)
    assert "httpx" in json.dumps(o.lesson.to_dict())
    row = fake_lore.store.conn.execute("SELECT correction_type, diff FROM corrections").fetchone()
    assert row[0] == "silent_fix" and "httpx" in row[1] and "requests" in row[1]
    # Checked once: a second pass finds nothing new.
    assert fake_lore.learning.silent_fixes(project=str(repo)) == []
