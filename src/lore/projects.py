"""Which project a folder belongs to (the standard library's os alone: `lore statusline` and
the hooks call it on the agent's path; :mod:`lore.normalize` gives it to everything else)."""

from __future__ import annotations

import os


def project_root(path: str | None) -> str | None:
    """The project a folder belongs to: the top level of its git repository (as ``git rev-parse
    --show-toplevel`` says, symlinks resolved), else the folder itself (symlinks resolved). A
    session started in ``repo/src`` learns rules for ``repo``, the folder ``lore apply`` writes
    to; every face (CLI, MCP, hooks, worker, web) and the store's migration call this one
    function. It walks up looking for ``.git`` (a folder, or a file in worktrees and submodules)
    rather than running git: the hooks' worker calls it for every captured message. A value that
    is not an existing folder (a project recorded on another machine, a name) is kept as given.
    """
    if not path:
        return path
    try:
        start = os.path.realpath(os.path.expanduser(path))
        if not os.path.isdir(start):
            return path
        here = start
        while True:
            if os.path.exists(os.path.join(here, ".git")):
                return here
            parent = os.path.dirname(here)
            if parent == here:
                return start
            here = parent
    except (OSError, ValueError):  # an unreadable folder or a NUL in the name: keep it as given
        return path
