"""The simple commands a shell would run for a Bash command line, for checks (docs/apply.md,
"Checks"): a check on ``npm`` holds for ``/usr/bin/npm i``, ``sudo -u node npm i``,
``bash -c "npm i"`` and ``n'p'm i`` alike, and not for ``echo npm``.

The line is parsed with tree-sitter's Bash grammar; every command anywhere in it (pipelines,
lists, subshells, ``if``/``for``/``while`` bodies, functions, command and process substitution)
is taken word by word with its quoting removed. A command that runs another one (``env``,
``sudo``, ``timeout``, ``nice``, ``nohup``, ``command``, ``exec``, ``time``, ``xargs``,
``find -exec``, ``npx``, ``pnpm dlx``, ``corepack``, ``uv run``…) gives that command too, and
a shell given a string (``bash -c``, ``eval``, ``env -S``, a here-document or ``echo … | sh``)
gives the commands of that string. ``$(which npm)`` stands for ``npm``.

:func:`commands` returns None for a line the grammar does not accept: the caller falls back to
matching the text.
"""

from __future__ import annotations

import re

# typing costs the hook milliseconds: annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeAlias

    Argv: TypeAlias = list[str]  # a command's words
    Found: TypeAlias = list[tuple[Argv, int]]  # each command's words, where its top command starts
    # A wrapper gives the command it runs (its words), a string a shell runs, or None.
    Wrapper: TypeAlias = Callable[[Argv], "Argv | str | None"]

MAX_CHARS = 50_000  # longer lines are matched as text
MAX_DEPTH = 4  # strings run by a shell inside strings run by a shell…
MAX_LAYERS = 12  # wrappers around one command
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "fish"})
_LANGUAGE: Any = None  # the grammar, loaded once; a parser per line (threads share none)
_SOURCES: dict[int, list[str]] = {}  # per thread: the lines being read, innermost last
_ASCII = re.compile(r"[^\x00-\x7f]")
_ESCAPE = re.compile(r"\\(\n|.)", re.S)
_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def commands(line: str) -> Found | None:
    """Every simple command the line runs, as its words (the wrapped ones after their wrapper),
    each with the offset of the top-level command it belongs to; None: not parsed."""
    if len(line) > MAX_CHARS or "\x00" in line:
        return None
    out: Found = []
    try:
        ok = _collect(line, out, 0, None)
    except (RecursionError, ValueError, UnicodeError):
        return None
    return out if ok else None


def forms(argv: Argv) -> list[str]:
    """The texts a command's pattern is matched against: the words as given, the program's
    name without its folder, and git without its global options (``git -C x push -uf`` as
    ``git push -u -f``)."""
    if not argv:
        return []
    out = [" ".join(argv)]
    base = argv[0].rsplit("/", 1)[-1]
    if "@" in base[1:]:  # npx npm@9: the package's version dropped
        base = base[0] + base[1:].split("@", 1)[0]
    if base and base != argv[0]:
        out.append(" ".join([base, *argv[1:]]))
    if base == "git":
        canon = _git(argv[1:])
        if canon is not None and canon not in out:
            out.append(canon)
    return out


# ---- parsing -------------------------------------------------------------------------------------
def _parser() -> Any:
    """A new parser for one line (a microsecond; a parser is not shared between threads)."""
    global _LANGUAGE
    if _LANGUAGE is None:
        try:
            # The two compiled modules alone: the packages' __init__ import typing and
            # importlib.resources (for queries Lore does not use), 13 of the 15 ms it costs
            # the hook to load the grammar (docs/benchmarks.md).
            ts, bash = _extension("tree_sitter"), _extension("tree_sitter_bash")
            _LANGUAGE = (ts.Parser, ts.Language(bash.language()))
        except (ImportError, AttributeError, OSError, TypeError, ValueError):
            import tree_sitter
            import tree_sitter_bash

            _LANGUAGE = (tree_sitter.Parser, tree_sitter.Language(tree_sitter_bash.language()))
    parser, language = _LANGUAGE
    return parser(language)


