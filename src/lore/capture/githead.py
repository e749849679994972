"""The commit a folder's repository is at, read from the files under ``.git`` (no git process).

The SessionStart hook records it so the end of the session can diff from where the session
began. It runs on the hook's path, so it only reads a few small files: ``.git`` (a folder, or a
file ``gitdir: …`` in a linked worktree or a submodule), ``HEAD``, the branch's ref file, and
``packed-refs`` when the ref is not a file of its own. Standard library only.
"""

from __future__ import annotations

import os

MAX_LEVELS = 64  # folders walked up looking for .git
HEX = frozenset("0123456789abcdef")


def read_head(cwd: str | None) -> dict[str, object]:
    """``{"state", "commit", "branch", "root"}`` for the repository holding ``cwd``.

    ``state`` is ``commit`` (``commit`` is HEAD's sha), ``no-commits`` (a branch with no commit
    yet), ``no-git`` (no repository above ``cwd``) or ``unreadable`` (a ``.git`` that could not
    be read: the end of the session falls back to the session's start time).
    """
    try:
        found = _find_git(cwd) if cwd else None
    except (OSError, ValueError, UnicodeDecodeError):  # a folder name git could not hold either
        found = None
    if found is None:
        return {"state": "no-git", "commit": None, "branch": None, "root": None}
    root, gitdir = found
    out: dict[str, object] = {"state": "unreadable", "commit": None, "branch": None, "root": root}
    try:
        head = _read(os.path.join(gitdir, "HEAD"))
        if head.startswith("ref:"):
            ref = head[4:].strip()
            out["branch"] = ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else ref
            sha = _ref(gitdir, ref)
        else:
            sha = head
        if sha is None:
            out["state"] = "no-commits"
        elif len(sha) in (40, 64) and HEX.issuperset(sha):
            out.update(state="commit", commit=sha)
    except (OSError, UnicodeDecodeError, ValueError):
        pass
    return out


def _find_git(cwd: str) -> tuple[str, str] | None:
    """(work tree root, git folder) of the repository holding ``cwd``."""
    folder = os.path.abspath(cwd)
    for _ in range(MAX_LEVELS):
        dot = os.path.join(folder, ".git")
        if os.path.isdir(dot):
            return folder, dot
        if os.path.isfile(dot):
            try:
                line = _read(dot)
            except (OSError, UnicodeDecodeError):
                return None
            if line.startswith("gitdir:"):
                target = line[7:].strip()
                return folder, target if os.path.isabs(target) else os.path.normpath(
                    os.path.join(folder, target))
            return None
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
    return None


def _ref(gitdir: str, ref: str, depth: int = 0) -> str | None:
    """The sha a ref names: its loose file, else ``packed-refs``; None when it has none yet.

    A linked worktree keeps HEAD in its own folder and the refs in the common one."""
    if ".." in ref.split("/") or depth > 5:
        raise ValueError(f"unexpected ref {ref!r}")
    folders = [gitdir]
    try:
        common = _read(os.path.join(gitdir, "commondir"))
        folders.append(common if os.path.isabs(common) else os.path.normpath(os.path.join(gitdir, common)))
    except FileNotFoundError:
        pass
    for folder in folders:
        try:
            value = _read(os.path.join(folder, *ref.split("/")))
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            continue
        return _ref(gitdir, value[4:].strip(), depth + 1) if value.startswith("ref:") else value
    for folder in folders:
        try:
            with open(os.path.join(folder, "packed-refs"), encoding="utf-8") as fh:
                for line in fh:
                    sha, _, name = line.rstrip("\n").partition(" ")
                    if name == ref:
                        return sha
        except FileNotFoundError:
            continue
    return None


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read(4096).strip()
