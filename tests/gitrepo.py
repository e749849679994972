"""Real git repositories for tests: ``git init`` in a temporary folder, commits with a fixed author and
fixed dates, and nothing read from the user's own git configuration."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

AUTHOR = {"GIT_AUTHOR_NAME": "Ada Tester", "GIT_AUTHOR_EMAIL": "ada@example.org",
          "GIT_COMMITTER_NAME": "Ada Tester", "GIT_COMMITTER_EMAIL": "ada@example.org"}


class Repo:
    def __init__(self, path: Path, *, init: bool = True) -> None:
        self.path = path
        self.clock = 1_767_261_600  # 2026-01-01T10:00:00Z, one minute more per commit
        path.mkdir(parents=True, exist_ok=True)
        if init:
            self.git("init", "-q", "-b", "main")

    def env(self, when: int | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        stamp = f"@{when if when is not None else self.clock} +0000"
        env.update(AUTHOR, GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp, GIT_CONFIG_NOSYSTEM="1",
                   GIT_CONFIG_GLOBAL=os.devnull, HOME=str(self.path))
        return env

    def git(self, *args: str, when: int | None = None) -> str:
        done = subprocess.run(["git", "-c", "protocol.file.allow=always", *args], cwd=self.path,
                              env=self.env(when), capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
        return done.stdout.strip()

    def write(self, name: str, text: str | bytes) -> Path:
        path = self.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
        return path

    def commit(self, message: str, *files: tuple[str, str | bytes], add: str = "-A") -> str:
        for name, text in files:
            self.write(name, text)
        self.git("add", add)
        self.clock += 60
        self.git("commit", "-q", "--allow-empty", "-m", message, when=self.clock)
        return self.git("rev-parse", "HEAD")


def lines(n: int, prefix: str = "line") -> str:
    return "".join(f"{prefix} {i}\n" for i in range(n))
