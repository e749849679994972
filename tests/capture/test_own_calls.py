"""Lore never learns from its own model calls: their transcripts are not imported, not read for
learning, and sessions imported from them before are removed by the next import."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lore.api import Lore
from lore.capture import backfill
from lore.llm import own
from lore.llm.checks import request as check_request
from lore.llm.checks import rule_text
from lore.llm.judge import Candidate, batches
from lore.llm.rerank import Excerpt, build

TEMP = tempfile.gettempdir()
JUDGE_PROMPT = batches([Candidate("k", "no, use vitest not jest", "I set up jest.")])[0].request
USER_WORDS = "Please fix the flaky login test, it uses jest"


def transcript(folder: Path, session: str, cwd: str, prompt: str) -> Path:
    """A Claude Code transcript: the prompt and the reply, as `claude -p` writes them."""
    folder.mkdir(parents=True, exist_ok=True)
    records = [
        {"type": "user", "uuid": f"{session}-u", "parentUuid": None, "sessionId": session, "cwd": cwd,
         "timestamp": "2026-11-20T10:00:00Z", "entrypoint": "sdk-cli",
         "message": {"role": "user", "content": prompt}},
        {"type": "assistant", "uuid": f"{session}-a", "parentUuid": f"{session}-u", "sessionId": session,
         "cwd": cwd, "timestamp": "2026-11-20T10:00:02Z",
         "message": {"role": "assistant", "model": "claude", "content": [
             {"type": "text", "text": '{"items": [{"id": "m1", "label": "preference", '
                                      '"rule": "Use vitest, not jest"}]}'}]}},
    ]
    path = folder / f"{session}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    root = tmp_path / "claude" / "projects"
    # Old calls: the temporary folder, Lore's prompt (the judge's, and `lore llm check`'s).
    transcript(root / own.project_folder_name(TEMP), "old-judge", TEMP, JUDGE_PROMPT.messages[0].content)
    transcript(root / own.project_folder_name(TEMP), "old-check", TEMP, "Reply with the single word: ok")
    # A call written in Lore's call folder, whatever it says.
    calls = tmp_path / "home" / own.CALL_FOLDER
    transcript(root / own.project_folder_name(calls), "new-call", str(calls), "anything at all")
    # The user's own work in the temporary folder and in a project: imported.
    transcript(root / own.project_folder_name(TEMP), "user-tmp", TEMP, USER_WORDS)
    transcript(root / "-work-shop", "user-shop", "/work/shop", "Add a login page with vitest tests")
    return root


def test_own_calls_are_left_out_of_import_search_and_learning(fake_lore: Lore, projects: Path) -> None:
    report = fake_lore.conversations.ingest([projects], embed=False)
    assert report.sessions == {"user-tmp", "user-shop"} and report.own_calls == 3
    assert not report.skipped  # not reported as a problem
    for sid in ("old-judge", "old-check", "new-call"):
        assert fake_lore.store.conversations.session(sid) is None
    found = fake_lore.conversations.search("vitest jest", limit=10)
    assert {h.session_id for h in found} <= {"user-tmp", "user-shop"}
    assert "<messages>" not in json.dumps([h.snippet for h in found])
    files, skipped = backfill.transcripts([projects])
    assert len(files) == 2 and sum(why == "Lore's own model call" for _, why in skipped) == 3
    typed = [m.text for f in files for m in backfill.read(f)]
    assert sorted(typed) == sorted([USER_WORDS, "Add a login page with vitest tests"])


def test_sessions_imported_before_are_removed_by_the_next_import(fake_lore: Lore, projects: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # As an import before Lore told its calls apart did: everything went in.
    monkeypatch.setattr(own, "own_transcript", lambda path: False)
    first = fake_lore.conversations.ingest([projects], embed=False)
    assert len(first.sessions) == 5
    fake_lore.conversations.embed_pending()
    assert fake_lore.conversations.search("single word ok", limit=10)
    # A learning pass captured a message from one of them; it waits for the judge.
    with fake_lore.store.atomic():
        fake_lore.store.corrections.add_correction(
            event_id="backfill:old-check:1", session_id="old-check", project=TEMP,
            user_message="Reply with the single word: ok", proposal=None, files=(), at="2026-11-20",
            origin="backfill")
        fake_lore.store.corrections.add_correction(
            event_id="backfill:user-shop:1", session_id="user-shop", project="/work/shop",
            user_message="Add a login page with vitest tests", proposal=None, files=(),
            at="2026-11-20", origin="backfill")
    # The old judge's transcript is gone from disk (Claude Code cleans up): known by its
    # folder and its prompt all the same.
    (projects / own.project_folder_name(TEMP) / "old-judge.jsonl").unlink()
    monkeypatch.undo()
    again = fake_lore.conversations.ingest([projects], embed=False)
    assert again.purged == 3 and again.messages == 0
    kept = {sid for sid in ("old-judge", "old-check", "new-call", "user-tmp", "user-shop")
            if fake_lore.store.conversations.session(sid) is not None}
    assert kept == {"user-tmp", "user-shop"}
    hits = fake_lore.conversations.search("single word ok vitest jest", limit=10)
    assert {h.session_id for h in hits} <= {"user-tmp", "user-shop"}
    assert [r["session_id"] for r in fake_lore.store.corrections.pending(10)] == ["user-shop"]
    stats = fake_lore.store.conversations.stats()
    assert stats["sessions"] == 2 and stats["messages"] == 4
    assert fake_lore.conversations.ingest([projects], embed=False).purged == 0  # nothing left


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(min_size=1, max_size=300), turn=st.none() | st.text(max_size=200),
       rules=st.lists(st.text(min_size=1, max_size=60), max_size=3))
def test_every_request_lore_builds_opens_as_lore_prompt(text: str, turn: str | None,
                                                        rules: list[str]) -> None:
    """Whatever the messages hold, each request opens with one of Lore's openings; a user's
    message of the same words in the temporary folder is only Lore's when it opens so."""
    for batch in batches([Candidate("k", text, turn)], known_rules=rules):
        assert own.is_lore_prompt(batch.request.messages[0].content)
    assert own.is_lore_prompt(check_request(rule_text(text)).messages[0].content)
    assert own.is_lore_prompt(build(text, [Excerpt(1, text)], 1).request.messages[0].content)
    assert own.own_session(TEMP, text) == own.is_lore_prompt(text)
    first = batches([Candidate("k", text, turn)])[0].request.messages[0].content
    assert not own.own_session("/work/shop", first)


def test_the_worker_ignores_events_of_lores_own_calls(fake_lore: Lore, projects: Path,
                                                     lore_home: Path) -> None:
    """Were Lore's hooks to run in its own call anyway (a managed hook, an environment without
    LORE_DISABLED), the worker learns nothing from what they queue."""
    import time

    from lore.capture.queue import Event
    from lore.worker import Worker

    calls = str(lore_home / own.CALL_FOLDER)
    path = projects / own.project_folder_name(calls) / "new-call.jsonl"
    event = Event("e-own", "Stop", time.time(), {
        "session_id": "new-call", "cwd": calls, "transcript_path": str(path),
        "lore_signals": {"correction": True, "user_message": "no, use vitest not jest"}})
    outcome = Worker(fake_lore.settings, fake_lore).outcome(event)
    assert outcome == "Lore's own model call: nothing learned from it"
    assert fake_lore.store.conversations.session("new-call") is None
    assert fake_lore.store.corrections.list_corrections(None, 10, all_projects=True) == []
