"""The language model's pass over a finished session, against a loopback server speaking the
Anthropic protocol and a fake `claude` executable, with replies written for a real transcript in
tests/fixtures: quotes checked against the transcript (invented ones dropped), malformed replies
asked again, an empty answer, the budget, the fall back to the pattern pass, deduplication, and
related patterns becoming graph edges."""
# ruff: noqa: F811 - the tests take the imported `server` fixture as a parameter

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_llm_claude import install_fake
from test_llm_http import (
    ANTHROPIC_SECRET,
    LoopbackServer,
    Reply,
    anthropic_body,
    server,  # noqa: F401 - the loopback server fixture, used by name
)

from conftest import make_settings
from lore.api import Lore
from lore.capture.readers import reader_for
from lore.errors import UnusableReply
from lore.extract.session_learnings import (
    SessionMessage,
    llm_session_learnings,
    messages_from_turns,
    transcript_for_model,
)
from lore.llm.anthropic import AnthropicProvider
from lore.llm.base import ProviderSettings

TRANSCRIPT = (Path(__file__).parents[1] / "fixtures" / "transcripts" / "daaain-claude-code-log"
              / "-Users-dain-workspace-claude-code-log-sample" / "0d3a8e6f-290f-4105-a327-a2496e5e2a83.jsonl")

# What a model answers for that transcript: two learnings quoted from it, one whose quote is
# invented, one whose message reference is wrong (m9 for a quote in m8).
GOOD = {"learnings": [
    {"category": "Decision", "statement": "Hide timeline groups with the vis library's own group.visible "
                                          "property instead of custom show and hide code.",
     "evidence": [{"message": "m4", "quote": "You can set group.visible using the vis library which is less "
                                             "work"}],
     "related_patterns": ["use the library's built-in feature", "timeline filters"], "confidence": 0.8},
    {"category": "anti-pattern", "statement": "Do not loop through every timeline item to apply a filter: "
                                              "the group names match the filters.",
     "evidence": [{"message": "m9", "quote": "I don't think we need to loop through all items, the group "
                                             "names should match the filters"}], "confidence": 0.7},
    {"category": "problem_solved", "statement": "Timeline flicker was fixed by debouncing the redraw.",
     "evidence": [{"message": "m9", "quote": "debouncing the redraw fixed the flicker"}], "confidence": 0.9},
]}


def messages() -> list[SessionMessage]:
    return messages_from_turns(reader_for(TRANSCRIPT).read(TRANSCRIPT))


def provider(server: LoopbackServer) -> AnthropicProvider:
    return AnthropicProvider(ProviderSettings(name="anthropic", base_url=server.url, api_key="test-key",
                                              timeout=5.0, max_retries=0))


def reply(value: Any) -> Reply:
    return Reply(anthropic_body(value if isinstance(value, str) else json.dumps(value)))


def test_quotes_in_the_transcript_are_kept_invented_ones_dropped(server: LoopbackServer) -> None:
    server.replies = [reply(GOOD)]
    msgs = messages()
    result = llm_session_learnings(provider(server), msgs, session_id="s-1")
    assert (result.proposed, result.dropped_unquoted, result.quotes_dropped) == (3, 1, 1)
    decision, anti = result.learnings
    assert (decision.category, decision.kind, anti.kind) == ("decision", "decision", "anti_pattern")
    assert decision.related == ("use the library's built-in feature", "timeline filters")
    by_id = {m.message_id: m.text for m in msgs}
    # The misnumbered quote is found in the message that holds it, and its id recorded.
    assert "loop through all items" in by_id[anti.evidence[0].message_id]
    assert decision.evidence[0].session_id == "s-1" and decision.rule == "llm:decision"
    assert decision.confidence == 0.8
    sent = server.received[0]["body"]
    assert "[m4 user] You can set group.visible" in sent["messages"][0]["content"]
    assert "finished session" in sent["system"]


def test_a_malformed_reply_is_asked_again(server: LoopbackServer) -> None:
    server.replies = [reply('Here is what I found: {"learnings": [{"category": "decision", "statement": '),
                      reply({"learnings": [GOOD["learnings"][0]]})]
    result = llm_session_learnings(provider(server), messages())
    assert len(server.received) == 2 and len(result.learnings) == 1
    assert "could not be used" in server.received[1]["body"]["messages"][-1]["content"]


