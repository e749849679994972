"""Learning from the work, wired: `lore analyze` on real git repositories, the worker's
SessionStart/SessionEnd path to stored proposed lessons (with and without a language model on a
loopback server), deduplication, the status, and the MCP tools in-process."""
# ruff: noqa: F811 - the tests take the imported `server` fixture as a parameter

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from test_analysis import ENTRY, PATTERNS, WHAT, WHY, script
from test_llm_http import LoopbackServer, server  # noqa: F401 - the loopback server fixture

from conftest import make_settings
from gitrepo import Repo, lines
from lore.api import Lore
from lore.capture.githead import read_head
from lore.capture.queue import Queue
from lore.worker import Worker

TRANSCRIPT = (Path(__file__).parents[1] / "fixtures" / "transcripts" / "daaain-claude-code-log"
              / "-Users-dain-workspace-claude-code-log-sample" / "0d3a8e6f-290f-4105-a327-a2496e5e2a83.jsonl")


@pytest.fixture(autouse=True)
def _git_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)


def big_change(repo: Repo, subject: str, n: int = 6) -> str:
    """Six files and 240 lines with a keyword: a score of 7 (threshold 5)."""
    return repo.commit(subject, *((f"src/mod{i}/core.py", lines(40, f"{subject[:8]} {i} {repo.clock}"))
                                  for i in range(n)))


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    r = Repo(tmp_path / "project")
    r.commit("Initial layout", ("README.md", "hello\n"))
    return r


# ---- the command --------------------------------------------------------------------------------
def test_below_the_threshold_is_skipped_and_explained(run, repo: Repo) -> None:
    repo.commit("Tweak the readme", ("README.md", "hello there\n"))
    res = run("analyze", str(repo.path), "--explain")
    assert res.exit_code == 0, res.output
    for part in ("files", "lines", "new_patterns", "keywords", "architecture", "corrections"):
        assert part in res.output
    assert "score 0, threshold 5: not significant" in res.output
    assert "skipped: score 0 below threshold 5" in res.output
    data = json.loads(run("analyze", str(repo.path), "--json").output)
    assert data["outcome"] == "skipped" and data["lessons"] == []
    assert json.loads(run("analyze", "--status", "--json").output)["skipped_by_reason"] == {
        "score 0 below threshold 5": 2}


def test_force_and_the_summary_without_a_model(run, repo: Repo, lore_home: Path) -> None:
    repo.commit("Tweak the readme", ("README.md", "hello there\n"))
    data = json.loads(run("analyze", str(repo.path), "--force", "--json").output)
    assert data["outcome"] == "summarised" and data["reason"] == "manual trigger"
    assert [p["action"] for p in data["lessons"]] == ["created"]
    with Lore.open(make_settings(lore_home)) as lore:
        lesson = lore.lessons.get(data["lessons"][0]["id"])
    assert lesson.status == "proposed" and lesson.source == "git"
    assert lesson.content.startswith("Not analysed")
    assert lesson.metadata["analysis"]["analysed"] is False
    assert any(e.source and e.source.startswith("commit ") for e in lesson.evidence)
    waiting = json.loads(run("review", "--json").output)  # it reaches a person
    assert [w["id"] for w in waiting["waiting"]] == [lesson.id]
    assert waiting["waiting"][0]["origin"] == "work"


def test_significant_changes_are_proposed_once_then_reinforced(run, repo: Repo) -> None:
    first = big_change(repo, "Refactor the parser modules")
    data = json.loads(run("analyze", str(repo.path), "--range", "HEAD~1..HEAD", "--json").output)
    assert data["significance"]["score"] == 12 and data["outcome"] == "summarised"  # new folders: +5
    lesson_id = data["lessons"][0]["id"]
    assert data["lessons"][0]["action"] == "created"
    again = json.loads(run("analyze", str(repo.path), "--range", "HEAD~1..HEAD", "--json").output)
    assert again["lessons"] == [{"id": lesson_id, "title": "Refactor the parser modules",
                                 "kind": "learning", "action": "duplicate", "related": []}]
    second = big_change(repo, "Refactor the parser modules")  # the same work once more
    assert second != first
    third = json.loads(run("analyze", str(repo.path), "--range", f"{first}..{second}", "--json").output)
    assert third["lessons"][0] == {"id": lesson_id, "title": "Refactor the parser modules",
                                   "kind": "learning", "action": "reinforced", "related": []}
    shown = json.loads(run("recall", "show", lesson_id, "--json").output)
    assert {e["source"] for e in shown["evidence"]} >= {f"commit {first}", f"commit {second}"}
    assert shown["metadata"]["analysis"]["occurrences"] == 2


def test_dry_run_stores_nothing(run, repo: Repo, lore_home: Path) -> None:
    big_change(repo, "Fix the parser")
    data = json.loads(run("analyze", str(repo.path), "--dry-run", "--json").output)
    assert data["dry_run"] and [p["action"] for p in data["lessons"]] == ["would-propose"]
    status = json.loads(run("analyze", "--status", "--json").output)
    assert status["summarised"] == 0 and status["entries_by_kind"] == {}


