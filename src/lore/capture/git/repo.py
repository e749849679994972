"""The git runner and what it reads: one ``git`` subprocess per call under one deadline for
the whole read (:class:`Git`), the repository asked about (:class:`Repo`), and the records a
read returns (:class:`GitChanges` and its parts). The readers are :mod:`lore.capture.git`."""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from lore.errors import GitError, GitNotInstalled, MissingRef, NotARepository

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # SHA-1 repositories; SHA-256 ones ask git
DEFAULT_TIMEOUT = 30.0  # seconds for a whole read
MAX_COMMITS = 1000
# Variables that would point git at another repository than the folder asked about.
_REDIRECTS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR",
              "GIT_NAMESPACE", "GIT_ALTERNATE_OBJECT_DIRECTORIES")
STATUS = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed", "C": "copied",
           "T": "type-changed", "U": "unmerged"}

FileStatus = Literal["added", "modified", "deleted", "renamed", "copied", "type-changed", "unmerged"]
SkipReason = Literal["lockfile", "vendored", "generated", "minified", "ignored"]
Unavailable = Literal["git-missing", "not-a-repository", "git-failed"]


@dataclass(frozen=True, slots=True)


class Commit:
    sha: str
    parents: tuple[str, ...]
    time: int  # committer time, Unix seconds
    subject: str
    body: str = ""

    @property
    def short(self) -> str:
        return self.sha[:10]

    @property
    def is_merge(self) -> bool:
        return len(self.parents) > 1


@dataclass(frozen=True, slots=True)
class FileChange:
    path: str
    status: FileStatus
    added: int = 0
    removed: int = 0
    binary: bool = False  # counted as a changed file, never read; no line counts
    old_path: str | None = None  # where a renamed or copied file came from
    untracked: bool = False  # new in the working tree, not yet added to git

    @property
    def lines(self) -> int:
        return self.added + self.removed


@dataclass(frozen=True, slots=True)
class SubmoduleChange:
    path: str
    old_commit: str | None  # None: the submodule was added
    new_commit: str | None  # None: removed


@dataclass(frozen=True, slots=True)
class SkippedFile:
    path: str
    reason: SkipReason


@dataclass(frozen=True, slots=True)
class GitChanges:
    """What changed between ``base`` and ``head`` (None: the working tree), counted files only."""

    root: str | None = None
    base: str | None = None  # a commit, or the empty tree when there is nothing before
    head: str | None = None
    branch: str | None = None
    detached: bool = False
    no_commits: bool = False  # the repository has no commit yet: compared against the empty tree
    commits: tuple[Commit, ...] = ()
    files: tuple[FileChange, ...] = ()
    submodules: tuple[SubmoduleChange, ...] = ()
    skipped: tuple[SkippedFile, ...] = ()
    new_directories: tuple[str, ...] = ()  # top-most folders that hold added files and did not exist
    patch: str = ""  # unified diff of the counted text files, cut at PATCH_CHARS
    patch_truncated: bool = False
    unavailable: Unavailable | None = None  # why nothing could be read (session_changes only)
    detail: str = ""  # the message behind ``unavailable``

    @property
    def added(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def removed(self) -> int:
        return sum(f.removed for f in self.files)

    @property
    def lines_changed(self) -> int:
        return self.added + self.removed

    @property
    def binary_files(self) -> tuple[FileChange, ...]:
        return tuple(f for f in self.files if f.binary)

    @property
    def renames(self) -> tuple[FileChange, ...]:
        return tuple(f for f in self.files if f.status == "renamed")


# ---- the runner ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Result:
    code: int
    out: bytes
    err: str


@dataclass(slots=True)
class _Git:
    folder: Path
    git: str = "git"
    timeout: float = DEFAULT_TIMEOUT
    deadline: float = field(default=0.0)

    def __post_init__(self) -> None:
        self.deadline = time.monotonic() + self.timeout

    def call(self, *args: str, stdin: bytes | None = None) -> _Result:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise self._slow()
        env = {k: v for k, v in os.environ.items() if k not in _REDIRECTS}
        env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C", GIT_PAGER="cat")
        cmd = [self.git, "-c", "core.quotepath=off", "-c", "core.fsmonitor=false",
               "-C", str(self.folder), *args]
        try:
            if stdin is None:  # never wait on the caller's stdin (a hook's stdin is the event)
                done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=left,
                                      env=env, check=False)
            else:
                done = subprocess.run(cmd, input=stdin, capture_output=True, timeout=left, env=env,
                                      check=False)
        except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
            if not self.folder.is_dir():
                raise NotARepository(f"{self.folder} is not a folder; give the path of a git "
                                     "work tree") from None
            raise GitNotInstalled(f"git cannot be run ({self.git}: {exc.strerror or exc}); install git "
                                  "or put it on PATH") from None
        except subprocess.TimeoutExpired:
            raise self._slow() from None
        return _Result(done.returncode, done.stdout, done.stderr.decode("utf-8", "replace").strip())

    def out(self, *args: str, stdin: bytes | None = None, ok: tuple[int, ...] = (0,)) -> bytes:
        result = self.call(*args, stdin=stdin)
        if result.code not in ok:
            first = result.err.splitlines()[0] if result.err else f"exit status {result.code}"
            raise GitError(f"git {args[0]} failed in {self.folder}: {first}")
        return result.out

    def _slow(self) -> GitError:
        return GitError(f"git took longer than {self.timeout:g} s in {self.folder}; try a smaller range "
                        "or a larger timeout")


