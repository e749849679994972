"""Repeat groups for labelled histories: what independent readers are shown, how far two of
them agree, and the groups both found.

    python -m bench.quality.repeat_groups sheets LABELLED.jsonl … --out FOLDER
    python -m bench.quality.repeat_groups agree LABELLED.jsonl … --a READER_A --b READER_B \\
        [--write GROUPS.jsonl]
    python -m bench.quality.repeat_groups merge LABELLED.jsonl … --groups GROUPS.jsonl \\
        --out HISTORY.jsonl

``sheets`` writes one sheet per repository that holds at least two messages labelled a
correction or preference: the reading protocol (docs/learning.md, "Repeat groups"), then the
repository's messages in order, split into sessions as ``lore eval history`` splits them, each
with the agent turn it answers. Labels are not shown. A reader sees one sheet and nothing else
and answers with JSON lines ``{"group": NAME, "messages": [ID, …], "lesson": "…"}`` saved as
``<sheet name>.jsonl`` in their own folder.

``agree`` compares two readers' folders: over every pair of messages of a repository, whether
both readers put the two in one group (pair agreement, Cohen's kappa, and the pairs each
found), and over groups, how many of one reader's groups the other found (the same two or
more messages). ``--write`` keeps the groups both readers agree on: the pairs both put
together, joined where they share a message.

``merge`` writes the labelled files again with ``repeat_group`` set from a groups file, for
``lore eval history`` (the data stays outside the repository).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from itertools import combinations
from pathlib import Path

from lore.measure.history import Message, load, sessions_of, slug

PROTOCOL = """\
# Repeat groups: reading protocol

You are shown the messages one developer typed to a coding agent in one repository, in the
order they were written and split into sessions (a session is one conversation with the agent).
Under each message, in italics, is the end of the agent's turn it answers, when there was one.

