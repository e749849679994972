"""Bad input at the command line: one line on stderr, exit 1 (2 for usage), no traceback,
nothing created. CliRunner for most cases, real subprocesses with raw bytes in argv and
stdin, and real read-only, unreadable and full file systems where this machine allows them
(a private mount namespace as root, file modes otherwise)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import click
import pytest

from lore.cli import cli
from lore.cli.common import LoreCommand, LoreGroup

LORE = str(Path(sys.executable).parent / "lore")
BAD = "bad \udcff\udcfe title"  # how Python hands over the bytes b"bad \xff\xfe title"
BAD_BYTES = b"bad \xff\xfe title"
ROOT = os.geteuid() == 0


def lore(home: Path, *args: str | bytes, stdin: bytes | None = None,
         prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """The installed `lore` as a user runs it, with argv and stdin passed as raw bytes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORE_")}
    env.update(LORE_HOME=str(home), HF_HUB_OFFLINE="1")
    return subprocess.run([*prefix, LORE, *args], input=stdin, capture_output=True, env=env,
                          timeout=120, check=False)  # type: ignore[call-overload]


def err(proc: subprocess.CompletedProcess) -> str:
    text = proc.stderr.decode() if isinstance(proc.stderr, bytes) else proc.stderr
    assert "Traceback" not in text
    return text


def one_line(result, code: int = 1) -> str:
    """The error of a CliRunner result: exit code, no traceback, a single 'Error:' line last."""
    assert result.exit_code == code, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: ")
    if code == 1:
        assert result.stderr.count("\n") == 1, result.stderr
    return last


# ---- undecodable arguments and standard input --------------------------------------------

@pytest.mark.parametrize("args, name", [
    (["learn", "add", BAD, "content"], "TITLE"),
    (["learn", "add", "T", BAD], "CONTENT"),
    (["learn", "add", "T", "c", "--tag", BAD], "--tag"),
    (["learn", "correction", BAD], "TEXT"),
    (["learn", "correction", "use uv", "--previous", BAD], "--previous"),
    (["search", BAD], "QUERY"),
    (["recall", "conversations", BAD], "QUERY"),
    (["ingest", BAD], "PATHS"),
    (["--db", f"/tmp/{BAD}.db", "recall", "values", "tags"], "--db"),
])
def test_undecodable_argument_is_a_usage_error_naming_it(run, lore_home, args, name):
    last = one_line(run(*args), code=2)
    assert name in last and "not valid UTF-8" in last and "\\xff\\xfe" in last
    assert not lore_home.exists()  # nothing created, not even the home


@pytest.mark.parametrize("args", [
    ["learn", "add", "T", "-"],
    ["learn", "correction", "-"],
    ["learn", "update", "01JD8X3Q5M0000000000000000", "--content", "-"],
    ["learn", "add", "--from-json", "-"],
])
def test_undecodable_stdin_is_a_usage_error(run, lore_home, args):
    last = one_line(run(*args, input=BAD_BYTES), code=2)
    assert "not valid UTF-8" in last
    assert not lore_home.exists()


def test_raw_bytes_in_a_real_argv_and_stdin(tmp_path):
    home = tmp_path / "home"
    for args, stdin in ([(b"learn", b"add", BAD_BYTES, b"c"), None],
                        [(b"learn", b"add", b"T", b"-"), BAD_BYTES],
                        [(b"learn", b"correction", b"-"), BAD_BYTES],
                        [(b"search", BAD_BYTES), None]):
        proc = lore(home, *args, stdin=stdin)
        assert proc.returncode == 2, proc.stderr
        assert "not valid UTF-8" in err(proc).splitlines()[-1]
    assert not home.exists()


def test_every_command_checks_its_arguments():
    def leaves(group: click.Group):
        for cmd in group.commands.values():
            if isinstance(cmd, click.Group):
                assert isinstance(cmd, LoreGroup), cmd.name
                yield from leaves(cmd)
            else:
                yield cmd

    # `lore hook` and `lore statusline` are the exceptions: they never fail on their input.
    unchecked = [c.name for c in leaves(cli) if not isinstance(c, LoreCommand)
                 and c.name not in ("hook", "statusline")]
    assert unchecked == []


def test_an_empty_path_is_not_the_current_folder(run, lore_home, tmp_path, monkeypatch):
    (tmp_path / "stray.jsonl").write_text('{"type": "user"}\n')
    monkeypatch.chdir(tmp_path)
    assert "empty path" in one_line(run("ingest", ""), code=2)
    assert "empty path" in one_line(run("admin", "import", ""), code=2)
    assert not lore_home.exists()


