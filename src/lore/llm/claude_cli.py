"""The user's own Claude Code: ``claude -p --output-format json``, the prompt on stdin.

No shell: the arguments go to the executable as a list. The child runs with
``LORE_DISABLED=1`` so Lore's own hooks in that Claude Code session stay quiet
(they would otherwise capture Lore's prompts as if the user had typed them).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from typing import Any

from lore.errors import ConfigError, ProviderError
from lore.llm.anthropic import input_tokens
from lore.llm.base import Completion, ProviderSettings, Request

EXECUTABLE = "claude"


class ClaudeCliProvider:
    def __init__(self, settings: ProviderSettings) -> None:
        path = shutil.which(EXECUTABLE)
        if path is None:
            raise ConfigError(f"{settings.name}: the `{EXECUTABLE}` command is not on PATH; install "
                              "Claude Code or choose another llm.provider")
        self.name = settings.name
        self.model = settings.model or "default"
        self._path = path
        self._explicit_model = settings.model
        self._timeout = settings.timeout

    def command(self, request: Request) -> list[str]:
        cmd = [self._path, "-p", "--output-format", "json", "--max-turns", "1"]
        if self._explicit_model:
            cmd += ["--model", self._explicit_model]
        if request.system:
            cmd += ["--system-prompt", request.system]
        return cmd

    def complete(self, request: Request) -> Completion:
        env = dict(os.environ, LORE_DISABLED="1")
        started = time.monotonic()
        try:
            # cwd: a neutral folder, so the project's CLAUDE.md is not read into the prompt.
            done = subprocess.run(self.command(request), input=_transcript(request), capture_output=True,
                                  text=True, timeout=self._timeout, env=env, cwd=tempfile.gettempdir(),
                                  check=False)
        except subprocess.TimeoutExpired:
            raise ProviderError(f"{self.name}: `claude -p` gave no answer within {self._timeout:g} s; "
                                "raise llm.timeout") from None
        except OSError as exc:
            raise ProviderError(f"{self.name}: cannot run {self._path}: {exc.strerror or exc}") from None
        latency = time.monotonic() - started
        data = _envelope(self.name, done)
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        assert isinstance(usage, dict)
        cost = data.get("total_cost_usd")
        models = data.get("modelUsage")
        model = next(iter(models)) if isinstance(models, dict) and models else self.model
        return Completion(text=str(data.get("result") or ""), input_tokens=input_tokens(usage),
                          output_tokens=int(usage.get("output_tokens") or 0), model=model,
                          latency_s=latency, stop_reason=data.get("stop_reason") or data.get("subtype"),
                          cost_usd=float(cost) if isinstance(cost, int | float) else None)


def _transcript(request: Request) -> str:
    """One prompt for stdin: a single user message as it is, a conversation with speaker labels."""
    if len(request.messages) == 1:
        return request.messages[0].content
    return "\n\n".join(f"{'User' if m.role == 'user' else 'Assistant'}: {m.content}"
                       for m in request.messages)


def _envelope(name: str, done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The JSON result object `claude -p --output-format json` prints, or a one-line error."""
    try:
        data = json.loads(done.stdout)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        tail = " ".join((done.stderr or done.stdout or "").split())[:200]
        raise ProviderError(f"{name}: `claude -p` exited {done.returncode} without a JSON result"
                            f"{': ' + tail if tail else ''}; run `claude -p hello` to see why")
    if data.get("is_error") or done.returncode != 0:
        detail = " ".join(str(data.get("result") or data.get("subtype") or "").split())[:200]
        raise ProviderError(f"{name}: `claude -p` reported an error ({detail or 'no detail'}); "
                            "run `claude -p hello` to check your login")
    return data
