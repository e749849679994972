"""Checks hold against rewording and cannot hang the agent.

The corpus (tests/data/check_corpus.jsonl) holds the forms an agent writes a command or an
import in: each form of a checked call that really runs it must be blocked, each look-alike
must not. The checks are the ones the shapes propose for their rules. Then: patterns that
backtrack are refused when added or proposed, a slow pattern already in the hooks' file is
skipped, the hook as a process keeps its deadline, and no input makes the matcher raise.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lore.apply import check_hook as h
from lore.apply import checks as g
from lore.apply import patterns, shell
from lore.apply.check_shapes import MANAGERS, propose
from lore.apply.pyimports import import_lines
from lore.errors import InvalidInput
from lore.models import Preference

CORPUS = Path(__file__).resolve().parents[1] / "data" / "check_corpus.jsonl"
ROWS = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
LORE = str(Path(sys.executable).parent / "lore")


def rule(title, preferred=None, rejected=None, file_types=()):
    pref = Preference(preferred=preferred or "", rejected=rejected or "") if rejected else None
    return SimpleNamespace(title=title, content="", preference=pref, file_types=list(file_types))


def _shaped(r: SimpleNamespace) -> dict:
    [p] = propose(r)
    return p.fields


CHECKS = {
    "npm": {"command": MANAGERS["npm"], "mode": "block"},
    "yarn": {"command": MANAGERS["yarn"], "mode": "block"},
    "pip": {"command": MANAGERS["pip"], "mode": "block"},
    "force-push-main": _shaped(rule("Never force-push to main")),
    "force-push": _shaped(rule("Don't force push")),
    "requests": _shaped(rule("Use httpx, not requests", "httpx", "requests", ["py"])),
}


def _call(row: dict) -> tuple[str, dict]:
    if row["tool"] == "Bash":
        return "Bash", {"command": row["input"]}
    path = "/p/" + row["path"]
    if row["tool"] == "Edit":
        return "Edit", {"file_path": path, "old_string": "pass", "new_string": row["input"]}
    return "Write", {"file_path": path, "content": row["input"]}


def test_the_corpus_has_200_forms_of_each_kind():
    blocked = sum(r["block"] for r in ROWS)
    kept = len(ROWS) - blocked
    assert blocked >= 200 and kept >= 200, (blocked, kept)
    assert {r["check"] for r in ROWS} == set(CHECKS)


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['check']}:{r['input'][:40]!r}" for r in ROWS])
def test_each_form_is_blocked_and_each_look_alike_is_not(row):
    check = {"id": "c", "lesson_id": "l", "rule": "r", **CHECKS[row["check"]]}
    needles = {k: n for k in g.FIELDS if check.get(k) and (n := g.needle(k, check[k]))}
    check["needles"] = needles  # as compiled for the hook: the cheap skip must not lose a form
    tool, tool_input = _call(row)
    out, found = h.decide([check], {"tool_name": tool, "tool_input": tool_input, "cwd": "/p"})
    assert bool(found) is row["block"], (row["form"], row["input"])
    if row["block"]:
        assert out["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_a_literal_needed_apart_still_finds_an_import_read_from_the_syntax():
    check = {"id": "c", "path": "*.py", "content": r"^\s*import requests\b",
             "needles": {"content": g.needle("content", r"^\s*import requests\b")}}
    assert check["needles"]["content"] == "import requests"
    for text in ("import os, requests\n", "x = __import__('requests')\n"):
        assert g.match(check, "Write", {"file_path": "/p/a.py", "content": text}, "/p")
    assert g.match(check, "Write", {"file_path": "/p/a.txt", "content": "import os, requests"},
                   "/p") is None


def test_what_a_blocked_call_reports_is_the_line_the_user_wrote():
    check = CHECKS["npm"]
    assert g.match(check, "Bash", {"command": "ls\ncd web && sudo -u node /usr/bin/npm ci"}) == \
        "cd web && sudo -u node /usr/bin/npm ci"
    imp = CHECKS["requests"]
    assert g.match(imp, "Write", {"file_path": "/p/a.py", "content": "x = 1\nimport os, requests\n"},
                   "/p") == "a.py: import os, requests"


# ---- the shell reading -------------------------------------------------------------------------------
@pytest.mark.parametrize(("line", "words"), [
    ("sudo -u node env -u X FOO=1 timeout 5 npm ci", ["npm", "ci"]),
    ("bash -c \"sh -c 'npm ci'\"", ["npm", "ci"]),
    ("xargs -I{} sh -c 'npm i {}'", ["npm", "i", "{}"]),
    ("command -v npm", None), ("sudo -l", None),
])
def test_wrappers_give_the_command_they_run(line, words):
    found = [argv for argv, _ in shell.commands(line)]
    if words is None:
        assert len(found) == 1
    else:
        assert found[-1] == words


def test_a_line_the_grammar_refuses_falls_back_to_the_text():
    assert shell.commands('echo "unterminated') is None
    assert shell.commands("npm i " + "x" * (shell.MAX_CHARS + 1)) is None
    # Matched as text where a command starts, as before the grammar.
    assert g.match(CHECKS["npm"], "Bash", {"command": 'npm install "left-pad'}) is not None
    assert g.match(CHECKS["npm"], "Bash", {"command": 'echo "npm'}) is None


def test_git_global_options_and_grouped_push_flags():
    assert "git push -u -f origin main" in shell.forms(
        ["git", "-C", "repo", "-c", "a=b", "--no-pager", "push", "-uf", "origin", "main"])
    assert shell.forms(["git", "push", "-o", "x"]) == ["git push -o x"]


def test_python_imports_are_read_from_the_syntax():
    assert import_lines("import os, requests\nx = __import__('json')") == [
        ("import os", 1), ("import requests", 1), ("import json", 2)]
    assert import_lines("from .. import a") == [("from .. import a", 1)]
    assert import_lines("def f(:\n") is None  # does not parse: the text alone is matched
    assert import_lines("    import requests\n") == [("import requests", 1)]  # an Edit's indented text


# ---- patterns that backtrack ---------------------------------------------------------------------------
ATTACKS = [r"(a+)+$", r"^(\w+\s?)*$", r"(x+x+)+y", r"^(a|aa)+$", r"(.*,){12}x", r"(\w+)*\d",
           r"^(\s*\w+)*!", r"(?:a|a)+b"]


@pytest.mark.parametrize("pattern", ATTACKS)
@pytest.mark.parametrize("kind", ["command", "content"])
def test_a_pattern_that_backtracks_is_refused_with_one_line(pattern, kind):
    with pytest.raises(g.CheckError, match="is refused") as err:
        g.validate({kind: pattern, "mode": "block"})
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("pattern", [r"npm(?=\s|$)", r"git\s+(?:-\S+\s+)*push\b", r"(?:\s+-\w+)*x",
                                     r"(ab+)*c", r"^\s*(?:import|from)\s+requests(?=[\s.,;]|$)",
                                     r"terraform\s+apply(?!.*-auto-approve=false)", r"rm\s+-rf\s+/"])
def test_patterns_that_cannot_backtrack_are_kept(pattern):
    assert patterns.unsafe(pattern) is None
    assert g.validate({"command": pattern})["command"] == pattern


def test_every_shape_proposes_only_safe_patterns():
    for fields in CHECKS.values():
        for kind in ("command", "content"):
            if fields.get(kind):
                assert patterns.unsafe(fields[kind]) is None


def test_the_cli_refuses_a_backtracking_check_and_changes_nothing(run):
    lesson_id = run("learn", "add", "No a's", "--kind", "project_rule").stdout.strip()
    for field, pattern in (("--command", "(a+)+$"), ("--content", r"^(\w+\s?)*$")):
        out = run("guard", "add", lesson_id, field, pattern, "--mode", "block", "--approve")
        assert out.exit_code == 1 and "is refused" in out.output
        assert len(out.output.strip().splitlines()) == 1
    assert json.loads(run("guard", "--json").stdout)["count"] == 0


def test_a_model_proposal_that_backtracks_is_not_proposed(fake_lore):
    lesson = fake_lore.lessons.add("Never write aaaa", kind="project_rule")
    fake_lore.lessons.update(lesson.id, status="active")

    def model(_rule):
        return [SimpleNamespace(fields={"content": r"^(\w+\s?)*$", "mode": "block"}, origin="judge",
                                note="x"),
                SimpleNamespace(fields={"command": r"aaaa(?=\s|$)", "mode": "block"}, origin="judge",
                                note="y")]

    fake_lore.checks.model_proposers.append(model)
    made = fake_lore.checks.propose(lesson.id, ask_model=True)
    assert [m["command"] for m in made] == ["aaaa(?=\\s|$)"]
    with pytest.raises(InvalidInput, match="is refused"):
        fake_lore.checks.add(lesson.id, {"command": "(a+)+$"})


def _slow(check_id: str, **fields) -> dict:
    """A check written to the hooks' file by hand, past validation."""
    return {"id": check_id, "lesson_id": "l", "mode": "block", "rule": "r", **fields}


