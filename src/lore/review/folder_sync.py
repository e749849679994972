"""The markdown review folder, both ways: export what waits (and what was decided), import
the decisions a person ticked or wrote in the files. The formats and the safe writes are
in :mod:`lore.review.folder`; every decision goes through :func:`lore.review.decide.decide`,
as one made with ``lore review approve`` would.

No decision is lost either way. An export never overwrites a review file that holds a
decision not imported yet. An import never applies a file older than a decision made since
(in the terminal, by MCP, in another folder): the newer decision stands, and the report says
which won. A decision imported once is recognised (the rule records the file it came from),
so importing the same folder twice changes nothing the second time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.errors import LoreError, NotFound
from lore.ids import now
from lore.models import Lesson
from lore.review import folder as fmt
from lore.review.decide import decide
from lore.review.queue import LIVE, Waiting, decisions, review_item, review_meta, waiting

if TYPE_CHECKING:
    from lore.review.decide import Checks, Lessons
    from lore.store import Store

DONE = {"approve": "approved", "edit": "edited", "reject": "rejected", "defer": "deferred"}


def _scan(folder: fmt.Folder) -> tuple[dict[str, tuple[str, fmt.Parsed]], dict[str, list[str]]]:
    """The review files Lore wrote (by rule id), as they are now; and the ids two or more
    files claim (a copy made by hand or by a file sync), with those files, which decide
    nothing: neither can be told to be the person's word."""
    found: dict[str, tuple[str, fmt.Parsed]] = {}
    claims: dict[str, list[str]] = {}
    for rel in folder.markdown("reviews"):
        text = folder.read(rel)
        if text is None:
            continue
        parsed = fmt.parse(text)
        if parsed.ours and parsed.id:
            key = parsed.id.upper()
            claims.setdefault(key, []).append(rel)
            found.setdefault(key, (rel, parsed))
    twice = {key: rels for key, rels in claims.items() if len(rels) > 1}
    for key in twice:
        del found[key]
    return found, twice


def _claimed_twice(key: str, rels: list[str]) -> str:
    return (f"{' and '.join(rels)} both claim rule {key}; no decision taken and neither file "
            "changed; delete one of them")


def _newer(review: Any, parsed: fmt.Parsed) -> bool:
    """A decision was recorded at or after the file's export."""
    exported = parsed.fields.get("exported", "")
    return isinstance(review, dict) and bool(exported) and str(review.get("at", "")) >= exported


def _same(review: Any, rel: str, action: str | None) -> bool:
    """The decision recorded is this file's, imported before."""
    return (isinstance(review, dict) and review.get("via") == "folder"
            and review.get("file") == rel and review.get("action") == action)