# ---- a home that is a file ---------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["search", "x"], ["recall", "values", "tags"], ["learn", "add", "T", "c"],
    ["learn", "correction", "no, use uv"], ["stats", "--counts"], ["admin", "init"],
    ["admin", "export"], ["ingest", "."],
])
def test_a_home_that_is_a_file(run, lore_home, args):
    lore_home.write_text("not a folder")
    last = one_line(run(*args))
    assert str(lore_home) in last and ("not a folder" in last or "as a file" in last)
    assert lore_home.read_text() == "not a folder"


def test_doctor_on_a_home_that_is_a_file(run, lore_home):
    lore_home.write_text("x")
    result = run("doctor", "--json")
    assert result.exit_code == 1
    checks = {c["check"]: c for c in json.loads(result.stdout)}
    assert not checks["home"]["ok"] and "is a file" in checks["home"]["detail"]
    assert not checks["database"]["ok"] and "does not exist yet" not in checks["database"]["detail"]


def test_doctor_on_a_file_that_is_not_a_lore_database(run, lore_home):
    lore_home.mkdir(parents=True, exist_ok=True)
    (lore_home / "lore.db").write_text("not a database")
    result = run("doctor", "--json")
    assert result.exit_code == 1
    checks = {c["check"]: c for c in json.loads(result.stdout)}
    assert "not a Lore database" in checks["database"]["detail"] and checks["database"]["fix"]
    assert (lore_home / "lore.db").read_text() == "not a database"


def test_a_home_inside_a_file(run, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("LORE_HOME", str(blocker / "deeper" / "home"))
    last = one_line(run("learn", "add", "T", "c"))
    assert f"{blocker} is a file" in last
    checks = {c["check"]: c for c in json.loads(run("doctor", "--json").stdout)}
    assert not checks["home"]["ok"] and f"{blocker} is a file" in checks["home"]["detail"]


# ---- read-only, unreadable and full homes --------------------------------------------------

def _can_mount() -> bool:
    if not ROOT or not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=1m t /mnt"],
                           capture_output=True, check=False)
    return probe.returncode == 0


MOUNT = _can_mount()


def read_only_fs(home: Path) -> tuple[str, ...]:
    """Run inside a private mount namespace where `home` is a read-only bind mount."""
    if not MOUNT:
        pytest.skip("needs root and mount namespaces for a real read-only file system")
    return ("unshare", "-m", "sh", "-c",
            f'mount --bind "{home}" "{home}" && mount -o remount,bind,ro "{home}" && exec "$@"',
            "sh")


def without_root_powers() -> tuple[str, ...]:
    """File modes bind root only once it drops the capability to override them."""
    if not ROOT:
        return ()
    if not shutil.which("setpriv"):
        pytest.skip("root without setpriv ignores file modes")
    return ("setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner")


@pytest.fixture
def filled_home(run, lore_home):
    one = run("learn", "add", "Pin the numpy version", "floating deps broke CI", "--json")
    assert one.exit_code == 0
    return lore_home


def test_read_only_file_system_reads_work_writes_say_why(filled_home):
    ro = read_only_fs(filled_home)
    found = lore(filled_home, "search", "numpy", "--mode", "keyword", "--json",
                 prefix=ro)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"][0]["title"] == "Pin the numpy version"
    assert lore(filled_home, "admin", "export", prefix=ro).returncode == 0
    add = lore(filled_home, "learn", "add", "T", "c", prefix=ro)
    assert add.returncode == 1
    last = err(add).strip()
    assert "read-only" in last and "not a Lore database" not in last and last.count("\n") == 0
    doctor = lore(filled_home, "doctor", "--json", prefix=ro)
    checks = {c["check"]: c for c in json.loads(doctor.stdout)}
    assert not checks["home"]["ok"] and "read-only file system" in checks["home"]["detail"]
    assert checks["database"]["ok"] and "opened read-only" in checks["database"]["detail"]


def test_read_only_folder_opens_the_database_read_only(filled_home):
    powerless = without_root_powers()
    filled_home.chmod(0o555)
    try:
        found = lore(filled_home, "search", "numpy", "--mode", "keyword", "--json",
                     prefix=powerless)
        assert found.returncode == 0, found.stderr
        assert len(json.loads(found.stdout)["results"]) == 1
        delete = lore(filled_home, "learn", "delete", "x", "--yes", prefix=powerless)
        assert delete.returncode == 1 and "not a Lore database" not in err(delete)
        doctor = lore(filled_home, "doctor", "--json", prefix=powerless)
        checks = {c["check"]: c for c in json.loads(doctor.stdout)}
        assert not checks["home"]["ok"] and "not writable" in checks["home"]["detail"]
        assert checks["database"]["ok"]
    finally:
        filled_home.chmod(0o755)
    # Nothing was left by the read-only runs (the device id came with the writing one).
    assert sorted(p.name for p in filled_home.iterdir()) == ["device", "lore.db"]


