"""Property tests: what arrives from outside never raises, never hangs, never loses a valid record.

Inputs start from the real transcripts in tests/fixtures/transcripts/, real hook payloads and a
real export, and mutate one line or value at a time: lone surrogates, NULs, invalid UTF-8, huge
strings, truncation, random bytes, and a value of the wrong JSON type at any depth. The untouched
lines must still come through. ``INPUTS`` counts the inputs tried (docs/reliability.md quotes it;
run with ``-s`` to see it).
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FakeEmbedder, make_settings
from lore import hooks
from lore.api import Lore
from lore.capture.claude_code import ClaudeCodeReader
from lore.capture.codex import CodexReader
from lore.capture.queue import Queue
from lore.capture.transcripts import ParseStats, Turn
from lore.worker import Worker

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"
CLAUDE_FILES = sorted(p for p in FIXTURES.rglob("*.jsonl")
                      if not p.name.startswith("rollout-") and 0 < p.stat().st_size < 40_000)
CODEX_FILES = sorted(FIXTURES.rglob("rollout-*.jsonl"))
SECONDS = 5.0  # any one input: a hang fails here
INPUTS: Counter[str] = Counter()
PROPERTY = settings(max_examples=120, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow, HealthCheck.data_too_large])

BAD_TEXT = st.sampled_from(["\ud83d", "\udc00", "\x00", "\ud800\x00\udfff", "\ufeff", "\u2028",
                            "\x1b[31m", "\ud83d\ude00", "<lore-context>", "\\", "\"", ""])
SCALARS = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
           | BAD_TEXT)
WRONG = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)


@pytest.fixture(scope="module", autouse=True)
def report_inputs() -> Iterator[None]:
    yield
    print("\ninputs tried:", dict(INPUTS), "total", sum(INPUTS.values()))


# ---- mutations ---------------------------------------------------------------------------------

def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*path, i))


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[head] = _replace(value[head], rest, new)
    return copy


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


@st.composite
def mutated_value(draw: st.DrawFn, value: Any) -> Any:
    """``value`` with one node changed: bad text inside a string, a huge string, or a value
    of another JSON type (a list where an object was, a number where a string was …)."""
    paths = list(_paths(value))
    how = draw(st.sampled_from(["bad-text", "wrong-type", "huge"]))
    if how == "bad-text":
        strings = [p for p in paths if isinstance(_get(value, p), str)]
        if strings:
            path = draw(st.sampled_from(strings))
            text = _get(value, path)
            at = draw(st.integers(0, len(text)))
            return _replace(value, path, text[:at] + draw(BAD_TEXT) + text[at:])
    if how == "huge":
        return _replace(value, draw(st.sampled_from(paths)), "x" * 300_000 + draw(BAD_TEXT))
    return _replace(value, draw(st.sampled_from(paths)), draw(WRONG))


@st.composite
def mutated_line(draw: st.DrawFn, line: bytes) -> bytes:
    """One JSON line changed as a value (then written as JavaScript or Python would), or as
    bytes: truncated, random bytes inserted, or replaced by garbage. Never a newline inside."""
    how = draw(st.sampled_from(["value", "value", "truncate", "bytes", "garbage"]))
    if how == "value":
        try:
            value = json.loads(line)
        except ValueError:
            value = line.decode("utf-8", "replace")
        new = draw(mutated_value(value))
        # ensure_ascii writes a lone surrogate as "\ud83d" (JavaScript); without it Python
        # writes its raw UTF-8-like bytes (surrogatepass), which is invalid UTF-8.
        if draw(st.booleans()):
            out = json.dumps(new).encode()
        else:
            out = json.dumps(new, ensure_ascii=False).encode("utf-8", "surrogatepass")
    elif how == "truncate":
        out = line.rstrip(b"\n")[: draw(st.integers(0, max(0, len(line) - 2)))]
    elif how == "bytes":
        at = draw(st.integers(0, len(line)))
        out = line[:at] + draw(st.binary(min_size=1, max_size=8)) + line[at:]
    else:
        out = draw(st.binary(max_size=200))
    return out.replace(b"\n", b" ").replace(b"\r", b" ")


# ---- transcripts -------------------------------------------------------------------------------

def _line_of_turns(lines: list[bytes], turns: list[Turn]) -> dict[int, set[str]]:
    """Which line each turn came from, as line index -> keys that find it again after another
    line changed: the record uuid, or "@line" when the uuid is "<session>:<byte offset>"."""
    offsets, pos = {}, 0
    for i, line in enumerate(lines):
        offsets[pos] = i
        pos += len(line)
    by_uuid: dict[str, int] = {}
    for i, line in enumerate(lines):
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("uuid"), str):
            by_uuid.setdefault(rec["uuid"], i)
    out: dict[int, set[str]] = {}
    for t in turns:
        m = re.fullmatch(r".*:(\d+)", t.uuid)
        if m and int(m.group(1)) in offsets:
            out.setdefault(offsets[int(m.group(1))], set()).add("@line")
        elif t.uuid in by_uuid:
            out.setdefault(by_uuid[t.uuid], set()).add(t.uuid)
    return out


def _read(reader: Any, path: Path) -> tuple[list[Turn], ParseStats]:
    stats = ParseStats()
    started = time.perf_counter()
    turns = [v for v in reader.read(path, 0, stats) if isinstance(v, Turn)]
    assert time.perf_counter() - started < SECONDS
    return turns, stats


def _check_transcript(reader: Any, files: list[Path], data: st.DataObject, name: str) -> None:
    original = data.draw(st.sampled_from(files))
    lines = original.read_bytes().splitlines(keepends=True)
    index = data.draw(st.integers(0, len(lines) - 1))
    new = data.draw(mutated_line(lines[index])) + b"\n"
    mutated = [*lines[:index], new, *lines[index + 1:]]
    with tempfile.TemporaryDirectory() as tmp:
        before_path = Path(tmp) / "before" / original.name
        after_path = Path(tmp) / original.name
        before_path.parent.mkdir()
        before_path.write_bytes(b"".join(lines))
        after_path.write_bytes(b"".join(mutated))
        before, _ = _read(reader, before_path)
        after, stats = _read(reader, after_path)
    INPUTS[name] += 1
    assert stats.lines == len(lines) and stats.end_offset == sum(map(len, mutated))
    found_before = _line_of_turns(lines, before)
    found_after = _line_of_turns(mutated, after)
    for line, keys in found_before.items():
        if line != index:  # every untouched line's turns still come through
            assert keys <= found_after.get(line, set()), (line, keys)
    for t in after:  # and everything read can be stored as UTF-8
        json.dumps([t.text, t.cwd, t.session_id, t.uuid, [c.input for c in t.tool_calls]],
                   ensure_ascii=False).encode("utf-8")


@PROPERTY
@given(data=st.data())
def test_claude_code_reader_survives_any_mutated_line(data):
    _check_transcript(ClaudeCodeReader(), CLAUDE_FILES, data, "claude-code transcripts")


@PROPERTY
@given(data=st.data())
def test_codex_reader_survives_any_mutated_line(data):
    _check_transcript(CodexReader(), CODEX_FILES, data, "codex transcripts")


@settings(PROPERTY, max_examples=60)
@given(raw=st.binary(max_size=2000))
def test_readers_survive_arbitrary_bytes(raw):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.jsonl"
        path.write_bytes(raw)
        for reader in (ClaudeCodeReader(), CodexReader()):
            _read(reader, path)
    INPUTS["arbitrary bytes"] += 1


# ---- hook payloads and the worker behind them --------------------------------------------------

TRANSCRIPT = CLAUDE_FILES[-1]
PAYLOADS = {
    "user-prompt-submit": {"session_id": "s1", "transcript_path": "", "cwd": "/p",
                           "hook_event_name": "UserPromptSubmit",
                           "prompt": "No, don't use npm here, use pnpm instead"},
    "stop": {"session_id": "s1", "transcript_path": "", "cwd": "/p", "hook_event_name": "Stop",
             "stop_hook_active": False},
    "post-tool-use": {"session_id": "s1", "transcript_path": "", "cwd": "/p",
                      "hook_event_name": "PostToolUse", "tool_name": "MultiEdit",
                      "tool_input": {"file_path": "/p/a.py",
                                     "edits": [{"old_string": "a", "new_string": "b"}]},
                      "tool_response": {"filePath": "/p/a.py", "success": True}},
    "pre-compact": {"session_id": "s1", "transcript_path": "", "cwd": "/p",
                    "hook_event_name": "PreCompact", "trigger": "auto",
                    "custom_instructions": ""},
    "session-end": {"session_id": "s1", "transcript_path": "", "cwd": "/p",
                    "hook_event_name": "SessionEnd", "reason": "exit"},
}


@pytest.fixture(scope="module")
def hook_home() -> Iterator[tuple[Path, Worker]]:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        s = make_settings(home)
        lore = Lore.open(s, embedder=FakeEmbedder())
        w = Worker(s, lore=lore)
        yield home, w
        lore.close()


@settings(PROPERTY, max_examples=100)
@given(data=st.data())
def test_hook_payloads_never_raise_and_every_queued_event_is_handled(data, hook_home):
    """The hook reads stdin as bytes (invalid UTF-8 becomes U+FFFD); whatever it queues, the
    worker handles without a failed attempt. The transcript the payload names is mutated too."""
    home, worker = hook_home
    event = data.draw(st.sampled_from(sorted(PAYLOADS)))
    lines = TRANSCRIPT.read_bytes().splitlines(keepends=True)
    index = data.draw(st.integers(0, len(lines) - 1))
    lines[index] = data.draw(mutated_line(lines[index])) + b"\n"
    transcript = home / f"t{INPUTS['hook payloads']}.jsonl"
    transcript.write_bytes(b"".join(lines))
    payload = {**PAYLOADS[event], "transcript_path": str(transcript)}
    raw = data.draw(mutated_line(json.dumps(payload).encode()))
    stdin = raw.decode("utf-8", "replace")  # as hooks.main reads it
    q = Queue(home / "queue")
    started = time.perf_counter()
    try:
        hooks.run(event, stdin, queue_root=q.root)
    except ValueError:
        pass  # not a JSON object: main logs it and exits 0, nothing queued
    for queued in q.take():
        assert worker.handle(queued), queued.last_error
    assert time.perf_counter() - started < SECONDS * 4
    assert q.depth() == 0 and q.quarantined() == []
    INPUTS["hook payloads"] += 1


# ---- lore admin import -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def export_lines() -> Iterator[tuple[list[str], Lore]]:
    from lore.demo.runner import seed

    with tempfile.TemporaryDirectory() as tmp:
        source = Lore.open(make_settings(Path(tmp) / "a"), embedder=FakeEmbedder())
        seed(source)
        lines = [json.dumps(r, ensure_ascii=False) for r in source.lessons.export()]
        source.close()
        target = Lore.open(make_settings(Path(tmp) / "b"), embedder=FakeEmbedder())
        yield lines, target
        target.close()


@settings(PROPERTY, max_examples=60)
@given(data=st.data())
def test_import_never_raises_and_imports_every_untouched_line(data, export_lines):
    lines, target = export_lines
    index = data.draw(st.integers(0, len(lines) - 1))
    raw = data.draw(mutated_line(lines[index].encode()))
    # Invalid UTF-8 read as Python does under a C locale: lone surrogates (surrogateescape).
    bad = raw.decode("utf-8", "surrogateescape")
    mutated = [*lines[:index], bad, *lines[index + 1:]]
    # Expected: every untouched line, but for those whose links lead (perhaps through other
    # lines) to the changed one while it is not in the database yet: all or nothing per link.
    untouched = {r["id"]: r for r in (json.loads(x) for i, x in enumerate(lines) if i != index)}
    in_db = set(target.store.existing_ids(r["id"] for r in map(json.loads, lines)))
    expected = set(untouched)
    while broken := {i for i in expected if any(e["to"] not in expected | in_db
                                                for e in untouched[i]["edges"])}:
        expected -= broken
    started = time.perf_counter()
    report = target.lessons.import_lines(mutated, skip_invalid=True)
    assert time.perf_counter() - started < SECONDS * 4
    assert expected <= set(target.store.existing_ids(expected)), report.skipped
    INPUTS["import lines"] += 1


# ---- MCP tools ---------------------------------------------------------------------------------

TOOL_CALLS = [
    ("lore_search", {"query": "sessions in redis", "tags": ["django"], "limit": 3}),
    ("lore_add", {"title": "Use pnpm", "content": "The repo uses pnpm workspaces.",
                  "tags": ["node"], "kind": "preference"}),
    ("lore_get", {"id": "01J0000000000000000000000A"}),
    ("lore_record_correction", {"text": "No, use pnpm instead of npm",
                                "previous": "I'll run npm install"}),
    ("lore_suggest_rule", {"rule": "Always run the linter before committing"}),
    ("lore_preferences", {"project": "/p"}),
    ("lore_apply", {"project": "/p"}),
    ("lore_values", {"what": "tags"}),
    ("lore_related", {"id": "01J0000000000000000000000A", "depth": 2}),
]


@pytest.fixture(scope="module")
def mcp_server() -> Iterator[Any]:
    from lore.mcp.server import build_server

    with tempfile.TemporaryDirectory() as tmp:
        s = make_settings(Path(tmp))
        lore = Lore.open(s, embedder=FakeEmbedder())
        server, tools = build_server(s, "admin", lore=lore)
        yield server
        tools.close()


@settings(PROPERTY, max_examples=100)
@given(data=st.data())
def test_mcp_tools_answer_any_arguments_with_a_result_or_a_tool_error(data, mcp_server):
    from mcp.server.mcpserver.exceptions import ToolError

    name, args = data.draw(st.sampled_from(TOOL_CALLS))
    args = data.draw(mutated_value(args)) if data.draw(st.booleans()) or not args else args
    if not isinstance(args, dict):
        args = {"value": args}
    if data.draw(st.booleans()):
        args = {**args, data.draw(st.text(max_size=8)): data.draw(WRONG)}

    async def call() -> Any:
        with anyio.fail_after(SECONDS * 4):
            return await mcp_server.call_tool(name, args)

    try:
        result = anyio.run(call)
    except ToolError as exc:
        # Only ToolError itself or its validation form: never UnexpectedToolError (a bug).
        assert type(exc).__name__ != "UnexpectedToolError", repr(exc.__cause__)
    else:
        result.model_dump_json()  # the reply can be written: valid UTF-8, no lone surrogates
    INPUTS["mcp calls"] += 1