def _extension(package: str) -> Any:
    """``package._binding`` (its compiled module) loaded without running the package's
    ``__init__``."""
    import importlib.machinery
    import importlib.util
    import sys

    name = f"{package}._binding"
    if name in sys.modules:
        return sys.modules[name]
    top = importlib.util.find_spec(package)
    where = list(top.submodule_search_locations or []) if top else []
    spec = importlib.machinery.PathFinder.find_spec(name, where)
    if spec is None or spec.loader is None:
        raise ImportError(name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _collect(line: str, out: Found, depth: int, at: int | None) -> bool:
    """Add the commands of ``line`` to ``out``; False when it does not parse (at any depth).

    The grammar reads the line with every character past ASCII as ``a`` (to Bash each is a
    word's character, as ``a`` is): the grammar's scanner crashed the process on some
    non-ASCII input in fuzzing. A byte offset is then a character offset, and each node's
    text is cut from the line itself."""
    if depth > MAX_DEPTH or len(line) > MAX_CHARS:
        return False
    simple = _simple(line)
    if simple is not None:  # one plain command: its words, without loading the grammar
        return _unwrap(simple[0], out, depth, at if at is not None else simple[1])
    tree = _parser().parse(_ASCII.sub("a", line).encode("ascii"))  # held while read
    root = tree.root_node
    if root.has_error:
        return False
    from _thread import get_ident

    sources = _SOURCES.setdefault(get_ident(), [])
    sources.append(line)
    try:
        return _walk(root, out, depth, at)
    finally:
        sources.pop()
        if not sources:
            _SOURCES.pop(get_ident(), None)


# A line of these characters alone is one simple command whose words are its blank-separated
# parts, as the grammar reads it (tests/apply/test_shell_simple.py compares the two): no
# quoting, expansion, redirection, list, pipeline, glob, comment or line continuation.
_SIMPLE = re.compile(r"[ \t]*[A-Za-z0-9_./@%+,:-][A-Za-z0-9_./@%+,:=\t -]*")
_RESERVED = frozenset({"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done",
                       "case", "esac", "function", "select", "in", "time", "coproc"})


def _simple(line: str) -> tuple[Argv, int] | None:
    """The words of a line that is one plain command, and where it starts; None otherwise."""
    if not _SIMPLE.fullmatch(line):
        return None
    argv = line.split()
    # the grammar reads a program named with = (an assignment), @ or % otherwise
    if not argv or any(c in argv[0] for c in "=@%") or argv[0] in _RESERVED:
        return None
    return argv, len(line) - len(line.lstrip(" \t"))


def _walk(root: Any, out: Found, depth: int, at: int | None) -> bool:
    stack = [root]
    while stack:
        node = stack.pop()
        kind = node.type
        if kind == "command":
            where = at if at is not None else node.start_byte
            argv = _argv(node)
            if argv and not _unwrap(argv, out, depth, where):
                return False
            feed = _fed_shell(node)
            if feed is not None and not _collect(feed, out, depth + 1, where):
                return False
        elif kind == "pipeline":
            piped = _piped_shell(node)
            if piped is not None:
                where = at if at is not None else node.start_byte
                if not _collect(piped, out, depth + 1, where):
                    return False
        stack.extend(reversed(node.children))
    return True


_SKIP = frozenset({"variable_assignment", "file_redirect", "heredoc_redirect",
                   "herestring_redirect", "comment"})


def _argv(node: Any) -> Argv:
    words: Argv = []
    for child in node.named_children:
        if child.type in _SKIP:
            continue
        if child.type == "command_name":
            named = child.named_children
            words.append(_word(named[0]) if named else _text(child))
        else:
            words.append(_word(child))
    return words


def _text(node: Any) -> str:
    from _thread import get_ident

    return _SOURCES[get_ident()][-1][node.start_byte:node.end_byte]  # the line's own characters


def _word(node: Any) -> str:
    """A word as the shell passes it on: quotes and escapes removed; an expansion it cannot
    know stays as written (``$HOME``), ``$(which npm)`` is ``npm``."""
    kind = node.type
    if kind == "word":
        return _ESCAPE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), _text(node))
    if kind == "raw_string":
        return _text(node)[1:-1]
    if kind in ("string", "translated_string"):
        parts = []
        for child in node.named_children:
            if child.type == "string_content":
                parts.append(re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n"
                                    else m.group(1), _text(child)))
            else:
                parts.append(_word(child))
        return "".join(parts)
    if kind == "ansi_c_string":
        return _ansi_c(_text(node)[2:-1])
    if kind == "concatenation":
        return "".join(_word(c) for c in node.children)
    if kind == "command_substitution":
        found = _which(node)
        return found if found is not None else _text(node)
    return _text(node)


_ANSI = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b",
         "f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def _ansi_c(body: str) -> str:
    def one(m: re.Match[str]) -> str:
        s = m.group(1)
        if s[0] in "xuU":
            try:
                return chr(int(s[1:], 16))
            except (ValueError, OverflowError):
                return m.group(0)
        if s[0].isdigit():
            return chr(int(s, 8) & 0xFF)
        return _ANSI.get(s, m.group(0))

    return re.sub(r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|.)",
                  one, body, flags=re.S)


_WHICH = {"which": 1, "command": 2, "type": 2, "whence": 2, "where": 1}


