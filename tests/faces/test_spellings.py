"""Every `lore …` command line that a doc, the plugin, a page of the dashboard or a message of Lore
spells out parses with the real command tree: its command path exists, every option it names is
an option of that command, and a value it gives an option of fixed choices is one of them. An
earlier version's spelling (refused in one line naming the new one), a removed option or a
command that never existed is a defect of the text that names it."""

from __future__ import annotations

import ast
import itertools
import re
import shlex
import tokenize
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from lore.cli import cli
from lore.cli.common import MOVED_OPTIONS, moved

ROOT = Path(__file__).resolve().parents[2]

# A command line in a message or a doc ends where the prose around it starts again.
END = re.compile(r"`|\n|\(|\)|;|,(?:\s|$)| — | -> |: |\?(?:\s|$)|\"?}|──|\s{2,}|\[/|<| or (?=lore )"
                 r"|\.(?:\s|$)| then |\s#\s?")
# Words that follow "lore" in prose ("the lore command itself"), not a command.
PROSE = {"command", "is", "at", "installed"}
# An f-string field that holds the path of the lore program (as the demo prints it).
PROGRAM = {"exe"}
PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_]*|\$\w+")
START = re.compile(r"(?<![\w./-])(?<!from )lore (?=[a-z-])(?!lore )")
RUNNER = re.compile(r'lore-run"? ')


def lines_of(text: str, start: re.Pattern[str] = START) -> Iterator[str]:
    """The command lines after each ``lore `` of ``text``, `\\` continuations joined."""
    text = re.sub(r"\s*\\\n\s*", " ", text)
    for m in start.finditer(text):
        rest = text[m.end():].split("\n", 1)[0]
        ends = [e.start() for e in END.finditer(rest) if not quoted(rest[:e.start()])]
        yield rest[:ends[0]] if ends else rest


def quoted(head: str) -> bool:
    """Whether the end of ``head`` is inside a quoted argument ("…" or '…')."""
    quote = ""
    for i, char in enumerate(head):
        if quote:
            quote = "" if char == quote else quote
        elif char == '"' or (char == "'" and (i == 0 or head[i - 1] in " =")):
            quote = char
    return bool(quote)


def markdown(path: Path) -> list[str]:
    # A benchmark's table is a measurement: its labels spell the commands as they were run.
    text = re.sub(r"<!-- bench:.*?<!-- /bench -->", "", path.read_text(encoding="utf-8"),
                  flags=re.S)
    start = RUNNER if path.is_relative_to(ROOT / "plugin") else START
    found = list(lines_of(text, start))
    if start is RUNNER:
        found += list(lines_of(text))
    return found


