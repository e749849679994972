"""The checks at the moment of action: the compiled file the hooks read, and the PreToolUse
and PostToolUse hooks (what a check is and what it matches: :mod:`lore.apply.checks`).

Checks are compiled into one small JSON file (``guards.json`` in the home) whenever rules or
checks change; the hooks read only that file: no database, no model, no numpy, no click, and
every hook failure lets the call through. The whole PreToolUse hook runs under
:data:`DEADLINE_SECONDS`: past it, the call runs unchecked and hooks.log says so.
"""

from __future__ import annotations

import os
import time

from lore.apply.checks import Deadline, allowed, hits
from lore.home import home_dir

TYPE_CHECKING = False  # json and typing are imported where needed: see lore.apply.checks
if TYPE_CHECKING:
    from typing import Any

COMPILED = "guards.json"  # the file's name, kept for existing homes
FORMAT = 1
DEADLINE_SECONDS = 2.0  # the whole PreToolUse hook; past it the call runs unchecked
REASON_CHARS = 1200
MARK = "[Lore check]"


def compiled_path(root: str | None = None) -> str:
    return os.path.join(root or home_dir(), COMPILED)


def write_compiled(path: str, entries: list[dict[str, Any]], stamp: str) -> None:
    """The checks the hooks hold, written whole (a temporary file renamed over the old one)."""
    import json

    data = {"format": FORMAT, "stamp": stamp, "checks": entries}
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, mode=0o700, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:  # a stale one of a process with this pid; a link planted there is never written through
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
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
        raw = trusted.read(path, trusted.CHECKS_BYTES, "checks file")
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


def refused(path: str) -> str | None:
    """Why the hooks would not read the checks file ``path`` (one line, as they log it), or
    None when they would: a file there is read, and with none the folder must be one a file
    written there would be read from."""
    from lore import trusted

    folder = os.path.dirname(os.path.abspath(path))
    try:
        if os.path.lexists(path):
            read_compiled(path)
        elif os.path.isdir(folder):
            trusted.check_folder(folder, "checks file")
    except trusted.Untrusted as exc:
        return str(exc)
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror or exc}"
    return None


