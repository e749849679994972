"""The validated config cache: an unchanged config.yaml is read back, not validated again, and
the result is the one validation gives; anything that changes the result, or any doubt about
the entry, validates again."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from lore import config_cache
from lore.config import ENV_PATTERN, Config, Settings, effective, load_config
from lore.errors import ConfigError

FULL = """\
user: ada
search:
  default_limit: 25
  anti_context: demote
  recency:
    enabled: true
embedding:
  dimensions: 384
  batch_size: 16
learning:
  active_threshold: 0.9
llm:
  provider: claude-cli
  timeout: 30
  cost_per_mtok: {input: 3, output: 15}
analysis:
  projects: {~/work/app: 8}
schedule:
  analysis: "0  3 * * *"
tag_aliases: {js: javascript}
known_tags: [auth, deps]
"""


def write_config(home: Path, text: str) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def entry(home: Path) -> Path:
    return home / config_cache.CACHE_FILE


def tree(model: BaseModel) -> dict[str, Any]:
    """Every model's fields-set, section by section."""
    return {"set": model.model_fields_set,
            "sub": {name: tree(value) for name in type(model).model_fields
                    if isinstance(value := getattr(model, name), BaseModel)}}


def assert_same(hit: Settings, fresh: Settings) -> None:
    """What a cache hit answers is what validation answered, before and after building."""
    assert hit.sources == fresh.sources
    assert (hit.user, hit.database, hit.llm_provider, hit.review_folder, hit.db_path) == \
           (fresh.user, fresh.database, fresh.llm_provider, fresh.review_folder, fresh.db_path)
    assert effective(hit) == effective(fresh)
    assert hit.config == fresh.config
    assert tree(hit.config) == tree(fresh.config)
    assert hit.config.model_dump() == fresh.config.model_dump()
    assert effective(hit) == effective(fresh)  # built now


def load_hit() -> Settings:
    s = load_config()
    assert s._cached is not None and s._config is None, "expected a cache hit"
    return s


def load_miss() -> Settings:
    s = load_config()
    assert s._cached is None, "expected validation"
    return s


# ---- a hit is the validated result ---------------------------------------------------------

def test_a_hit_equals_the_validated_config_sources_included(lore_home):
    write_config(lore_home, FULL)
    fresh = load_miss()
    assert fresh._config is not None
    assert entry(lore_home).is_file()
    hit = load_hit()
    assert_same(hit, fresh)
    assert hit.config.llm.cost_per_mtok is not None and hit.config.llm.cost_per_mtok.output == 15
    assert hit.config.schedule.analysis == "0 3 * * *"
    assert hit.config.analysis.threshold_for(os.path.expanduser("~/work/app/x")) == 8


def test_a_hit_reads_settings_without_building_the_models(lore_home, tmp_path):
    write_config(lore_home, f"database: {tmp_path / 'x.db'}\nuser: ada\n"
                            "review:\n  folder: ~/vault\nllm:\n  provider: claude-cli\n")
    load_miss()
    s = load_hit()
    assert s.db_path == tmp_path / "x.db" and s.user == "ada" and s.llm_provider == "claude-cli"
    assert s.review_folder == Path("~/vault").expanduser()
    assert s._config is None  # answered from the cached values
    assert s.config.user == "ada" and s.config is s.config


def test_a_built_hit_still_validates_assignment(lore_home):
    write_config(lore_home, "user: ada\n")
    load_miss()
    s = load_hit()
    with pytest.raises(ValueError):
        s.config.search.default_limit = "ten"  # type: ignore[assignment]


def test_a_database_given_on_the_command_line_wins_over_a_hit(lore_home, tmp_path):
    write_config(lore_home, f"database: {tmp_path / 'x.db'}\n")
    load_miss()
    s = load_hit()
    s.use_database(str(tmp_path / "other.db"), "--db")
    rows = {k: (v, src) for k, v, src in effective(s)}
    assert rows["database"] == (str(tmp_path / "other.db"), "--db")
    assert s.db_path == tmp_path / "other.db" and s._config is None
    assert s.config.database == str(tmp_path / "other.db")


