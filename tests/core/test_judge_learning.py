"""The judge in the product: messages wait for it, the worker asks it at SessionEnd (one
request per session, over real HTTP to a loopback server speaking the OpenAI-compatible
API), its verdicts become rules, and a provider error or spent budget leaves them waiting."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from test_llm_http import LoopbackServer, Reply, openai_body, server  # noqa: F401 - fixture

from conftest import FakeEmbedder, make_settings
from lore.api import Lore
from lore.capture.queue import Event
from lore.cli import cli
from lore.worker import Worker

SESSION = "s-judge-1"
REDIS = "no, don't use Redis for this. Use local file sessions, we run one box"
THANKS = "thanks, that works now"
DOCS = "from now on keep the README updated whenever you change a command"


def llm(srv: LoopbackServer, **kw: Any) -> dict[str, Any]:
    return {"provider": "openai", "base_url": srv.url + "/v1", "model": "small-1",
            "timeout": 5.0, "max_retries": 1, **kw}


def answer(rules: dict[str, dict[str, Any]]):
    """A model: for each message in the request, the item whose key the message contains
    (none otherwise); ``quote`` defaults to the key itself."""
    def reply(body: dict[str, Any]) -> Reply:
        user = body["messages"][-1]["content"]
        items = []
        for ref, text in re.findall(r'<message id="(m\d+)">.*?<developer_message>\n(.*?)\n'
                                    r"</developer_message>", user, re.S):
            hit = next((dict(v, quote=v.get("quote", k)) for k, v in rules.items() if k in text),
                       {"label": "none"})
            items.append({"id": ref, **hit})
        return Reply(openai_body(json.dumps({"items": items})))
    return reply


JUDGED = {
    "Use local file sessions": {"label": "correction", "durable": True,
                                "rule": "Use local file sessions, not Redis: the service runs on one box."},
    "keep the README updated": {"label": "preference", "durable": True,
                                "rule": "Update the README whenever a command changes."},
}


def capture(lore: Lore, *messages: tuple[str, str | None], session: str = SESSION) -> None:
    for text, previous in messages:
        lore.learning.capture(text, previous, project="/p", session_id=session, origin="hook")
    lore.learning.process_pending()


def session_end(worker: Worker, session: str = SESSION) -> str:
    return worker.outcome(Event(f"e-{session}-{time.time_ns()}", "SessionEnd", time.time(),
                                {"session_id": session, "cwd": "/p"}))


def statuses(lore: Lore) -> list[tuple[str, str | None]]:
    return [(r["status"], r["action"]) for r in lore.store.conn.execute(
        "SELECT status, action FROM corrections ORDER BY id")]


def test_worker_judges_a_session_in_one_request(lore_home: Path, server: LoopbackServer) -> None:  # noqa: F811
    server.replies = [answer(JUDGED)]
    settings = make_settings(lore_home, llm=llm(server))
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        capture(lore, (REDIS, "I added a Redis-backed session store."), (THANKS, "Fixed the import."),
                (DOCS, "Renamed the command to lore sync."))
        waiting = lore.admin.waiting_for_judge()
        assert waiting["messages"] >= 2 and waiting["sessions"] == 1
        assert not server.received  # nothing is sent before the session ends
        outcome = session_end(Worker(settings, lore))
        assert "judged" in outcome
        assert len(server.received) == 1
        sent = server.received[0]["body"]["messages"][-1]["content"]
        assert "I added a Redis-backed session store." in sent and REDIS in sent
        assert lore.admin.waiting_for_judge()["messages"] == 0
        titles = {lesson.content.splitlines()[0] for lesson in lore.search.preferences("/p")}
        assert "Use local file sessions, not Redis: the service runs on one box." in " ".join(titles)
        assert any("README" in t for t in titles)
        learned = lore.search.preferences("/p")
        assert all(lesson.status in ("proposed", "active") for lesson in learned)


def test_a_provider_error_leaves_the_session_waiting(lore_home: Path, server: LoopbackServer) -> None:  # noqa: F811
    server.replies = [Reply({"error": {"message": "overloaded"}}, status=500)]
    settings = make_settings(lore_home, llm=llm(server))
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        capture(lore, (REDIS, "I added a Redis-backed session store."))
        worker = Worker(settings, lore)
        outcome = session_end(worker)
        assert "judge unavailable, 1 messages waiting" in outcome
        waiting = lore.admin.waiting_for_judge()
        assert waiting["messages"] == 1 and "500" in waiting["last_error"]
        assert lore.search.preferences("/p") == []  # never silently detector-only
        assert statuses(lore) == [("judging", "unanswered 1: openai: HTTP 500 (overloaded); the "
                                              "server failed; try again later")]
        server.replies = [answer(JUDGED)]  # the provider is back: the next session end catches up
        capture(lore, (THANKS, "Done."), session="s-judge-2")
        assert "judged" in session_end(worker, "s-judge-2")
        assert lore.admin.waiting_for_judge() == {"messages": 0, "sessions": 0, "last_error": None,
                                            "given_up": 0, "given_up_reason": None}
        assert len(lore.search.preferences("/p")) == 1


def test_a_spent_budget_leaves_the_session_waiting(lore_home: Path, server: LoopbackServer) -> None:  # noqa: F811
    server.replies = [answer(JUDGED)]
    settings = make_settings(lore_home, llm=llm(server, daily_token_budget=100))
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        capture(lore, (REDIS, "I added a Redis-backed session store."))
        report = lore.learning.judge_waiting()
        assert report.error and "budget" in report.error and report.waiting == 1
        assert not server.received
        assert lore.admin.waiting_for_judge()["messages"] == 1


def test_invented_quotes_and_unanswered_messages(lore_home: Path, server: LoopbackServer) -> None:  # noqa: F811
    def partial(body: dict[str, Any]) -> Reply:
        # Quotes words the developer never wrote and answers only the first message.
        return Reply(openai_body('Sure! {"items": [{"id": "m1", "label": "correction", '
                                 '"durable": true, "quote": "never use Redis anywhere", '
                                 '"rule": "Never use Redis."}]}'))
    server.replies = [partial]
    settings = make_settings(lore_home, llm=llm(server))
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        capture(lore, (REDIS, "I added a Redis-backed session store."),
                (DOCS, "Renamed the command to lore sync."))
        report = lore.learning.judge_waiting()
        assert report.invented == 2  # the second request (for the unanswered one) got the same
        assert lore.search.preferences("/p") == []
        assert lore.admin.waiting_for_judge()["messages"] == 0
        reasons = [r[0] for r in lore.store.conn.execute("SELECT action FROM corrections")]
        assert reasons == ["none", "none"]


def test_malformed_replies_keep_the_messages_waiting(lore_home: Path, server: LoopbackServer) -> None:  # noqa: F811
    server.replies = [Reply(openai_body("I am not sure what you want."))]
    settings = make_settings(lore_home, llm=llm(server))
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        capture(lore, (REDIS, "I added a Redis-backed session store."))
        report = lore.learning.judge_waiting()
        assert report.error and "could not be read" in report.error
        assert lore.admin.waiting_for_judge()["messages"] == 1


def test_a_restatement_reinforces_the_known_rule(lore_home: Path, server: LoopbackServer) -> None:  # noqa: F811
    server.replies = [answer(JUDGED)]
    settings = make_settings(lore_home, llm=llm(server))
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        capture(lore, (REDIS, "I added a Redis-backed session store."))
        lore.learning.judge_waiting()
        [rule] = lore.search.preferences("/p")

        def restates(body: dict[str, Any]) -> Reply:
            user = body["messages"][-1]["content"]
            assert "<known_rules>\n1. Use local file sessions, not Redis" in user
            return Reply(openai_body(json.dumps({"items": [
                {"id": "m1", "label": "correction", "durable": True, "quote": "no Redis",
                 "rule": "Do not add Redis; keep sessions in local files.", "restates": 1}]})))
        server.replies = [restates]
        capture(lore, ("I told you: no Redis, use local file sessions", "I'll add Redis."),
                session="s-judge-2")
        report = lore.learning.judge_waiting()
        assert [o.action for o in report.outcomes] == ["reinforced"]
        [again] = lore.search.preferences("/p")
        assert again.id == rule.id and len(again.evidence) == 2


def test_dry_run_prints_the_request_and_sends_nothing(
        lore_home: Path, server: LoopbackServer) -> None:  # noqa: F811
    server.replies = [answer(JUDGED)]
    secret = "ghp_" + "x1" * 18
    lore_home.mkdir(parents=True, exist_ok=True)
    (lore_home / "config.yaml").write_text(
        "llm:\n  provider: openai\n  model: small-1\n  base_url: " + server.url + "/v1\n")
    settings = make_settings(lore_home, llm=llm(server))
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        capture(lore, (REDIS + f" token {secret}", "I added a Redis-backed session store."))
    runner = CliRunner()
    out = runner.invoke(cli, ["learn", "judge", "--dry-run"], obj={"embedder": FakeEmbedder()})
    assert out.exit_code == 0, out.output
    assert out.output.startswith("===== SYSTEM =====") and "===== USER =====" in out.output
    assert "Use local file sessions" in out.output and secret not in out.output
    assert not server.received
    out = runner.invoke(cli, ["learn", "judge", "--json"], obj={"embedder": FakeEmbedder()})
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["messages"] == 1 and len(server.received) == 1
    out = runner.invoke(cli, ["learn", "judge"], obj={"embedder": FakeEmbedder()})
    assert "nothing waits for the judge" in out.output


def test_without_a_model_the_detector_decides(lore_home: Path) -> None:
    settings = make_settings(lore_home)
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        capture(lore, (REDIS, "I added a Redis-backed session store."))
        assert lore.admin.waiting_for_judge()["messages"] == 0
        assert "judging" not in [s for s, _ in statuses(lore)]


def test_ingest_learn_judges_each_past_session(lore_home: Path, server: LoopbackServer,  # noqa: F811
                                               tmp_path: Path) -> None:
    server.replies = [answer(JUDGED)]
    folder = tmp_path / "projects" / "p"
    folder.mkdir(parents=True)
    for n, said in enumerate((REDIS, DOCS)):
        lines = [{"type": "assistant", "sessionId": f"past-{n}", "cwd": "/p", "uuid": f"a{n}",
                  "timestamp": f"2026-01-0{n + 1}T10:00:00Z",
                  "message": {"role": "assistant", "content": [
                      {"type": "text", "text": "I added a Redis-backed session store."}]}},
                 {"type": "user", "sessionId": f"past-{n}", "cwd": "/p", "uuid": f"u{n}",
                  "timestamp": f"2026-01-0{n + 1}T10:01:00Z",
                  "message": {"role": "user", "content": said}}]
        (folder / f"past-{n}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    settings = make_settings(lore_home, llm=llm(server))
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        report = lore.learning.backfill([tmp_path / "projects"])
        assert len(server.received) == 2  # one request per past session
        assert report["rules"] == 2 and "waiting" not in report["actions"]
        assert lore.admin.waiting_for_judge()["messages"] == 0


def test_worker_status_shows_the_messages_waiting_for_the_judge(lore_home: Path,
                                                                server: LoopbackServer) -> None:  # noqa: F811
    server.replies = [Reply({"error": {"message": "down"}}, status=503)]
    settings = make_settings(lore_home, llm=llm(server))
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        capture(lore, (REDIS, "I added a Redis-backed session store."), (DOCS, "Renamed it."))
        lore.learning.judge_waiting()
    lore_home.mkdir(parents=True, exist_ok=True)
    (lore_home / "config.yaml").write_text(
        "llm:\n  provider: openai\n  model: small-1\n  base_url: " + server.url + "/v1\n")
    runner = CliRunner()
    status = json.loads(runner.invoke(cli, ["worker", "status", "--json"]).output)
    waiting = status["waiting_for_judge"]
    assert waiting["messages"] == 2 and waiting["sessions"] == 1 and "503" in waiting["last_error"]
    shown = runner.invoke(cli, ["worker", "status"]).output
    assert "waiting for the judge" in shown and "2 messages in 1 sessions" in shown
    out = runner.invoke(cli, ["learn", "judge"], obj={"embedder": FakeEmbedder()})
    assert out.exit_code == 1 and "2 messages keep waiting" in out.output
    assert len(out.output.strip().splitlines()) == 1


def test_the_judge_through_the_users_own_claude(lore_home: Path, tmp_path: Path,
                                                monkeypatch) -> None:
    from test_llm_claude import calls, install_fake

    answer = json.dumps({"items": [{"id": "m1", "label": "correction", "durable": True,
                                    "quote": "Use local file sessions",
                                    "rule": "Use local file sessions, not Redis."}]})
    record = install_fake(tmp_path, monkeypatch, answer=answer)
    settings = make_settings(lore_home, llm={"provider": "claude-cli", "model": "haiku"})
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        capture(lore, (REDIS, "I added a Redis-backed session store."))
        assert "judged 1 messages" in session_end(Worker(settings, lore))
        [call] = calls(record)
        assert call["argv"][call["argv"].index("--model") + 1] == "haiku"
        assert REDIS in call["stdin"] and call["lore_disabled"] == "1"
        [rule] = lore.search.preferences("/p")
        assert rule.content.startswith("Use local file sessions, not Redis.")


def test_a_rule_line_that_names_nothing_the_user_named_is_not_used(lore_home: Path,
                                                                   server: LoopbackServer) -> None:  # noqa: F811
    server.replies = [answer({"Use local file sessions": {
        "label": "correction", "durable": True, "rule": "Always write clean, maintainable code."}})]
    settings = make_settings(lore_home, llm=llm(server))
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        capture(lore, (REDIS, "I added a Redis-backed session store."))
        lore.learning.judge_waiting()
        [rule] = lore.search.preferences("/p")
        assert rule.content.startswith("Use local file sessions instead of Redis")  # the shapes' line


def test_names_what_was_said() -> None:
    from lore.extract.shapes import names_what_was_said

    said = "no, don't use requests here, use httpx, the whole service is async"
    assert names_what_was_said("Use httpx, not requests: the service is async.", said)
    assert names_what_was_said("Prefer HTTPX for HTTP calls.", said)
    assert not names_what_was_said("Always write clean, maintainable code.", said)


def test_learn_judge_takes_one_session_or_the_messages_since_a_date(lore_home: Path,
                                                                    server: LoopbackServer) -> None:  # noqa: F811
    server.replies = [answer(JUDGED)]
    lore_home.mkdir(parents=True, exist_ok=True)
    (lore_home / "config.yaml").write_text(
        "llm:\n  provider: openai\n  model: small-1\n  base_url: " + server.url + "/v1\n")
    settings = make_settings(lore_home, llm=llm(server))
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        lore.learning.capture(REDIS, "I added Redis.", project="/p", session_id="old", origin="hook",
                             at="2026-01-01T10:00:00Z")
        lore.learning.capture(DOCS, "Renamed it.", project="/p", session_id="new", origin="hook",
                             at="2026-03-01T10:00:00Z")
        lore.learning.process_pending()
    runner = CliRunner()
    obj = {"embedder": FakeEmbedder()}
    dry = runner.invoke(cli, ["learn", "judge", "--dry-run", "--since", "2026-02-01"], obj=obj)
    assert DOCS in dry.output and REDIS not in dry.output and not server.received
    got = json.loads(runner.invoke(cli, ["learn", "judge", "--session", "old", "--json"], obj=obj).output)
    assert got["messages"] == 1 and got["sessions"] == 1 and len(server.received) == 1
    assert REDIS in server.received[0]["body"]["messages"][-1]["content"]
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        assert lore.admin.waiting_for_judge()["messages"] == 1  # the other session still waits


def test_a_recorded_correction_is_evidence_the_judge_decides(lore_home: Path,
                                                             server: LoopbackServer) -> None:  # noqa: F811
    """An agent's `lore learn correction` with a judge configured waits for the judge like a
    captured message; the caller's word does not make it a lasting rule."""
    server.replies = [answer({"use local file sessions": {"label": "correction", "durable": False}})]
    settings = make_settings(lore_home, llm=llm(server))
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        out = lore.learning.record("No, don't use Redis, use local file sessions instead",
                                  "I added Redis.", project="/p", session_id="s-rec")
        assert out.action == "waiting" and out.lesson is None
        assert out.notice().startswith("not learned: ")
        assert not server.received
        report = lore.learning.judge_waiting(session_id="s-rec")
        assert report.messages == 1 and len(server.received) == 1
        # one-off in the judge's eyes: kept hidden, waiting to be said again, not for review
        [kept] = lore.search.preferences(None, all_projects=True,
                                  statuses=("candidate", "proposed", "active"))
        assert kept.status == "candidate" and kept.metadata["learning"]["one_off"]
        assert lore.review.waiting() == []
        # --force is the user's own wish: learned at once, no judge asked
        forced = lore.learning.record("always use pathlib, not os.path", None, project="/p",
                                     force=True)
        assert forced.lesson is not None and len(server.received) == 1


