"""Planned file changes and how they are written: diff first, then atomic replacement.

A ``Plan`` holds, per file, the bytes on disk when it was made and the bytes Lore wants
there. ``diff()`` shows them as unified diffs (``--dry-run``); ``write()`` writes each one
through a temporary file in the same folder and ``os.replace``, keeping the file's permission
bits. Unchanged files are not touched, so their modification time stays.

Nothing the user writes meanwhile is lost. ``write()`` holds a lock (``flock`` on the folders
it writes in), so two Lore runs never interleave, and checks under it that every file still
holds what the plan was made from. An editor does not take Lore's lock, so the file is
compared again (size, modification time and content) right before it is replaced, and the
replaced file is looked at once more after: a write that landed in it after the check is put
back. A file that changed is planned again from its new content (``Plan.replan``), a few
times; a file that keeps changing is refused with one line.

Symlinks are written through: when CLAUDE.md links to AGENTS.md, AGENTS.md is rewritten and
the link stays a link. A link that leads out of the folder it belongs to (the project, or the
home folder for user files) is refused unless the caller allows it: Lore should not
rewrite a file somewhere else without being asked to.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from lore.apply.blocks import split_lines
from lore.apply.rules import Skip
from lore.errors import InvalidInput

MAX_BYTES = 4 * 1024 * 1024  # Claude Code skips a CLAUDE.md over 4 MiB: no use writing into one
ATTEMPTS = 8  # plans made from a file that changed under Lore before the write is refused


class UnsafeTarget(InvalidInput):
    """A file Lore will not write: too large, not UTF-8, a folder, or a link out of its root."""


class ChangedSincePlanned(InvalidInput):
    """A file was modified between planning and writing (and kept changing)."""


class _Moved(Exception):
    """A file is not what the plan was made from: plan again."""

    def __init__(self, path: Path) -> None:
        super().__init__(str(path))
        self.path = path


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
    # Makes the plan again from the files as they are now (None: refuse when one changed).
    replan: Callable[[], Plan] | None = field(default=None, compare=False, repr=False)

    @property
    def changed(self) -> tuple[FileChange, ...]:
        return tuple(c for c in self.changes if c.changed)

    @property
    def skipped(self) -> tuple[tuple[Path, Skip], ...]:
        return tuple((c.path, s) for c in self.changes for s in c.skipped)

    def diff(self) -> str:
        return "".join(c.diff() for c in self.changed)

    def write(self) -> tuple[Path, ...]:
        """Write every changed file; returns their paths. A file that differs from what the
        plan was made from is planned again from its new content, under the lock (at most
        ATTEMPTS tries); without ``replan``, or when it keeps changing, ChangedSincePlanned.
        Nothing is written over a file that differs, and no line written by someone else is
        lost."""
        plan = self
        written: dict[Path, None] = {}
        tries = 0
        while True:
            with locked([c.real for c in plan.changed]) as held:
                # Plans made again under the lock, while it covers their folders.
                while {_nearest_folder(c.real.parent) for c in plan.changed} <= held:
                    try:
                        for path in _write_changed(plan.changed):
                            written[path] = None
                        return tuple(written)
                    except _Moved as moved:
                        tries += 1
                        if plan.replan is None:
                            raise ChangedSincePlanned(
                                f"{moved.path}: changed since the plan was made; run the "
                                "command again") from None
                        if tries >= ATTEMPTS:
                            raise ChangedSincePlanned(
                                f"{moved.path}: kept changing while Lore wrote it ({tries} "
                                "tries); nothing of it was lost; run the command again when "
                                "it is quiet") from None
                        plan = replace(plan.replan(), replan=plan.replan)

def _write_changed(changed: tuple[FileChange, ...]) -> Iterator[Path]:
    """Write the changed files, each only if it still holds what the plan was made from
    (all are checked before the first is written)."""
    for c in changed:
        if _current(c.real) != c.old:
            raise _Moved(c.path)
    for c in changed:
        if c.new is None:
            if _current(c.real) != c.old:
                raise _Moved(c.path)
            c.real.unlink()
        else:
            atomic_write(c.real, c.new, expect=c.old, named=c.path)
        yield c.path


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


_ANY = b"\0any"  # atomic_write's ``expect`` when the file may hold anything


def atomic_write(path: Path, data: bytes, new_mode: int | None = None,
                 expect: bytes | None = _ANY, named: Path | None = None) -> None:
    """Replace ``path`` with ``data`` in one step: readers see the old or the new file. The
    file keeps its permission bits; a new one gets ``new_mode`` (default: the umask's).

    With ``expect`` (the bytes the file must hold, None: absent), the file is compared right
    before the replacement and looked at again after it; a change raises _Moved, and a
    write that reached the replaced file after the comparison is put back first."""
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
        if expect == _ANY:
            os.replace(tmp, path)
            return
        _replace_if_unchanged(Path(tmp), path, data, expect, named or path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _replace_if_unchanged(tmp: Path, path: Path, data: bytes, expect: bytes | None,
                          named: Path) -> None:
    try:
        old = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        if expect is not None:
            raise _Moved(named) from None
        _create(tmp, path, named)
        return
    with os.fdopen(old, "rb") as f:
        before = os.fstat(f.fileno())
        content = f.read()
        seen = os.fstat(f.fileno())
        if (expect is None or _stamp(before) != _stamp(seen) or seen.st_size != len(expect)
                or hashlib.sha256(content).digest() != hashlib.sha256(expect).digest()):
            raise _Moved(named)
        os.replace(tmp, path)
        _quiet(f.fileno())
        if _stamp(os.fstat(f.fileno())) == _stamp(seen):
            return
        # Someone wrote into the file just replaced, after the comparison: put theirs back
        # and plan again from it.
        f.seek(0)
        theirs = f.read()
    _put_back(path, data, theirs, named)
    raise _Moved(named)


QUIET_WAIT = 1.0  # seconds to wait for writers of a replaced file to finish


def _quiet(fd: int) -> None:
    """Wait until nobody has the replaced file ``fd`` open for writing (at most QUIET_WAIT),
    so that a write begun into it before the replacement has landed when it is looked at
    again. Linux tells through a lease, which is refused while a writer holds the file; where
    there are no leases (or the file is someone else's), a short pause stands in."""
    import errno
    import signal
    import time

    try:
        import fcntl

        set_lease, set_signal = fcntl.F_SETLEASE, fcntl.F_SETSIG  # type: ignore[attr-defined]
        # A writer opening the file while the lease is held for an instant sends this signal;
        # SIGURG is ignored unless handled (the default, SIGIO, would end the process).
        fcntl.fcntl(fd, set_signal, signal.SIGURG)
    except (ImportError, AttributeError, OSError):
        time.sleep(0.005)
        return
    deadline = time.monotonic() + QUIET_WAIT
    while True:
        try:
            fcntl.fcntl(fd, set_lease, fcntl.F_RDLCK)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EBUSY):
                if time.monotonic() < deadline:
                    time.sleep(0.001)
                    continue
                return
            time.sleep(0.005)  # no leases here
            return
        fcntl.fcntl(fd, set_lease, fcntl.F_UNLCK)
        return


def _put_back(path: Path, ours: bytes, theirs: bytes, named: Path) -> None:
    """``path`` holds ``ours``, perhaps with lines appended since; the file it replaced holds
    ``theirs``: put ``theirs`` back, with whatever was appended to ours. A file rewritten
    meanwhile is left as it is (its writer's version stands)."""
    for _ in range(ATTEMPTS):
        current = _current(path)
        if current is None or not current.startswith(ours):
            return
        try:
            atomic_write(path, theirs + current[len(ours):], expect=current, named=named)
            return
        except _Moved:
            continue


def _create(tmp: Path, path: Path, named: Path) -> None:
    """Put the new file at ``path``, which was absent as planned, unless one appeared."""
    try:
        os.link(tmp, path)  # fails if a file appeared meanwhile, unlike a rename
    except FileExistsError:
        raise _Moved(named) from None
    except OSError:  # a file system without hard links
        if path.exists():
            raise _Moved(named) from None
        os.replace(tmp, path)
        return
    tmp.unlink()


def _stamp(st: os.stat_result) -> tuple[int, int, int]:
    return st.st_ino, st.st_size, st.st_mtime_ns


@contextlib.contextmanager
def locked(paths: Sequence[Path]) -> Iterator[set[Path]]:
    """Hold Lore's lock (flock) on the folders ``paths`` are in (the nearest folder that
    exists), taken in one order so concurrent runs cannot deadlock; yields the folders covered.
    Where there is no flock (Windows, some network file systems), nothing is held: the
    comparisons right before each replacement still keep every line."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield {_nearest_folder(p.parent) for p in paths}
        return
    while True:
        folders = sorted({_nearest_folder(p.parent) for p in paths})
        held: list[int] = []
        try:
            for folder in folders:
                try:
                    fd = os.open(folder, os.O_RDONLY)
                except OSError:  # a folder that cannot be opened is not locked; the
                    continue     # comparisons before each replacement still hold
                held.append(fd)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                except OSError:  # a file system without flock (some network mounts)
                    pass
            # A folder made while waiting (by the run that held the lock) is locked instead.
            if folders == sorted({_nearest_folder(p.parent) for p in paths}):
                yield set(folders)
                return
        finally:
            for fd in reversed(held):
                os.close(fd)  # closing the descriptor releases its lock


def _nearest_folder(path: Path) -> Path:
    while not path.is_dir() and path.parent != path:
        path = path.parent
    return path


def _current(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
