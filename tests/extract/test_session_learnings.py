"""The pattern-based session pass: each rule on messages written to test it (and on the near
misses it must leave alone), then on real Claude Code transcripts."""

from __future__ import annotations

from pathlib import Path

import pytest

from lore.capture.claude_code import ClaudeCodeReader
from lore.capture.readers import reader_for
from lore.capture.transcripts import session_id_for
from lore.extract.session_learnings import (
    SessionMessage,
    error_line,
    messages_from_turns,
    sentences,
    session_learnings,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"
TIMELINE = (FIXTURES / "daaain-claude-code-log" / "-Users-dain-workspace-claude-code-log-sample"
            / "0d3a8e6f-290f-4105-a327-a2496e5e2a83.jsonl")
SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "transcripts"


def msgs(*pairs: tuple[str, str]) -> list[SessionMessage]:
    return [SessionMessage(role, text, f"m{i}") for i, (role, text) in enumerate(pairs)]  # type: ignore[arg-type]


def rules(found) -> list[str]:
    return [f.rule for f in found]


# ---- decisions ----------------------------------------------------------------------------------
def test_a_decision_the_user_states() -> None:
    found = session_learnings(msgs(("assistant", "Vite or webpack would both work here."),
                                   ("user", "ok, fine, let's use vite for the dev server")), session_id="s1")
    assert [(f.category, f.statement, f.kind) for f in found] == [
        ("decision", "ok, fine, let's use vite for the dev server", "decision")]
    assert [(e.message_id, e.session_id, e.source) for e in found[0].evidence] == [("m1", "s1", "decision")]


@pytest.mark.parametrize("text", [
    "should we go with vite or webpack?",  # a question
    "maybe we should use vite instead, what do you think",  # hedged
    "We decided to use Redis last year, if I remember correctly",  # hedged
])
def test_questions_and_guesses_are_not_decisions(text: str) -> None:
    assert session_learnings(msgs(("user", text))) == []


def test_an_assistant_decision_and_a_pasted_wall_of_text() -> None:
    found = session_learnings(msgs(
        ("assistant", "I've decided to keep the parser synchronous because the files are small."),
        ("user", "Going with the defaults is fine. " + "x " * 900)))  # a paste, not something said
    assert rules(found) == ["decision:assistant"]
    assert found[0].statement == "I've decided to keep the parser synchronous because the files are small."


def test_evidence_is_redacted() -> None:
    key = "sk-ant-api03-" + "Q" * 40
    found = session_learnings(msgs(("user", f"let's use the staging key {key} for the smoke tests")))
    assert key not in found[0].statement and "[REDACTED:api-key]" in found[0].evidence[0].quote


# ---- problems solved ----------------------------------------------------------------------------
FAILING = ("tool", "[tool_result Bash error] ============ test session starts ============\n"
                   "E   AssertionError: assert 'combined_transcript_link' in html\n"
                   "FAILED test/test_link.py::test_link - AssertionError\n1 failed, 5 passed in 0.20s")
PASSING = ("tool", "[tool_result Bash] ============ test session starts ============\n6 passed in 0.18s")
DIAGNOSIS = ("assistant", "The issue is that the test looks for the template variable name, not the rendered "
                          "text. Let me fix the assertion.")


GUESS = ("assistant", "The issue might be that the cache is stale on every request.")
EDITED = ("tool", "[tool_result Edit] The file x.py has been updated successfully.")
EDIT_FAILED = ("tool", "[tool_result Edit error] String to replace not found in file.")


def test_error_then_diagnosis_then_a_passing_run() -> None:
    found = session_learnings(msgs(FAILING, DIAGNOSIS, EDITED, PASSING))
    assert rules(found) == ["problem:error-diagnosis-pass"]
    learned = found[0]
    assert learned.statement == ("The issue is that the test looks for the template variable name, not the "
                                 "rendered text.")
    assert [(e.source, e.message_id) for e in learned.evidence] == [("error", "m0"), ("diagnosis", "m1"),
                                                                   ("passed", "m3")]
    assert learned.evidence[0].quote.startswith("E AssertionError")
    assert learned.evidence[2].quote == "6 passed in 0.18s"


def test_the_last_diagnosis_before_the_pass_is_the_one_kept() -> None:
    first = ("assistant", "The issue is that the cache is stale on every request to the server.")
    found = session_learnings(msgs(FAILING, first, FAILING, DIAGNOSIS, PASSING))
    assert [f.evidence[1].message_id for f in found] == ["m3"]


@pytest.mark.parametrize("sequence", [
    [DIAGNOSIS, PASSING],  # no failure before it
    [FAILING, DIAGNOSIS],  # never passed
    [FAILING, GUESS, PASSING],  # a guess is not a diagnosis
    [FAILING, DIAGNOSIS, EDITED],  # an edit is not a passing run
    [FAILING, DIAGNOSIS, ("tool", "[tool_result Bash error] 1 failed, 5 passed in 0.2s")],  # still failing
    [EDIT_FAILED, DIAGNOSIS, PASSING],  # the agent's own plumbing is not a problem of the project
])
def test_no_problem_solved_without_all_three(sequence: list[tuple[str, str]]) -> None:
    assert [f for f in session_learnings(msgs(*sequence)) if f.category == "problem_solved"] == []


def test_a_user_saying_it_works_counts_as_the_pass() -> None:
    found = session_learnings(msgs(FAILING, DIAGNOSIS, ("user", "great, that works now")))
    assert rules(found) == ["problem:error-diagnosis-pass"] and found[0].evidence[2].message_id == "m2"


def test_error_lines() -> None:
    traceback = ("[tool_result Bash error] Traceback (most recent call last):\n  File \"a.py\", line 1\n"
                 "ModuleNotFoundError: No module named 'yaml'")
    assert error_line(SessionMessage("tool", traceback, "x")) == "ModuleNotFoundError: No module named 'yaml'"
    assert error_line(SessionMessage("tool", "[tool_result Read] error handling code", "x")) is None
    assert error_line(SessionMessage("assistant", "Error: nothing", "x")) is None


# ---- anti-patterns ------------------------------------------------------------------------------
def test_an_acknowledged_correction_names_what_not_to_do() -> None:
    found = session_learnings(msgs(
        ("assistant", "I'll loop through all items and hide each one."),
        ("user", "I don't think we need to loop through all items, the group names match the filters?"),
        ("assistant", "You're absolutely right! I can check the filter states directly instead of looping "
                      "through items. Let me look at the code.")))
    assert rules(found) == ["anti:acknowledged-correction"]
    assert found[0].statement == "I can check the filter states directly instead of looping through items."
    assert [e.source for e in found[0].evidence] == ["correction", "acknowledged"]


def test_agreement_without_a_lesson_or_without_a_user_message_is_nothing() -> None:
    assert session_learnings(msgs(("user", "Please also run the linter."),
                                  ("assistant", "You're right! Let me run it now."))) == []
    unprompted = ("assistant", "You're right, we should use the cache instead of the API.")
    assert session_learnings(msgs(("assistant", "Done."), unprompted)) == []


def test_a_failed_approach_with_its_reason() -> None:
    found = session_learnings(msgs(("assistant", "The pragma comment didn't work because dialyzer reads the "
                                                 "ignore file only.")))
    assert rules(found) == ["anti:failed-because"]


# ---- patterns -----------------------------------------------------------------------------------
def test_a_standing_rule_from_the_user() -> None:
    found = session_learnings(msgs(("user", "From now on, run the formatter before every commit.")))
    assert rules(found) == ["pattern:user-rule"]
    # A sub-agent's task is not the user's word.
    assert session_learnings(msgs(("prompt", "Always use the worktree at the path above."))) == []


def test_the_same_failure_three_times_is_a_recurring_pattern() -> None:
    fail = ("[tool_result Bash error] Traceback (most recent call last):\n"
            "ImportError: cannot import name 'x' from 'y'")
    found = session_learnings(msgs(("tool", fail), ("assistant", "Retrying."), ("tool", fail),
                                   ("tool", fail)))
    assert rules(found) == ["pattern:recurring-error"]
    assert found[0].statement == "Recurring failure (3 times): ImportError: cannot import name 'x' from 'y'"
    assert session_learnings(msgs(("tool", fail), ("tool", fail))) == []  # twice is not yet a pattern


def test_sentences_drop_code_and_numbered_source() -> None:
    text = "First point here.\n```python\nprint('code')\n```\n   12→ def f():\n- **Second** point."
    assert sentences(text) == ["First point here.", "Second point."]


# ---- real transcripts ---------------------------------------------------------------------------
def test_a_real_transcript_through_the_reader() -> None:
    turns = list(ClaudeCodeReader().read(TIMELINE))
    messages = messages_from_turns(turns)
    assert messages and {m.role for m in messages} <= {"user", "assistant", "tool", "prompt"}
    assert all(not m.text.startswith("[tool_result") for m in messages if m.role != "tool")
    found = session_learnings(messages, session_id=session_id_for(TIMELINE))
    assert [(f.category, f.statement) for f in found] == [
        ("anti_pattern", "I can directly check the filter states instead of looping through items.")]
    ids = {m.message_id for m in messages}
    assert all(e.message_id in ids for f in found for e in f.evidence)


def test_the_shared_transcripts_stay_few_and_quoted() -> None:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"{SHARED_DATA} is not here (real transcripts kept beside the repository, not in it)")
    proposed = []
    for path in sorted(SHARED_DATA.rglob("*.jsonl")):
        reader = reader_for(path)
        if reader is None:
            continue
        messages = messages_from_turns(reader.read(path))
        ids = {m.message_id for m in messages}
        for found in session_learnings(messages, session_id=session_id_for(path)):
            assert found.evidence and all(e.message_id in ids and e.quote for e in found.evidence)
            proposed.append(found)
    # Precision over recall: a handful from some 2,000 messages (docs/analysis.md has the figures).
    assert 1 <= len(proposed) <= 15