Find the lessons this developer had to teach MORE THAN ONCE. Two or more messages belong to one
group when they teach the same lesson: the same practice, tool, place or rule ("use pnpm, not
npm" and later "pnpm!! not npm"; "never edit gen/" and "gen/ is generated, don't touch it").

- The same lesson, not the same topic: two different rules about tests are two lessons; a
  request to add tests and a rule about how tests are written are not one lesson.
- Only lessons meant to hold beyond the task at hand: a standing rule, a preference, a fact about
  the project or its environment the agent keeps getting wrong. One-off task fixes (fix this
  line, undo that change, this specific bug, "no, the button should be blue") are not lessons
  and are not grouped, even when the developer says them twice.
- A message may belong to at most one group. A group has at least two messages. Messages in one
  session count as repeats too.
- When unsure whether two messages teach the same lesson, leave them apart.

Answer with JSON lines only, one line per group and nothing else:

{"group": "short-name", "messages": ["ID", "ID"], "lesson": "the lesson in one line"}

If the developer taught no lesson more than once, answer with nothing (an empty reply).
"""

_CUT = 300


def _sheet(repo: str, sessions: list[list[Message]]) -> str:
    out = [PROTOCOL, f"\n# Repository {repo}\n"]
    for n, session in enumerate(sessions, 1):
        out.append(f"\n## Session {n}\n")
        for m in session:
            out.append(f"\n[{m.key}] {m.text.strip()}\n")
            if m.previous:
                prev = " ".join(m.previous.split())
                out.append(f"    _agent before: {prev[-_CUT:]}_\n")
    return "".join(out)


def sheets(paths: list[Path], out: Path) -> int:
    messages = load(paths)
    out.mkdir(parents=True, exist_ok=True)
    written = 0
    for repo, sessions in sessions_of(messages).items():
        if sum(m.label != "none" for s in sessions for m in s) < 2:
            continue
        (out / f"{slug(repo)}.md").write_text(_sheet(repo, sessions), encoding="utf-8")
        written += 1
    print(f"{written} sheets in {out}")
    return 0


def _groups(folder: Path, known: set[str]) -> dict[str, list[set[str]]]:
    """Each sheet's groups (sets of message ids) from a reader's folder; ids not in the data and
    messages claimed twice are dropped (the first group keeps them)."""
    out: dict[str, list[set[str]]] = {}
    for path in sorted(folder.glob("*.jsonl")):
        seen: set[str] = set()
        groups: list[set[str]] = []
        for line in path.read_text(encoding="utf-8").splitlines():
            line = line.strip().strip("`")
            if not line.startswith("{"):
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError:
                continue
            ids = {str(i) for i in item.get("messages") or [] if str(i) in known} - seen
            if len(ids) >= 2:
                groups.append(ids)
                seen |= ids
        out[path.stem] = groups
    return out


def _pairs(groups: list[set[str]]) -> set[frozenset[str]]:
    return {frozenset(p) for g in groups for p in combinations(sorted(g), 2)}


def agree(paths: list[Path], a: Path, b: Path, write: Path | None) -> int:
    messages = load(paths)
    known = {m.key for m in messages}
    by_sheet = {slug(repo): [m.key for s in ss for m in s]
                for repo, ss in sessions_of(messages).items()}
    ga, gb = _groups(a, known), _groups(b, known)
    sheets_read = sorted(set(ga) & set(gb))
    if not sheets_read:
        print("the two folders hold no answer to the same sheet", file=sys.stderr)
        return 2
    both = only_a = only_b = neither = 0
    agreed: dict[str, list[set[str]]] = {}
    groups_a = groups_b = found_a_in_b = found_b_in_a = 0
    for sheet in sheets_read:
        ids = by_sheet.get(sheet, [])
        pa, pb = _pairs(ga[sheet]), _pairs(gb[sheet])
        total = len(ids) * (len(ids) - 1) // 2
        both += len(pa & pb)
        only_a += len(pa - pb)
        only_b += len(pb - pa)
        neither += total - len(pa | pb)
        groups_a += len(ga[sheet])
        groups_b += len(gb[sheet])
        found_a_in_b += sum(any(len(g & h) >= 2 for h in gb[sheet]) for g in ga[sheet])
        found_b_in_a += sum(any(len(g & h) >= 2 for h in ga[sheet]) for g in gb[sheet])
        agreed[sheet] = _components(pa & pb)
    n = both + only_a + only_b + neither
    po = (both + neither) / n if n else 1.0
    ya, yb = (both + only_a) / n if n else 0.0, (both + only_b) / n if n else 0.0
    pe = ya * yb + (1 - ya) * (1 - yb)
    kappa = (po - pe) / (1 - pe) if pe < 1 else 1.0
    kept = sum(len(v) for v in agreed.values())
    print(json.dumps({
        "sheets": len(sheets_read),
        "pairs": {"both": both, "only_a": only_a, "only_b": only_b, "neither": neither,
                  "agreement": round(po, 4), "kappa": round(kappa, 3)},
        "groups": {"a": groups_a, "b": groups_b, "a_found_by_b": found_a_in_b,
                   "b_found_by_a": found_b_in_a, "agreed": kept},
    }, indent=1))
    if write is not None:
        with write.open("w", encoding="utf-8") as fh:
            for sheet, groups in sorted(agreed.items()):
                for k, g in enumerate(groups, 1):
                    fh.write(json.dumps({"sheet": sheet, "group": f"{sheet}#{k}",
                                         "messages": sorted(g)}) + "\n")
    return 0


def _components(pairs: set[frozenset[str]]) -> list[set[str]]:
    linked: dict[str, set[str]] = defaultdict(set)
    for p in pairs:
        x, y = tuple(p)
        linked[x].add(y)
        linked[y].add(x)
    out, seen = [], set()
    for start in sorted(linked):
        if start in seen:
            continue
        group, todo = set(), [start]
        while todo:
            k = todo.pop()
            if k not in group:
                group.add(k)
                todo += linked[k] - group
        seen |= group
        out.append(group)
    return out


def merge(paths: list[Path], groups_file: Path, out: Path) -> int:
    group_of = {}
    for line in groups_file.read_text(encoding="utf-8").splitlines():
        if line.strip():
            item = json.loads(line)
            for key in item["messages"]:
                group_of[key] = item["group"]
    with out.open("w", encoding="utf-8") as fh:
        for path in paths:
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    row["repeat_group"] = group_of.get(str(row.get("id")))
                    fh.write(json.dumps(row) + "\n")
    print(f"{len(group_of)} messages in {len(set(group_of.values()))} groups -> {out}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="verb", required=True)
    s = sub.add_parser("sheets")
    s.add_argument("files", nargs="+", type=Path)
    s.add_argument("--out", type=Path, required=True)
    g = sub.add_parser("agree")
    g.add_argument("files", nargs="+", type=Path)
    g.add_argument("--a", type=Path, required=True)
    g.add_argument("--b", type=Path, required=True)
    g.add_argument("--write", type=Path)
    m = sub.add_parser("merge")
    m.add_argument("files", nargs="+", type=Path)
    m.add_argument("--groups", type=Path, required=True)
    m.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    if args.verb == "sheets":
        return sheets(args.files, args.out)
    if args.verb == "agree":
        return agree(args.files, args.a, args.b, args.write)
    return merge(args.files, args.groups, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
