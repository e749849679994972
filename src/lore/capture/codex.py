"""OpenAI Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl``).

Every line is ``{"timestamp", "type", "payload"}``. The conversation is read from ``response_item``
lines (what the model saw, and what ``codex resume`` replays); ``event_msg`` lines repeat the same
prompts and replies for the terminal UI and are skipped so nothing is read twice. Rollouts have no
record ids and no tree: a turn's uuid is ``<session id>:<byte offset of its line>``, which stays the
same whichever offset a read starts from, and ``parent_uuid`` is None (order is file order).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lore.capture.transcripts import (
    RESULT_CHARS,
    FileEdit,
    ParseStats,
    Recent,
    ToolCall,
    Turn,
    as_str,
    clip,
    clip_strings,
    first_record,
    has_marker,
    is_absolute,
    iter_records,
    readable,
    session_id_for,
)
from lore.normalize import json_value

KNOWN_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})
# response_item payloads that carry nothing to learn from (reasoning is the model's scratch work).
SKIPPED_ITEMS = frozenset({"reasoning", "ghost_snapshot", "compaction"})
# The first user messages of a session are instructions Codex sends, not what the person typed.
BOILERPLATE_PREFIXES = (
    "# AGENTS.md instructions", "<environment_context>", "<user_instructions>", "<INSTRUCTIONS>",
    "<permissions instructions>",
)
_EXIT_CODE = re.compile(r"^Exit code: (-?\d+)", re.M)


class CodexReader:
    agent = "codex"

    def matches(self, path: Path) -> bool:
        if path.suffix != ".jsonl":
            return False
        if path.name.startswith("rollout-"):
            return True
        first = first_record(path)
        return first is not None and first.get("type") == "session_meta"

    def read(self, path: Path, offset: int = 0, stats: ParseStats | None = None) -> Iterator[Turn | FileEdit]:
        stats = stats if stats is not None else ParseStats()
        rollout = _Rollout(path)
        if offset > 0:  # resuming mid-file: the session's id, cwd and version are on the first line
            first = first_record(path)
            if first is not None and first.get("type") == "session_meta":
                rollout.meta(_payload(first))
        for start, record in iter_records(path, offset, stats):
            yield from rollout.consume(record, start, stats)
        yield from (edit for edits in rollout.pending.drain() for edit in edits)


class _Rollout:
    def __init__(self, path: Path) -> None:
        self.session_id = session_id_for(path)
        self.cwd: str | None = None
        self.git_branch: str | None = None
        self.version: str | None = None
        self.model: str | None = None
        self.tool_names: Recent[str, str] = Recent()  # call_id -> tool name, to label outputs
        self.pending: Recent[str, list[FileEdit]] = Recent()  # call_id -> patch edits awaiting output

    def meta(self, payload: dict[str, Any]) -> None:
        self.session_id = as_str(payload.get("id")) or self.session_id
        self.cwd = as_str(payload.get("cwd")) or self.cwd
        self.version = as_str(payload.get("cli_version")) or self.version
        git = payload.get("git")
        if isinstance(git, dict):
            self.git_branch = as_str(git.get("branch")) or self.git_branch

    def consume(self, record: dict[str, Any], offset: int, stats: ParseStats) -> list[Turn | FileEdit]:
        kind = as_str(record.get("type")) or "<none>"
        payload = _payload(record)
        if kind == "session_meta":
            self.meta(payload)
        elif kind == "turn_context":
            self.cwd = as_str(payload.get("cwd")) or self.cwd
            self.model = as_str(payload.get("model")) or self.model
        elif kind == "response_item":
            return self._item(record, payload, offset, stats)
        elif kind == "compacted":
            text = as_str(payload.get("message")) or ""
            return [self._turn(record, offset, "user", text, is_compact_summary=True)]
        elif kind not in KNOWN_TYPES:
            stats.unknown_types[kind] += 1
        return []

    def _item(self, record: dict[str, Any], payload: dict[str, Any], offset: int,
              stats: ParseStats) -> list[Turn | FileEdit]:
        kind = as_str(payload.get("type")) or "<none>"
        if kind == "message":
            return [self._message(record, payload, offset)]
        if kind in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
            return self._call(record, payload, offset)
        if kind in ("function_call_output", "custom_tool_call_output"):
            return self._output(record, payload, offset)
        if kind not in SKIPPED_ITEMS:
            stats.unknown_types[f"response_item/{kind}"] += 1
        return []

    def _message(self, record: dict[str, Any], payload: dict[str, Any], offset: int) -> Turn:
        role = as_str(payload.get("role")) or "user"
        text = readable(_content_text(payload.get("content")).strip())
        if role in ("user", "assistant"):
            is_meta = role == "user" and text.startswith(BOILERPLATE_PREFIXES)
            return self._turn(record, offset, role, text, is_meta=is_meta)
        return self._turn(record, offset, "system", text, is_meta=True)  # developer / system instructions

    def _call(self, record: dict[str, Any], payload: dict[str, Any], offset: int) -> list[Turn | FileEdit]:
        call = _tool_call(payload)
        if call.id:
            self.tool_names.put(call.id, call.name)
        turn = self._turn(record, offset, "assistant", "", tool_calls=(call,))
        edits = [FileEdit(self.session_id, turn.uuid, "apply_patch", self._absolute(path), old, new,
                          turn.timestamp)
                 for path, old, new in patch_edits(_patch_text(call.name, payload))]
        if not edits or call.id is None:
            return [turn, *edits]
        pushed_out = self.pending.put(call.id, edits)
        return [turn, *(pushed_out[1] if pushed_out else [])]

    def _output(self, record: dict[str, Any], payload: dict[str, Any], offset: int) -> list[Turn | FileEdit]:
        call_id = as_str(payload.get("call_id")) or ""
        body, ok = _outcome(payload.get("output"))
        name = self.tool_names.get(call_id) or "?"
        label = f"{name} error" if ok is False else name
        text = f"[tool_result {label}] {clip(readable(body).strip(), RESULT_CHARS)}"
        turn = self._turn(record, offset, "user", text, injected=has_marker(body))
        edits = self.pending.pop(call_id) or []
        return [turn, *(dataclasses.replace(edit, succeeded=ok) for edit in edits)]

    def _turn(self, record: dict[str, Any], offset: int, role: str, text: str, **fields: Any) -> Turn:
        fields.setdefault("injected", has_marker(text))
        return Turn(
            uuid=f"{self.session_id}:{offset}",
            parent_uuid=None,
            session_id=self.session_id,
            role=role,
            text=text,
            timestamp=as_str(record.get("timestamp")),
            cwd=self.cwd,
            git_branch=self.git_branch,
            model=self.model if role == "assistant" else None,
            version=self.version,
            **fields,
        )

    def _absolute(self, path: str) -> str:
        """apply_patch paths may be relative to the session's working folder."""
        if is_absolute(path) or not self.cwd:
            return path
        return f"{self.cwd.rstrip('/')}/{path}"