def decoded(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def nul_fields(raw: bytes) -> list[str]:
    """NUL-separated output as strings (the empty tail dropped)."""
    parts = decoded(raw).split("\0")
    return parts[:-1] if parts and parts[-1] == "" else parts


# ---- where we are -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Repo:
    git: _Git
    root: str
    head: str | None  # None: no commit yet
    branch: str | None
    empty_tree: str


def open_repo(path: str | Path, git: str, timeout: float) -> Repo:
    folder = Path(path)
    if not folder.is_dir():
        raise NotARepository(f"{folder} is not a folder; give the path of a git work tree")
    runner = _Git(folder, git, timeout)
    # One call answers the usual case: the top folder, HEAD's commit and the branch it is on.
    quick = runner.call("rev-parse", "--show-toplevel", "HEAD", "--symbolic-full-name", "HEAD")
    lines = decoded(quick.out).splitlines()
    if quick.code == 0 and len(lines) == 3 and len(lines[1]) in (40, 64):
        runner.folder = Path(lines[0])
        name = lines[2].removeprefix("refs/heads/") if lines[2].startswith("refs/heads/") else ""
        return Repo(runner, str(runner.folder), lines[1], name or None,
                     EMPTY_TREE if len(lines[1]) == 40 else _empty_tree(runner))
    top = runner.call("rev-parse", "--show-toplevel")
    if top.code != 0:
        if "not a git repository" in top.err or "must be run in a work tree" in top.err:
            raise NotARepository(f"{folder} is not inside a git work tree; run `git init` there or "
                                 "give another folder")
        first = top.err.splitlines()[0] if top.err else f"exit status {top.code}"
        raise GitError(f"git rev-parse failed in {folder}: {first}")
    runner.folder = Path(decoded(top.out).strip())
    head = _resolve(runner, "HEAD")
    branch = runner.call("symbolic-ref", "-q", "--short", "HEAD")
    empty = EMPTY_TREE
    if head is None or len(head) != 40:  # SHA-256 repositories have another empty tree
        empty = _empty_tree(runner)
    name = decoded(branch.out).strip() if branch.code == 0 else ""
    return Repo(runner, str(runner.folder), head, name or None, empty)


def _empty_tree(runner: _Git) -> str:
    return decoded(runner.out("hash-object", "-t", "tree", "--stdin", stdin=b"")).strip()


def _resolve(git: _Git, ref: str) -> str | None:
    if not ref or ref.startswith("-") or "\0" in ref:
        return None
    done = git.call("rev-parse", "-q", "--verify", f"{ref}^{{commit}}")
    sha = decoded(done.out).strip() if done.code == 0 else ""
    return sha or None


def require_ref(repo: Repo, ref: str) -> str:
    sha = _resolve(repo.git, ref)
    if sha is None:
        raise MissingRef(f"{ref!r} names no commit in {repo.root}; check the branch, tag or sha "
                         "(git log --oneline shows them)")
    return sha
