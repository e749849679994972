"""One request policy for every face (the CLI, the MCP tools, the REST API): which project a
request is about, which statuses it covers, how many results it returns.

A face knows only where its caller is (``here``: the CLI's working folder, the MCP client's
root; the REST API has none) and passes what the caller gave; the answers are decided here:

- **project**: ``all`` or ``*`` is every project; ``global`` or ``none`` the global lessons
  only; ``.`` or ``here`` the caller's project; a folder its project (the git top level of the
  folder, else the folder); any other text a project recorded elsewhere, as given. Not given:
  the request's default (``REQUESTS``): the caller's project, or every project for a caller
  that has none (REST) and for the review queue (a person reviews everything).
- **statuses**: not given, the request's default; ``all`` or ``*`` every status; else the
  statuses given (repeated or comma-separated).
- **limit**: not given, the request's default; else a whole number from 1 to its most.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from lore.errors import InvalidInput

EVERY = ("all", "*")
GLOBAL = ("global", "none")
HERE = (".", "here")
# Every status a lesson can have (the store's lesson_statuses table; a test compares them).
EVERY_STATUS = ("candidate", "proposed", "active", "rejected", "superseded", "archived")


@dataclass(frozen=True, slots=True)
class Request:
    """A kind of request's defaults: its statuses, its limit and most, and whether it is
    about every project when the caller names none."""

    statuses: tuple[str, ...]
    limit: int
    most: int
    every_project: bool = False


REQUESTS = {
    "search": Request(("active",), 10, 100),
    "lessons": Request(("active",), 50, 500),
    "preferences": Request(("active", "proposed"), 100, 1000),
    "review": Request((), 50, 1000, every_project=True),
    "conversations": Request((), 5, 100),
}


@dataclass(frozen=True, slots=True)
class Scope:
    """Which project a request is about: ``project`` (its root), or none: ``every`` project,
    else the global lessons only."""

    project: str | None
    every: bool = False

    @property
    def only_global(self) -> bool:
        return self.project is None and not self.every

    @property
    def filter(self) -> str | None:
        """As ``Filters.project``: the project, None for every project, "" for the global
        lessons only (the store keeps the unscoped lessons of a project filter)."""
        return "" if self.only_global else self.project



def scope(value: str | None, request: str, here: str | None = None) -> Scope:
    """The project a ``request`` (a key of REQUESTS) is about; ``here`` is the caller's."""
    from lore.normalize import project_root

    text = (value or "").strip()
    if not text:
        if REQUESTS[request].every_project or not here:
            return Scope(None, every=True)
        return Scope(project_root(here))
    if text.lower() in EVERY:
        return Scope(None, every=True)
    if text.lower() in GLOBAL:
        return Scope(None)
    if text in HERE:
        return Scope(project_root(here or str(Path.cwd())))
    if os.path.isdir(os.path.expanduser(text)):
        return Scope(project_root(os.path.expanduser(text)))
    return Scope(text)


def statuses(values: Iterable[str] | None, request: str) -> tuple[str, ...]:
    """The statuses a ``request`` covers: the given ones (comma lists split), every status for
    "all" or "*", the request's default when none is given."""
    given = [s.strip() for v in values or () for s in v.split(",") if s.strip()]
    if not given:
        return REQUESTS[request].statuses
    if any(s.lower() in EVERY for s in given):
        return EVERY_STATUS
    return tuple(dict.fromkeys(given))


def limit(value: int | None, request: str) -> int:
    """How many results a ``request`` returns: its default, or the given number if in range."""
    r = REQUESTS[request]
    if value is None:
        return r.limit
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= r.most:
        raise InvalidInput(f"limit must be a whole number from 1 to {r.most} (got {value!r})")
    return value
