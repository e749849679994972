"""The hooks' pre-filter passes anything that is not clearly benign (examples written here)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from lore.capture.signals import benign, might_teach
from lore.extract.detect import detect

CASES = [json.loads(line) for line in
         (Path(__file__).parents[1] / "data" / "extraction_cases.jsonl").read_text().splitlines()
         if line.strip()]
DONE = "I've switched the session store to Redis and updated the config."


def test_every_correction_shape_of_the_extraction_table_passes():
    missed = [c["message"] for c in CASES if not might_teach(c["message"])]
    assert not missed, missed[:5]
    assert len(CASES) > 200


@pytest.mark.parametrize("text", [
    # Corrections with no word a list of teaching words would hold: passing does not need one.
    "there are scripts for this already",
    "the header goes on the left",
    "Claude the parse error is back on line 5",
    "hmm, the spinner sits at the bottom now",
    "this is the staging bucket",
    # Questions and requests that push back keep their place.
    "why did you delete the retry logic?",
    "do we even need the wrapper class?",
    "what about pnpm?",
    "can you use httpx instead?",
    "could you put it back?",
    "did you forget the changelog?",
    "is this the right config file?",
    "run the tests before every commit",
    "thanks, but keep the old flag next time",
    "ok. now move the constants into settings.py",
    "no",
    "nope",
    "Never commit the generated lock file",
])
def test_what_might_teach_passes(text):
    assert might_teach(text), benign(text)


@pytest.mark.parametrize("text, reason", [
    ("thanks!", "reads as thanks or approval"),
    ("Perfect, thank you so much 🙏", "reads as thanks or approval"),
    ("ok go ahead", "reads as thanks or approval"),
    ("yes please", "reads as thanks or approval"),
    ("Continue", "reads as thanks or approval"),
    ("looks good, ship it", "reads as thanks or approval"),
    ("hi", "reads as thanks or approval"),
    ("what does the retry flag do?", "reads as a question"),
    ("how can I run this locally?", "reads as a question"),
    ("Can you add a test for the parser?", "reads as a question"),
    ("run the test suite", "reads as a task request"),
    ("commit and push", "reads as a task request"),
    ("Traceback (most recent call last):\n  File \"app.py\", line 3", "pasted log or code"),
    ("npm ERR! code ERESOLVE", "pasted log or code"),
])
def test_clearly_benign_messages_are_set_aside_with_a_reason(text, reason):
    assert not might_teach(text)
    assert benign(text) == reason
    d = detect(text, DONE)
    assert d.label == "none" and d.reason == reason, d


def test_only_short_single_sentences_count_as_plain():
    # A long or multi-sentence request is weighed whatever its words.
    long_request = "add " + " ".join(["a"] * 20) + " section"
    assert might_teach(long_request)
    assert might_teach("what does it do? it was fine before")
    assert might_teach("run the tests. the build is red")


def test_empty_and_wrapper_only_messages_do_not_pass():
    assert not might_teach("")
    assert not might_teach("   \n")
    assert not might_teach("<ide_selection>never do this</ide_selection>")


def test_the_prefilter_costs_microseconds():
    messages = [c["message"] for c in CASES] + ["thanks!", "what does it do?", "x " * 5000]
    started = time.perf_counter()
    for _ in range(20):
        for m in messages:
            might_teach(m)
    per_message = (time.perf_counter() - started) / (20 * len(messages))
    assert per_message < 0.001  # well under a millisecond even on a loaded machine
