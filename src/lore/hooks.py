"""`lore hook <event>`: read the hook's stdin JSON, append one event to the queue, return.

Standard library only, no database, no model: this runs on Claude Code's critical path.
Secrets in the payload (the prompt, tool input, the quoted exchange) are redacted before the
event is written, and a tool's response is not kept: nothing in the queue holds them in clear.
Hooks fail open: any error is written to ``$LORE_HOME/logs/hooks.log`` and the hook
exits 0 without output, so the agent is never blocked or shown an error. An event that could
not be queued (a full disk) is logged in one short line first, which fits where a traceback
may not. ``LORE_DISABLED=1`` turns every hook into a no-op.

After queuing, every hook starts the worker if none holds the home's lock (one open and one
lock attempt); a worker started so exits after ``$LORE_WORKER_IDLE_EXIT`` seconds (600) with
nothing pending, and the next hook starts it again (a worker that fails to start is tried again
at most every 30 s). ``LORE_WORKER_AUTOSTART=0`` leaves starting it to the user (a service
manager, `lore worker run`). Nothing on this path walks the home or changes a mode.
"""

from __future__ import annotations

import json
import os
import sys
import time

from lore.capture import enqueue, hooklog
from lore.capture.tail import MAX_FIELD, last_assistant, last_exchange
from lore.home import check_device, home_dir, idle_exit_seconds, is_url, spawn_worker, worker_running
from lore.normalize import json_value
from lore.private import open_private
from lore.redact import redact, redact_value

# Neither typing nor pathlib is imported here (paths are strings): each costs a hook more
# than its own work. tests/capture/test_hook_imports.py keeps the path this light.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

EVENTS = {
    "session-start": "SessionStart", "user-prompt-submit": "UserPromptSubmit",
    "pre-tool-use": "PreToolUse", "post-tool-use": "PostToolUse", "stop": "Stop",
    "subagent-stop": "SubagentStop",
    "pre-compact": "PreCompact", "session-end": "SessionEnd",
}

def run(event_name: str, stdin: str, queue_root: str | os.PathLike[str] | None = None
        ) -> str | None:
    """Handle one hook call; return what to print on stdout (None: nothing)."""
    kind = EVENTS.get(event_name, event_name)
    # Lone surrogates and NULs become U+FFFD, so the event can be written and stored.
    payload = json_value(stdin) if stdin.strip() else {}
    if not isinstance(payload, dict):
        raise ValueError("hook input is not a JSON object")
    if kind == "PreToolUse":  # reached through `python -m lore.cli`; the executable skips here
        from lore.apply.check_hook import pre_tool_use

        return pre_tool_use(stdin, _home_of(queue_root))
    # What a tool returned (file contents, command output) is never used: not kept, not redacted.
    payload.pop("tool_response", None)
    if kind == "PostToolUse":
        # The checks whose calls ran (reminded, or allowed by the user), for compliance.
        from lore.apply.check_hook import after, compiled_path, read_compiled
        from lore.trusted import Untrusted

        try:
            ran = after(read_compiled(compiled_path(_home_of(queue_root))), payload)
        except Untrusted as exc:  # the event is queued all the same, without the checks
            _log(event_name, f"ignored the checks: {exc}", trace=False)
            ran = []
        if ran:
            payload["lore_guard"] = ran
    payload = _clip(payload)  # long lists only: texts are cut after they are redacted
    if kind in ("Stop", "SubagentStop"):
        payload["lore_signals"] = stop_signals(payload)
    elif kind == "UserPromptSubmit":
        payload["lore_signals"] = prompt_signals(payload)
    output = None
    if kind == "SessionStart":
        # Built before the event is queued, so the event says what the session was given
        # (lesson ids, sizes); the worker stores it. The hook itself never writes the database.
        try:
            output, payload["lore_context"] = session_context(payload.get("cwd"))
        except Exception:  # noqa: BLE001 - no context is better than no event; the log says why
            _log(event_name, "could not build the context (the event is queued without it)")
        # The commit the session starts from, read from .git's files (no git process): the
        # end of the session diffs from it.
        from lore.capture.githead import read_head

        cwd = payload.get("cwd")
        payload["lore_git"] = read_head(cwd if isinstance(cwd, str) else None)
    enqueue.append(queue_root or os.path.join(home_dir(), "queue"), kind, redact_payload(payload))
    return output