def test_a_reply_that_never_fits_raises(server: LoopbackServer) -> None:
    server.replies = [reply({"findings": "none"})]
    with pytest.raises(UnusableReply):
        llm_session_learnings(provider(server), messages())
    assert len(server.received) == 3


def test_an_empty_answer_is_an_answer(server: LoopbackServer) -> None:
    server.replies = [reply({"learnings": []})]
    result = llm_session_learnings(provider(server), messages())
    assert result.learnings == () and result.proposed == 0 and len(server.received) == 1


def test_redacted_and_cut_to_the_budget(server: LoopbackServer) -> None:
    msgs = [SessionMessage("user", f"Use the key {ANTHROPIC_SECRET} for the staging calls", "u0")]
    msgs += [SessionMessage("assistant" if i % 2 else "tool", f"step {i} " + "detail " * 300, f"a{i}")
             for i in range(1, 200)]
    msgs.append(SessionMessage("user", "From now on always run the linter before committing", "u-last"))
    text, sent, left_out = transcript_for_model(msgs, 20_000)
    assert len(text) <= 20_000 and left_out > 20 and "messages not shown" in text
    assert "[m1 user]" in text and "[m201 user] From now on always run the linter" in text
    assert "[m2 assistant] step 1 detail" in text and len(text.split("\n")[1]) < 200  # cut tight
    assert ANTHROPIC_SECRET not in text
    server.replies = [reply({"learnings": [{"category": "pattern", "statement": "Run the linter before "
                                            "every commit.", "evidence": [{"message": "m201", "quote":
                                            "always run the linter before committing"}]}]})]
    result = llm_session_learnings(provider(server), msgs, max_input_tokens=4000)
    assert ANTHROPIC_SECRET not in server.received[0]["raw"]
    assert len(server.received[0]["body"]["messages"][0]["content"]) < 4000 * 4
    assert result.learnings[0].evidence[0].message_id == "u-last"


# ---- wired: the end of a session, `lore analyze --session`, graph edges --------------------------
LLM = {"provider": "anthropic", "max_retries": 0}