def _which(node: Any) -> str | None:
    """``$(which npm)``, ``$(command -v npm)``, ``$(type -P npm)``: the program named."""
    inner = [c for c in node.named_children if c.type != "comment"]
    if len(inner) != 1 or inner[0].type != "command":
        return None
    argv = _argv(inner[0])
    if len(argv) < 2 or argv[0] not in _WHICH:
        return None
    if argv[0] in ("command", "type", "whence") and not any(
            a in ("-v", "-V", "-p", "-P", "-a") for a in argv[1:-1]):
        return None
    return argv[-1] if not argv[-1].startswith("-") else None


def _fed_shell(node: Any) -> str | None:
    """The here-document or here-string a shell reads its commands from (``bash <<EOF``)."""
    argv = _argv(node)
    if not argv or not _is_shell(argv[0]) or _shell_string(argv[1:]) is not None:
        return None
    parent = node.parent
    redirects = list(node.named_children)
    if parent is not None and parent.type == "redirected_statement":
        redirects += parent.named_children
    for child in redirects:
        if child.type == "heredoc_redirect":
            body = next((c for c in child.named_children if c.type == "heredoc_body"), None)
            if body is not None:
                return _text(body)
        if child.type == "herestring_redirect":
            named = child.named_children
            if named:
                return _word(named[-1])
    return None


def _piped_shell(node: Any) -> str | None:
    """``echo "npm i" | sh``: what a shell reads from echo or printf of plain words."""
    cmds = [c for c in node.named_children if c.type == "command"]
    if len(cmds) != 2:
        return None
    first, second = _argv(cmds[0]), _argv(cmds[1])
    if not first or not second or not _is_shell(second[0]) or _shell_string(second[1:]) is not None:
        return None
    if first[0] not in ("echo", "printf"):
        return None
    args = [a for a in first[1:] if not (first[0] == "echo" and a in ("-e", "-n", "-E"))]
    return " ".join(args).replace("\\n", "\n") if args else None


def _is_shell(word: str) -> bool:
    return word.rsplit("/", 1)[-1] in SHELLS


# ---- wrappers --------------------------------------------------------------------------------------
def _options(args: Argv, value_short: str = "", value_long: frozenset[str] = frozenset(),
             numeric: bool = False) -> tuple[int, dict[str, str]]:
    """Skip the options at the front of ``args``: (index of the first word after them, the
    options seen with their values). ``value_short``: letters that take a value (attached or
    the next word); ``value_long``: long options that take one (``--user=x`` or ``--user x``)."""
    seen: dict[str, str] = {}
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return i + 1, seen
        if not a.startswith("-") or a == "-":
            break
        if numeric and a[1:].isdigit():  # nice -10
            i += 1
            continue
        if a.startswith("--"):
            name, eq, val = a[2:].partition("=")
            if not eq and name in value_long and i + 1 < len(args):
                val = args[i + 1]
                i += 1
            seen["--" + name] = val
            i += 1
            continue
        j = 1
        while j < len(a):
            ch = a[j]
            if ch in value_short:
                rest = a[j + 1:]
                if not rest and i + 1 < len(args):
                    rest = args[i + 1]
                    i += 1
                seen["-" + ch] = rest
                break
            seen["-" + ch] = ""
            j += 1
        i += 1
    return i, seen


def _assignments(args: Argv, i: int) -> int:
    while i < len(args) and _ASSIGN.match(args[i]):
        i += 1
    return i




def _env(a: Argv) -> Argv | str | None:
    i, seen = _options(a[1:], "uCSP", frozenset({"unset", "chdir", "split-string"}))
    rest = a[1 + _assignments(a[1:], i):]
    split = seen.get("-S") or seen.get("--split-string")
    if split:
        return " ".join([split, *rest])
    return rest


def _sudo(a: Argv) -> Argv | str | None:
    i, seen = _options(a[1:], "CDgprRTtUu", frozenset({
        "chdir", "close-from", "group", "host", "prompt", "chroot", "role", "type",
        "command-timeout", "other-user", "user"}))
    if any(k in seen for k in ("-l", "-v", "-k", "-K", "-e", "--list", "--validate", "--edit")) \
            and "-u" not in seen:
        return None
    return a[1 + _assignments(a[1:], i):]


def _timeout(a: Argv) -> Argv | None:
    i, _ = _options(a[1:], "sk", frozenset({"signal", "kill-after"}))
    return a[2 + i:]  # past the duration


def _plain(value_short: str = "", value_long: frozenset[str] = frozenset(),
           numeric: bool = False) -> Wrapper:
    def unwrap(a: Argv) -> Argv:
        i, _ = _options(a[1:], value_short, value_long, numeric)
        return a[1 + i:]
    return unwrap


def _command(a: Argv) -> Argv | None:
    i, seen = _options(a[1:])
    return None if "-v" in seen or "-V" in seen else a[1 + i:]


def _xargs(a: Argv) -> Argv:
    i, _ = _options(a[1:], "adEILnPs", frozenset({
        "arg-file", "delimiter", "eof", "max-lines", "max-args", "max-procs", "max-chars",
        "process-slot-var"}))
    return a[1 + i:]