def strings(path: Path) -> Iterator[str]:
    """The text of every string literal of a module; an f-string's fields read as ``X``, or
    as ``lore`` where the field is the program's path."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            yield "".join(
                part.value if isinstance(part, ast.Constant)
                else "lore" if isinstance(part, ast.FormattedValue)
                and isinstance(part.value, ast.Name) and part.value.id in PROGRAM
                else "X" for part in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value


def comments(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8") as f:
        for token in tokenize.generate_tokens(f.readline):
            if token.type == tokenize.COMMENT:
                yield token.string


def source(path: Path) -> list[str]:
    return [line for text in (*strings(path), *comments(path)) for line in lines_of(text)]


def variants(line: str) -> Iterator[list[str]]:
    """The argument lists a line spells: `a|b` and `[a|b]` are alternatives, `[X]` optional,
    `…` and `|`-pipes end it."""
    line = line.split(" | ")[0].split(" && ")[0].split(" > ")[0]
    try:
        line = re.sub(r"(?<!\S)…(?!\S)", "X", line).replace("…", "")
        words = shlex.split(line.replace("'", "\\'") if line.count("'") % 2 else line)
    except ValueError:
        words = line.split()
    choices = []
    for word in words:
        word = word.strip("[]")
        if word in ("...", "") or word.startswith("<"):
            break
        parts = word.split("|") if "|" in word and "=" not in word else [word]
        choices.append([p for p in parts if p] or [word])
    for combo in itertools.product(*choices):
        yield list(combo)


def problem(args: list[str]) -> str | None:
    """Why ``lore ARGS`` is no command of Lore, or None when its path and options exist. A
    missing or extra argument and a placeholder where a value goes are no problem."""
    ctx = click.Context(cli, info_name="lore")
    cmd: click.Command = cli
    try:
        while args and not args[0].startswith("-") and not PLACEHOLDER.fullmatch(args[0]):
            moved(ctx, args[0])  # an earlier version's spelling: its one line
            if cmd is cli and args[0] in PROSE:
                return None
            if not isinstance(cmd, click.Group) or args[0] not in cmd.commands:
                if not isinstance(cmd, click.Group) or any(
                        isinstance(p, click.Argument) for p in cmd.params):
                    break  # an argument, or the prose after a command
                return f"no command {args[0]!r} of {ctx.command_path!r}"
            cmd = cmd.commands[args[0]]
            ctx = click.Context(cmd, info_name=args[0], parent=ctx)
            args = args[1:]
    except click.UsageError as exc:
        return exc.message
    by_name = {opt: p for p in cmd.params for opt in (*p.opts, *p.secondary_opts)}
    known = set(by_name) | {"--help"}
    for arg, after in itertools.zip_longest(args, args[1:]):
        name = arg.split("=")[0]
        param = by_name.get(name)
        value = arg.partition("=")[2] if "=" in arg else after
        if isinstance(param, click.Option) and isinstance(param.type, click.Choice) \
                and not param.is_flag and value and not PLACEHOLDER.fullmatch(value) \
                and value not in param.type.choices:
            return f"{name} takes {'|'.join(map(str, param.type.choices))}, not {value!r}"
        if re.fullmatch(r"--?[a-zA-Z][\w-]*", name) and name not in known:
            path = " ".join(ctx.command_path.split()[1:])
            new = MOVED_OPTIONS.get(path, {}).get(name)
            if new is not None:
                return f"`{name}` of `lore {path}` is now `{new}`"
            return f"no option {name} of {ctx.command_path!r}"
    return None


def spelled() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    docs = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md")),
            *sorted((ROOT / "plugin").rglob("*.md")),
            *sorted(path for path in (ROOT / "src" / "lore").rglob("*")
                    if path.suffix in (".html", ".md", ".json", ".js"))]
    for path in docs:
        found += [(str(path.relative_to(ROOT)), line) for line in markdown(path)]
    for path in sorted((ROOT / "src" / "lore").rglob("*.py")):
        found += [(str(path.relative_to(ROOT)), line) for line in source(path)]
    return found


def wrong(found: list[tuple[str, str]]) -> list[tuple[str, str, str]]:
    out = []
    for where, line in found:
        for args in variants(line):
            why = problem(args)
            if why is not None:
                out.append((where, f"lore {line}", why))
                break
    return out


def test_every_spelled_command_parses():
    found = spelled()
    assert len(found) > 300
    assert sorted(set(wrong(found))) == []


@pytest.mark.parametrize(("line", "why"), [
    ("recall search 'x'", "`lore recall search` is now `lore search`"),
    ("nope", "no command 'nope' of 'lore'"),
    ("learn add T --rejected R", "`--rejected` of `lore learn add` is now `--set preference.rejected=…`"),
    ("review approve ID --bogus", "no option --bogus of 'lore review approve'"),
    ("guard frob ID", "no command 'frob' of 'lore guard'"),
    ("install --scope everywhere", "--scope takes user|project|local, not 'everywhere'"),
])
def test_a_stale_spelling_is_found(line, why):
    assert wrong([("x", line)]) == [("x", f"lore {line}", why)]


@pytest.mark.parametrize("line", [
    "review approve|edit|reject|defer ID", "worker [status|start|stop]", "search \"q\" --explain",
    "learn update ID --global|--project PATH", "review -i", "config --all", "recall values tags",
    "apply --dry-run", "stats --digest week", "serve token create --scope read",
])
def test_a_good_spelling_passes(line):
    assert wrong([("x", line)]) == []


def test_lines_end_where_the_prose_starts():
    text = ("run `lore review approve ID` (or lore review -i), then lore apply --yes. Done; "
            "<code>lore stats --rules</code>")
    assert list(lines_of(text)) == ["review approve ID", "review -i", "apply --yes",
                                    "stats --rules"]


def test_every_slash_command_named_is_one_of_the_plugin():
    """`/lore:NAME` in a doc, the plugin or a message is a command file of plugin/commands."""
    have = {path.stem for path in (ROOT / "plugin" / "commands").glob("*.md")}
    texts = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "plugin").rglob("*.md"),
             *(ROOT / "src" / "lore").rglob("*.py")]
    named = {(str(path.relative_to(ROOT)), m.group(1)) for path in texts
             for m in re.finditer(r"/lore:([a-z][a-z-]*)", path.read_text(encoding="utf-8"))}
    assert {name for _, name in named} >= {"review", "approve"}
    assert sorted((where, name) for where, name in named if name not in have) == []
