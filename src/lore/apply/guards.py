"""Checks: an approved rule held at the moment of action (docs/apply.md, "Checks").

A check on a rule says which tool calls it governs and what happens then:

- ``command``: a regular expression for a Bash command, matched where a command starts (the
  start of the line, or after ``;``, ``&&``, ``||``, ``|``, ``(``, ``$(``, past ``sudo``,
  ``env`` and ``NAME=value`` prefixes): ``npm(?=\\s|$)`` matches ``npm install`` and
  ``cd web && npm ci``, not ``pnpm add`` or ``echo npm``;
- ``path``: a glob for the file of Write, Edit, MultiEdit and NotebookEdit, relative to the
  session's folder: ``*`` stays inside a folder, ``**`` crosses folders, ``{a,b}`` is either,
  a trailing ``/`` means everything below; a glob without ``/`` matches a file or folder name
  at any depth (``*.min.js``, ``vendor/``);
- ``content``: a regular expression for the text being written (Write's content, Edit's and
  MultiEdit's new text, a notebook cell's source), line by line (``^`` is a line's start);
- ``tool``: a tool's name, ``*`` for any characters (``WebFetch``, ``mcp__github__*``).

Every condition given must hold. The mode is ``remind`` (the rule, why and when the user
said it, added as context next to the call, which runs) or ``block`` (the call is denied with
that reason; the user allows it with ``lore guard allow``).

Checks are compiled into one small JSON file whenever rules or checks change; the PreToolUse
and PostToolUse hooks read only that file: this module is the standard library alone (no
database, no model, no numpy, no click) and every hook failure lets the call through.
"""

from __future__ import annotations

import os
import time

# json, re and typing cost the hook most of its time: imported where needed, so a session
# without checks pays for none of them.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Mapping
    from typing import Any

FIELDS = ("command", "path", "content", "tool")
MODES = ("remind", "block")
STATUSES = ("proposed", "active", "rejected")
FILE_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
COMPILED = "guards.json"
FORMAT = 1
# Where a shell command starts, and the prefixes that still run the command after them.
_START = (r"(?:^|[;&|(\n`]|\$\()\s*"
          r"(?:(?:sudo|env|time|command|exec|nohup|nice)\s+(?:-\S+\s+)*"
          r"|[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*")
_CACHE: dict[tuple[str, str], re.Pattern[str]] = {}
REASON_CHARS = 1200
MARK = "[Lore check]"


class CheckError(ValueError):
    """A check that cannot hold: no condition, a bad pattern, an unknown mode."""


# ---- the conditions ---------------------------------------------------------------------
def command_regex(pattern: str) -> re.Pattern[str]:
    return _compiled("command", pattern)


def glob_regex(glob: str) -> re.Pattern[str]:
    return _compiled("path", glob)


def _compiled(kind: str, pattern: str) -> re.Pattern[str]:
    key = (kind, pattern)
    found = _CACHE.get(key)
    if found is None:
        import warnings

        with warnings.catch_warnings():  # "possible nested set" and the like: not the user's
            warnings.simplefilter("ignore")  # concern at the moment of action
            found = _compile(kind, pattern)
        _CACHE[key] = found
    return found


def _compile(kind: str, pattern: str) -> re.Pattern[str]:
    import re

    if kind == "command":
        return re.compile(_START + "(?:" + pattern + ")")
    if kind == "path":
        return re.compile(glob_source(pattern))
    if kind == "tool":
        return re.compile("".join(".*" if ch == "*" else re.escape(ch) for ch in pattern))
    return re.compile(pattern, re.MULTILINE)


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
        runs = re.split(r"[*?\[\]{},]+", bare)
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
    """The check's fields, cleaned; raises CheckError with a one-line reason."""
    import re

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
                    re.compile(value)  # alone: a stray ")" must not close the command's wrapper
            _compiled(name, value)
        except re.error as exc:
            raise CheckError(f"the {name} pattern {value!r} is not a valid regular expression: "
                             f"{exc}") from None
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