def test_per_project_threshold(run, repo: Repo, lore_home: Path) -> None:
    lore_home.mkdir(parents=True, exist_ok=True)
    (lore_home / "config.yaml").write_text(f"analysis:\n  threshold: 5\n  projects:\n    {repo.path}: 20\n")
    big_change(repo, "Refactor the parser modules")
    data = json.loads(run("analyze", str(repo.path), "--json").output)
    assert data["significance"]["threshold"] == 20 and data["outcome"] == "skipped"


@pytest.mark.parametrize(("args", "message"), [
    (["{tmp}"], "is not inside a git work tree"),
    (["{tmp}/missing"], "is not a folder"),
    (["{repo}", "--since", "no-such-branch"], "'no-such-branch' names no commit"),
])
def test_bad_input_is_one_line(run, repo: Repo, tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "plain").mkdir()
    given = [a.format(tmp=tmp_path / "plain", repo=repo.path) for a in args]
    res = run("analyze", *given)
    assert res.exit_code == 1
    assert message in res.output and res.output.count("\n") == 1 and "Traceback" not in res.output


def test_since_and_range_together_is_a_usage_error(run, repo: Repo) -> None:
    res = run("analyze", str(repo.path), "--since", "HEAD", "--range", "HEAD~1..HEAD")
    assert res.exit_code == 2 and "not both" in res.output


# ---- SessionEnd in the worker -------------------------------------------------------------------
def worker(lore: Lore) -> Worker:
    w = Worker(lore.settings, lore=lore)
    w.retry_delays = (0.0,)
    return w


def session(home: Path, repo_path: Path, session_id: str = "s-1") -> Queue:
    q = Queue(home / "queue")
    q.append("SessionStart", {"session_id": session_id, "cwd": str(repo_path),
                              "lore_git": read_head(str(repo_path))})  # as the hook queues it
    return q


def test_session_end_without_a_model(lore_home: Path, repo: Repo, real_embedder: Any) -> None:
    settings = make_settings(lore_home)
    with Lore.open(settings, embedder=real_embedder) as lore:
        q = session(lore_home, repo.path)
        assert worker(lore).run(once=True) == 1
        repo.clock = int(time.time()) + 60  # commits made during the session
        big_change(repo, "Refactor the storage layer")
        q.append("SessionEnd", {"session_id": "s-1", "cwd": str(repo.path),
                                "transcript_path": str(TRANSCRIPT)})
        w = worker(lore)
        assert w.run(once=True) == 1 and w.status()["errors"]["count"] == 0
        st = lore.analysis.status()
        assert st["sessions_seen"] == 1 and st["summarised"] == 1
        run = st["last_run"]
        assert run["trigger"] == "session_end" and run["session_id"] == "s-1" and run["score"] >= 5
        stored = [lore.lessons.get(i) for i in run["lesson_ids"]]
        assert all(x.status == "proposed" for x in stored)
        assert "Refactor the storage layer" in [x.title for x in stored]
        learned = [x for x in stored if x.source == "conversation"]  # the transcript's pass
        assert learned and all(x.evidence and x.evidence[0].quote for x in learned)
        assert st["entries_by_kind"]["learning"]["proposed"] >= 1


def test_session_without_git_is_skipped_with_the_reason(lore_home: Path, tmp_path: Path,
                                                         real_embedder: Any) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with Lore.open(make_settings(lore_home), embedder=real_embedder) as lore:
        q = session(lore_home, plain, "s-2")
        q.append("SessionEnd", {"session_id": "s-2", "cwd": str(plain)})
        assert worker(lore).run(once=True) == 2
        st = lore.analysis.status()
    assert st["skipped_by_reason"] == {"no git repository": 1} and st["sessions_seen"] == 1
    assert st["last_error"] is None
    assert st["last_session_start"]["git"] == "no-git"
    assert st["last_session_start"]["says"] == "without git (no repository)"


LLM = {"provider": "anthropic", "max_retries": 0}


