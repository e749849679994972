"""The lesson graph: links, N-hop neighbourhoods, shortest paths, subgraphs, Mermaid."""

from __future__ import annotations

import json

import pytest

from lore.errors import InvalidInput, NotFound
from lore.ids import new_id


def add(lore, title: str, kind: str | None = None):
    extra = {"kind": kind} if kind else {}
    return lore.lessons.add(title, f"content of {title}", **extra).id


def edge_set(lore) -> set[tuple[str, str, str]]:
    return {tuple(r) for r in lore.store.conn.execute("SELECT from_id, to_id, relation FROM edges")}


def by_id(found) -> dict:
    return {r.id: r for r in found}


@pytest.fixture
def chain(fake_lore):
    """A -related_to-> B -supersedes-> C -example_of-> D, and an isolated lesson Z."""
    ids = {name: add(fake_lore, f"Lesson {name}") for name in "ABCDZ"}
    fake_lore.lessons.link(ids["A"], ids["B"])
    fake_lore.lessons.link(ids["B"], ids["C"], "supersedes")
    fake_lore.lessons.link(ids["C"], ids["D"], "example_of")
    return ids


# ---- link / unlink ---------------------------------------------------------------------

def test_link_defaults_to_related_to_and_shows_on_both_lessons(fake_lore):
    a, b = add(fake_lore, "A"), add(fake_lore, "B")
    edge = fake_lore.lessons.link(a, b)
    assert (edge.from_id, edge.to_id, edge.relation) == (a, b, "related_to")
    assert edge.created_at
    for lid in (a, b):
        edges = fake_lore.lessons.get(lid).edges
        assert [(e.from_id, e.to_id, e.relation) for e in edges] == [(a, b, "related_to")]
    assert edge_set(fake_lore) == {(a, b, "related_to")}


def test_free_form_relations_are_accepted(fake_lore):
    a, b = add(fake_lore, "A"), add(fake_lore, "B")
    assert "inspired_by" not in {r.name for r in fake_lore.lessons.reference("relation")}
    fake_lore.lessons.link(a, b, "inspired_by")
    fake_lore.lessons.link(a, b, "  supersedes  ")  # trimmed
    assert edge_set(fake_lore) == {(a, b, "inspired_by"), (a, b, "supersedes")}


def test_duplicate_link_is_idempotent(fake_lore):
    a, b = add(fake_lore, "A"), add(fake_lore, "B")
    fake_lore.lessons.link(a, b, "supersedes")
    fake_lore.lessons.link(a, b, "supersedes")
    assert fake_lore.store.edge_count() == 1
    assert len(fake_lore.lessons.get(a).edges) == 1


def test_self_link_is_rejected(fake_lore):
    a = add(fake_lore, "A")
    with pytest.raises(InvalidInput, match="itself"):
        fake_lore.lessons.link(a, a)
    assert fake_lore.store.edge_count() == 0


def test_empty_relation_is_rejected(fake_lore):
    a, b = add(fake_lore, "A"), add(fake_lore, "B")
    with pytest.raises(InvalidInput, match="relation"):
        fake_lore.lessons.link(a, b, "   ")


@pytest.mark.parametrize("missing_side", ["from", "to"])
def test_link_to_missing_lesson_is_not_found(fake_lore, missing_side):
    a, ghost = add(fake_lore, "A"), new_id()
    args = (ghost, a) if missing_side == "from" else (a, ghost)
    with pytest.raises(NotFound, match=ghost):
        fake_lore.lessons.link(*args)
    assert fake_lore.store.edge_count() == 0


def test_unlink_without_relation_removes_every_relation(fake_lore):
    a, b, c = add(fake_lore, "A"), add(fake_lore, "B"), add(fake_lore, "C")
    fake_lore.lessons.link(a, b)
    fake_lore.lessons.link(a, b, "supersedes")
    fake_lore.lessons.link(a, c)
    assert fake_lore.lessons.unlink(a, b) == 2
    assert edge_set(fake_lore) == {(a, c, "related_to")}


def test_unlink_with_relation_removes_only_that_relation(fake_lore):
    a, b = add(fake_lore, "A"), add(fake_lore, "B")
    fake_lore.lessons.link(a, b)
    fake_lore.lessons.link(a, b, "supersedes")
    assert fake_lore.lessons.unlink(a, b, "supersedes") == 1
    assert edge_set(fake_lore) == {(a, b, "related_to")}


