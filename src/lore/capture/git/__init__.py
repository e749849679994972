"""A repository's changes read with the git command: commits, files, line counts, renames.

Everything goes through one ``git`` subprocess runner (no shell, one deadline for the
whole read, ``-c core.quotepath=off`` and NUL-separated output so any file name survives,
the repository chosen by ``-C`` alone: ``GIT_DIR`` and friends from the environment are
dropped). Nothing is written: ``GIT_OPTIONAL_LOCKS=0`` keeps ``git diff`` from refreshing
the index, and fsmonitor hooks are switched off.

Files that say nothing about the work never count and their contents are never read:
lock files (by name), vendored folders (``vendor/``, ``node_modules/``, ``dist/``,
``build/``, ``third_party/``), minified files (by name), files marked
``linguist-generated`` or ``linguist-vendored`` in ``.gitattributes`` and git-ignored
files, all decided from the path before any content is asked for. Files whose first diff
lines carry a "generated" header, or whose lines are minified-long, are dropped when the
patch is read. Binary files are counted, never read; submodules are named, never entered.

Callers who must not fail (the end of a session) use :func:`session_changes`, which turns
"no git here" into a reason value. The other readers raise :class:`lore.errors.GitError`
subclasses. The readers are here; the runner and the records are :mod:`.repo`, what never
counts and the patch :mod:`.skips`.
"""
from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from lore.capture.git.repo import (
    DEFAULT_TIMEOUT,
    EMPTY_TREE,
    MAX_COMMITS,
    STATUS,
    Commit,
    FileChange,
    GitChanges,
    Repo,
    SkippedFile,
    SubmoduleChange,
    decoded,
    nul_fields,
    open_repo,
    require_ref,
)
from lore.capture.git.skips import (
    PATCH_CHARS,
    added_folders,
    filter_counted,
    missing_folders,
    path_reason,
    read_untracked,
    scan_patch,
)
from lore.errors import GitError, GitNotInstalled, MissingRef, NotARepository

__all__ = ["EMPTY_TREE", "PATCH_CHARS", "Commit", "FileChange", "GitChanges", "SkippedFile",
           "SubmoduleChange", "changes_in_commit", "changes_in_range", "changes_since_ref",
           "changes_since_time", "path_reason", "session_changes"]


# ---- the public readers -------------------------------------------------------------------------
def changes_since_ref(repo: str | Path, ref: str, *, worktree: bool = False, git: str = "git",
                      timeout: float = DEFAULT_TIMEOUT) -> GitChanges:
    """From commit ``ref`` to HEAD (or to the working tree, untracked files included)."""
    r = open_repo(repo, git, timeout)
    base = require_ref(r, ref)
    return _read(r, base, None if worktree or r.head is None else r.head, commits_from=base)


def changes_in_range(repo: str | Path, spec: str, *, git: str = "git",
                     timeout: float = DEFAULT_TIMEOUT) -> GitChanges:
    """``A..B`` (B defaults to HEAD), or a single commit when ``spec`` has no ``..``."""
    if ".." not in spec:
        return changes_in_commit(repo, spec, git=git, timeout=timeout)
    left, _, right = spec.partition("..")
    if right.startswith("."):
        raise MissingRef(f"{spec!r}: symmetric ranges (A...B) are not supported; give A..B")
    r = open_repo(repo, git, timeout)
    base = require_ref(r, left or "HEAD")
    head = require_ref(r, right or "HEAD")
    return _read(r, base, head, commits_from=base)


def changes_in_commit(repo: str | Path, ref: str, *, git: str = "git",
                      timeout: float = DEFAULT_TIMEOUT) -> GitChanges:
    """One commit against its first parent (the empty tree for a root commit)."""
    r = open_repo(repo, git, timeout)
    sha = require_ref(r, ref)
    commits = _commits(r, None, sha, single=True)
    parent = commits[0].parents[0] if commits and commits[0].parents else None
    return _read(r, parent or r.empty_tree, sha, commits_from=parent, only=sha, commits=commits)


def changes_since_time(repo: str | Path, since: datetime | str, *, worktree: bool = True,
                       git: str = "git", timeout: float = DEFAULT_TIMEOUT) -> GitChanges:
    """From the last commit made before ``since`` (first-parent line of HEAD) to HEAD or the
    working tree: the work of a session that started at ``since``, committed or not."""
    at = _when(since)
    r = open_repo(repo, git, timeout)
    base: str | None = None
    if r.head is not None:
        found = r.git.out("rev-list", "-1", "--first-parent", f"--before={at.isoformat()}", r.head)
        base = decoded(found).strip() or None
    return _read(r, base or r.empty_tree, None if worktree or r.head is None else r.head, commits_from=base)


def session_changes(cwd: str | Path, started_at: datetime | str, *, start_commit: str | None = None,
                    git: str = "git", timeout: float = DEFAULT_TIMEOUT) -> GitChanges:
    """A session's work in ``cwd``: from ``start_commit`` (HEAD when the session began) to the
    working tree, or without it (or when the repository no longer has it) from the last commit
    before ``started_at``. Never raises for a missing git, a folder outside any repository or a
    git that fails: the result's ``unavailable`` says why."""
    try:
        if start_commit:
            try:
                return changes_since_ref(cwd, start_commit, worktree=True, git=git, timeout=timeout)
            except MissingRef:  # rewritten history, or another repository now: the time decides
                pass
        return changes_since_time(cwd, started_at, git=git, timeout=timeout)
    except GitNotInstalled as exc:
        return GitChanges(unavailable="git-missing", detail=str(exc))
    except NotARepository as exc:
        return GitChanges(unavailable="not-a-repository", detail=str(exc))
    except GitError as exc:
        return GitChanges(unavailable="git-failed", detail=str(exc))


