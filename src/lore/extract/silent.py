"""Silent fixes: the developer reverts or rewrites what the agent wrote and says nothing.

The agent's edits are recorded as they happen (tool, file, the text it replaced, the text it
wrote). Later — at a hook in the same project, at session end, or in a later commit — each
edit is compared with what the file holds then:

* the agent's text is still there, exactly or up to a formatting change → nothing to learn;
* the text the agent replaced is back and the agent's text is gone → ``reverted``;
* a region similar to the agent's text stands where it was → ``rewritten`` (the user changed
  the agent's lines into something else; that region is what the user wrote);
* nothing similar remains → ``removed``.

Formatting-only differences (whitespace, line breaks, blank lines, quote style, trailing
commas and semicolons) never count. Edits too small to judge (fewer than
:data:`MIN_CHARS` characters once stripped) are skipped: a changed ``)`` or ``x`` says
nothing about a preference and would match too much of any file.

Stdlib only (difflib, subprocess): the worker calls this at session boundaries.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import stat
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from lore.redact import redact

MIN_CHARS = 8  # an agent text shorter than this (stripped) is not judged
SIMILAR = 0.5  # token similarity from which a region counts as the agent's text rewritten
TEXT_CAP = 4000  # agent_text / user_text are cut to this many characters
DIFF_CAP = 4000
MAX_FILE_BYTES = 2 * 1024 * 1024
WHOLE_FILE_TOOLS = frozenset({"write"})
_MAX_CANDIDATES = 64  # exact similarity computed for at most this many windows per search

# Environment variables that would point git at another repository than the file's own.
_GIT_REDIRECTS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
                  "GIT_COMMON_DIR", "GIT_NAMESPACE")


@dataclass(frozen=True, slots=True)
class AgentWrite:
    """One change the agent made to a file (MultiEdit: one per edit)."""

    file_path: str
    tool: str
    old_text: str | None
    new_text: str | None
    session_id: str | None = None
    message_uuid: str | None = None
    timestamp: str | None = None
    edit_id: int | None = None  # row id in the store, passed through

    @property
    def whole_file(self) -> bool:
        return self.tool.lower() in WHOLE_FILE_TOOLS


@dataclass(frozen=True, slots=True)
class SilentFix:
    """An agent write the developer reverted, rewrote or removed afterwards."""

    write: AgentWrite
    kind: str  # "reverted" | "rewritten" | "removed"
    agent_text: str  # the agent's text (capped)
    user_text: str  # what stands there now: the most similar region ("" when removed), capped
    diff: str  # unified diff agent_text -> user_text, labelled "agent" / "now", capped
    file_type: str | None  # extension without dot, lower case


# ---- formatting-insensitive comparison ------------------------------------------------------
_TRAILING_COMMA = re.compile(r"[,;]+(?=\s*(?:[)\]}]|\Z))")
_LINE_END_SEMICOLON = re.compile(r";+[ \t]*(?=\r?\n)")
_WS = re.compile(r"\s+")
_WORD = re.compile(r"\w+")


def _canon(text: str) -> str:
    """``text`` with every formatting choice taken out: quote style unified, trailing commas
    and semicolons dropped, all whitespace (so indentation, line breaks, blank lines) removed."""
    text = text.replace("'", '"')
    text = _LINE_END_SEMICOLON.sub("", text)
    text = _TRAILING_COMMA.sub("", text)
    return _WS.sub("", text)


def _canon_line(line: str) -> str:
    return _WS.sub("", line.replace("'", '"')).rstrip(",;")


def is_trivial_change(a: str, b: str) -> bool:
    """True when a and b differ only in whitespace, line breaks, quote style (' vs "), trailing
    commas/semicolons, or blank lines."""
    return a == b or _canon(a) == _canon(b)


def _substantial(text: str | None) -> bool:
    return text is not None and len(text.strip()) >= MIN_CHARS


class _Text:
    """A file's content with its formatting-free form, computed once per check."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.canon = _canon(text)
        self.lines = text.splitlines()

    def contains(self, needle: str) -> bool:
        return needle in self.text or _canon(needle) in self.canon


# ---- where the agent's text went -----------------------------------------------------------
def _tokens(line: str) -> list[str]:
    """The words of a line: names, keywords, numbers. Punctuation is left out, or any two
    lines of code (``a = f(b, "c")``, ``x = g(y, "z")``) would look alike."""
    return _WORD.findall(line)


def _window_sizes(n: int, limit: int) -> list[int]:
    sizes = {max(1, round(n * f)) for f in (0.5, 0.75, 1.0, 1.25, 1.5)} | {max(1, n - 1), n + 1}
    return sorted({min(s, limit) for s in sizes})


def _bounds(useful: Sequence[Sequence[str]], sizes: Sequence[int], want: Counter[str], n_agent: int,
            size: int) -> list[float]:
    """For each window of ``size`` rows, an upper bound of its similarity with the agent's
    tokens (difflib's quick ratio: the multiset overlap), updated as the window slides."""
    have: dict[str, int] = {}
    overlap = total = 0
    out = []
    for r in range(len(sizes)):
        total += sizes[r]
        for t in useful[r]:
            c = have.get(t, 0)
            if c < want[t]:
                overlap += 1
            have[t] = c + 1
        if r >= size:
            gone = r - size
            total -= sizes[gone]
            for t in useful[gone]:
                c = have[t] - 1
                have[t] = c
                if c < want[t]:
                    overlap -= 1
        if r >= size - 1:
            out.append(2.0 * overlap / (n_agent + total))
    return out


def _most_similar(needle: str, lines: Sequence[str]) -> tuple[int, int, float]:
    """The run of ``lines`` most similar to ``needle``: (start, end, ratio), end exclusive.

    Windows of about as many non-blank lines as ``needle`` slide over the file. Each gets a
    cheap upper bound (token multiset overlap, kept up to date as the window slides), and the
    exact ratio — difflib over words, so ``requests.get(url)`` and ``httpx.get(url)`` are
    close — is computed only for the windows whose bound can still beat the best so far.
    """
    agent = _tokens(needle)
    rows = [(i, toks) for i, line in enumerate(lines) if (toks := _tokens(line))]
    if not agent or not rows:
        return 0, 0, 0.0
    want = Counter(agent)
    n_agent = len(agent)
    useful = [[t for t in toks if t in want] for _, toks in rows]
    n_lines = sum(1 for line in needle.splitlines() if line.strip()) or 1
    sizes = [len(toks) for _, toks in rows]
    candidates: list[tuple[float, int, int]] = []  # (bound, first row, rows in window)
    for size in _window_sizes(n_lines, len(rows)):
        candidates.extend((bound, start, size)
                          for start, bound in enumerate(_bounds(useful, sizes, want, n_agent, size)))
    candidates.sort(key=lambda c: (-c[0], abs(c[2] - n_lines), c[1]))
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(agent)
    best = (0, 0, 0.0)
    for bound, start, size in candidates[:_MAX_CANDIDATES]:
        if bound <= best[2]:
            break
        matcher.set_seq1([t for _, toks in rows[start:start + size] for t in toks])
        ratio = matcher.ratio()
        if ratio > best[2]:
            best = (rows[start][0], rows[start + size - 1][0] + 1, ratio)
    return best


def _changes(a_lines: Sequence[str], b_lines: Sequence[str]) -> list[tuple[int, int, int, int]]:
    """Where ``a`` was changed in ``b``, ignoring lines ``b`` only added and formatting: a list
    of (a_start, a_end, b_start, b_end) line ranges (end exclusive) in the original lines."""
    a_idx = [i for i, line in enumerate(a_lines) if _canon_line(line)]
    b_idx = [i for i, line in enumerate(b_lines) if _canon_line(line)]
    matcher = difflib.SequenceMatcher(None, [_canon_line(a_lines[i]) for i in a_idx],
                                      [_canon_line(b_lines[i]) for i in b_idx])
    out = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("equal", "insert"):
            continue
        a_start, a_end = a_idx[i1], a_idx[i2 - 1] + 1
        if j2 > j1:
            b_start, b_end = b_idx[j1], b_idx[j2 - 1] + 1
        else:
            b_start = b_end = b_idx[j1] if j1 < len(b_idx) else len(b_lines)
        if tag == "replace" and is_trivial_change("\n".join(a_lines[a_start:a_end]),
                                                  "\n".join(b_lines[b_start:b_end])):
            continue
        out.append((a_start, a_end, b_start, b_end))
    return out


# ---- judging one write ---------------------------------------------------------------------
def _cap(text: str, limit: int = TEXT_CAP) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _diff(agent: str, user: str) -> str:
    lines = list(difflib.unified_diff(agent.splitlines(), user.splitlines(), "agent", "now",
                                      lineterm=""))
    out, size = [], 0
    for line in lines:
        if size + len(line) + 1 > DIFF_CAP:
            out.append("… (diff cut)")
            break
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)


