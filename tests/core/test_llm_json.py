"""Structured replies: a recorded set of the ways models answer "reply with JSON".

The replies below were written for these tests in the shapes local and hosted models
produce: clean, fenced, wrapped in prose, with trailing commas, single quotes, Python
literals, truncated, wrongly typed or empty. Every reply that holds a recoverable answer
must parse to it (the rate is printed and must reach 95 %); every other one must fail
with a reason, never parse to something wrong.
"""

from __future__ import annotations

import pytest

from lore.llm.jsonreply import NoJSON, extract_json, parse_reply
from lore.llm.opinion import SecondOpinion, prompt

C, P, N = "correction", "preference", "none"
R = "Use pnpm, not npm, in this repository."

# (reply, expected (label, durable, confidence, rule) or None when nothing is recoverable)
REPLIES: list[tuple[str, tuple[str, bool, float, str | None] | None]] = [
    # clean
    ('{"label": "correction", "durable": true, "confidence": 0.86, "rule": "Use pnpm, not npm, in this '
     'repository.", "reason": "rejects npm"}', (C, True, 0.86, R)),
    ('{"label":"none","durable":false,"confidence":0.93,"rule":null,"reason":"a plain task request"}',
     (N, False, 0.93, None)),
    ('{\n  "label": "preference",\n  "durable": true,\n  "confidence": 0.78,\n  "rule": "Use pnpm, not npm, '
     'in this repository.",\n  "reason": "a standing tool choice"\n}', (P, True, 0.78, R)),
    ('{"durable": false, "label": "none", "rule": null, "confidence": 1, "reason": "thanks"}',
     (N, False, 1.0, None)),
    ('{"label": "none", "durable": false, "confidence": 0.0, "rule": null, "reason": ""}',
     (N, False, 0.0, None)),
    ('  \n{"label": "correction", "durable": false, "confidence": 0.7, "rule": null, "reason": "undo"}\n\n',
     (C, False, 0.7, None)),
    # fenced
    ('```json\n{"label": "correction", "durable": true, "confidence": 0.9, "rule": "Use pnpm, not npm, in '
     'this repository.", "reason": "x"}\n```', (C, True, 0.9, R)),
    ('```\n{"label": "none", "durable": false, "confidence": 0.6, "rule": null, "reason": "question"}\n```',
     (N, False, 0.6, None)),
    ('```JSON\n{"label": "preference", "durable": true, "confidence": 0.8, "rule": "Use pnpm, not npm, in '
     'this repository.", "reason": "rule"}\n```\n', (P, True, 0.8, R)),
    ('Here is the classification:\n\n```json\n{"label": "none", "durable": false, "confidence": 0.55, '
     '"rule": null, "reason": "approval"}\n```\n\nLet me know if you need more.', (N, False, 0.55, None)),
    ('```json {"label": "correction", "durable": false, "confidence": 0.66, "rule": null, "reason": "r"}```',
     (C, False, 0.66, None)),
    ('```jsonc\n// my answer\n{"label": "none", "durable": false, "confidence": 0.7, "rule": null, '
     '"reason": "r"}\n```', (N, False, 0.7, None)),
    # prose before or after
    ('Sure! {"label": "none", "durable": false, "confidence": 0.8, "rule": null, "reason": "thanks"}',
     (N, False, 0.8, None)),
    ('Based on the assistant turn, the user is pushing back.\n{"label": "correction", "durable": true, '
     '"confidence": 0.74, "rule": "Use pnpm, not npm, in this repository.", "reason": "tool choice"}',
     (C, True, 0.74, R)),
    ('{"label": "none", "durable": false, "confidence": 0.9, "rule": null, "reason": "status"}\n\nThe '
     'message only reports a failure, so it is not a correction.', (N, False, 0.9, None)),
    ("Let's think. The user says they prefer pnpm. Answer: {\"label\": \"preference\", \"durable\": true, "
     "\"confidence\": 0.81, \"rule\": \"Use pnpm, not npm, in this repository.\", \"reason\": \"rule\"}",
     (P, True, 0.81, R)),
    ('The answer uses the shape {label, durable, confidence}:\n{"label": "none", "durable": false, '
     '"confidence": 0.7, "rule": null, "reason": "r"}', (N, False, 0.7, None)),
    ('I considered {"label": ...} but here is the final one:\n{"label": "correction", "durable": false, '
     '"confidence": 0.61, "rule": null, "reason": "r"}', (C, False, 0.61, None)),
    ('Answer:\n\n    {"label": "none", "durable": false, "confidence": 0.9, "rule": null, "reason": "ok"}',
     (N, False, 0.9, None)),
    ('JSON: {"label": "none", "durable": false, "confidence": 0.5, "rule": null, "reason": "ambiguous"} '
     '(low confidence because the turn is missing)', (N, False, 0.5, None)),
    # trailing commas
    ('{"label": "none", "durable": false, "confidence": 0.8, "rule": null, "reason": "r",}',
     (N, False, 0.8, None)),
    ('{\n "label": "correction",\n "durable": true,\n "confidence": 0.7,\n "rule": "Use pnpm, not npm, in '
     'this repository.",\n "reason": "r",\n}', (C, True, 0.7, R)),
    ('```json\n{"label": "preference", "durable": true, "confidence": 0.9, "rule": "Use pnpm, not npm, in '
     'this repository.", "reason": "a, b,",  }\n```', (P, True, 0.9, R)),
    ('{"label": "none", "durable": false, "confidence": 0.6, "rule": null, "reason": "list: [a, b,]",}',
     (N, False, 0.6, None)),
    # single quotes and Python literals
    ("{'label': 'none', 'durable': False, 'confidence': 0.8, 'rule': None, 'reason': 'a question'}",
     (N, False, 0.8, None)),
    ("{'label': 'correction', 'durable': True, 'confidence': 0.75, 'rule': 'Use pnpm, not npm, in this "
     "repository.', 'reason': 'tool'}", (C, True, 0.75, R)),
    ("{'label': 'none', 'durable': false, 'confidence': 0.7, 'rule': null, 'reason': 'user said \"thanks\"'}",
     (N, False, 0.7, None)),
    ('{"label": "none", "durable": False, "confidence": 0.9, "rule": None, "reason": "r"}',
     (N, False, 0.9, None)),
    ("Result: {'label': 'preference', 'durable': True, 'confidence': 0.85, 'rule': 'Use pnpm, not npm, in "
     "this repository.', 'reason': 'rule',}", (P, True, 0.85, R)),
    # strings holding quotes, braces and apostrophes
    ('{"label": "correction", "durable": false, "confidence": 0.8, "rule": null, "reason": "the user\'s '
     'fix: replace {x} with [y]"}', (C, False, 0.8, None)),
    ('Here\'s my answer: {"label": "none", "durable": false, "confidence": 0.7, "rule": null, "reason": '
     '"it\'s a \\"question\\" }"}', (N, False, 0.7, None)),
    # several objects: the first complete one counts
    ('{"label": "none", "durable": false, "confidence": 0.6, "rule": null, "reason": "a"}\n'
     '{"label": "correction", "durable": true, "confidence": 0.9, "rule": "x", "reason": "b"}',
     (N, False, 0.6, None)),
    # loose types pydantic may coerce
    ('{"label": "Correction", "durable": "true", "confidence": "0.7", "rule": "Use pnpm, not npm, in this '
     'repository.", "reason": "r"}', (C, True, 0.7, R)),
    ('{"label": "NONE", "durable": 0, "confidence": 0.9, "rule": "", "reason": "r"}', (N, False, 0.9, None)),
    ('{"label": "preference", "durable": 1, "confidence": 0.8, "rule": "Use pnpm, not npm, in this '
     'repository.", "reason": "r", "notes": "extra keys are ignored"}', (P, True, 0.8, R)),
    ('{"label": "none", "durable": false, "confidence": 0.9, "reason": "no rule key at all"}',
     (N, False, 0.9, None)),
    ('{"label": " none ", "durable": false, "confidence": 0.95, "rule": "null", "reason": "r"}',
     (N, False, 0.95, None)),
    # nothing recoverable: truncated
    ('{"label": "correction", "durable": true, "confidence": 0.8, "rule": "Use pnpm, not', None),
    ('```json\n{"label": "none", "durable": false, "confid', None),
    ('Sure, here it is: {"label": "preference", "durable": true,', None),
    ('{"label": "none", "durable": false, "confidence": 0.9, "rule": null, "reason": "cut off', None),
    # nothing recoverable: empty or no JSON
    ("", None),
    ("   \n  ", None),
    ("I cannot classify this message without more context.", None),
    ("label: correction\ndurable: true\nconfidence: 0.8", None),
    # nothing recoverable: wrong types or values
    ('{"label": "correction", "durable": true, "confidence": "high", "rule": null, "reason": "r"}', None),
    ('{"label": "maybe", "durable": false, "confidence": 0.5, "rule": null, "reason": "r"}', None),
    ('{"label": "none", "confidence": 0.5, "rule": null, "reason": "durable missing"}', None),
    ('{"label": "none", "durable": false, "confidence": 1.7, "rule": null, "reason": "out of range"}', None),
    ('["correction", true, 0.8]', None),
]


