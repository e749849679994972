"""A lesson's neighbourhood drawn as inline SVG on the server: the lesson in the middle, the
lessons one link away on a ring around it, two links away on an outer ring. Every node is a
link to its lesson page, focusable with the keyboard, with its full title as a tooltip."""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING

from markupsafe import Markup, escape

if TYPE_CHECKING:
    from lore.recall.graph import Subgraph

WIDTH, HEIGHT = 640, 460
RINGS = (0, 130, 210)
LABEL = 22  # characters of a title shown under its node


def depths(sub: Subgraph, centre: str) -> dict[str, int]:
    """Links from the centre to each node, either direction."""
    near: dict[str, set[str]] = {n: set() for n in sub.nodes}
    for e in sub.edges:
        near.setdefault(e.from_id, set()).add(e.to_id)
        near.setdefault(e.to_id, set()).add(e.from_id)
    seen = {centre: 0}
    queue = deque([centre])
    while queue:
        node = queue.popleft()
        for other in sorted(near.get(node, ())):
            if other not in seen:
                seen[other] = seen[node] + 1
                queue.append(other)
    return seen


def layout(sub: Subgraph, centre: str) -> dict[str, tuple[float, float]]:
    found = depths(sub, centre)
    ring: dict[int, list[str]] = {}
    for node, d in sorted(found.items(), key=lambda kv: (kv[1], sub.nodes.get(kv[0], ("",))[0])):
        ring.setdefault(min(d, len(RINGS) - 1), []).append(node)
    cx, cy = WIDTH / 2, HEIGHT / 2
    places: dict[str, tuple[float, float]] = {}
    for d, nodes in ring.items():
        for i, node in enumerate(nodes):
            angle = 2 * math.pi * i / len(nodes) - math.pi / 2 + (0.3 if d == 2 else 0)
            places[node] = (round(cx + RINGS[d] * math.cos(angle), 1),
                            round(cy + RINGS[d] * math.sin(angle), 1))
    return places


def short(title: str) -> str:
    return title if len(title) <= LABEL else title[:LABEL - 1] + "…"


def render(sub: Subgraph, centre: str) -> Markup:
    """The SVG markup; every text in it is escaped."""
    places = layout(sub, centre)
    parts = [f'<svg class="graph" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
             f'aria-labelledby="graph-title" xmlns="http://www.w3.org/2000/svg">',
             '<title id="graph-title">Linked lessons</title>',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="22" refY="5" markerWidth="6" '
             'markerHeight="6" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z"/>'
             '</marker></defs>']
    for e in sub.edges:
        if e.from_id not in places or e.to_id not in places:
            continue
        (x1, y1), (x2, y2) = places[e.from_id], places[e.to_id]
        parts.append(f'<g class="edge"><line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" '
                     f'marker-end="url(#arrow)"/><text x="{(x1 + x2) / 2:.1f}" '
                     f'y="{(y1 + y2) / 2 - 4:.1f}">{escape(e.relation)}</text></g>')
    for node, (x, y) in places.items():
        title, kind = sub.nodes.get(node, (node, ""))
        cls = "node centre" if node == centre else "node"
        parts.append(f'<a class="{cls}" href="/lessons/{escape(node)}">'
                     f'<title>{escape(title)} ({escape(kind)})</title>'
                     f'<circle cx="{x}" cy="{y}" r="{16 if node == centre else 11}"/>'
                     f'<text x="{x}" y="{y + 30}">{escape(short(title))}</text></a>')
    parts.append("</svg>")
    return Markup("".join(parts))