def _file_type(path: str) -> str | None:
    return Path(path).suffix.lstrip(".").lower() or None


def _fix(write: AgentWrite, kind: str, agent: str, user: str) -> SilentFix:
    return SilentFix(write=write, kind=kind, agent_text=_cap(agent), user_text=_cap(user),
                     diff=_diff(agent, user), file_type=_file_type(write.file_path))


def _notebook_sources(content: str) -> str | None:
    """The cell sources of a Jupyter notebook, as NotebookEdit writes them; None if not one."""
    try:
        data = json.loads(content)
    except ValueError:
        return None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        return None
    parts = []
    for cell in cells:
        source = cell.get("source") if isinstance(cell, dict) else None
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        if isinstance(source, str):
            parts.append(source)
    return "\n\n".join(parts)


def check_write(write: AgentWrite, current: str | None) -> SilentFix | None:
    """Compare one agent write with the file's current content.

    None when ``current`` is None (the file is gone: not judged), when the agent's text is still
    there (exactly, up to a formatting change, or with lines only added around or inside it),
    or when the write is too small to judge: both its new and old text shorter than
    :data:`MIN_CHARS` once stripped. A deletion by the agent (empty new text) can only be found
    ``reverted``.

    Write (whole file): the two contents are diffed line by line; the span from the first to the
    last real change is ``rewritten`` into what stands there now, or ``removed`` when nothing
    stands there (a write has no old text, so it is never ``reverted``).

    Edit, MultiEdit, NotebookEdit: ``reverted`` when the old text is in the file again and the
    new text is not (an edit's old text is unique in the file when the agent replaces it, so
    finding it again means it came back). Otherwise the region of the file most similar to the
    agent's text is found; a similarity of :data:`SIMILAR` or more makes it ``rewritten`` with
    that region as the user's text, below that the agent's text is ``removed``. When the agent
    only added to the old text (the old text is inside the new), its addition is what is looked
    for: rewritten, or ``removed`` when it is gone.
    """
    if current is None:
        return None
    current = redact(current)  # the agent's text was stored redacted: compare like with like
    new = write.new_text or ""
    if write.whole_file:
        return _check_whole_file(write, new, current) if _substantial(new) else None
    if write.file_path.lower().endswith(".ipynb") and write.tool == "NotebookEdit":
        current = _notebook_sources(current) or current
    old = write.old_text or ""
    now = _Text(current)
    if (_substantial(old) and not _contains(new, old) and now.contains(old)
            and (not now.contains(new) or _contains(old, new))):
        if old in current:
            return _fix(write, "reverted", new, old)
        start, end, _ = _most_similar(old, now.lines)
        return _fix(write, "reverted", new, "\n".join(now.lines[start:end]))
    if not _substantial(new) or now.contains(new):
        return None
    agent = new
    if old.strip() and old in new:
        added = new.replace(old, "", 1).strip("\r\n")
        if _substantial(added):
            agent = added
            if now.contains(agent):
                return None  # the addition stands; what changed around it was not the agent's
    start, end, ratio = _most_similar(agent, now.lines)
    if ratio >= SIMILAR:
        wide_start = max(0, start - (end - start) - 2)
        wide_end = min(len(now.lines), end + (end - start) + 2)
        if not _changes(agent.splitlines(), now.lines[wide_start:wide_end]):
            return None  # every line of the agent's text is still there, lines were only added
        return _fix(write, "rewritten", agent, "\n".join(now.lines[start:end]))
    return _fix(write, "removed", agent, "")