def test_a_message_the_judge_never_answers_stops_waiting_after_three_attempts(
        lore_home: Path, server: LoopbackServer) -> None:  # noqa: F811
    def only_readme(body: dict[str, Any]) -> Reply:  # leaves the Redis message out, every time
        user = body["messages"][-1]["content"]
        items = [{"id": ref, "label": "preference", "durable": True, "quote": "keep the README updated",
                  "rule": "Update the README whenever a command changes."}
                 for ref, text in re.findall(r'<message id="(m\d+)">.*?<developer_message>\n(.*?)\n'
                                             r"</developer_message>", user, re.S) if "README" in text]
        return Reply(openai_body(json.dumps({"items": items})))

    server.replies = [only_readme]
    settings = make_settings(lore_home, llm=llm(server))
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        capture(lore, (REDIS, "I added a Redis-backed session store."), (DOCS, "Renamed it."))
        worker = Worker(settings, lore)
        asked = []
        for n in range(5):  # later sessions end, with nothing of their own to judge
            before = len(server.received)
            session_end(worker, SESSION if n == 0 else f"s-later-{n}")
            asked.append(sum(REDIS in r["body"]["messages"][-1]["content"]
                             for r in server.received[before:]))
        # Each session end asks (the judge asks once more for what a reply leaves out), three
        # session ends in all; then never again.
        assert [a > 0 for a in asked] == [True, True, True, False, False]
        waiting = lore.admin.waiting_for_judge()
        assert waiting["messages"] == 0 and waiting["given_up"] == 1
        assert waiting["given_up_reason"] == "unanswered 3: the judge's reply left it out"
        assert len(lore.search.preferences("/p")) == 1  # the README rule was learned the first time
    lore_home.mkdir(parents=True, exist_ok=True)
    (lore_home / "config.yaml").write_text(
        "llm:\n  provider: openai\n  model: small-1\n  base_url: " + server.url + "/v1\n")
    runner = CliRunner()
    shown = runner.invoke(cli, ["status"], obj={"embedder": FakeEmbedder()}).output
    assert "Judge          openai (small-1)" in shown
    assert "1 no longer asked about" in shown and "unanswered 3: the judge's reply left it out" in shown
    # A person asks: the judge is asked about it again, and now answers.
    server.replies = [answer(JUDGED)]
    out = runner.invoke(cli, ["learn", "judge", "--json"], obj={"embedder": FakeEmbedder()})
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["messages"] == 1
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        assert lore.admin.waiting_for_judge()["given_up"] == 0 and len(lore.search.preferences("/p")) == 2