def match(check: dict[str, Any], tool: str, tool_input: Any, cwd: str | None = None) -> str | None:
    """What of the call the check matched (the command, the path, the line), or None."""
    command, paths, texts = call_parts(tool, tool_input)
    needles = check.get("needles") or {}
    seen = ""
    if check.get("tool"):
        name = check["tool"]
        if name != tool and ("*" not in name or not _compiled("tool", name).fullmatch(tool)):
            return None
        seen = tool
    if check.get("command"):
        if command is None or needles.get("command", "") not in command:
            return None
        m = _compiled("command", check["command"]).search(command)
        if m is None:
            return None
        seen = _line_of(command, m.end())
    if check.get("path"):
        cut = needles.get("path", "")
        hit = next((p for p in paths if cut in p
                    and _compiled("path", check["path"]).search(relative(p, cwd))), None)
        if hit is None:
            return None
        seen = relative(hit, cwd)
    if check.get("content"):
        cut = needles.get("content", "")
        for text in texts:
            m = _compiled("content", check["content"]).search(text) if cut in text else None
            if m:
                seen = (seen + ": " if seen else "") + _line_of(text, m.start())
                break
        else:
            return None
    return seen or tool


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


# ---- the compiled file and the hooks --------------------------------------------------------
def home() -> str:
    """``$LORE_HOME``, else ``~/.lore`` (as lore.home, without its imports)."""
    return os.path.expanduser(os.environ.get("LORE_HOME") or os.path.join("~", ".lore"))


def compiled_path(root: str | None = None) -> str:
    return os.path.join(root or home(), COMPILED)


def write_compiled(path: str, entries: list[dict[str, Any]], stamp: str) -> None:
    """The checks the hooks hold, written whole (a temporary file renamed over the old one)."""
    import json

    data = {"format": FORMAT, "stamp": stamp, "checks": entries}
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, mode=0o700, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, ensure_ascii=False, separators=(",", ":"))
    os.replace(tmp, path)


def read_compiled(path: str) -> list[dict[str, Any]]:
    """The compiled checks, or none (no file, or one this Lore cannot read). A file Lore may
    not trust (a pipe, a link, a device, too large, another user's or one others can write,
    in a folder others can write: :mod:`lore.trusted`) raises :class:`lore.trusted.Untrusted`
    with one line, for the hook to log."""
    import json

    from lore import trusted

    try:
        raw = trusted.read(path, trusted.GUARDS_BYTES, "checks file")
        if raw is None:
            return []
        data = json.loads(raw)
    except trusted.Untrusted:
        raise
    except (OSError, ValueError, RecursionError):
        return []
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return []
    checks = data.get("checks")
    return [c for c in checks if isinstance(c, dict)] if isinstance(checks, list) else []


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
    """Whether the user let this check's calls through for now (``lore guard allow``)."""
    until = check.get("allowed_until")
    return isinstance(until, (int, float)) and until > at


def hits(checks: list[dict[str, Any]], payload: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """The checks in scope that match the call, each with what of the call it matched; a
    broken entry is skipped, never raised."""
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
            seen = match(check, tool, payload.get("tool_input"), cwd)
        except (re.error, TypeError, KeyError, AttributeError):
            continue  # a broken entry never stops the call
        if seen is not None:
            out.append((check, seen))
    return out


def decide(checks: list[dict[str, Any]], payload: dict[str, Any],
           at: float | None = None) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """For one PreToolUse call: the hook's JSON output (None: nothing to say) and the matches
    (check id, rule id, outcome: blocked, reminded or allowed; what matched)."""
    now = time.time() if at is None else at
    blocks: list[str] = []
    reminders: list[str] = []
    found = []
    for check, seen in hits(checks, payload):
        if check.get("mode") == "block" and not allowed(check, now):
            outcome = "blocked"
            blocks.append(reason(check, seen, blocked=True))
        else:
            outcome = "allowed" if check.get("mode") == "block" else "reminded"
            reminders.append(reason(check, seen, blocked=False))
        found.append({"check_id": check.get("id"), "lesson_id": check.get("lesson_id"),
                      "outcome": outcome, "matched": seen})
    if not found:
        return None, []
    out: dict[str, Any] = {"hookEventName": "PreToolUse"}
    if blocks:
        out["permissionDecision"] = "deny"
        out["permissionDecisionReason"] = "\n\n".join(blocks)
    if reminders:
        out["additionalContext"] = "\n\n".join(reminders)
    return {"hookSpecificOutput": out}, found


def reason(check: dict[str, Any], seen: str, *, blocked: bool) -> str:
    """What the agent reads: the rule, why, when the user said it, what matched, and (for a
    block) how the user lets it through. Facts, not commands."""
    said = check.get("said")
    when = check.get("said_at")
    lines = [f"{MARK} The user's rule: {check.get('rule', '').strip()}"]
    if check.get("why"):
        lines.append(f"Why: {check['why'].strip()}")
    if said:
        lines.append(f"The user said{' on ' + when[:10] if when else ''}: \"{said.strip()}\"")
    lines.append(f"This call matched it: {seen}")
    if blocked:
        lines.append("The call was not run. A call that follows the rule will run; if the user "
                     f"wants this one anyway, they can run `lore guard allow {check.get('id')}`.")
    text = "\n".join(lines)
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS - 3] + "..."


