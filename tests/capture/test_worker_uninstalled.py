"""A worker the plugin's hooks started exits once Claude Code has Lore nowhere: the detection
reads the files `claude plugin install/uninstall` and `lore install` write (the shapes below are
the ones Claude Code 2.1 writes); installed, uninstalled, and files it cannot read (unknown:
the worker stays). An event in the queue is handled before the worker leaves."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FakeEmbedder, make_settings
from lore.api import Lore
from lore.capture.queue import Queue
from lore.install import apply, lore_in_claude_code, plan
from lore.worker import Worker

ENTRY = {"scope": "user", "installPath": "/x/.claude/plugins/cache/lore/lore/0.1.0",
         "version": "0.1.0", "installedAt": "2026-11-28T11:01:55.376Z",
         "lastUpdated": "2026-11-28T11:01:55.376Z"}
MARKETS = {"lore": {"source": {"source": "directory", "path": "/src/lore"}}}
INSTALLED = {"version": 2, "plugins": {"lore@lore": [ENTRY]}}
UNINSTALLED = {"version": 2, "plugins": {}}  # what `claude plugin uninstall lore@lore` leaves
EXIT_LINE = "Lore is no longer installed in Claude Code"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    user = tmp_path / "user"
    (user / ".claude" / "plugins").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return user


def write(home: Path, plugins: object, settings: object | None = None) -> None:
    claude = home / ".claude"
    text = plugins if isinstance(plugins, str) else json.dumps(plugins, indent=2)
    (claude / "plugins" / "installed_plugins.json").write_text(text)
    if settings is not None:
        body = settings if isinstance(settings, str) else json.dumps(settings, indent=2)
        (claude / "settings.json").write_text(body)


# ---- the detection ----------------------------------------------------------------------
def test_the_plugin_installed_at_any_scope_counts(home):
    write(home, INSTALLED, {"enabledPlugins": {"lore@lore": True}, "extraKnownMarketplaces": MARKETS})
    assert lore_in_claude_code(home) is True
    # A project-scope install is recorded in the home's list too, with its project; the user's
    # settings then enable nothing.
    project = dict(ENTRY, scope="project", projectPath="/work/shop")
    write(home, {"version": 2, "plugins": {"lore@lore": [project]}}, {"enabledPlugins": {}})
    assert lore_in_claude_code(home) is True
    # Disabled is not uninstalled: a project's settings may enable it again.
    write(home, INSTALLED, {"enabledPlugins": {"lore@lore": False}})
    assert lore_in_claude_code(home) is True


def test_the_plugin_enabled_in_the_user_settings_counts_even_unlisted(home):
    write(home, UNINSTALLED, {"enabledPlugins": {"lore@elsewhere": True}})
    assert lore_in_claude_code(home) is True


def test_lore_installs_hooks_in_the_user_settings_count(home):
    write(home, UNINSTALLED, {"enabledPlugins": {}})
    apply(plan("user", home, home / "shop", "/opt/bin/lore"))
    assert lore_in_claude_code(home) is True
    apply(plan("user", home, home / "shop", "/opt/bin/lore", remove=True))
    assert lore_in_claude_code(home) is False


def test_after_claude_plugin_uninstall_lore_is_nowhere(home):
    write(home, UNINSTALLED, {"enabledPlugins": {}, "extraKnownMarketplaces": MARKETS})
    assert lore_in_claude_code(home) is False
    # Other plugins, another marketplace's plugin of another name, and other hooks are not Lore.
    others = {"lore-tools@acme": [ENTRY], "formatter@lore": [ENTRY]}
    hooks = {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}
    write(home, {"version": 2, "plugins": others},
          {"enabledPlugins": {"lore-tools@acme": True, "lore@lore": False}, "hooks": hooks})
    assert lore_in_claude_code(home) is False


def test_no_user_settings_file_holds_nothing(home):
    write(home, UNINSTALLED)
    assert not (home / ".claude" / "settings.json").exists()
    assert lore_in_claude_code(home) is False


def test_claude_config_dir_is_where_claude_code_keeps_its_list(home, tmp_path, monkeypatch):
    elsewhere = tmp_path / "claude-config"
    (elsewhere / "plugins").mkdir(parents=True)
    (elsewhere / "plugins" / "installed_plugins.json").write_text(json.dumps(INSTALLED))
    write(home, UNINSTALLED)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(elsewhere))
    assert lore_in_claude_code(home) is True
    (elsewhere / "plugins" / "installed_plugins.json").write_text(json.dumps(UNINSTALLED))
    (elsewhere / "settings.json").write_text(json.dumps({"enabledPlugins": {"lore@lore": True}}))
    assert lore_in_claude_code(home) is True  # enabled in that folder's settings
    (elsewhere / "settings.json").write_text("{}")
    assert lore_in_claude_code(home) is False


@pytest.mark.parametrize("plugins, settings", [
    (None, {"enabledPlugins": {}}),                      # no list: an older or other Claude Code
    ("{not json", {}),
    ('{"version": 2, "plugins": ["lore@lore"]}', {}),    # another shape
    ("[]", {}),
    (b"\xff\xfe{}", {}),                                 # not UTF-8
    (UNINSTALLED, "{half written"),
    (UNINSTALLED, "[1, 2]"),
    (UNINSTALLED, {"hooks": ["lore hook stop"]}),        # hooks of a shape Claude Code never writes
])
def test_files_that_cannot_be_read_leave_it_unknown(home, plugins, settings):
    listed = home / ".claude" / "plugins" / "installed_plugins.json"
    if plugins is None:
        listed.unlink(missing_ok=True)
    elif isinstance(plugins, bytes):
        listed.write_bytes(plugins)
    else:
        write(home, plugins)
    body = settings if isinstance(settings, str) else json.dumps(settings)
    (home / ".claude" / "settings.json").write_text(body)
    assert lore_in_claude_code(home) is None


def test_a_folder_or_an_unreadable_file_leaves_it_unknown(home):
    write(home, UNINSTALLED)
    (home / ".claude" / "settings.json").mkdir()
    assert lore_in_claude_code(home) is None
    (home / ".claude" / "settings.json").rmdir()
    listed = home / ".claude" / "plugins" / "installed_plugins.json"
    listed.chmod(0)
    try:
        if os.access(listed, os.R_OK):
            pytest.skip("this user reads files whatever their mode (root)")
        assert lore_in_claude_code(home) is None
    finally:
        listed.chmod(0o600)


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=12), inner, max_size=3), max_leaves=12),
       st.sampled_from(["lore@lore", "lore@x", "lore", "lorex@lore", "x@lore", ""]))
def test_any_content_gives_an_answer_and_a_lore_key_means_installed(tmp_path_factory, content, key):
    user = tmp_path_factory.mktemp("user")
    (user / ".claude" / "plugins").mkdir(parents=True)
    (user / ".claude" / "plugins" / "installed_plugins.json").write_text(
        json.dumps({"version": 2, "plugins": {key: content}}))
    (user / ".claude" / "settings.json").write_text(json.dumps({"enabledPlugins": content}))
    found = lore_in_claude_code(user)
    assert found in (True, False, None)
    if key.split("@")[0] == "lore":
        assert found is True


# ---- the worker -------------------------------------------------------------------------
@pytest.fixture
def plugin_worker(home, lore_home, monkeypatch) -> Iterator[Worker]:
    monkeypatch.setenv("LORE_PLUGIN", "1")  # the plugin's wrapper sets it; its worker inherits it
    s = make_settings(lore_home)
    w = Worker(s, lore=Lore.open(s, embedder=FakeEmbedder()))
    yield w
    w.release()
    w.lore.close()


def run_bounded(w: Worker) -> int:
    """``w.run()`` with no idle exit, failing the test rather than hanging if it never returns."""
    def too_long(*_):
        raise TimeoutError("the worker did not exit")

    old = signal.signal(signal.SIGALRM, too_long)
    signal.alarm(120)
    try:
        return w.run()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def log_of(lore_home: Path) -> str:
    return (lore_home / "logs" / "worker.log").read_text()


def test_a_plugin_worker_handles_what_waits_then_exits_once_lore_is_nowhere(
        home, lore_home, plugin_worker):
    write(home, UNINSTALLED, {"enabledPlugins": {}})
    queue = Queue(lore_home / "queue")
    queue.append("Stop", {"n": 1})
    queue.append("Stop", {"n": 2})
    assert plugin_worker.idle_exit is None  # it would never exit for idleness
    assert run_bounded(plugin_worker) == 2
    assert queue.depth() == 0
    log = log_of(lore_home)
    assert log.count(EXIT_LINE) == 1, log


def test_a_plugin_worker_stays_while_installed_and_leaves_after_the_uninstall(
        home, lore_home, plugin_worker):
    write(home, INSTALLED, {"enabledPlugins": {"lore@lore": True}})
    looked: list[bool] = []

    def uninstall_later() -> None:
        # Two looks that found Lore installed, then `claude plugin uninstall` changes the files.
        deadline = time.monotonic() + 100
        while time.monotonic() < deadline:
            if plugin_worker._installed is True and plugin_worker._install_seen is not None:
                looked.append(True)
                if len(looked) >= 2:
                    break
            time.sleep(1.0)
        write(home, UNINSTALLED, {"enabledPlugins": {}})

    t = threading.Thread(target=uninstall_later)
    t.start()
    try:
        run_bounded(plugin_worker)
    finally:
        t.join()
    assert len(looked) >= 2  # it ran, installed, before it left
    assert EXIT_LINE in log_of(lore_home)


def test_unknown_keeps_a_plugin_worker_and_others_never_look(home, lore_home, plugin_worker,
                                                               monkeypatch):
    write(home, "{half written", {})
    assert plugin_worker.uninstalled() is False
    write(home, UNINSTALLED, {})
    plugin_worker._install_check_at = 0.0  # the next look is due
    assert plugin_worker.uninstalled() is True
    monkeypatch.delenv("LORE_PLUGIN")
    s = make_settings(lore_home)
    other = Worker(s, lore=plugin_worker.lore)  # `lore install`'s hooks or a user's own worker
    assert other.via_plugin is False and other.uninstalled() is False
