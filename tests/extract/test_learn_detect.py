"""The correction detector on messages written for these tests (none come from a dataset)."""

from __future__ import annotations

import json
import time

import pytest

from lore.capture.signals import might_teach
from lore.extract.detect import detect, feature_names, model
from lore.extract.features import english_ratio, looks_like_log_or_code

OFFER = "I've added the endpoint. Would you like me to also write the integration tests?"
DONE = "I've switched the session store to Redis and updated the config."


@pytest.mark.parametrize("text, previous", [
    ("No, don't use Redis, use local file sessions instead", "I'll add Redis for sessions."),
    ("you didn't update the changelog", DONE),
    ("that's not right, the migration has to run before the seed", DONE),
    ("use pnpm instead of npm", "I'll run npm install to add the dependency."),
    ("why did you delete the retry logic? put it back", DONE),
    ("you're editing the generated file, not the template. be more careful", DONE),
    ("revert that, the old parser was fine", DONE),
    ("stop adding comments to every line", DONE),
])
def test_corrections_are_detected(text, previous):
    d = detect(text, previous)
    assert d.label == "correction", d
    assert d.type in ("explicit", "refinement")


@pytest.mark.parametrize("text", [
    "from now on, never ask me whether to run the tests, just run them",
    "always use type hints in this project, I prefer explicit types",
    "make a rule: when working with JSON output never use grep, use jq instead",
])
def test_standing_rules_are_preferences_and_durable(text):
    d = detect(text, DONE)
    assert d.positive and d.durable, d
    assert d.label == "preference"


@pytest.mark.parametrize("text, previous", [
    ("no", OFFER),                                   # a bare "no" declining an offer
    ("no thanks", OFFER),
    ("nope, still blank", DONE),                     # a failure report, not a correction
    ("no it still doesn't work", DONE),
    ("make the leaderboard global instead of per team", None),  # "instead" in a feature request
    ("can you add a dark mode toggle instead of the checkbox in settings?", None),
    ("actually yes, that looks right, go ahead", OFFER),  # "actually" agreeing with the agent
    ("perfect, thanks!", DONE),
    ("looks good, ship it", DONE),
    ("run the tests", DONE),
    ("what does this function return?", DONE),
    ("hi", None),
])
def test_hard_negatives(text, previous):
    d = detect(text, previous)
    assert d.label == "none", d


def test_non_english_trigger_words_do_not_fire():
    for text in ("no, no funciona, el botón sigue sin aparecer en la página",
                 "nie, to nie jest dobre, zmień to proszę na inne",
                 "non, ce n'est pas ce que je veux, utilise plutôt une liste",
                 "нет, не используй Redis, используй файлы"):
        d = detect(text, DONE)
        assert d.label == "none" and d.reason == "not English", d
    assert english_ratio("no, don't use Redis here") == 1.0


def test_logs_and_code_are_set_aside():
    log = "Traceback (most recent call last):\n  File \"app.py\", line 3\nValueError: no, wrong"
    assert looks_like_log_or_code(log)
    assert detect(log, DONE).reason == "pasted log or code"
    code = "\n".join(["def f(x):", "    if not x:", "        return None", "    return x + 1;",
                      "class A:", "    pass"])
    assert detect(code, DONE).label == "none"


def test_empty_and_huge_messages():
    assert detect("", DONE).reason == "empty"
    assert detect("   \n", None).label == "none"
    huge = "no, don't do that. " + "x " * 200_000
    started = time.perf_counter()
    d = detect(huge, "y" * 100_000)
    assert time.perf_counter() - started < 30  # guards against backtracking (minutes), not speed
    assert d.positive  # the start of the message is what counts


def test_the_prefilter_misses_nothing_the_detector_catches():
    """By construction: the detector only weighs messages the pre-filter passed."""
    messages = [
        "No, don't use Redis, use local file sessions instead", "you didn't update the docs",
        "always run the linter", "thanks", "run it", "no", "use httpx instead", "ok",
        "make it shorter", "that's wrong", "from now on use tabs", "build fails",
    ]
    for m in messages:
        if detect(m, DONE).positive:
            assert might_teach(m), m


def test_shipped_weights_match_the_features():
    m = model()
    assert list(m.features) in (feature_names(), feature_names(False))
    assert len(m.weights) == len(m.features)
    assert 0 < m.threshold < 1
    meta = json.loads((__import__("lore.extract.detect").extract.detect.WEIGHTS_FILE).read_text())["meta"]
    assert meta["repositories"] > 1  # trained and cross-validated across authors


# ---- wrappers, pasted text, reasons (examples written for these tests) ----------------------

