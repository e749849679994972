"""Reading the files that steer Lore: the checks the PreToolUse hook enforces (``guards.json``),
``config.yaml`` and the config's validated copy (and its key).

Whoever can write one of these files decides what the agent is blocked from, which model
Lore calls and where its database lives, so each is read only when it is the user's own:

- opened without blocking (``O_NONBLOCK``): a named pipe in its place cannot hang the reader;
- the open descriptor is ``fstat``-ed: only a regular file is read (never a pipe, a device
  such as ``/dev/zero``, a socket or a folder), and only up to a cap per file, so a huge file
  or one that keeps growing cannot eat the memory;
- Lore's own files (the checks, the cache, its key) are opened with ``O_NOFOLLOW``: Lore
  writes them by renaming a temporary file into place, so a link there is never Lore's. The
  config may be a link (a dotfiles folder); its target is checked before it is opened, and
  the link itself must be the user's;
- the file and the folder holding it must belong to the user or to root, and be writable by
  neither group nor others. Root owns the system and can change any file the user reads, so a
  root-owned file (a config an administrator manages) is trusted; a file owned by another user
  is not. A folder others can write with the sticky bit set (``/tmp``'s mode) is accepted:
  there others can add names but can neither remove nor rename the user's files, and what
  they add is refused by the owner check above. A group- or world-writable folder without it
  is refused, since anyone in it could swap the file for another.

Refusals raise :class:`Untrusted`, whose message is one line naming the file and the fix.
On Windows, where modes and owners mean something else, only the first three checks apply.

Standard library only (``os``, ``stat``): the PreToolUse hook reads the checks file on every
tool call.
"""

from __future__ import annotations

import errno
import os
import stat

CHECKS_BYTES = 16 * 1024 * 1024  # a checks file holds short patterns: thousands fit in 1 MB
CONFIG_BYTES = 1024 * 1024  # config.yaml: a few dozen keys
CACHE_BYTES = 8 * 1024 * 1024  # the config's validated copy: the values, a few kB
_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
POSIX = os.name == "posix"
_KINDS = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a device"),
          (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"),
          (stat.S_ISLNK, "a link"))


class Untrusted(OSError):
    """A file Lore refuses to read; ``str()`` is one line naming it and saying what to do."""

    def __str__(self) -> str:
        return str(self.strerror)


def owner_trusted(uid: int) -> bool:
    """Whether files of ``uid`` may steer this process: its own user's, or root's."""
    return not POSIX or uid in (os.geteuid(), 0)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def check(st: os.stat_result, path: str, what: str, *, private: bool = False) -> None:
    """Raise :class:`Untrusted` unless ``st`` (of ``path``, a ``what``) belongs to the user or
    root and neither group nor others can write it (``private``: nor read it)."""
    if not POSIX:
        return
    if not owner_trusted(st.st_uid):
        raise Untrusted(errno.EPERM, f"{what} {path} belongs to another user (uid {st.st_uid}); "
                        "Lore reads only files of its own user or root: remove it or chown it")
    mode = stat.S_IMODE(st.st_mode)
    if mode & (0o077 if private else 0o022):
        who = "read or written" if private else "written"
        fix = "600" if private else "go-w"
        raise Untrusted(errno.EPERM, f"{what} {path} can be {who} by other users (mode "
                        f"{mode:04o}); Lore does not trust it: chmod {fix} {path}")


def check_folder(folder: str, what: str) -> None:
    """Raise :class:`Untrusted` unless ``folder`` belongs to the user or root and is writable
    by neither group nor others (sticky folders excepted, see the module's notes)."""
    if not POSIX:
        return
    st = os.stat(folder)
    if not owner_trusted(st.st_uid):
        raise Untrusted(errno.EPERM, f"the folder {folder} holding the {what} belongs to another "
                        f"user (uid {st.st_uid}); Lore does not trust what it holds: use a folder "
                        "of your own (LORE_HOME)")
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o022 and not mode & stat.S_ISVTX:
        raise Untrusted(errno.EPERM, f"the folder {folder} holding the {what} can be written by "
                        f"other users (mode {mode:04o}), who could replace it: chmod go-w {folder}")


def read(path: str, limit: int, what: str, *, follow: bool = False,
         private: bool = False) -> bytes | None:
    """The bytes of the trusted regular file ``path`` (a ``what``: named in the refusal), or
    None when there is none. :class:`Untrusted` when it is not one Lore may read (see the
    module's notes); another OSError (no permission) as raised. ``follow``: a link is
    followed (its target checked first, and the link must be the user's); else a link is
    refused. ``private``: the file must not be readable by others either (a key)."""
    folder = os.path.dirname(os.path.abspath(path))
    if follow:
        try:
            ahead = os.stat(path)  # a device or a pipe is refused before it is opened
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(ahead.st_mode):
            raise _not_regular(path, what, ahead.st_mode)
    try:
        fd = os.open(path, _FLAGS | (0 if follow else _NOFOLLOW))
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _not_regular(path, what, stat.S_IFLNK) from None
        if exc.errno == errno.ENXIO:  # a socket
            raise _not_regular(path, what, stat.S_IFSOCK) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _not_regular(path, what, st.st_mode)
        check(st, path, what, private=private)
        if st.st_size > limit:
            raise _too_large(path, what, st.st_size, limit)
        if follow and POSIX:
            link = os.lstat(path)
            if stat.S_ISLNK(link.st_mode) and not owner_trusted(link.st_uid):
                raise Untrusted(errno.EPERM, f"{what} {path} is a link of another user (uid "
                                f"{link.st_uid}); Lore does not follow it: remove it")
        check_folder(folder, what)
        chunks, size = [], 0
        while size <= limit and (chunk := os.read(fd, min(1 << 20, limit + 1 - size))):
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:  # it grew while being read
            raise _too_large(path, what, size, limit)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _not_regular(path: str, what: str, mode: int) -> Untrusted:
    return Untrusted(errno.EINVAL, f"{what} {path} is {_kind(mode)}, not a regular file; Lore "
                     "does not read it: remove it")


def _too_large(path: str, what: str, size: int, limit: int) -> Untrusted:
    return Untrusted(errno.EFBIG, f"{what} {path} holds {size:,} bytes, more than a {what} "
                     f"ever needs ({limit:,}); Lore does not read it: remove it")
