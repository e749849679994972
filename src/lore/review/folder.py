"""The markdown review folder (Obsidian-compatible): the file formats, the
parser that reads a person's decisions back, and the writes, which never leave the folder.

    <folder>/
      index.md                      counts and a link to every file below
      reviews/<date>-<slug>.md      one per rule waiting for review: tick a box, edit the text
      rules/global.md, rules/<project>.md   the approved rules, by project
      archive/<yyyy-mm>/<date>-<slug>.md    rules decided already, with their decision
      checks/<slug>.md              one per check on a rule waiting for review: approve or reject

A review file starts with frontmatter (``lore: review``, the rule's ``id``, when it was
``exported`` and short hashes of the title and rule text as written), then the title as a
heading, a ``## Rule`` section holding the editable text, the evidence quoted, and a
``## Decision`` section with ``- [ ] approve`` ``- [ ] reject`` ``- [ ] defer`` and a
``reason:`` line. :func:`parse` reads it back however it was edited: sections in any order,
notes added anywhere, CRLF line ends, a byte-order mark, boxes ticked with x or X.

File names are made here only, from the rule's date, a slug of ``[a-z0-9-]`` and the end of
its id, so no id or title can name a path outside the folder; :class:`Folder` checks every
path it writes or deletes against the folder all the same, and never follows a link out.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lore.apply.files import atomic_write
from lore.errors import InvalidInput
from lore.private import FILE_MODE, private_dir

MARKER = "review"              # frontmatter `lore: review` marks the files Lore owns here
ACTIONS = ("approve", "reject", "defer")
MAX_FILE = 1024 * 1024         # a review file is a few kilobytes; a larger one is not ours
_ID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$", re.IGNORECASE)  # a ULID
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
_HEADING = re.compile(r"^(#{1,6})(?:\s+(.*?))?\s*$")
_ESCAPED = re.compile(r"^\\+\s*#")  # a rule line escaped so that it cannot read as a heading
_BOX = re.compile(r"^\s*[-*+]\s+\[([ xX])\]\s*[*_]*\s*([A-Za-z]+)[*_]*(.*)$")
_REASON = re.compile(r"^\s*(?:[-*+]\s+)?[*_]*reason[*_]*\s*(?:\([^)]*\))?\s*[*_]*:[*_]*\s*(.*)$",
                     re.IGNORECASE)
_WORDS = {"approve": "approve", "approved": "approve", "reject": "reject",
          "rejected": "reject", "defer": "defer", "deferred": "defer"}
HINT = "<!-- Edit the text below to approve it reworded; the heading above is its title. -->"


# ---- names --------------------------------------------------------------------------------
def slug(text: str, limit: int = 50) -> str:
    """``[a-z0-9-]`` only, at most ``limit`` characters: "Use httpx, not requests" ->
    "use-httpx-not-requests". Accents fold to their letter; anything else becomes a hyphen."""
    ascii_ = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    out = re.sub(r"[^a-z0-9]+", "-", ascii_.lower()).strip("-")
    return out[:limit].rstrip("-") or "rule"


def day(stamp: str | None) -> str:
    """The date part of an ISO stamp, or 'undated'."""
    return stamp[:10] if stamp and _DATE.match(stamp) else "undated"


def review_name(lesson_id: str, title: str, date: str | None) -> str:
    """The file name of a rule's review (and archive) file: date, slug, the end of its id."""
    if not _ID.match(lesson_id):
        raise InvalidInput(f"'{lesson_id}' is not a rule id")
    return f"{day(date)}-{slug(title)}-{lesson_id[-6:].lower()}.md"


def project_names(projects: Iterable[str | None]) -> dict[str | None, str]:
    """A file name per project for rules/: its folder's name (global.md for global rules);
    two projects with the same folder name get a short hash of their path."""
    projects = sorted({p for p in projects}, key=lambda p: p or "")
    base = {p: "global" if p is None else slug(Path(p).name or p, 40) for p in projects}
    counts: dict[str, int] = {}
    for name in base.values():
        counts[name] = counts.get(name, 0) + 1
    out: dict[str | None, str] = {}
    for p, name in base.items():
        if p is not None and (counts[name] > 1 or name == "global"):
            name = f"{name}-{_hash(p)[:6]}"
        out[p] = f"{name}.md"
    return out


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def text_hash(text: str) -> str:
    """The hash of a text as a person would see it: line ends, trailing spaces and blank
    lines around it do not count."""
    return _hash(clean_text(text))


