"""Checks on rules: the matching (commands, globs, written text, tool names), the checks
proposed from a rule's words, review and allow, the compiled file, the PreToolUse hook as a
real process, replay over recorded tool calls, and the matches the worker stores."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import FakeEmbedder, make_settings
from lore.api import Lore
from lore.apply import check_hook as h
from lore.apply import checks as g
from lore.apply.check_shapes import propose
from lore.errors import InvalidInput, NotFound
from lore.models import Preference

LORE = str(Path(sys.executable).parent / "lore")
NPM = r"npm(?=\s|$)"


def hook(event: str, payload: object, home: Path, **env: str) -> subprocess.CompletedProcess:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run([LORE, "hook", event], input=data, capture_output=True, text=True,
                          env={**os.environ, "LORE_HOME": str(home), **env}, timeout=30)


def bash(command: str, cwd: str = "/p", session: str = "s1") -> dict:
    return {"session_id": session, "cwd": cwd, "tool_name": "Bash",
            "tool_input": {"command": command}}


# ---- matching ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("command", "hit"), [
    ("npm install left-pad", True), ("npm", True), ("cd web && npm ci", True),
    ("FOO=1 npm test", True), ("sudo npm i -g x", True), ("make; npm run build", True),
    ("echo $(npm bin)", True), ("pnpm add left-pad", False), ("echo npm", False),
    ("npx create-app", False), ("cat npm.log", False), ("git commit -m 'npm'", False),
])
def test_a_command_pattern_matches_where_a_command_starts(command, hit):
    assert (g.match({"command": NPM}, "Bash", {"command": command}) is not None) is hit


@pytest.mark.parametrize(("glob", "path", "hit"), [
    ("gen/", "/p/gen/models.py", True), ("gen/", "/p/src/gen/a/b.py", True),
    ("gen/", "/p/general/x.py", False), ("src/gen/**", "/p/src/gen/x/y.py", True),
    ("src/gen/**", "/p/lib/src/gen/x.py", False), ("*.min.js", "/p/a/b/c.min.js", True),
    ("*.min.js", "/p/a/min.js.map", False), ("**/*.pb.go", "/p/api/v1/x.pb.go", True),
    ("src/*.py", "/p/src/a/b.py", False), ("src/*.py", "/p/src/b.py", True),
    ("*.{js,jsx}", "/p/x.jsx", True), ("*.{js,jsx}", "/p/x.ts", False),
    ("vendor/", "/elsewhere/vendor/lib.c", True), ("a?c.txt", "/p/abc.txt", True),
])
def test_a_path_glob_matches_the_file_written_relative_to_the_session(glob, path, hit):
    assert (g.match({"path": glob}, "Edit", {"file_path": path, "old_string": "a",
                                            "new_string": "b"}, "/p") is not None) is hit


def test_content_tool_and_the_file_tools():
    imp = {"path": "*.py", "content": r"^\s*import requests\b"}
    assert g.match(imp, "Write", {"file_path": "/p/a.py", "content": "x = 1\nimport requests\n"},
                   "/p") == "a.py: import requests"
    assert g.match(imp, "Write", {"file_path": "/p/a.md", "content": "import requests"}, "/p") is None
    assert g.match(imp, "MultiEdit", {"file_path": "/p/a.py", "edits": [
        {"old_string": "a", "new_string": "b"}, {"old_string": "c", "new_string": "import requests"}]},
        "/p") is not None
    assert g.match(imp, "NotebookEdit", {"notebook_path": "/p/n.py", "new_source": "import requests"},
                   "/p") is not None
    assert g.match(imp, "Bash", {"command": "import requests"}) is None  # not a file tool
    assert g.match({"tool": "mcp__github__*"}, "mcp__github__create_pr", {}) == "mcp__github__create_pr"
    assert g.match({"tool": "mcp__github__*"}, "mcp__gitlab__x", {}) is None
    assert g.match({"tool": "Write", "path": "*.js"}, "Edit", {"file_path": "/p/a.js"}, "/p") is None


@pytest.mark.parametrize(("spec", "message"), [
    ({}, "at least one"), ({"command": "("}, "not a valid regular expression"),
    ({"command": "npm)|(.*"}, "not a valid regular expression"),
    ({"content": "[a-"}, "not a valid regular expression"), ({"tool": "Bash", "mode": "deny"},
                                                             "unknown mode"),
    ({"path": "x" * 501}, "longer than 500"), ({"command": 3}, "must be text"),
])
def test_a_bad_check_is_refused_with_one_line(spec, message):
    with pytest.raises(g.CheckError, match=message) as err:
        g.validate(spec)
    assert "\n" not in str(err.value)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=40), st.sampled_from(g.FIELDS))
def test_any_pattern_is_either_valid_or_refused_cleanly(pattern, field):
    try:
        clean = g.validate({field: pattern})
    except g.CheckError:
        return
    assert clean[field] == pattern.strip()


WORD = st.from_regex(r"[a-z][a-z0-9_-]{1,12}", fullmatch=True)
ARGS = st.lists(st.from_regex(r"[A-Za-z0-9_./=-]{1,10}", fullmatch=True), max_size=4)


@settings(max_examples=200)
@given(WORD, ARGS, st.sampled_from(["", "cd x && ", "A=1 ", "sudo ", "true; ", "ls | "]))
def test_a_command_check_matches_its_program_wherever_a_command_starts(word, args, prefix):
    check = {"command": re.escape(word) + r"(?=\s|$)"}
    call = prefix + " ".join([word, *args])
    assert g.match(check, "Bash", {"command": call}) is not None
    # Quoted, or as part of another word, it is not run.
    assert g.match(check, "Bash", {"command": f"echo '{word}' x{word}"}) is None


SEG = st.from_regex(r"[a-z0-9_-]{1,8}", fullmatch=True)


@settings(max_examples=200)
@given(st.lists(SEG, min_size=0, max_size=4), SEG, st.sampled_from(["py", "js", "md"]))
def test_globs_follow_folders(folders, name, ext):
    path = "/root/" + "/".join([*folders, f"{name}.{ext}"])
    rel = "/".join([*folders, f"{name}.{ext}"])
    edit = {"file_path": path, "content": "x"}
    assert g.match({"path": f"*.{ext}"}, "Write", edit, "/root") == rel
    assert g.match({"path": "**"}, "Write", edit, "/root") == rel
    # One star never crosses a folder; an anchored glob holds at the top only.
    assert (g.match({"path": f"*/{name}.{ext}"}, "Write", edit, "/root") is not None) == \
        (len(folders) == 1)
    if folders:
        assert g.match({"path": folders[0] + "/"}, "Write", edit, "/root") == rel


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                    lambda kids: st.lists(kids, max_size=3)
                    | st.dictionaries(st.text(max_size=12), kids, max_size=4), max_leaves=12)


@settings(max_examples=300)
@given(st.sampled_from(["Bash", "Write", "Edit", "MultiEdit", "NotebookEdit", "Read", "x"]),
       JSON | st.fixed_dictionaries({"command": JSON, "file_path": JSON, "content": JSON,
                                     "edits": JSON}))
def test_any_tool_input_is_matched_or_not_never_raises(tool, tool_input):
    for check in ({"command": NPM}, {"path": "gen/"}, {"content": "x"}, {"tool": "*"}):
        g.match(check, tool, tool_input, "/p")
    out, found = h.decide([{"id": "c", "lesson_id": "l", "mode": "block", "command": NPM,
                            "rule": "r"}], {"tool_name": tool, "tool_input": tool_input})
    assert (out is None) == (not found)


@settings(max_examples=600, deadline=None)  # validation probes the pattern
@given(st.text(alphabet="ab.\\|()[]*+?{}2^$ -s:=!<", max_size=14),
       st.text(alphabet="ab. -2s\n;|", max_size=24))
def test_a_needle_is_in_every_text_its_pattern_matches(pattern, text):
    for kind in ("command", "content"):
        try:
            g.validate({kind: pattern})
            rx = g._compiled(kind, pattern.strip())
        except (g.CheckError, OverflowError, RecursionError):
            return
        pattern = pattern.strip()
        n = g.needle(kind, pattern)
        if n and rx.search(text):
            assert n in text, (kind, pattern, text, n)


@settings(max_examples=400)
@given(st.text(alphabet="ab/.*?{},[]", min_size=1, max_size=12),
       st.lists(st.text(alphabet="ab.", min_size=1, max_size=4), min_size=1, max_size=4))
@example(glob="**/ab", parts=["ab"])  # "**/" matches no folder: the needle is not "/ab"
def test_a_path_needle_is_in_every_path_its_glob_matches(glob, parts):
    try:
        rx = g._compiled("path", glob)
    except re.error:
        return
    n = g.needle("path", glob)
    rel = "/".join(parts)
    if n and rx.search(rel):
        assert n in rel, (glob, rel, n)


def test_the_compiled_file_carries_needles_and_they_skip_calls(fake_lore, lore_home):
    lesson = fake_lore.lessons.add("Use pnpm, not npm", kind="project_rule")
    fake_lore.checks.add(lesson.id, {"command": NPM, "mode": "block"}, status="active")
    [held] = h.read_compiled(str(lore_home / "guards.json"))
    assert held["needles"] == {"command": "npm"}
    assert g.match(held, "Bash", {"command": "npm ci"}) == "npm ci"
    assert g.match({**held, "needles": {"command": "zzz"}}, "Bash", {"command": "npm ci"}) is None


def entry(**extra):
    return {"id": "c1", "lesson_id": "l1", "mode": "block", "command": NPM,
            "rule": "Use pnpm, not npm", "why": "The lockfile is pnpm's.",
            "said": "no, use pnpm", "said_at": "2026-11-20T10:00:00Z", **extra}


def test_decide_blocks_with_the_rule_reminds_allows_and_keeps_to_its_project():
    out, found = h.decide([entry()], bash("npm install left-pad"))
    spec = out["hookSpecificOutput"]
    assert spec["hookEventName"] == "PreToolUse" and spec["permissionDecision"] == "deny"
    reason = spec["permissionDecisionReason"]
    for part in ("Use pnpm, not npm", "The lockfile is pnpm's.", "2026-11-20", "no, use pnpm",
                 "npm install left-pad", "lore guard mode c1 allow"):
        assert part in reason
    assert found == [{"check_id": "c1", "lesson_id": "l1", "outcome": "blocked",
                      "matched": "npm install left-pad"}]
    out, found = h.decide([entry(mode="remind")], bash("npm i"))
    assert "permissionDecision" not in out["hookSpecificOutput"]
    assert "Use pnpm" in out["hookSpecificOutput"]["additionalContext"]
    assert found[0]["outcome"] == "reminded"
    out, found = h.decide([entry(allowed_until=time.time() + 60)], bash("npm i"))
    assert "permissionDecision" not in out["hookSpecificOutput"] and found[0]["outcome"] == "allowed"
    assert h.decide([entry(allowed_until=time.time() - 1)], bash("npm i"))[1][0]["outcome"] == "blocked"
    assert h.decide([entry(project="/shop")], bash("npm i", cwd="/blog")) == (None, [])
    assert h.decide([entry(project="/shop")], bash("npm i", cwd="/shop/web"))[1]
    assert h.decide([entry(project="/shop")], bash("npm i", cwd="/shopping")) == (None, [])
    assert h.decide([entry()], bash("pnpm add left-pad")) == (None, [])
    # A broken entry is skipped; the others still hold.
    out, found = h.decide([entry(command="("), entry(id="c2")], bash("npm i"))
    assert [f["check_id"] for f in found] == ["c2"]


# ---- checks proposed from a rule's words -----------------------------------------------------------
def rule(title, content="", preferred=None, rejected=None, file_types=()):
    pref = Preference(preferred=preferred or "", rejected=rejected or "") if rejected else None
    return SimpleNamespace(title=title, content=content, preference=pref, file_types=list(file_types))


@pytest.mark.parametrize(("r", "expected"), [
    (rule("Use pnpm, not npm"), [("shape:package-manager", {"command": NPM, "mode": "block"})]),
    (rule("Prefer uv", "", "uv", "pip"), [("shape:package-manager", {
        "command": r"(?:pip[\d.]*|python[\d.]*\s+(?:-\w+\s+)*-m\s*pip[\d.]*)(?=\s|$)",
        "mode": "block"})]),
    (rule("Do not edit gen/, it is generated", "gen/models.py comes from schema.yaml"),
     [("shape:protected-path", {"path": "gen/", "mode": "block"})]),
    (rule("Vendored code", "Never edit third_party/ or vendor/; they are vendored.\nRun make."),
     [("shape:protected-path", {"path": "third_party/", "mode": "block"}),
      ("shape:protected-path", {"path": "vendor/", "mode": "block"})]),
    (rule("Use httpx, not requests", "", "httpx", "requests", ["py"]),
     [("shape:banned-import", {"path": "*.{py,pyi}",
                               "content": r"^\s*(?:import|from)\s+requests(?=[\s.,;]|$)",
                               "mode": "block"})]),
    (rule("Use TypeScript, not JavaScript", "", "TypeScript", "JavaScript"),
     [("shape:file-type", {"tool": "Write", "path": "*.{js,jsx,mjs,cjs}", "mode": "remind"})]),
    (rule("No, don't use Redis, use local file sessions instead"), []),
    (rule("Write tests first"), []),
])
def test_shapes_propose_checks_from_a_rules_words(r, expected):
    assert [(p.origin, p.fields) for p in propose(r)] == expected


def test_force_push_to_named_branches():
    [p] = propose(rule("Never force-push to main or release branches"))
    check = p.fields
    assert g.match(check, "Bash", {"command": "git push --force origin main"})
    assert g.match(check, "Bash", {"command": "git push -f origin HEAD:release"})
    assert g.match(check, "Bash", {"command": "git push origin main"}) is None
    assert g.match(check, "Bash", {"command": "git push --force origin my-feature"}) is None
    [anywhere] = propose(rule("Don't force push"))
    assert g.match(anywhere.fields, "Bash", {"command": "git push --force-with-lease"})


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80), st.text(max_size=120))
def test_shapes_never_propose_an_invalid_check(title, content):
    for p in propose(rule(title or "x", content)):
        g.validate(p.fields)


# ---- stored checks, review, the compiled file ---------------------------------------------------
def test_checks_are_proposed_once_reviewed_apart_and_compiled_when_they_hold(fake_lore, lore_home):
    lesson = fake_lore.lessons.add("Use pnpm, not npm", "The lockfile is pnpm's.",
                                  kind="project_rule", project="/shop")
    [made] = fake_lore.checks.propose()
    assert made["status"] == "proposed" and made["words"] == f"Blocks Bash commands matching /{NPM}/"
    assert fake_lore.checks.propose() == []  # not twice
    path = lore_home / "guards.json"
    assert not path.exists()  # proposed only: the hooks hold nothing, and skip at once
    fake_lore.review.decide_check(made["id"], "approve")
    [held] = json.loads(path.read_text())["checks"]
    assert held["project"] == "/shop" and held["rule"] == "Use pnpm, not npm"
    assert held["why"] == "The lockfile is pnpm's."
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    # The rule archived: the file follows without a word about the check.
    fake_lore.lessons.update(lesson.id, status="archived")
    assert not path.exists()
    fake_lore.lessons.update(lesson.id, status="active")
    assert len(json.loads(path.read_text())["checks"]) == 1
    fake_lore.review.decide_check(made["id"], "reject")
    assert not path.exists()
    assert fake_lore.checks.propose() == []  # a rejected check is not proposed again
    fake_lore.lessons.delete(lesson.id)
    assert not path.exists()


def test_a_learned_rule_not_yet_reviewed_holds_no_check(fake_lore, lore_home):
    lesson = fake_lore.lessons.add("Use pnpm, not npm", kind="preference", status="active",
                                  metadata={"learning": {"occurrences": 3}})
    fake_lore.checks.add(lesson.id, {"command": NPM, "mode": "block"}, status="active")
    assert not (lore_home / "guards.json").exists()


def test_bad_input_changes_nothing(fake_lore):
    lesson = fake_lore.lessons.add("Use pnpm, not npm", kind="project_rule")
    with pytest.raises(InvalidInput, match="not a valid regular expression"):
        fake_lore.checks.add(lesson.id, {"command": "(", "mode": "block"})
    with pytest.raises(NotFound):
        fake_lore.checks.add("01NOPE", {"command": NPM})
    with pytest.raises(NotFound, match="`lore guard` lists them"):
        fake_lore.review.decide_check("01NOPE", "approve")
    c = fake_lore.checks.add(lesson.id, {"command": NPM})
    for bad in (lambda: fake_lore.review.decide_check(c["id"], "maybe"),
                lambda: fake_lore.review.decide_check(c["id"], "approve", mode="deny"),
                lambda: fake_lore.checks.allow(c["id"], -1),
                lambda: fake_lore.checks.test({"path": "{"}, since="last week")):
        with pytest.raises(InvalidInput):
            bad()
    assert [x["status"] for x in fake_lore.checks.checks()] == ["proposed"]


def test_allow_lets_calls_through_for_a_while(fake_lore, lore_home):
    lesson = fake_lore.lessons.add("Use pnpm, not npm", kind="project_rule")
    c = fake_lore.checks.add(lesson.id, {"command": NPM, "mode": "block"}, status="active")
    fake_lore.checks.allow(c["id"], 10)
    checks = h.read_compiled(str(lore_home / "guards.json"))
    assert h.decide(checks, bash("npm i"))[1][0]["outcome"] == "allowed"
    assert h.decide(checks, bash("npm i"), at=time.time() + 11 * 60)[1][0]["outcome"] == "blocked"
    fake_lore.checks.allow(c["id"], 0)
    assert h.decide(h.read_compiled(str(lore_home / "guards.json")),
                    bash("npm i"))[1][0]["outcome"] == "blocked"


# ---- the hooks as processes ---------------------------------------------------------------------
def compiled(home: Path, *entries: dict) -> None:
    h.write_compiled(str(home / "guards.json"), list(entries), "now")


def test_pre_tool_use_denies_reminds_and_queues_the_match(lore_home):
    compiled(lore_home, entry())
    out = hook("pre-tool-use", bash("npm install left-pad"), lore_home)
    assert out.returncode == 0 and out.stderr == ""
    spec = json.loads(out.stdout)["hookSpecificOutput"]
    assert spec["permissionDecision"] == "deny"
    # What matched is queued for the worker; the rest of the call is not.
    settings_ = make_settings(lore_home)
    with Lore.open(settings_, embedder=FakeEmbedder()) as lore:
        from lore.worker import Worker

        worker = Worker(settings_, lore)
        assert worker.run(once=True) == 1
        [ev] = lore.checks.store.guards.events()
        assert (ev["check_id"], ev["outcome"], ev["matched"], ev["session_id"]) == \
            ("c1", "blocked", "npm install left-pad", "s1")
    ok = hook("pre-tool-use", bash("pnpm add left-pad"), lore_home)
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "", "")


def test_pre_tool_use_redacts_what_it_queues(lore_home):
    from lore.capture.queue import Queue

    compiled(lore_home, entry(mode="remind", command=r"curl(?=\s|$)"))
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    out = hook("pre-tool-use", bash(f"curl -H 'Authorization: token {secret}' x"), lore_home)
    assert "additionalContext" in out.stdout
    [event] = list(Queue(lore_home / "queue").take())
    assert secret not in json.dumps(event.payload) and "tool_input" not in event.payload


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", '{"tool_name": 3}',
                                   '{"tool_name": "Bash", "tool_input": "npm i"}'])
def test_pre_tool_use_fails_open_on_any_input(lore_home, stdin):
    compiled(lore_home, entry())
    out = hook("pre-tool-use", stdin, lore_home)
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")


def test_pre_tool_use_without_a_file_a_broken_file_or_disabled(lore_home):
    call = bash("npm install left-pad")
    assert hook("pre-tool-use", call, lore_home).stdout == ""
    lore_home.mkdir(parents=True, exist_ok=True)
    for broken in ("{", '{"format": 99, "checks": [{}]}', '{"format": 1, "checks": "x"}'):
        (lore_home / "guards.json").write_text(broken)
        out = hook("pre-tool-use", call, lore_home)
        assert (out.returncode, out.stdout, out.stderr) == (0, "", "")
    compiled(lore_home, entry())
    out = hook("pre-tool-use", call, lore_home, LORE_DISABLED="1")
    assert (out.returncode, out.stdout) == (0, "")
    assert not (lore_home / "queue").exists()


def test_pre_tool_use_imports_no_database_model_or_click(lore_home):
    compiled(lore_home, entry())
    code = ("import io, sys\nfrom lore.apply import check_hook as guards\n"
            "guards.main(io.BytesIO(sys.argv[1].encode()), io.StringIO())\n"
            "bad = [m for m in ('sqlite3', 'sqlean', 'numpy', 'click', 'pydantic', 'lore.store', "
            "'lore.api', 'logging', 'yaml') if m in sys.modules]\nprint(bad)")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(bash("pnpm i"))],
                         capture_output=True, text=True, env={**os.environ,
                                                               "LORE_HOME": str(lore_home)})
    assert out.stdout.strip() == "[]", out.stderr


def test_post_tool_use_records_the_calls_that_ran(lore_home):
    compiled(lore_home, entry(mode="remind", command=None, path="gen/", id="c9"))
    hook("post-tool-use", {"session_id": "s1", "cwd": "/p", "tool_name": "Edit",
                           "tool_input": {"file_path": "/p/gen/models.py", "old_string": "a",
                                          "new_string": "b"},
                           "tool_response": {"success": True}}, lore_home)
    settings_ = make_settings(lore_home)
    with Lore.open(settings_, embedder=FakeEmbedder()) as lore:
        from lore.worker import Worker

        Worker(settings_, lore).run(once=True)
        [ev] = lore.store.guards.events()
        assert (ev["check_id"], ev["outcome"], ev["matched"]) == ("c9", "ran", "gen/models.py")


# ---- replay -------------------------------------------------------------------------------------
def _transcript(path: Path, project: str) -> Path:
    """Three npm calls: one the user let run and moved on, one refused, one corrected; and
    a pnpm call."""
    recs = []

    def user(text, uuid):
        recs.append({"type": "user", "uuid": uuid, "sessionId": "r1", "cwd": project,
                     "timestamp": f"2026-11-0{len(recs) % 9 + 1}T10:00:00Z",
                     "message": {"role": "user", "content": text}})

    def call(cmd, uuid, tid, result, error=False):
        recs.append({"type": "assistant", "uuid": uuid, "sessionId": "r1", "cwd": project,
                     "timestamp": "2026-11-02T10:00:00Z",
                     "message": {"role": "assistant", "content": [
                         {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": cmd}}]}})
        recs.append({"type": "user", "uuid": uuid + "r", "sessionId": "r1", "cwd": project,
                     "timestamp": "2026-11-02T10:00:01Z",
                     "message": {"role": "user", "content": [
                         {"type": "tool_result", "tool_use_id": tid, "content": result,
                          "is_error": error}]}})

    user("Set up the project", "u1")
    call("npm install", "a1", "t1", "added 3 packages")
    user("Great, now add a README", "u2")
    call("npm install left-pad", "a2", "t2",
         "The user doesn't want to proceed with this tool use. The tool use was rejected", True)
    user("Add the test runner", "u3")
    call("npm i -D vitest", "a3", "t3", "added 1 package")
    user("No, don't use npm here, use pnpm instead", "u4")
    call("pnpm add -D vitest", "a4", "t4", "done")
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def test_replay_counts_matches_and_flags_the_calls_the_user_accepted(fake_lore, tmp_path):
    project = str(tmp_path / "shop")
    fake_lore.conversations.ingest([_transcript(tmp_path / "r1.jsonl", project)], embed=False)
    lesson = fake_lore.lessons.add("Use pnpm, not npm", kind="project_rule", project=project)
    c = fake_lore.checks.add(lesson.id, {"command": NPM, "mode": "block"})
    report = fake_lore.checks.test(c["id"]).to_dict()
    assert (report["calls"], report["matched"], report["accepted"]) == (4, 3, 1)
    assert report["flagged"]
    [accepted] = report["accepted_examples"]
    assert accepted["matched"] == "npm install"
    tags = {m["matched"]: (m["refused"], bool(m["complaint"])) for m in report["examples"]}
    assert tags["npm install left-pad"] == (True, False)
    assert tags["npm i -D vitest"] == (False, True)
    # Another project's calls are not the rule's; --since leaves out older calls.
    other = fake_lore.lessons.add("Use pnpm there", kind="project_rule", project="/elsewhere")
    c2 = fake_lore.checks.add(other.id, {"command": NPM})
    assert fake_lore.checks.test(c2["id"]).calls == 0
    assert fake_lore.checks.test(c2["id"], every_project=True).calls == 4
    assert fake_lore.checks.test(c["id"], since="2030-01-01").calls == 0
    clean = fake_lore.checks.test({"command": r"pnpm(?=\s|$)"}, project=project).to_dict()
    assert (clean["matched"], clean["flagged"]) == (1, True)


def test_guard_cli(run, tmp_path):
    lesson_id = run("learn", "add", "Use pnpm, not npm", "The lockfile is pnpm's.", "--kind",
                    "project_rule").stdout.strip()
    bad = run("guard", "add", lesson_id, "--command", "(")
    assert bad.exit_code == 1 and "not a valid regular expression" in bad.output
    assert len(bad.output.strip().splitlines()) == 1
    proposed = run("guard", "propose")
    assert proposed.exit_code == 0 and "Blocks Bash commands matching" in proposed.stdout
    [check] = json.loads(run("guard", "--json").stdout)["checks"]
    tested = run("guard", "test", check["id"])
    assert "would have matched 0 of 0 recorded tool calls" in tested.stdout
    assert run("guard", "test").exit_code == 2
    assert run("review", "approve", check["id"]).exit_code == 0
    allowed = run("guard", "mode", check["id"], "allow", "--minutes", "5", "--json")
    assert json.loads(allowed.stdout)["allowed_until"]
    assert run("guard", "mode", check["id"], "remind").exit_code == 0
    assert "reminds" in run("guard").stdout.lower()
    assert run("guard", "compile").exit_code == 0
    assert run("review", "forget", check["id"]).exit_code == 0
    assert run("review", "forget", check["id"]).exit_code == 1


def test_checks_on_postgres(pg_url, lore_home):
    with Lore.open(make_settings(lore_home, database=pg_url), embedder=FakeEmbedder()) as lore:
        lesson = lore.lessons.add("Use pnpm, not npm", kind="project_rule")
        [made] = lore.checks.propose()
        lore.review.decide_check(made["id"], "approve", mode="remind")
        assert [c["mode"] for c in h.read_compiled(str(lore_home / "guards.json"))] == ["remind"]
        found = {"lore_guard": [{"check_id": made["id"], "lesson_id": lesson.id,
                                 "outcome": "reminded", "matched": "npm i"}],
                 "session_id": "s", "cwd": "/p", "tool_name": "Bash"}
        assert lore.checks.record("e1", found, "2026-11-26T10:00:00Z") == 1
        assert lore.checks.record("e1", found, "2026-11-26T10:00:00Z") == 0  # stored once
        assert [e["outcome"] for e in lore.store.guards.events(lesson.id)] == ["reminded"]
        assert lore.checks.remove(made["id"])["id"] == made["id"]
        assert lore.store.guards.events(lesson.id) == []


def test_review_lists_checks_in_words_with_their_replay_and_decides_them(run, tmp_path):
    project = str(tmp_path / "shop")
    with Lore.open(make_settings(Path(os.environ["LORE_HOME"])), embedder=FakeEmbedder()) as lore:
        lore.conversations.ingest([_transcript(tmp_path / "r1.jsonl", project)], embed=False)
        lesson = lore.lessons.add("Use pnpm, not npm", kind="project_rule", project=project)
        [made] = lore.checks.propose(lesson.id)
    listed = run("review")
    assert listed.exit_code == 0, listed.output
    text = listed.stdout
    assert "Checks waiting for review" in text and made["id"] in text
    assert "Blocks Bash commands matching /npm(?=\\s|$)/" in text
    assert "would have matched 3 of 4 recorded tool calls in 1 sessions; 1 of them calls the " \
           "user accepted" in text and "FLAGGED" in text and "npm install (accepted)" in text
    data = json.loads(run("review", "--json").stdout)
    assert data["checks"][0]["replay"]["matched"] == 3
    assert json.loads(run("review", "--project", "/elsewhere", "--json").stdout)["checks"] == []
    assert run("review", "reject", made["id"]).exit_code == 0
    assert json.loads(run("guard", "--json").stdout)["checks"][0]["status"] == "rejected"
    assert json.loads(run("review", "--json").stdout)["checks"] == []


def test_approving_a_rule_proposes_its_checks_for_review(fake_lore):
    out = fake_lore.learning.record("No, don't use npm here, use pnpm instead",
                                   "I'll run npm install.", project="/shop", session_id="s1")
    assert fake_lore.checks.checks(out.lesson.id) == []  # not approved yet: nothing proposed
    fake_lore.review.decide(out.lesson.id, "approve")
    [proposed] = fake_lore.checks.checks(out.lesson.id)
    assert (proposed["status"], proposed["command"]) == ("proposed", NPM)
    fake_lore.review.decide_check(proposed["id"], "reject")
    fake_lore.lessons.update(out.lesson.id, title="Use pnpm, not npm")  # changed again
    assert [c["status"] for c in fake_lore.checks.checks(out.lesson.id)] == ["rejected"]


def test_the_review_folder_shows_checks_and_takes_their_decisions(fake_lore, tmp_path):
    project = str(tmp_path / "shop")
    fake_lore.conversations.ingest([_transcript(tmp_path / "r1.jsonl", project)], embed=False)
    lesson = fake_lore.lessons.add("Use pnpm, not npm", kind="project_rule", project=project)
    [made] = fake_lore.checks.propose(lesson.id)
    folder = tmp_path / "vault"
    report = fake_lore.review.export_folder(folder)
    assert report["checks"] == 1
    [path] = (folder / "checks").glob("*.md")
    text = path.read_text()
    assert f"id: {made['id']}" in text and "# Blocks Bash commands matching" in text
    assert "Would have matched 3 of 4 recorded tool calls" in text and "Flagged" in text
    assert "`npm install` (accepted)" in text
    assert path.name in (folder / "index.md").read_text()
    fake_lore.review.import_folder(folder)  # nothing ticked: nothing decided
    assert fake_lore.checks.get(made["id"])["status"] == "proposed"
    path.write_text(text.replace("- [ ] approve", "- [x] approve"))
    imported = fake_lore.review.import_folder(folder)
    assert [a["decision"] for a in imported["applied"]] == ["approved"]
    assert fake_lore.checks.get(made["id"])["status"] == "active"
    assert fake_lore.review.import_folder(folder)["applied"] == []  # once
    fake_lore.review.export_folder(folder)
    assert not list((folder / "checks").glob("*.md"))
    # Both boxes ticked: a warning, no decision.
    other = fake_lore.checks.add(lesson.id, {"path": "gen/"})
    fake_lore.review.export_folder(folder)
    [path] = (folder / "checks").glob("*.md")
    path.write_text(path.read_text().replace("- [ ]", "- [x]"))
    warned = fake_lore.review.import_folder(folder)
    assert any("both approve and reject" in w for w in warned["warnings"])
    assert fake_lore.checks.get(other["id"])["status"] == "proposed"


def test_replay_reads_the_edits_hooks_recorded_when_no_transcript_was_imported(fake_lore):
    from lore.capture.transcripts import FileEdit

    lesson = fake_lore.lessons.add("Do not edit gen/, it is generated", kind="project_rule",
                                  project="/shop")
    fake_lore.conversations.record_edits("h1", "/shop", None, [
        FileEdit("h1", "m1", "Edit", "/shop/gen/models.py", "a", "b", "2026-11-20T10:00:00Z"),
        FileEdit("h1", "m2", "Write", "/shop/src/app.py", None, "x", "2026-11-20T10:01:00Z")])
    fake_lore.conversations.record_edits("h2", "/shop", None, [
        FileEdit("h2", "m3", "Edit", "/shop/gen/api.py", "a", "b", "2026-11-21T10:00:00Z")])
    fake_lore.learning.capture("No, don't touch gen/", None, project="/shop", session_id="h2",
                              at="2026-11-21T10:05:00Z", origin="hook", event_id="c1")
    [check] = fake_lore.checks.checks(lesson.id) or [fake_lore.checks.add(lesson.id, {"path": "gen/"})]
    report = fake_lore.checks.test(check["id"]).to_dict()
    assert (report["calls"], report["matched"], report["accepted"]) == (3, 2, 1)
    assert {m["matched"]: m["accepted"] for m in report["examples"]} == {
        "gen/models.py": True, "gen/api.py": False}


def test_checks_and_their_matches_copy_to_postgres(run, pg_url, lore_home):
    from lore.store import open_store

    with Lore.open(make_settings(lore_home), embedder=FakeEmbedder()) as lore:
        lesson = lore.lessons.add("Use pnpm, not npm", kind="project_rule")
        c = lore.checks.add(lesson.id, {"command": NPM, "mode": "block"}, status="active")
        lore.checks.record("e1", {"lore_guard": [{"check_id": c["id"], "lesson_id": lesson.id,
                                                  "outcome": "blocked", "matched": "npm i"}],
                                  "session_id": "s1", "cwd": "/p", "tool_name": "Bash"},
                           "2026-11-26T10:00:00Z")
        checks, events = lore.store.guards.checks(), lore.store.guards.events()
    copied = run("admin", "migrate-to", pg_url, "--json")
    assert copied.exit_code == 0, copied.output
    assert json.loads(copied.stdout)["rows"]["checks"] == 1
    pg = open_store(pg_url)
    try:
        assert pg.guards.checks() == checks and pg.guards.events() == events
    finally:
        pg.close()


def test_a_project_check_holds_in_a_folder_reached_through_a_link(tmp_path):
    real = tmp_path / "real"
    (real / "web").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    check = entry(project=str(real))
    assert h.decide([check], bash("npm i", cwd=str(link / "web")))[1]
    assert h.decide([check], bash("npm i", cwd=str(tmp_path)))[1] == []


@pytest.mark.parametrize("title", [
    "Never use print for logging, use the logging module",
    "Don't use eval, it is unsafe",
    "Don't use it in the tests",
])
def test_no_banned_import_for_a_builtin_or_a_filler_word(title):
    assert [p.origin for p in propose(rule(title, file_types=["py"]))] == []


def test_each_session_start_compiles_the_checks_a_shared_database_holds(lore_home):
    settings_ = make_settings(lore_home)
    with Lore.open(settings_, embedder=FakeEmbedder()) as lore:
        lesson = lore.lessons.add("Use pnpm, not npm", kind="project_rule")
        lore.checks.add(lesson.id, {"command": NPM, "mode": "block"}, status="active")
    path = lore_home / "guards.json"
    path.unlink()  # as on another machine sharing the database, which never wrote the file
    (lore_home / "worker.pid").write_text(str(os.getpid()))  # "running": the hook starts none
    hook("session-start", {"session_id": "s1", "cwd": "/p", "source": "startup"}, lore_home)
    with Lore.open(settings_, embedder=FakeEmbedder()) as lore:
        from lore.worker import Worker

        assert Worker(settings_, lore).run(once=True) == 1
    assert [c["command"] for c in h.read_compiled(str(path))] == [NPM]


def test_the_reason_given_to_the_agent_is_not_the_rule_said_again(fake_lore):
    from lore.core.checks import _why

    plain = fake_lore.lessons.add("Use pnpm, not npm", "Use pnpm instead of npm.", kind="preference")
    assert _why(plain) == ""
    reasoned = fake_lore.lessons.add("Use httpx, not requests", "Use httpx instead of requests.",
                                    kind="preference",
                                    preference={"reasoning": "the whole service is async"})
    assert _why(reasoned) == "the whole service is async"
    detailed = fake_lore.lessons.add("Never edit gen/", "gen/ is rebuilt by make codegen on every "
                                    "build, so edits there vanish.", kind="project_rule")
    assert "rebuilt by make codegen" in _why(detailed)


def test_a_new_check_prints_the_same_keys_as_a_stored_one(run):
    lesson_id = run("learn", "add", "Use pnpm, not npm", "The lockfile is pnpm's.", "--kind",
                    "project_rule").stdout.strip()
    added = json.loads(run("guard", "add", lesson_id, "--command", r"\bnpm\b", "--json").stdout)
    [listed] = json.loads(run("guard", "--json").stdout)["checks"]
    assert added["allowed_until"] is None
    assert set(added) == set(listed)


def test_a_deleted_rule_takes_its_checks_and_an_orphan_waits_for_no_one(fake_lore, lore_home):
    lesson = fake_lore.lessons.add("Use pnpm, not npm", kind="project_rule")
    fake_lore.checks.add(lesson.id, {"command": NPM, "mode": "block"}, status="active")
    fake_lore.checks.add(lesson.id, {"command": "yarn", "mode": "remind"})
    assert (lore_home / "guards.json").exists()
    fake_lore.lessons.delete(lesson.id)
    assert fake_lore.checks.checks() == []
    assert not (lore_home / "guards.json").exists()
    # A check left by an earlier version that deleted the rule alone: the queue skips it.
    other = fake_lore.lessons.add("Use uv, not pip", kind="project_rule")
    fake_lore.checks.add(other.id, {"command": "pip", "mode": "block"})
    fake_lore.engine.lessons.delete(other.id)
    assert fake_lore.checks.waiting() == []
