"""Checks: an approved rule held at the moment of action (docs/apply.md, "Checks").

A check on a rule says which tool calls it governs and what happens then:

- ``command``: a regular expression for a Bash command, matched at the start of each command
  the shell would run (``lore.apply.shell``: lists, pipelines, subshells, bodies of ``if`` and
  loops, ``bash -c`` strings, and the commands ``env``, ``sudo``, ``timeout``, ``xargs``,
  ``npx`` and the like run), its words unquoted, its program also without its folder:
  ``npm(?=\\s|$)`` matches ``npm install``, ``cd web && npm ci``, ``sudo -u node /usr/bin/npm i``
  and ``bash -c "npm i"``, not ``pnpm add`` or ``echo npm``. A line the shell grammar does not
  accept is matched as text, where a command starts;
- ``path``: a glob for the file of Write, Edit, MultiEdit and NotebookEdit, relative to the
  session's folder: ``*`` stays inside a folder, ``**`` crosses folders, ``{a,b}`` is either,
  a trailing ``/`` means everything below; a glob without ``/`` matches a file or folder name
  at any depth (``*.min.js``, ``vendor/``);
- ``content``: a regular expression for the text being written (Write's content, Edit's and
  MultiEdit's new text, a notebook cell's source), line by line (``^`` is a line's start); in
  Python that parses, each import is also read as one plain line (``import os, requests``
  and ``importlib.import_module("requests")`` give ``import requests``);
- ``tool``: a tool's name, ``*`` for any characters (``WebFetch``, ``mcp__github__*``).

Every condition given must hold. The mode is ``remind`` (the rule, why and when the user
said it, added as context next to the call, which runs) or ``block`` (the call is denied with
that reason; the user allows it with ``lore guard mode ID allow``).

Checks are compiled into one small JSON file whenever rules or checks change; the PreToolUse
and PostToolUse hooks read only that file: no database, no model, no numpy, no click (the
shell grammar loads only when a command check's literal is in the call), and every hook
failure lets the call through (:mod:`lore.apply.check_hook`). Every pattern runs under a time
bound (``lore.apply.patterns``).
"""

from __future__ import annotations

import os
import time

# json, re and typing cost the hook most of its time: imported where needed, so a session
# without checks pays for none of them.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

FIELDS = ("command", "path", "content", "tool")
MODES = ("remind", "block")
STATUSES = ("proposed", "active", "rejected")
FILE_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
# Where a shell command starts, and the prefixes that still run the command after them (for
# a line the shell grammar does not accept).
_START = (r"(?:^|[;&|(\n`]|\$\()\s*"
          r"(?:(?:sudo|env|time|command|exec|nohup|nice)\s+(?:-\S+\s+)*"
          r"|[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*")
_CACHE: dict[tuple[str, str], Any] = {}
_PARSED: dict[str, Any] = {}  # the last command line parsed: every check reads the same one


class CheckError(ValueError):
    """A check that cannot hold: no condition, a bad pattern, an unknown mode."""


class Deadline(Exception):
    """The hook ran past DEADLINE_SECONDS: it lets the call run."""


class Slow(Exception):
    """One check's pattern ran past its time bound on this call: the check is skipped."""

    def __init__(self, check_id: Any) -> None:
        super().__init__(check_id)
        self.check_id = check_id


# ---- the conditions ---------------------------------------------------------------------
def _compiled(kind: str, pattern: str) -> Any:
    key = (kind, pattern)
    found = _CACHE.get(key)
    if found is None:
        import warnings

        with warnings.catch_warnings():  # "possible nested set" and the like: not the user's
            warnings.simplefilter("ignore")  # concern at the moment of action
            found = _compile(kind, pattern)
        _CACHE[key] = found
    return found


def _compile(kind: str, pattern: str) -> Any:
    import re

    if kind == "path":  # globs and tool names become patterns without nested repeats
        return re.compile(glob_source(pattern))
    if kind == "tool":
        return re.compile("".join(".*" if ch == "*" else re.escape(ch) for ch in pattern))
    from lore.apply import patterns

    if kind == "command":  # the line as text, where a command starts
        return patterns.compile_(_START + "(?:" + pattern + ")")
    if kind == "argv":  # one command's words, from their start
        return patterns.compile_("(?:" + pattern + ")")
    return patterns.compile_(pattern, multiline=True)