def test_session_end_uses_the_model_then_reinforces_not_repeats(server: LoopbackServer, lore_home: Path,
                                                                 real_embedder: Any,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-1234")
    server.replies = [reply(GOOD)]
    settings = make_settings(lore_home, llm=LLM | {"base_url": server.url})
    with Lore.open(settings, embedder=real_embedder) as lore:
        known = lore.lessons.add("Prefer a library's built-in feature to custom code",
                                "When the library already offers it, use it.", kind="pattern")
        report = lore.analysis.session_ended(TRANSCRIPT.stem, None, str(TRANSCRIPT), "2026-01-01T12:00:00Z")
        assert report.session_pass and report.session_pass["by"] == "llm"
        assert report.session_pass["dropped_without_quote"] == 1
        assert [p.action for p in report.lessons] == ["created", "created"]
        decision = lore.lessons.get(report.lessons[0].id)
        assert decision.status == "proposed" and decision.source == "conversation"
        assert decision.metadata["analysis"]["analysed"] is True
        assert decision.evidence[0].quote.startswith("You can set group.visible")
        # Its related pattern resembles the known lesson: an edge in the graph.
        assert report.lessons[0].related == [known.id]
        assert [(e.to_id, e.relation) for e in decision.edges] == [(known.id, "related_to")]
        assert [r.id for r in lore.search.related(decision.id)] == [known.id]
        # The same session read again (by its file): the same quotes, nothing new stored.
        again = lore.analysis.learn_from_session(str(TRANSCRIPT))
        assert [p.action for p in again.lessons] == ["duplicate", "duplicate"]


def test_a_failing_model_falls_back_to_the_pattern_pass(server: LoopbackServer, lore_home: Path,
                                                        real_embedder: Any,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-1234")
    server.replies = [reply("I cannot help with that.")]
    settings = make_settings(lore_home, llm=LLM | {"base_url": server.url})
    with Lore.open(settings, embedder=real_embedder) as lore:
        report = lore.analysis.learn_from_session(str(TRANSCRIPT), dry_run=True)
    assert report.session_pass["by"] == "patterns" and "UnusableReply" in report.session_pass["llm_error"]
    assert report.lessons and all(p.action == "would-propose" for p in report.lessons)


def test_analyze_session_with_claude_print(tmp_path: Path, run, lore_home: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake(tmp_path, monkeypatch, answer=json.dumps({"learnings": GOOD["learnings"][:2]}))
    lore_home.mkdir(parents=True, exist_ok=True)
    (lore_home / "config.yaml").write_text("llm:\n  provider: claude-cli\n")
    res = run("analyze", "--session", str(TRANSCRIPT), "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["session_pass"]["by"] == "llm" and out["created"] == 2
    assert out["session_id"] == TRANSCRIPT.stem
    res = run("analyze", "--session", "no-such-session")
    assert res.exit_code == 1 and "no transcript file or imported session" in res.output
    assert "Traceback" not in res.output


def test_knowledge_entries_link_the_lessons_their_patterns_name(server: LoopbackServer, lore_home: Path,
                                                                real_embedder: Any, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from test_analysis import ENTRY, PATTERNS, WHAT, WHY, script

    from gitrepo import Repo, lines

    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-1234")
    server.replies = [script({"what": WHAT, "why": WHY, "patterns": PATTERNS,
                              "knowledge": {"entries": [ENTRY]}})]
    repo = Repo(tmp_path / "project")
    repo.commit("Start", ("README.md", "x\n"))
    repo.commit("Fix flaky calls", ("src/client.py", lines(200, "retry")))
    settings = make_settings(lore_home, llm=LLM | {"base_url": server.url})
    with Lore.open(settings, embedder=real_embedder) as lore:
        breaker = lore.lessons.add("Put a circuit breaker around the payment API",
                                  "Stop calling it for a minute after five failures.", kind="pattern")
        unrelated = lore.lessons.add("Use pnpm, not npm", "The lock file is pnpm's.", kind="preference")
        report = lore.analysis.analyze(repo.path, range_="HEAD~1..HEAD", force=True)
        entry = lore.lessons.get(report.lessons[0].id)
        assert [e.to_id for e in entry.edges] == [breaker.id]
        assert unrelated.id not in report.lessons[0].related


def test_a_session_end_asks_the_model_once_at_most(server: LoopbackServer, lore_home: Path,
                                                    real_embedder: Any, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge asked about the session: the pattern pass reads it alone. A session the pattern
    pass finds nothing in is not sent either."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-1234")
    server.replies = [reply(GOOD)]
    settings = make_settings(lore_home, llm=LLM | {"base_url": server.url})
    chat = tmp_path / "chat.jsonl"
    chat.write_text("".join(json.dumps(r) + "\n" for r in [
        {"type": "user", "uuid": "u1", "sessionId": "s-chat", "cwd": "/p",
         "timestamp": "2026-01-01T10:00:00Z",
         "message": {"role": "user", "content": "What does this function return?"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s-chat", "cwd": "/p",
         "timestamp": "2026-01-01T10:00:05Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "A list of names."}]}}]))
    with Lore.open(settings, embedder=real_embedder) as lore:
        judged = lore.analysis.session_ended(TRANSCRIPT.stem, None, str(TRANSCRIPT), "2026-01-01T12:00:00Z",
                                             model_called=True)
        assert judged.session_pass["by"] == "patterns" and judged.session_pass["kept"] >= 1
        assert judged.session_pass["llm_skipped"] == "the judge already asked the model about this session"
        quiet = lore.analysis.session_ended("s-chat", None, str(chat), "2026-01-01T12:00:00Z")
        assert quiet.session_pass == {"by": "patterns", "kept": 0,
                                      "llm_skipped": "the pattern pass finds nothing to weigh in it"}
        assert not server.received
        # Nothing else asked and something to weigh: the model reads it, once.
        again = lore.analysis.session_ended("s-other", None, str(TRANSCRIPT), "2026-01-01T12:00:00Z")
        assert again.session_pass["by"] == "llm" and len(server.received) == 1