def test_the_entry_is_private_and_holds_no_temporary_files(lore_home):
    write_config(lore_home, "user: ada\n")
    load_miss()
    assert stat.S_IMODE(entry(lore_home).stat().st_mode) == 0o600
    assert stat.S_IMODE((lore_home / config_cache.KEY_FILE).stat().st_mode) == 0o600
    assert sorted(p.name for p in lore_home.iterdir()) == [
        config_cache.CACHE_FILE, config_cache.KEY_FILE, "config.yaml"]


def test_a_tuning_key_is_refused_and_never_cached(lore_home):
    write_config(lore_home, "search:\n  rrf_k: 30\nconversations:\n  session_weight: 0.4\n")
    for _ in range(2):
        with pytest.raises(ConfigError, match="search.rrf_k is a tuning constant kept in the code"):
            load_config()
    assert not entry(lore_home).exists()


# ---- what changes the result validates again -----------------------------------------------

def test_a_changed_file_is_validated_again(lore_home):
    path = write_config(lore_home, "user: ada\n")
    load_miss()
    load_hit()
    path.write_text("user: bob\n", encoding="utf-8")
    s = load_miss()
    assert s.user == "bob"
    assert load_hit().user == "bob"
    path.write_text("user: bob\nsearch:\n  default_limit: 0\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="search.default_limit"):
        load_config()


def test_a_changed_variable_is_validated_again(lore_home, monkeypatch):
    write_config(lore_home, "user: ada\nembedding:\n  batch_size: 8\n")
    load_miss()
    load_hit()
    monkeypatch.setenv("LORE_USER", "bob")
    s = load_miss()
    assert s.user == "bob" and s.sources["user"] == "$LORE_USER"
    assert load_hit().sources["user"] == "$LORE_USER"
    monkeypatch.setenv("LORE_EMBEDDING_DIMENSIONS", "many")
    with pytest.raises(ConfigError, match="embedding.dimensions"):
        load_config()
    monkeypatch.setenv("LORE_EMBEDDING_DIMENSIONS", "")  # empty: unset, as the loader reads it
    monkeypatch.delenv("LORE_USER")
    s = load_miss()
    assert s.user == "ada" and s.sources["user"] == str(lore_home / "config.yaml")


def test_variables_alone_are_cached_too(lore_home, monkeypatch, tmp_path):
    lore_home.mkdir()
    monkeypatch.setenv("LORE_USER", "bob")
    monkeypatch.setenv("LORE_DB", str(tmp_path / "x.db"))
    fresh = load_miss()
    hit = load_hit()
    assert_same(hit, fresh)
    assert hit.sources == {"user": "$LORE_USER", "database": "$LORE_DB"}
    write_config(lore_home, "# a comment only\n")  # sets nothing: the same result, another text
    assert_same(load_miss(), fresh)
    monkeypatch.delenv("LORE_USER")
    monkeypatch.delenv("LORE_DB")
    nothing = load_config()  # nothing set: nothing validated, nothing read from the entry
    assert nothing._config is None and nothing._cached is None and nothing.sources == {}


def test_another_config_file_is_validated_again(lore_home, tmp_path, monkeypatch):
    write_config(lore_home, "user: ada\n")
    load_miss()
    other = tmp_path / "other.yaml"
    other.write_text("user: ada\n", encoding="utf-8")
    monkeypatch.setenv("LORE_CONFIG", str(other))
    s = load_miss()
    assert s.sources["user"] == str(other)
    assert load_hit().sources["user"] == str(other)


def test_another_version_of_lore_validates_again(lore_home, monkeypatch):
    write_config(lore_home, "user: ada\n")
    load_miss()
    monkeypatch.setattr(config_cache, "__version__", "0.0.0-other")
    load_miss()
    load_hit()


def test_a_plugin_name_no_longer_installed_is_validated_again(lore_home, monkeypatch):
    from lore import plugins

    write_config(lore_home, "embedding:\n  backend: gone\n")
    installed = plugins.BUILTIN
    builtin = {**plugins.BUILTIN, "lore.embedders": {**plugins.BUILTIN["lore.embedders"],
                                                     "gone": "gone.module:Embedder"}}
    monkeypatch.setattr(plugins, "BUILTIN", builtin)
    load_miss()
    assert load_hit().config.embedding.backend == "gone"
    monkeypatch.setattr(plugins, "BUILTIN", installed)  # the package is gone
    with pytest.raises(ConfigError, match="unknown name 'gone'"):
        load_config()


def test_the_database_folder_is_checked_on_a_hit_too(lore_home, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    write_config(lore_home, f"database: {folder / 'lore.db'}\n")
    load_miss()
    load_hit()
    folder.rmdir()
    with pytest.raises(ConfigError, match="does not exist"):
        load_config()


# ---- any doubt about the entry: validated and written again --------------------------------

def _rewritten(payload: bytes, key: str) -> bytes:
    import hashlib

    return f"{key}\n{hashlib.sha256(payload).hexdigest()}\n".encode() + payload


@pytest.mark.parametrize("corrupt", [
    lambda blob: b"",
    lambda blob: b"\x00\xff not a cache",
    lambda blob: blob[: len(blob) // 2],  # cut short
    lambda blob: blob.replace(b'"ada"', b'"eve"'),  # digest no longer matches
    lambda blob: _rewritten(b'{"values": [], "tree": {}, "sources": {}}', blob.split(b"\n")[0].decode()),
    lambda blob: _rewritten(b'{"values": {}, "tree": {}}', blob.split(b"\n")[0].decode()),
    lambda blob: _rewritten(b"[1, 2]", blob.split(b"\n")[0].decode()),
    lambda blob: _rewritten(b"not json", blob.split(b"\n")[0].decode()),
])
def test_a_corrupt_entry_is_ignored_and_written_again(lore_home, corrupt):
    write_config(lore_home, FULL.replace("user: ada", 'user: "ada"'))
    fresh = load_miss()
    good = entry(lore_home).read_bytes()
    entry(lore_home).write_bytes(corrupt(good))
    s = load_config()
    assert s._config is not None  # validated
    assert_same(s, fresh)
    assert s.user == "ada"
    assert entry(lore_home).read_bytes() == good
    assert_same(load_hit(), fresh)


def test_an_entry_that_is_a_folder_is_ignored(lore_home, run):
    write_config(lore_home, "user: ada\n")
    entry(lore_home).mkdir()
    for _ in range(2):
        s = load_miss()
        assert s.user == "ada"
    res = run("config", "--json")
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in lore_home.iterdir()) == sorted(
        [config_cache.CACHE_FILE, config_cache.KEY_FILE, "config.yaml"])  # no temporary file


SRC = Path(__file__).resolve().parents[2] / "src"
ROOT = os.geteuid() == 0


def lore(home: Path, *args: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """`lore *args` as its own process, on this source tree."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORE_")}
    env.update(LORE_HOME=str(home), HF_HUB_OFFLINE="1", LORE_WORKER_AUTOSTART="0",
               PYTHONPATH=os.pathsep.join([str(SRC), *filter(None, [env.get("PYTHONPATH")])]))
    return subprocess.run([*prefix, sys.executable, "-m", "lore", *args], capture_output=True,
                          text=True, env=env, timeout=120, check=False)


def without_root_powers() -> tuple[str, ...]:
    """File modes bind root only once it drops the capability to override them."""
    if not ROOT:
        return ()
    if not shutil.which("setpriv"):
        pytest.skip("root without setpriv ignores file modes")
    return ("setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner")


def read_only_mount(home: Path) -> tuple[str, ...]:
    """Run inside a private mount namespace where ``home`` is a read-only bind mount."""
    if not ROOT or not shutil.which("unshare"):
        pytest.skip("needs root and mount namespaces for a read-only file system")
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=1m t /mnt"],
                           capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("mount namespaces are not available")
    return ("unshare", "-m", "sh", "-c",
            f'mount --bind "{home}" "{home}" && mount -o remount,bind,ro "{home}" && exec "$@"',
            "sh")


@pytest.mark.parametrize("args", [("config",), ("config", "--json"),
                                  ("config", "--all", "--json")])
def test_config_show_prints_the_same_from_the_cache_as_after_validating(lore_home, args):
    write_config(lore_home, FULL)
    first = lore(lore_home, *args)  # validates, writes the entry
    assert first.returncode == 0, first.stderr
    assert entry(lore_home).is_file()
    second = lore(lore_home, *args)  # reads it back
    assert (second.returncode, second.stdout, second.stderr) == (0, first.stdout, first.stderr)
    entry(lore_home).unlink()
    third = lore(lore_home, *args)
    assert (third.stdout, third.stderr) == (first.stdout, first.stderr)


def test_processes_starting_together_all_read_a_whole_entry(lore_home):
    write_config(lore_home, FULL)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORE_")}
    env.update(LORE_HOME=str(lore_home), HF_HUB_OFFLINE="1", LORE_WORKER_AUTOSTART="0",
               PYTHONPATH=os.pathsep.join([str(SRC), *filter(None, [env.get("PYTHONPATH")])]))
    outputs = set()
    for _ in range(2):  # the first wave races to write the entry, the second reads it
        procs = [subprocess.Popen([sys.executable, "-m", "lore", "config", "--json"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
                 for _ in range(6)]
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            outputs.add(out)
    assert len(outputs) == 1
    assert load_hit().user == "ada"
    assert sorted(p.name for p in lore_home.iterdir()) == [
        config_cache.CACHE_FILE, config_cache.KEY_FILE, "config.yaml"]


@pytest.mark.parametrize("how", ["mode 0500", "read-only mount"])
def test_a_home_that_cannot_be_written_loses_only_the_speed(lore_home, how):
    write_config(lore_home, "user: ada\nsearch:\n  default_limit: 7\n")
    assert lore(lore_home, "status").returncode == 0  # the database exists: reading needs no write
    entry(lore_home).unlink()
    before = sorted(p.name for p in lore_home.iterdir())
    prefix = without_root_powers() if how == "mode 0500" else read_only_mount(lore_home)
    lore_home.chmod(0o500 if how == "mode 0500" else 0o700)
    try:
        for _ in range(2):
            shown = lore(lore_home, "config", "--json", prefix=prefix)
            assert shown.returncode == 0, shown.stderr
            rows = {r["key"]: (r["value"], r["source"]) for r in json.loads(shown.stdout)["settings"]}
            assert rows["user"] == ("ada", str(lore_home / "config.yaml"))
            assert rows["search.default_limit"] == (7, str(lore_home / "config.yaml"))
            assert "Traceback" not in shown.stderr
            review = lore(lore_home, "review", prefix=prefix)
            assert review.returncode == 0, review.stderr
    finally:
        lore_home.chmod(0o700)
    assert sorted(p.name for p in lore_home.iterdir()) == before  # no entry, no temporary file
    assert not entry(lore_home).exists()


def test_a_home_that_does_not_exist_is_not_created(tmp_path, lore_home, monkeypatch):
    path = tmp_path / "elsewhere.yaml"
    path.write_text("user: ada\n", encoding="utf-8")
    monkeypatch.setenv("LORE_CONFIG", str(path))
    assert load_miss().user == "ada"
    assert not lore_home.exists()


# ---- bad configs are never cached ----------------------------------------------------------

@pytest.mark.parametrize("text", [
    "search:\n  vectr_weight: 1\n",
    "search: [1, 2\n",
    'search:\n  default_limit: "ten"\n',
    "learning:\n  review_threshold: 0.9\n  active_threshold: 0.8\n",
    "- a list\n",
])
def test_a_bad_config_gives_the_same_error_every_time_and_is_never_cached(lore_home, text):
    write_config(lore_home, text)
    messages = []
    for _ in range(3):
        with pytest.raises(ConfigError) as exc:
            load_config()
        messages.append(str(exc.value))
    assert len(set(messages)) == 1 and len(messages[0].splitlines()) == 1
    assert not entry(lore_home).exists()


def test_a_bad_edit_of_a_cached_config_is_reported_and_keeps_the_old_entry(lore_home):
    path = write_config(lore_home, "user: ada\n")
    load_miss()
    good = entry(lore_home).read_bytes()
    path.write_text("user: ada\nsearch:\n  default_limit: -1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="search.default_limit"):
        load_config()
    assert entry(lore_home).read_bytes() == good
    path.write_text("user: ada\n", encoding="utf-8")
    assert load_hit().user == "ada"


def test_cli_bad_config_is_one_error_line_after_a_cached_good_one(run, lore_home):
    path = write_config(lore_home, "user: ada\n")
    assert run("config").exit_code == 0
    path.write_text('search:\n  default_limit: "ten"\n', encoding="utf-8")
    for _ in range(2):
        res = run("config")
        assert res.exit_code == 1 and res.stdout == ""
        assert res.stderr.strip() == (
            f"Error: config {path}: search.default_limit: Input should be a valid integer, "
            "unable to parse string as an integer (got 'ten')")


# ---- what is not cached -------------------------------------------------------------------

def test_a_file_that_interpolates_is_validated_every_time(lore_home, monkeypatch):
    monkeypatch.setenv("LORE_TEST_KEY", "sk-secret-one")
    write_config(lore_home, "embedding:\n  api_key: ${LORE_TEST_KEY}\nuser: ada\n")
    assert load_miss().config.embedding.api_key == "sk-secret-one"
    monkeypatch.setenv("LORE_TEST_KEY", "sk-secret-two")
    assert load_miss().config.embedding.api_key == "sk-secret-two"
    assert not entry(lore_home).exists()


@pytest.mark.parametrize(("var", "value"), [
    ("LORE_EMBEDDING_API_KEY", "sk-secret-key"),
    ("LORE_DATABASE_URL", "postgresql://lore:sk-secret-pw@db.example/lore"),
    ("LORE_EMBEDDING_BASE_URL", "https://user:sk-secret-pw@api.example/v1"),
])
def test_a_secret_from_the_environment_is_never_written(lore_home, monkeypatch, var, value):
    write_config(lore_home, "user: ada\n")
    load_miss()  # cached without the variable
    monkeypatch.setenv(var, value)
    for _ in range(2):
        load_miss()
    assert b"sk-secret" not in entry(lore_home).read_bytes()
    monkeypatch.delenv(var)
    load_hit()


def test_a_key_written_in_the_file_stays_with_the_owner(lore_home):
    write_config(lore_home, "embedding:\n  api_key: sk-in-the-file\n")
    fresh = load_miss()
    assert stat.S_IMODE(entry(lore_home).stat().st_mode) == 0o600
    assert_same(load_hit(), fresh)
    rows = {k: v for k, v, _ in effective(load_hit())}
    assert rows["embedding.api_key"] == "***file"  # masked, as validated


def test_a_comment_only_file_writes_no_entry_on_load(lore_home):
    write_config(lore_home, "# nothing set\n")
    s = load_config()
    assert s._config is None and s.user and s.db_path == lore_home / "lore.db"
    assert not entry(lore_home).exists()


def test_config_show_with_nothing_set_reads_the_defaults_back(lore_home, tmp_path):
    write_config(lore_home, "# nothing set\n")
    built = Settings(Config(), home=lore_home, config_path=lore_home / "config.yaml")
    s = load_config()
    assert not entry(lore_home).exists()
    assert effective(s) == effective(built)  # built, and stored
    assert s._config is None
    defaults_key = config_cache.key(config_cache.DEFAULTS, "", {})
    assert defaults_key and config_cache.read(lore_home, defaults_key) is not None
    again = load_config()
    assert effective(again) == effective(built)
    assert again._config is None and again.sources == {}
    again.use_database(str(tmp_path / "other.db"), "--db")
    rows = {k: (v, src) for k, v, src in effective(again)}
    assert rows["database"] == (str(tmp_path / "other.db"), "--db")
    # A config set afterwards is validated, not mistaken for the defaults.
    write_config(lore_home, "user: ada\n")
    assert load_miss().user == "ada"
    assert load_hit().user == "ada"


def test_an_explicit_path_is_validated_and_not_cached(lore_home, tmp_path):
    write_config(lore_home, "user: ada\n")
    probe = tmp_path / "probe.yaml"
    probe.write_text("user: bob\n", encoding="utf-8")
    assert load_config(probe).user == "bob"
    assert load_config(probe)._cached is None
    assert not entry(lore_home).exists()


# ---- property: a hit answers what a fresh validation answers --------------------------------

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=12)
FLOATS = st.floats(min_value=0, max_value=1e6, allow_nan=False)
UNIT = st.floats(min_value=0, max_value=1, allow_nan=False)


@st.composite
def configs(draw: st.DrawFn) -> dict[str, Any]:
    sections: dict[str, st.SearchStrategy[Any]] = {
        "user": TEXT,
        "search": st.fixed_dictionaries({}, optional={
            "default_limit": st.integers(1, 1000), "vector_weight": FLOATS,
            "fts_weight": st.floats(min_value=0, allow_nan=False),
            "anti_context": st.sampled_from(["exclude", "demote"]),
            "vector_index": st.sampled_from(["auto", "memory", "sqlite-vec"]),
            "track_usage": st.booleans(), "rrf_k": st.integers(1, 10**6),
            "recency": st.fixed_dictionaries({}, optional={
                "enabled": st.booleans(), "weight": UNIT,
                "scale_days": st.floats(min_value=0.001, max_value=1e4)})}),
        "embedding": st.fixed_dictionaries({}, optional={
            "model": TEXT, "dimensions": st.none() | st.integers(1, 8192),
            "batch_size": st.integers(1, 2048), "base_url": st.none() | TEXT}),
        "learning": st.fixed_dictionaries({}, optional={
            "silent_fixes": st.booleans(), "recent_days": st.integers(0, 400),
            "judge_threshold": st.none() | st.floats(min_value=0.01, max_value=0.99)}),
        "llm": st.fixed_dictionaries({}, optional={
            "provider": st.none() | st.sampled_from(["anthropic", "claude-cli"]),
            "timeout": st.floats(min_value=0.5, max_value=3600), "max_retries": st.integers(0, 10),
            "cost_per_mtok": st.fixed_dictionaries({"input": FLOATS, "output": FLOATS}),
            "daily_token_budget": st.none() | st.integers(0, 10**9)}),
        "analysis": st.fixed_dictionaries({}, optional={
            "threshold": st.integers(0, 100),
            "projects": st.dictionaries(TEXT.filter(bool), st.integers(0, 100), max_size=3)}),
        "schedule": st.fixed_dictionaries({}, optional={
            "transcripts": st.lists(TEXT, max_size=3), "digests": st.booleans()}),
        "tag_aliases": st.dictionaries(TEXT.filter(bool), TEXT, max_size=3),
        "known_tags": st.lists(TEXT, max_size=4),
    }
    names = draw(st.lists(st.sampled_from(sorted(sections)), min_size=1, unique=True))
    return {name: draw(sections[name]) for name in names}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=configs(), user=st.none() | st.sampled_from(["env-user", "x"]),
       dimensions=st.none() | st.integers(0, 9000).map(str) | st.just("many"))
def test_a_hit_equals_a_fresh_validation_for_any_valid_config(lore_home, monkeypatch, data, user,
                                                               dimensions):
    for var, value in (("LORE_USER", user), ("LORE_EMBEDDING_DIMENSIONS", dimensions)):
        if value is None:
            monkeypatch.delenv(var, raising=False)
        else:
            monkeypatch.setenv(var, value)
    text = yaml.safe_dump(data, allow_unicode=True)
    write_config(lore_home, text)
    entry(lore_home).unlink(missing_ok=True)
    try:
        fresh = load_config()
    except ConfigError:
        assert not entry(lore_home).exists()  # a combination the models refuse: not cached
        event("refused")
        return
    assert fresh._cached is None
    again = load_config()
    if ENV_PATTERN.search(text):  # interpolated: validated every time
        assert again._cached is None
        event("interpolated")
        return
    event("hit")
    assert again._cached is not None
    assert_same(again, fresh)