def after(checks: list[dict[str, Any]], payload: dict[str, Any]) -> list[dict[str, Any]]:
    """For one PostToolUse call: the checks whose calls ran all the same (reminded, or
    allowed by the user), as ``ran`` matches."""
    return [{"check_id": check.get("id"), "lesson_id": check.get("lesson_id"), "outcome": "ran",
             "matched": seen} for check, seen in hits(checks, payload)]


# ---- the PreToolUse hook ------------------------------------------------------------------------
def pre_tool_use(stdin: str, root: str | None = None, at: float | None = None) -> str | None:
    """Handle one PreToolUse call: what to print (None: nothing). Reads the compiled file
    only; a match is queued for the worker (what matched, redacted; never the whole input)."""
    import json

    checks = read_compiled(compiled_path(root))
    if not checks:
        return None
    payload = json.loads(stdin) if stdin.strip() else {}
    if not isinstance(payload, dict):
        return None
    output, found = decide(checks, payload, at)
    if found:
        from pathlib import Path

        from lore.capture.queue import Queue
        from lore.redact import redact

        for m in found:
            m["matched"] = redact(m["matched"])
        event = {k: payload.get(k) for k in ("session_id", "cwd", "tool_name", "tool_use_id",
                                             "transcript_path")}
        event["lore_guard"] = found
        try:
            Queue(Path(root or home()) / "queue").append("PreToolUse", event)
        except Exception as exc:  # noqa: BLE001 - the decision holds even when its record fails
            from lore.capture import hooklog

            hooklog.dropped(root or home(), "pre-tool-use", exc,
                            "could not queue its record (the decision was given all the same)")
    return json.dumps(output) if output else None


def main(stdin: Any = None, stdout: Any = None) -> int:
    """``lore hook pre-tool-use``: never raises, always exits 0 (a failure lets the call run)."""
    import sys

    if os.environ.get("LORE_DISABLED") == "1":
        return 0
    try:
        raw = (stdin or sys.stdin.buffer).read()
        if not os.path.lexists(compiled_path()):
            return 0  # no check was ever approved: nothing to import, nothing to say
        out = pre_tool_use(raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw)
        if out:
            (stdout or sys.stdout).write(out)
    except Exception as exc:  # noqa: BLE001 - fail open: log, never stop the agent
        from lore.trusted import Untrusted

        if isinstance(exc, Untrusted):  # the line says it all: no traceback
            _log("pre-tool-use", f"ignored the checks (the call runs): {exc}")
        else:
            _log("pre-tool-use")
    return 0


def _log(event: str, line: str | None = None) -> None:
    """One line in hooks.log: ``line`` as given, else "failed" with the error and its
    traceback. Never raises."""
    import sys
    import traceback

    try:
        from lore.capture import hooklog
        from lore.redact import redact

        if line:
            hooklog.write(home(), hooklog.line(event, line))
            return
        exc = sys.exc_info()[1]
        hooklog.write(home(), hooklog.line(event, "failed", exc),
                      redact(traceback.format_exc()))
    except Exception:  # noqa: BLE001 - an unwritable home: stay silent
        pass