def _home_of(queue_root: str | os.PathLike[str] | None) -> str | None:
    """The home a queue folder is in (None: the default home)."""
    return None if queue_root is None else os.path.dirname(os.path.abspath(queue_root))


def session_context(cwd: Any) -> tuple[str | None, dict[str, Any] | None]:
    """The hookSpecificOutput JSON with what Lore knows for this project (or None), and the
    record of what it holds and what the budget left out (None: no database yet)."""
    settings = _light_settings()
    location = (os.environ.get("LORE_DB") or os.environ.get("LORE_DATABASE_URL")
                or settings.get("database") or os.path.join(home_dir(), "lore.db"))
    if not is_url(location) and not os.path.isfile(os.path.expanduser(location)):
        return None, None
    from pathlib import Path

    from lore.apply.session_context import CONTEXT, from_file  # no model, no numpy
    from lore.normalize import project_root

    db: Path | str = location if is_url(location) else Path(location).expanduser()

    ctx = settings.get("context") or {}
    built = from_file(db, cwd if isinstance(cwd, str) else None,
                      int(ctx.get("max_chars", 4000)), int(ctx.get("max_items", 60)),
                      CONTEXT.inject_proposed_min_seen,
                      user=os.environ.get("LORE_USER") or settings.get("user") or _login())
    record = {**built.record(), "at": time.time()}
    text = built.text
    if not is_url(location):
        line = _nudge(Path(db), project_root(cwd if isinstance(cwd, str) else None))
        if line:
            text = f"{text}\n{line}" if text else line
    if not text:
        return None, record
    return json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart",
                                              "additionalContext": text}}), record


def _nudge(db: Path, project: str | None) -> str | None:
    """One line when something waits for review, once a day per project; a failure to read
    or record it leaves the context as it was (logged)."""
    try:
        from lore.apply.nudge import nudge
        from lore.home import lore_home

        return nudge(db, project, lore_home(), plugin=os.environ.get("LORE_PLUGIN") == "1")
    except Exception:  # noqa: BLE001 - the nudge is a courtesy: the context goes out without it
        _log("session-start", "could not count what waits for review")
        return None


def _login() -> str | None:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None


def _light_settings() -> dict[str, Any]:
    # The full config loader validates with pydantic (too slow for this path); the keys read
    # here were validated by every other command that loaded the same file.
    from lore import trusted

    path = os.path.expanduser(os.environ.get("LORE_CONFIG")
                              or os.path.join(home_dir(), "config.yaml"))
    raw = trusted.read(path, trusted.CONFIG_BYTES, "config", follow=True)
    if raw is None:
        return {}
    import yaml

    data = yaml.safe_load(raw.decode("utf-8")) or {}
    return data if isinstance(data, dict) else {}


SPAWN_SECONDS = 30.0


def ensure_worker() -> None:
    """Start the worker in the background if none holds the home's lock (cheap check, no
    waiting), unless ``LORE_WORKER_AUTOSTART=0``. It exits once idle for
    ``$LORE_WORKER_IDLE_EXIT`` seconds. An invalid ``LORE_DEVICE`` raises (the worker could
    not start): the event stays queued for a worker started once it is fixed."""
    if os.environ.get("LORE_WORKER_AUTOSTART", "").strip() == "0":
        return
    device = os.environ.get("LORE_DEVICE")
    if device:
        check_device(device)
    home = home_dir()
    if worker_running(home):
        return
    idle = idle_exit_seconds()
    # A worker that cannot start (a broken config, a full disk) would otherwise be started,
    # at the cost of a second of CPU, by every hook: at most one start per SPAWN_SECONDS. A
    # worker that exited idle was started at least its idle time ago, so this never delays it.
    marker = os.path.join(home, "worker.started")
    try:
        if time.time() - os.stat(marker).st_mtime < min(SPAWN_SECONDS, idle or SPAWN_SECONDS):
            return
    except OSError:
        pass
    os.close(open_private(marker))
    os.utime(marker)
    spawn_worker(home, idle)


