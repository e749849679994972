"""A language model proposes checks for an approved rule, over real HTTP to a loopback server
speaking the OpenAI-compatible protocol: validated like every check, waiting for review, asked
only when a person asks for proposals, and never failing the rule for a provider error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_llm_http import LoopbackServer, Reply, openai_body, server  # noqa: F401 - fixture

from conftest import FakeEmbedder, make_settings
from lore.api import Lore
from lore.errors import UnusableReply
from lore.llm.checks import parse, rule_text


def llm(srv: LoopbackServer) -> dict[str, Any]:
    return {"provider": "openai", "base_url": srv.url + "/v1", "model": "small-1",
            "timeout": 5.0, "max_retries": 1}


def model_says(*checks: dict[str, Any]) -> Reply:
    return Reply(openai_body(json.dumps({"checks": list(checks)})))


def approved_rule(lore: Lore, title: str, **fields: Any) -> str:
    lesson = lore.lessons.add(title, kind="preference", project="/p", tags=["tooling"], **fields)
    lore.lessons.update(lesson.id, status="active")
    return lesson.id


def open_lore(home: Path, srv: LoopbackServer) -> Lore:
    return Lore.open(make_settings(home, llm=llm(srv)), embedder=FakeEmbedder())


def test_the_model_proposes_a_check_that_waits_for_review(lore_home, server):  # noqa: F811
    server.replies = [model_says({"command": r"terraform\s+apply(?!.*-auto-approve=false)",
                                  "mode": "block", "why": "runs terraform apply by hand"})]
    with open_lore(lore_home, server) as lore:
        rule = approved_rule(lore, "Never run terraform apply by hand; CI applies plans")
        assert not server.received  # approving asked the shapes only, not the model
        made = lore.checks.propose(rule, ask_model=True)
    assert [(m["origin"], m["status"], m["mode"]) for m in made] == [("judge", "proposed", "block")]
    assert "terraform" in made[0]["words"] and made[0]["note"] == "runs terraform apply by hand"
    sent = server.received[0]["body"]["messages"]
    assert "Never run terraform apply by hand" in sent[-1]["content"]
    assert "<rule>" in sent[-1]["content"] and "checks" in sent[0]["content"]


def test_a_bad_pattern_or_a_repeat_is_not_proposed(lore_home, server):  # noqa: F811
    server.replies = [model_says({"command": "npm(", "mode": "block"},  # not a pattern
                                 {"command": r"npm(?=\s|$)", "mode": "block", "why": "npm"})]
    with open_lore(lore_home, server) as lore:
        rule = approved_rule(lore, "Use pnpm, not npm",
                             preference={"rejected": "npm", "preferred": "pnpm"})
        shaped = lore.checks.checks(rule)  # the shapes proposed npm already
        made = lore.checks.propose(rule, ask_model=True)
    assert shaped and made == []  # the broken pattern dropped, the same check not proposed twice


@pytest.mark.parametrize("reply", [Reply("upstream down", 503), Reply(openai_body("no json here")),
                                   Reply(openai_body(json.dumps({"checks": "npm"})))])
def test_a_provider_error_or_a_useless_reply_proposes_nothing(lore_home, server, reply):  # noqa: F811
    server.replies = [reply]
    with open_lore(lore_home, server) as lore:
        rule = approved_rule(lore, "Never edit files under migrations/ by hand")
        before = lore.checks.checks(rule)
        assert lore.checks.propose(rule, ask_model=True) == []
        assert lore.checks.checks(rule) == before


def test_without_a_model_the_cli_proposes_shapes_only(run, lore_home):
    added = json.loads(run("learn", "add", "Use pnpm, not npm", "--kind", "preference",
                           "--global", "--json").output)
    run("review", "approve", added["id"])
    out = run("guard", "propose", "--json")
    assert out.exit_code == 0 and json.loads(out.output)["count"] == 0  # approval proposed it


def test_the_rule_sent_is_redacted_and_bounded():
    text = rule_text("Never paste the key sk_live_" + "a1B2c3D4e5F6g7H8i9J0k1L2" + " into code",
                     content="x " * 5000, reasoning="it leaked once")
    assert "sk_live_a1B2" not in text and len(text) < 1200 and "why: it leaked once" in text


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(
                        st.sampled_from(["checks", "command", "path", "mode", "why", "tool", "x"]),
                        kids, max_size=5), max_leaves=20))
@settings(max_examples=200, deadline=None)
def test_any_reply_shape_is_read_or_refused_in_one_error(value):
    try:
        found = parse(json.dumps(value))
    except UnusableReply:
        return
    assert len(found) <= 2
    for c in found:
        assert c["mode"] in ("remind", "block") and isinstance(c["why"], str)
        assert set(c) - {"mode", "why"} <= {"command", "path", "content", "tool"}
