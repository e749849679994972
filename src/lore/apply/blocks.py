"""Lore's managed block in a markdown file: find it, insert it, replace it, remove it.

The block sits between two HTML comment lines. Claude Code strips block-level HTML comments
before it shows a file to the model, so the markers cost no context. Everything outside the
block is kept byte for byte: a UTF-8 BOM, CRLF or mixed line endings, a missing final
newline, tabs and trailing spaces. Markers inside fenced code blocks (a file that documents
them) are text, not markers. A file whose markers do not pair up is an error that names the
file and the line; nothing is changed.

Inserting appends the block after one blank line, in the file's own newline style. A file
without a final newline keeps having none, so removing the block restores the original
bytes exactly.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from lore.errors import InvalidInput

NOTE = "Lore manages this block: do not edit it by hand, Lore rewrites it (see lore apply)"
END_MARKER = "<!-- lore:end -->"
# A marker is a whole line (up to three spaces of indent, as markdown allows) holding one
# comment. "created" after lore:begin records that Lore created the file, so Lore may delete
# it once the block is gone and nothing else is left.
_BEGIN = re.compile(r" {0,3}<!--\s*lore:begin(?P<created>\s+created\b)?(?:\s[^\n]*)?-->[ \t]*")
_END = re.compile(r" {0,3}<!--\s*lore:end\b[^\n]*-->[ \t]*")
_FENCE = re.compile(r" {0,3}(?P<fence>`{3,}|~{3,})")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\n|\r)?")
_NEWLINES = ("\r\n", "\n", "\r")
# YAML frontmatter at the top of a markdown file (SKILL.md, memory entries); group 1 is the YAML.
FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)


class MalformedBlock(InvalidInput):
    """Lore's markers in a file do not form exactly one well-formed block."""


def begin_marker(created: bool = False) -> str:
    return f"<!-- lore:begin{' created' if created else ''} · {NOTE} -->"


@dataclass(frozen=True, slots=True)
class Block:
    """Where the block is: ``text[start:end]`` is the begin line through the end line's newline."""

    start: int
    end: int
    line: int  # 1-based line of the begin marker
    created: bool
    body: str  # the text between the marker lines
    ends_with_newline: bool