def test_unreadable_database_and_home(filled_home):
    powerless = without_root_powers()
    db = filled_home / "lore.db"
    db.chmod(0o000)
    try:
        out = lore(filled_home, "recall", "values", "tags", prefix=powerless)
        assert out.returncode == 1
        assert f"cannot read the database {db}: permission denied" in err(out)
        doctor = json.loads(lore(filled_home, "doctor", "--json",
                                 prefix=powerless).stdout)
        database = next(c for c in doctor if c["check"] == "database")
        assert not database["ok"] and "permission denied" in database["detail"]
        assert "move the file away" not in database["fix"]
        filled_home.chmod(0o000)
        out = lore(filled_home, "recall", "values", "tags", prefix=powerless)
        assert out.returncode == 1
        assert str(filled_home) in err(out) and err(out).count("\n") == 1
        doctor = json.loads(lore(filled_home, "doctor", "--json",
                                 prefix=powerless).stdout)
        home = next(c for c in doctor if c["check"] == "home")
        assert not home["ok"] and "not readable" in home["detail"]
    finally:
        filled_home.chmod(0o755)
        db.chmod(0o600)


def test_full_disk(tmp_path):
    if not MOUNT:
        pytest.skip("needs root and mount namespaces for a real full file system")
    home = tmp_path / "small"
    home.mkdir()
    script = (f'mount -t tmpfs -o size=3m tmpfs "{home}" && "$@" admin init >/dev/null 2>&1 && '
              f'dd if=/dev/zero of="{home}/filler" bs=64k >/dev/null 2>&1; '
              f'"$@" learn add "Pin numpy" "floating deps broke CI"; echo "rc=$?" >&2; '
              f'"$@" doctor --json')
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORE_")}
    env.update(LORE_HOME=str(home), HF_HUB_OFFLINE="1")
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", LORE], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[-1] == "rc=1" and "no space left" in lines[-2], proc.stderr
    disk = next(c for c in json.loads(proc.stdout) if c["check"] == "disk space")
    assert not disk["ok"] and "writes will fail" in disk["detail"]


def test_a_full_output_device(run, filled_home):
    last = one_line(run("admin", "export", "-o", "/dev/full"))
    assert last.startswith("Error: no space left on the disk holding /dev/full")


def test_doctor_reports_low_free_space(tmp_path, monkeypatch):
    from lore import doctor

    real = os.statvfs(tmp_path)

    class Nearly:
        f_bavail, f_frsize, f_flag = 100, 4096, real.f_flag

    monkeypatch.setattr(doctor.os, "statvfs", lambda path: Nearly)
    check = doctor._free_space(tmp_path)
    assert not check.ok and check.detail.startswith("0.4 MB free")


# ---- destructive commands without a terminal ---------------------------------------------

def test_delete_without_a_terminal_needs_yes(run, filled_home):
    lid = json.loads(run("search", "numpy", "--json").stdout)["results"][0]["id"]
    last = one_line(run("learn", "delete", lid, input="n\n"), code=2)
    assert "not a terminal" in last and "--yes" in last
    assert run("recall", "show", lid).exit_code == 0
    assert run("learn", "delete", lid, "--yes").exit_code == 0
    assert run("recall", "show", lid).exit_code == 1


def test_a_real_pipe_cannot_confirm_a_delete(filled_home, run):
    lid = json.loads(run("search", "numpy", "--json").stdout)["results"][0]["id"]
    proc = lore(filled_home, "learn", "delete", lid, stdin=b"n\n")
    assert proc.returncode == 2 and "add --yes" in err(proc)
    assert run("recall", "show", lid).exit_code == 0


def test_unlink_and_merge_tags_need_yes_too(run, filled_home):
    a = json.loads(run("learn", "add", "A", "a", "--tag", "js", "--json").stdout)["id"]
    b = json.loads(run("learn", "add", "B", "b", "--json").stdout)["id"]
    assert run("learn", "link", a, b).exit_code == 0
    assert "--yes" in one_line(run("learn", "link", a, b, "--remove"), code=2)
    assert "--yes" in one_line(run("admin", "merge-tags", "js", "javascript"), code=2)
    assert run("recall", "show", a, "--json").stdout.count(b) >= 1
    assert json.loads(run("recall", "show", a, "--json").stdout)["tags"] == ["js"]
    assert run("learn", "link", a, b, "--remove", "--yes").exit_code == 0