def _contains(haystack: str, needle: str) -> bool:
    return needle in haystack or _canon(needle) in _canon(haystack)


def _check_whole_file(write: AgentWrite, new: str, current: str) -> SilentFix | None:
    if new in current or is_trivial_change(new, current) or _canon(new) in _canon(current):
        return None
    a_lines, b_lines = new.splitlines(), current.splitlines()
    changes = _changes(a_lines, b_lines)
    if not changes:
        return None
    a_start, b_start = changes[0][0], changes[0][2]
    a_end, b_end = changes[-1][1], changes[-1][3]
    agent = "\n".join(a_lines[a_start:a_end])
    user = "\n".join(b_lines[b_start:b_end])
    return _fix(write, "rewritten" if user.strip() else "removed", agent, user)


# ---- which writes to judge -----------------------------------------------------------------
def latest_writes(writes: Sequence[AgentWrite]) -> list[AgentWrite]:
    """The writes still worth judging, in their order (the input is taken as chronological).

    A write is dropped when the agent itself later overwrote it: a later Write of the whole
    file, or a later edit of the same file whose old text contains this write's new text.
    A later edit that changes only part of an earlier write's text (its old text lies inside
    the earlier new text) is folded into the earlier write, whose expected text becomes the
    edited one; the later edit is then judged through it, not on its own. Without that, the
    agent's own second thoughts would look like the user's rewrites.
    """
    kept: list[AgentWrite | None] = []
    for w in writes:
        path = os.path.normpath(w.file_path)
        same = [i for i, k in enumerate(kept) if k is not None and os.path.normpath(k.file_path) == path]
        if w.whole_file:
            for i in same:
                kept[i] = None
            kept.append(w)
            continue
        old, folded = w.old_text, False
        if old:
            for i in same:
                earlier = kept[i]
                assert earlier is not None
                text = earlier.new_text or ""
                if text.strip() and text in old:
                    kept[i] = None
                elif old in text:
                    kept[i] = replace(earlier, new_text=text.replace(old, w.new_text or "", 1))
                    folded = True
        if not folded:
            kept.append(w)
    return [k for k in kept if k is not None]


