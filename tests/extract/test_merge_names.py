"""Merging by meaning and by the names that matter: restatements reinforce one rule; rules that
name another library, file, command, value, number, path or identifier stay apart.

The pairs in tests/data/merge_pairs.jsonl go through the real pipeline (real SQLite, the real
embedding model): the first message creates a rule, the second either reinforces it (merge)
or makes its own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lore.extract.merge import may_restate, names
from lore.extract.shapes import extract

PAIRS = [json.loads(line) for line in
         (Path(__file__).parents[1] / "data" / "merge_pairs.jsonl").read_text().splitlines() if line.strip()]


def test_the_pair_set_is_large_and_balanced():
    assert len(PAIRS) >= 60
    assert sum(p["merge"] for p in PAIRS) >= 25 and sum(not p["merge"] for p in PAIRS) >= 25


@pytest.mark.parametrize(("text", "expected"), [
    ("Use library-new-1 instead of library-old-1 for handler 1",
     {"library-new-1", "library-old-1", "1"}),
    ("Use `make test`, not pytest", {"make test"}),
    ("Use os.path.join? No: pathlib.Path in src/app", {"os.path.join", "pathlib.path", "src/app"}),
    ("Pin react to 18.2.0 and use useEffect sparingly", {"18.2.0", "useeffect"}),
    ("Use snake_case and @scope/pkg, e.g. here", {"snake_case", "@scope/pkg"}),
    ("Use pnpm, not npm.", set()),
    ("", set()),
])
def test_names(text: str, expected: set[str]):
    assert names(text) == expected


def _row(message: str) -> dict[str, str | None]:
    ex = extract(message)
    assert ex is not None
    return {"title": ex.title, "pref_preferred": ex.preferred, "pref_rejected": ex.rejected}


def test_other_names_refuse_a_merge_and_the_same_names_allow_it():
    new = extract("No, use library-new-7 instead of library-old-7 for handler 7")
    assert new is not None
    assert not may_restate(new, _row("No, use library-new-1 instead of library-old-1 for handler 1"))
    assert may_restate(new, _row("Prefer library-new-7 over library-old-7 for handler 7"))
    pnpm = extract("use pnpm not npm")
    assert pnpm is not None
    assert not may_restate(pnpm, _row("use yarn not npm"))
    assert may_restate(pnpm, _row("we use pnpm, never npm"))


def test_sixty_corrections_that_differ_in_names_stay_sixty_rules(lore):
    outcomes = [lore.learning.record(
        f"No, use library-new-{n} instead of library-old-{n} for handler {n}",
        f"I'll use library-old-{n} for handler {n}.", project="/repo", session_id=f"s{n}")
        for n in range(1, 61)]
    assert [o.action for o in outcomes] == ["created"] * 60
    ids = {o.lesson.id for o in outcomes if o.lesson}
    assert len(ids) == 60
    for o in outcomes:
        assert o.lesson is not None and o.lesson.status != "active"
        assert o.lesson.metadata["learning"]["occurrences"] == 1


def merged(lore, i: int, pair: dict) -> bool:
    project = f"/pairs/{i}"
    first = lore.learning.record(pair["a"], pair.get("agent"), project=project, session_id=f"a{i}")
    second = lore.learning.record(pair["b"], pair.get("agent"), project=project, session_id=f"b{i}")
    assert first.action == "created", pair
    return second.action == "reinforced" and second.lesson is not None \
        and first.lesson is not None and second.lesson.id == first.lesson.id


def test_merge_precision_and_recall_on_written_pairs(lore):
    """The figures docs/learning.md reports."""
    tp = fp = fn = tn = 0
    wrong = []
    for i, pair in enumerate(PAIRS):
        got = merged(lore, i, pair)
        if got and pair["merge"]:
            tp += 1
        elif got:
            fp += 1
            wrong.append(("merged", pair["a"], pair["b"]))
        elif pair["merge"]:
            fn += 1
            wrong.append(("kept apart", pair["a"], pair["b"]))
        else:
            tn += 1
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    print(f"\nmerge: precision {precision:.3f} recall {recall:.3f} (tp {tp} fp {fp} fn {fn} tn {tn})")
    for w in wrong:
        print(w)
    assert fp == 0, wrong
    assert recall >= 0.9, wrong