@pytest.mark.parametrize("path", ["learn delete", "learn link", "admin merge-tags",
                                  "admin export"])
def test_destructive_help_says_what_yes_is_for(run, path):
    text = " ".join(run(*path.split(), "--help").output.split())
    assert "--yes" in text and "not a terminal" in text


def test_export_refuses_a_missing_folder_and_an_existing_file(run, lore_home, tmp_path):
    last = one_line(run("admin", "export", "-o", "/nonexistent-dir/x.jsonl"), code=2)
    assert "/nonexistent-dir does not exist" in last
    assert not lore_home.exists()
    target = tmp_path / "keep.jsonl"
    target.write_text("precious\n")
    assert "refusing to overwrite" in one_line(run("admin", "export", "-o", str(target)), code=2)
    assert target.read_text() == "precious\n"
    assert run("admin", "export", "-o", str(target), "--yes").exit_code == 0
    assert target.read_text() == ""


# ---- a configured database path ----------------------------------------------------------

def test_a_typo_in_the_database_path_creates_nothing(run, lore_home, tmp_path, monkeypatch):
    lore_home.mkdir()
    config = lore_home / "config.yaml"
    typo = tmp_path / "dta" / "lore.db"
    config.write_text(f"database: {typo}\n")
    last = one_line(run("learn", "add", "T", "c"))
    assert f"config {config}: database is '{typo}'" in last and "does not exist" in last
    assert not typo.parent.exists()
    config.unlink()
    monkeypatch.setenv("LORE_DB", str(typo))
    assert one_line(run("recall", "values", "tags")).startswith("Error: $LORE_DB is")
    monkeypatch.delenv("LORE_DB")
    assert one_line(run("--db", str(typo), "recall", "values", "tags")).startswith("Error: --db is")
    assert not typo.parent.exists()
    # The default home is still created on first use.
    assert run("admin", "init").exit_code == 0 and (lore_home / "lore.db").exists()


# ---- learn add --from-json ----------------------------------------------------------------

def test_from_json_needs_no_title_argument(run, tmp_path):
    spec = tmp_path / "lesson.json"
    spec.write_text(json.dumps({"title": "From the file", "content": "body"}))
    data = json.loads(run("learn", "add", "--from-json", str(spec), "--json").stdout)
    assert data["title"] == "From the file" and data["content"] == "body"
    spec.write_text(json.dumps({"content": "no title"}))
    assert "give a TITLE" in one_line(run("learn", "add", "--from-json", str(spec)), code=2)


# ---- the MCP server -------------------------------------------------------------------------

def test_mcp_tool_errors_carry_the_same_line(lore_home):
    from mcp import Client, StdioServerParameters

    lore_home.write_text("not a folder")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORE_")}
    env["LORE_HOME"] = str(lore_home)

    async def main() -> list[str]:
        async with Client(StdioServerParameters(command=LORE, args=["mcp", "--profile", "admin"],
                                                env=env)) as client:
            texts = []
            for tool, args in (("lore_search", {"query": "x"}),
                               ("lore_add", {"title": "T", "content": "c"})):
                r = await client.call_tool(tool, args)
                assert r.is_error
                texts.append((tool, r.content[0].text))
            return texts

    # The SDK puts its prefix before every tool error; what follows is the CLI's line.
    for tool, text in anyio.run(main):
        assert text.startswith(f"Error executing tool {tool}: {lore_home} is a file, not a "
                               "folder"), text
        assert "move the file away" in text and "\n" not in text


def test_mcp_tool_errors_on_a_read_only_home(filled_home):
    from mcp import Client, StdioServerParameters

    ro = read_only_fs(filled_home)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORE_")}
    env.update(LORE_HOME=str(filled_home), HF_HUB_OFFLINE="1")
    server = StdioServerParameters(command=ro[0], args=[*ro[1:], LORE, "mcp", "--profile", "admin"],
                                   env=env)

    async def main() -> str:
        async with Client(server) as client:
            r = await client.call_tool("lore_add", {"title": "T", "content": "c"})
            assert r.is_error
            return r.content[0].text

    text = anyio.run(main)
    assert text.startswith(f"Error executing tool lore_add: the database {filled_home}")
    assert "read-only" in text and "not a Lore database" not in text
