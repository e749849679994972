"""Text UTF-8 and SQLite cannot hold, at every door: lone surrogates, NULs, invalid UTF-8."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import FakeEmbedder, make_settings
from lore.api import Lore
from lore.capture.queue import Queue
from lore.core.transfer import read_lines
from lore.normalize import json_value, storable, storable_json

LORE = str(Path(sys.executable).parent / "lore")


def test_storable_replaces_only_what_cannot_be_stored():
    assert storable("ok \U0001f600 ünïcode") == "ok \U0001f600 ünïcode"
    assert storable("cut \ud83d, low \udc00, nul \x00.") == "cut \ufffd, low \ufffd, nul \ufffd."
    assert storable_json({"k\x00": ["\ud800", 1, None, {"x": "\udfff"}]}) == \
        {"k\ufffd": ["\ufffd", 1, None, {"x": "\ufffd"}]}
    # A surrogate pair written as two escapes is one character, not two lone halves.
    assert json_value('"\\ud83d\\ude00"') == "\U0001f600"
    assert json_value(b'{"a": "\xff\\ud83d\\u0000", "b": "raw\tcontrol"}') == \
        {"a": "\ufffd\ufffd\ufffd", "b": "raw\tcontrol"}


def test_import_keeps_lines_with_invalid_utf8_and_raw_line_separators(tmp_path):
    """An export writes U+2028 raw inside JSON strings; splitting at it used to break the line.
    One invalid byte used to refuse the whole file."""
    with Lore.open(make_settings(tmp_path / "a"), embedder=FakeEmbedder()) as source:
        from lore.demo.runner import seed

        seed(source)
        lines = [json.dumps(r, ensure_ascii=False) for r in source.lessons.export()]
    first = json.loads(lines[0])
    first["content"] += " line\u2028separator"
    lines[0] = json.dumps(first, ensure_ascii=False)
    data = "\n".join(lines).encode().replace(b"line", b"line\xff\xfe", 1) + b"\r\n"
    assert len(read_lines(data)) == len(lines) + 1  # the last is empty
    path = tmp_path / "export.jsonl"
    path.write_bytes(data)
    env = {**os.environ, "LORE_HOME": str(tmp_path / "b")}
    out = subprocess.run([LORE, "admin", "import", str(path), "--json"], env=env,
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["added"] == len(lines) and not report["skipped"]
    with Lore.open(make_settings(tmp_path / "b"), embedder=FakeEmbedder()) as target:
        content = target.lessons.get(first["id"]).content
    assert content.endswith(" line\ufffd\ufffd\u2028separator")


def test_the_hook_queues_a_payload_with_invalid_utf8_and_lone_surrogates(lore_home):
    raw = b'{"session_id": "s\xff", "prompt": "No, use pnpm \\ud83d instead", "n": "\\u0000"}'
    out = subprocess.run([LORE, "hook", "user-prompt-submit"], input=raw, capture_output=True,
                         env={**os.environ, "LORE_HOME": str(lore_home)}, timeout=30)
    assert out.returncode == 0 and out.stdout == b""
    assert not (lore_home / "logs" / "hooks.log").exists()
    [event] = list(Queue(lore_home / "queue").take())
    assert event.payload["session_id"] == "s\ufffd" and event.payload["n"] == "\ufffd"
    assert event.payload["prompt"] == "No, use pnpm \ufffd instead"
    assert event.payload["lore_signals"]["correction"] is True