def glob_source(glob: str) -> str:
    import re

    g = glob.strip().replace("\\", "/")
    if g.startswith("./"):
        g = g[2:]
    if g.endswith("/"):
        g += "**"
    anchored = "/" in g.rstrip("/").removesuffix("/**") or g.startswith("/")
    g = g.lstrip("/")
    out, i = [], 0
    while i < len(g):
        ch = g[i]
        if g.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif g.startswith("**", i):
            out.append(".*")
            i += 2
        elif ch == "*":
            out.append("[^/]*")
            i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "{" and "}" in g[i:]:
            end = g.index("}", i)
            out.append("(?:" + "|".join(re.escape(p) for p in g[i + 1:end].split(",")) + ")")
            i = end + 1
        else:
            out.append(re.escape(ch))
            i += 1
    body = "".join(out)
    # Anchored: from the project's top. Otherwise a name at any depth, or a folder above it.
    return ("^" if anchored else "(?:^|/)") + body + ("(?:/.*)?$")


_META = set("\\.^$*+?{}[]()|")


def needle(kind: str, pattern: str) -> str | None:
    """A piece of text every call the condition matches holds (None: none known), found
    when the file is compiled so the hook skips a check without compiling its pattern."""
    import re

    if kind == "tool":
        return None if "*" in pattern else pattern
    if kind == "path":
        if "\\" in pattern:
            return None
        bare = re.sub(r"\{[^}]*\}|\[[^\]]*\]", "*", pattern.strip().lstrip("./"))
        # a run's leading slash may be absent: "**/" matches no folder at all ("**/a" is "a")
        runs = [r.lstrip("/") for r in re.split(r"[*?\[\]{},]+", bare)]
        best = max(runs, key=len, default="")
        return best if len(best) >= 2 else None
    if pattern.startswith("(?") and not pattern.startswith(("(?:", "(?=", "(?!", "(?<")):
        return None  # inline flags: case-insensitive text has no fixed needle
    runs, run, depth, i = [], "", 0, 0
    while i < len(pattern):
        ch = pattern[i]
        nxt = pattern[i + 1] if i + 1 < len(pattern) else ""
        if ch == "\\":
            lit = nxt if nxt and not nxt.isalnum() else None
            i += 2
            if lit is None or depth:
                runs.append(run)
                run = ""
                continue
            if i < len(pattern) and pattern[i] in "*?{":
                runs.append(run)
                run = ""
                continue
            run += lit
            continue
        if ch == "|" and depth == 0:
            return None  # either side may match: nothing is certain
        if ch in "([":
            runs.append(run)
            run = ""
            if ch == "[":
                end = pattern.find("]", i + 2)
                i = (end + 1) if end > 0 else len(pattern)
                continue
            depth += 1
        elif ch == "{":
            end = pattern.find("}", i)
            if end < 0 or not re.fullmatch(r"\d*,?\d*", pattern[i + 1:end]):
                return None  # a literal brace: too rare to reason about
            runs.append(run)
            run = ""
            i = end + 1
            continue
        elif ch == ")":
            depth = max(0, depth - 1)
        elif depth == 0 and ch not in _META and nxt not in ("*", "?", "{"):
            run += ch
        else:
            runs.append(run)
            run = ""
        i += 1
    runs.append(run)
    best = max(runs, key=len, default="")
    return best if len(best) >= 2 else None


