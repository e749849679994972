"""The four-stage analysis against real HTTP servers on 127.0.0.1 (the loopback servers of
test_llm_http.py) and real git repositories: what is sent (redacted, within the budget), what
comes back (validated, retried, turned into knowledge entries)."""
# ruff: noqa: F811 - the tests take the imported `server` fixture as a parameter

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from test_llm_http import (
    ANTHROPIC_SECRET,
    GITHUB_SECRET,
    LoopbackServer,
    Reply,
    anthropic_body,
    openai_body,
    server,  # noqa: F401 - the loopback server fixture, used by name
)

from gitrepo import Repo, lines
from lore.capture.git import GitChanges, changes_in_commit
from lore.errors import UnusableReply
from lore.extract.analysis import analyze_changes, diff_for_budget, language_for
from lore.extract.significance import Correction
from lore.llm.anthropic import AnthropicProvider
from lore.llm.base import ProviderSettings
from lore.llm.openai_compat import OpenAICompatProvider

WHAT = {"summary": "Added retry with backoff to the HTTP client.", "change_type": "Feature",
        "files": [{"path": "src/client.py", "role": "HTTP client", "change_type": "modified"}]}
WHY = {"problem": "Calls failed on transient 503s.", "alternatives_considered": "a circuit breaker",
       "trade_offs": [{"consideration": "latency", "decision": "cap at 3 tries", "reasoning": "bounded"}],
       "principles": ["fail fast on 4xx"]}
PATTERNS = {"patterns": [{"name": "Retry with jitter", "category": "Code Pattern", "description": "d",
                          "applicability": "idempotent calls"}],
            "best_practices": ["honour Retry-After"], "anti_patterns_avoided": []}
ENTRY = {"title": "Retry idempotent HTTP calls with jittered backoff", "category": "bugfix",
         "summary": "Retry 429 and 5xx with capped exponential backoff.", "problem": "Transient failures.",
         "solution": "Wrap the call; honour Retry-After.", "when_to_apply": "Idempotent requests.",
         "when_not_to_apply": "POSTs without an idempotency key.",
         "trade_offs": [{"type": "Pros", "description": "fewer failures"},
                        {"type": "con", "description": "slower worst case"}],
         "code_examples": [{"file": "src/client.py", "language": "javascript", "context": "the loop",
                            "code": "for attempt in range(3):\n    send()"}],
         "related_patterns": "circuit breaker", "confidence": 0.8, "tags": ["HTTP", "retry", "http"]}


def stage_of(system: str) -> str:
    markers = (("Describe WHAT", "what"), ("analyse WHY", "why"), ("extract what can be", "patterns"),
               ("knowledge-base", "knowledge"))
    for marker, stage in markers:
        if marker in system:
            return stage
    raise AssertionError(f"unknown stage: {system[:80]}")


def script(replies: dict[str, Any]):
    """An Anthropic-speaking reply chosen by the stage the system prompt names."""
    def reply(body: dict[str, Any]) -> Reply:
        value = replies[stage_of(body.get("system", ""))]
        return Reply(anthropic_body(value if isinstance(value, str) else json.dumps(value)))
    return reply


def anthropic(server: LoopbackServer) -> AnthropicProvider:
    # The bare provider, without the guard: the analysis must redact and cut on its own.
    return AnthropicProvider(ProviderSettings(name="anthropic", base_url=server.url, api_key="test-key",
                                              timeout=5.0, max_retries=0))


@pytest.fixture
def changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> GitChanges:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    repo = Repo(tmp_path / "project")
    repo.commit("Initial client", ("src/client.py", "def send():\n    pass\n"))
    repo.commit(f"Fix flaky calls with retries (token {GITHUB_SECRET})",
                ("src/client.py", f"API_KEY = '{ANTHROPIC_SECRET}'\n\ndef send():\n    retry()\n"),
                ("src/retry.py", lines(30, "backoff")))
    return changes_in_commit(repo.path, "HEAD")


def test_four_stages_make_knowledge_entries(server: LoopbackServer, changes: GitChanges) -> None:
    server.replies = [script({"what": WHAT, "why": WHY, "patterns": PATTERNS,
                              "knowledge": {"entries": [ENTRY]}})]
    result = analyze_changes(anthropic(server), changes, session_text="we kept hitting 503s from the API",
                             corrections=[Correction("no, cap retries at 3", "m-4")], session_id="s-9")
    stages = [stage_of(r["body"]["system"]) for r in server.received]
    assert stages == ["what", "why", "patterns", "knowledge"]
    assert result.what.change_type == "feature" and result.what.files[0].path == "src/client.py"
    assert result.why.alternatives_considered == ["a circuit breaker"]
    assert result.patterns.patterns[0].category == "code_pattern"
    (entry,) = result.entries
    assert (entry.kind, entry.confidence, entry.analysed) == ("bug_fix", 4, True)
    assert entry.when_not_to_apply == "POSTs without an idempotency key."
    assert [(t.type, t.description) for t in entry.trade_offs] == [("pro", "fewer failures"),
                                                                  ("con", "slower worst case")]
    assert entry.examples[0].language == "python"  # from src/client.py, not the model's word
    assert entry.related_patterns == ("circuit breaker",) and entry.tags == ("http", "retry")
    assert [e.source for e in entry.evidence] == [f"commit {changes.commits[0].sha}"]
    assert entry.evidence[0].session_id == "s-9" and "[REDACTED:token]" in entry.evidence[0].quote
    # Each stage hands the previous ones on.
    assert "Added retry with backoff" in server.received[1]["raw"]
    why_sent, knowledge_sent = server.received[1]["raw"], server.received[3]["raw"]
    assert "we kept hitting 503s" in why_sent and "cap retries at 3" in why_sent
    assert "Retry with jitter" in knowledge_sent and "{max_entries}" not in knowledge_sent


