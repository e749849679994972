"""Claude Code session transcripts (``~/.claude/projects/<dir>/<session>.jsonl``), 1.0.24 to 2.1.x.

The format is internal to Claude Code and changes between releases (docs: "scripts that parse these
files directly can break on any release"), so every field is optional here and unknown record types are
counted, not fatal. See shared/reference/claude-code-transcripts.md for the observed format.

One ``Turn`` per record that has a place in the conversation tree (user, assistant, system,
attachment, summary): keeping them one-to-one keeps ``parent_uuid`` chains walkable. ``progress``
records are skipped, and a turn whose parent was skipped gets that record's own parent instead, so
chains stay walkable across them (within one read: the skipped parents are remembered per read).
Edits become ``FileEdit`` values once their tool result says whether they happened.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lore.capture.transcripts import (
    LORE_CONTEXT_MARKER,
    RESULT_CHARS,
    FileEdit,
    ParseStats,
    Recent,
    ToolCall,
    Turn,
    agent_id_for,
    as_str,
    clip,
    clip_strings,
    first_record,
    has_marker,
    iter_records,
    readable,
    session_id_for,
)

# Record types that hold nothing to learn from: counted in ParseStats.by_type, then skipped. The last
# four are reported by other parsers but were not in our sample; knowing them keeps them out of
# unknown_types.
SKIPPED_TYPES = frozenset({
    "progress", "file-history-snapshot", "queue-operation", "permission-mode", "last-prompt",
    "custom-title", "agent-name", "pr-link", "mode",
})
TURN_TYPES = frozenset({"user", "assistant", "system", "attachment", "summary"})
KNOWN_TYPES = SKIPPED_TYPES | TURN_TYPES

# User-role text that no person typed. "[Request interrupted…" is left out on purpose: it is the
# person stopping the agent, a correction signal.
META_PREFIXES = (
    "<command-name>", "<command-message>", "<command-args>", "<local-command-stdout>",
    "<local-command-stderr>", "<local-command-caveat>", "Caveat: The messages below were generated",
    "<system-reminder>", "<task-notification>", "<bash-stdout>", "<bash-stderr>",
)
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})


class ClaudeCodeReader:
    agent = "claude-code"

    def matches(self, path: Path) -> bool:
        if path.suffix != ".jsonl" or path.name.startswith("rollout-"):
            return False
        first = first_record(path)
        if first is None:  # empty, or a first line too long to peek: Claude Code's folders hold both
            return True
        return "sessionId" in first or as_str(first.get("type")) in KNOWN_TYPES

    def read(self, path: Path, offset: int = 0, stats: ParseStats | None = None) -> Iterator[Turn | FileEdit]:
        stats = stats if stats is not None else ParseStats()
        session = _Session(path)
        for start, record in iter_records(path, offset, stats):
            yield from session.consume(record, start, stats)
        yield from session.unresolved_edits()


class _Session:
    """What one read of one file remembers between lines, each in bounded memory."""

    def __init__(self, path: Path) -> None:
        self.fallback_session = session_id_for(path)
        self.file_agent = agent_id_for(path)
        self.tool_names: Recent[str, str] = Recent()  # tool_use id -> tool name, to label results
        self.pending: Recent[str, list[FileEdit]] = Recent()  # tool_use id -> edits awaiting a result
        self.skipped: Recent[str, str | None] = Recent()  # skipped record uuid -> nearest kept ancestor
        self.roots: Recent[str, str] = Recent()  # inline sidechain record uuid -> uuid of its chain's root

    def consume(self, record: dict[str, Any], offset: int, stats: ParseStats) -> list[Turn | FileEdit]:
        kind = as_str(record.get("type")) or "<none>"
        if kind == "user":
            return self._user(record, offset)
        if kind == "assistant":
            return self._assistant(record, offset)
        if kind == "system":
            return [self._system(record, offset)]
        if kind == "attachment":
            return [self._attachment(record, offset)]
        if kind == "summary":
            return [self._summary(record, offset)]
        if kind not in SKIPPED_TYPES:
            stats.unknown_types[kind] += 1
        self._skip(record)
        return []

    def unresolved_edits(self) -> list[FileEdit]:
        """Edits whose result was not read (the file ends, or is still being written): success unknown."""
        return [edit for edits in self.pending.drain() for edit in edits]

    # -- record types ---------------------------------------------------------------------------

    def _user(self, record: dict[str, Any], offset: int) -> list[Turn | FileEdit]:
        content = _message(record).get("content")
        texts: list[str] = []
        results: list[str] = []
        edits: list[Turn | FileEdit] = []
        injected = False
        for block in _blocks(content):
            kind = block.get("type")
            if kind == "text":
                texts.append(as_str(block.get("text")) or "")
            elif kind == "image":
                texts.append("[image]")
            elif kind == "document":
                texts.append("[document]")
            elif kind == "tool_result":
                injected = injected or has_marker(block.get("content"))
                results.append(self._result_line(block))
                edits.extend(self._settle(block, record.get("toolUseResult")))
        text = readable("\n".join(texts + results).strip())
        prompt = "\n".join(texts).lstrip()
        is_meta = record.get("isMeta") is True or prompt.startswith(META_PREFIXES)
        turn = self._turn(record, offset, "user", text, is_meta=is_meta,
                          injected=injected or has_marker(texts),
                          is_compact_summary=record.get("isCompactSummary") is True)
        return [turn, *edits]

    def _assistant(self, record: dict[str, Any], offset: int) -> list[Turn | FileEdit]:
        message = _message(record)
        uuid = self._uuid(record, offset)
        texts: list[str] = []
        calls: list[ToolCall] = []
        edits: list[Turn | FileEdit] = []
        for block in _blocks(message.get("content")):
            kind = block.get("type")
            if kind == "text":
                texts.append(as_str(block.get("text")) or "")
            elif kind in ("tool_use", "server_tool_use"):
                call = self._call(block)
                calls.append(call)
                edits.extend(self._expect_edits(call, block, record, uuid))
            # thinking and redacted_thinking are the model's scratch work, never learned from.
        text = readable("\n".join(texts).strip())
        turn = self._turn(record, offset, "assistant", text, tool_calls=tuple(calls),
                          injected=has_marker(texts), model=as_str(message.get("model")))
        return [turn, *edits]

    def _system(self, record: dict[str, Any], offset: int) -> Turn:
        subtype = as_str(record.get("subtype"))
        text = as_str(record.get("content")) or f"[{subtype or 'system'}]"
        errors = record.get("hookErrors")
        if isinstance(errors, list) and errors:
            text += "\n" + clip("\n".join(str(e) for e in errors), RESULT_CHARS)
        parent = None
        if subtype == "compact_boundary":
            # The boundary starts a new root; its logical parent links the history across compaction.
            parent = as_str(record.get("logicalParentUuid"))
        return self._turn(record, offset, "system", readable(text), is_meta=True,
                          injected=has_marker(record.get("content")), parent=parent)

    def _attachment(self, record: dict[str, Any], offset: int) -> Turn:
        attachment = record.get("attachment")
        att = attachment if isinstance(attachment, dict) else {}
        kind = as_str(att.get("type")) or "attachment"
        if kind == "queued_command":
            # A prompt typed while the agent worked: 2.1.x writes it only as this attachment.
            text = _plain(att.get("prompt")).strip()
            human = att.get("commandMode", "prompt") == "prompt" and _origin(att) == "human"
            is_meta = not human or att.get("isMeta") is True or text.startswith(META_PREFIXES)
            return self._turn(record, offset, "user", readable(text), is_meta=is_meta,
                              injected=has_marker(att))
        if kind == "hook_additional_context":
            text = _plain(att.get("content"))
        else:
            label = " ".join(filter(None, [kind, as_str(att.get("hookName"))]))
            body = as_str(att.get("stdout")) or _plain(att.get("content"))
            text = f"[{label}] {clip(body, RESULT_CHARS)}".rstrip()
        return self._turn(record, offset, "system", readable(text.strip()), is_meta=True,
                          injected=has_marker(att))

    def _summary(self, record: dict[str, Any], offset: int) -> Turn:
        leaf = as_str(record.get("leafUuid"))
        text = as_str(record.get("summary")) or ""
        return Turn(
            uuid=f"{leaf}:summary" if leaf else f"{self.fallback_session}:{offset}",
            parent_uuid=leaf,
            session_id=as_str(record.get("sessionId")) or self.fallback_session,
            role="summary",
            text=text,
            is_meta=False,
            injected=LORE_CONTEXT_MARKER in text,
        )

    def _skip(self, record: dict[str, Any]) -> None:
        uuid = as_str(record.get("uuid"))
        if uuid:
            self.skipped.put(uuid, self._parent(record))

    # -- the envelope every turn shares -----------------------------------------------------------

    def _turn(self, record: dict[str, Any], offset: int, role: str, text: str, *,
              parent: str | None = None, **fields: Any) -> Turn:
        uuid = self._uuid(record, offset)
        parent = parent or self._parent(record)
        sidechain = record.get("isSidechain") is True
        return Turn(
            uuid=uuid,
            parent_uuid=parent,
            session_id=as_str(record.get("sessionId")) or self.fallback_session,
            role=role,
            text=text,
            timestamp=as_str(record.get("timestamp")),
            cwd=as_str(record.get("cwd")),
            git_branch=as_str(record.get("gitBranch")),
            is_sidechain=sidechain,
            agent_id=as_str(record.get("agentId")) or self.file_agent or self._inline_agent(
                uuid, parent, sidechain),
            version=as_str(record.get("version")),
            **fields,
        )

    def _uuid(self, record: dict[str, Any], offset: int) -> str:
        return as_str(record.get("uuid")) or f"{self.fallback_session}:{offset}"

    def _parent(self, record: dict[str, Any]) -> str | None:
        parent = as_str(record.get("parentUuid"))
        if parent is not None and parent in self.skipped:
            return self.skipped.get(parent)
        return parent

    def _inline_agent(self, uuid: str, parent: str | None, sidechain: bool) -> str | None:
        """1.0.x wrote sub-agents into the main file without an id: name each by its chain's root."""
        if not sidechain:
            return None
        root = uuid if parent is None else self.roots.get(parent)
        if root is not None:
            self.roots.put(uuid, root)
        return root

    # -- tool calls, results and edits ----------------------------------------------------------

    def _call(self, block: dict[str, Any]) -> ToolCall:
        call_id = as_str(block.get("id"))
        name = as_str(block.get("name")) or "?"
        raw = block.get("input")
        if call_id:
            self.tool_names.put(call_id, name)
        return ToolCall(call_id, name, clip_strings(raw) if isinstance(raw, dict) else {})

    def _expect_edits(self, call: ToolCall, block: dict[str, Any], record: dict[str, Any],
                      uuid: str) -> list[FileEdit]:
        """Edits of this call; held until the result says whether they happened, or returned now."""
        raw = block.get("input")
        if call.name not in EDIT_TOOLS or not isinstance(raw, dict):
            return []
        session = as_str(record.get("sessionId")) or self.fallback_session
        edits = file_edits(call.name, raw, session, uuid, as_str(record.get("timestamp")))
        if not edits or call.id is None:
            return edits
        pushed_out = self.pending.put(call.id, edits)
        return pushed_out[1] if pushed_out else []

    def _result_line(self, block: dict[str, Any]) -> str:
        name = self.tool_names.get(as_str(block.get("tool_use_id")) or "") or "?"
        label = f"{name} error" if block.get("is_error") is True else name
        return f"[tool_result {label}] {clip(_plain(block.get('content')).strip(), RESULT_CHARS)}"

    def _settle(self, block: dict[str, Any], outcome: Any) -> list[FileEdit]:
        edits = self.pending.pop(as_str(block.get("tool_use_id")) or "")
        if not edits:
            return []
        # A rejected or failed call is is_error, and its toolUseResult is the string "Error: …".
        failed = block.get("is_error") is True or (isinstance(outcome, str) and outcome.startswith("Error"))
        return [dataclasses.replace(edit, succeeded=not failed) for edit in edits]


