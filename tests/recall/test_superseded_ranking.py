"""Ranking respects the graph: a lesson an active lesson supersedes ranks below its successor
(or is left out when asked), in the CLI, MCP, the web API and the SessionStart context; the real
model ranks such a pair the wrong way round without the link."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lore.models import Filters, ScoreParts
from lore.recall.hybrid import SUPERSEDED_FACTOR, below_successors
from server_util import running

OLD = ("Store Django sessions in Redis", "Use Redis as the Django session store backend.")
NEW = ("Use local file sessions, not Redis", "Sessions live in var/sessions as files.")
QUERY = "session store"


@pytest.fixture
def pair(lore):
    old = lore.lessons.add(*OLD, project="/work/shop")
    new = lore.lessons.add(*NEW, project="/work/shop")
    return lore, old.id, new.id


def ids(results) -> list[str]:
    return [r.id if hasattr(r, "id") else r["id"] for r in results]


def test_without_the_link_the_old_wording_wins_with_it_the_successor_does(pair):
    lore, old, new = pair
    before = ids(lore.search.query(QUERY, Filters(project="/work/shop"), 10, track=False))
    assert before.index(old) < before.index(new)  # wording alone: the older lesson first
    lore.lessons.link(new, old, "supersedes")
    after = lore.search.query(QUERY, Filters(project="/work/shop"), 10, track=False)
    assert ids(after).index(new) < ids(after).index(old)
    [demoted] = [r for r in after if r.id == old]
    assert demoted.parts.context_factor == pytest.approx(SUPERSEDED_FACTOR)
    hidden = lore.search.query(QUERY, Filters(project="/work/shop"), 10, track=False,
                         include_superseded=False)
    assert old not in ids(hidden) and new in ids(hidden)
    # A successor that is archived supersedes nothing any more.
    lore.lessons.update(new, status="archived")
    again = ids(lore.search.query(QUERY, Filters(project="/work/shop"), 10, track=False))
    assert again.index(old) == 0


def test_the_cli_mcp_and_web_rank_the_successor_first(pair, run, settings):
    lore, old, new = pair
    lore.lessons.link(new, old, "supersedes")
    out = run("search", QUERY, "--project", "all", "--json", "--no-track")
    got = ids(json.loads(out.stdout)["results"])
    assert got.index(new) < got.index(old)

    from lore.mcp.server import build_server

    server, tools = build_server(settings, lore=lore)
    tools._warm_started = True
    result = anyio.run(server.call_tool, "lore_search", {"query": QUERY, "project": "all"})
    got = ids(json.loads(result.content[0].text)["results"])
    assert got.index(new) < got.index(old)

    with running(lore) as url, httpx.Client(base_url=url, timeout=30) as client:
        body = client.get("/api/v1/search", params={"q": QUERY}).json()
    got = ids(body["results"])
    assert got.index(new) < got.index(old)


def _parts(total: float) -> ScoreParts:
    return ScoreParts(None, None, None, None, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, total)


def test_below_successors_moves_only_what_stands_above_its_successor():
    scored = [(0.9, 1, _parts(0.9)), (0.8, 2, _parts(0.8)), (0.7, 3, _parts(0.7))]
    assert [s for _, s, _ in below_successors(scored, {})] == [1, 2, 3]
    assert [s for _, s, _ in below_successors(scored, {1: {3}})] == [2, 3, 1]
    assert [s for _, s, _ in below_successors(scored, {3: {1}})] == [1, 2, 3]  # already below
    assert [s for _, s, _ in below_successors(scored, {1: {9}})] == [1, 2, 3]  # not listed
    # A chain: 1 superseded by 2, 2 by 3.
    assert [s for _, s, _ in below_successors(scored, {1: {2}, 2: {3}})] == [3, 2, 1]


@given(scores=st.lists(st.floats(0, 2, allow_nan=False), min_size=1, max_size=12),
       edges=st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)), max_size=12))
def test_below_successors_keeps_every_result_and_ends_even_with_cycles(scores, edges):
    scored = [(s, i, _parts(s)) for i, s in enumerate(scores)]
    succ: dict[int, set[int]] = {}
    for old, new in edges:
        if old != new:
            succ.setdefault(old, set()).add(new)
    out = below_successors(scored, succ)
    assert sorted(s for _, s, _ in out) == list(range(len(scores)))
    acyclic = not any(a in succ.get(b, ()) for a in succ for b in succ.get(a, ()))
    if acyclic and len({n for v in succ.values() for n in v} & set(succ)) == 0:
        place = {s: i for i, (_, s, _) in enumerate(out)}
        for old, news in succ.items():
            for n in news:
                if old in place and n in place:
                    assert place[n] < place[old]
