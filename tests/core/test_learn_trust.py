"""Learning only what a user would keep: the rule-worthiness gate, review state that sticks,
the injection threshold, the second opinion and the backfill of past transcripts."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from test_llm_http import LoopbackServer, Reply, anthropic_body, server  # noqa: F401 - a fixture

from conftest import FakeEmbedder, make_settings
from lore.api import Lore
from lore.config import load_config
from lore.errors import ConfigError
from lore.extract.detect import detect
from lore.extract.worthy import fragment, refusal, specific, worthiness

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"

PASTED_RULES = (
    "# Agent configuration\n\n## RULES\n\n"
    + "\n".join(f"{i}. {rule}" for i, rule in enumerate([
        "Always write tests before the implementation and keep them fast and isolated.",
        "Never use global variables; pass state explicitly between functions.",
        "Prefer composition over inheritance for every new class in the codebase.",
        "Use type hints everywhere, including private helpers and test functions.",
        "Keep functions under forty lines; split them when they grow beyond that.",
        "Document every public API with a docstring that shows one example call.",
        "Always run the linter before you commit and fix every warning it reports.",
    ], 1)))
TRACEBACK = ('Traceback (most recent call last):\n  File "app.py", line 3, in <module>\n'
             "    main()\n  File \"app.py\", line 2, in main\n    return foo()\n"
             "NameError: name 'foo' is not defined")


# ---- the gate, decision by decision -------------------------------------------------------------

@pytest.mark.parametrize("message, why", [
    ("thanks, looks great!", "thanks"),
    ("Thanks", "thanks"),
    ("What time is it?", "question"),
    ("Never mind", "bare reaction"),
    ("<ide_selection>The user selected the lines 98 to 98 from /src/app.py</ide_selection>",
     "client wrapper"),
    (TRACEBACK, "traceback"),
    (PASTED_RULES, "pasted text"),
    ("the staging db password is [REDACTED]", "nothing to do"),
])
def test_what_teaches_nothing_is_refused_with_a_reason(message, why):
    reason = refusal(message, detect(message))
    assert why in reason


@pytest.mark.parametrize("message, what", [
    ("No, don't use Redis, use local file sessions instead", "redis"),
    ("always run ruff before committing", "ruff"),
    ("never use var, use const", "var"),
    ("always use pathlib, not os.path", "pathlib"),
    ("keep migrations in db/migrations/", "path"),
    ("use snake_case for test names", "identifier"),
    ("always add type hints to new functions", "type hints"),
    # the shapes a check understands are specific without a model
    ("never force-push to main", "force-push"),
    ("don't push --force to develop", "command option"),
    ("don't edit gen/, those files are generated", "path"),
    ("leave vendor/ alone", "path"),
    ("never touch the generated files", "generated files"),
    ("no, use date-fns instead of moment", "choice: date-fns over moment"),
    ("prefer dayjs over moment", "choice: dayjs over moment"),
    ("use luxon, not moment", "choice: luxon over moment"),
    ("switch to ky rather than got", "choice: ky over got"),
])
def test_specific_means_a_named_thing_or_practice(message, what):
    assert what in specific(message)


@pytest.mark.parametrize("message", ["use this instead of that", "use it, not the other one",
                                     "prefer the first over the second",
                                     "stick with these rather than those"])
def test_a_choice_between_fillers_names_nothing(message):
    assert specific(message) == ""


@pytest.mark.parametrize("message", ["never force-push to main",
                                     "don't edit gen/, those files are generated",
                                     "no, use date-fns instead of moment"])
def test_the_readme_examples_are_proposed_without_a_model(fake_lore, message):
    out = fake_lore.learning.record(message, None, project="/p", session_id="s1")
    assert out.lesson is not None and out.lesson.status == "proposed", out.notice()


@pytest.mark.parametrize("message", ["be more careful", "don't do that again",
                                     "that's not how I want it", "do it properly next time"])
def test_vague_reactions_are_not_specific(message):
    assert specific(message) == ""
    det = detect(message)
    assert not worthiness(message, det).proposable


def test_a_specific_durable_preference_may_be_proposed():
    message = "No, don't use Redis, use local file sessions instead"
    verdict = worthiness(message, detect(message, "I'll add Redis for the session store."))
    assert verdict.proposable and verdict.specific and verdict.durable


# ---- through the pipeline -----------------------------------------------------------------------

def test_explicit_records_refuse_what_is_no_rule(fake_lore):
    learner = fake_lore.learning
    for text, reason in [("thanks, looks great!", "reads as thanks or approval"),
                         ("What time is it?", "reads as a question"),
                         (TRACEBACK, "traceback"),
                         ("the staging db password is hunter2-staging", "says nothing to do"),
                         (PASTED_RULES, "pasted text")]:
        out = learner.record(text, None, project="/p")
        assert out.action == "not-learned" and out.lesson is None, text
        assert out.notice().startswith("not learned: ") and reason in out.notice()
    assert fake_lore.search.preferences(None, all_projects=True, statuses=("candidate", "proposed",
                                                                   "active")) == []


def test_a_vague_record_is_a_candidate_until_it_recurs_in_another_session(fake_lore):
    learner = fake_lore.learning
    first = learner.record("don't do that again", "I rewrote the whole module.", project="/p",
                           session_id="s1")
    assert first.lesson is not None and first.lesson.status == "candidate"
    assert first.notice() == ("not learned yet: not specific enough to be a rule — kept; "
                              "proposed if it comes up in another session")
    again = learner.record("don't do that again", "I rewrote the tests too.", project="/p",
                           session_id="s2")
    assert again.action == "reinforced" and again.lesson.id == first.lesson.id
    assert again.lesson.status == "proposed" and again.notice() == ""


def test_a_vague_record_repeated_in_one_session_stays_a_candidate(fake_lore):
    learner = fake_lore.learning
    first = learner.record("don't do that again", "I rewrote the module.", session_id="s1")
    again = learner.record("Don't do that again!", "I rewrote it again.", session_id="s1")
    assert again.lesson is not None and again.lesson.id == (first.lesson and first.lesson.id)
    assert again.lesson.status == "candidate" and again.lesson.score == 0.8


def test_force_learns_and_proposes_a_vague_rule(fake_lore):
    out = fake_lore.learning.record("don't do that again", None, project="/p", force=True)
    assert out.lesson is not None and out.lesson.status == "proposed"
    forced = fake_lore.learning.record("thanks, looks great!", None, project="/p", force=True)
    assert forced.lesson is not None and forced.action == "created"


def test_hook_path_learns_nothing_from_thanks_wrappers_never_mind_or_pastes(fake_lore):
    learner = fake_lore.learning
    for i, text in enumerate(["Thanks", "Never mind",
                              "<ide_selection>The user selected the lines 98 to 98</ide_selection>",
                              PASTED_RULES]):
        learner.capture(text, "I updated the handler.", project="/p", session_id=f"s{i}",
                        origin="hook")
    outcomes = learner.process_pending()
    assert len(outcomes) == 4 and all(o.lesson is None for o in outcomes)
    assert {o.action for o in outcomes} == {"none"}
    reasons = {o.detection.reason for o in outcomes}
    assert "pasted text" in reasons and "a bare reaction, no rule in it" in reasons


def test_a_specific_correction_from_the_hooks_is_proposed(fake_lore):
    learner = fake_lore.learning
    learner.capture("No, don't use Redis, use local file sessions instead",
                    "I'll add Redis for the session store.", project="/p", session_id="s1")
    [out] = learner.process_pending()
    assert out.action == "created" and out.lesson is not None and out.lesson.status == "proposed"


# ---- review state that sticks -------------------------------------------------------------------

def _age(lore: Lore, lesson_id: str, days: int) -> None:
    lesson = lore.lessons.get(lesson_id)
    meta = dict(lesson.metadata["learning"])
    meta["last_seen"] = (datetime.now(UTC) - timedelta(days=days)).isoformat()
    lore.lessons.update(lesson_id, metadata={**lesson.metadata, "learning": meta})


def test_approved_rules_survive_rescoring_and_reinforcement(fake_lore):
    learner = fake_lore.learning
    out = learner.record("don't do that again", None, project="/p", session_id="s1")
    assert out.lesson is not None and out.lesson.status == "candidate"
    approved = fake_lore.review.decide(out.lesson.id, "approve")
    assert approved.status == "active" and approved.metadata["learning"]["reviewed"] is True
    _age(fake_lore, approved.id, 60)
    learner.rescore()
    assert fake_lore.lessons.get(approved.id).status == "active"
    learner.record("don't do that again!", None, project="/p", session_id="s2")
    assert fake_lore.lessons.get(approved.id).status == "active"


def test_a_status_set_by_hand_sticks(fake_lore):
    learner = fake_lore.learning
    out = learner.record("No, don't use Redis, use local file sessions instead", None,
                         project="/p", session_id="s1")
    assert out.lesson is not None and out.lesson.status == "proposed"
    fake_lore.lessons.update(out.lesson.id, status="active")
    _age(fake_lore, out.lesson.id, 60)
    learner.rescore()
    assert fake_lore.lessons.get(out.lesson.id).status == "active"


def test_a_hand_added_active_lesson_stays_active_when_a_correction_restates_it(fake_lore):
    lesson = fake_lore.lessons.add("Use local file sessions, not Redis",
                                  "Use local file sessions instead of Redis.", kind="preference",
                                  status="active", project="/p",
                                  preference={"rejected": "Redis", "preferred": "local file sessions"})
    out = fake_lore.learning.record("No, don't use Redis, use local file sessions instead", None,
                                   project="/p")
    assert out.action == "reinforced" and out.lesson is not None and out.lesson.id == lesson.id
    assert out.lesson.status == "active"
    fake_lore.learning.rescore()
    assert fake_lore.lessons.get(lesson.id).status == "active"


def test_a_rejected_rule_stays_rejected_and_counts_recorrections(fake_lore):
    learner = fake_lore.learning
    text = "No, don't use Redis, use local file sessions instead"
    out = learner.record(text, None, project="/p", session_id="s1")
    assert out.lesson is not None
    rejected = fake_lore.review.decide(out.lesson.id, "reject", reason="we do use Redis in production")
    assert rejected.status == "rejected"
    assert rejected.metadata["learning"]["rejected_reason"] == "we do use Redis in production"
    again = learner.record(text, None, project="/p", session_id="s2")
    assert again.action == "recorrection" and again.lesson is not None
    assert again.lesson.id == out.lesson.id and again.lesson.status == "rejected"
    assert again.lesson.metadata["learning"]["recorrections"] == 1
    learner.rescore()
    assert fake_lore.lessons.get(out.lesson.id).status == "rejected"
    assert all(item["id"] != out.lesson.id for item in fake_lore.review.waiting())


def test_the_review_list_shows_evidence_and_defer_hides_until_seen_again(fake_lore):
    learner = fake_lore.learning
    out = learner.record("don't do that again", "I rewrote the whole module.", project="/p",
                         session_id="s1", at="2026-01-05T10:00:00Z")
    assert out.lesson is not None
    [item] = fake_lore.review.waiting()
    assert item["id"] == out.lesson.id and item["status"] == "candidate"
    assert item["occurrences"] == 1 and item["scope"] == "/p"
    assert item["why_candidate"] == "not specific enough to be a rule"
    [ev] = item["evidence"]
    assert ev == {"said": "don't do that again", "agent_turn": "I rewrote the whole module.",
                  "session": "s1", "date": "2026-01-05T10:00:00Z", "project": "/p",
                  "source": "manual"}
    fake_lore.review.decide(out.lesson.id, "defer")
    assert fake_lore.review.waiting() == []
    learner.record("don't do that again", "I rewrote it once more.", project="/p",
                   session_id="s2")
    assert [i["id"] for i in fake_lore.review.waiting()] == [out.lesson.id]


def test_edit_rewords_and_approves(fake_lore):
    learner = fake_lore.learning
    out = learner.record("don't do that again", None, project="/p")
    assert out.lesson is not None
    edited = fake_lore.review.decide(out.lesson.id, "edit", title="Do not rewrite whole modules")
    assert edited.title == "Do not rewrite whole modules" and edited.status == "active"


def test_review_refuses_an_unknown_action(fake_lore):
    from lore.errors import InvalidInput

    out = fake_lore.learning.record("don't do that again", None, project="/p")
    assert out.lesson is not None
    with pytest.raises(InvalidInput, match="unknown review action"):
        fake_lore.review.decide(out.lesson.id, "bless")


# ---- what SessionStart tells --------------------------------------------------------------------

def test_proposed_rules_reach_the_session_only_once_seen_twice(fake_lore):
    learner = fake_lore.learning
    learner.record("No, don't use Redis, use local file sessions instead", None, project="/p",
                   session_id="s1", origin="hook")
    assert "file sessions" not in fake_lore.apply.session_context("/p")
    learner.record("use local file sessions instead of Redis", None, project="/p",
                   session_id="s2", origin="hook")
    assert "file sessions" in fake_lore.apply.session_context("/p")


def test_a_measurement_can_vary_the_injection_threshold(lore_home):
    settings = make_settings(lore_home, tuning={"learning.inject_proposed_min_seen": 1})
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        lore.learning.record("No, don't use Redis, use local file sessions instead", None,
                            project="/p", session_id="s1", origin="hook")
        assert "file sessions" in lore.apply.session_context("/p")


# ---- the second opinion -------------------------------------------------------------------------

# The detector's probability for this answer to PREVIOUS sits just under its threshold.
UNSURE = "please format with black from now on"
PREVIOUS = "I committed the change."


def _opinion(label: str, rule: str | None) -> Reply:
    verdict = {"label": label, "durable": label != "none", "confidence": 0.9, "rule": rule,
               "reason": "states a standing rule" if rule else "not a correction"}
    return Reply(anthropic_body(json.dumps(verdict)))


def _llm_lore(home: Path, srv: LoopbackServer, **llm: object) -> Lore:
    """A model configured with the judge turned off: the detector decides, asking the model
    only about unsure messages (the judge is tested in test_judge_learning.py)."""
    settings = make_settings(home, llm={"provider": "anthropic", "base_url": srv.url,
                                        "timeout": 5.0, "max_retries": 0, **llm},
                             learning={"judge": False})
    return Lore.open(settings, embedder=FakeEmbedder())


def test_an_unsure_message_takes_the_second_opinion(lore_home, server, monkeypatch):  # noqa: F811
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-1234")
    server.replies = [_opinion("preference", "Always format Python files with black.")]
    det = detect(UNSURE, PREVIOUS)
    assert not det.positive and abs(det.probability - 0.5) < 0.15
    with _llm_lore(lore_home, server) as lore:
        lore.learning.capture(UNSURE, PREVIOUS, project="/p", session_id="s1")
        lore.learning.capture("Thanks", PREVIOUS, project="/p", session_id="s1")
        first, thanks = lore.learning.process_pending()
    assert len(server.received) == 1  # "Thanks" is nowhere near the threshold: not asked
    assert UNSURE in server.received[0]["raw"]
    assert first.action == "created" and first.lesson is not None
    assert "black" in first.lesson.title.lower() and first.lesson.status == "proposed"
    assert first.lesson.metadata["learning"]["confirmed"] is True
    assert thanks.lesson is None


def test_a_second_opinion_of_none_drops_the_message(lore_home, server, monkeypatch):  # noqa: F811
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-1234")
    server.replies = [_opinion("none", None)]
    near = "always run ruff before committing"  # just over the threshold after PREVIOUS
    det = detect(near, PREVIOUS)
    assert det.positive and abs(det.probability - 0.5) < 0.15
    with _llm_lore(lore_home, server) as lore:
        lore.learning.capture(near, PREVIOUS, project="/p")
        [out] = lore.learning.process_pending()
    assert len(server.received) == 1
    assert out.lesson is None and out.detection.reason == "second opinion: not a correction"


def test_a_provider_error_or_spent_budget_falls_back_to_the_detector(lore_home, server,  # noqa: F811
                                                                     monkeypatch, caplog):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-1234")
    server.replies = [Reply({"type": "error", "error": {"type": "api_error", "message": "down"}},
                            status=500)]
    with _llm_lore(lore_home, server) as lore:
        lore.learning.capture(UNSURE, PREVIOUS, project="/p", session_id="s1")
        [out] = lore.learning.process_pending()
    assert out.action == "none" and out.lesson is None  # the detector's verdict stands
    assert "second opinion unavailable" in caplog.text
    server.received.clear()
    with _llm_lore(lore_home / "spent", server, daily_token_budget=0) as lore:
        lore.learning.capture(UNSURE, PREVIOUS, project="/p", session_id="s2")
        [out] = lore.learning.process_pending()
    assert out.action == "none" and server.received == []


def test_without_a_provider_nothing_is_called(fake_lore):
    assert fake_lore.learning.opinion is None
    fake_lore.learning.capture(UNSURE, PREVIOUS, project="/p")
    [out] = fake_lore.learning.process_pending()
    assert out.action == "none"


# ---- backfill -----------------------------------------------------------------------------------

def test_backfill_is_idempotent(fake_lore):
    first = fake_lore.learning.backfill([FIXTURES])
    assert first["files"] > 10 and first["messages"] > 10
    count = len(fake_lore.learning.corrections(all_projects=True, limit=10_000))
    again = fake_lore.learning.backfill([FIXTURES])
    assert again["actions"] == {"already seen": again["messages"]} and again["rules"] == 0
    assert len(fake_lore.learning.corrections(all_projects=True, limit=10_000)) == count


def test_backfill_reads_only_what_the_user_typed(fake_lore):
    from lore.capture import backfill

    files, _ = backfill.transcripts([FIXTURES])
    seen = [m for f in files for m in backfill.read(f)]
    assert seen and not any(m.text.lstrip().startswith("[tool_result") for m in seen)
    assert any(m.previous for m in seen)  # the agent turn each answers


# ---- the faces ----------------------------------------------------------------------------------

def test_cli_learn_correction_says_why_and_force_overrides(run, lore_home):
    thanks = run("learn", "correction", "thanks, looks great!", "--global")
    assert thanks.exit_code == 0 and thanks.stdout == ""
    assert thanks.stderr.strip() == "not learned: reads as thanks or approval"
    vague = run("learn", "correction", "don't do that again", "--global")
    assert vague.exit_code == 0
    assert ("not learned yet: not specific enough to be a rule — kept; proposed if it comes up "
            "in another session") in vague.stderr
    as_json = run("learn", "correction", "What time is it?", "--global", "--json")
    payload = json.loads(as_json.stdout)
    assert payload["action"] == "not-learned" and payload["lesson"] is None
    assert payload["notice"] == "not learned: reads as a question, not a rule"
    forced = run("learn", "correction", "What time is it?", "--global", "--force")
    assert forced.exit_code == 0 and "[proposed" in forced.stderr


def test_cli_quick_start_keeps_the_hand_added_rule_active(run, lore_home):
    added = run("learn", "add", "Use local file sessions, not Redis",
                "For auth the user rejected Redis.", "--kind", "preference",
                "--set", "rejected=Redis sessions", "--set", "preferred=file sessions")
    lesson_id = added.stdout.strip()
    out = run("learn", "correction", "No, don't use Redis, use local file sessions instead",
              "--previous", "I'll add Redis for the session store.", "--json")
    payload = json.loads(out.stdout)
    assert payload["action"] == "reinforced" and payload["lesson"]["id"] == lesson_id
    assert payload["lesson"]["status"] == "active"
    shown = json.loads(run("recall", "show", lesson_id, "--json").stdout)
    assert shown["status"] == "active"


def test_cli_review_lists_and_decides(run, lore_home):
    run("learn", "correction", "don't do that again", "--global",
        "--previous", "I rewrote the whole module.")
    listed = run("review", "--json")
    assert listed.exit_code == 0
    [item] = json.loads(listed.stdout)["waiting"]
    assert item["status"] == "candidate" and item["evidence"][0]["said"] == "don't do that again"
    assert item["evidence"][0]["agent_turn"] == "I rewrote the whole module."
    text = run("review")
    assert item["id"] in text.stdout and "said (" in text.stdout and "answering:" in text.stdout
    rejected = run("review", "reject", item["id"], "--reason", "a one-off", "--json")
    assert json.loads(rejected.stdout)["status"] == "rejected"
    assert "nothing waits for review" in run("review").stderr
    again = run("learn", "correction", "Don't do that again!", "--global", "--json")
    assert json.loads(again.stdout)["action"] == "recorrection"
    missing = run("review", "approve", "01JD0000000000000000000000")
    assert missing.exit_code == 1 and len(missing.stderr.strip().splitlines()) == 1
    assert run("review", "edit", item["id"]).exit_code == 2


def test_cli_ingest_learn_is_idempotent(run, lore_home):
    first = run("ingest", "--learn", "--no-embed", str(FIXTURES), "--json")
    assert first.exit_code == 0
    learned = json.loads(first.stdout)["learned"]
    assert learned["messages"] > 10 and "\r" not in first.stderr  # no progress bar in a pipe
    second = json.loads(run("ingest", "--learn", "--no-embed", str(FIXTURES), "--json").stdout)
    assert second["learned"]["rules"] == 0
    assert second["learned"]["actions"] == {"already seen": learned["messages"]}


def test_a_conflicting_correction_leaves_a_hand_added_rule_alone(fake_lore):
    lesson = fake_lore.lessons.add("Use Redis for sessions, not local files",
                                  "Sessions live in Redis.", kind="preference", status="active",
                                  project="/p",
                                  preference={"rejected": "local file sessions", "preferred": "Redis"})
    out = fake_lore.learning.record("No, don't use Redis, use local file sessions", None,
                                   project="/p", session_id="s1")
    assert out.action == "conflict" and out.related == [lesson.id]
    assert fake_lore.lessons.get(lesson.id).status == "active"
    fake_lore.learning.rescore()
    assert fake_lore.lessons.get(lesson.id).status == "active"


def _stop_event(home: Path, message: str, previous: str, session: str) -> None:
    from lore.capture.queue import Queue

    Queue(home / "queue").append("Stop", {
        "session_id": session, "cwd": "/p",
        "lore_signals": {"correction": True, "user_message": message,
                         "assistant_proposal": previous}})


def test_the_worker_asks_the_second_opinion_and_logs_a_failure(lore_home, server,  # noqa: F811
                                                                monkeypatch):
    from lore.worker import Worker

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-1234")
    server.replies = [_opinion("preference", "Always format Python files with black."),
                      Reply({"type": "error", "error": {"type": "api_error", "message": "down"}},
                            status=500)]
    with _llm_lore(lore_home, server) as lore:
        worker = Worker(lore.settings, lore)
        _stop_event(lore_home, UNSURE, PREVIOUS, "s1")
        assert worker.run(once=True) == 1
        [rule] = lore.search.preferences(None, all_projects=True)
        assert "black" in rule.title.lower() and rule.status == "proposed"
        _stop_event(lore_home, "from now on please lint with black", PREVIOUS, "s2")
        assert worker.run(once=True) == 1  # the provider fails: handled, not quarantined
    assert len(server.received) == 2
    log = (lore_home / "logs" / "worker.log").read_text()
    assert "second opinion unavailable, the detector decides: anthropic: HTTP 500" in log
    assert "quarantined" not in log


def test_the_session_start_hook_keeps_the_injection_threshold_of_the_code(fake_lore, lore_home):
    from lore.hooks import session_context

    fake_lore.learning.record("No, don't use Redis, use local file sessions instead", None,
                             project="/p", session_id="s1", origin="hook")
    first, record = session_context("/p")  # proposed, seen once: not told (the review nudge is)
    assert record["shown"] == [] and "file sessions" not in (first or "")
    # a tuning constant, not a setting: config.yaml cannot lower it (the hook fails open on it,
    # the commands refuse the file in one line)
    (lore_home / "config.yaml").write_text("learning:\n  inject_proposed_min_seen: 1\n")
    again, record = session_context("/p")
    assert record["shown"] == [] and "file sessions" not in (again or "")
    with pytest.raises(ConfigError, match="inject_proposed_min_seen is a tuning constant"):
        load_config()


@pytest.mark.parametrize("title, why", [
    ("Now", "a single word"), ("1", "a number or symbols"), ("The pages should be:", "a heading"),
    ("Hello there", "a greeting"), ("Don't be", "unfinished"), ("2 observation", "a single word"),
])
def test_a_fragment_is_not_a_title(title, why):
    assert why in fragment(title)


@pytest.mark.parametrize("title", ["Use pnpm, not npm", "No emojis", "Never force-push to main",
                                   "Don't edit gen/", "Keep it short", "Use tabs"])
def test_a_rule_is_not_a_fragment(title):
    assert fragment(title) == ""


def test_a_fragment_title_is_never_proposed(fake_lore, monkeypatch):
    from lore.extract.shapes import Extracted

    def extract(message, proposal=None):
        return Extracted(title="The pages should be:", rule="The pages should be:",
                         rejected=None, preferred=None, reasoning=None, context=None,
                         shape="test", kind="preference", scope_hint=None, globs=())

    monkeypatch.setattr(fake_lore.learning.extractor, "extract", extract)
    out = fake_lore.learning.record("always use these pages for the docs site", None,
                                   project="/p", session_id="s1")
    assert out.lesson is None and "a heading" in out.notice()


def test_a_hyphenated_word_written_apart_is_the_same_rule(fake_lore):
    first = fake_lore.learning.record("never force-push to main", None, project="/p",
                                     session_id="s1")
    again = fake_lore.learning.record("Never force push to main.", None, project="/p",
                                     session_id="s2")
    assert again.action == "reinforced" and again.lesson.id == first.lesson.id


# ---- the second time is enough: a one-off correction said again ------------------------------

HELPER_PREV = "I added the helper to main.py."


def test_a_one_off_correction_waits_hidden_and_its_repeat_is_proposed(fake_lore):
    """Without a model: a correction the detector reads as one-off is kept as a hidden
    candidate (not for review, not told); said again in another session it is proposed, with
    both messages as evidence."""
    learner = fake_lore.learning
    first = learner.record("no, put the helper in utils/helpers.py", HELPER_PREV, project="/p",
                           session_id="s1", origin="hook", asserted=False)
    assert first.lesson is not None and first.lesson.status == "candidate"
    meta = first.lesson.metadata["learning"]
    assert meta["one_off"] and meta["gate"] == "a one-off fix, not a standing rule"
    assert fake_lore.review.waiting() == []
    again = learner.record("no, put the helper in utils/helpers.py", "I put the helper in app.py.",
                           project="/p", session_id="s2", origin="hook", asserted=False)
    assert again.action == "reinforced" and again.lesson.id == first.lesson.id
    assert again.lesson.status == "proposed"
    assert not again.lesson.metadata["learning"]["one_off"]
    assert again.lesson.metadata["learning"]["repeated"]
    assert {e.session_id for e in again.lesson.evidence} == {"s1", "s2"}
    assert [w["id"] for w in fake_lore.review.waiting()] == [first.lesson.id]


def test_a_one_off_said_twice_in_one_session_stays_hidden(fake_lore):
    learner = fake_lore.learning
    for text in ("no, put the helper in utils/helpers.py", "No! put the helper in utils/helpers.py"):
        out = learner.record(text, HELPER_PREV, project="/p", session_id="s1", origin="hook",
                             asserted=False)
    assert out.lesson is not None and out.lesson.status == "candidate"
    assert fake_lore.review.waiting() == []


def test_a_vague_one_off_leaves_nothing_behind(fake_lore):
    out = fake_lore.learning.record("revert that", "I renamed the helper.", project="/p",
                                   session_id="s1", origin="hook", asserted=False)
    assert out.action in ("one-off", "none") and out.lesson is None


def test_a_one_off_never_conflicts_with_a_known_rule(fake_lore):
    learner = fake_lore.learning
    rule = learner.record("always use pnpm, never npm", None, project="/p", session_id="s1",
                          origin="hook").lesson
    from lore.extract.detect import Detection
    from lore.extract.shapes import extract
    from lore.models import Evidence

    said = "no, just use npm instead of pnpm for this one script"
    det = Detection("correction", False, "explicit", 0.7, (), "")
    evidence = Evidence(quote=said, session_id="s2", source="hook")
    out = learner.rules.merge(extract(said), det, evidence, "/p", [], said,
                              {"gate": "a one-off fix, not a standing rule", "one_off": True})
    assert out.action == "one-off" and out.lesson is None
    assert not fake_lore.lessons.get(rule.id).metadata["learning"].get("conflicts")


def test_a_one_off_not_said_again_is_archived(fake_lore):
    learner = fake_lore.learning
    first = learner.record("no, put the helper in utils/helpers.py", HELPER_PREV, project="/p",
                           session_id="s1", origin="hook", asserted=False,
                           at="2020-01-01T00:00:00Z")
    assert first.lesson is not None and first.lesson.status == "candidate"
    learner.rescore()
    assert fake_lore.lessons.get(first.lesson.id).status == "archived"
