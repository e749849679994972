"""The written extraction table (tests/data/extraction_cases.jsonl): every phrasing a rule is read
from, with the rejected and preferred sides, the rule line, the reason, the scope and the
files expected. A field a case leaves out is not checked.

A case passes exactly when every field is the expected string; with tolerance when they agree
once normalised (case, punctuation, articles and spacing ignored). Every case must pass with
tolerance; the exact count is what docs/learning.md reports.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lore.extract.phrases import LINE_MAX
from lore.extract.shapes import Extracted, extract

CASES = [json.loads(line) for line in
         (Path(__file__).parents[1] / "data" / "extraction_cases.jsonl").read_text().splitlines()
         if line.strip()]
FIELDS = ("rejected", "preferred", "rule", "reasoning", "context", "scope", "globs")


def normal(value: object) -> str:
    if isinstance(value, (list, tuple)):
        return " ".join(sorted(normal(v) for v in value))
    text = str(value or "").lower()
    text = re.sub(r"(?<!\w)[^\w\s*/@.<>\[\]-]+|[^\w\s*/@.<>\[\]-]+(?!\w)", " ", text)
    text = re.sub(r"\b(?:a|an|the)\b", " ", text)
    return " ".join(text.strip(" .").split())


def got(ex: Extracted, field: str) -> object:
    if field == "scope":
        return ex.scope_hint
    if field == "globs":
        return list(ex.globs)
    return getattr(ex, field)


def compare(case: dict) -> tuple[bool, list[str]]:
    """(exact, the fields that differ even when normalised)."""
    ex = extract(case["message"], case.get("agent"))
    assert ex is not None
    exact, loose = True, []
    for field in FIELDS:
        if field not in case:
            continue
        value = got(ex, field)
        if value != case[field]:
            exact = False
            if normal(value) != normal(case[field]):
                loose.append(f"{field}: {value!r} != {case[field]!r}")
    return exact, loose


def test_the_table_covers_every_shape():
    assert len(CASES) >= 200
    groups = {c["shape_group"] for c in CASES}
    assert {"dont_use_instead", "use_instead_of", "use_not", "prefer_over", "rather_than", "not_but",
            "use_instead", "always", "never", "never_alt", "stop", "from_now_on", "we_use",
            "wrong_should_be", "when", "file_type", "reason_second_sentence", "pronoun", "told_you",
            "no_x_use_y", "reason_after_comma", "first_person", "stop_using_use"} <= groups


@pytest.mark.parametrize("case", CASES, ids=[c["message"][:60] for c in CASES])
def test_case(case: dict):
    _, wrong = compare(case)
    assert not wrong, wrong


@pytest.mark.parametrize("case", CASES, ids=[c["message"][:60] for c in CASES])
def test_a_rule_is_one_clean_line(case: dict):
    ex = extract(case["message"], case.get("agent"))
    assert ex is not None
    rule = ex.rule
    assert len(rule) <= LINE_MAX and "\n" not in rule
    assert rule[:1].isupper() and rule.endswith(".")
    assert not re.match(r"(?:no|please|actually|ok|so)\b", rule, re.IGNORECASE)


def test_exact_and_tolerant_counts():
    """The figures docs/learning.md reports (printed with -s)."""
    results = [compare(c) for c in CASES]
    exact = sum(1 for e, _ in results if e)
    tolerant = sum(1 for _, w in results if not w)
    print(f"\nextraction table: {len(CASES)} cases, {exact} exact, {tolerant} with tolerance")
    assert tolerant == len(CASES)


def test_the_files_a_rule_names_reach_the_stored_rule(fake_lore):
    out = fake_lore.learning.record("In TypeScript files use unknown instead of any", None,
                                   project="/repo", session_id="s1", files=["/repo/README.md"])
    assert out.lesson is not None
    assert set(out.lesson.file_types) == {"md", "ts", "tsx"}
    assert out.lesson.preference is not None and out.lesson.preference.rejected == "any"
