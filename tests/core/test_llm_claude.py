"""The `claude -p` provider against a fake `claude` executable first on PATH.

The fake prints the JSON result object Claude Code prints with `--output-format json`
and records its arguments, stdin and environment for the assertions.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from lore.config import LLMConfig
from lore.errors import BudgetExceeded, ConfigError, ProviderError
from lore.llm import Message, Request, open_provider, second_opinion, usage_today

FAKE = '''#!{python}
import json, os, sys, time
stdin = sys.stdin.read()
record = {{"argv": sys.argv[1:], "stdin": stdin, "lore_disabled": os.environ.get("LORE_DISABLED"),
          "simple": os.environ.get("CLAUDE_CODE_SIMPLE"),
          "thinking_off": os.environ.get("CLAUDE_CODE_DISABLE_THINKING"),
          "max_out": os.environ.get("CLAUDE_CODE_MAX_OUTPUT_TOKENS"),
          "cwd": os.getcwd()}}
with open({record!r}, "a") as fh:
    fh.write(json.dumps(record) + "\\n")
mode = {mode!r}
if mode == "slow":
    time.sleep(5)
if mode == "garbage":
    print("Error: not logged in", file=sys.stderr)
    sys.exit(1)
result = {{
    "type": "result", "subtype": "success", "is_error": mode == "error",
    "duration_ms": 2140, "duration_api_ms": 1980, "num_turns": 1,
    "result": "Invalid API key · Please run /login" if mode == "error" else {answer!r},
    "stop_reason": "end_turn", "session_id": "0b6c3a4e-5d1f-4a8e-9c53-7e2f1d0a9b11",
    "total_cost_usd": 0.0123,
    "usage": {{"input_tokens": 9, "cache_creation_input_tokens": 1500, "cache_read_input_tokens": 12000,
              "output_tokens": 42, "service_tier": "standard"}},
    "modelUsage": {{"claude-sonnet-4-5-20250929": {{"inputTokens": 9, "outputTokens": 42}}}},
    "permission_denials": [], "uuid": "5f0e3c9a-1c2b-4d4e-8f6a-0a1b2c3d4e5f",
}}
print(json.dumps(result))
sys.exit(1 if mode == "error" else 0)
'''


def install_fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str = "ok",
                 answer: str = "ok") -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    record = tmp_path / "calls.jsonl"
    exe = bin_dir / "claude"
    exe.write_text(FAKE.format(python=sys.executable, record=str(record), mode=mode, answer=answer))
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return record


def calls(record: Path) -> list[dict]:
    return [json.loads(line) for line in record.read_text().splitlines()]


def cli_provider(tmp_path: Path, **kw):
    return open_provider(LLMConfig(provider="claude-cli", **kw), tmp_path / "home", env={})


def test_claude_print_json_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = install_fake(tmp_path, monkeypatch, answer="pong")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    p = cli_provider(tmp_path, model="sonnet")
    done = p.complete(Request.ask("ping", system="Answer in one word."))
    assert done.text == "pong"
    assert (done.input_tokens, done.output_tokens) == (9 + 1500 + 12000, 42)
    assert done.model == "claude-sonnet-4-5-20250929" and done.cost_usd == pytest.approx(0.0123)
    call = calls(record)[0]
    assert call["argv"][:5] == ["-p", "--output-format", "json", "--max-turns", "1"]
    # A bare completion: no tools, no MCP server, no settings files (hooks), no transcript.
    assert call["argv"][5:-4] == ["--tools", "", "--strict-mcp-config", "--mcp-config",
                                  '{"mcpServers":{}}', "--setting-sources", "",
                                  "--no-session-persistence", "--disable-slash-commands"]
    assert call["argv"][-4:] == ["--model", "sonnet", "--system-prompt", "Answer in one word."]
    assert call["stdin"] == "ping"  # the prompt goes on stdin, not in the arguments
    assert call["lore_disabled"] == "1"  # Lore's own hooks stay quiet in that session
    assert call["thinking_off"] == "1" and call["simple"] is None  # no key: the login is read
    assert call["max_out"] == "1024"  # the request's max_tokens bounds the reply
    # Run in Lore's call folder, private, so a transcript written anyway is known as Lore's.
    folder = tmp_path / "home" / "lore-model-calls"
    assert Path(call["cwd"]) == folder and folder.stat().st_mode & 0o777 == 0o700
    usage = usage_today(tmp_path / "home")["claude-cli"]
    assert usage.cost_usd == pytest.approx(0.0123) and usage.output_tokens == 42


def test_conversation_and_redaction_on_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = install_fake(tmp_path, monkeypatch)
    secret = "ghp_" + "ab12" * 9
    request = Request(messages=(Message("user", "first"), Message("assistant", "an answer"),
                                Message("user", f"again with {secret}")), system=f"token {secret}")
    cli_provider(tmp_path).complete(request)
    call = calls(record)[0]
    assert secret not in json.dumps(call)
    assert call["stdin"].startswith("User: first\n\nAssistant: an answer\n\nUser: again with [REDACTED:")
    assert "--model" not in call["argv"]


def test_without_a_system_part_claude_codes_own_is_not_sent(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    record = install_fake(tmp_path, monkeypatch)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    cli_provider(tmp_path).complete(Request.ask("x"))
    call = calls(record)[0]
    assert call["argv"][-2:] == ["--system-prompt", "Answer the request."]
    assert call["simple"] == "1"  # signed in by the key: Claude Code's minimal mode


def test_error_result_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake(tmp_path, monkeypatch, mode="error")
    with pytest.raises(ProviderError) as err:
        cli_provider(tmp_path).complete(Request.ask("x"))
    assert str(err.value) == ("claude-cli: `claude -p` reported an error (Invalid API key · Please run "
                              "/login); run `claude -p hello` to check your login")


def test_no_json_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake(tmp_path, monkeypatch, mode="garbage")
    with pytest.raises(ProviderError, match="exited 1 without a JSON result: Error: not logged in"):
        cli_provider(tmp_path).complete(Request.ask("x"))


def test_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake(tmp_path, monkeypatch, mode="slow")
    started = time.monotonic()
    with pytest.raises(ProviderError, match="no answer within 0.5 s"):
        cli_provider(tmp_path, timeout=0.5).complete(Request.ask("x"))
    assert time.monotonic() - started < 3


def test_missing_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(ConfigError, match="`claude` command is not on PATH"):
        cli_provider(tmp_path)


def test_cost_budget_from_reported_cost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = install_fake(tmp_path, monkeypatch)
    p = cli_provider(tmp_path, daily_cost_budget=0.01, daily_token_budget=None)
    p.complete(Request.ask("x"))  # reports $0.0123, past the budget
    with pytest.raises(BudgetExceeded, match="daily_cost_budget"):
        p.complete(Request.ask("y"))
    assert len(calls(record)) == 1


def test_second_opinion_through_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    answer = ('Here is my assessment:\n{"label": "preference", "durable": true, "confidence": 0.9, '
              '"rule": "Use jq, not grep, for JSON output.", "reason": "states a standing rule"}')
    record = install_fake(tmp_path, monkeypatch, answer=answer)
    opinion = second_opinion(cli_provider(tmp_path), "from now on use jq for json, never grep", None)
    assert opinion.label == "preference" and opinion.rule == "Use jq, not grep, for JSON output."
    call = calls(record)[0]
    assert "(no earlier assistant turn)" in call["stdin"]
    assert "--system-prompt" in call["argv"]