class ReviewSync:
    """Export and import one review folder of a store."""

    def __init__(self, store: Store, lessons: Lessons, checks: Checks | None = None) -> None:
        self.store = store
        self.lessons = lessons
        self.checks = checks

    # ---- import ------------------------------------------------------------------------------
    def import_(self, root: Path, *, create: bool = False) -> dict[str, Any]:
        """Apply the decisions in ``root``'s review files; one warning per file that cannot be
        applied (two boxes ticked, an unknown id, a newer decision made elsewhere). A missing
        folder is an error unless ``create`` (a sync exports into it next)."""
        folder = fmt.Folder(root, create=create)
        counts: Counter[str] = Counter()
        warnings: list[str] = []
        applied: list[dict[str, Any]] = []
        found, twice = _scan(folder)
        for key, rels in twice.items():
            warnings.append(_claimed_twice(key, rels))
            counts["warned"] += 1
        for rel, parsed in found.values():
            outcome = self._import_one(rel, parsed, warnings)
            counts[outcome] += 1
            if outcome in DONE.values():
                applied.append({"file": rel, "id": parsed.id, "decision": outcome})
        for rel, parsed in self._check_files(folder).values():
            outcome = self._import_check(rel, parsed, warnings)
            if outcome in DONE.values():
                applied.append({"file": rel, "id": parsed.id, "decision": outcome,
                                "check": True})
        return {"folder": str(folder.root), "approved": counts["approved"],
                "edited": counts["edited"], "rejected": counts["rejected"],
                "deferred": counts["deferred"], "undecided": counts["undecided"],
                "unchanged": counts["unchanged"], "kept": counts["kept"],
                "warnings": warnings, "applied": applied}

    def _import_one(self, rel: str, parsed: fmt.Parsed, warnings: list[str]) -> str:
        assert parsed.id is not None
        try:
            lesson = self.lessons.get(parsed.id.upper())
        except NotFound:
            warnings.append(f"{rel}: no rule has the id {parsed.id} (deleted?); file left as it is")
            return "warned"
        decision = fmt.decide(parsed, lesson.title, lesson.content)
        if decision.problem:
            warnings.append(f"{rel}: {decision.problem}; no decision taken")
            return "warned"
        if decision.action is None:
            return "undecided"
        review = (review_meta(lesson) or ("", {}))[1].get("review")
        if _same(review, rel, decision.action):
            return "unchanged"
        if isinstance(review, dict) and _newer(review, parsed):
            warnings.append(f"{rel}: kept the decision made {_where(review)} at {review['at']} "
                            f"({review['action']}); the file's {decision.action} predates it")
            return "kept"
        if lesson.status not in LIVE:
            warnings.append(f"{rel}: the rule is {lesson.status} now; the file's "
                            f"{decision.action} was not applied")
            return "kept"
        try:
            decide(self.store, self.lessons, lesson.id, decision.action, reason=decision.reason,
                   title=decision.title, content=decision.content, via="folder", file=rel)
        except LoreError as exc:  # a title too long, an empty one …: this file only
            warnings.append(f"{rel}: {exc}")
            return "warned"
        if decision.note:
            warnings.append(f"{rel}: {decision.action}: {decision.note}")
        return DONE[decision.action]

    @staticmethod
    def _check_files(folder: fmt.Folder) -> dict[str, tuple[str, fmt.Parsed]]:
        found: dict[str, tuple[str, fmt.Parsed]] = {}
        for rel in folder.markdown("checks"):
            text = folder.read(rel)
            parsed = fmt.parse(text) if text is not None else None
            if parsed and parsed.ours and parsed.fields.get("kind") == "check" and parsed.id:
                found.setdefault(parsed.id.upper(), (rel, parsed))
        return found

    def _import_check(self, rel: str, parsed: fmt.Parsed, warnings: list[str]) -> str:
        """A check's file: approve or reject, once; a check decided since is left alone."""
        ticked = set(parsed.ticked) & {"approve", "reject"}
        if not ticked or self.checks is None:
            return "undecided"
        if len(ticked) > 1:
            warnings.append(f"{rel}: both approve and reject are ticked; no decision taken")
            return "warned"
        assert parsed.id is not None
        if not self.checks.is_check(parsed.id.upper()):
            warnings.append(f"{rel}: no check has the id {parsed.id} (removed?); file left as it is")
            return "warned"
        check = self.checks.get(parsed.id.upper())
        if check["status"] != "proposed":
            return "unchanged"
        action = ticked.pop()
        self.checks.review(check["id"], action)
        return DONE[action]

    def _export_checks(self, folder: fmt.Folder, stamp: str, written: list[str],
                       notes: list[str]) -> list[tuple[str, str]]:
        """A file per check waiting; files of checks decided since go (unless they hold a
        decision not imported yet)."""
        if self.checks is None:
            return []
        existing = self._check_files(folder)
        links = []
        keep = set()
        for check in self.checks.waiting():
            rel = "checks/" + fmt.check_name(check["id"], check["words"])
            old = existing.pop(check["id"].upper(), None)
            if old is not None and set(old[1].ticked) & {"approve", "reject"}:
                notes.append(f"{old[0]}: kept; it holds a decision not imported yet")
                keep.add(old[0])
                links.append((old[0], check["words"]))
                continue
            if folder.write(rel, fmt.render_check(check, stamp), fmt.same_but_stamp):
                written.append(rel)
            keep.add(rel)
            links.append((rel, check["words"]))
        for rel, parsed in existing.values():
            if set(parsed.ticked) & {"approve", "reject"} and self.checks.is_check(parsed.id or "") \
                    and self.checks.get(parsed.id or "")["status"] == "proposed":
                keep.add(rel)
        self._prune(folder, "checks", keep)
        return links

    # ---- export ------------------------------------------------------------------------------
    def export(self, root: Path, approved: Sequence[Lesson]) -> dict[str, Any]:
        """Write the folder: a file per waiting rule, the approved rules by project, the
        decided ones in the archive, and the index. Files Lore wrote that no longer belong are
        removed; a person's own files in the folder are left alone. Every path is checked
        before the first is written: a link out of the folder refuses the whole export."""
        stamp = now()
        self._export(fmt.Folder(root, check_only=True), approved, stamp)
        return self._export(fmt.Folder(root), approved, stamp)

    def _export(self, folder: fmt.Folder, approved: Sequence[Lesson], stamp: str
                ) -> dict[str, Any]:
        notes: list[str] = []
        written: list[str] = []
        existing, twice = _scan(folder)
        queue = waiting(self.store, None, all_projects=True, limit=1_000_000)
        links: list[tuple[str, str]] = []
        kept: list[str] = []
        for key, rels in twice.items():
            notes.append(_claimed_twice(key, rels))
        for item in queue:
            if item["id"].upper() in twice:
                links += [(rel, item["title"]) for rel in twice[item["id"].upper()]]
                continue
            want = "reviews/" + fmt.review_name(item["id"], item["title"], _first_date(item))
            old = existing.pop(item["id"].upper(), None)
            if old is not None:
                rel, parsed = old
                decision = fmt.decide(parsed, item["title"], item["rule"] or "")
                if decision.action or decision.problem:  # a person's decision, not imported yet
                    kept.append(rel)
                    links.append((rel, item["title"]))
                    continue
                if rel != want:
                    folder.delete(rel)
            if folder.write(want, fmt.render_review(item, stamp), fmt.same_but_stamp):
                written.append(want)
            links.append((want, item["title"]))
        if kept:
            notes.append(f"kept {len(kept)} review file(s) holding a decision not imported yet; "
                         "run `lore review sync --only import` (or sync)")
        archived = self._archive(folder, written, notes, existing)
        rules = self._rules(folder, approved, written)
        checks = self._export_checks(folder, stamp, written, notes)
        counts = {"waiting": len(queue), "approved": len(approved), "archived": len(archived),
                  "checks": len(checks)}
        if folder.write("index.md", fmt.render_index(counts, links, rules, archived, stamp,
                                                     checks), fmt.same_but_stamp):
            written.append("index.md")
        return {"folder": str(folder.root), **counts, "written": written, "kept": kept,
                "notes": notes}

    def _archive(self, folder: fmt.Folder, written: list[str], notes: list[str],
                 stale: dict[str, tuple[str, fmt.Parsed]]) -> list[tuple[str, str]]:
        """Decided rules into archive/<yyyy-mm>/; review files of rules decided since go."""
        wanted: dict[str, str] = {}
        links = []
        for item, review in decisions(self.store):
            at = str(review.get("at") or "")
            rel = (f"archive/{fmt.day(at)[:7]}/"
                   + fmt.review_name(item["id"], item["title"], _first_date(item)))
            wanted[rel] = item["id"]
            if folder.write(rel, fmt.render_archived(item, review)):
                written.append(rel)
            links.append((rel, item["title"]))
            old = stale.pop(item["id"].upper(), None)
            if old is not None:
                self._drop_stale(folder, old, review, notes)
        for rel, parsed in stale.values():  # deleted rules, or ones no longer waiting
            if fmt.decide(parsed, parsed.title or "", parsed.rule or "").action:
                notes.append(f"{rel}: kept; it holds a decision not imported yet")
                continue
            folder.delete(rel)
        self._prune(folder, "archive", set(wanted))
        return links

    def _drop_stale(self, folder: fmt.Folder, old: tuple[str, fmt.Parsed], review: Any,
                    notes: list[str]) -> None:
        rel, parsed = old
        decision = fmt.decide(parsed, parsed.title or "", parsed.rule or "")
        if decision.action and not _same(review, rel, decision.action) \
                and decision.action != review.get("action"):
            notes.append(f"{rel}: kept the decision made {_where(review)} at {review.get('at')} "
                         f"({review.get('action')}); the file's {decision.action} was not applied")
        folder.delete(rel)

    def _rules(self, folder: fmt.Folder, approved: Sequence[Lesson],
               written: list[str]) -> list[tuple[str, str]]:
        names = fmt.project_names(x.project for x in approved)
        by_file: dict[str, list[Waiting]] = {}
        scope_of: dict[str, str] = {}
        for lesson in sorted(approved, key=lambda x: (x.project or "", x.title.lower())):
            rel = "rules/" + names[lesson.project]
            scope_of[rel] = lesson.project or "global"
            by_file.setdefault(rel, []).append(review_item(lesson, {}, []))
        for rel, rules in by_file.items():
            if folder.write(rel, fmt.render_rules(scope_of[rel], rules)):
                written.append(rel)
        self._prune(folder, "rules", set(by_file))
        return [(rel, f"{scope_of[rel]} ({len(by_file[rel])})") for rel in sorted(by_file)]

    @staticmethod
    def _prune(folder: fmt.Folder, sub: str, keep: set[str]) -> None:
        """Remove the files Lore wrote under ``sub`` that are no longer wanted."""
        for rel in list(folder.markdown(sub)):
            if rel in keep:
                continue
            text = folder.read(rel)
            if text is not None and fmt.parse(text).ours:
                folder.delete(rel)


def _first_date(item: Waiting) -> str | None:
    dates = [e["date"] for e in item["evidence"] if e["date"]]
    return min(dates) if dates else None


def _where(review: Any) -> str:
    via = review.get("via") if isinstance(review, dict) else None
    return {"folder": "in the review folder", "terminal": "in `lore review -i`",
            "mcp": "by MCP"}.get(str(via), "with `lore review`")
