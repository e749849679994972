"""The one error hierarchy. Every message says what to do next.

Interfaces translate these once: the CLI prints one line and exits 1, the MCP
server returns a tool error, the web app one JSON error shape.
"""

from __future__ import annotations


class LoreError(Exception):
    """Base of every error Lore raises on purpose."""


class NotFound(LoreError):
    """An id that names nothing."""


class InvalidInput(LoreError):
    """A value that breaks a rule of the data model (empty title, unknown confidence …)."""


class TooLarge(InvalidInput):
    """A value over its size bound: a lesson, a field, a request body."""


class Forbidden(LoreError):
    """An act the caller's credentials do not allow (a token pushing for another device)."""


class ConfigError(LoreError):
    """An unreadable or invalid config file or environment variable."""


class BackendUnavailable(LoreError):
    """An optional backend, extension or model that cannot be loaded here."""


class MigrationError(LoreError):
    """A database this version of Lore cannot open or upgrade."""


class NotALoreDatabase(MigrationError):
    """A file that is not a Lore database (or not SQLite at all)."""


class EmbeddingMismatch(LoreError):
    """The configured embedding model differs from the one the database was built with."""


class StoreBusy(LoreError):
    """The database stayed locked by another writer past the retry budget."""


class DetectorError(BackendUnavailable):
    """The correction detector's weights file does not match the detector's features."""


class AlreadyRunning(LoreError):
    """Another worker holds this home's lock."""


class ProviderError(LoreError):
    """A language-model provider that failed, refused or could not be reached."""

    attempts: int = 1  # how many tries were made before giving up (for the call log)


class UnusableReply(ProviderError):
    """A model reply that stayed unparseable or invalid after the retries that showed the error."""


class BudgetExceeded(LoreError):
    """Today's language-model token or cost budget would be exceeded by the call."""


class StorageError(LoreError):
    """The database file or its folder cannot be used: a file where a folder should be,
    no permission, a read-only or full disk. Carries the problem and the fix apart, so
    `lore doctor` can show them in their own columns."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem}; {fix}")
        self.problem = problem
        self.fix = fix


class ReadOnlyDatabase(StorageError):
    """A write to a database opened read-only (its file or folder is not writable)."""


def os_error_message(exc: OSError) -> tuple[str, str]:
    """(problem, fix) for an OS error a user can cause: a path that is a file, a folder
    without permission, a read-only or full disk."""
    import errno

    path = exc.filename if exc.filename is not None else "a file"
    reason = exc.strerror or str(exc)
    code = exc.errno
    if code in (errno.ENOSPC, errno.EDQUOT):
        return (f"no space left on the disk holding {path}",
                "free some space (df -h shows how much is left) and run the command again")
    if code == errno.EROFS:
        return (f"{path} is on a read-only file system",
                "point LORE_HOME (or --db) at a writable folder, or remount the disk read-write")
    if code in (errno.EACCES, errno.EPERM):
        return (f"permission denied: {path}",
                "check its owner and mode (ls -ld), or point LORE_HOME (or --db) elsewhere")
    if code == errno.ENOTDIR:
        return (f"a part of {path} is a file, not a folder",
                "move that file away or choose another path")
    if code == errno.EEXIST:
        return f"{path} already exists as a file", "move the file away or choose another path"
    if code == errno.ENOENT:
        return f"no such file or folder: {path}", "check the path; create the folder first"
    if code == errno.EISDIR:
        return f"{path} is a folder", "give the path of a file"
    return f"cannot use {path}: {reason}", "check the path, its permissions and the disk"


class GitError(LoreError):
    """git failed, took too long, or answered something unreadable."""


class GitNotInstalled(GitError):
    """The git command cannot be run here."""


class NotARepository(GitError):
    """A path that is not inside a git work tree."""


class MissingRef(GitError):
    """A commit, branch or tag that the repository does not have."""