def test_a_slow_pattern_in_the_file_is_skipped_and_the_others_hold():
    slow: list = []
    checks = [_slow("bad", command=r"(a|aa)+$"), _slow("npm", command=CHECKS["npm"]["command"])]
    out, found = h.decide(checks, {"tool_name": "Bash", "tool_input": {"command": "a" * 60 + "! ; npm i"}},
                          slow=slow)
    assert [f["check_id"] for f in found] == ["npm"] and slow == ["bad"]


def test_past_the_deadline_the_matcher_stops():
    import time

    with pytest.raises(g.Deadline):
        h.decide([_slow("bad", content=r"^(\w+\s?)*$")],
                 {"tool_name": "Write", "tool_input": {"file_path": "/p/a.txt",
                                                       "content": "word " * 20 + "!"}},
                 deadline=time.monotonic() - 1)


def _hook(home: Path, payload: dict) -> subprocess.CompletedProcess:
    return subprocess.run([LORE, "hook", "pre-tool-use"], input=json.dumps(payload), text=True,
                          capture_output=True, env={**os.environ, "LORE_HOME": str(home)}, timeout=60)


def test_the_hook_fails_open_past_its_deadline_with_a_log_line(lore_home):
    # Twenty checks that each run to their bound on this text: more than the hook's deadline.
    h.write_compiled(str(lore_home / "guards.json"),
                     [_slow(f"c{i}", content=r"^(a|aa)+$") for i in range(20)], "now")
    call = {"session_id": "s", "cwd": "/p", "tool_name": "Write",
            "tool_input": {"file_path": "/p/a.txt", "content": "a" * 80 + "!"}}
    out = _hook(lore_home, call)
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")
    log = (lore_home / "logs" / "hooks.log").read_text()
    assert f"passed its {h.DEADLINE_SECONDS:g} s deadline" in log
    assert "took over its time bound" not in log or "deadline" in log