def file_edits(tool: str, raw: dict[str, Any], session_id: str, message_uuid: str,
               timestamp: str | None) -> list[FileEdit]:
    """The file changes a Claude Code edit tool call asks for (MultiEdit: one per edit)."""
    path = as_str(raw.get("file_path")) or as_str(raw.get("notebook_path"))
    if not path:
        return []
    if tool == "MultiEdit":
        pairs = [(as_str(e.get("old_string")), as_str(e.get("new_string")))
                 for e in raw.get("edits") or [] if isinstance(e, dict)]
    elif tool == "Write":
        pairs = [(None, as_str(raw.get("content")))]
    elif tool == "NotebookEdit":
        pairs = [(None, as_str(raw.get("new_source")))]
    else:
        pairs = [(as_str(raw.get("old_string")), as_str(raw.get("new_string")))]
    return [FileEdit(session_id, message_uuid, tool, path, old, new, timestamp) for old, new in pairs]


def _message(record: dict[str, Any]) -> dict[str, Any]:
    message = record.get("message")
    return message if isinstance(message, dict) else {}


def _blocks(content: Any) -> list[dict[str, Any]]:
    """Message content as a list of blocks: a plain string is one text block."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _plain(content: Any) -> str:
    """Readable text of a tool result, hook context or prompt: a string, or a list of blocks or strings."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for item in content:
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, dict):
            parts.append(_block_text(item))
    return "\n".join(p for p in parts if p)


def _block_text(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return as_str(block.get("text")) or ""
    if kind == "tool_reference":
        return f"[tool_reference {as_str(block.get('tool_name')) or '?'}]"
    return f"[{kind}]" if isinstance(kind, str) else ""


def _origin(attachment: dict[str, Any]) -> str:
    origin = attachment.get("origin")
    if isinstance(origin, dict):
        return as_str(origin.get("kind")) or "human"
    return "human"  # no origin recorded: taken as typed by a person, as other readers of the format do