def clean_text(text: str) -> str:
    lines = [ln.rstrip() for ln in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return "\n".join(lines).strip()


# ---- writing ------------------------------------------------------------------------------
def _quote(text: str | None) -> str:
    """A block quote of ``text``; a quoted line can never be read as a heading or a box."""
    lines = clean_text(text or "").split("\n") or [""]
    return "\n".join(f"> {ln}" if ln else ">" for ln in lines)


def _escape_rule(text: str) -> str:
    # A rule line that starts like a heading would end the section when read back: it gets
    # a backslash (as Markdown escapes), and so does one that already starts with escapes.
    return "\n".join("\\" + ln if re.match(r"^\\*\s*#", ln) else ln
                     for ln in clean_text(text).split("\n"))


def _unescape_rule(line: str) -> str:
    return line[1:] if _ESCAPED.match(line) else line


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())


def _frontmatter(fields: Mapping[str, Any]) -> str:
    lines = ["---", f"lore: {MARKER}"]
    for k, v in fields.items():
        if v is None:
            continue
        value = str(v)
        if not re.fullmatch(r"[\w./:+@ -]*", value) or value != value.strip():
            value = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        lines.append(f"{k}: {value}")
    return "\n".join([*lines, "---", ""])


def facts(item: Mapping[str, Any]) -> str:
    """One line of what is known: score, sightings, scope, file types, status, re-corrections."""
    parts = []
    if item.get("score") is not None:
        parts.append(f"**Score:** {item['score']:.2f}")
    parts.append(f"**Seen:** {item.get('occurrences', 1)}× in {item.get('sessions', 0)} "
                 f"session(s)")
    parts.append(f"**Scope:** {item.get('scope') or 'global'}")
    if item.get("file_types"):
        parts.append("**File types:** " + ", ".join(f"`{t}`" for t in item["file_types"]))
    parts.append(f"**Status:** {item.get('status')}")
    if item.get("recorrections"):
        parts.append(f"**Re-corrected:** {item['recorrections']}×")
    return " | ".join(parts)


def render_evidence(evidence: Sequence[Mapping[str, Any]]) -> str:
    out = [f"## Evidence ({len(evidence)} quote{'s' if len(evidence) != 1 else ''})", ""]
    for ev in evidence:
        where = " — ".join(str(x) for x in (day(ev.get("date")) if ev.get("date") else None,
                                            ev.get("session") and f"session {ev['session']}",
                                            ev.get("project")) if x)
        out += [f"### {_one_line(where) or 'recorded by hand'}", ""]
        if ev.get("agent_turn"):
            out += ["**Agent:**", "", _quote(ev["agent_turn"]), ""]
        out += ["**You:**", "", _quote(ev.get("said")), ""]
    return "\n".join(out)


def render_review(item: Mapping[str, Any], exported: str) -> str:
    """A rule waiting for review (a :func:`lore.core.learner.review_item`) as its file."""
    title, rule = _one_line(item["title"]), clean_text(item.get("rule") or "")
    head = _frontmatter({"id": item["id"], "exported": exported, "status": item.get("status"),
                         "title_hash": text_hash(title), "rule_hash": text_hash(rule)})
    body = [f"# {title}", "", facts(item), ""]
    if item.get("conflicts"):
        body += ["Conflicts with: " + ", ".join(item["conflicts"]), ""]
    if item.get("why_candidate"):
        body += [f"Kept as a candidate: {_one_line(item['why_candidate'])}", ""]
    if item.get("active_by_repetition") and not item.get("needs_approval"):
        body += ["**Active by repetition:** its score made it active and the agent is told it; "
                 "nobody confirmed it yet.", ""]
    if item.get("needs_approval"):
        body += [f"Told to the agent only once approved: {_one_line(item['needs_approval'])}", ""]
    body += ["## Rule", "", HINT, "", _escape_rule(rule), "",
             render_evidence(item.get("evidence") or []),
             "## Decision", "", "Tick one box; an edited rule text is approved as edited.", "",
             *(f"- [ ] {a}" for a in ACTIONS), "", "reason: ", ""]
    return head + "\n" + "\n".join(body)