def _payload(record: dict[str, Any]) -> dict[str, Any]:
    payload = record.get("payload")
    return payload if isinstance(payload, dict) else {}


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        text = as_str(block.get("text"))
        if text is not None:
            parts.append(text)
        elif block.get("type") == "input_image":
            parts.append("[image]")
    return "\n".join(parts)


def _tool_call(payload: dict[str, Any]) -> ToolCall:
    kind = payload.get("type")
    call_id = as_str(payload.get("call_id")) or as_str(payload.get("id"))
    if kind == "function_call":
        raw = as_str(payload.get("arguments")) or ""
        try:
            args = json_value(raw)
        except ValueError:
            args = None
        tool_input = args if isinstance(args, dict) else {"arguments": raw}
        return ToolCall(call_id, as_str(payload.get("name")) or "?", clip_strings(tool_input))
    if kind == "custom_tool_call":  # free-form input, e.g. apply_patch's patch text
        return ToolCall(call_id, as_str(payload.get("name")) or "?",
                        clip_strings({"input": payload.get("input")}))
    action = payload.get("action")
    name = "local_shell" if kind == "local_shell_call" else "web_search"
    return ToolCall(call_id, name, clip_strings(action) if isinstance(action, dict) else {})


def _patch_text(name: str, payload: dict[str, Any]) -> str:
    """The apply_patch text of a call: the apply_patch tool, or a shell command running apply_patch."""
    if payload.get("type") == "custom_tool_call":
        return (as_str(payload.get("input")) or "") if name == "apply_patch" else ""
    try:
        args = json_value(as_str(payload.get("arguments")) or "")
    except ValueError:
        return ""
    if not isinstance(args, dict):
        return ""
    if name == "apply_patch":
        return as_str(args.get("input")) or as_str(args.get("patch")) or ""
    command = args.get("command")
    if isinstance(command, list) and command and command[0] in ("apply_patch", "applypatch"):
        return "\n".join(c for c in command[1:] if isinstance(c, str))
    if isinstance(command, str) and command.lstrip().startswith(("apply_patch", "applypatch")):
        return command
    return ""