def test_the_recorded_set_is_varied_enough() -> None:
    assert len(REPLIES) >= 40
    assert sum(expected is None for _, expected in REPLIES) >= 10


def test_parse_rate_on_recorded_replies(capsys: pytest.CaptureFixture[str]) -> None:
    recoverable = [(text, exp) for text, exp in REPLIES if exp is not None]
    parsed, misses = 0, []
    for text, expected in recoverable:
        try:
            got = parse_reply(text, SecondOpinion)
        except ValueError as exc:
            misses.append(f"{text[:60]!r}: {exc}")
            continue
        assert (got.label, got.durable, got.confidence, got.rule) == expected, text
        parsed += 1
    rate = parsed / len(recoverable)
    with capsys.disabled():
        print(f"\nstructured replies: {parsed}/{len(recoverable)} recoverable parsed ({rate:.0%}); "
              f"{len(REPLIES) - len(recoverable)} unrecoverable rejected")
    assert rate >= 0.95, misses


@pytest.mark.parametrize("text", [t for t, exp in REPLIES if exp is None])
def test_unrecoverable_replies_fail_with_a_reason(text: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_reply(text, SecondOpinion)
    assert str(err.value)


def test_reasons_the_model_can_act_on() -> None:
    with pytest.raises(NoJSON, match="empty"):
        extract_json("")
    with pytest.raises(NoJSON, match="cut off"):
        extract_json('{"a": [1, 2')
    with pytest.raises(NoJSON, match="no JSON"):
        extract_json("no braces here")
    with pytest.raises(ValueError, match=r"confidence: Input should be a valid number"):
        parse_reply('{"label": "none", "durable": false, "confidence": "high"}', SecondOpinion)


def test_arrays_and_nesting() -> None:
    assert extract_json("the list: [1, 2, {'a': [3,],},]") == [1, 2, {"a": [3]}]
    assert extract_json('{"outer": {"inner": "}"}, "n": 1}') == {"outer": {"inner": "}"}, "n": 1}


def test_second_opinion_prompt_ships_in_the_package() -> None:
    text = prompt("second_opinion")
    for word in ("correction", "preference", "none", "durable", "confidence", "CLAUDE.md"):
        assert word in text