def render_check(check: Mapping[str, Any], exported: str) -> str:
    """A check waiting for review (``lore.core.checks.Checks.waiting``) as its file: the check
    in words, its rule, what it would have matched, and the boxes."""
    replay = check.get("replay") or {}
    head = _frontmatter({"kind": "check", "id": check["id"], "rule_id": check["lesson_id"],
                         "exported": exported, "mode": check.get("mode")})
    body = [f"# {_one_line(check['words'])}", "",
            f"**Rule:** {_one_line(check.get('rule'))} | **Scope:** {check.get('scope') or 'global'}"
            f" | **Mode:** {check.get('mode')}", ""]
    if check.get("note"):
        body += [f"Proposed for {_one_line(check['note'])} ({check.get('origin')}).", ""]
    flagged = " **Flagged:** it would have stopped calls the user was content with." \
        if replay.get("flagged") else ""
    body += ["## Replay", "",
             f"Would have matched {replay.get('matched', 0)} of {replay.get('calls', 0)} recorded "
             f"tool calls in {replay.get('sessions', 0)} sessions; {replay.get('accepted', 0)} of "
             f"them calls the user accepted.{flagged}", ""]
    for m in replay.get("accepted_examples") or replay.get("examples") or []:
        tag = "accepted" if m.get("accepted") else ("refused" if m.get("refused") else "corrected")
        body.append(f"- {day(m.get('at'))} {m.get('tool')}: `{_one_line(m.get('matched'))[:120]}` "
                    f"({tag})")
    body += ["", "## Decision", "", "Tick one box (`lore guard mode ID remind|block` changes the "
             "mode).", "", "- [ ] approve", "- [ ] reject", ""]
    return head + "\n" + "\n".join(body)


def check_name(check_id: str, words: str) -> str:
    """The file name of a check's review file: a slug of the check in words and its id's end."""
    if not _ID.match(check_id):
        raise InvalidInput(f"'{check_id}' is not a check id")
    return f"{slug(words)}-{check_id[-6:].lower()}.md"


def render_archived(item: Mapping[str, Any], review: Mapping[str, Any]) -> str:
    """A decided rule: what it says, the decision (action, date, reason) and its evidence."""
    head = _frontmatter({"id": item["id"], "archived": "true", "decision": review.get("action"),
                         "decided": review.get("at")})
    decision = f"**Decision:** {review.get('action')} on {day(review.get('at'))}"
    if review.get("via"):
        decision += f" (in the {review['via']})"
    body = [f"# {_one_line(item['title'])}", "", facts(item), "", decision, ""]
    if review.get("reason"):
        body += [f"**Reason:** {_one_line(review['reason'])}", ""]
    body += ["## Rule", "", _escape_rule(item.get("rule") or ""), "",
             render_evidence(item.get("evidence") or [])]
    return head + "\n" + "\n".join(body)


def render_rules(scope: str, rules: Sequence[Mapping[str, Any]]) -> str:
    """The approved rules of one project (or the global ones), as `lore apply` writes them."""
    head = _frontmatter({"scope": scope, "rules": len(rules)})
    body = [f"# Approved rules: {scope}", ""]
    for r in rules:
        types = f" (`{'`, `'.join(r['file_types'])}`)" if r.get("file_types") else ""
        body += [f"## {_one_line(r['title'])}{types}", "", _escape_rule(r.get("rule") or ""), "",
                 f"<!-- id: {r['id']} -->", ""]
    return head + "\n" + "\n".join(body)


def render_index(counts: Mapping[str, int], waiting: Sequence[tuple[str, str]],
                 rules: Sequence[tuple[str, str]], archived: Sequence[tuple[str, str]],
                 exported: str, checks: Sequence[tuple[str, str]] = ()) -> str:
    """Counts and a link to each file; links are relative paths, which Obsidian follows."""
    head = _frontmatter({"exported": exported, **{k: v for k, v in counts.items()}})
    body = ["# Lore review", "",
            f"{counts.get('waiting', 0)} waiting, {counts.get('approved', 0)} approved, "
            f"{counts.get('archived', 0)} decided. Tick a box in a review file (or edit its rule "
            "text), then run `lore review sync`.", "", "## Waiting", ""]
    body += [f"- [{_link_text(t)}]({_link(p)})" for p, t in waiting] or ["Nothing waits."]
    if checks:
        body += ["", "## Checks waiting", ""]
        body += [f"- [{_link_text(t)}]({_link(p)})" for p, t in checks]
    body += ["", "## Approved rules", ""]
    body += [f"- [{_link_text(t)}]({_link(p)})" for p, t in rules] or ["None yet."]
    body += ["", "## Decided", ""]
    body += [f"- [{_link_text(t)}]({_link(p)})" for p, t in archived] or ["None yet."]
    return head + "\n" + "\n".join(body) + "\n"


def _link(path: str) -> str:
    return path.replace(" ", "%20")