_FILE_HEADER = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$")


def patch_edits(patch: str) -> list[tuple[str, str | None, str | None]]:
    """(path, old text, new text) for each hunk of an apply_patch patch.

    Add: the new file (old None). Delete: both None. Update: one entry per ``@@`` hunk, old = context
    and removed lines, new = context and added lines; an update with no hunk (a pure move) has both None.
    """
    start, end = patch.find("*** Begin Patch"), patch.rfind("*** End Patch")
    if start < 0:
        return []
    body = patch[start:end if end > start else len(patch)].splitlines()[1:]
    edits: list[tuple[str, str | None, str | None]] = []
    for action, path, lines in _files(body):
        if action == "Add":
            edits.append((path, None, "\n".join(line[1:] for line in lines if line.startswith("+"))))
        elif action == "Delete":
            edits.append((path, None, None))
        else:
            hunks: list[tuple[str | None, str | None]] = [*_hunks(lines)] or [(None, None)]
            edits.extend((path, old, new) for old, new in hunks)
    return edits


def _files(body: list[str]) -> list[tuple[str, str, list[str]]]:
    files: list[tuple[str, str, list[str]]] = []
    for line in body:
        header = _FILE_HEADER.match(line)
        if header:
            files.append((header.group(1), header.group(2), []))
        elif files:
            files[-1][2].append(line)
    return files


def _hunks(lines: list[str]) -> list[tuple[str, str]]:
    hunks: list[tuple[list[str], list[str]]] = []
    for line in lines:
        if line.startswith("@@") or not hunks:
            hunks.append(([], []))
            if line.startswith("@@"):
                continue
        if line.startswith("*** "):  # "*** Move to:", "*** End of File"
            continue
        old, new = hunks[-1]
        if line.startswith("-"):
            old.append(line[1:])
        elif line.startswith("+"):
            new.append(line[1:])
        else:
            old.append(line[1:])
            new.append(line[1:])
    # A hunk of context lines only (a "@@" that just narrows the position) changes nothing.
    return [("\n".join(old), "\n".join(new)) for old, new in hunks if old != new]


def _outcome(output: Any) -> tuple[str, bool | None]:
    """The readable output of a call and whether it succeeded (None: the output does not say)."""
    if isinstance(output, dict):  # some versions store {"content": …, "success": …}
        success = output.get("success")
        return _plain(output.get("content")), success if isinstance(success, bool) else None
    text = as_str(output) or ""
    if text.startswith("{"):  # shell and apply_patch outputs: {"output": …, "metadata": {"exit_code": …}}
        try:
            wrapped = json_value(text)
        except ValueError:
            wrapped = None
        if isinstance(wrapped, dict) and "output" in wrapped:
            metadata = wrapped.get("metadata")
            code = metadata.get("exit_code") if isinstance(metadata, dict) else None
            body = _plain(wrapped.get("output"))
            return body, code == 0 if isinstance(code, int) else _said_success(body)
    exit_code = _EXIT_CODE.search(text[:200])
    if exit_code:
        return text, exit_code.group(1) == "0"
    return text, _said_success(text)


def _said_success(text: str) -> bool | None:
    return True if text.startswith("Success") else None


def _plain(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return _content_text(value)
    return "" if value is None else json.dumps(value)
