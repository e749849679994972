"""Private files: what Lore keeps quotes what the user typed, so its home is for its owner only.

Folders are created 0700 and files 0600. Every Lore process also starts with the umask 077
(:func:`lore.entry.main`), so files written by code that names no mode (log handlers, the
config template) are private too. Lore changes the mode of nothing it did not create: a file
it writes again is tightened when it opens it (its own log, queue file or database), a folder
it did not make keeps its mode, and a home readable by others is pointed out once
(:func:`home_notice`, on a terminal).

Standard library only, without :mod:`pathlib` (the hooks call it with strings); every
function takes a string or a path and gives back what it was given.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import TypeVar

    P = TypeVar("P", str, Path)

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: P) -> P:
    """Create ``path`` and its missing parents as 0700. An existing folder is left as it is
    (it may be the user's own)."""
    missing = []
    p = os.fspath(path)
    while p and not os.path.isdir(p):
        missing.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    for p in reversed(missing):  # makedirs would give the parents the default mode
        try:
            os.mkdir(p, DIR_MODE)
        except FileExistsError:
            if not os.path.isdir(p):
                raise
    return path


def open_private(path: str | os.PathLike[str], mode: str = "w") -> int:
    """A file descriptor for ``path`` created 0600 (``mode`` "w" truncates, "a" appends);
    an existing file is tightened. Wrap it with ``open(fd, ...)``."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if mode == "a" else os.O_TRUNC)
    fd = os.open(path, flags, FILE_MODE)
    try:
        st = os.fstat(fd)
        # Only a regular file: `-o /dev/stdout` or a named pipe is not ours to change.
        if stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) & 0o077:
            os.fchmod(fd, FILE_MODE)
    except OSError:  # not ours to change (another owner): keep writing
        pass
    return fd


NOTICE_MARKER = ".home-mode-notice"  # in the home: the notice below was given


def home_notice(home: str | os.PathLike[str]) -> str | None:
    """One line telling that ``home`` is readable by others, the first time it is seen so
    (remembered in a marker file in the home); None otherwise. Lore changes the mode of
    nothing it did not create: a home the user pointed at an existing folder keeps its mode,
    and so does everything in it. What Lore writes there is created 0600 (folders 0700) all
    the same. Costs one ``stat`` when the home is private."""
    try:
        mode = stat.S_IMODE(os.stat(home).st_mode)
        if not mode & 0o044:
            return None
        marker = os.path.join(home, NOTICE_MARKER)
        if os.path.lexists(marker):
            return None
        os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    except OSError:  # no home yet, or none Lore can write: nothing to say, or no way to remember
        return None
    return (f"note: Lore's home {home} can be read by other users (mode {mode:04o}); the files "
            f"Lore writes there are private (0600), but their names show: chmod 700 {home} "
            "to hide them (said once)")


def make_private(path: str | os.PathLike[str]) -> bool:
    """Take group and other access away from one existing file or folder (True: changed)."""
    return _tighten(path, DIR_MODE if os.path.isdir(path) else FILE_MODE)


def _tighten(path: str | os.PathLike[str], mode: int) -> bool:
    """Take group and other access away; never add any (a home the user made read-only,
    0555, becomes 0500, not 0700)."""
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode) or not stat.S_IMODE(st.st_mode) & 0o077:
            return False
        os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o077 & (mode | 0o7700))
        return True
    except OSError:
        return False