def _when(value: datetime | str) -> datetime:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise GitError(f"{value!r} is not an ISO 8601 time; give e.g. 2026-01-31T09:30:00Z") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


# ---- reading --------------------------------------------------------------------------------------
def _read(r: Repo, base: str, head: str | None, *, commits_from: str | None,
          only: str | None = None, commits: tuple[Commit, ...] | None = None) -> GitChanges:
    ends = [base] if head is None else [base, head]
    # The git calls that do not depend on each other run side by side (threads waiting on
    # processes): the commits and the untracked files with the raw listing, the attribute and
    # ignore checks together, the base tree's folders with the patch.
    with ThreadPoolExecutor(max_workers=3) as pool:
        commits_job = None if commits is not None else pool.submit(
            _commits, r, commits_from, only or head or r.head, single=only is not None)
        untracked_job = pool.submit(_untracked, r) if head is None else None
        # The raw listing is cheap (no file is read but for rename detection): the filters run
        # on it, and only what passes is diffed for its line counts and patch.
        raw = r.git.out("diff", "--raw", "--no-abbrev", "-z", "-M", "--no-ext-diff", "--no-textconv",
                        "--ignore-submodules=none", *ends, "--")
        files, submodules = _parse_raw(nul_fields(raw))
        if untracked_job is not None:
            files += untracked_job.result()
        files, skipped = filter_counted(r, files, pool)
        candidates = added_folders(files)
        missing_job = pool.submit(missing_folders, r, base, candidates)
        files, more_skipped, patch, truncated = scan_patch(r, ends, files, skipped, pool)
        files, untracked_skipped = read_untracked(r, files)
        skipped += more_skipped + untracked_skipped
        missing = missing_job.result()
        if commits_job is not None:
            commits = commits_job.result()
    # A folder counts as new only while it still holds a counted added file.
    new_dirs = missing & added_folders(files)
    return GitChanges(
        root=r.root, base=base, head=head, branch=r.branch, detached=r.head is not None and r.branch is None,
        no_commits=r.head is None, commits=commits or (), files=tuple(files), submodules=tuple(submodules),
        skipped=tuple(sorted(skipped, key=lambda s: s.path)),
        new_directories=tuple(sorted(c for c in new_dirs if c.rpartition("/")[0] not in new_dirs)),
        patch=patch, patch_truncated=truncated)


def _commits(r: Repo, start: str | None, end: str | None, *, single: bool) -> tuple[Commit, ...]:
    if end is None or start == end:
        return ()
    span = ["-1", end] if single else ([f"{start}..{end}"] if start else [end])
    raw = r.git.out("log", "-z", f"-n{MAX_COMMITS}", "--format=%H%x1f%P%x1f%ct%x1f%B", *span, "--")
    commits = []
    for record in nul_fields(raw):
        parts = record.split("\x1f", 3)
        if len(parts) != 4:
            continue
        sha, parents, stamp, message = parts
        subject, _, body = message.strip().partition("\n")
        commits.append(Commit(sha=sha.strip(), parents=tuple(parents.split()),
                              time=int(stamp) if stamp.isdigit() else 0,
                              subject=subject.strip(), body=body.strip()))
    return tuple(commits)


def _parse_raw(tokens: Sequence[str]) -> tuple[list[FileChange], list[SubmoduleChange]]:
    """``git diff --raw -z``: ``:mode mode sha sha status``, then one path (two for renames)."""
    files: list[FileChange] = []
    submodules: list[SubmoduleChange] = []
    i = 0
    while i < len(tokens):
        meta = tokens[i][1:].split()
        if not tokens[i].startswith(":") or len(meta) < 5:
            raise GitError(f"git diff --raw printed an unexpected line: {tokens[i][:80]!r}")
        status = meta[4][:1]
        old_path = tokens[i + 1] if status in "RC" else None
        path = tokens[i + 2] if status in "RC" else tokens[i + 1]
        i += 3 if status in "RC" else 2
        if "160000" in (meta[0], meta[1]):
            # A working-tree side shows zeros for the commit: not known without entering the submodule.
            submodules.append(SubmoduleChange(path, None if status == "A" else _sha(meta[2]),
                                              None if status == "D" else _sha(meta[3])))
            continue
        files.append(FileChange(path=path, status=STATUS.get(status, "modified"),  # type: ignore[arg-type]
                                old_path=old_path))
    return files, submodules


def _sha(value: str) -> str | None:
    return None if value.strip("0") == "" else value


def _untracked(r: Repo) -> list[FileChange]:
    listed = r.git.out("ls-files", "-z", "--others", "--exclude-standard", "--directory",
                       "--no-empty-directory")
    out = []
    for path in nul_fields(listed):
        if path.endswith("/"):  # a nested repository (an unregistered submodule): named, not entered
            continue
        out.append(FileChange(path=path, status="added", untracked=True))
    return out
