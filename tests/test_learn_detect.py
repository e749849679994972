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
        assert d.label == "none" and d.reason in ("not English", "no teaching cue (pre-filter)"), d
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
    assert time.perf_counter() - started < 2.0
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
    assert len(m.weights) == len(feature_names())
    assert 0 < m.threshold < 1
    meta = json.loads((__import__("lore.extract.detect").extract.detect.WEIGHTS_FILE).read_text())["meta"]
    assert meta["repositories"] > 1  # trained and cross-validated across authors