def stop_signals(payload: dict[str, Any]) -> dict[str, Any]:
    """The user's last prompt and what the assistant proposed before it, read from the end
    of the transcript (never the whole file), when the pre-filter says the prompt might teach
    something (a correction or a standing preference); the worker's detector decides."""
    from lore.capture.signals import might_teach  # its patterns: the Stop and prompt hooks only

    path = payload.get("transcript_path")
    if not isinstance(path, str) or not os.path.isfile(path):
        return {"correction": False}
    prompt, proposal = last_exchange(path)
    if not prompt or not might_teach(prompt):
        return {"correction": False}
    return {"correction": True, "user_message": prompt, "assistant_proposal": proposal}


def prompt_signals(payload: dict[str, Any]) -> dict[str, Any]:
    """The same check on the prompt as it is submitted: the prompt comes with the hook, and
    the proposal it answers is already in the transcript, so this sees corrections that the
    Stop hook can miss when the transcript is written late. The worker stores each once."""
    from lore.capture.signals import might_teach

    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or not might_teach(prompt):
        return {"correction": False}
    path = payload.get("transcript_path")
    proposal = last_assistant(path) if isinstance(path, str) and os.path.isfile(path) else None
    return {"correction": True, "user_message": prompt, "assistant_proposal": proposal}


# Fields that name things (ids, paths) rather than quote text: kept as they are.
_NAMES = frozenset({"session_id", "transcript_path", "cwd", "hook_event_name", "tool_name",
                    "tool_use_id", "agent_transcript_path", "permission_mode", "lore_git"})


def redact_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload with every quoted text redacted (prompt, tool input, lore_signals,
    messages), then cut to MAX_FIELD characters: a secret across the cut is redacted whole,
    and the cut never keeps part of a token. Fields named like secrets (``{"password": …}``
    in an MCP tool's input) are redacted whole at any depth. The rules compile only for
    texts that hold their trigger words."""
    return {k: (v if _kept(k, v) else redact_value(v, MAX_FIELD)) for k, v in payload.items()}


def _kept(key: str, value: Any) -> bool:
    """Ids and paths are kept as they are, when they are what Claude Code sends: a string (a
    malformed event's ``{"tool_name": {...}}`` is text like any other); ``lore_git`` is the
    hook's own."""
    return key in _NAMES and (isinstance(value, str) or key == "lore_git")


def _clip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clip(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clip(v) for v in value[:200]]
    return value


def main(event_name: str) -> int:
    """Entry point for `lore hook`: never raises, always exits 0."""
    if os.environ.get("LORE_DISABLED") == "1":
        return 0
    try:
        # Bytes, not text: invalid UTF-8 becomes U+FFFD instead of losing the event.
        out = run(event_name, sys.stdin.buffer.read().decode("utf-8", "replace"))
    except Exception as exc:  # noqa: BLE001 - fail open: log, never block the agent
        _log(event_name, "failed; the event was not queued")
        hooklog.count(home_dir(), f"{event_name}: {type(exc).__name__}: {exc}")
        return 0
    if out:
        try:
            sys.stdout.write(out)
        except Exception:  # noqa: BLE001 - a closed stdout: the event is queued all the same
            _log(event_name, "could not print the context")
    try:
        ensure_worker()
    except Exception:  # noqa: BLE001 - the event is queued; the next hook tries again
        _log(event_name, "queued the event but could not start the worker")
    return 0


def _log(event_name: str, what: str = "failed", *, trace: bool = True) -> None:
    """One short line (written first, alone: on a full disk it may still fit in the log's
    last block), then the traceback of an unexpected error, redacted (``trace``: the error
    in the line and its traceback; else ``what`` says it all). Never raises."""
    import traceback

    try:
        exc = sys.exc_info()[1] if trace else None
        detail = None
        if exc is not None and not isinstance(exc, OSError):  # the line says all of those
            detail = redact(traceback.format_exc())
        hooklog.write(home_dir(), hooklog.line(event_name, what, exc), detail)
    except Exception:  # noqa: BLE001 - even logging may fail (unwritable home): stay silent
        pass
