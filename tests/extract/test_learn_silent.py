"""Silent fixes: the agent's edits compared with what the files hold later."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from lore.extract.silent import (
    AgentWrite,
    check_write,
    check_writes,
    file_at_commit_after,
    is_trivial_change,
    latest_writes,
    read_file,
    summary,
)

APP = """\
import os


def load(path):
    with open(path) as fh:
        return fh.read()


def fetch(url):
    return None


def main():
    print(load(os.environ["CONFIG"]))
"""

AGENT_FETCH = """\
import requests


def fetch(url):
    response = requests.get(url, timeout=10)
    response.raise_for_status()
    return response.json()
"""

OLD_FETCH = """\
def fetch(url):
    return None
"""


def edit(path: str = "/repo/src/app.py", old: str | None = OLD_FETCH, new: str | None = AGENT_FETCH,
         tool: str = "Edit", at: str | None = "2025-03-01T10:00:00.000Z", edit_id: int = 1) -> AgentWrite:
    return AgentWrite(file_path=path, tool=tool, old_text=old, new_text=new, session_id="s1",
                      message_uuid=f"m{edit_id}", timestamp=at, edit_id=edit_id)


def after_edit() -> str:
    return APP.replace(OLD_FETCH, AGENT_FETCH)


# ---- nothing to learn ------------------------------------------------------------------------
def test_kept_edit_is_not_a_fix():
    assert check_write(edit(), after_edit()) is None


def test_kept_edit_with_lines_added_inside_is_not_a_fix():
    current = after_edit().replace("    response.raise_for_status()\n",
                                   "    log.debug('fetched %s', url)\n    response.raise_for_status()\n")
    assert check_write(edit(), current) is None


@pytest.mark.parametrize("change", [
    # reindented with tabs, blank lines dropped
    lambda t: t.replace("    ", "\t").replace("\n\n\n", "\n"),
    # quote style
    lambda t: t.replace('"CONFIG"', "'CONFIG'"),
    # the call reflowed over several lines with a trailing comma
    lambda t: t.replace("requests.get(url, timeout=10)",
                        "requests.get(\n        url,\n        timeout=10,\n    )"),
    # semicolons at line ends
    lambda t: t.replace("response.raise_for_status()", "response.raise_for_status();"),
])
def test_formatting_only_change_is_not_a_fix(change):
    current = change(after_edit())
    assert current != after_edit()
    assert check_write(edit(), current) is None


def test_is_trivial_change():
    assert is_trivial_change("f(a, b)\n", "f(\n    a,\n    b,\n)\n")
    assert is_trivial_change("x = 'a';\n\n\ny = 2;", 'x = "a"\ny = 2')
    assert is_trivial_change("const a = [1, 2,];", "const a = [1, 2]")
    assert not is_trivial_change("f(a, b)", "f(a, c)")
    assert not is_trivial_change("f(a, b)", "f(a)")


def test_missing_file_is_not_judged(tmp_path: Path):
    assert check_write(edit(), None) is None
    gone = edit(path=str(tmp_path / "gone.py"))
    assert read_file(gone.file_path) is None
    assert check_writes([gone]) == []
    assert read_file(str(tmp_path)) is None  # a directory is not a file


def test_too_small_to_judge():
    assert check_write(edit(old="x = 1", new="x = 2"), "x = 3\n") is None
    assert check_write(edit(old=None, new="   "), "anything at all\n") is None


# ---- silent fixes ----------------------------------------------------------------------------
def test_reverted_edit():
    fix = check_write(edit(), APP)
    assert fix is not None
    assert fix.kind == "reverted"
    assert fix.user_text == OLD_FETCH
    assert "-    response = requests.get(url, timeout=10)" in fix.diff
    assert "+    return None" in fix.diff
    assert fix.file_type == "py"
    assert summary(fix).startswith("Reverted the agent's change to /repo/src/app.py")


def test_reverted_deletion():
    deleted = edit(old="    # keep: the cache is warmed by cron\n", new="")
    assert check_write(deleted, APP) is None
    fix = check_write(deleted, APP + "    # keep: the cache is warmed by cron\n")
    assert fix is not None and fix.kind == "reverted"


def test_rewritten_edit():
    write = edit(old="import os\n", new="import os\nimport requests\n\nr = requests.get(url)\n")
    current = APP.replace("import os\n", "import os\nimport httpx\n\nr = httpx.get(url)\n")
    fix = check_write(write, current)
    assert fix is not None
    assert fix.kind == "rewritten"
    assert "requests.get(url)" in fix.diff and "httpx.get(url)" in fix.diff
    assert "-import requests" in fix.diff and "+import httpx" in fix.diff
    assert "httpx" in fix.user_text and "requests" not in fix.user_text
    assert fix.diff.startswith("--- agent\n+++ now")
    assert summary(fix, root="/repo") == \
        "Rewrote the agent's change to src/app.py: `import requests` -> `import httpx`"


def test_rewritten_larger_edit_finds_the_region():
    current = after_edit().replace("requests", "httpx").replace("response", "resp")
    fix = check_write(edit(), current)
    assert fix is not None and fix.kind == "rewritten"
    assert "def fetch(url):" in fix.user_text and "httpx.get(url, timeout=10)" in fix.user_text
    assert "def main" not in fix.user_text and "def load" not in fix.user_text


def test_removed_edit():
    write = edit(old="def main():\n", new="def main():\n    configure_logging(level='DEBUG')\n"
                 "    warm_cache(os.environ['CACHE_DIR'])\n")
    fix = check_write(write, APP)
    assert fix is not None
    assert fix.kind == "removed"
    assert fix.user_text == ""
    assert "configure_logging" in fix.agent_text and "def main" not in fix.agent_text
    assert "-    configure_logging(level='DEBUG')" in fix.diff
    assert summary(fix).startswith("Removed the agent's change to /repo/src/app.py: `configure_logging")


def test_removed_block_from_write_without_old_text():
    block = "def retry(fn, attempts=3):\n    for _ in range(attempts):\n        try:\n" \
            "            return fn()\n        except OSError:\n            pass\n"
    fix = check_write(edit(old=None, new=block, tool="NotebookEdit", path="/repo/n.py"), APP)
    assert fix is not None and fix.kind == "removed"


def test_whole_file_write_then_user_rewrote_part():
    write = edit(old=None, new=after_edit(), tool="Write")
    assert check_write(write, after_edit()) is None
    assert check_write(write, after_edit() + "\n\nif __name__ == '__main__':\n    main()\n") is None
    current = after_edit().replace("    response = requests.get(url, timeout=10)\n",
                                   "    response = requests.get(url, timeout=30, verify=CA_BUNDLE)\n")
    fix = check_write(write, current)
    assert fix is not None
    assert fix.kind == "rewritten"
    assert fix.agent_text == "    response = requests.get(url, timeout=10)"
    assert fix.user_text == "    response = requests.get(url, timeout=30, verify=CA_BUNDLE)"
    assert "timeout=10" in fix.diff and "verify=CA_BUNDLE" in fix.diff


def test_whole_file_write_then_user_deleted_a_function():
    write = edit(old=None, new=after_edit(), tool="Write")
    fix = check_write(write, after_edit().replace(AGENT_FETCH.split("\n\n\n")[1], ""))
    assert fix is not None and fix.kind == "removed"
    assert "def fetch(url):" in fix.agent_text


# ---- which writes are judged -----------------------------------------------------------------
def test_latest_writes_drops_what_the_agent_overwrote():
    first = edit(edit_id=1)
    second = edit(old=AGENT_FETCH, new=AGENT_FETCH.replace("requests", "httpx"), edit_id=2)
    other = edit(path="/repo/src/other.py", edit_id=3)
    assert latest_writes([first, other, second]) == [other, second]
    # a later Write of the whole file replaces every earlier write of that file
    whole = edit(old=None, new="print('hi')\n", tool="Write", edit_id=4)
    assert latest_writes([first, other, whole]) == [other, whole]


def test_latest_writes_folds_a_partial_self_edit():
    first = edit(edit_id=1)
    second = edit(old="timeout=10", new="timeout=30", edit_id=2)
    kept = latest_writes([first, second])
    assert len(kept) == 1 and kept[0].edit_id == 1
    assert kept[0].new_text == AGENT_FETCH.replace("timeout=10", "timeout=30")
    # the agent's own second edit is not taken for the user's rewrite
    assert check_writes([first, second], read={"/repo/src/app.py":
                                               after_edit().replace("timeout=10", "timeout=30")}.get) == []


def test_check_writes_reads_from_disk(tmp_path: Path):
    path = tmp_path / "app.py"
    path.write_text(APP.replace("import os\n", "import os\nimport sys\n"))
    kept = edit(path=str(path), old="import os\n", new="import os\nimport sys\n", edit_id=1)
    reverted = edit(path=str(path), edit_id=2)
    fixes = check_writes([kept, reverted])
    assert [(f.write.edit_id, f.kind) for f in fixes] == [(2, "reverted")]


def test_large_file():
    body = "\n".join(f"    value_{i} = compute(item_{i % 37}, 'x{i}')" for i in range(4000))
    agent = "\n".join(f"    value_{i} = compute(item_{i % 37}, 'x{i}')" for i in range(2000, 2030))
    start = time.perf_counter()
    fix = check_write(edit(old=None, new=agent), body.replace("value_2010 = compute(", "value_2010 = calc("))
    assert time.perf_counter() - start < 30  # guards against a quadratic blow-up (minutes), not speed
    assert fix is not None and fix.kind == "rewritten"
    assert fix.user_text.startswith("    value_2000 =") and "value_2010 = calc(" in fix.user_text
    assert "-    value_2010 = compute(item_12, 'x2010')" in fix.diff


# ---- a later commit --------------------------------------------------------------------------
GIT = shutil.which("git")


def git(repo: Path, *args: str, date: str | None = None) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    if date:
        env |= {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    config = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com", "-c", "commit.gpgsign=false"]
    done = subprocess.run([GIT or "git", "-C", str(repo), *config, *args], env=env, capture_output=True,
                          text=True, check=True)
    return done.stdout


@pytest.mark.skipif(GIT is None, reason="git is not installed")
def test_rewrite_found_in_a_later_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    git(repo, "init", "-q")
    app = repo / "src" / "app.py"
    app.write_text(APP)
    git(repo, "add", "src/app.py")
    git(repo, "commit", "-q", "-m", "start", date="2025-03-01T09:00:00+00:00")

    # the agent edits at 10:00 (not committed); the user rewrites its lines and commits at 11:00
    write = edit(path=str(app), at="2025-03-01T10:00:00.000Z")
    app.write_text(after_edit())
    app.write_text(after_edit().replace("requests", "httpx"))
    git(repo, "commit", "-q", "-am", "use httpx", date="2025-03-01T11:00:00+00:00")
    # and later changes the file again, on disk only
    app.write_text("# rewritten from scratch\n")

    committed = file_at_commit_after(app, write.timestamp or "")
    assert committed == after_edit().replace("requests", "httpx")
    fix = check_write(write, committed)
    assert fix is not None and fix.kind == "rewritten"
    assert "-    response = requests.get(url, timeout=10)" in fix.diff
    assert "+    response = httpx.get(url, timeout=10)" in fix.diff

    # the first commit after the agent's write is the one used, even with later ones
    app.write_text(APP)
    git(repo, "commit", "-q", "-am", "back", date="2025-03-01T12:00:00+00:00")
    assert file_at_commit_after(str(app), "2025-03-01T10:00:00Z") == committed
    assert file_at_commit_after(str(app), "2025-03-01T11:30:00+00:00") == APP
    # a time after the last commit, or a time in another zone that is after it too
    assert file_at_commit_after(app, "2025-03-01T12:00:01Z") is None
    assert file_at_commit_after(app, "2025-03-01T13:30:00+01:00") is None
    # not judged: a file no commit touched, an unreadable time, a missing git
    (repo / "notes.txt").write_text("x")
    assert file_at_commit_after(repo / "notes.txt", "2025-03-01T08:00:00Z") is None
    assert file_at_commit_after(app, "yesterday-ish") is None
    assert file_at_commit_after(app, "2025-03-01T10:00:00Z", git=str(tmp_path / "no-git")) is None


@pytest.mark.skipif(GIT is None, reason="git is not installed")
def test_no_commit_outside_a_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    outside = tmp_path / "plain" / "app.py"
    outside.parent.mkdir()
    outside.write_text(APP)
    assert file_at_commit_after(outside, "2000-01-01T00:00:00Z") is None
    assert file_at_commit_after(tmp_path / "missing-dir" / "app.py", "2000-01-01T00:00:00Z") is None