def test_unlink_of_missing_link_is_not_found(fake_lore):
    a, b = add(fake_lore, "A"), add(fake_lore, "B")
    with pytest.raises(NotFound):
        fake_lore.lessons.unlink(a, b)
    fake_lore.lessons.link(a, b)
    with pytest.raises(NotFound):  # links are directed: there is no b -> a
        fake_lore.lessons.unlink(b, a)
    with pytest.raises(NotFound, match="supersedes"):
        fake_lore.lessons.unlink(a, b, "supersedes")
    with pytest.raises(NotFound):
        fake_lore.lessons.unlink(a, new_id())
    assert edge_set(fake_lore) == {(a, b, "related_to")}


def test_deleting_a_lesson_removes_its_edges(fake_lore, chain):
    fake_lore.lessons.delete(chain["B"])
    assert edge_set(fake_lore) == {(chain["C"], chain["D"], "example_of")}
    assert fake_lore.lessons.get(chain["A"]).edges == ()
    assert fake_lore.search.related(chain["A"], depth=3) == []
    assert [e.to_id for e in fake_lore.lessons.get(chain["C"]).edges] == [chain["D"]]


# ---- related ---------------------------------------------------------------------------

def test_related_depths(fake_lore, chain):
    a, b, c, d = (chain[k] for k in "ABCD")
    one = fake_lore.search.related(a, depth=1)
    assert [(r.id, r.depth, r.relation, r.direction, r.via) for r in one] == [
        (b, 1, "related_to", "out", a)
    ]
    assert one[0].title == "Lesson B" and one[0].kind == "learning"
    two = by_id(fake_lore.search.related(a, depth=2))
    assert set(two) == {b, c}
    assert (two[c].depth, two[c].relation, two[c].via) == (2, "supersedes", b)
    three = fake_lore.search.related(a, depth=3)
    assert [r.id for r in three] == [b, c, d]  # ordered by depth
    assert [r.depth for r in three] == [1, 2, 3]
    assert (three[2].relation, three[2].direction, three[2].via) == ("example_of", "out", c)
    assert fake_lore.search.related(chain["Z"], depth=3) == []


def test_related_relation_filter(fake_lore, chain):
    a, b, c = chain["A"], chain["B"], chain["C"]
    assert [r.id for r in fake_lore.search.related(a, 3, relations=["related_to"])] == [b]
    assert fake_lore.search.related(a, 3, relations=["supersedes"]) == []  # A's only edge is related_to
    found = fake_lore.search.related(b, 3, relations=["supersedes", "related_to"])
    assert {r.id for r in found} == {a, c}


def test_related_direction(fake_lore, chain):
    a, b, c, d = (chain[k] for k in "ABCD")
    out = fake_lore.search.related(b, 1, direction="out")
    assert [(r.id, r.direction, r.relation) for r in out] == [(c, "out", "supersedes")]
    inn = fake_lore.search.related(b, 1, direction="in")
    assert [(r.id, r.direction, r.relation) for r in inn] == [(a, "in", "related_to")]
    assert {r.id for r in fake_lore.search.related(b, 1, direction="both")} == {a, c}
    assert {r.id for r in fake_lore.search.related(d, 3, direction="in")} == {a, b, c}
    assert fake_lore.search.related(d, 3, direction="out") == []
    assert fake_lore.search.related(a, 3, direction="in") == []


def test_related_cycle_terminates_and_reports_each_lesson_once(fake_lore):
    a, b, c = add(fake_lore, "A"), add(fake_lore, "B"), add(fake_lore, "C")
    fake_lore.lessons.link(a, b)
    fake_lore.lessons.link(b, c)
    fake_lore.lessons.link(c, a, "contradicts")
    out = fake_lore.search.related(a, depth=10, direction="out")
    assert [(r.id, r.depth, r.via) for r in out] == [(b, 1, a), (c, 2, b)]
    both = by_id(fake_lore.search.related(a, depth=10))
    assert len(both) == 2 and a not in both
    assert both[b].depth == 1 and both[c].depth == 1
    assert (both[c].relation, both[c].direction) == ("contradicts", "in")
    assert len(fake_lore.search.related(a, depth=10)) == 2  # no duplicates


@pytest.mark.parametrize("depth", [0, 11, -1])
def test_related_invalid_depth(fake_lore, chain, depth):
    with pytest.raises(InvalidInput, match="depth"):
        fake_lore.search.related(chain["A"], depth=depth)


def test_related_invalid_direction_and_unknown_id(fake_lore, chain):
    with pytest.raises(InvalidInput, match="direction"):
        fake_lore.search.related(chain["A"], direction="sideways")
    with pytest.raises(NotFound):
        fake_lore.search.related(new_id())


# ---- path ------------------------------------------------------------------------------

