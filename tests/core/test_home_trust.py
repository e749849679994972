"""The files that steer Lore (the checks the PreToolUse hook enforces, config.yaml, the config's
validated copy) are read only when they are the user's own: a pipe, a device, a huge file,
another user's file or a home others can write is refused in one line; the hooks stay fail-open
and never hang on them; a forged config cache is never trusted."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lore import config_cache, trusted
from lore.apply import check_hook as h
from lore.config import load_config
from lore.errors import ConfigError

LORE = str(Path(sys.executable).parent / "lore")
OTHER_UID = 54321  # no user of this machine: a file chowned to it is another user's
NPM = r"npm(?=\s|$)"
CHECK = {"id": "c1", "lesson_id": "l1", "mode": "block", "command": NPM,
         "rule": "Use pnpm, not npm"}
CALL = {"session_id": "s1", "cwd": "/p", "tool_name": "Bash",
        "tool_input": {"command": "npm install left-pad"}}
needs_root = pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0,
                                reason="giving a file to another user needs root")


def hook(event: str, home: Path, payload: dict | None = None, **env: str
         ) -> subprocess.CompletedProcess:
    """One hook process; the timeout turns a hang into a failure, never a stuck suite."""
    return subprocess.run([LORE, "hook", event], input=json.dumps(payload or CALL),
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "LORE_HOME": str(home), **env})


def hooks_log(home: Path) -> str:
    path = home / "logs" / "hooks.log"
    return path.read_text() if path.exists() else ""


@pytest.fixture
def home(lore_home: Path) -> Path:
    lore_home.mkdir(mode=0o700, parents=True)
    return lore_home


def guards_file(home: Path) -> Path:
    return home / h.COMPILED


# ---- the reader ----------------------------------------------------------------------------
def attack(home: Path, how: str) -> Path:
    """``guards.json`` made into ``how``."""
    path = guards_file(home)
    if how == "fifo":
        os.mkfifo(path)
    elif how in ("zero", "urandom"):
        path.symlink_to(f"/dev/{how}")
    elif how == "huge":
        with open(path, "wb") as f:
            f.truncate(trusted.CHECKS_BYTES + 1)  # sparse: no disk spent
    elif how == "link":
        real = home / "elsewhere.json"
        h.write_compiled(str(real), [CHECK], "now")
        path.symlink_to(real)
    elif how == "folder":
        path.mkdir()
    else:  # a good file, made untrustworthy by its mode, its owner or its folder's
        h.write_compiled(str(path), [CHECK], "now")
        changes = {"group-writable": lambda: path.chmod(0o620),
                   "other-user": lambda: os.chown(path, OTHER_UID, OTHER_UID),
                   "group-writable-home": lambda: home.chmod(0o770),
                   "world-writable-home": lambda: home.chmod(0o777),
                   "home-of-another-user": lambda: os.chown(home, OTHER_UID, OTHER_UID)}
        changes[how]()
    return path


ATTACKS = {
    "fifo": "is a named pipe", "zero": "is a link", "urandom": "is a link", "link": "is a link",
    "huge": "more than a checks file ever needs", "folder": "is a folder",
    "group-writable": "can be written by other users (mode 0620)",
    "group-writable-home": "can be written by other users (mode 0770)",
    "world-writable-home": "can be written by other users (mode 0777)",
}
OWNER_ATTACKS = {"other-user": f"belongs to another user (uid {OTHER_UID})",
                 "home-of-another-user": f"belongs to another user (uid {OTHER_UID})"}


@pytest.mark.parametrize(("how", "said"), ATTACKS.items())
def test_the_reader_refuses_in_one_line(home, how, said):
    path = attack(home, how)
    with pytest.raises(trusted.Untrusted) as caught:
        h.read_compiled(str(path))
    line = str(caught.value)
    assert said in line and str(path.parent) in line and "\n" not in line


@needs_root
@pytest.mark.parametrize(("how", "said"), OWNER_ATTACKS.items())
def test_the_reader_refuses_another_users_file_or_home(home, how, said):
    path = attack(home, how)
    with pytest.raises(trusted.Untrusted) as caught:
        h.read_compiled(str(path))
    assert said in str(caught.value)


def test_the_users_own_file_is_read_and_a_missing_one_is_none(home):
    h.write_compiled(str(guards_file(home)), [CHECK], "now")
    assert h.read_compiled(str(guards_file(home))) == [CHECK]
    assert trusted.read(str(home / "absent"), 10, "file") is None


def test_a_sticky_home_others_can_write_is_accepted_but_their_files_are_not(home):
    """Others can add names to a sticky folder but not replace the user's files: the user's
    own file is read; what another user put there is refused by its owner."""
    home.chmod(0o1777)
    h.write_compiled(str(guards_file(home)), [CHECK], "now")
    assert h.read_compiled(str(guards_file(home))) == [CHECK]
    if os.name == "posix" and os.geteuid() == 0:
        os.chown(guards_file(home), OTHER_UID, OTHER_UID)
        with pytest.raises(trusted.Untrusted, match="belongs to another user"):
            h.read_compiled(str(guards_file(home)))


def test_a_file_that_grows_past_the_cap_while_read_is_refused(home):
    path = home / "big"
    path.write_bytes(b"x" * 100)
    assert trusted.read(str(path), 100, "file") == b"x" * 100
    path.write_bytes(b"x" * 101)
    with pytest.raises(trusted.Untrusted, match="101 bytes"):
        trusted.read(str(path), 100, "file")


@given(st.binary(max_size=2000), st.integers(min_value=0, max_value=2500))
@settings(max_examples=60, deadline=None)
def test_a_regular_file_is_read_whole_or_refused_by_its_size(tmp_path_factory, data, limit):
    folder = tmp_path_factory.mktemp("r")
    folder.chmod(0o700)
    path = folder / "f"
    path.write_bytes(data)
    path.chmod(0o600)
    if len(data) <= limit:
        assert trusted.read(str(path), limit, "file") == data
    else:
        with pytest.raises(trusted.Untrusted):
            trusted.read(str(path), limit, "file")


# ---- the hooks: fail open, never hang, one log line -------------------------------------------
@pytest.mark.parametrize("how", [*ATTACKS, *(OWNER_ATTACKS if os.name == "posix"
                                              and os.geteuid() == 0 else ())])
def test_the_pre_tool_use_hook_fails_open_at_once_and_logs_why(home, how):
    attack(home, how)
    out = hook("pre-tool-use", home)
    assert out.returncode == 0 and out.stdout == "" and out.stderr == ""
    log = hooks_log(home)
    assert "hook pre-tool-use ignored the checks (the call runs): " in log
    assert {**ATTACKS, **OWNER_ATTACKS}[how] in log
    assert "Traceback" not in log and len(log.strip().splitlines()) == 1


def test_the_same_file_in_a_private_home_blocks(home):
    """The control: what the attacks above stop reading does block when it is trusted."""
    attack(home, "group-writable-home")
    home.chmod(0o700)
    out = hook("pre-tool-use", home)
    assert json.loads(out.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert hooks_log(home) == ""


@pytest.mark.parametrize("how", ["fifo", "zero", "group-writable-home"])
def test_the_post_tool_use_hook_queues_its_event_and_logs_the_refusal(home, how):
    attack(home, how)
    out = hook("post-tool-use", home)
    assert out.returncode == 0 and out.stdout == "" and out.stderr == ""
    events = list((home / "queue" / "pending").iterdir())
    assert len(events) == 1 and "lore_guard" not in json.loads(events[0].read_text())["payload"]
    assert "hook post-tool-use ignored the checks: " in hooks_log(home)
    assert ATTACKS[how] in hooks_log(home)


@pytest.mark.parametrize("how", ["fifo", "zero", "huge"])
def test_the_session_start_hook_does_not_hang_on_the_config(home, how):
    config = home / "config.yaml"
    if how == "fifo":
        os.mkfifo(config)
    elif how == "zero":
        config.symlink_to("/dev/zero")
    else:
        with open(config, "wb") as f:
            f.truncate(trusted.CONFIG_BYTES + 1)
    (home / "lore.db").write_bytes(b"")  # a database to build a context from
    out = hook("session-start", home, {"session_id": "s1", "cwd": str(home)})
    assert out.returncode == 0 and out.stdout == "" and out.stderr == ""
    assert "could not build the context" in hooks_log(home)
    assert len(list((home / "queue" / "pending").iterdir())) == 1


# ---- config.yaml ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("how", "said"), [
    ("fifo", "is a named pipe"), ("zero", "is a device"), ("huge", "more than a config ever needs"),
    ("group-writable", "can be written by other users"),
    ("group-writable-home", "can be written by other users (mode 0775)"),
])
def test_a_config_lore_cannot_trust_is_one_line_and_exit_1(home, how, said):
    config = home / "config.yaml"
    if how == "fifo":
        os.mkfifo(config)
    elif how == "zero":
        config.symlink_to("/dev/zero")
    elif how == "huge":
        with open(config, "wb") as f:
            f.truncate(trusted.CONFIG_BYTES + 1)
    else:
        config.write_text("user: eve\n")
        (config if how == "group-writable" else home).chmod(0o664 if how == "group-writable"
                                                             else 0o775)
    with pytest.raises(ConfigError) as caught:
        load_config()
    assert said in str(caught.value)
    out = subprocess.run([LORE, "config"], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "LORE_HOME": str(home)})
    assert out.returncode == 1 and out.stdout == ""
    assert said in out.stderr and len(out.stderr.strip().splitlines()) == 1


@needs_root
def test_another_users_config_is_refused(home):
    config = home / "config.yaml"
    config.write_text("user: eve\n")
    os.chown(config, OTHER_UID, OTHER_UID)
    with pytest.raises(ConfigError, match=f"belongs to another user \\(uid {OTHER_UID}\\)"):
        load_config()


def test_a_config_linked_from_the_users_own_folder_is_read(home, tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir(mode=0o700)
    (dotfiles / "lore.yaml").write_text("user: ada\n")
    (home / "config.yaml").symlink_to(dotfiles / "lore.yaml")
    assert load_config().user == "ada"


def test_a_config_that_is_not_utf8_is_one_line(home):
    (home / "config.yaml").write_bytes(b"user: \xff\xfe\n")
    with pytest.raises(ConfigError, match="is not UTF-8 text"):
        load_config()


# ---- the config cache: signed, a forgery is a miss --------------------------------------------
def cached(home: Path) -> bytes:
    (home / "config.yaml").write_text("user: ada\nllm:\n  provider: anthropic\n")
    assert load_config().user == "ada"  # validated, written
    hit = load_config()
    assert hit._config is None and hit.user == "ada"  # read back
    return (home / config_cache.CACHE_FILE).read_bytes()


def forge(blob: bytes, how: str, home: Path) -> bytes:
    key, _, payload = blob.split(b"\n", 2)
    forged = payload.replace(b'"ada"', b'"eve"')
    if how == "sha256":  # the old, unkeyed digest
        return key + b"\n" + hashlib.sha256(forged).hexdigest().encode() + b"\n" + forged
    if how == "other-key":  # signed with a key the forger made up
        import hmac

        mac = hmac.new(b"k" * 32, key + b"\n" + forged, hashlib.sha256).hexdigest()
        return key + b"\n" + mac.encode() + b"\n" + forged
    if how == "same-mac":  # the real signature on other values
        return blob.replace(payload, forged)
    raise AssertionError(how)


@pytest.mark.parametrize("how", ["sha256", "other-key", "same-mac"])
def test_a_forged_cache_is_never_trusted_and_is_written_again(home, how):
    good = cached(home)
    (home / config_cache.CACHE_FILE).write_bytes(forge(good, how, home))
    s = load_config()
    assert s._config is not None and s.user == "ada"  # validated from config.yaml
    assert s.sources.get("user", "").endswith("config.yaml")
    assert (home / config_cache.CACHE_FILE).read_bytes() == good


def test_a_forgery_that_knows_the_key_is_read_the_control(home):
    """The control: a cache signed with the home's own key is believed (so the tests above
    fail if the signature were not checked)."""
    import hmac

    good = cached(home)
    secret = (home / config_cache.KEY_FILE).read_bytes()
    key, _, payload = good.split(b"\n", 2)
    forged = payload.replace(b'"ada"', b'"eve"')
    mac = hmac.new(secret, key + b"\n" + forged, hashlib.sha256).hexdigest().encode()
    (home / config_cache.CACHE_FILE).write_bytes(key + b"\n" + mac + b"\n" + forged)
    assert load_config().user == "eve"


@pytest.mark.parametrize("how", ["readable", "short", "link", "fifo"])
def test_an_insecure_key_is_replaced_and_the_old_entries_are_misses(home, how):
    cached(home)
    key_path = home / config_cache.KEY_FILE
    old = key_path.read_bytes()
    if how == "readable":
        key_path.chmod(0o644)
    elif how == "short":
        key_path.write_bytes(b"k")
    elif how == "link":
        (home / "stolen").write_bytes(old)
        key_path.unlink()
        key_path.symlink_to(home / "stolen")
    else:
        key_path.unlink()
        os.mkfifo(key_path)
    s = load_config()
    assert s._config is not None and s.user == "ada"  # not believed: validated
    st_key = key_path.lstat()
    assert stat.S_ISREG(st_key.st_mode) and stat.S_IMODE(st_key.st_mode) == 0o600
    assert key_path.read_bytes() != old and len(key_path.read_bytes()) == config_cache.KEY_BYTES
    assert load_config()._config is None  # signed with the new key: a hit again


@needs_root
def test_another_users_cache_is_ignored(home):
    good = cached(home)
    os.chown(home / config_cache.CACHE_FILE, OTHER_UID, OTHER_UID)
    assert load_config()._config is not None
    assert (home / config_cache.CACHE_FILE).read_bytes() == good
    assert os.stat(home / config_cache.CACHE_FILE).st_uid == os.geteuid()  # written again


def test_a_home_others_can_write_caches_nothing(home, tmp_path, monkeypatch):
    """A config kept elsewhere (LORE_CONFIG) is read, but no key is kept in a home others
    could swap it in: every load validates."""
    private = tmp_path / "conf"
    private.mkdir(mode=0o700)
    (private / "config.yaml").write_text("user: ada\n")
    monkeypatch.setenv("LORE_CONFIG", str(private / "config.yaml"))
    home.chmod(0o777)
    for _ in range(2):
        s = load_config()
        assert s._config is not None and s.user == "ada"
    assert not (home / config_cache.CACHE_FILE).exists()
    assert not (home / config_cache.KEY_FILE).exists()


def test_writing_the_checks_never_follows_a_link_planted_at_its_temporary_name(home, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    (home / f"guards.json.{os.getpid()}.tmp").symlink_to(victim)
    h.write_compiled(str(guards_file(home)), [CHECK], "now")
    assert victim.read_text() == "keep me\n"
    assert h.read_compiled(str(guards_file(home))) == [CHECK]


def test_doctor_and_guard_compile_say_when_the_hooks_would_ignore_the_checks(home):
    """The hooks say it only in hooks.log; the commands a person runs say it too."""
    env = {**os.environ, "LORE_HOME": str(home), "HF_HUB_OFFLINE": "1"}

    def lore(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([LORE, *args], capture_output=True, text=True, timeout=300, env=env)

    ok = {c["check"]: c for c in json.loads(lore("doctor", "--json").stdout)}["checks"]
    assert ok["ok"] and "none approved" in ok["detail"]
    home.chmod(0o770)
    bad = {c["check"]: c for c in json.loads(lore("doctor", "--json").stdout)}["checks"]
    assert not bad["ok"] and "can be written by other users (mode 0770)" in bad["detail"]
    out = lore("guard", "compile")
    assert out.returncode == 0
    assert "note: the hooks will not enforce them: the folder" in out.stderr
    assert json.loads(lore("guard", "compile", "--json").stdout)["refused"].startswith("the folder")
