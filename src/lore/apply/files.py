"""Planned file changes and how they are written: diff first, then atomic replacement.

A ``Plan`` holds, per file, the bytes on disk when it was made and the bytes Lore wants
there. ``diff()`` shows them as unified diffs (``--dry-run``); ``write()`` checks that no file
changed since, then writes each one through a temporary file in the same folder and
``os.replace``, keeping the file's permission bits. Unchanged files are not touched, so their
modification time stays.

Symlinks are written through: when CLAUDE.md links to AGENTS.md, AGENTS.md is rewritten and
the link stays a link. A link that leads out of the folder it belongs to (the project, or the
home folder for user files) is refused unless the caller allows it: Lore should not
rewrite a file somewhere else without being asked to.
"""

from __future__ import annotations

import difflib
import os
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lore.apply.blocks import split_lines
from lore.apply.rules import Skip
from lore.errors import InvalidInput

MAX_BYTES = 4 * 1024 * 1024  # Claude Code skips a CLAUDE.md over 4 MiB: no use writing into one


class UnsafeTarget(InvalidInput):
    """A file Lore will not write: too large, not UTF-8, a folder, or a link out of its root."""


class ChangedSincePlanned(InvalidInput):
    """A file was modified between planning and writing."""


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file: what is there (None: absent) and what Lore wants (None: delete it)."""

    path: Path  # the path as named, possibly a symlink
    real: Path  # the file actually written (the symlink's target)
    old: bytes | None
    new: bytes | None
    skipped: tuple[Skip, ...] = field(default=())

    @property
    def changed(self) -> bool:
        return self.old != self.new

    def diff(self) -> str:
        if not self.changed:
            return ""
        old = split_lines((self.old or b"").decode("utf-8"))
        new = split_lines((self.new or b"").decode("utf-8"))
        head_old = str(self.path) if self.old is not None else "/dev/null"
        head_new = str(self.path) if self.new is not None else "/dev/null"
        lines = list(difflib.unified_diff(old, new, head_old, head_new))
        return "".join(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"
                       for line in lines)


@dataclass(frozen=True, slots=True)
class Plan:
    """Changes to several files, shown by ``diff()`` and carried out by ``write()``."""

    changes: tuple[FileChange, ...]

    @property
    def changed(self) -> tuple[FileChange, ...]:
        return tuple(c for c in self.changes if c.changed)

    @property
    def skipped(self) -> tuple[tuple[Path, Skip], ...]:
        return tuple((c.path, s) for c in self.changes for s in c.skipped)

    def diff(self) -> str:
        return "".join(c.diff() for c in self.changed)

    def write(self) -> tuple[Path, ...]:
        """Write every changed file; returns their paths. Nothing is written if any file on
        disk differs from what the plan was made from."""
        for c in self.changed:
            if _current(c.real) != c.old:
                raise ChangedSincePlanned(f"{c.path}: changed since the plan was made; "
                                          "run the command again")
        for c in self.changed:
            if c.new is None:
                c.real.unlink()
            else:
                atomic_write(c.real, c.new)
        return tuple(c.path for c in self.changed)


def resolve(path: Path, root: Path, allow_outside: bool = False) -> Path:
    """The file ``path`` names, following symlinks; refused if it leaves ``root``."""
    real = path.resolve()
    root_real = root.resolve()
    if not allow_outside and real != root_real and root_real not in real.parents:
        raise UnsafeTarget(f"{path}: leads to {real}, outside {root}; remove the link or allow "
                           "writing outside the folder")
    return real


def read(path: Path, real: Path, max_bytes: int = MAX_BYTES) -> str | None:
    """The file's text (None if absent); refused when too large, not a file or not UTF-8."""
    try:
        st = real.stat()
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeTarget(f"{path}: not a regular file; move it away or pick another target")
    if st.st_size > max_bytes:
        raise UnsafeTarget(f"{path}: {st.st_size} bytes, over the {max_bytes}-byte limit; "
                           "shorten the file (Claude Code skips files over 4 MiB)")
    data = real.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UnsafeTarget(f"{path}: not UTF-8 text (byte {e.start}); convert it to UTF-8 "
                           "first") from None


def change(path: Path, real: Path, old: str | None, new: str | None,
           skipped: Sequence[Skip] = (), max_bytes: int = MAX_BYTES) -> FileChange:
    new_bytes = None if new is None else new.encode("utf-8")
    if new_bytes is not None and len(new_bytes) > max_bytes:
        raise UnsafeTarget(f"{path}: would grow to {len(new_bytes)} bytes, over the "
                           f"{max_bytes}-byte limit; approve fewer rules or shorten the file")
    return FileChange(path, real, None if old is None else old.encode("utf-8"), new_bytes,
                      tuple(skipped))


def atomic_write(path: Path, data: bytes, new_mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` in one step: readers see the old or the new file. The
    file keeps its permission bits; a new one gets ``new_mode`` (default: the umask's)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask() if new_mode is None else new_mode
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".lore-tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _current(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