def test_path_follows_the_chain(fake_lore, chain):
    a, b, c, d = (chain[k] for k in "ABCD")
    steps = fake_lore.search.path(a, d)
    assert [s.id for s in steps] == [a, b, c, d]
    assert [s.relation for s in steps] == [None, "related_to", "supersedes", "example_of"]
    assert [s.direction for s in steps] == [None, "out", "out", "out"]
    assert steps[0].title == "Lesson A" and steps[-1].title == "Lesson D"
    assert steps[1].to_dict() == {"id": b, "title": "Lesson B", "relation": "related_to",
                                  "direction": "out"}


def test_path_takes_the_shortest_route_and_reports_direction(fake_lore, chain):
    a, d = chain["A"], chain["D"]
    e = add(fake_lore, "Lesson E")
    fake_lore.lessons.link(a, e, "alternative")
    fake_lore.lessons.link(d, e, "derived_from")  # points from D to E: against the path A..D
    steps = fake_lore.search.path(a, d)
    assert [s.id for s in steps] == [a, e, d]
    assert [(s.relation, s.direction) for s in steps] == [
        (None, None), ("alternative", "out"), ("derived_from", "in")
    ]
    # Reverse: D..A uses the same edges, directions flipped.
    back = fake_lore.search.path(d, a)
    assert [(s.id, s.relation, s.direction) for s in back] == [
        (d, None, None), (e, "derived_from", "out"), (a, "alternative", "in")
    ]


def test_directed_path_refuses_to_go_against_edges(fake_lore, chain):
    a, b, c, d = (chain[k] for k in "ABCD")
    e = add(fake_lore, "Lesson E")
    fake_lore.lessons.link(a, e)
    fake_lore.lessons.link(d, e)
    assert [s.id for s in fake_lore.search.path(a, d, directed=True)] == [a, b, c, d]
    assert fake_lore.search.path(d, a, directed=True) == []
    assert [s.id for s in fake_lore.search.path(d, a)] == [d, e, a]


def test_path_respects_max_depth_and_relations(fake_lore, chain):
    a, d = chain["A"], chain["D"]
    assert fake_lore.search.path(a, d, max_depth=2) == []
    assert len(fake_lore.search.path(a, d, max_depth=3)) == 4
    assert fake_lore.search.path(a, d, relations=["related_to", "supersedes"]) == []
    assert fake_lore.search.path(a, chain["Z"]) == []


def test_path_to_itself_and_invalid_arguments(fake_lore, chain):
    a = chain["A"]
    assert [(s.id, s.relation) for s in fake_lore.search.path(a, a)] == [(a, None)]
    with pytest.raises(InvalidInput):
        fake_lore.search.path(a, chain["D"], max_depth=0)
    with pytest.raises(NotFound):
        fake_lore.search.path(a, new_id())


# ---- subgraph and Mermaid --------------------------------------------------------------

def test_subgraph_nodes_edges_and_dict(fake_lore, chain):
    a, b, c = chain["A"], chain["B"], chain["C"]
    sub = fake_lore.search.subgraph(b, depth=1)
    assert set(sub.nodes) == {a, b, c}
    assert sub.nodes[b] == ("Lesson B", "learning")
    assert {(e.from_id, e.to_id, e.relation) for e in sub.edges} == {
        (a, b, "related_to"), (b, c, "supersedes")
    }
    d = sub.to_dict()
    assert {n["id"] for n in d["nodes"]} == {a, b, c}
    assert {"id": b, "title": "Lesson B", "kind": "learning"} in d["nodes"]
    assert len(d["edges"]) == 2
    assert all(set(e) == {"from", "to", "relation", "created_at"} for e in d["edges"])
    assert {(e["from"], e["to"]) for e in d["edges"]} == {(a, b), (b, c)}
    json.dumps(d)  # serialisable


def test_subgraph_includes_every_edge_among_members(fake_lore):
    a, b, c, x = (add(fake_lore, n) for n in "ABCX")
    fake_lore.lessons.link(a, b)
    fake_lore.lessons.link(a, c)
    fake_lore.lessons.link(b, c, "contradicts")  # does not touch A, but joins two members
    fake_lore.lessons.link(c, x)  # X is two hops away
    sub = fake_lore.search.subgraph(a, depth=1)
    assert set(sub.nodes) == {a, b, c}
    assert {(e.from_id, e.to_id, e.relation) for e in sub.edges} == {
        (a, b, "related_to"), (a, c, "related_to"), (b, c, "contradicts")
    }
    assert set(fake_lore.search.subgraph(a, depth=2).nodes) == {a, b, c, x}
    lonely = fake_lore.search.subgraph(x, depth=1, direction="out")
    assert set(lonely.nodes) == {x} and lonely.edges == []