def _link_text(text: str) -> str:
    return re.sub(r"([\[\]])", r"\\\1", _one_line(text))


# ---- reading ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Parsed:
    """What a review file holds, as a person left it."""

    fields: dict[str, str]          # the frontmatter
    title: str | None               # the first level-1 heading
    rule: str | None                # the ## Rule section, comments and escapes removed
    ticked: tuple[str, ...]         # the actions whose box is ticked, in file order
    reason: str

    @property
    def id(self) -> str | None:
        value = self.fields.get("id", "").strip()
        return value if _ID.match(value) else None

    @property
    def ours(self) -> bool:
        return self.fields.get("lore") == MARKER


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do with one review file: an action (None: nothing was decided), the new
    title and text for an edit, the reason, and a problem that blocks any decision."""

    action: str | None = None
    title: str | None = None
    content: str | None = None
    reason: str | None = None
    problem: str = ""
    note: str = ""


def parse(text: str) -> Parsed:
    """Read a review file however it was edited; never raises."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    fields, body = _split_frontmatter(text)
    title: str | None = None
    rule_lines: list[str] | None = None
    in_rule = False
    ticked: list[str] = []
    reason = ""
    fence = False
    for line in body.split("\n"):
        if line.lstrip().startswith(("```", "~~~")) and not in_rule:
            fence = not fence
            continue
        if fence:
            continue
        heading = _HEADING.match(line)
        if heading:
            level, name = len(heading.group(1)), (heading.group(2) or "").strip()
            in_rule = name.strip("*_ ").lower() == "rule" and level >= 2
            if in_rule and rule_lines is None:
                rule_lines = []
            elif level == 1 and title is None:
                title = name
            continue
        if in_rule:
            assert rule_lines is not None
            rule_lines.append(line)
            continue
        if line.lstrip().startswith(">"):
            continue  # quoted evidence: the user's words, never a decision
        box = _BOX.match(line)
        if box:
            action = _WORDS.get(box.group(2).lower())
            if action and box.group(1) in "xX":
                ticked.append(action)
                rest = box.group(3).strip(" :-—–()_*")
                if action == "reject" and rest and not reason and "reason" not in rest.lower():
                    reason = rest
            continue
        found = _REASON.match(line)
        if found and not reason:
            reason = found.group(1).strip().strip("_`* ")
    rule = None
    if rule_lines is not None:
        rule = clean_text("\n".join(_unescape_rule(ln) for ln in rule_lines
                                    if ln.strip() != HINT))
    return Parsed(fields, title, rule, tuple(ticked), reason)