def test_the_hook_skips_a_slow_check_and_still_blocks_with_the_others(lore_home):
    h.write_compiled(str(lore_home / "guards.json"),
                     [_slow("bad", command=r"(a|aa)+$"),
                      _slow("npm", command=CHECKS["npm"]["command"])], "now")
    out = _hook(lore_home, {"session_id": "s", "cwd": "/p", "tool_name": "Bash",
                            "tool_input": {"command": "a" * 40 + "! ; sudo npm i"}})
    assert json.loads(out.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "check bad took over its time bound" in (lore_home / "logs" / "hooks.log").read_text()


# ---- no input makes the matcher raise or run past its bound -------------------------------------------
SHELLISH = st.lists(st.sampled_from(list("npmgit push-f+ \"'\\$()`;&|<>{}\n#=*!~/.") +
                                    ["sudo ", "env ", "bash -c ", "eval ", "xargs ", "$(which ",
                                     "<<EOF\n", "EOF", "if ", "then ", "fi", "do ", "done"]),
                    max_size=60).map("".join)


@settings(max_examples=400, deadline=None)
@given(SHELLISH)
def test_any_command_line_is_read_or_refused_never_raises(line):
    found = shell.commands(line)
    if found is not None:
        for argv, at in found:
            assert 0 <= at <= len(line) and all(isinstance(w, str) for w in argv)
            shell.forms(argv)
    for name in ("npm", "force-push-main"):
        g.match(CHECKS[name], "Bash", {"command": line}, deadline=None)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_python_text_is_read_or_refused_never_raises(text):
    found = import_lines(text)
    assert found is None or all(line.startswith(("import ", "from ")) for line, _ in found)
    g.match(CHECKS["requests"], "Write", {"file_path": "/p/a.py", "content": text}, "/p")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab()+*?|\\sw.^$", min_size=1, max_size=12),
       st.text(alphabet="ab !\n", max_size=60))
