"""Private files: what Lore keeps quotes what the user typed, so its home is for its owner only.

Folders are created 0700 and files 0600. Every Lore process also starts with the umask 077
(:func:`lore.entry.main`), so files written by code that names no mode (log handlers, the
config template) are private too. A home made by an older Lore is tightened the first time a
Lore process opens it: one ``stat`` of the home when it is already private.

Standard library only: the hooks call it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600
UMASK = 0o077


def private_dir(path: Path) -> Path:
    """Create ``path`` and its missing parents as 0700. An existing folder is left as it is
    (it may be the user's own; :func:`tighten_home` handles Lore's home)."""
    missing = []
    p = path
    while not p.is_dir() and p != p.parent:
        missing.append(p)
        p = p.parent
    for p in reversed(missing):  # mkdir(parents=True) would give the parents the default mode
        p.mkdir(mode=DIR_MODE, exist_ok=True)
    return path


def open_private(path: Path, mode: str = "w") -> int:
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


def tighten_home(home: Path) -> int:
    """Make an existing home private: folders 0700, files 0600 (links are left alone).
    Costs one ``stat`` when the home is already private; returns how many entries changed."""
    try:
        if not home.is_dir() or not stat.S_IMODE(home.stat().st_mode) & 0o077:
            return 0
        if home.resolve() in (Path.home().resolve(), Path(home.anchor)):
            return 0  # LORE_HOME pointed at the user's own home: not Lore's to change
    except (OSError, RuntimeError):
        return 0
    changed = int(_tighten(home, DIR_MODE))
    for root, dirs, files in os.walk(home):
        for name in dirs:
            changed += _tighten(Path(root) / name, DIR_MODE)
        for name in files:
            changed += _tighten(Path(root) / name, FILE_MODE)
    return changed


def make_private(path: Path) -> bool:
    """Take group and other access away from one existing file or folder (True: changed)."""
    try:
        return _tighten(path, DIR_MODE if path.is_dir() else FILE_MODE)
    except OSError:
        return False


def _tighten(path: Path, mode: int) -> bool:
    """Take group and other access away; never add any (a home the user made read-only,
    0555, becomes 0500, not 0700)."""
    try:
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode) or not stat.S_IMODE(st.st_mode) & 0o077:
            return False
        os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o077 & (mode | 0o7700))
        return True
    except OSError:
        return False
