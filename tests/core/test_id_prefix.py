"""An id may be typed in any case or as a unique prefix of 6+ characters, wherever a person
gives one (review verbs, show, delete, the checks); a prefix that names two ids or none is one
clear line, nothing changed."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lore.errors import InvalidInput, NotFound
from lore.ids import CROCKFORD, ID_PREFIX


@pytest.fixture
def two(fake_lore, tmp_path):
    a = fake_lore.lessons.add("Use pnpm, not npm", "x", kind="project_rule", status="proposed")
    b = fake_lore.lessons.add("Use httpx, not requests", "y", kind="project_rule")
    return fake_lore, a.id, b.id


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture],
          deadline=None)
@given(data=st.data())
def test_a_unique_start_in_any_case_names_the_id(two, data):
    lore, a, b = two
    common = next(i for i in range(26) if a[i] != b[i])
    length = data.draw(st.integers(max(ID_PREFIX, common + 1), 26))
    typed = "".join(c.lower() if data.draw(st.booleans()) else c for c in a[:length])
    typed = data.draw(st.sampled_from(["", " ", "\t"])) + typed + data.draw(st.sampled_from(["", " "]))
    assert lore.lessons.resolve_id(typed) == a
    assert lore.lessons.get(typed).id == a


def test_a_shared_a_short_or_an_unknown_start_is_refused(two):
    lore, a, b = two
    common = next(i for i in range(26) if a[i] != b[i])
    if common >= ID_PREFIX:
        with pytest.raises(InvalidInput, match="more than one id"):
            lore.lessons.resolve_id(a[:common])
    with pytest.raises(InvalidInput, match="not a lesson id"):
        lore.lessons.resolve_id(a[:ID_PREFIX - 1])
    unknown = "".join("Z" if c != "Z" else "Y" for c in a[:8])
    with pytest.raises(NotFound, match="no lesson or check id starts with"):
        lore.lessons.resolve_id(unknown)
    with pytest.raises(InvalidInput, match="not an id or the start of one"):
        lore.lessons.resolve_id("01JD8U")  # U is not a Crockford digit
    assert set("ILOU").isdisjoint(CROCKFORD)


def test_the_review_verbs_take_a_prefix(run, lore_home):
    import json

    out = run("learn", "correction", "No, don't use npm, use pnpm instead", "--previous",
              "I'll run npm install", "--json")
    rule = json.loads(out.stdout)["lesson"]["id"]
    approved = run("review", "approve", rule[:7].lower())
    assert approved.exit_code == 0, approved.stderr
    assert f"approved lesson {rule}" in approved.stderr
    assert "it proposed a check" in approved.stderr  # npm: a command a check can hold
    check = approved.stderr.split("it proposed a check ")[1].split(":")[0]
    rejected = run("review", "reject", check[:10].lower())
    assert rejected.exit_code == 0, rejected.stderr
    # A ULID starts with its time: a rule and the check made from it share their first
    # characters, and a start they share names neither.
    shared = next(i for i in range(26) if rule[i] != check[i])
    if shared >= 6:
        both = run("review", "why", rule[:shared])
        assert both.exit_code != 0 and "more than one id" in both.stderr
    why = run("review", "why", rule[:shared + 1].lower())
    assert why.exit_code == 0 and "No, don't use npm" in why.stdout and "rejected" in why.stdout
    # The checks' own verbs take a prefix too.
    assert run("guard", "mode", check[:12].lower(), "remind").exit_code == 0
    assert run("guard", "--rule", rule[:12].lower(), "--json").exit_code == 0
    bad = run("review", "approve", "zzzzzz")
    assert bad.exit_code != 0 and "no lesson or check id starts with 'zzzzzz'" in bad.stderr
    forgot = run("review", "forget", rule.lower())
    assert forgot.exit_code == 0 and run("recall", "show", rule).exit_code != 0
