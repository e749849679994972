"""`lore review -i` through a pseudo-terminal: the real `lore` process, real keys, the screen
it draws and what is stored afterwards."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from lore.api import Lore

LORE = str(Path(sys.executable).with_name("lore"))
PROMPT = r"\[q\]uit > "
CORRECTIONS = [
    ("Never use print for logging, use the logging module", "I added print() calls."),
    ("No, don't use requests, use httpx instead", "I'll call the API with requests."),
    ("Don't use tabs in YAML files, use two spaces", "I indented config.yaml with tabs."),
    ("don't do that again", "I rewrote the whole module."),
]


@pytest.fixture
def queue(lore: Lore) -> list[dict]:
    """Four learned rules waiting, in the order `lore review` shows them."""
    for i, (said, turn) in enumerate(CORRECTIONS):
        lore.learning.record(said, turn, project="/work/app", session_id=f"s{i}")
    items = lore.review.waiting()
    assert len(items) == 4
    return items


@pytest.fixture
def spawn(lore_home: Path, tmp_path: Path) -> Iterator:
    children = []

    def start(*args: str, **env: str) -> pexpect.spawn:
        base = {k: v for k, v in os.environ.items() if k not in ("EDITOR", "VISUAL")}
        child = pexpect.spawn(LORE, ["review", "-i", *args], env={**base, **env,
                              "LORE_HOME": str(lore_home), "TERM": "dumb"}, encoding="utf-8",
                              timeout=120, dimensions=(40, 200), cwd=str(tmp_path))
        children.append(child)
        return child

    yield start
    for child in children:
        child.close(force=True)


def finish(child: pexpect.spawn) -> str:
    child.expect(pexpect.EOF)
    child.close()
    return str(child.before)


def review_of(lore: Lore, lesson_id: str) -> tuple[str, dict]:
    lesson = lore.lessons.get(lesson_id)
    return lesson.status, lesson.metadata["learning"].get("review") or {}


def test_keys_decide_and_the_summary_counts(queue, spawn, lore):
    child = spawn()
    child.expect(PROMPT)
    first = queue[0]
    screen = child.before
    assert "1/4" in screen and first["id"] in screen and first["title"] in screen
    assert "said (" in screen and "answering: " in screen and "scope /work/app" in screen
    assert "seen 1x in 1 session(s)" in screen and "score " in screen
    child.send("?")
    child.expect(PROMPT)
    assert "r reject (asks a reason)" in child.before
    child.send("x")
    child.expect(PROMPT)
    assert "'x' is not a key here" in child.before
    child.send("a")
    child.expect(PROMPT)
    assert f"approved: {first['title']}" in child.before and "2/4" in child.before
    child.send("r")
    child.expect("reason")
    child.sendline("we print on purpose in this CLI")
    child.expect(PROMPT)
    child.send("d")
    child.expect(PROMPT)
    child.send("s")
    out = finish(child)
    assert "that was the last rule waiting" in out
    assert "approved 1, rejected 1, deferred 1, skipped 1" in out
    assert child.exitstatus == 0
    assert review_of(lore, queue[0]["id"])[0] == "active"
    status, review = review_of(lore, queue[1]["id"])
    assert status == "rejected" and review["reason"] == "we print on purpose in this CLI"
    assert review["via"] == "terminal"
    assert review_of(lore, queue[2]["id"])[1]["action"] == "defer"
    assert [i["id"] for i in lore.review.waiting()] == [queue[3]["id"]]


def test_quit_midway_keeps_earlier_decisions(queue, spawn, lore):
    child = spawn()
    child.expect(PROMPT)
    child.send("a")
    child.expect(PROMPT)
    child.send("n")
    child.expect(PROMPT)
    child.send("p")
    child.expect(PROMPT)
    assert "2/4" in child.before and queue[1]["id"] in child.before
    child.send("q")
    out = finish(child)
    assert "approved 1, rejected 0, deferred 0, skipped 3" in out and child.exitstatus == 0
    assert lore.lessons.get(queue[0]["id"]).status == "active"
    assert {i["id"] for i in lore.review.waiting()} == {i["id"] for i in queue[1:]}


def test_ctrl_c_leaves_every_decision_made_and_nothing_half_done(queue, spawn, lore):
    child = spawn()
    child.expect(PROMPT)
    child.send("d")
    child.expect(PROMPT)
    child.send("r")
    child.expect("reason")
    child.sendintr()  # while asking the reason: this rule stays undecided
    out = finish(child)
    assert "interrupted; every decision made so far is stored" in out
    assert "approved 0, rejected 0, deferred 1, skipped 3" in out
    assert child.exitstatus == 130
    assert review_of(lore, queue[0]["id"])[1]["action"] == "defer"
    assert lore.lessons.get(queue[1]["id"]).status == queue[1]["status"]
    assert lore.admin.integrity() == "ok"


def test_edit_prefills_the_rule_and_an_empty_edit_cancels(queue, spawn, lore):
    child = spawn()
    child.expect(PROMPT)
    child.send("e")
    child.expect("rule: ")
    child.expect(queue[0]["title"])  # pre-filled, ready to change
    child.send("\x15")  # readline: erase the line
    child.sendline("")
    child.expect(PROMPT)
    assert "edit cancelled: nothing changed" in child.before
    child.send("e")
    child.expect(queue[0]["title"])
    child.send("\x15")
    child.sendline("Log with the logging module, never print()")
    child.expect(PROMPT, timeout=180)  # the changed text is embedded: the model loads
    assert "edited: Log with the logging module, never print()" in child.before
    child.send("q")
    out = finish(child)
    assert "approved 1 (1 edited)" in out
    lesson = lore.lessons.get(queue[0]["id"])
    assert lesson.title == "Log with the logging module, never print()"
    assert lesson.status == "active"


def test_edit_in_the_editor(queue, spawn, lore, tmp_path):
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i '1s/.*/Prefer the logging module over print/' \"$1\"\n")
    editor.chmod(0o755)
    child = spawn(EDITOR=str(editor))
    child.expect(PROMPT)
    child.send("e")
    child.expect(PROMPT, timeout=180)
    assert "edited: Prefer the logging module over print" in child.before
    child.send("q")
    finish(child)
    assert lore.lessons.get(queue[0]["id"]).title == "Prefer the logging module over print"


def test_not_a_terminal_is_a_one_line_error(queue, run):
    result = run("review", "-i")
    assert result.exit_code == 1
    [line] = result.stderr.strip().splitlines()
    assert "needs a terminal" in line and "lore review approve|edit|reject|defer ID" in line
    assert run("review", "-i", "--json").exit_code == 2


def test_listing_loads_no_model_no_numpy_and_reads_in_batches(queue, lore_home):
    """`lore review` must stay fast with a thousand rules: no learning pipeline, no numpy,
    and a fixed number of queries whatever the queue's length (no query per rule)."""
    import subprocess

    code = (
        "import sys\n"
        "from lore.cli import main\n"
        "sys.argv = ['lore', 'review', '--limit', '1000']\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "heavy = [m for m in ('numpy', 'sqlite_vec', 'lore.core.learner', 'lore.extract.detect',\n"
        "         'onnxruntime', 'lore.validation') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert "HEAVY []" in out.stdout and queue[0]["id"] in out.stdout


def test_the_queue_costs_the_same_few_queries_for_4_rules_or_40(lore, queue):
    def queries() -> int:
        seen: list[str] = []
        conn = lore.store.conn  # type: ignore[attr-defined]
        conn.set_trace_callback(seen.append)
        try:
            lore.review.waiting(limit=1000)
        finally:
            conn.set_trace_callback(None)
        return len(seen)

    few = queries()
    for i in range(36):
        lore.learning.record(f"No, don't use tool{i}, use gadget{i} instead", None,
                            project="/work/app", session_id=f"x{i}", force=True)
    assert len(lore.review.waiting(limit=1000)) == 40
    assert queries() == few <= 20


def test_checks_wait_after_the_rules_and_take_approve_or_reject(spawn, lore):
    rule = lore.lessons.add("Use pnpm, not npm", "The lockfile is pnpm's.", kind="project_rule")
    [npm] = lore.checks.propose(rule.id)
    gen = lore.checks.add(rule.id, {"path": "gen/", "mode": "block"})
    child = spawn()
    child.expect(PROMPT)
    assert "1/2" in child.before and "check: " + npm["id"] in child.before
    assert "Blocks Bash commands matching" in child.before and "would have matched 0" in child.before
    child.send("e")
    child.expect(PROMPT)
    assert "a check is approved (a) or rejected (r)" in child.before
    child.send("a")
    child.expect(PROMPT)
    assert "approved: Blocks Bash commands" in child.before and "2/2" in child.before
    child.send("r")
    out = finish(child)
    assert "approved 1, rejected 1" in out and child.exitstatus == 0
    assert lore.checks.get(npm["id"])["status"] == "active"
    assert lore.checks.get(gen["id"])["status"] == "rejected"