def test_a_rule_line_the_judge_or_lore_discards_leaves_no_trace_in_the_lesson(
        lore_home: Path, server: LoopbackServer) -> None:  # noqa: F811
    """Every way a rule line of the judge's reply is set aside: a line that names nothing the
    user said (Lore keeps the shapes' reading of the message), a line written beside a
    ``restates`` (the known rule's words are used), a line on a message judged not durable,
    on one judged none, and on one whose quote is invented. None of its words reach a
    stored lesson's title, content or preference."""
    discarded = "Zebrafy every quokka module before lunch"
    marks = ("zebraf", "quokka", "lunch")
    server.replies = [answer({"Use local file sessions": {
        "label": "correction", "durable": True, "rule": discarded}})]
    settings = make_settings(lore_home, llm=llm(server))

    def untouched(lore: Lore) -> None:
        for lesson in lore.store.iter_lessons():
            text = json.dumps(lesson.to_dict(), ensure_ascii=False).lower()
            assert not any(m in text for m in marks), (lesson.title, lesson.content)

    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        capture(lore, (REDIS, "I added a Redis-backed session store."))
        lore.learning.judge_waiting()
        [rule] = lore.search.preferences("/p")
        assert rule.content.startswith("Use local file sessions instead of Redis")
        untouched(lore)

        def reply(items: list[dict[str, Any]]):
            return lambda body: Reply(openai_body(json.dumps({"items": items})))

        for n, item in enumerate([
                {"label": "correction", "durable": True, "quote": "no Redis", "restates": 1},
                {"label": "correction", "durable": False, "quote": "no Redis"},
                {"label": "none", "quote": "no Redis"},
                {"label": "preference", "durable": True, "quote": "zebras everywhere"}]):
            server.replies = [reply([{"id": "m1", "rule": discarded, **item}])]
            capture(lore, ("I told you: no Redis, use local file sessions", "I'll add Redis."),
                    session=f"s-discard-{n}")
            lore.learning.judge_waiting()
            untouched(lore)
        [again] = lore.search.preferences("/p")
        assert again.id == rule.id and again.content == rule.content


