"""Print docs/cli.md: the help of every `lore` command, generated from click."""

from __future__ import annotations

import click

from lore.cli import cli


def walk(group: click.Group, path: list[str]):
    for name in sorted(group.commands):
        cmd = group.commands[name]
        yield [*path, name], cmd
        if isinstance(cmd, click.Group):
            yield from walk(cmd, [*path, name])


def help_text(path: list[str], cmd: click.Command) -> str:
    ctx = click.Context(cmd, info_name="lore " + " ".join(path), terminal_width=100)
    return cmd.get_help(ctx)


def main() -> None:
    print("# CLI reference\n")
    print("Generated from `--help` by `make docs` (scripts/cli_reference.py); do not edit.\n")
    print("Every command that prints data takes `--json` (shapes in [json.md](json.md)); "
          "errors are one line on stderr with exit status 1.\n")
    root = click.Context(cli, info_name="lore", terminal_width=100)
    print("## lore\n\n```text\n" + cli.get_help(root) + "\n```\n")
    for path, cmd in walk(cli, []):
        print(f"## lore {' '.join(path)}\n\n```text\n{help_text(path, cmd)}\n```\n")


if __name__ == "__main__":
    main()
