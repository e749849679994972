"""`lore mcp` over real stdio with text a JavaScript client can send but Python's cannot write:
lone UTF-16 surrogate escapes ("\\ud800"). The MCP SDK's ClientSession drives the server; the
line writer below serialises like a JavaScript client (JSON.stringify keeps a lone surrogate as
an escape), where the SDK's own writer would refuse to encode it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, types
from mcp.shared.message import SessionMessage

LORE = str(Path(sys.executable).parent / "lore")


async def js_client_session(home: Path, steps: Any) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORE_")}
    env["LORE_HOME"] = str(home)
    to_client, client_reads = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    client_writes, from_client = anyio.create_memory_object_stream[SessionMessage](0)
    async with await anyio.open_process([LORE, "mcp", "--profile", "admin"], env=env) as proc:
        assert proc.stdin is not None and proc.stdout is not None

        async def read_replies() -> None:
            buffer = b""
            async with to_client:
                async for chunk in proc.stdout:
                    buffer += chunk
                    while b"\n" in buffer:
                        line, buffer = buffer.split(b"\n", 1)
                        message = types.jsonrpc_message_adapter.validate_json(line)
                        await to_client.send(SessionMessage(message))

        async def write_requests() -> None:
            async with from_client:
                async for sent in from_client:
                    data = sent.message.model_dump(by_alias=True, exclude_unset=True, mode="json")
                    # ensure_ascii: a lone surrogate goes out as the escape "\ud800", as from JS
                    await proc.stdin.send((json.dumps(data) + "\n").encode("ascii"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(read_replies)
            tg.start_soon(write_requests)
            with anyio.fail_after(60):  # never silence: a missing reply fails here, not hangs
                async with ClientSession(client_reads, client_writes) as session:
                    await session.initialize()
                    result = await steps(session)
            proc.terminate()
            tg.cancel_scope.cancel()
    return result


@pytest.mark.parametrize("tool, args, field", [
    ("lore_search", {"query": "deploy \ud83d with \udc00 care"}, "query"),
    ("lore_add", {"title": "Cut emoji \ud83d", "content": "A NUL \x00 and a lone \udfff here",
                  "tags": ["t\ud800"]}, "title"),
    ("lore_record_correction", {"text": "No, use \ud83d pnpm instead of npm"}, None),
    ("lore_get", {"id": "\ud800"}, None),
])
def test_lone_surrogates_get_a_result_or_a_tool_error_never_silence(lore_home, tool, args, field):
    async def steps(session: ClientSession) -> Any:
        first = await session.call_tool(tool, args)
        after = await session.call_tool("lore_status", {})  # the server still answers
        return first, after

    first, after = anyio.run(js_client_session, lore_home, steps)
    assert not after.is_error
    text = first.content[0].text
    assert "\ufffd" in text or first.is_error
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in text)
    if field is not None:
        assert not first.is_error, text
        assert "\ufffd" in first.structured_content[field]
    if tool == "lore_add":
        assert "\x00" not in first.structured_content["content"]
