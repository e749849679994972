"""Which file each approved rule goes to, as one ``Plan`` over all of them.

- Project rules: the project's ``CLAUDE.md`` (or ``CLAUDE.local.md``, private and not
  checked in, with ``local=True``).
- Project rules tied to files: ``.claude/rules/<topic>.md`` with ``paths:`` frontmatter, which
  Claude Code loads when it reads a matching file. Lore creates these files and marks them
  as its own; a user's rules file of the same name is never touched (Lore picks another).
- Global rules: ``~/.claude/CLAUDE.md``. Global rules tied to files go there too, each line
  saying which files it is for: user-level ``paths:`` rules do not load reliably in every
  Claude Code version.
- ``AGENTS.md`` (optional, for Codex, Cursor, Copilot and others): every project rule.

Every file Lore may have written before is part of the plan, so a rule removed since (rejected
or superseded) leaves its file, and an empty rule set removes Lore's blocks everywhere.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from lore.apply import blocks, files
from lore.apply.rules import AppliedRule, body_lines, claude_glob, select
from lore.errors import InvalidInput

RULES_DIR = Path(".claude") / "rules"


@dataclass(frozen=True, slots=True)
class Targets:
    """Where rules go. ``home`` is the user's home folder (``~/.claude`` lives in it)."""

    home: Path
    project: Path | None = None
    local: bool = False  # CLAUDE.local.md instead of CLAUDE.md
    agents_md: bool = False  # also write AGENTS.md
    max_bytes: int = files.MAX_BYTES
    allow_outside: bool = False  # follow a symlink out of the project or home folder


@dataclass(frozen=True, slots=True)
class _File:
    path: Path
    root: Path
    rules: tuple[AppliedRule, ...] = ()
    paths: tuple[str, ...] = ()  # for a rules file: its paths: frontmatter
    owned_rules_file: bool = False
    glob_prefix: bool = False


def plan(rules: Iterable[AppliedRule], targets: Targets) -> files.Plan:
    """The changes that bring every target file in line with ``rules``. Reads, never writes;
    the plan can make itself again from the files as they are then (Plan.replan)."""
    rules = list({r.id: r for r in rules}.values())
    return replace(_plan(rules, targets), replan=lambda: _plan(rules, targets))


def _plan(rules: list[AppliedRule], targets: Targets) -> files.Plan:
    wanted: list[_File] = []
    home_md = targets.home / ".claude" / "CLAUDE.md"
    global_rules = tuple(r for r in rules if r.scope == "global")
    wanted.append(_File(home_md, targets.home, global_rules, glob_prefix=True))
    project_rules = [r for r in rules if r.scope != "global"]
    if targets.project is None:
        if project_rules:
            raise InvalidInput(f"rule {project_rules[0].id} is for a project but no project "
                               "folder was given; run it inside the project")
    else:
        wanted += _project_files(project_rules, targets)
    return _merge_and_plan(wanted, targets)


def _project_files(rules: list[AppliedRule], targets: Targets) -> list[_File]:
    project = targets.project
    assert project is not None
    plain = tuple(r for r in rules if not r.globs)
    main, other = ("CLAUDE.local.md", "CLAUDE.md") if targets.local else ("CLAUDE.md", "CLAUDE.local.md")
    out = [_File(project / main, project, plain), _File(project / other, project)]
    out.append(_File(project / "AGENTS.md", project, tuple(rules) if targets.agents_md else (),
                     glob_prefix=True))
    out += _rules_files([r for r in rules if r.globs], project, targets)
    return out


def _rules_files(rules: list[AppliedRule], project: Path, targets: Targets) -> list[_File]:
    """One Lore-owned file per topic and set of globs, plus Lore's files no rule needs now."""
    folder = project / RULES_DIR
    owned = {p.name for p in _owned_rules_files(folder, project, targets)}
    groups: dict[tuple[str, tuple[str, ...]], list[AppliedRule]] = {}
    for r in rules:
        globs = tuple(sorted({claude_glob(g) for g in r.globs}))
        groups.setdefault((r.topic.strip(), globs), []).append(r)
    keys = sorted(groups)
    bases = [_slug(topic) or "general" for topic, _ in keys]
    out: list[_File] = []
    taken: set[str] = set()
    for key, base in zip(keys, bases, strict=True):
        if bases.count(base) > 1:  # one topic, several sets of globs
            base = f"{base}-{_slug(' '.join(key[1]))}"
        name = _free_name(folder, base, owned, taken)
        taken.add(name)
        out.append(_File(folder / name, project, tuple(groups[key]), paths=key[1],
                         owned_rules_file=True))
    out += [_File(folder / n, project, owned_rules_file=True) for n in sorted(owned - taken)]
    return out