def lines(text: str) -> Iterator[tuple[int, str, str]]:
    """(offset, line without its newline, newline) for each line; only \\r\\n, \\n and \\r end one."""
    pos = 0
    while pos < len(text):
        m = _LINE.match(text, pos)
        assert m is not None  # the pattern matches at least one character before the end
        raw = m.group()
        body = raw.rstrip("\r\n")
        yield pos, body, raw[len(body):]
        pos = m.end()


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` with their newlines (unlike ``str.splitlines``, only \\r\\n, \\n
    and \\r end a line: a U+2028 inside a line stays inside it)."""
    return [text[offset: offset + len(body) + len(nl)] for offset, body, nl in lines(text)]


def newline_of(text: str) -> str:
    """The file's newline: the most common of CRLF, LF and CR; LF for a file without one."""
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    cr = text.count("\r") - crlf
    best = max((crlf, "\r\n"), (lf, "\n"), (cr, "\r"), key=lambda t: t[0])
    return best[1] if best[0] else "\n"


def _scan(text: str) -> tuple[list[tuple[str, int, int, str, str]], int | None]:
    """Marker lines outside code fences, and the line of a fence left open at the end."""
    found: list[tuple[str, int, int, str, str]] = []
    fence: str | None = None
    fence_line = 0
    for number, (offset, body, nl) in enumerate(lines(text), start=1):
        if number == 1 and body.startswith("\ufeff"):
            body = body[1:]
            offset += 1
        if fence is not None:
            m = _FENCE.match(body)
            if m and m.group("fence")[0] == fence[0] and len(m.group("fence")) >= len(fence) \
                    and not body[m.end():].strip():
                fence = None
            continue
        m = _FENCE.match(body)
        if m:
            fence, fence_line = m.group("fence"), number
            continue
        if _BEGIN.fullmatch(body):
            found.append(("begin", number, offset, body, nl))
        elif _END.fullmatch(body):
            found.append(("end", number, offset, body, nl))
    return found, (fence_line if fence is not None else None)


def find_block(text: str, where: str) -> Block | None:
    """The one Lore block in ``text`` (``where`` names the file in errors), or None."""
    markers, _ = _scan(text)
    if not markers:
        return None
    kind, line, offset, body, _nl = markers[0]
    if kind == "end":
        raise MalformedBlock(f"{where}:{line}: Lore end marker without a begin marker; "
                             "delete the stray marker line or restore the begin marker")
    if len(markers) == 1:
        raise MalformedBlock(f"{where}:{line}: Lore begin marker without an end marker; "
                             f"add a line '{END_MARKER}' after the block or delete the marker")
    kind2, line2, offset2, body2, nl2 = markers[1]
    if kind2 == "begin":
        raise MalformedBlock(f"{where}:{line2}: Lore begin marker inside the block that starts at "
                             f"line {line}; keep one block and delete the other marker lines")
    if len(markers) > 2:
        extra = markers[2][1]
        raise MalformedBlock(f"{where}:{extra}: a second Lore marker after the block at lines "
                             f"{line}-{line2}; keep one block and delete the other marker lines")
    first_nl = markers[0][4]
    body_start = offset + len(body) + len(first_nl)
    m = _BEGIN.fullmatch(body)
    return Block(start=offset, end=offset2 + len(body2) + len(nl2), line=line,
                 created=bool(m and m.group("created")), body=text[body_start:offset2],
                 ends_with_newline=bool(nl2))


def render(body_lines: Sequence[str], newline: str, created: bool = False) -> str:
    """The block's text from its body lines, without a newline after the end marker."""
    return newline.join([begin_marker(created), *body_lines, END_MARKER])


def set_block(text: str, body_lines: Sequence[str], where: str, created: bool = False) -> str:
    """``text`` with Lore's block holding ``body_lines``; no lines removes the block.

    ``created`` marks a block written into a file Lore creates; an existing block keeps its
    own mark. Raises MalformedBlock when the markers do not pair up or when the block would
    land inside a code fence left open at the end of the file.
    """
    block = find_block(text, where)
    if not body_lines:
        return text if block is None else remove(text, block)
    nl = newline_of(text)
    if block is not None:
        new = render(body_lines, nl, block.created)
        end_nl = _trailing_newline(text[block.start:block.end]) if block.ends_with_newline else ""
        return text[:block.start] + new + end_nl + text[block.end:]
    _, open_fence = _scan(text)
    if open_fence is not None:
        raise MalformedBlock(f"{where}:{open_fence}: a code fence opened here is never closed, so "
                             "a block added at the end would be code; close the fence first")
    new = render(body_lines, nl, created)
    if text in ("", "\ufeff"):
        return text + new + nl
    if _trailing_newline(text):
        return text + nl + new + nl
    # No final newline: keep it that way, so removing the block gives back the same bytes.
    return text + nl + nl + new


def remove(text: str, block: Block) -> str:
    """``text`` without the block and the blank line that was put before it."""
    nl = newline_of(text)  # inserting only adds this newline, so it is still the most common
    before, after = text[:block.start], text[block.end:]
    if not after and not block.ends_with_newline:
        for _ in range(2):
            if before.endswith(nl):
                before = before[: -len(nl)]
        return before
    if not after or after.startswith(_NEWLINES):
        stripped = before[: -len(nl)] if before.endswith(nl) else before
        if stripped != before and _trailing_newline(stripped):
            before = stripped
        elif before in ("", "\ufeff"):  # the block opened the file: drop the blank line after it
            after = after[len(_leading_newline(after)):]
    return before + after


def outside(text: str, block: Block | None) -> str:
    """The text of the file that is not Lore's block."""
    return text if block is None else text[:block.start] + text[block.end:]


def _leading_newline(text: str) -> str:
    for nl in _NEWLINES:
        if text.startswith(nl):
            return nl
    return ""


def _trailing_newline(text: str) -> str:
    for nl in _NEWLINES:
        if text.endswith(nl):
            return nl
    return ""
