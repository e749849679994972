"""Edges between lessons: add, remove, walk N hops (a recursive CTE), neighbours."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lore.models import Edge
from lore.store.sqlite.db import Tables, atomic, chunks


class EdgeTables(Tables):
    """The ``edges`` table."""

    # ---- graph ------------------------------------------------------------------------
    def edges_of_many(self, ids: Sequence[str]) -> dict[str, list[Edge]]:
        """``edges_of`` for many lessons in one query per 500 ids."""
        out: dict[str, list[Edge]] = {}
        for part in chunks(list(ids), 500):
            marks = ",".join("?" * len(part))
            wanted = set(part)
            for r in self.conn.execute(
                "SELECT from_id, to_id, relation, created_at FROM edges "
                f"WHERE from_id IN ({marks}) OR to_id IN ({marks}) ORDER BY created_at, relation",
                (*part, *part),
            ):
                edge = Edge(r[0], r[1], r[2], r[3])
                for end in {r[0], r[1]} & wanted:
                    out.setdefault(end, []).append(edge)
        return out

    def add_edge(self, edge: Edge) -> bool:
        with atomic(self.conn):
            cur = self.conn.execute(
                "INSERT INTO edges (from_id, to_id, relation, created_at, author) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (edge.from_id, edge.to_id, edge.relation, edge.created_at, self.who[0]),
            )
        return cur.rowcount > 0

    def remove_edges(self, from_id: str, to_id: str, relation: str | None) -> int:
        sql = "DELETE FROM edges WHERE from_id = ? AND to_id = ?"
        params: list[Any] = [from_id, to_id]
        if relation is not None:
            sql += " AND relation = ?"
            params.append(relation)
        with atomic(self.conn):
            cur = self.conn.execute(sql, params)
        return cur.rowcount

    def walk(
        self, start: str, depth: int, relations: Sequence[str], direction: str
    ) -> list[tuple[str, int, str, str, str]]:
        """Breadth-first N-hop walk with a recursive CTE: (id, depth, relation, direction, via).

        Each lesson is reported once, at its shortest distance.
        """
        rel_filter = ""
        rel_params: list[Any] = []
        if relations:
            rel_filter = f"AND e.relation IN ({','.join('?' * len(relations))})"
            rel_params = list(relations)
        steps = []
        params: list[Any] = []
        visible, who = self.visible("v")  # never through a lesson its user may not see
        if direction in ("out", "both"):
            steps.append(
                "SELECT e.to_id, w.depth + 1, e.relation, 'out', w.id FROM edges e "
                f"JOIN walk w ON e.from_id = w.id {self._join(visible, 'e.to_id')}"
                f"WHERE w.depth < ? {rel_filter}"
            )
            params += [*who, depth, *rel_params]
        if direction in ("in", "both"):
            steps.append(
                "SELECT e.from_id, w.depth + 1, e.relation, 'in', w.id FROM edges e "
                f"JOIN walk w ON e.to_id = w.id {self._join(visible, 'e.from_id')}"
                f"WHERE w.depth < ? {rel_filter}"
            )
            params += [*who, depth, *rel_params]
        sql = (
            "WITH RECURSIVE walk(id, depth, relation, direction, via) AS ("
            "SELECT ?, 0, NULL, NULL, NULL UNION "
            + " UNION ".join(steps)
            + ") SELECT id, min(depth) AS d, relation, direction, via FROM walk "
            "WHERE id <> ? GROUP BY id ORDER BY d, id"
        )
        # UNION (not UNION ALL) drops repeated rows, and the depth bound ends cycles.
        rows = self.conn.execute(sql, [start, *params, start]).fetchall()
        return [(r[0], r[1], r[2], r[3], r[4]) for r in rows]

    @staticmethod
    def _join(visible: str, end: str) -> str:
        """Join the lesson at ``end`` of an edge when only visible lessons count."""
        return f"JOIN lessons v ON v.id = {end} AND {visible} " if visible else ""

    def neighbours(self, ids: Sequence[str], relations: Sequence[str]) -> list[Edge]:
        """Every edge touching any of ``ids`` (both directions) whose two lessons the store's
        user may see."""
        out: list[Edge] = []
        rel_filter = ""
        if relations:
            rel_filter = f" AND relation IN ({','.join('?' * len(relations))})"
        visible, who = self.visible("v")
        if visible:
            rel_filter += (" AND NOT EXISTS (SELECT 1 FROM lessons v WHERE v.id IN "
                           f"(edges.from_id, edges.to_id) AND NOT {visible})")
        for chunk in chunks(list(ids)):
            marks = ",".join("?" * len(chunk))
            out += [
                Edge(r[0], r[1], r[2], r[3])
                for r in self.conn.execute(
                    "SELECT from_id, to_id, relation, created_at FROM edges "
                    f"WHERE (from_id IN ({marks}) OR to_id IN ({marks})){rel_filter}",
                    [*chunk, *chunk, *relations, *who],
                )
            ]
        return out

    def titles(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        out: dict[str, tuple[str, str]] = {}
        for chunk in chunks(list(ids)):
            marks = ",".join("?" * len(chunk))
            for r in self.conn.execute(
                f"SELECT id, title, kind FROM lessons WHERE id IN ({marks})", chunk
            ):
                out[r[0]] = (r[1], r[2])
        return out