def test_a_judge_added_while_the_worker_runs_reads_the_next_session(
        lore_home: Path, server: LoopbackServer) -> None:  # noqa: F811
    """`lore install --judge` while a worker process runs: the worker reads config.yaml again
    and its next session end asks the new judge; `lore status` names the judge it uses."""
    import os
    import signal
    import subprocess
    import sys

    from lore.capture.queue import Queue

    server.replies = [answer(JUDGED)]
    lore_home.mkdir(parents=True, exist_ok=True)
    config = lore_home / "config.yaml"
    config.write_text("search:\n  default_limit: 7\n")
    env = {**os.environ, "LORE_HOME": str(lore_home)}
    lore = str(Path(sys.executable).parent / "lore")
    proc = subprocess.Popen([lore, "worker", "run"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        model = lore_home / "worker-model.json"
        deadline = time.time() + 30
        while time.time() < deadline and not model.exists():
            time.sleep(0.2)
        assert json.loads(model.read_text())["provider"] is None
        tmp = lore_home / ".config.new"
        tmp.write_text("llm:\n  provider: openai\n  model: small-1\n  base_url: " + server.url + "/v1\n")
        os.replace(tmp, config)  # as `lore install --judge openai` writes it
        queue = Queue(lore_home / "queue")
        queue.append("Stop", {"session_id": "s-live", "cwd": "/p", "lore_signals": {
            "correction": True, "user_message": REDIS,
            "assistant_proposal": "I added a Redis-backed session store."}})
        queue.append("SessionEnd", {"session_id": "s-live", "cwd": "/p"})
        deadline = time.time() + 90  # a cold worker loads the embedding model first
        while time.time() < deadline and not server.received:
            time.sleep(0.3)
        assert server.received, "the worker did not ask the judge it was given"
        assert REDIS in server.received[0]["body"]["messages"][-1]["content"]
        assert json.loads(model.read_text())["provider"] == "openai"
        shown = subprocess.run([lore, "status"], env=env, capture_output=True, text=True, timeout=60)
        assert f"Judge          openai (small-1); the running worker (pid {proc.pid}) uses openai" \
            in shown.stdout, shown.stdout + shown.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_a_one_off_said_again_in_another_session_is_proposed_through_the_judge(
        lore_home: Path, server: LoopbackServer) -> None:  # noqa: F811
    """The judge reads a correction as one-off: it waits, hidden, as an earlier correction.
    The next session's request shows it beside the known rules; the judge says the new message
    makes it again, and the rule is proposed with both messages as evidence."""
    first = "no, put the date helpers in utils/dates.py"
    second = "again: date helpers belong in utils/dates.py, not next to the component"

    def reply(body: dict[str, Any]) -> Reply:
        user = body["messages"][-1]["content"]
        ref = re.search(r'<message id="(m\d+)">', user).group(1)
        if "<earlier_corrections>" not in user:
            item = {"id": ref, "label": "correction", "durable": False, "quote": "utils/dates.py"}
        else:
            number = re.search(r"(\d+)\. [^\n]*utils/dates\.py", user.split(
                "<earlier_corrections>")[1]).group(1)
            item = {"id": ref, "label": "correction", "durable": True,
                    "quote": "date helpers belong in utils/dates.py",
                    "rule": "Keep date helpers in utils/dates.py.", "restates": int(number)}
        return Reply(openai_body(json.dumps({"items": [item]})))

    server.replies = [reply, reply]
    settings = make_settings(lore_home, llm=llm(server))
    with Lore.open(settings, embedder=FakeEmbedder()) as lore:
        capture(lore, (first, "I added formatDate to the component file."), session="s1")
        lore.learning.judge_waiting(session_id="s1")
        [kept] = lore.search.preferences(None, all_projects=True, statuses=("candidate",))
        assert kept.metadata["learning"]["one_off"] and lore.review.waiting() == []
        capture(lore, (second, "I added parseDate beside the component."), session="s2")
        lore.learning.judge_waiting(session_id="s2")
        sent = server.received[-1]["body"]["messages"][-1]["content"]
        assert "<earlier_corrections>" in sent and "utils/dates.py" in sent.split(
            "<earlier_corrections>")[1]
        rule = lore.lessons.get(kept.id)
        assert rule.status == "proposed" and len(rule.evidence) == 2
        assert [w["id"] for w in lore.review.waiting()] == [kept.id]