def test_nothing_secret_is_sent(server: LoopbackServer, changes: GitChanges) -> None:
    server.replies = [script({"what": WHAT, "why": WHY, "patterns": PATTERNS, "knowledge": [ENTRY]})]
    assert ANTHROPIC_SECRET in changes.patch  # read from git as it is ...
    analyze_changes(anthropic(server), changes, session_text=f"the key is {ANTHROPIC_SECRET}",
                    corrections=[Correction(f"use {GITHUB_SECRET}")])
    sent = "".join(r["raw"] for r in server.received)
    assert ANTHROPIC_SECRET not in sent and GITHUB_SECRET not in sent  # ... and never sent
    first = server.received[0]["raw"]
    assert "[REDACTED:api-key]" in first and "[REDACTED:token]" in first


def test_the_diff_is_cut_to_the_budget(server: LoopbackServer, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    repo = Repo(tmp_path / "big")
    repo.commit("Start", ("README.md", "x\n"))
    repo.commit("Generate many modules", *[(f"src/mod{i}.py", lines(400, f"value_{i}")) for i in range(8)])
    big = changes_in_commit(repo.path, "HEAD")
    assert len(big.patch) > 2000 * 4 * 4
    server.replies = [script({"what": WHAT, "why": WHY, "patterns": PATTERNS, "knowledge": [ENTRY]})]
    result = analyze_changes(anthropic(server), big, max_input_tokens=2000)
    assert result.diff_cut
    first = server.received[0]["body"]["messages"][0]["content"]
    assert len(first) <= 2000 * 4
    assert first.count("diff --git") == 8 and "[…]" in first  # every file shown, each cut


def test_a_bad_reply_is_asked_again_then_given_up(server: LoopbackServer, changes: GitChanges) -> None:
    answers = iter(["Sure! Here is the summary you asked for.", json.dumps(WHAT)])

    def reply(body: dict[str, Any]) -> Reply:
        stage = stage_of(body.get("system", ""))
        if stage == "what":
            return Reply(anthropic_body(next(answers)))
        later = {"why": WHY, "patterns": PATTERNS, "knowledge": [ENTRY]}
        return Reply(anthropic_body(json.dumps(later[stage])))

    server.replies = [reply]
    result = analyze_changes(anthropic(server), changes)
    assert len(server.received) == 5 and "could not be used" in server.received[1]["raw"]
    assert result.entries[0].title == ENTRY["title"]
    server.received.clear()
    server.replies = [script({"what": {"summary": "no change_type"}, "why": WHY, "patterns": PATTERNS,
                              "knowledge": []})]
    with pytest.raises(UnusableReply, match="no usable JSON after 3 replies"):
        analyze_changes(anthropic(server), changes)
    assert len(server.received) == 3


def test_an_openai_compatible_server_works_the_same(server: LoopbackServer, changes: GitChanges) -> None:
    replies = {"what": WHAT, "why": WHY, "patterns": PATTERNS, "knowledge": {"entries": [ENTRY, ENTRY]}}

    def reply(body: dict[str, Any]) -> Reply:
        system = body["messages"][0]["content"]
        return Reply(openai_body("```json\n" + json.dumps(replies[stage_of(system)]) + "\n```"))

    server.replies = [reply]
    provider = OpenAICompatProvider(ProviderSettings(name="openai", model="llama3.2:3b",
                                                     base_url=server.url + "/v1", timeout=5.0, max_retries=0))
    result = analyze_changes(provider, changes, max_entries=1)
    assert len(result.entries) == 1 and server.received[0]["path"] == "/v1/chat/completions"


def test_diff_for_budget_names_files_it_cannot_show() -> None:
    patch = "".join(f"diff --git a/f{i}.py b/f{i}.py\n+{'x' * 50}\n" for i in range(200))
    text, cut = diff_for_budget(patch, 4000)
    assert cut and len(text) <= 4000 and "[… not shown: diff --git a/f" in text
    assert diff_for_budget("diff --git a/x b/x\n+1\n", 4000) == ("diff --git a/x b/x\n+1\n", False)


@pytest.mark.parametrize(("path", "language"), [("a/b.py", "python"), ("web/App.TSX", "tsx"),
                                                ("Dockerfile", "dockerfile"), ("notes.txt", "")])
def test_language_for(path: str, language: str) -> None:
    assert language_for(path) == language
