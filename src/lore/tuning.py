"""Tuning constants: values a benchmark chose, kept in the code beside the code that uses them.

Each room declares a frozen dataclass of its constants (``SearchTuning`` in
:mod:`lore.recall.hybrid`, ``ConversationTuning`` in :mod:`lore.recall.conversations`, …) whose
fields are made with :func:`constant`: the default, its valid range, the benchmark in ``bench/``
that chose it and the section of docs/benchmarks.md with the figures. A module-level instance
holds the defaults the code uses.

A constant is not a setting. A measurement varies one by its name, the config key it once had
(``search.rrf_k``: the keys of :data:`lore.config.TUNING`), through one path: the overrides of
:attr:`lore.config.Settings.tuning` (set by a measurement script; config.yaml cannot set one),
applied to a room's defaults by :func:`tuned`. A bad override is one line
(:class:`ConfigError`) and changes nothing.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from lore.errors import ConfigError

T = TypeVar("T")


class Bench:
    """What chose a constant: a benchmark script ("" when none did: set by hand), and the page
    and heading where its figures are (``docs/benchmarks.md#Results (2026-11-23)``: the
    heading's text after the ``#``). A plain class: the hooks import it (no NamedTuple cost)."""

    __slots__ = ("script", "figures")

    def __init__(self, script: str, figures: str) -> None:
        self.script = script  # bench/….py
        self.figures = figures  # docs/….md#heading

    def __repr__(self) -> str:
        return f"Bench({self.script!r}, {self.figures!r})"


def constant(default: Any, *, by: Bench, ge: float | None = None, gt: float | None = None,
             le: float | None = None, lt: float | None = None) -> Any:
    """A tuning constant's field: ``default``, its bounds and the benchmark that chose it."""
    return dataclasses.field(default=default, metadata={
        "by": by, "ge": ge, "gt": gt, "le": le, "lt": lt})


def location(cls: type) -> str:
    """Where a room's constants live, e.g. ``lore.recall.hybrid.SearchTuning``."""
    return f"{cls.__module__}.{cls.__qualname__}"


def keys_of(cls: type) -> dict[str, str]:
    """The name (former config key) of each of ``cls``'s constants: {key: field}."""
    from lore.config import TUNING

    prefix = location(cls) + "."
    return {key: where.removeprefix(prefix) for key, where in TUNING.items()
            if where.startswith(prefix)}


def tuned(default: T, overrides: Mapping[str, Any], where: str = "tuning") -> T:
    """``default`` with the ``overrides`` (by name, see :func:`keys_of`) that name its fields,
    each checked against its field's type and bounds; ConfigError (one line: ``where``, the
    name, what is wrong) if one does not fit, and nothing is changed."""
    changes = {field: overrides[key] for key, field in keys_of(type(default)).items()
               if key in overrides}
    if not changes:
        return default
    return replace(default, changes, where)


def replace(default: T, changes: Mapping[str, Any], where: str = "tuning") -> T:
    """``default`` with ``changes`` ({field: value}), checked (see :func:`tuned`)."""
    cls = type(default)
    if not dataclasses.is_dataclass(default) or isinstance(default, type):
        raise TypeError(f"{cls.__name__} is not a tuning dataclass")
    fields = {f.name: f for f in dataclasses.fields(default)}
    hints = typing.get_type_hints(cls)
    names = {field: key for key, field in keys_of(cls).items()}
    checked: dict[str, Any] = {}
    for name, value in changes.items():
        shown = names.get(name, f"{location(cls)}.{name}")
        if name not in fields:
            known = ", ".join(sorted(names.get(f, f) for f in fields))
            raise ConfigError(f"{where}: unknown tuning constant '{shown}' (known here: {known})")
        problem, value = _check(value, hints[name], fields[name].metadata)
        if problem:
            raise ConfigError(f"{where}: {shown} {problem} (got {value!r})")
        checked[name] = value
    return dataclasses.replace(default, **checked)  # type: ignore[type-var]


def _check(value: Any, hint: Any, meta: Mapping[str, Any]) -> tuple[str | None, Any]:
    """(what is wrong or None, the value as the field holds it)."""
    args = typing.get_args(hint)
    if value is None:
        return (None, None) if type(None) in args else ("must not be empty", value)
    if typing.get_origin(hint) is typing.Literal:
        return (None, value) if value in args else (f"must be one of {', '.join(map(str, args))}",
                                                    value)
    kinds = [a for a in args if a is not type(None)] or [hint]
    if float in kinds and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if isinstance(value, bool) or not any(isinstance(value, k) for k in kinds):
        kind = " or ".join("a number" if k is float else "a whole number" if k is int
                           else getattr(k, "__name__", str(k)) for k in kinds)
        return f"must be {kind}", value
    for bound, test, words in (("ge", lambda v, b: v >= b, "at least"),
                               ("gt", lambda v, b: v > b, "above"),
                               ("le", lambda v, b: v <= b, "at most"),
                               ("lt", lambda v, b: v < b, "below")):
        limit = meta.get(bound)
        if limit is not None and not test(value, limit):
            return f"must be {words} {limit}", value
    return None, value


def described(default: Any, overrides: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each of ``default``'s constants as ``lore config --all`` lists it: its name, the
    value in use, where that came from (default, or tuning: an override), where it lives
    and what chose it."""
    current = tuned(default, overrides)
    fields = {f.name: f for f in dataclasses.fields(current)}
    rows = []
    for key, field in keys_of(type(current)).items():
        by: Bench = fields[field].metadata["by"]
        rows.append({"key": key, "value": getattr(current, field),
                     "source": "tuning" if key in overrides else "default",
                     "lives_in": f"{location(type(current))}.{field}",
                     "bench": by.script or None, "figures": by.figures})
    return rows
