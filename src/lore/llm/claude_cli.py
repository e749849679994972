"""The user's own Claude Code: ``claude -p --output-format json``, the prompt on stdin.

A bare completion, not an agent session: no tools (``--tools ""``), no MCP server
(``--strict-mcp-config`` with an empty ``--mcp-config``), none of the user's settings files
and so none of their hooks, plugins or permissions (``--setting-sources ""``), no skills or
slash commands, no CLAUDE.md or memory, no extended thinking, Lore's own system prompt in
place of Claude Code's, and no transcript written (``--no-session-persistence``). The request
Claude Code sends is then Lore's prompt and a few hundred bytes of its own (measured in
docs/benchmarks.md).

Sign-in is Claude Code's own, found as it finds it: with ``ANTHROPIC_API_KEY`` in the
environment the call also runs in Claude Code's minimal mode (``CLAUDE_CODE_SIMPLE``, which
reads only that key and leaves out the environment notes it adds otherwise); without it, the
login kept in Claude Code's config folder (``claude /login``, ``CLAUDE_CONFIG_DIR``) is used,
which minimal mode would not read. An ``apiKeyHelper`` or ``env`` set in settings.json is
not read (no settings file is).

No shell: the arguments go to the executable as a list. The child runs with
``LORE_DISABLED=1`` so Lore's hooks stay quiet, in Lore's call folder
(:mod:`lore.llm.own`): a session that is written anyway is known as Lore's and never
imported.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from typing import Any

from lore.errors import ConfigError, ProviderError
from lore.llm.anthropic import input_tokens
from lore.llm.base import Completion, ProviderSettings, Request, claimed_tokens, loads
from lore.llm.own import call_folder

EXECUTABLE = "claude"
NO_MCP = '{"mcpServers":{}}'
# Used when a request brings no system part: Claude Code's own would be sent otherwise.
PLAIN_SYSTEM = "Answer the request."
BARE_ARGS = ("--tools", "", "--strict-mcp-config", "--mcp-config", NO_MCP, "--setting-sources", "",
             "--no-session-persistence", "--disable-slash-commands")
BARE_ENV = {"LORE_DISABLED": "1", "CLAUDE_CODE_DISABLE_THINKING": "1",
            "CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1", "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
KEY_ENV = "ANTHROPIC_API_KEY"


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
        self._home = settings.home

    def command(self, request: Request) -> list[str]:
        cmd = [self._path, "-p", "--output-format", "json", "--max-turns", "1", *BARE_ARGS]
        if self._explicit_model:
            cmd += ["--model", self._explicit_model]
        cmd += ["--system-prompt", request.system or PLAIN_SYSTEM]
        return cmd

    def environment(self, request: Request | None = None) -> dict[str, str]:
        """The child's environment: the user's, Lore's hooks quiet, Claude Code's extras off,
        the reply bounded by the request's ``max_tokens`` as the HTTP providers bound it."""
        env = dict(os.environ, **BARE_ENV)
        if request is not None:
            env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] = str(request.max_tokens)
        if env.get(KEY_ENV):
            env["CLAUDE_CODE_SIMPLE"] = "1"
        return env

    def workdir(self) -> str:
        """Lore's call folder (a neutral one: no project's CLAUDE.md, known as Lore's)."""
        if self._home is None:
            return tempfile.gettempdir()
        try:
            return str(call_folder(self._home))
        except OSError:
            return tempfile.gettempdir()

    def complete(self, request: Request) -> Completion:
        env = self.environment(request)
        started = time.monotonic()
        try:
            done = _run(self.command(request), _transcript(request), self._timeout, env,
                        self.workdir())
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
                          output_tokens=claimed_tokens(usage.get("output_tokens")), model=model,
                          latency_s=latency, stop_reason=data.get("stop_reason") or data.get("subtype"),
                          cost_usd=float(cost) if isinstance(cost, int | float) else None)


def _run(cmd: list[str], prompt: str, timeout: float, env: dict[str, str],
         cwd: str) -> subprocess.CompletedProcess[str]:
    """``cmd`` with ``prompt`` on stdin, its output captured, ended within ``timeout`` seconds:
    at the deadline its whole process group (Claude Code and anything it started) is killed
    and TimeoutExpired raised."""
    with subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
                          start_new_session=os.name == "posix") as proc:
        try:
            out, err = proc.communicate(prompt, timeout=timeout)
        except BaseException:  # the deadline, or Ctrl-C: nothing of the call is left running
            _kill_group(proc)
            raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            proc.kill()
    except OSError:
        pass
    proc.wait()


def _transcript(request: Request) -> str:
    """One prompt for stdin: a single user message as it is, a conversation with speaker labels."""
    if len(request.messages) == 1:
        return request.messages[0].content
    return "\n\n".join(f"{'User' if m.role == 'user' else 'Assistant'}: {m.content}"
                       for m in request.messages)


def _envelope(name: str, done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The JSON result object `claude -p --output-format json` prints, or a one-line error."""
    try:
        data = loads(done.stdout)
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