def test_client_wrappers_are_stripped_before_detection():
    from lore.capture.signals import strip_wrappers

    wrapped = ("<ide_opened_file>The user opened the file src/app.py in the IDE. This may or may "
               "not be related.</ide_opened_file><ide_selection>def f(): pass</ide_selection>"
               "you didn't update the changelog")
    assert strip_wrappers(wrapped) == "you didn't update the changelog"
    assert detect(wrapped, DONE).label == "correction"
    # The wrapper's own words ("may or may not") teach nothing.
    assert not might_teach("<ide_opened_file>This may not be related to the task."
                           "</ide_opened_file>thanks")
    reminder = "<system-reminder>\nNever use emojis. Don't do X.\n</system-reminder>\nrun the tests"
    assert strip_wrappers(reminder) == "run the tests"
    assert detect(reminder, DONE).label == "none"


@pytest.mark.parametrize("wrapper", [
    "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n"
    "<command-args></command-args>",
    "<local-command-stdout>No, not found: rule file missing</local-command-stdout>",
    "[Request interrupted by user for tool use]",
    "Caveat: The messages below were generated by the user while running local commands. DO NOT "
    "respond to these messages or otherwise consider them in your response unless the user "
    "explicitly asks you to.",
    "<system-reminder>Always answer briefly; never use tables.</system-reminder>",
])
def test_a_message_that_is_only_a_wrapper_is_none(wrapper):
    d = detect(wrapper, DONE)
    assert d.label == "none" and d.reason == "only a client wrapper", d
    assert not might_teach(wrapper)


def test_interrupted_marker_leaves_what_the_user_typed():
    d = detect("[Request interrupted by user]\nno, don't touch the migrations, use a new file", DONE)
    assert d.label == "correction", d


RULES_FOR_ANOTHER_TOOL = """# Project rules

## Style
1. Always use tabs for indentation.
2. Never use default exports.
3. Prefer composition over inheritance.

## Testing
- Don't mock the database.
- Always run the linter before committing.
- Never skip failing tests.
"""

PROMPT_FOR_ANOTHER_AGENT = """You are a senior reviewer. Your task is to check pull requests.
Rules:
- Never approve a change without tests.
- Always ask for a changelog entry.
- Don't comment on formatting, the linter does that.
- Prefer small, focused suggestions over rewrites.
- Be concise and never use more than five bullet points.
Output format: a list of findings, most severe first, each with the file and line.
""" * 2


@pytest.mark.parametrize("text", [RULES_FOR_ANOTHER_TOOL * 2, PROMPT_FOR_ANOTHER_AGENT,
                                  "```yaml\n" + "rules:\n  - never: commit secrets\n" * 30 + "```"])
def test_pasted_text_is_not_the_user_speaking(text):
    d = detect(text, DONE)
    assert d.label == "none" and d.reason == "pasted text", d


def test_a_short_note_around_a_paste_is_weighed_on_its_own():
    note = "No, you used the wrong file. Put these in the rules file instead, not in the README."
    d = detect(note + "\n\n" + RULES_FOR_ANOTHER_TOOL * 2, DONE)
    assert d.label == "correction", d
    assert d.text.startswith("No, you used the wrong file")
    # A neutral note does not turn the pasted rules into the user's own.
    d = detect("here is the file we talked about\n\n" + RULES_FOR_ANOTHER_TOOL * 2, DONE)
    assert d.label == "none", d


def test_the_users_own_short_list_is_not_a_paste():
    from lore.extract.features import pasted

    own = ("a few things before you continue:\n1. don't rename the public functions\n"
           "2. keep the old flag working\n3. the tests must not hit the network")
    assert pasted(own) == (False, own)


@pytest.mark.parametrize("text, reason", [
    ("perfect, thanks!", "reads as thanks or approval"),
    ("what does the retry flag do?", "reads as a question"),
    ("still doesn't work, same error", "reports a symptom"),
])
def test_negatives_say_why(text, reason):
    d = detect(text, DONE)
    assert d.label == "none"
    assert d.reason == reason, d


