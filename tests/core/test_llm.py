"""The provider layer without a network: config, the registry, cutting, backoff, the ledger."""

from __future__ import annotations

import json
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest

from lore.config import LLMConfig, load_config
from lore.errors import ConfigError
from lore.llm import Message, Provider, Request, open_provider, usage_today
from lore.llm.base import estimate_tokens
from lore.llm.ledger import append
from lore.llm.limits import CUT_MARK, cut_messages
from lore.llm.registry import installed
from lore.llm.retry import RetryPolicy, backoff, parse_retry_after


def write(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(textwrap.dedent(text))


def test_llm_is_off_by_default(lore_home: Path) -> None:
    llm = load_config().config.llm
    assert llm.provider is None and llm.daily_token_budget == 200_000
    with pytest.raises(ConfigError, match="no language model is configured: set llm.provider"):
        open_provider(llm, lore_home, env={})


def test_llm_section_is_strict(lore_home: Path) -> None:
    write(lore_home, """
        llm:
          provider: anthropic
          api_key_env: MY_KEY
          timeout: 12.5
          cost_per_mtok: {input: 1.0, output: 5.0}
          daily_cost_budget: 0.5
    """)
    llm = load_config().config.llm
    assert (llm.api_key_env, llm.timeout) == ("MY_KEY", 12.5)
    assert llm.cost_per_mtok is not None and llm.cost_per_mtok.output == 5
    write(lore_home, "llm:\n  provider: anthropic\n  api_key: sk-ant-xyz\n")
    with pytest.raises(ConfigError, match=r"unknown key 'llm.api_key' \(valid keys here: api_key_env"):
        load_config()
    write(lore_home, "llm:\n  api_key_env: sk-ant-api03-abcdef\n")
    with pytest.raises(ConfigError, match="the NAME of an environment variable"):
        load_config()
    write(lore_home, "llm:\n  max_retries: -1\n")
    with pytest.raises(ConfigError, match="llm.max_retries"):
        load_config()


def test_builtin_providers_are_entry_points() -> None:
    assert {"anthropic", "openai", "claude-cli"} <= set(installed())


def test_unknown_provider_names_the_installed_ones(tmp_path: Path) -> None:
    names = r"\(installed: anthropic, claude-cli, openai"
    with pytest.raises(ConfigError, match=r"unknown llm.provider 'gemini' " + names):
        open_provider(LLMConfig(provider="gemini"), tmp_path, env={})


def test_a_plugin_adds_a_provider_without_editing_lore(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # An installed distribution, as pip would leave it: a module and its dist-info.
    site = tmp_path / "site"
    (site / "lore_echo_provider.py").parent.mkdir(parents=True)
    (site / "lore_echo_provider.py").write_text(textwrap.dedent("""
        from lore.llm import Completion

        class EchoProvider:
            def __init__(self, settings):
                self.name = settings.name
                self.model = settings.model or "echo-1"

            def complete(self, request):
                text = request.messages[-1].content[::-1]
                return Completion(text=text, input_tokens=3, output_tokens=3, model=self.model,
                                  latency_s=0.0)
    """))
    info = site / "lore_echo_provider-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: lore-echo-provider\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[lore.llm_providers]\necho = lore_echo_provider:EchoProvider\n")
    monkeypatch.syspath_prepend(str(site))
    assert "echo" in installed()
    provider = open_provider(LLMConfig(provider="echo"), tmp_path, env={})
    assert isinstance(provider.inner, Provider)
    assert provider.complete(Request.ask("olleh", purpose="test")).text == "hello"
    assert usage_today(tmp_path)["echo"].calls == 1
    sys.modules.pop("lore_echo_provider", None)


def test_a_broken_plugin_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    info = site / "lore_broken-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: lore-broken\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[lore.llm_providers]\nbroken = lore_missing_module:Nope\n")
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(ConfigError, match="'broken' cannot be loaded from lore_missing_module:Nope"):
        open_provider(LLMConfig(provider="broken"), tmp_path, env={})


def test_cut_keeps_short_messages_and_both_ends_of_long_ones() -> None:
    short = Message("user", "short question?")
    long = Message("assistant", "HEAD " + "x" * 5000 + " TAIL")
    out = cut_messages((short, long), 1000)
    assert out[0] == short
    assert sum(len(m.content) for m in out) <= 1000
    cut = out[1].content
    assert cut.startswith("HEAD") and cut.endswith("TAIL") and CUT_MARK in cut
    fits = (Message("user", "a" * 10),)
    assert cut_messages(fits, 10) == fits
    # Two long messages share the room equally.
    both = cut_messages((Message("user", "a" * 900), Message("user", "b" * 3000)), 1000)
    assert [len(m.content) for m in both] == [500, 500]


def test_token_estimate() -> None:
    assert estimate_tokens("") == 0 and estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2


def test_retry_after_and_backoff() -> None:
    assert parse_retry_after("7") == 7.0 and parse_retry_after("0.5") == 0.5
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    later = datetime.now(UTC) + timedelta(seconds=30)
    assert 25 < (parse_retry_after(format_datetime(later, usegmt=True)) or 0) <= 30
    policy = RetryPolicy(base_s=0.5, cap_s=4.0)
    assert [backoff(i, policy, rng=lambda: 0.0) for i in range(5)] == [0.25, 0.5, 1.0, 2.0, 2.0]
    assert [backoff(i, policy, rng=lambda: 1.0) for i in range(5)] == [0.5, 1.0, 2.0, 4.0, 4.0]


def test_usage_counts_only_today(tmp_path: Path) -> None:
    today = datetime.now(UTC)
    yesterday = today - timedelta(days=1)
    for when, tokens, outcome in ((yesterday, 500, "ok"), (today, 10, "ok"), (today, 0, "error")):
        append(tmp_path, {"ts": when.isoformat(timespec="milliseconds"), "provider": "openai",
                          "input_tokens": tokens, "output_tokens": 1, "cost_usd": None, "outcome": outcome})
    with (tmp_path / "logs" / "llm.jsonl").open("a") as fh:
        fh.write('{"ts":"' + today.strftime("%Y-%m-%d") + 'T00:00:00", "provider": "open')  # a torn line
    usage = usage_today(tmp_path)["openai"]
    assert (usage.calls, usage.failures, usage.input_tokens, usage.output_tokens) == (2, 1, 10, 2)
    assert json.loads((tmp_path / "logs" / "llm.jsonl").read_text().splitlines()[0])["input_tokens"] == 500