def _find(a: Argv) -> Argv | None:
    for k, word in enumerate(a):
        if word in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((j for j in range(k + 1, len(a)) if a[j] in (";", "+")), len(a))
            return a[k + 1:end]
    return None


def _shell(a: Argv) -> str | None:
    return _shell_string(a[1:])


def _shell_string(args: Argv) -> str | None:
    """The string ``bash -c STRING`` (``-lc``, ``-ec``, ``-o opt -c``) runs, else None."""
    i, seen = _options(args, "oO", frozenset({"init-file", "rcfile"}))
    if "-c" in seen and i < len(args):
        return args[i]
    return None


def _su(a: Argv) -> str | None:
    """``su [user] -c STRING``: options may follow the user's name."""
    for k, word in enumerate(a[1:-1], 1):
        if word in ("-c", "--command"):
            return a[k + 1]
    return next((w.split("=", 1)[1] for w in a if w.startswith("--command=")), None)


def _eval(a: Argv) -> str | None:
    return " ".join(a[1:]) or None


def _npx(a: Argv) -> Argv | str | None:
    i, seen = _options(a[1:], "pc", frozenset({"package", "call"}))
    call = seen.get("-c") or seen.get("--call")
    return call if call else a[1 + i:]


def _runner(*subs: str, value_long: frozenset[str] = frozenset()) -> Wrapper:
    """``pnpm dlx X``, ``uv run X``: the command after the sub-command and its options."""
    def unwrap(a: Argv) -> Argv | None:
        i, _ = _options(a[1:], "", frozenset({"filter", "dir", "prefix", "workspace"}))
        k = 1 + i
        if k >= len(a) or a[k] not in subs:
            return None
        j, _ = _options(a[k + 1:], "", value_long)
        return a[k + 1 + j:]
    return unwrap


_UV = frozenset({"with", "from", "python", "project", "directory", "package", "extra", "group",
                 "index", "env-file", "with-requirements"})
WRAPPERS: dict[str, Wrapper] = {
    "env": _env, "sudo": _sudo, "doas": _plain("uC"), "timeout": _timeout,
    "nice": _plain("n", frozenset({"adjustment"}), numeric=True), "nohup": _plain(),
    "setsid": _plain(), "unbuffer": _plain(), "chronic": _plain(), "time": _plain(
        "fo", frozenset({"format", "output"})),
    "ionice": _plain("cnpPu", frozenset({"class", "classdata", "pid", "pgid", "uid"})),
    "stdbuf": _plain("ioe", frozenset({"input", "output", "error"})),
    "command": _command, "builtin": _plain(), "exec": _plain("a"), "xargs": _xargs,
    "find": _find, "eval": _eval, "su": _su,
    "npx": _npx, "pnpx": _npx, "bunx": _npx, "uvx": _plain("", _UV),
    "corepack": _plain(), "pnpm": _runner("dlx", "exec"), "yarn": _runner("dlx", "exec"),
    "npm": _runner("exec", "x"), "bun": _runner("x"), "uv": _runner("run", "tool", value_long=_UV),
    "poetry": _runner("run"), "pipenv": _runner("run"),
    **{name: _shell for name in SHELLS},
}


def _unwrap(argv: Argv, out: Found, depth: int, at: int) -> bool:
    for _ in range(MAX_LAYERS):
        out.append((argv, at))
        wrapper = WRAPPERS.get(argv[0].rsplit("/", 1)[-1])
        if wrapper is None:
            return True
        inner = wrapper(argv)
        if inner is None or not inner:
            return True
        if isinstance(inner, str):
            return _collect(inner, out, depth + 1, at)
        if argv[0].rsplit("/", 1)[-1] == "uv" and inner[:1] == ["run"]:
            inner = inner[1:]  # uv tool run X
        if not inner:
            return True
        argv = inner
    return True


# ---- git -------------------------------------------------------------------------------------------
_GIT_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix",
                        "--config-env", "--exec-path", "--list-cmds", "--attr-source"})
_PUSH_FLAGS = set("vqufnd46")


def _git(args: Argv) -> str | None:
    """``git`` with its global options dropped and, for push, combined short flags apart."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        name = args[i].split("=", 1)[0]
        i += 2 if name in _GIT_VALUE and "=" not in args[i] and name not in ("--exec-path",) else 1
    rest = args[i:]
    if not rest:
        return None
    if rest[0] == "push":
        split: Argv = []
        for a in rest[1:]:
            if re.fullmatch(r"-[A-Za-z0-9]{2,}", a) and set(a[1:]) <= _PUSH_FLAGS:
                split.extend("-" + ch for ch in a[1:])
            else:
                split.append(a)
        rest = [rest[0], *split]
    return " ".join(["git", *rest])
