"""The lesson graph: N-hop neighbourhoods, shortest paths, subgraph export (JSON, Mermaid)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lore.errors import InvalidInput
from lore.models import DIRECTIONS, Edge, RelatedLesson
from lore.store import LessonStore

MAX_DEPTH = 10


def check_walk(depth: int, direction: str) -> None:
    if not 1 <= depth <= MAX_DEPTH:
        raise InvalidInput(f"depth must be between 1 and {MAX_DEPTH} (got {depth})")
    if direction not in DIRECTIONS:
        raise InvalidInput(f"invalid direction '{direction}'; valid: {', '.join(DIRECTIONS)}")


def related(
    store: LessonStore, lesson_id: str, depth: int = 1, relations: Sequence[str] = (),
    direction: str = "both",
) -> list[RelatedLesson]:
    check_walk(depth, direction)
    store.seq_of(lesson_id)  # NotFound for an unknown id
    rows = store.walk(lesson_id, depth, list(relations), direction)
    titles = store.titles([r[0] for r in rows])
    return [
        RelatedLesson(id=i, title=titles[i][0], kind=titles[i][1], depth=d, relation=rel,
                      direction=dirn, via=via)
        for i, d, rel, dirn, via in rows
        if i in titles
    ]


@dataclass(frozen=True, slots=True)
class PathStep:
    id: str
    title: str
    relation: str | None  # relation of the edge that led here (None for the start)
    direction: str | None  # "out" when the edge points along the path, "in" against it

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "relation": self.relation,
                "direction": self.direction}


def shortest_path(
    store: LessonStore, start: str, goal: str, max_depth: int = 6, relations: Sequence[str] = (),
    directed: bool = False,
) -> list[PathStep]:
    """Breadth-first search, one batched query per level. Empty list: no path within max_depth."""
    check_walk(max_depth, "both")
    store.seq_of(start)
    store.seq_of(goal)
    if start == goal:
        return [PathStep(start, store.titles([start])[start][0], None, None)]
    parent: dict[str, tuple[str, str, str]] = {}  # node -> (previous, relation, direction)
    frontier = [start]
    seen = {start}
    for _ in range(max_depth):
        nxt: list[str] = []
        for edge in sorted(store.neighbours(frontier, relations),
                           key=lambda e: (e.from_id, e.to_id, e.relation)):
            for here, there, dirn in ((edge.from_id, edge.to_id, "out"),
                                      (edge.to_id, edge.from_id, "in")):
                if directed and dirn == "in":
                    continue
                if here in frontier and there not in seen:
                    seen.add(there)
                    parent[there] = (here, edge.relation, dirn)
                    nxt.append(there)
        if goal in seen:
            break
        frontier = nxt
        if not frontier:
            break
    if goal not in parent:
        return []
    chain: list[tuple[str, str | None, str | None]] = []
    node = goal
    while node != start:
        prev, rel, dirn = parent[node]
        chain.append((node, rel, dirn))
        node = prev
    chain.append((start, None, None))
    chain.reverse()
    titles = store.titles([c[0] for c in chain])
    return [PathStep(i, titles[i][0], rel, dirn) for i, rel, dirn in chain]


@dataclass(frozen=True, slots=True)
class Subgraph:
    nodes: dict[str, tuple[str, str]]  # id -> (title, kind)
    edges: list[Edge]

    def to_dict(self) -> dict[str, Any]:
        return {
            "nodes": [{"id": i, "title": t, "kind": k} for i, (t, k) in self.nodes.items()],
            "edges": [e.to_dict() for e in self.edges],
        }

    def to_mermaid(self) -> str:
        names = {i: f"n{n}" for n, i in enumerate(self.nodes)}
        lines = ["graph LR"]
        for i, (title, kind) in self.nodes.items():
            lines.append(f'    {names[i]}["{_mermaid_text(title)}<br/><small>{kind}</small>"]')
        for e in self.edges:
            lines.append(f"    {names[e.from_id]} -->|{_mermaid_text(e.relation)}| {names[e.to_id]}")
        return "\n".join(lines) + "\n"


def subgraph(
    store: LessonStore, lesson_id: str, depth: int = 1, relations: Sequence[str] = (),
    direction: str = "both",
) -> Subgraph:
    """The lesson, everything within ``depth`` hops, and every edge among them."""
    found = related(store, lesson_id, depth, relations, direction)
    ids = [lesson_id, *(r.id for r in found)]
    members = set(ids)
    titles = store.titles(ids)
    edges = {
        (e.from_id, e.to_id, e.relation): e
        for e in store.neighbours(ids, relations)
        if e.from_id in members and e.to_id in members
    }
    return Subgraph(
        nodes={i: titles[i] for i in ids if i in titles},
        edges=sorted(edges.values(), key=lambda e: (e.from_id, e.to_id, e.relation)),
    )


def _mermaid_text(text: str) -> str:
    # Mermaid labels: quotes and pipes would end the label; brackets confuse the parser.
    table = {'"': "#quot;", "|": "#124;", "<": "#lt;", ">": "#gt;", "\n": " "}
    return "".join(table.get(ch, ch) for ch in text)