def _free_name(folder: Path, base: str, owned: set[str], taken: set[str]) -> str:
    """``base``.md unless a user's own file (or another group) has it: then base-lore, -lore-2…"""
    candidates = [f"{base}.md", f"{base}-lore.md"] + [f"{base}-lore-{i}.md" for i in range(2, 1000)]
    for name in candidates:
        if name in taken:
            continue
        if name in owned or not (folder / name).exists() and not (folder / name).is_symlink():
            return name
    raise InvalidInput(f"{folder}: no free file name for Lore's {base} rules; tidy the folder")


def _owned_rules_files(folder: Path, project: Path, targets: Targets) -> list[Path]:
    """Rules files Lore created: a Lore block marked as created, in a regular file."""
    if not folder.is_dir():
        return []
    out = []
    for p in sorted(folder.glob("*.md")):
        if p.is_symlink() or not p.is_file():
            continue
        text = files.read(p, p, targets.max_bytes)
        block = blocks.find_block(text or "", str(p))
        if block is not None and block.created:
            out.append(p)
    return out


def _merge_and_plan(wanted: list[_File], targets: Targets) -> files.Plan:
    """Files that are one file on disk (CLAUDE.md linked to AGENTS.md) get one change."""
    by_real: dict[Path, list[_File]] = {}
    for f in wanted:
        real = files.resolve(f.path, f.root, targets.allow_outside)
        by_real.setdefault(real, []).append(f)
    changes = []
    for real, group in by_real.items():
        first = group[0]
        merged = tuple({r.id: r for f in group for r in f.rules}.values())
        changes.append(_change(first, real, merged, any(f.glob_prefix for f in group), targets))
    return files.Plan(tuple(changes))


def _change(f: _File, real: Path, rules: tuple[AppliedRule, ...], glob_prefix: bool,
            targets: Targets) -> files.FileChange:
    where = str(f.path)
    old = files.read(f.path, real, targets.max_bytes)
    if old is None and not rules:
        return files.change(f.path, real, None, None)
    text = old or ""
    if f.owned_rules_file:
        return _rules_file_change(f, real, old, rules, targets)
    block = blocks.find_block(text, where)
    chosen = select(rules, blocks.outside(text, block))
    new = blocks.set_block(text, body_lines(chosen.rules, glob_prefix=glob_prefix), where,
                           created=old is None)
    new_or_none: str | None = new
    if block is not None and block.created and not chosen.rules and not new.strip("\ufeff \t\r\n"):
        new_or_none = None  # Lore created the file and nothing else is in it
    elif old is None and not chosen.rules:
        new_or_none = None
    if new_or_none is None and old is not None and f.path.is_symlink():
        new_or_none = new  # a link the user made: keep the file, only Lore's block goes
    return files.change(f.path, real, old, new_or_none, chosen.skipped, targets.max_bytes)


def _rules_file_change(f: _File, real: Path, old: str | None, rules: tuple[AppliedRule, ...],
                       targets: Targets) -> files.FileChange:
    """A Lore-owned ``.claude/rules`` file: Lore's frontmatter and block; a user's additions
    elsewhere in the file stay."""
    where = str(f.path)
    text = old or ""
    fm, rest = _split_frontmatter(text)
    block = blocks.find_block(rest, where)
    chosen = select(rules, blocks.outside(rest, block))
    lines = body_lines(chosen.rules)
    if not lines:
        new_rest = blocks.set_block(rest, [], where)
        new = None if not new_rest.strip() else (fm + new_rest if old is not None else None)
        return files.change(f.path, real, old, new, chosen.skipped, targets.max_bytes)
    nl = blocks.newline_of(text) if old else "\n"
    new_fm = nl.join(["---", "paths:", *(f"  - {json.dumps(g, ensure_ascii=False)}" for g in f.paths),
                      "---", "", ""])
    new_rest = blocks.set_block(rest, lines, where, created=True)
    return files.change(f.path, real, old, new_fm + new_rest, chosen.skipped, targets.max_bytes)


_FRONTMATTER = re.compile(r"\A---(?:\r\n|\n|\r).*?(?:\r\n|\n|\r)---[ \t]*(?:\r\n|\n|\r)(?:\r\n|\n|\r)?",
                          re.S)


def _split_frontmatter(text: str) -> tuple[str, str]:
    m = _FRONTMATTER.match(text)
    return (m.group(), text[m.end():]) if m else ("", text)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.casefold()).strip("-")[:48].strip("-")