def test_session_end_with_a_model_on_loopback(server: LoopbackServer, lore_home: Path, repo: Repo,
                                              real_embedder: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-1234")
    server.replies = [script({"what": WHAT, "why": WHY, "patterns": PATTERNS,
                              "knowledge": {"entries": [ENTRY]}})]
    settings = make_settings(lore_home, llm=LLM | {"base_url": server.url})
    with Lore.open(settings, embedder=real_embedder) as lore:
        q = session(lore_home, repo.path, "s-3")
        worker(lore).run(once=True)
        repo.clock = int(time.time()) + 60
        repo.commit("Fix flaky calls with retries", ("src/client.py", lines(200, "retry")),
                    *((f"src/m{i}.py", lines(3)) for i in range(5)))
        q.append("SessionEnd", {"session_id": "s-3", "cwd": str(repo.path)})
        worker(lore).run(once=True)
        st = lore.analysis.status()
        assert st["analysed"] == 1 and st["llm"]["calls_today"] == 4 and st["llm"]["tokens_today"] > 0
        entry = lore.lessons.get(st["last_run"]["lesson_ids"][0])
        assert entry.kind == "bug_fix" and entry.status == "proposed"
        assert entry.problem_solved == "Transient failures." and entry.when_not_to_apply
        assert entry.examples[0].language == "python"  # from the file, not the model's word
        assert {t.type for t in entry.trade_offs} == {"pro", "con"}
        assert entry.metadata["analysis"]["related_patterns"] == ["circuit breaker"]
        # The same entry from another run (outside the session) reinforces it with that evidence.
        again = lore.analysis.analyze(repo.path, range_="HEAD~1..HEAD", force=True)
        assert [(p.id, p.action) for p in again.lessons] == [(entry.id, "reinforced")]
        assert lore.lessons.get(entry.id).metadata["analysis"]["occurrences"] == 2


def test_a_failing_model_falls_back_to_the_summary(server: LoopbackServer, lore_home: Path, repo: Repo,
                                                   real_embedder: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from test_llm_http import Reply, error_body

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-1234")
    server.replies = [Reply(error_body("invalid_request_error", "bad request"), status=400)]
    settings = make_settings(lore_home, llm=LLM | {"base_url": server.url})
    with Lore.open(settings, embedder=real_embedder) as lore:
        big_change(repo, "Refactor the modules")
        report = lore.analysis.analyze(repo.path)
        assert report.outcome == "summarised" and report.error and "400" in report.error
        assert lore.analysis.status()["last_error"]["error"] == report.error


def test_a_model_without_its_key_falls_back_too(lore_home: Path, repo: Repo, real_embedder: Any,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    settings = make_settings(lore_home, llm={"provider": "anthropic", "base_url": "http://127.0.0.1:9"})
    with Lore.open(settings, embedder=real_embedder) as lore:
        big_change(repo, "Refactor the modules")
        report = lore.analysis.analyze(repo.path)
    assert report.outcome == "summarised" and report.error and report.error.startswith("ConfigError")
    assert report.lessons[0].action == "created"


# ---- MCP ----------------------------------------------------------------------------------------
def test_mcp_trigger_and_status(lore_home: Path, repo: Repo, real_embedder: Any,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    from lore.mcp.server import build_server

    monkeypatch.chdir(repo.path)  # the server's project: its working directory (no client roots here)
    repo.commit("Tweak the readme", ("README.md", "hello there\n"))
    settings = make_settings(lore_home)
    lore = Lore.open(settings, embedder=real_embedder)
    server, tools = build_server(settings, profile="all", lore=lore)

    async def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
        result = await server.call_tool(name, args)
        assert not result.is_error, result.content
        return dict(result.structured_content)

    try:
        done = anyio.run(call, "learn_trigger", {"scope": "commit", "target": "HEAD"})
        assert done["triggered"] and done["outcome"] == "summarised"  # below 5, forced
        assert done["lessons"][0]["action"] == "created"
        status = anyio.run(call, "learn_status", {})
        assert status["analysis"]["summarised"] == 1
        assert status["analysis"]["entries_by_kind"] == {"learning": {"proposed": 1}}
        assert "tokens_today" in status["analysis"]["llm"]
        again = anyio.run(call, "lore_analyze", {"project": str(repo.path), "commit": "HEAD"})
        assert again["lessons"][0]["action"] == "duplicate"
        st = anyio.run(call, "lore_analysis_status", {})
        assert st["summarised"] == 2 and st["lessons_created"] == 1
    finally:
        tools.close()


def test_a_session_end_handled_twice_runs_once(lore_home: Path, tmp_path: Path, real_embedder: Any) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with Lore.open(make_settings(lore_home), embedder=real_embedder) as lore:
        at = "2026-01-01T10:00:00+00:00"
        first = lore.analysis.session_ended("s-9", str(plain), None, at, event_id="e-1")
        again = lore.analysis.session_ended("s-9", str(plain), None, at, event_id="e-1")
        assert (first.reason, again.reason) == ("no git repository", "already handled")
        assert lore.analysis.status()["skipped"] == 1


def test_the_closest_project_threshold_wins(tmp_path: Path) -> None:
    from lore.config import AnalysisConfig
    from lore.errors import ConfigError

    cfg = AnalysisConfig(threshold=5, projects={str(tmp_path): 8, str(tmp_path / "app"): 3})
    assert cfg.threshold_for(str(tmp_path / "app")) == 3
    assert cfg.threshold_for(str(tmp_path / "app-two")) == 8  # a sibling, not a subfolder
    assert cfg.threshold_for(str(tmp_path / "other" / "x")) == 8
    assert cfg.threshold_for("/elsewhere") == 5 and cfg.threshold_for(None) == 5
    bad = tmp_path / "config.yaml"
    bad.write_text("analysis:\n  projects:\n    /src/app: 500\n")
    from lore.config import load_config

    with pytest.raises(ConfigError, match="analysis"):
        load_config(bad)