def test_mermaid_output_and_escaping(fake_lore):
    tricky = 'Say "hi" | use <b>bold</b>'
    a = add(fake_lore, tricky)
    b, c = add(fake_lore, "Plain B", kind="bug_fix"), add(fake_lore, "Plain C")
    fake_lore.lessons.link(a, b, "supersedes")
    fake_lore.lessons.link(c, a, "odd|relation")
    text = fake_lore.search.subgraph(a, depth=1).to_mermaid()
    lines = text.splitlines()
    assert text.startswith("graph LR\n") and text.endswith("\n")
    edge_lines = [ln for ln in lines if "-->" in ln]
    assert len(edge_lines) == 2
    assert len(lines) == 1 + 3 + 2  # header, one line per node, one per edge
    node_line = next(ln for ln in lines if "Say" in ln)
    label = node_line.split('["', 1)[1].rsplit('"]', 1)[0]
    assert '"' not in label and "|" not in label
    assert "<b>" not in label and "</b>" not in label
    assert "#quot;hi#quot;" in label and "#124;" in label and "#lt;b#gt;bold#lt;/b#gt;" in label
    assert "<small>bug_fix</small>" in text
    assert any("-->|supersedes|" in ln for ln in edge_lines)
    odd = next(ln for ln in edge_lines if "odd" in ln)
    assert "-->|odd#124;relation|" in odd
    # Node names are consistent: every edge refers to a declared node.
    declared = {ln.split("[", 1)[0].strip() for ln in lines[1:] if "[" in ln and "-->" not in ln}
    for ln in edge_lines:
        src, rest = ln.strip().split(" -->|", 1)
        dst = rest.split("| ", 1)[1]
        assert src in declared and dst in declared


# ---- CLI -------------------------------------------------------------------------------

def _cli_add(run, title: str) -> str:
    res = run("learn", "add", title, f"about {title}", "--json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)["id"]


def test_cli_link_and_related_json(run):
    a, b, c = (_cli_add(run, t) for t in ("Pin numpy", "Pin numpy below 2", "Use uv lock"))
    res = run("learn", "link", a, b, "--relation", "supersedes", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["relation"] == "supersedes"
    res = run("learn", "link", b, c)
    assert res.exit_code == 0 and "linked" in res.stderr
    res = run("recall", "related", a, "--depth", "2", "--json")
    assert res.exit_code == 0, res.output
    found = json.loads(res.stdout)
    assert [(r["id"], r["depth"], r["relation"], r["direction"]) for r in found] == [
        (b, 1, "supersedes", "out"), (c, 2, "related_to", "out")
    ]
    res = run("recall", "related", a, "--depth", "2", "--direction", "in", "--json")
    assert json.loads(res.stdout) == []
    res = run("recall", "related", a, "--depth", "0")
    assert res.exit_code == 1 and res.stderr.startswith("Error:")
    res = run("learn", "link", a, a)
    assert res.exit_code == 1
    assert res.stderr.strip().splitlines() == [res.stderr.strip()]
    assert res.stderr.startswith("Error:") and "Traceback" not in res.output


def test_cli_related_export_mermaid(run):
    a, b = _cli_add(run, 'Quote "this" | <that>'), _cli_add(run, "Other")
    assert run("learn", "link", a, b).exit_code == 0
    res = run("recall", "related", a, "--export", "mermaid")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == "graph LR"
    assert len([ln for ln in lines if "-->|related_to|" in ln]) == 1
    assert "#quot;this#quot; #124; #lt;that#gt;" in res.stdout
    res = run("recall", "related", a, "--export", "json")
    data = json.loads(res.stdout)
    assert {n["id"] for n in data["nodes"]} == {a, b} and len(data["edges"]) == 1


def test_cli_path_found_and_not_found(run):
    a, b, z = _cli_add(run, "Alpha"), _cli_add(run, "Beta"), _cli_add(run, "Zeta")
    assert run("learn", "link", b, a, "--relation", "derived_from").exit_code == 0
    res = run("recall", "related", a, "--to", b)
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines() == [f"Alpha  ({a})", "  <-[derived_from]-", f"Beta  ({b})"]
    res = run("recall", "related", a, "--to", b, "--json")
    steps = json.loads(res.stdout)["steps"]
    assert [(s["id"], s["direction"]) for s in steps] == [(a, None), (b, "in")]
    res = run("recall", "related", a, "--to", z)
    assert res.exit_code == 1
    err = res.stderr.strip()
    assert err.startswith("Error:") and len(err.splitlines()) == 1
    assert "no path" in err and res.stdout == ""
    res = run("recall", "related", a, "--to", b, "--direction", "out")
    assert res.exit_code == 1 and res.stderr.startswith("Error: no path")
