"""The CLI's surface, counted by walking `lore.cli.cli` with click: how many commands and options,
none twice, none with too many options, and every earlier spelling refused in one line naming the
new one. `python tests/faces/test_cli_surface.py` prints the figures (CONTRIBUTING.md has them)."""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest

from lore.cli import cli
from lore.cli.common import MOVED, MOVED_OPTIONS

MOST_COMMANDS = 55
MOST_OPTIONS = 12


def walk(cmd: click.Command = cli, path: tuple[str, ...] = ()) -> Iterator[tuple[str, click.Command]]:
    """(path below `lore`, command) for every command and group."""
    if path:
        yield " ".join(path), cmd
    if isinstance(cmd, click.Group):
        for name, sub in sorted(cmd.commands.items()):
            yield from walk(sub, (*path, name))


def runnable() -> dict[str, click.Command]:
    """What a user can run: every command, and every group that does something on its own."""
    return {p: c for p, c in walk() if not isinstance(c, click.Group)
            or c.invoke_without_command}


def options(cmd: click.Command) -> list[str]:
    return [p.opts[0] for p in cmd.params if isinstance(p, click.Option)]


def figures() -> dict[str, int]:
    leaves = {p: c for p, c in walk() if not isinstance(c, click.Group)}
    return {"commands": len(leaves), "runnable": len(runnable()),
            "options": sum(len(options(c)) for c in leaves.values()),
            "options of runnable": sum(len(options(c)) for c in runnable().values()),
            "most options": max(len(options(c)) for c in runnable().values())}


def test_the_cli_has_at_most_55_commands():
    got = figures()
    assert got["commands"] <= MOST_COMMANDS and got["runnable"] <= MOST_COMMANDS, got


@pytest.mark.parametrize("path", sorted(runnable()))
def test_no_command_has_more_than_12_options(path):
    cmd = runnable()[path]
    assert len(options(cmd)) <= MOST_OPTIONS, (path, options(cmd))


def test_no_command_is_there_twice():
    seen: dict[object, str] = {}
    for path, cmd in walk():
        assert cmd.callback not in seen or cmd.callback is None, (path, seen.get(cmd.callback))
        seen[cmd.callback] = path


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_earlier_spelling_is_one_line_naming_the_new_one(run, old):
    res = run(*old.split(), "x")
    assert res.exit_code == 2, res.output
    lines = [line for line in res.stderr.splitlines() if line.startswith("Error")]
    assert lines == [f"Error: `lore {old}` is now `{MOVED[old]}`"], res.stderr
    first = MOVED[old].split()[1:]
    assert first[0] in cli.commands, old  # the new spelling exists


@pytest.mark.parametrize(("path", "option"), sorted(
    (path, option) for path, moved in MOVED_OPTIONS.items() for option in moved))
def test_an_earlier_option_is_one_line_naming_the_new_one(run, path, option):
    args = {"learn add": ["Title"], "learn update": ["01JD8X3Q5M4Z2Y7T6R1W0V9K8J"],
            "search": ["query"]}[path]
    res = run(*path.split(), *args, option, "x")
    assert res.exit_code == 2, res.output
    assert f"`{option}` of `lore {path}` is now `{MOVED_OPTIONS[path][option]}`" in res.stderr


if __name__ == "__main__":  # pragma: no cover
    for key, value in figures().items():
        print(f"{key}: {value}")
