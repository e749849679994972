"""Transcript readers: real Claude Code and Codex slices (tests/fixtures/transcripts, see SOURCES.md) and
hand-made edge cases (partial lines, garbage, unknown types, Lore's own injected context)."""

from __future__ import annotations

import dataclasses
import json
import tracemalloc
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from lore.capture import transcripts
from lore.capture.claude_code import ClaudeCodeReader
from lore.capture.codex import CodexReader, patch_edits
from lore.capture.readers import READERS, reader_for
from lore.capture.transcripts import (
    LORE_CONTEXT_MARKER,
    FileEdit,
    ParseStats,
    Turn,
    session_id_for,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"
DAAAIN = FIXTURES / "daaain-claude-code-log"
SPOTTER = FIXTURES / "marot-spotter"
BLAME = FIXTURES / "ai4curation-ai-blame" / "-Users-cjm-repos-ai-blame.rs-tests-examples-simple"
VIEWER = FIXTURES / "d-kimuson-claude-code-viewer" / "sample-project"
ROLLOUT = (FIXTURES / "ai4curation-ai-blame" / "codex-sessions" / "2025" / "12" / "29"
           / "rollout-2025-12-29T11-54-27-019b6b08-58f3-7580-9dca-fe3f30a10650.jsonl")
SAMPLE = DAAAIN / "-Users-dain-workspace-claude-code-log-sample"
REJECTED = SAMPLE / "0d3a8e6f-290f-4105-a327-a2496e5e2a83.jsonl"
OLDEST = SAMPLE / "fe869ecb-c176-478f-9734-7e4b8ef12cff.jsonl"
WORKTREES = DAAAIN / "-experiments-worktrees" / "ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl"
SUBAGENT_21 = (DAAAIN / "-experiments-worktrees" / "ef958aa1-0e93-49f0-bb71-150f63befcd1" / "subagents"
               / "agent-a6aa8ad077d9ea083.jsonl")
SUBAGENT_20 = DAAAIN / "-Users-dain-workspace-coderabbit-review-helper" / "agent-668b5ac2.jsonl"
COMPACTED = SPOTTER / "8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"
ACOMPACT = SPOTTER / "8463c716-a2ea-4c14-9efa-87158ebd9f20" / "subagents" / "agent-acompact-f46190.jsonl"
INIT = DAAAIN / "-Users-dain-workspace-JSSoundRecorder" / "7acd37a8-2745-4b58-a8a9-46164b22ad9e.jsonl"
MANIFEST = DAAAIN / "-src-deep-manifest" / "a7da6a22-facc-4fcd-8bab-f83c87862004.jsonl"
IDEAS = DAAAIN / "-experiments-ideas" / "03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl"
WRITES = BLAME / "2c965cfd-41e4-4e31-8339-2986ebced03c.jsonl"
INLINE = VIEWER / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "transcripts"

CLAUDE = ClaudeCodeReader()
CODEX = CodexReader()


def read(path: Path, reader: Any = CLAUDE, offset: int = 0) -> tuple[list[Turn], list[FileEdit], ParseStats]:
    stats = ParseStats()
    values = list(reader.read(path, offset, stats))
    return ([v for v in values if isinstance(v, Turn)], [v for v in values if isinstance(v, FileEdit)], stats)


def by_uuid(turns: Iterable[Turn]) -> dict[str, Turn]:
    return {t.uuid: t for t in turns}


def write_lines(path: Path, records: Iterable[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def prompt_line(uuid: str, text: str) -> bytes:
    return json.dumps({"type": "user", "uuid": uuid, "sessionId": "s", "message": {"content": text}}).encode()


def raw_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


# -- Claude Code: messages and content blocks -----------------------------------------------------------


def test_user_prompt_and_envelope():
    turns, _, _ = read(WRITES)
    first = turns[0]
    assert first.role == "user"
    assert first.text == "create some files for test purposes. a small python file, a md file, a yaml, a json"
    assert first.uuid == "e947d144-88ef-4779-8fc9-3e0a66b9af9f"
    assert first.parent_uuid is None
    assert first.session_id == "2c965cfd-41e4-4e31-8339-2986ebced03c"
    assert first.timestamp == "2025-12-28T15:20:39.093Z"
    assert first.cwd == "/Users/cjm/repos/ai-blame-test"
    assert first.version == "2.0.75"
    assert not (first.is_meta or first.is_sidechain or first.injected or first.tool_calls)


def test_assistant_text_model_and_thinking_excluded():
    turns = by_uuid(read(WRITES)[0])
    thinking_only = turns["6fc77626-91ba-47b3-959a-c50bc7c6a882"]  # a record holding one thinking block
    assert thinking_only.role == "assistant" and thinking_only.text == ""
    assert thinking_only.model == "claude-opus-4-5-20251101"
    assert turns["522aab75-1871-4960-ad6c-7a0e2f3e4f84"].text == "I'll create four simple test files for you."
    everything = " ".join(t.text for t in turns.values())
    assert "The user wants me to create some test files" not in everything  # the thinking block's text


def test_tool_calls_and_results():
    turns = by_uuid(read(WRITES)[0])
    call = turns["9f90a82e-7696-4713-8799-1186d8cdf6ab"].tool_calls[0]
    assert (call.id, call.name) == ("toolu_01Az5RFXg2kqmCM5Ppu91oaU", "Write")
    assert call.input["file_path"] == "/Users/cjm/repos/ai-blame-test/example.py"
    result = turns["6714d418-4b53-457b-ba92-b5e450dbcc2d"]
    assert result.role == "user"
    assert result.text == ("[tool_result Write] File created successfully at: "
                           "/Users/cjm/repos/ai-blame-test/example.py")


def test_long_tool_results_are_short_lines():
    turns = by_uuid(read(OLDEST)[0])
    listing = turns["43db980d-54ad-4e4d-a242-b5e2dc63ba34"]  # an LS result of about 2 KB
    assert listing.text.startswith("[tool_result LS] - /Users/dain/workspace/claude-code-log/")
    assert listing.text.endswith("…")
    assert len(listing.text) <= len("[tool_result LS] ") + transcripts.RESULT_CHARS


def test_long_tool_inputs_are_cut_but_edits_keep_the_full_text(tmp_path: Path):
    content = "x" * 5000
    path = write_lines(tmp_path / "s.jsonl", [
        {"type": "assistant", "uuid": "a1", "sessionId": "s", "message": {"content": [
            {"type": "tool_use", "id": "t1", "name": "Write",
             "input": {"file_path": "/f.txt", "content": content}}]}},
    ])
    turns, edits, _ = read(path)
    written = turns[0].tool_calls[0].input["content"]
    assert len(written) == transcripts.INPUT_CHARS and written.endswith("…")
    assert edits[0].new_text == content and edits[0].succeeded is None


def test_tool_reference_blocks_in_results():
    turns = by_uuid(read(WORKTREES)[0])
    assert turns["6d26e720-e434-4a95-aeed-e4c2ed73ac3c"].text == (
        "[tool_result ToolSearch] [tool_reference TaskCreate]\n[tool_reference SendMessage]\n"
        "[tool_reference TaskList]\n[tool_reference TaskGet]")


def test_image_block_becomes_a_placeholder():
    turns = by_uuid(read(REJECTED)[0])
    prompt = turns["e06da9c3-8cfb-44d1-a637-568f0477c420"]
    assert prompt.text.startswith("[image]\nI think the library is setting it, it's an inline style")
    assert "iVBOR" not in prompt.text and not prompt.is_meta


def test_ide_context_block_stays_with_the_prompt():
    turns = by_uuid(read(INIT)[0])
    prompt = turns["f1630df2-ec7f-43af-b878-f828abe37464"]
    assert prompt.text.startswith("<ide_opened_file>The user opened the file /Users/dain/workspace/")
    assert "OK, so this was just so you know what there is now" in prompt.text
    assert not prompt.is_meta


# -- FileEdits ----------------------------------------------------------------------------------------


def test_write_and_edit_become_file_edits_with_success():
    _, edits, _ = read(WRITES)
    found = {e.file_path.rsplit("/", 1)[-1]: e for e in edits}
    example = found["example.py"]
    assert (example.tool, example.old_text, example.succeeded) == ("Write", None, True)
    assert (example.new_text or "").startswith('"""Simple example module for testing."""')
    assert example.message_uuid == "9f90a82e-7696-4713-8799-1186d8cdf6ab"
    assert example.session_id == "2c965cfd-41e4-4e31-8339-2986ebced03c"
    gitignore = found[".gitignore"]
    assert gitignore.tool == "Edit" and gitignore.succeeded is True
    assert gitignore.old_text == "# Virtual environments\n.venv"
    assert gitignore.new_text == "# Virtual environments\n.venv\n\n# IDE settings\n.vscode/\n.idea/"
    assert found[".python-version"].old_text == "3.12" and found[".python-version"].new_text == "3.13"
    # The slice leaves out these calls' results: success is not known.
    unknown = {name for name, e in found.items() if e.succeeded is None}
    assert unknown == {"notes.md", "config.yaml", "data.json"}


def test_rejected_multiedit_gives_one_failed_edit_per_edit():
    _, edits, _ = read(REJECTED)
    raw = {r["uuid"]: r for r in raw_lines(REJECTED)}
    first = [e for e in edits if e.message_uuid == "2e0959de-c3fc-41a5-bb58-2df3e3bd82cf"]
    recorded = raw["2e0959de-c3fc-41a5-bb58-2df3e3bd82cf"]["message"]["content"][0]["input"]["edits"]
    assert len(first) == len(recorded) >= 1
    assert [(e.old_text, e.new_text) for e in first] == [(r["old_string"], r["new_string"]) for r in recorded]
    assert all(e.tool == "MultiEdit" and e.succeeded is False for e in edits)
    assert len({e.message_uuid for e in edits}) == 3  # all three MultiEdit calls of the slice were rejected


def test_multiedit_success_and_tool_use_errors():
    _, edits, _ = read(INLINE)
    applied = [e for e in edits if e.message_uuid == "467e1413-f1bf-4595-9db5-cce0f3301671"]
    assert len(applied) == 5 and all(e.succeeded is True for e in applied)
    assert applied[0].file_path == "/path/to/Demo/todo-app/src/hooks/useTodos.test.ts"
    assert applied[0].new_text == "import { useTodos } from './useTodos';"
    refused = {e.tool: e.succeeded for e in edits if e.file_path == "/path/to/Demo/types/index.ts"}
    assert refused == {"Edit": False, "MultiEdit": False, "Write": False}  # "File has not been read yet"


def test_rejected_tool_result_lines_and_interruptions():
    turns = by_uuid(read(REJECTED)[0])
    rejected = turns["08e0a953-8eda-451e-8620-fcff9b136fbc"]
    assert rejected.text.startswith("[tool_result MultiEdit error] The user doesn't want to proceed")
    interrupted = turns["eb40ba61-4d7e-429b-a786-5a45446b7f61"]
    assert interrupted.text == "[Request interrupted by user for tool use]" and not interrupted.is_meta
    correction = turns["e0a26774-6728-40b4-886b-6a0414cee1ef"]
    assert correction.text == "You can set group.visible using the vis library which is less work"
    assert correction.parent_uuid == interrupted.uuid


# -- summaries, compaction, system records, attachments --------------------------------------------------


def test_summary_records():
    turns, _, stats = read(OLDEST)
    summaries = [t for t in turns if t.role == "summary"]
    assert [t.text for t in summaries] == [
        "System Message Parsing and HTML Rendering Upgrade",
        "Template Testing & Style Guide for Code Log Project",
        "JSON Structure Analysis for Complex Conversation Logs",
    ]
    assert summaries[0].uuid == "7e17c050-6107-4772-83da-a26846a30d3c:summary"
    assert summaries[0].parent_uuid == "7e17c050-6107-4772-83da-a26846a30d3c"
    assert summaries[0].session_id == "fe869ecb-c176-478f-9734-7e4b8ef12cff"  # from the file name
    assert stats.by_type["summary"] == 3


def test_summary_only_file():
    turns, edits, stats = read(SAMPLE / "4e27c414-a885-46a0-b5c8-d58e1417377d.jsonl")
    assert [(t.role, t.text) for t in turns] == [("summary", "TUI Cache Handling: Empty State Fix")]
    assert not edits and stats.records == 1 and not stats.partial_tail


def test_empty_file():
    path = SAMPLE / "4fe49c7c-ff82-4ac7-b3f2-79c22036bd58.jsonl"
    assert path.stat().st_size == 0
    turns, edits, stats = read(path)
    assert turns == [] and edits == []
    assert (stats.lines, stats.records, stats.malformed, stats.end_offset) == (0, 0, 0, 0)
    assert not stats.partial_tail


def test_compact_boundary_and_compact_summary():
    turns = by_uuid(read(COMPACTED)[0])
    boundary = turns["43e7d802-cfb8-45fb-a4b0-4260c4f4c19b"]
    assert (boundary.role, boundary.text, boundary.is_meta) == ("system", "Conversation compacted", True)
    # The logicalParentUuid: history continues across the compaction.
    assert boundary.parent_uuid == "baf018bd-4787-46a4-9bd2-4e3fb5024f70"
    summary = turns["01ea0ad0-925d-4fd3-8171-cb8027dab4f5"]
    assert summary.is_compact_summary and summary.parent_uuid == boundary.uuid
    assert summary.text.startswith("This session is being continued from a previous conversation")


def test_turns_after_skipped_progress_records_link_to_the_kept_ancestor():
    raw = {r.get("uuid"): r for r in raw_lines(COMPACTED)}
    after = "05374c7e-6abd-4552-85b0-79ed0b50e9c0"
    assert raw[raw[after]["parentUuid"]]["type"] == "progress"
    turns = by_uuid(read(COMPACTED)[0])
    assert turns[after].parent_uuid == "01ea0ad0-925d-4fd3-8171-cb8027dab4f5"


def test_old_style_system_hook_records():
    turns, _, _ = read(REJECTED)
    system = [t for t in turns if t.role == "system"]
    assert len(system) == 4 and all(t.is_meta for t in system)
    # Recorded as "\u001b[1mStop\u001b[22m [uv run pyright…": the ANSI codes are removed.
    assert system[0].text.startswith("Stop [uv run pyright 2>&1] completed successfully")
    assert all("\x1b" not in t.text for t in turns)


def test_system_subtypes():
    turns = by_uuid(read(WORKTREES)[0])
    assert turns["bf504594-c6d1-4610-84cc-a964b4a32285"].text == "[turn_duration]"
    away = turns["e8b0fd84-dfca-4e0c-85f8-8a4b212caf95"]
    assert away.text.startswith("Running a teammate experiment: alice/bob/carol each researched a topic")
    assert away.role == "system" and away.is_meta
    stop_hooks = [t for t in turns.values() if t.text == "[stop_hook_summary]"]
    assert len(stop_hooks) == 1 and stop_hooks[0].is_meta
    local = [t for t in read(SPOTTER / "short.jsonl")[0] if t.role == "system"]
    assert [t.text for t in local] == [
        "<command-name>/model</command-name>\n            <command-message>model</command-message>\n"
        "            <command-args></command-args>",
        "<local-command-stdout>Kept model as Default (recommended)</local-command-stdout>",
    ]


def test_attachments():
    turns = by_uuid(read(WORKTREES)[0])
    hook = turns["1a39b566-c11f-4d25-bf32-158094f07434"]
    assert hook.text.startswith('[hook_success SessionStart:startup] {"hookSpecificOutput"')
    context = turns["440c63a2-fac3-4f0d-827a-81cfe50d8964"]
    assert context.text == "clmail 6.0.10 session registered: -experiments/worktrees (kitty)"
    assert turns["6738e66f-3342-484c-9434-241f553e4787"].text == "[deferred_tools_delta]"
    assert turns["f8d13cc3-a94c-49ed-9bad-dfa19cb45fb8"].text.startswith("[skill_listing] - update-config:")
    assert turns["34b47ba6-998b-48db-82cd-7c237ab588a8"].text == "[task_reminder]"
    attachments = [t for t in turns.values() if t.role == "system" and t.uuid in {
        "1a39b566-c11f-4d25-bf32-158094f07434", "440c63a2-fac3-4f0d-827a-81cfe50d8964",
        "6738e66f-3342-484c-9434-241f553e4787", "f8d13cc3-a94c-49ed-9bad-dfa19cb45fb8"}]
    assert len(attachments) == 4 and all(t.is_meta and not t.injected for t in attachments)
    # The prompt's parent is an attachment: attachments keep the chain.
    assert turns["0ae44287-6fb8-4325-acd4-934696671e09"].parent_uuid == context.uuid


def test_queued_command_attachment_is_a_prompt_when_a_person_typed_it(tmp_path: Path):
    def queued(uuid: str, **attachment: Any) -> dict[str, Any]:
        return {"type": "attachment", "uuid": uuid, "sessionId": "s",
                "attachment": {"type": "queued_command", **attachment}}

    path = write_lines(tmp_path / "s.jsonl", [
        queued("q1", prompt="use pnpm, not npm", commandMode="prompt", origin={"kind": "human"}),
        queued("q2", prompt="message from another session", commandMode="prompt", origin={"kind": "peer"}),
        queued("q3", prompt="<task-notification>done</task-notification>", commandMode="task-notification"),
    ])
    turns = by_uuid(read(path)[0])
    assert (turns["q1"].role, turns["q1"].text, turns["q1"].is_meta) == ("user", "use pnpm, not npm", False)
    assert turns["q2"].is_meta and turns["q3"].is_meta


# -- meta records ------------------------------------------------------------------------------------


def test_meta_records():
    turns = read(MANIFEST)[0]
    meta = [t.text[:22] for t in turns if t.is_meta]
    assert meta == [
        "Caveat: The messages b", "<command-name>/context", "<local-command-stdout>",
        "Caveat: The messages b", "<command-name>/model</", "<local-command-stdout>",
    ]
    context = next(t for t in turns if t.text.startswith("<local-command-stdout>\n Context Usage"))
    assert "\x1b" not in context.text  # the raw output is full of ANSI codes
    prompt = next(t for t in turns if t.text.startswith("It's been a while"))
    assert not prompt.is_meta


def test_slash_command_and_its_expansion_are_meta():
    turns = by_uuid(read(INIT)[0])
    command = turns["5c623611-f1c7-41e0-951a-080254618df7"]
    assert command.text.startswith("<command-message>init is analyzing your codebase…</command-message>")
    expansion = turns["b4562b56-a53d-47b5-9fce-af88de53eb9c"]  # isMeta: the prompt /init expands to
    assert command.is_meta and expansion.is_meta
    assert expansion.text.startswith("Please analyze this codebase and create a CLAUDE.md file")


def test_system_reminder_records_of_the_compaction_agent_are_meta():
    turns = read(ACOMPACT)[0]
    assert len(turns) == 2
    assert all(t.is_meta and t.is_sidechain and t.agent_id == "acompact-f46190" for t in turns)
    assert turns[0].text.startswith("<system-reminder>\nPostToolUse:Write hook additional context: [CREDO]")


# -- sub-agents in all three layouts ---------------------------------------------------------------------


def test_subagent_file_next_to_sessions_2_0():
    turns = read(SUBAGENT_20)[0]
    assert {t.agent_id for t in turns} == {"668b5ac2"}
    assert all(t.is_sidechain for t in turns)
    assert {t.session_id for t in turns} == {"741790a4-4fe2-4644-9a51-fb4482074060"}  # the parent session
    assert turns[0].text.startswith("Investigate two issues in extract-coderabbit-feedback.py")
    warmup = read(BLAME / "agent-ad47cca.jsonl")[0]
    assert [(t.role, t.agent_id) for t in warmup] == [("user", "ad47cca"), ("assistant", "ad47cca")]
    assert warmup[0].text == "Warmup"


def test_subagent_file_in_session_folder_2_1():
    turns, edits, _ = read(SUBAGENT_21)
    assert {t.agent_id for t in turns} == {"a6aa8ad077d9ea083"}
    assert {t.session_id for t in turns} == {"ef958aa1-0e93-49f0-bb71-150f63befcd1"}
    assert turns[0].text.startswith("You are **carol** (round 2).")
    assert len(edits) == 1 and edits[0].succeeded is True and edits[0].tool == "Edit"
    assert edits[0].file_path.endswith("/work/research-beads.md")
    progress_agent = read(COMPACTED.with_suffix("") / "subagents" / "agent-a7be2f0.jsonl")
    assert {t.agent_id for t in progress_agent[0]} == {"a7be2f0"}
    assert progress_agent[2].by_type["progress"] == 2


def test_inline_sidechains_1_0_get_the_root_uuid_as_agent_id():
    turns = read(INLINE)[0]
    side = [t for t in turns if t.is_sidechain]
    main = [t for t in turns if not t.is_sidechain]
    assert main and all(t.agent_id is None for t in main)
    root = "6690d10e-f521-4ac0-800d-e5eb7a2d8072"  # the Task prompt that starts the chain
    chain = [t for t in side if t.agent_id == root]
    assert chain[0].uuid == root and chain[0].text.startswith("Create React components for the TODO app")
    assert len(chain) == 6
    # Slices cut chains: records whose chain root is not in the slice keep is_sidechain but no id.
    assert {t.agent_id for t in side} == {root, None}


# -- counting ----------------------------------------------------------------------------------------------


def test_stats_count_every_record_type():
    _, _, stats = read(WORKTREES)
    assert stats.by_type == Counter({"attachment": 8, "user": 6, "assistant": 4, "system": 4,
                                     "file-history-snapshot": 3, "permission-mode": 2, "last-prompt": 1})
    assert (stats.lines, stats.records, stats.malformed) == (28, 28, 0)
    assert not stats.unknown_types and not stats.partial_tail
    assert stats.end_offset == WORKTREES.stat().st_size


def test_queue_operations_are_counted_not_turns():
    turns, _, stats = read(INIT)
    assert stats.by_type["queue-operation"] == 4
    assert not any(t.text == "/init" for t in turns)  # the enqueued text is not a turn
    _, _, heavy = read(SPOTTER / "tool_heavy.jsonl")
    assert heavy.by_type["queue-operation"] == 2 and heavy.by_type["progress"] == 8


def test_progress_and_snapshots_are_counted_and_skipped():
    turns, _, stats = read(IDEAS)
    assert stats.by_type["progress"] == 5 and stats.by_type["file-history-snapshot"] == 2
    assert len(turns) == stats.records - 5 - 2


def test_unknown_record_types_are_counted_and_skipped(tmp_path: Path):
    path = write_lines(tmp_path / "s.jsonl", [
        {"type": "user", "uuid": "u1", "sessionId": "s", "message": {"content": "hello"}},
        {"type": "brand-new-thing", "uuid": "n1", "parentUuid": "u1"},
        {"no_type": True},
        {"type": "assistant", "uuid": "a1", "parentUuid": "n1", "sessionId": "s",
         "message": {"content": "hi"}},
    ])
    turns, _, stats = read(path)
    assert [t.uuid for t in turns] == ["u1", "a1"]
    assert stats.unknown_types == Counter({"brand-new-thing": 1, "<none>": 1})
    assert stats.by_type["brand-new-thing"] == 1 and stats.records == 4
    assert turns[1].parent_uuid == "u1"  # linked past the skipped record


# -- streaming: partial lines, garbage, offsets, memory -----------------------------------------------


def test_truncated_last_line_is_not_consumed_and_resumes_exactly_once(tmp_path: Path):
    original = (SPOTTER / "short.jsonl").read_bytes()
    lines = original.splitlines(keepends=True)
    complete = b"".join(lines[:6])
    last = lines[6]  # an assistant text record: "Let me check the project structure…"
    path = tmp_path / "live.jsonl"
    path.write_bytes(complete + last[: len(last) // 2])

    first_turns, _, stats = read(path)
    assert stats.partial_tail and stats.end_offset == len(complete)
    assert stats.lines == 6 and stats.malformed == 0

    with path.open("ab") as f:  # the agent finishes the line
        f.write(last[len(last) // 2:])
    more_turns, _, more = read(path, offset=stats.end_offset)
    assert not more.partial_tail and more.end_offset == len(complete) + len(last)
    assert [t.uuid for t in more_turns] == [json.loads(last)["uuid"]]
    seen = [t.uuid for t in first_turns + more_turns]
    assert len(seen) == len(set(seen))


def test_garbage_lines_are_counted_as_malformed(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    good = prompt_line("u1", "first")
    later = prompt_line("u2", "second")
    path.write_bytes(b"\n".join([
        good,
        b"\x00\xff\xfe\x80 binary garbage \x1b\x9b",
        b"not json at all",
        b"[1, 2, 3]",
        b'"a string"',
        b'{"type": "user", "message": {"content": "invalid utf-8 \xff\xfe"}}',
        b"[" * 100_000,  # nesting deep enough to exhaust the parser's recursion
        b"{\"type\": \"user\", \"truncated",
        b"",
        b"   ",
        later,
    ]) + b"\n")
    turns, _, stats = read(path)
    # Invalid UTF-8 inside an otherwise good record is replaced (U+FFFD), the record kept.
    assert [t.text for t in turns] == ["first", "invalid utf-8 \ufffd\ufffd", "second"]
    assert stats.malformed == 6 and stats.records == 3 and stats.lines == 11
    assert stats.end_offset == path.stat().st_size


def test_oversized_line_is_skipped_without_being_held(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(transcripts, "MAX_LINE_BYTES", 1000)
    big = json.dumps({"type": "user", "uuid": "big", "message": {"content": "x" * 5000}}).encode()
    small = prompt_line("u1", "ok")
    path = tmp_path / "s.jsonl"
    path.write_bytes(big + b"\n" + small + b"\n" + big)  # the last, oversized line is still being written
    turns, _, stats = read(path)
    assert [t.uuid for t in turns] == ["u1"]
    assert stats.malformed == 1 and stats.partial_tail
    assert stats.end_offset == len(big) + 1 + len(small) + 1


def test_offset_resume_reads_each_record_once():
    everything, _, full = read(SPOTTER / "short.jsonl")
    stats = ParseStats()
    head: list[Turn] = []
    for value in CLAUDE.read(SPOTTER / "short.jsonl", 0, stats):
        assert isinstance(value, Turn)
        head.append(value)
        if len(head) == 4:
            break  # a consumer stops here and stores stats.end_offset
    tail, _, rest = read(SPOTTER / "short.jsonl", offset=stats.end_offset)
    assert [t.uuid for t in head + tail] == [t.uuid for t in everything]
    assert rest.end_offset == full.end_offset
    assert head[-1].text == "Let me check the project structure and try running the server to see the error."


def test_reading_is_streamed_in_bounded_memory(tmp_path: Path):
    path = tmp_path / "big.jsonl"
    text = [{"type": "text", "text": "y" * 900}]
    record = {"type": "assistant", "sessionId": "s", "message": {"content": text}}
    with path.open("w") as f:
        for n in range(12_000):
            f.write(json.dumps({**record, "uuid": f"u{n}", "parentUuid": f"u{n - 1}"}) + "\n")
    size = path.stat().st_size
    tracemalloc.start()
    try:
        count = sum(1 for _ in CLAUDE.read(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 12_000
    assert size > 10_000_000 and peak < size / 5


WRONG: list[Any] = [None, 7, "x", [], {}, [1, "a", None], {"type": 3}]


def mutations(record: dict[str, Any], inner: str) -> Iterable[dict[str, Any]]:
    """The record with one field (top level, ``inner`` object, content blocks) at a time of a wrong type."""
    for key in record:
        yield from ({**record, key: value} for value in WRONG)
    nested = record.get(inner)
    if not isinstance(nested, dict):
        return
    for key in nested:
        yield from ({**record, inner: {**nested, key: value}} for value in WRONG)
    blocks = nested.get("content")
    for block in blocks if isinstance(blocks, list) else []:
        for key in block:
            yield from ({**record, inner: {**nested, "content": [{**block, key: value}]}} for value in WRONG)


@pytest.mark.parametrize(("reader", "sources", "inner"), [
    (CLAUDE, (WORKTREES, REJECTED, INLINE, COMPACTED, WRITES), "message"),
    (CODEX, (ROLLOUT,), "payload"),
])
def test_malformed_fields_are_never_fatal(tmp_path: Path, reader: Any, sources: tuple[Path, ...], inner: str):
    """Every field of real records replaced by values of the wrong type: read, never raised."""
    records = [m for source in sources for record in raw_lines(source) for m in mutations(record, inner)]
    path = write_lines(tmp_path / "mutated.jsonl", records)
    _, _, stats = read(path, reader)
    assert stats.records == len(records) and stats.malformed == 0


# -- Lore's own injected context ----------------------------------------------------------------------------


def test_injected_lore_context_is_marked(tmp_path: Path):
    wrapped = f"{LORE_CONTEXT_MARKER}\nPrefer pnpm over npm in this repo.\n</lore-context>"
    path = write_lines(tmp_path / "s.jsonl", [
        {"type": "attachment", "uuid": "h1", "sessionId": "s", "attachment": {
            "type": "hook_additional_context", "content": [wrapped], "hookName": "SessionStart"}},
        {"type": "attachment", "uuid": "h2", "sessionId": "s", "attachment": {
            "type": "hook_success", "hookName": "SessionStart:startup",
            "stdout": json.dumps({"hookSpecificOutput": {"additionalContext": wrapped}})}},
        {"type": "user", "uuid": "r1", "sessionId": "s", "isMeta": True, "message": {"content": [
            {"type": "text", "text": f"<system-reminder>\nSessionStart hook additional context: {wrapped}"},
        ]}},
        {"type": "user", "uuid": "p1", "sessionId": "s",
         "message": {"content": f"{wrapped}\n\nfix the tests"}},
        {"type": "user", "uuid": "t1", "sessionId": "s", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "x", "content": [{"type": "text", "text": wrapped}]}]}},
        {"type": "user", "uuid": "p2", "sessionId": "s", "message": {"content": "fix the tests"}},
    ])
    turns = by_uuid(read(path)[0])
    assert {u for u, t in turns.items() if t.injected} == {"h1", "h2", "r1", "p1", "t1"}
    assert turns["h1"].is_meta and turns["r1"].is_meta
    assert not turns["p2"].injected


def test_no_real_fixture_is_marked_injected():
    for path in FIXTURES.rglob("*.jsonl"):
        reader = reader_for(path)
        assert reader is not None
        assert not any(isinstance(v, Turn) and v.injected for v in reader.read(path)), path


# -- Codex ---------------------------------------------------------------------------------------------


def test_codex_rollout_session_and_messages():
    turns, _, stats = read(ROLLOUT, CODEX)
    session = "019b6b08-58f3-7580-9dca-fe3f30a10650"
    assert {t.session_id for t in turns} == {session}
    assert {t.cwd for t in turns} == {"/Users/cjm/repos/ai-blame-test"}
    assert {t.version for t in turns} == {"0.77.0"}
    said = [t for t in turns if t.role == "user" and not t.is_meta]
    prompts = [t.text for t in said if not t.text.startswith("[tool_result")]
    assert prompts == [
        "created a file created-with-codex.md with a few random lines",
        "I want u to create a file created-with-codex.md with a few random lines",
        "make a random edit add some comments to the python file",
    ]
    boilerplate = [t.text[:22] for t in turns if t.is_meta]
    assert boilerplate == ["# AGENTS.md instructio", "<environment_context>\n"]
    replies = [t for t in turns if t.role == "assistant" and t.text]
    assert replies[-1].text.startswith("Added a couple of concise comments in `example.py`")
    assert {t.model for t in replies} == {"gpt-5.2-codex"}
    assert "Checking user request clarity" not in " ".join(t.text for t in turns)  # reasoning is skipped
    assert not stats.unknown_types and stats.by_type["event_msg"] == 33
    assert all(t.uuid.startswith(f"{session}:") for t in turns) and len({t.uuid for t in turns}) == len(turns)


def test_codex_tool_calls_outputs_and_patch_edits():
    turns, edits, _ = read(ROLLOUT, CODEX)
    calls = [c for t in turns for c in t.tool_calls]
    assert calls[0].name == "shell_command" and calls[0].id == "call_v9Q3l1MbU4ekzzYLchhko0HL"
    assert calls[0].input == {"command": "ls", "workdir": "/Users/cjm/repos/ai-blame-test"}
    assert [c.name for c in calls].count("apply_patch") == 1
    outputs = [t.text for t in turns if t.text.startswith("[tool_result")]
    assert outputs[0].startswith("[tool_result shell_command] Exit code: 0\nWall time: 0.1 seconds\n")
    assert any(o.startswith("[tool_result shell_command error] Exit code: 1\n") for o in outputs)
    assert outputs[-1] == ("[tool_result apply_patch] Success. Updated the following files:\n"
                           "M /Users/cjm/repos/ai-blame-test/example.py")
    assert [(e.tool, e.file_path, e.succeeded) for e in edits] == [
        ("apply_patch", "/Users/cjm/repos/ai-blame-test/example.py", True)] * 2
    assert edits[0].old_text == '    return f"Hello, {name}!"'
    assert edits[0].new_text == ('    # Keep greeting format centralized for easy tweaks.\n'
                                 '    return f"Hello, {name}!"')
    patch_turn = next(t for t in turns if any(c.name == "apply_patch" for c in t.tool_calls))
    assert edits[0].message_uuid == patch_turn.uuid


def test_codex_resume_from_offset_keeps_ids_and_session_facts():
    full, _, _ = read(ROLLOUT, CODEX)
    middle = full[len(full) // 2]
    offset = int(middle.uuid.rsplit(":", 1)[1])
    tail, _, stats = read(ROLLOUT, CODEX, offset=offset)
    # The model is named by turn_context lines, so it is known again from the next one on.
    assert [dataclasses.replace(t, model=None) for t in tail] == [
        dataclasses.replace(t, model=None) for t in full[len(full) // 2:]]
    assert tail[-1].model == "gpt-5.2-codex"
    assert stats.end_offset == ROLLOUT.stat().st_size


def test_apply_patch_parsing():
    patch = "\n".join([
        "*** Begin Patch",
        "*** Add File: docs/new.md",
        "+# New",
        "+text",
        "*** Delete File: old.txt",
        "*** Update File: src/app.py",
        "*** Move to: src/main.py",
        "@@ def main():",
        "-    print('hi')",
        "+    print('hello')",
        "     return 0",
        "*** End Patch",
    ])
    assert patch_edits(patch) == [
        ("docs/new.md", None, "# New\ntext"),
        ("old.txt", None, None),
        ("src/app.py", "    print('hi')\n    return 0", "    print('hello')\n    return 0"),
    ]
    assert patch_edits("no patch here") == []


def test_codex_relative_patch_paths_and_shell_apply_patch(tmp_path: Path):
    patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n*** End Patch"
    path = write_lines(tmp_path / "rollout-2026-01-01T00-00-00-11111111-2222-3333-4444-555555555555.jsonl", [
        {"type": "session_meta", "payload": {"id": "sess", "cwd": "/repo", "git": {"branch": "main"}}},
        {"type": "response_item", "payload": {"type": "function_call", "name": "shell", "call_id": "c1",
                                              "arguments": json.dumps({"command": ["apply_patch", patch]})}},
        {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1",
                                              "output": json.dumps({"output": "Done",
                                                                    "metadata": {"exit_code": 1}})}},
        {"type": "response_item", "payload": {"type": "new_kind"}},
        {"type": "mystery"},
    ])
    turns, edits, stats = read(path, CODEX)
    found = [(e.file_path, e.old_text, e.new_text, e.succeeded) for e in edits]
    assert found == [("/repo/a.py", "x = 1", "x = 2", False)]  # relative to the cwd; exit code 1
    assert turns[0].git_branch == "main" and turns[0].session_id == "sess"
    assert stats.unknown_types == Counter({"response_item/new_kind": 1, "mystery": 1})


# -- choosing a reader -------------------------------------------------------------------------------


def test_reader_for_picks_the_right_reader(tmp_path: Path):
    assert reader_for(ROLLOUT) is READERS[0] and READERS[0].agent == "codex"
    for path in (WRITES, SUBAGENT_20, SUBAGENT_21, SAMPLE / "4fe49c7c-ff82-4ac7-b3f2-79c22036bd58.jsonl",
                 SAMPLE / "4e27c414-a885-46a0-b5c8-d58e1417377d.jsonl"):
        reader = reader_for(path)
        assert reader is not None and reader.agent == "claude-code", path
    assert reader_for(SUBAGENT_21.with_suffix(".meta.json")) is None
    other = write_lines(tmp_path / "events.jsonl", [{"event": "click"}])
    assert reader_for(other) is None
    renamed = write_lines(tmp_path / "session.jsonl", [{"type": "session_meta", "payload": {"id": "x"}}])
    assert reader_for(renamed) is READERS[0]  # a rollout renamed: its first line says Codex


def test_session_id_for():
    assert session_id_for(WRITES) == "2c965cfd-41e4-4e31-8339-2986ebced03c"
    assert session_id_for(SUBAGENT_21) == "ef958aa1-0e93-49f0-bb71-150f63befcd1"
    assert session_id_for(ROLLOUT) == "019b6b08-58f3-7580-9dca-fe3f30a10650"
    assert session_id_for(SUBAGENT_20) == "agent-668b5ac2"  # the 2.0.x name does not say; records do


# -- every real transcript ---------------------------------------------------------------------------

CODEX_RECORD_TYPES = {"session_meta", "turn_context", "response_item", "event_msg"}


def test_every_shared_transcript_reads_cleanly(record_property: Any):
    if not SHARED_DATA.is_dir():
        pytest.skip(f"{SHARED_DATA} is not here (real transcripts kept beside the repository, not in it)")
    files = sorted(SHARED_DATA.rglob("*.jsonl"))
    total = ParseStats()
    values: Counter[str] = Counter()
    for path in files:
        stats = ParseStats()
        for value in CLAUDE.read(path, 0, stats):
            values[type(value).__name__] += 1
        expected = CODEX_RECORD_TYPES if path.name.startswith("rollout-") else set()
        assert set(stats.unknown_types) <= expected, (path, stats.unknown_types)
        assert stats.malformed == 0 and not stats.partial_tail, path
        assert stats.end_offset == path.stat().st_size, path
        reader = reader_for(path)
        assert reader is not None and reader.agent == ("codex" if expected else "claude-code"), path
        total.lines += stats.lines
        total.records += stats.records
        total.by_type.update(stats.by_type)
    codex = ParseStats()
    for path in (p for p in files if p.name.startswith("rollout-")):
        list(CODEX.read(path, 0, codex))
    assert not codex.unknown_types
    report = (f"{len(files)} files, {total.lines} lines, {values['Turn']} turns, "
              f"{values['FileEdit']} edits, types {dict(total.by_type.most_common())}")
    record_property("transcripts", report)
    print(report)
    assert len(files) >= 30 and values["Turn"] > 3000 and values["FileEdit"] > 300