def decide(checks: list[dict[str, Any]], payload: dict[str, Any], at: float | None = None,
           deadline: float | None = None, slow: list[Any] | None = None
           ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """For one PreToolUse call: the hook's JSON output (None: nothing to say) and the matches
    (check id, rule id, outcome: blocked, reminded or allowed; what matched)."""
    now = time.time() if at is None else at
    blocks: list[str] = []
    reminders: list[str] = []
    found = []
    for check, seen in hits(checks, payload, deadline, slow):
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
    block) how the user lets it through. Facts, not commands. No text of the rule, the
    user's words or the call can pose as another check's line."""
    from lore.extract.steer import neutral  # stdlib only, as this hook path needs

    said = check.get("said")
    when = check.get("said_at")
    lines = [f"The user's rule: {check.get('rule', '').strip()}"]
    if check.get("why"):
        lines.append(f"Why: {check['why'].strip()}")
    if said:
        lines.append(f"The user said{' on ' + when[:10] if when else ''}: \"{said.strip()}\"")
    lines.append(f"This call matched it: {seen}")
    if blocked:
        lines.append("The call was not run. A call that follows the rule will run; if the user "
                     f"wants this one anyway, they can run `lore guard mode {check.get('id')} allow`.")
    text = f"{MARK} " + neutral("\n".join(lines))
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS - 3] + "..."


def after(checks: list[dict[str, Any]], payload: dict[str, Any]) -> list[dict[str, Any]]:
    """For one PostToolUse call: the checks whose calls ran all the same (reminded, or
    allowed by the user), as ``ran`` matches; none once DEADLINE_SECONDS have passed (the
    event is queued without them)."""
    try:
        found = hits(checks, payload, time.monotonic() + DEADLINE_SECONDS)
    except Deadline:
        return []
    return [{"check_id": check.get("id"), "lesson_id": check.get("lesson_id"), "outcome": "ran",
             "matched": seen} for check, seen in found]


# ---- the PreToolUse hook ------------------------------------------------------------------------
def pre_tool_use(stdin: str, root: str | None = None, at: float | None = None,
                 deadline: float | None = None) -> str | None:
    """Handle one PreToolUse call: what to print (None: nothing). Reads the compiled file
    only; a match is queued for the worker (what matched, redacted; never the whole input).
    Past ``deadline`` (time.monotonic; DEADLINE_SECONDS from now when None) raises Deadline."""
    import json

    if deadline is None:
        deadline = time.monotonic() + DEADLINE_SECONDS
    checks = read_compiled(compiled_path(root))
    if not checks:
        return None
    payload = json.loads(stdin) if stdin.strip() else {}
    if not isinstance(payload, dict):
        return None
    slow: list[Any] = []
    output, found = decide(checks, payload, at, deadline, slow)
    for check_id in slow:
        _log("pre-tool-use", f"check {check_id} took over its time bound on this call and was "
             "skipped")
    if time.monotonic() >= deadline:
        raise Deadline
    if found:
        from lore.capture import enqueue
        from lore.redact import redact

        for m in found:
            m["matched"] = redact(m["matched"])
        event = {k: payload.get(k) for k in ("session_id", "cwd", "tool_name", "tool_use_id",
                                             "transcript_path")}
        event["lore_guard"] = found
        try:
            enqueue.append(os.path.join(root or home_dir(), "queue"), "PreToolUse", event)
        except Exception as exc:  # noqa: BLE001 - the decision holds even when its record fails
            from lore.capture import hooklog

            hooklog.dropped(root or home_dir(), "pre-tool-use", exc,
                            "could not queue its record (the decision was given all the same)")
    return json.dumps(output) if output else None


def main(stdin: Any = None, stdout: Any = None) -> int:
    """``lore hook pre-tool-use``: never raises, always exits 0 (a failure lets the call run)."""
    import sys

    if os.environ.get("LORE_DISABLED") == "1":
        return 0
    deadline = time.monotonic() + DEADLINE_SECONDS
    try:
        raw = (stdin or sys.stdin.buffer).read()
        if not os.path.lexists(compiled_path()):
            return 0  # no check was ever approved: nothing to import, nothing to say
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        cancel = _alarm(deadline)  # outside the matcher too (reading the file, parsing)
        try:
            out = pre_tool_use(text, deadline=deadline)
        finally:
            cancel()  # before any handler below runs: no late Deadline inside one
        if out:
            (stdout or sys.stdout).write(out)
    except Deadline:
        _log("pre-tool-use", f"passed its {DEADLINE_SECONDS:g} s deadline; the call ran unchecked")
    except Exception as exc:  # noqa: BLE001 - fail open: log, never stop the agent
        from lore.trusted import Untrusted

        if isinstance(exc, Untrusted):  # the line says it all: no traceback
            _log("pre-tool-use", f"ignored the checks (the call runs): {exc}")
        else:
            _log("pre-tool-use")
    return 0


def _alarm(deadline: float) -> Any:
    """Raise Deadline in the main thread at ``deadline`` (time.monotonic); returns what cancels
    it. Elsewhere (another thread, no SIGALRM) nothing: the matcher keeps the deadline."""
    try:  # the C module: signal.py builds its enums on import, a millisecond of the hook's
        import _signal as signal  # time
    except ImportError:  # pragma: no cover - another interpreter
        import signal  # type: ignore[no-redef]

    def ring(_signum: int, _frame: Any) -> None:
        raise Deadline

    try:
        before = signal.signal(signal.SIGALRM, ring)
    except (ValueError, AttributeError, OSError):
        return lambda: None
    signal.setitimer(signal.ITIMER_REAL, max(deadline - time.monotonic(), 1e-6))

    def cancel() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)

    return cancel


def _log(event: str, line: str | None = None) -> None:
    """One line in hooks.log: ``line`` as given, else "failed" with the error and its
    traceback. Never raises."""
    import sys
    import traceback

    try:
        from lore.capture import hooklog
        from lore.redact import redact

        if line:
            hooklog.write(home_dir(), hooklog.line(event, line))
            return
        exc = sys.exc_info()[1]
        hooklog.write(home_dir(), hooklog.line(event, "failed", exc),
                      redact(traceback.format_exc()))
    except Exception:  # noqa: BLE001 - an unwritable home: stay silent
        pass