def validate(spec: dict[str, Any]) -> dict[str, Any]:
    """The check's fields, cleaned; raises CheckError with a one-line reason. A command or
    content pattern that can backtrack without end is refused (``patterns.unsafe``)."""
    import re

    from lore.apply import patterns

    out: dict[str, Any] = {}
    for name in FIELDS:
        value = spec.get(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        if not isinstance(value, str):
            raise CheckError(f"{name} must be text")
        value = value.strip()
        if len(value) > 500:
            raise CheckError(f"the {name} pattern is longer than 500 characters")
        if "\x00" in value:
            raise CheckError(f"the {name} pattern holds a NUL character")
        try:
            if name in ("command", "content"):
                import warnings

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    # alone: a stray ")" must not close the command's wrapper
                    patterns.compile_(value, multiline=True)
            _compiled(name, value)
        except (re.error, OverflowError, RecursionError) as exc:
            raise CheckError(f"the {name} pattern {value!r} is not a valid regular expression: "
                             f"{' '.join(str(exc).split())}") from None
        if name in ("command", "content"):
            why = patterns.unsafe(value)
            if why:
                raise CheckError(f"the {name} pattern {value!r} is refused: {why}")
        out[name] = value
    if not out:
        raise CheckError("a check needs at least one of --command, --path, --content, --tool")
    mode = spec.get("mode") or "remind"
    if mode not in MODES:
        raise CheckError(f"unknown mode {mode!r}; valid: {', '.join(MODES)}")
    out["mode"] = mode
    return out


# ---- what a tool call does ----------------------------------------------------------------
def call_parts(tool: str, tool_input: Any) -> tuple[str | None, list[str], list[str]]:
    """(the Bash command, the file paths written, the texts written) of a tool call."""
    data = tool_input if isinstance(tool_input, dict) else {}
    command = data.get("command") if tool == "Bash" else None
    paths: list[str] = []
    texts: list[str] = []
    if tool in FILE_TOOLS:
        for key in ("file_path", "notebook_path", "path"):
            if isinstance(data.get(key), str) and data[key]:
                paths.append(data[key])
                break
        for key in ("content", "new_string", "new_source"):
            if isinstance(data.get(key), str):
                texts.append(data[key])
        edits = data.get("edits")
        if isinstance(edits, list):
            texts.extend(e["new_string"] for e in edits
                         if isinstance(e, dict) and isinstance(e.get("new_string"), str))
    return (command if isinstance(command, str) else None), paths, texts


def relative(path: str, cwd: str | None) -> str:
    """A file's path as a glob sees it: below the session's folder relative to it, else as
    given without its leading slash."""
    p = path.replace("\\", "/")
    if cwd:
        base = cwd.replace("\\", "/").rstrip("/") + "/"
        if p.startswith(base):
            return p[len(base):]
    return p.lstrip("/")


def match(check: dict[str, Any], tool: str, tool_input: Any, cwd: str | None = None,
          deadline: float | None = None) -> str | None:
    """What of the call the check matched (the command, the path, the line), or None. Raises
    Slow when a pattern runs past its bound, Deadline past ``deadline`` (time.monotonic)."""
    command, paths, texts = call_parts(tool, tool_input)
    needles = check.get("needles") or {}
    seen = ""
    if check.get("tool"):
        name = check["tool"]
        if name != tool and ("*" not in name or not _compiled("tool", name).fullmatch(tool)):
            return None
        seen = tool
    if check.get("command"):
        if command is None or not _has_needle(command, needles.get("command")):
            return None
        found = _command_match(check, command, deadline)
        if found is None:
            return None
        seen = found
    if check.get("path"):
        cut = needles.get("path", "")
        hit = next((p for p in paths if cut in p
                    and _compiled("path", check["path"]).search(relative(p, cwd))), None)
        if hit is None:
            return None
        seen = relative(hit, cwd)
    if check.get("content"):
        line = _content_match(check, texts, needles.get("content", ""), tool, tool_input,
                              paths, deadline)
        if line is None:
            return None
        seen = (seen + ": " if seen else "") + line
    return seen or tool


def _bound(check: dict[str, Any], deadline: float | None) -> float:
    """The seconds one match of this check may take now."""
    from lore.apply.patterns import MATCH_SECONDS

    if deadline is None:
        return MATCH_SECONDS
    left = deadline - time.monotonic()
    if left <= 0:
        raise Deadline
    return min(MATCH_SECONDS, left)


def _run(how: str, rx: Any, text: str, check: dict[str, Any], deadline: float | None) -> Any:
    from lore.apply import patterns

    try:
        if how == "match":
            return patterns.match(rx, text, _bound(check, deadline))
        return patterns.search(rx, text, _bound(check, deadline))
    except patterns.Slow:
        if deadline is not None and time.monotonic() >= deadline:
            raise Deadline from None
        raise Slow(check.get("id")) from None


def _has_needle(command: str, cut: Any) -> bool:
    """Whether the command may hold the check's literal (quotes and escapes aside: ``n'p'm``
    holds ``npm``); each word of it is looked for apart (``git -C x push`` holds ``git push``)."""
    if not cut or not isinstance(cut, str):
        return True
    if "$'" in command:
        return True  # $'\x6epm' spells its words in escapes
    plain = command.replace("'", "").replace('"', "").replace("\\", "")  # every parsed word is in it
    return all(part in plain for part in cut.split())


def _parsed(command: str) -> Any:
    if command in _PARSED:
        return _PARSED.get(command)
    try:
        from lore.apply.shell import commands

        found = commands(command)
    except ImportError:  # the grammar's wheel missing: the text alone
        found = None
    _PARSED.clear()  # one line kept: the checks of one call read it in turn
    _PARSED[command] = found
    return found


def _command_match(check: dict[str, Any], command: str, deadline: float | None) -> str | None:
    """The line of the command the check's pattern matches: at the start of each command the
    shell would run, or, for a line the grammar does not accept, where a command starts."""
    from lore.apply.shell import forms

    parsed = _parsed(command)
    if parsed is None:
        m = _run("search", _compiled("command", check["command"]), command, check, deadline)
        return None if m is None else _line_of(command, m.end())
    rx = _compiled("argv", check["command"])
    for argv, at in parsed:
        for form in forms(argv):
            if _run("match", rx, form, check, deadline) is not None:
                return _line_of(command, at)
    return None


def _content_match(check: dict[str, Any], texts: list[str], cut: str, tool: str,
                   tool_input: Any, paths: list[str], deadline: float | None) -> str | None:
    """The line of a written text the content pattern matches: in the text itself, or, in
    Python that parses, in one of its imports read as a plain line."""
    if not texts:
        return None
    from lore.apply.pyimports import import_lines, is_python

    python = is_python(paths[0] if paths else None, tool, tool_input)
    for text in texts:
        # An import read from the syntax holds each word of the literal, not always in a row
        # (``import os, requests`` for ``import requests``).
        if cut not in text and not (python and all(part in text for part in cut.split())):
            continue
        rx = _compiled("content", check["content"])
        m = _run("search", rx, text, check, deadline)
        if m:
            return _line_of(text, m.start())
        if not python:
            continue
        for line, lineno in import_lines(text) or []:
            if _run("search", rx, line, check, deadline):
                return _nth_line(text, lineno) or line
    return None


def _nth_line(text: str, lineno: int) -> str:
    lines = text.splitlines()
    if not 0 < lineno <= len(lines):
        return ""
    line = lines[lineno - 1].strip()
    return line if len(line) <= 160 else line[:157] + "..."


def _line_of(text: str, at: int) -> str:
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    line = text[start:end if end >= 0 else len(text)].strip()
    return line if len(line) <= 160 else line[:157] + "..."


def describe(check: Mapping[str, Any]) -> str:
    """The check in words: ``Blocks Bash commands starting npm(?=\\s|$)``."""
    verb = "Blocks" if check.get("mode") == "block" else "Reminds of the rule at"
    parts = []
    if check.get("tool"):
        parts.append(f"calls of the tool {check['tool']}")
    if check.get("command"):
        parts.append(f"Bash commands matching /{check['command']}/")
    if check.get("path"):
        parts.append(f"writes to files matching {check['path']}")
    if check.get("content"):
        parts.append(f"written text matching /{check['content']}/")
    return f"{verb} " + (" and ".join(parts) if parts else "nothing")


def in_scope(check: dict[str, Any], cwd: str | None) -> bool:
    """A global rule's check holds everywhere; a project's inside its folder."""
    project = check.get("project")
    if not project:
        return True
    if not cwd:
        return False
    base = project.rstrip("/")
    if cwd == base or cwd.startswith(base + "/"):
        return True
    real = os.path.realpath(cwd)  # the project is stored resolved; a session may start via a link
    return real != cwd and (real == base or real.startswith(base + "/"))


def allowed(check: dict[str, Any], at: float) -> bool:
    """Whether the user let this check's calls through for now (``lore guard mode ID allow``)."""
    until = check.get("allowed_until")
    return isinstance(until, (int, float)) and until > at


def hits(checks: list[dict[str, Any]], payload: dict[str, Any], deadline: float | None = None,
         slow: list[Any] | None = None) -> list[tuple[dict[str, Any], str]]:
    """The checks in scope that match the call, each with what of the call it matched; a
    broken entry is skipped, never raised, and so is a check whose pattern ran past its
    bound (its id added to ``slow``). Raises Deadline past ``deadline``."""
    import re

    tool = payload.get("tool_name")
    if not isinstance(tool, str):
        return []
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
    out = []
    for check in checks:
        if not in_scope(check, cwd):
            continue
        try:
            seen = match(check, tool, payload.get("tool_input"), cwd, deadline)
        except Slow:
            if slow is not None:
                slow.append(check.get("id"))
            continue
        except (re.error, TypeError, KeyError, AttributeError, ValueError, OverflowError,
                RecursionError):
            continue  # a broken entry never stops the call
        if seen is not None:
            out.append((check, seen))
    return out
