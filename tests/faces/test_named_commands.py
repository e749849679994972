"""Every `lore …` command a message, a help text or a doc names exists: a hint that sends the
user to a command Lore does not have is a defect."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from lore.cli import cli

ROOT = Path(__file__).resolve().parents[2]
NAMED = re.compile(r"`lore ((?:[a-z][a-z-]*)(?: [a-z][a-z-]*)?)")


def named(paths: list[Path]) -> list[tuple[str, str]]:
    return [(str(p.relative_to(ROOT)), m.group(1)) for p in paths
            for m in NAMED.finditer(p.read_text(encoding="utf-8"))]


def missing(found: list[tuple[str, str]]) -> list[tuple[str, str]]:
    ctx = click.Context(cli)
    out = []
    for where, words in found:
        first, *rest = words.split()
        cmd = cli.get_command(ctx, first)
        if cmd is None or (isinstance(cmd, click.Group) and rest
                           and cmd.get_command(ctx, rest[0]) is None):
            out.append((where, f"lore {words}"))
    return out


@pytest.mark.parametrize("where", ["src", "docs"])
def test_every_named_command_exists(where):
    paths = sorted((ROOT / where).rglob("*.py" if where == "src" else "*.md"))
    if where == "docs":
        paths.append(ROOT / "README.md")
    found = named(paths)
    assert found
    assert missing(found) == []


def test_a_command_that_does_not_exist_is_found():
    assert missing([("x", "guard list"), ("x", "nope"), ("x", "review approve")]) == [
        ("x", "lore guard list"), ("x", "lore nope")]