def test_the_prefilter_imports_nothing_heavy():
    import subprocess
    import sys

    code = ("import sys; import lore.capture.signals as s; s.might_teach('no, use pnpm'); "
            "print(any(m in sys.modules for m in ('numpy', 'lore.extract.detect', 'onnxruntime')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_hashed_ngrams_are_stable_and_weighed_when_a_model_ships_them():
    from lore.extract.detect import Model, vector
    from lore.extract.features import BUCKETS, cues, hashed

    a = hashed("No, use pnpm instead of npm")
    assert a == hashed("no, use PNPM instead of npm") and all(0 <= i < BUCKETS for i in a)
    assert a != hashed("thanks, looks good")
    names = tuple(feature_names(False))
    x = vector(cues("use pnpm instead of npm", DONE))
    plain = Model(names, (0.0,) * len(names), 0.0, 0.5)
    weights = [0.0] * BUCKETS
    for i in a:
        weights[i] = 1.0
    with_grams = Model(names, (0.0,) * len(names), 0.0, 0.5, tuple(weights), 3.0)
    assert plain.probability(x) == 0.5
    assert with_grams.probability(x, a) > 0.9
    assert with_grams.probability(x, hashed("thanks, looks good")) < with_grams.probability(x, a)


def test_the_prefilter_sees_whatever_part_the_detector_weighs():
    """A long paste with the user's correction after it: the hook must queue it."""
    message = (RULES_FOR_ANOTHER_TOOL.replace("Always", "Use").replace("Never", "Skip")
               .replace("Don't", "Skip").replace("Prefer", "Use") * 60
               + "\n\nno, you used the wrong file, put these in the rules file instead")
    assert len(message) > 4000
    d = detect(message, DONE)
    assert d.positive and d.text.startswith("no, you used the wrong file"), d
    assert might_teach(message)


def test_eval_corrections_scores_several_files_together(run, tmp_path):
    first = tmp_path / "first.jsonl"
    second = tmp_path / "second.jsonl"
    first.write_text(json.dumps({"text": "No, don't use Redis, use files instead",
                                 "label": "correction", "durable": True, "prev_agent": DONE}) + "\n")
    second.write_text("".join(json.dumps(r) + "\n" for r in (
        {"text": "perfect, thanks!", "label": "none", "durable": False, "prev_agent": DONE},
        {"text": "<ide_selection>never do this</ide_selection>", "label": "none", "durable": False},
    )))
    out = run("eval", "corrections", str(first), str(second), "--json", "--show-errors")
    assert out.exit_code == 0, out.output
    result = json.loads(out.stdout)
    assert result["messages"] == 3 and result["labels"] == {"correction": 1, "none": 2}
    assert (result["precision"], result["recall"]) == (1.0, 1.0) and result["errors"] == []
    missing = run("eval", "corrections", str(first), str(tmp_path / "nope.jsonl"))
    assert missing.exit_code == 1 and "no such file" in missing.stderr


def test_a_wrapped_correction_becomes_a_rule_without_the_wrapper(fake_lore):

    wrapped = ("<ide_opened_file>The user opened the file /work/shop/CHANGELOG.md in the IDE. "
               "This may or may not be related to the current task.</ide_opened_file>"
               "from now on, keep the changelog in sync with every change you make")
    out = fake_lore.learning.record(wrapped, DONE, project="/work/shop", session_id="s1")
    assert out.lesson is not None, out
    text = out.lesson.title + " " + out.lesson.content
    assert "ide_opened_file" not in text and "may or may not" not in text, text
    assert "changelog" in text.lower()


def test_eval_reports_what_the_prefilter_passes_and_sets_aside(run, tmp_path):
    rows = [
        {"text": "No, don't use Redis, use files instead", "label": "correction", "durable": True,
         "prev_agent": DONE, "source": {"repo": "Owner/One"}},
        {"text": "the header goes on the left", "label": "correction", "durable": False,
         "prev_agent": DONE, "source": {"repo": "owner/two"}},
        {"text": "thanks!", "label": "none", "durable": False, "source": {"repo": "owner/two"}},
        {"text": "what does the retry flag do?", "label": "none", "durable": False,
         "source": {"repo": "owner/two"}},
        {"text": "add a footer to the page with the year in it and the links", "label": "none",
         "durable": False, "source": {"repo": "owner/one"}},
    ]
    path = tmp_path / "labelled.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = run("eval", "corrections", str(path), "--json")
    assert out.exit_code == 0, out.output
    pre = json.loads(out.stdout)["prefilter"]
    assert pre["recall"] == 1.0 and pre["negatives_passed"] == 0.333
    assert pre["set_aside"] == {"reads as thanks or approval": 1, "reads as a question": 1}
    assert pre["repositories"] == 2 and pre["repositories_with_a_miss"] == 0
    text = run("eval", "corrections", str(path))
    assert "pre-filter: recall 1.0, passes 0.333 of the negatives" in text.stdout


def test_exchange_shapes_read_the_agent_turn():
    from lore.extract.features import generic

    asked = generic("no, the other one", "Should I put it in the config or in the README?")
    assert asked["g_prev_asks"] == 1.0 and asked["g_negation_start"] == 1.0
    assert "g_no_after_done" not in asked
    done = generic("no, the other one", DONE)
    assert done["g_no_after_done"] == 1.0 and "g_prev_asks" not in done
    assert generic("now run the tests", "I'll add the endpoint next.")["g_prev_plans"] == 1.0
    assert not {"g_prev_asks", "g_prev_plans", "g_no_after_done"} & set(generic("no", None))