def read_file(path: str) -> str | None:
    """The file as text (UTF-8, undecodable bytes replaced); None when it is missing, not a
    regular file, larger than 2 MB or unreadable."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
            return None
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except (OSError, ValueError):
        return None
    if len(data) > MAX_FILE_BYTES:
        return None
    return data.decode("utf-8", errors="replace")


def check_writes(writes: Sequence[AgentWrite],
                 read: Callable[[str], str | None] | None = None) -> list[SilentFix]:
    """:func:`latest_writes`, then :func:`check_write` each against ``read(path)`` (default:
    :func:`read_file`, the file on disk). Each file is read once."""
    reader = read or read_file
    contents: dict[str, str | None] = {}
    fixes = []
    for w in latest_writes(writes):
        if w.file_path not in contents:
            contents[w.file_path] = reader(w.file_path)
        fix = check_write(w, contents[w.file_path])
        if fix is not None:
            fixes.append(fix)
    return fixes


# ---- the file in a later commit ------------------------------------------------------------
def _epoch(iso: str) -> float | None:
    try:
        at = datetime.fromisoformat(iso.strip())
    except ValueError:
        return None
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)  # recorded times without an offset are UTC
    return at.timestamp()


def _git(git: str, args: Sequence[str], deadline: float) -> bytes | None:
    left = deadline - time.monotonic()
    if left <= 0:
        return None
    env = {k: v for k, v in os.environ.items() if k not in _GIT_REDIRECTS}
    env["GIT_TERMINAL_PROMPT"] = "0"
    try:
        done = subprocess.run([git, *args], capture_output=True, timeout=left, env=env,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return done.stdout if done.returncode == 0 else None


def file_at_commit_after(path: str | Path, after_iso: str, *, git: str = "git",
                         timeout: float = 5.0) -> str | None:
    """The file's content in the first commit that touched it after ``after_iso`` (author or
    committer date, strictly later), or None when there is no such commit, the file was deleted
    by it, the path is not in a git work tree, the time cannot be read, or git is missing,
    fails or takes longer than ``timeout`` seconds in all. Never raises for these."""
    since = _epoch(after_iso)
    if since is None:
        return None
    deadline = time.monotonic() + timeout
    file = Path(os.path.abspath(path))
    try:
        folder = file.parent.resolve()
    except OSError:
        return None
    if not folder.is_dir():
        return None
    top_out = _git(git, ["-C", str(folder), "rev-parse", "--show-toplevel"], deadline)
    if not top_out:
        return None
    try:
        top = Path(top_out.decode("utf-8", errors="surrogateescape").strip()).resolve()
        rel = (folder / file.name).relative_to(top).as_posix()
    except (OSError, ValueError):
        return None
    stamp = datetime.fromtimestamp(int(since), UTC).strftime("%Y-%m-%d %H:%M:%S +0000")
    log = _git(git, ["-C", str(top), "log", "--format=%H %at %ct", "--reverse", f"--since={stamp}",
                     "--", rel], deadline)
    if log is None:
        return None
    for row in log.decode("ascii", errors="replace").splitlines():
        parts = row.split()
        if len(parts) != 3 or not (parts[1].isdigit() and parts[2].isdigit()):
            continue
        if max(int(parts[1]), int(parts[2])) > since:
            shown = _git(git, ["-C", str(top), "show", f"{parts[0]}:{rel}"], deadline)
            return None if shown is None else shown.decode("utf-8", errors="replace")
    return None


# ---- for people ------------------------------------------------------------------------------
def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def first_changed_lines(agent: str, user: str) -> tuple[str, str]:
    """The first line of ``agent`` that changed and what replaced it ("" when nothing did)."""
    a_lines, b_lines = agent.splitlines(), user.splitlines()
    matcher = difflib.SequenceMatcher(None, [line.strip() for line in a_lines],
                                      [line.strip() for line in b_lines], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        a = next((line.strip() for line in a_lines[i1:i2] if line.strip()), "")
        b = next((line.strip() for line in b_lines[j1:j2] if line.strip()), "")
        if a or b:
            return a, b
    return "", ""


def summary(fix: SilentFix, root: str | Path | None = None) -> str:
    """One line for people, e.g. "Rewrote the agent's change to src/app.py: `requests.get(` ->
    `httpx.get(`". The path is shown relative to ``root`` when it lies inside it."""
    path = fix.write.file_path
    if root is not None:
        try:
            path = Path(path).relative_to(root).as_posix()
        except ValueError:
            pass
    a, b = first_changed_lines(fix.agent_text, fix.user_text)
    verb = {"reverted": "Reverted", "removed": "Removed"}.get(fix.kind, "Rewrote")
    head = f"{verb} the agent's change to {path}"
    if fix.kind == "removed" or not b:
        line = f"{head}: `{_clip(a, 70)}`" if a else head
    elif not a:
        line = f"{head}: added `{_clip(b, 70)}`"
    else:
        line = f"{head}: `{_clip(a, 60)}` -> `{_clip(b, 60)}`"
    return _clip(line, 160)
