"""A plain command line is read without the shell grammar (the PreToolUse hook then never loads
tree-sitter): its commands must be exactly what the grammar gives, wrappers included."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lore.apply import shell

WORDS = ["npm", "install", "-g", "pnpm", "sudo", "-u", "node", "env", "CI=1", "timeout", "5",
         "git", "-C", "web", "push", "--force", "npx", "prettier@3", "/usr/bin/npm", "bash", "-c",
         "ls", "xargs", "nice", "-n", "10", "nohup", "exec", "command", "uv", "run", "pytest",
         "--x=1", "a.b", "x:y", "50%", "+x", "a,b", "@scope/pkg", "-", "--", "time", "if", "in"]


def grammar(line: str, monkeypatch: pytest.MonkeyPatch) -> object:
    with monkeypatch.context() as m:
        m.setattr(shell, "_simple", lambda line: None)
        return shell.commands(line)


@settings(max_examples=500)
@given(words=st.lists(st.sampled_from(WORDS) | st.from_regex(r"[A-Za-z0-9_./@%+,:=-]{1,8}",
                                                           fullmatch=True), min_size=1, max_size=7),
       lead=st.sampled_from(["", " ", "\t", "  "]), gap=st.sampled_from([" ", "\t", "  "]))
def test_a_plain_line_gives_what_the_grammar_gives(words, lead, gap):
    line = lead + gap.join(words)
    mp = pytest.MonkeyPatch()
    try:
        assert shell.commands(line) == grammar(line, mp)
    finally:
        mp.undo()


@pytest.mark.parametrize("line", ["npm install", "sudo -u node /usr/bin/npm i", "env CI=1 npm ci",
                                  "timeout 5 npx prettier@3 --write .", "bash -c ls",
                                  "git -C web push --force"])
def test_plain_lines_are_read_without_the_grammar(line, monkeypatch):
    assert shell._simple(line) is not None
    expected = grammar(line, monkeypatch)
    monkeypatch.setattr(shell, "_parser", lambda: pytest.fail("the grammar was loaded"))
    assert shell.commands(line) == expected and expected


@pytest.mark.parametrize("line", ["npm i && pnpm i", "echo 'npm'", "A=1 npm i", "npm i # x",
                                  "ls *.py", "cat ~/x", "for x in a; do npm i; done", "if",
                                  "time npm i", "npm i | sh", "$(which npm) i", "npm i\nls", ""])
def test_other_lines_go_to_the_grammar(line):
    assert shell._simple(line) is None