def _split_frontmatter(text: str) -> tuple[dict[str, str], str]:
    lines = text.split("\n")
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    if start >= len(lines) or lines[start].strip() != "---":
        return {}, text
    for end in range(start + 1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            fields = {}
            for ln in lines[start + 1 : end]:
                key, sep, value = ln.partition(":")
                if sep and key.strip() and not key.startswith((" ", "\t", "-")):
                    fields[key.strip().lower()] = _unquote(value.strip())
            return fields, "\n".join(lines[end + 1 :])
    return {}, text


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        inner = value[1:-1]
        return inner.replace('\\"', '"').replace("\\\\", "\\") if value[0] == '"' else inner
    return value


def decide(parsed: Parsed, current_title: str, current_rule: str) -> Decision:
    """The decision a file holds. A ticked box decides; two different boxes decide nothing
    (a problem to report). A changed title or rule text (against the hashes written in the
    file, else the rule as stored now) is an edit, approved; with reject or defer ticked
    the edit is dropped, and the note says so."""
    reason = parsed.reason or None
    actions = list(dict.fromkeys(parsed.ticked))
    if len(actions) > 1:
        return Decision(problem=f"{' and '.join(actions)} are both ticked; tick one")
    title = _one_line(parsed.title)
    rule = parsed.rule if parsed.rule is not None else None
    title_base = parsed.fields.get("title_hash") or text_hash(_one_line(current_title))
    rule_base = parsed.fields.get("rule_hash") or text_hash(current_rule)
    new_title = title if title and text_hash(title) != title_base else None
    new_rule = rule if rule is not None and text_hash(rule) != rule_base else None
    if new_rule == "":
        new_rule = None
        empty = "the rule text is empty"
    else:
        empty = ""
    if new_rule and new_title is None:
        # The rule's line in CLAUDE.md is its title: an edited rule text that only the body
        # would carry never reaches the agent. The title follows the edit, unless a person
        # edited the title too.
        new_title = title_of(new_rule) or None
    edited = new_title is not None or new_rule is not None
    action = actions[0] if actions else None
    if action in ("reject", "defer"):
        note = "the edited text was not kept" if edited else ""
        return Decision(action, reason=reason, note=note)
    if edited:
        return Decision("edit", title=new_title, content=new_rule, reason=reason, note=empty)
    if empty and action == "approve":
        return Decision(problem=f"{empty}; write the rule or tick reject")
    return Decision(action, reason=reason)


_SENTENCE_END = re.compile(r"(?<=[^.][.!?])\s")  # not after an ellipsis
TITLE_MAX = 160


def title_of(rule: str) -> str:
    """The line a rule text gives: its first line (markdown bullet and quote marks gone), cut
    at its first sentence's end when it goes on, at most ``TITLE_MAX`` characters cut at a
    space; "" for a text without words."""
    first = next((ln for ln in clean_text(rule).split("\n") if ln.strip()), "")
    first = re.sub(r"^\s*(?:[-*+]|\d+[.)]|>)\s+", "", first).strip()
    first = _SENTENCE_END.split(first, 1)[0].strip()
    if first.endswith(".") and not first.endswith(".."):
        first = first[:-1].rstrip()
    if len(first) > TITLE_MAX:
        cut = first[:TITLE_MAX]
        first = (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip(",;:") + "…"
    return first if re.search(r"\w", first) else ""


# ---- the folder ----------------------------------------------------------------------------
class Folder:
    """The review folder: every path it writes, reads or deletes stays inside it.

    With ``check_only``, writes and deletes change nothing: each path is checked as it would
    be (a link out of the folder refuses), so a caller can try a whole export first and write
    only when every path is safe."""

    def __init__(self, root: Path, *, create: bool = True, check_only: bool = False) -> None:
        root = root.expanduser()
        if root.exists() and not root.is_dir():
            raise InvalidInput(f"{root} is not a folder; give a folder for the review files")
        if not create and not root.is_dir():
            raise InvalidInput(f"no review folder at {root}; run `lore review sync --only export` first")
        self.check_only = check_only
        self.root = root.resolve() if check_only else private_dir(root).resolve()

    def path(self, relative: str) -> Path:
        """The folder's file ``relative`` (a/b.md); a path leaving the folder is refused."""
        parts = relative.split("/")
        if relative.startswith("/") or any(p in ("", ".", "..") or "\\" in p or "\0" in p
                                           for p in parts):
            raise InvalidInput(f"'{relative}' is not a file name inside the review folder")
        target = self.root.joinpath(*parts)
        real = target.resolve()
        if self.root not in real.parents:
            raise InvalidInput(f"{target} leads outside the review folder {self.root}; remove "
                               "the link")
        return target

    def read(self, relative: str) -> str | None:
        """The file's text; None when absent, a link, too large or not UTF-8 text."""
        path = self.path(relative)
        try:
            if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_FILE:
                return None
            return path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def write(self, relative: str, text: str, same: Any = None) -> bool:
        """Write atomically unless the file already says the same (``same(old, new)``, or
        equal text); True when written. A link in the folder is replaced, never followed."""
        path = self.path(relative)
        old = self.read(relative)
        if old is not None and (old == text if same is None else same(old, text)):
            return False
        if self.check_only:
            return True
        private_dir(path.parent)
        if path.is_symlink():
            path.unlink()
        atomic_write(path, text.encode("utf-8"), new_mode=FILE_MODE)  # quotes of the user's
        return True

    def delete(self, relative: str) -> None:
        path = self.path(relative)
        if self.check_only:
            return
        if path.is_symlink() or path.is_file():
            path.unlink()
        parent = path.parent
        while parent != self.root:  # an archive month left empty goes too
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent

    def markdown(self, sub: str) -> Iterator[str]:
        """The .md files under ``sub`` (relative paths, sorted), links not followed."""
        base = self.path(sub)
        if base.is_symlink() or not base.is_dir():
            return
        for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
            dirnames.sort()
            for name in sorted(filenames):
                full = Path(dirpath, name)
                if name.endswith(".md") and not name.startswith(".") and not full.is_symlink():
                    yield full.relative_to(self.root).as_posix()


def same_but_stamp(old: str, new: str) -> bool:
    """Equal but for the ``exported:`` line: an unchanged rule keeps its file (and its date)."""
    def strip(t: str) -> str:
        return re.sub(r"(?m)^exported: .*$", "", t.replace("\r\n", "\n"))

    return strip(old) == strip(new)