def test_any_accepted_pattern_matches_within_its_bound(pattern, text):
    """Accepted or refused, never raised; an accepted one on any text either answers or says
    Slow (its bound) and never runs on."""
    try:
        g.validate({"content": pattern})
    except g.CheckError:
        return
    try:
        g.match({"id": "x", "content": pattern}, "Write", {"file_path": "/p/a", "content": text})
    except g.Slow:
        pass


def test_off_the_main_thread_a_slow_pattern_is_bounded_too():
    """The server's threads cannot use the timer: the regex module's timeout bounds them."""
    import threading

    slow: list = []
    found: list = []
    checks = [_slow("bad", content=r"^(a|aa)+$"), _slow("txt", content=r"^hello$")]
    call = {"tool_name": "Write", "tool_input": {"file_path": "/p/a.txt", "content": "a" * 60 + "!\nhello"}}
    worker = threading.Thread(target=lambda: found.extend(h.decide(checks, call, slow=slow)[1]))
    worker.start()
    worker.join(30)
    assert not worker.is_alive()
    assert [f["check_id"] for f in found] == ["txt"] and slow == ["bad"]


def test_the_grammar_loads_through_its_packages_too_and_without_it_the_text_is_matched(monkeypatch):
    def missing(package):
        raise ImportError(package)

    monkeypatch.setattr(shell, "_LANGUAGE", None)
    monkeypatch.setattr(shell, "_extension", missing)
    assert [a for a, _ in shell.commands("sudo npm i")] == [["sudo", "npm", "i"], ["npm", "i"]]

    def no_grammar(_line):
        raise ImportError("tree_sitter")

    monkeypatch.setattr(shell, "commands", no_grammar)
    monkeypatch.setattr(g, "_PARSED", {})
    assert g.match(CHECKS["npm"], "Bash", {"command": "cd web && npm ci"}) is not None
    assert g.match(CHECKS["npm"], "Bash", {"command": "echo npm"}) is None


def test_post_tool_use_keeps_the_deadline_too():
    call = {"tool_name": "Write", "tool_input": {"file_path": "/p/a.txt", "content": "a" * 60 + "!"}}
    fast = h.after([_slow("ok", content="a!")], call)
    assert [m["check_id"] for m in fast] == ["ok"]
    # Twenty checks at their bound each pass the deadline: the event goes without matches.
    assert h.after([_slow(f"c{i}", content=r"^(a|aa)+$") for i in range(20)], call) == []


def test_words_past_ascii_are_kept_and_offsets_are_characters():
    line = 'echo "héllo wörld" 🎉 && sudo npm i'
    found = shell.commands(line)
    assert [a for a, _ in found] == [["echo", "héllo wörld", "🎉"], ["sudo", "npm", "i"], ["npm", "i"]]
    assert line[found[1][1]:].startswith("sudo npm i")
    assert g.match(CHECKS["npm"], "Bash", {"command": "git commit -m '✨ npm'"}) is None


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=80))
def test_any_text_at_all_is_read_or_refused(line):
    """Any characters (the grammar is given ASCII: its scanner crashed the process on some
    non-ASCII input when it read them itself)."""
    found = shell.commands(line)
    for argv, at in found or []:
        assert 0 <= at <= len(line)
        assert all(w in line or "$" in line or "\\" in line or "'" in line or '"' in line
                   for w in argv[:1] if w.isalnum())


def test_threads_read_lines_at_once_each_its_own():
    """The server's threads replay checks side by side: no parser or line is shared."""
    from concurrent.futures import ThreadPoolExecutor

    lines = [r["input"] for r in ROWS if r["tool"] == "Bash"][:120] * 4
    alone = [shell.commands(line) for line in lines]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(shell.commands, lines))
    assert together == alone
