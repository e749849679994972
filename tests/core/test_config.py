"""config.yaml: defaults, ${ENV} interpolation, strict validation, LORE_* overrides, sources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FakeEmbedder, make_settings
from lore.api import Lore
from lore.config import Config, config_file, effective, load_config
from lore.errors import ConfigError


def write_config(home: Path, text: str) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def rows(settings) -> dict[str, tuple[object, str]]:
    """Every setting and every tuning constant: (value, source)."""
    from lore.api import tuning_constants

    out = {k: (v, src) for k, v, src in effective(settings)}
    out.update({r["key"]: (r["value"], r["source"]) for r in tuning_constants(settings)})
    return out


# ---- loading ---------------------------------------------------------------------------

def test_defaults_when_no_file(lore_home):
    assert not (lore_home / "config.yaml").exists()
    s = load_config()
    assert s.config == Config()
    assert s.home == lore_home
    assert s.config_path == lore_home / "config.yaml"
    assert s.db_path == lore_home / "lore.db"
    assert s.config.search.default_limit == 10
    assert s.config.embedding.model == "all-MiniLM-L6-v2"
    r = rows(s)
    assert all(src == "default" for _, src in r.values())
    assert {"search.recency.enabled", "embedding.model", "tag_aliases", "database"} <= set(r)


def test_empty_file_means_defaults(lore_home):
    write_config(lore_home, "# nothing yet\n")
    assert load_config().config == Config()


def test_values_from_the_file(lore_home):
    path = write_config(lore_home, """
search:
  default_limit: 25
  anti_context: demote
  recency:
    enabled: true
embedding:
  batch_size: 16
known_tags: [auth, deps]
""")
    s = load_config()
    assert s.config.search.default_limit == 25
    assert s.config.search.anti_context == "demote"
    assert s.config.search.recency.enabled is True
    assert rows(s)["search.recency.weight"] == (0.1, "default")  # a constant, in the code
    assert s.config.embedding.batch_size == 16
    assert s.config.known_tags == ["auth", "deps"]
    r = rows(s)
    assert r["search.default_limit"] == (25, str(path))
    assert r["search.recency.enabled"] == (True, str(path))
    assert r["search.recency.weight"] == (0.1, "default")
    assert r["search.fts_weight"] == (0.3, "default")


def test_lore_config_variable_picks_another_file(lore_home, tmp_path, monkeypatch):
    write_config(lore_home, "search:\n  default_limit: 5\n")
    other = tmp_path / "elsewhere.yaml"
    other.write_text("search:\n  default_limit: 7\n", encoding="utf-8")
    monkeypatch.setenv("LORE_CONFIG", str(other))
    assert config_file() == other
    s = load_config()
    assert s.config_path == other and s.config.search.default_limit == 7


def test_env_interpolation(lore_home, monkeypatch):
    monkeypatch.setenv("LORE_TEST_LIMIT", "42")
    monkeypatch.setenv("LORE_TEST_HOST", "models.internal")
    monkeypatch.setenv("LORE_TEST_KEY", "sk-live-abcdef123456")
    monkeypatch.delenv("LORE_TEST_UNSET", raising=False)
    write_config(lore_home, """
search:
  default_limit: ${LORE_TEST_LIMIT}
embedding:
  model: ${LORE_TEST_UNSET:-bge-small-en-v1.5}
  base_url: "https://${LORE_TEST_HOST:-localhost}:8443/v1"
  api_key: ${LORE_TEST_KEY}
tag_aliases:
  js: ${LORE_TEST_UNSET:-javascript}
""")
    c = load_config().config
    assert c.search.default_limit == 42
    assert c.embedding.model == "bge-small-en-v1.5"
    assert c.embedding.base_url == "https://models.internal:8443/v1"
    assert c.embedding.api_key == "sk-live-abcdef123456"
    assert c.tag_aliases == {"js": "javascript"}


def test_unset_variable_without_default_is_empty(lore_home, monkeypatch):
    monkeypatch.delenv("LORE_TEST_UNSET", raising=False)
    write_config(lore_home, 'embedding:\n  base_url: "x${LORE_TEST_UNSET}y"\n')
    assert load_config().config.embedding.base_url == "xy"


def test_empty_variable_falls_back_to_default(lore_home, monkeypatch):
    monkeypatch.setenv("LORE_TEST_EMPTY", "")
    write_config(lore_home, "search:\n  default_limit: ${LORE_TEST_EMPTY:-12}\n")
    assert load_config().config.search.default_limit == 12


# ---- validation ------------------------------------------------------------------------

def test_unknown_top_level_key(lore_home):
    path = write_config(lore_home, "colour: red\n")
    with pytest.raises(ConfigError) as exc:
        load_config()
    msg = str(exc.value)
    assert "'colour'" in msg and str(path) in msg
    for valid in ("database", "embedding", "known_tags", "search", "tag_aliases"):
        assert valid in msg


def test_unknown_nested_key_names_the_dotted_key(lore_home):
    write_config(lore_home, "search:\n  vectr_weight: 0.9\n")
    with pytest.raises(ConfigError) as exc:
        load_config()
    msg = str(exc.value)
    assert "'search.vectr_weight'" in msg
    valid = msg.split("valid keys here:", 1)[1]
    for key in ("default_limit", "recency", "anti_context"):
        assert key in valid
    assert "embedding" not in valid  # the keys of *this* section


def test_unknown_key_two_levels_down(lore_home):
    write_config(lore_home, "search:\n  recency:\n    half_life: 3\n")
    with pytest.raises(ConfigError) as exc:
        load_config()
    msg = str(exc.value)
    assert "'search.recency.half_life'" in msg
    assert "valid keys here: enabled" in msg


@pytest.mark.parametrize(("yaml_text", "key", "shown"), [
    ('search:\n  default_limit: "ten"\n', "search.default_limit", "'ten'"),
    ("search:\n  default_limit: 0\n", "search.default_limit", "0"),
    ("search:\n  anti_context: hide\n", "search.anti_context", "'hide'"),
    ("embedding:\n  backend: torch\n", "embedding.backend", "'torch'"),
    ("known_tags: auth\n", "known_tags", "'auth'"),
    ("search: 5\n", "search", "5"),
])
def test_wrong_type_names_the_key(lore_home, yaml_text, key, shown):
    write_config(lore_home, yaml_text)
    with pytest.raises(ConfigError) as exc:
        load_config()
    msg = str(exc.value)
    assert f": {key}: " in msg
    assert shown in msg


@pytest.mark.parametrize(("yaml_text", "expect"), [
    ("search: [1, 2\n", "not valid YAML"),
    ("search:\n  default_limit: 5\n bad indent: x\n", "not valid YAML"),
    ("- a\n- b\n", "mapping"),
    ("just a string\n", "mapping"),
])
def test_invalid_yaml_and_non_mapping(lore_home, yaml_text, expect):
    path = write_config(lore_home, yaml_text)
    with pytest.raises(ConfigError, match=expect) as exc:
        load_config()
    assert str(path) in str(exc.value)


@pytest.mark.parametrize(("yaml_text", "key", "lives"), [
    ("search:\n  hybrid_weight_semantic: 0.6\n", "search.hybrid_weight_semantic",
     "lore.recall.hybrid.SearchTuning.vector_weight"),
    ("search:\n  rrf_k: 30\n  default_limit: 5\n", "search.rrf_k",
     "lore.recall.hybrid.SearchTuning.rrf_k"),
    ("search:\n  recency:\n    enabled: true\n    weight: 0.2\n", "search.recency.weight",
     "lore.recall.hybrid.SearchTuning.recency_weight"),
    ("learning:\n  recent_days: 3\n", "learning.recent_days",
     "lore.core.learner.LearningTuning.recent_days"),
])
def test_a_tuning_key_in_config_yaml_is_refused_in_one_line(lore_home, yaml_text, key, lives):
    path = write_config(lore_home, yaml_text)
    with pytest.raises(ConfigError) as exc:
        load_config()
    assert str(exc.value) == (f"config {path}: {key} is a tuning constant kept in the code "
                              f"({lives}), not a setting; remove it "
                              "(docs/configuration.md#tuning-constants)")


@pytest.mark.parametrize("yaml_text", [
    "search:\n  vectr_weight: 1\n",
    "search: [1, 2\n",
    'search:\n  default_limit: "ten"\n',
])
def test_cli_invalid_config_is_one_error_line(run, lore_home, yaml_text):
    write_config(lore_home, yaml_text)
    res = run("recall", "values", "tags")
    assert res.exit_code == 1
    assert res.stdout == ""
    err = res.stderr.strip()
    assert err.startswith("Error:") and len(err.splitlines()) == 1
    assert "Traceback" not in res.output
    assert str(lore_home / "config.yaml") in err
    assert not (lore_home / "lore.db").exists()  # refused before touching the database


def test_cli_tag_aliases_from_config(run, lore_home):
    write_config(lore_home, "tag_aliases:\n  js: javascript\n")
    res = run("learn", "add", "Prefer const", "const over let", "--tag", "JS", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["tags"] == ["javascript"]
    res = run("recall", "values", "tags", "--json")
    assert json.loads(res.stdout) == ["javascript"]


def test_empty_section_means_defaults(lore_home):
    write_config(lore_home, "embedding:\n  # api_key: ${OPENAI_API_KEY}\n"
                            "search:\n  default_limit: 5\n")
    c = load_config().config
    assert c.embedding == Config().embedding and c.search.default_limit == 5


# ---- settings a person sets, and tuning constants ----------------------------------------

ROOT = Path(__file__).resolve().parents[2]


def rooms():
    from lore.apply.session_context import CONTEXT
    from lore.apply.skills import SKILLS
    from lore.core.analyzer import ANALYSIS
    from lore.core.learner import LEARNING
    from lore.recall.conversations import CONVERSATIONS
    from lore.recall.hybrid import SEARCH

    return (SEARCH, CONVERSATIONS, LEARNING, CONTEXT, SKILLS, ANALYSIS)


def headings(page: Path) -> set[str]:
    return {line.lstrip("#").strip() for line in page.read_text().splitlines()
            if line.startswith("#")}


def test_every_tuning_constant_lives_in_the_code_and_names_what_chose_it():
    import dataclasses

    from lore.config import TUNING, Config, _flatten
    from lore.tuning import keys_of, location

    named = {}
    for default in rooms():
        cls = type(default)
        assert dataclasses.fields(default) and cls.__dataclass_params__.frozen
        keys = keys_of(cls)
        assert sorted(keys.values()) == sorted(f.name for f in dataclasses.fields(default))
        named.update({key: f"{location(cls)}.{field}" for key, field in keys.items()})
        for f in dataclasses.fields(default):
            by = f.metadata["by"]
            assert not by.script or (ROOT / by.script).is_file(), by
            page, _, heading = by.figures.partition("#")
            assert heading in headings(ROOT / page), by.figures
    assert named == TUNING  # every former key has a home, and every constant a name
    assert not set(TUNING) & set(_flatten(Config().model_dump()))  # none is a setting any more
    assert len(_flatten(Config().model_dump())) <= 50  # what a person sets stays a short list
    benchmarks = (ROOT / "docs" / "benchmarks.md").read_text()
    assert all(f"`{key}`" in benchmarks for key in TUNING)  # each named where its figures are


def test_defaults_are_the_values_the_code_had():
    """The constants moved, their values did not (search and conversation results unchanged)."""
    from lore.recall.conversations import CONVERSATIONS
    from lore.recall.hybrid import SEARCH

    assert (SEARCH.vector_weight, SEARCH.fts_weight, SEARCH.rrf_k, SEARCH.candidates,
            SEARCH.min_similarity, SEARCH.title_weight, SEARCH.keyword_max_postings,
            SEARCH.recency_weight, SEARCH.recency_scale_days) == (0.7, 0.3, 60, 100, 0.2, 3.0,
                                                                  2500, 0.1, 90.0)
    assert (CONVERSATIONS.vector_weight, CONVERSATIONS.session_weight,
            CONVERSATIONS.context_turns, CONVERSATIONS.decay_weight) == (2.0, 0.5, 2, 0.3)


def test_a_measurement_override_reaches_each_room(lore_home):
    from lore.core.learner import LEARNING
    from lore.recall.hybrid import SEARCH

    s = make_settings(lore_home, tuning={"search.rrf_k": 30, "search.recency.weight": 0.2,
                                         "learning.recent_days": 3})
    with Lore.open(s, embedder=FakeEmbedder()) as lore:
        search = lore.engine.tuned(SEARCH)
        assert (search.rrf_k, search.recency_weight, search.vector_weight) == (30, 0.2, 0.7)
        assert lore.learning.tuning.recent_days == 3
        assert lore.engine.tuned(LEARNING).same_rule_similarity == 0.86
    r = rows(s)
    assert r["search.rrf_k"] == (30, "tuning") and r["search.fts_weight"] == (0.3, "default")


def test_the_cli_refuses_a_tuning_key_in_one_line_and_changes_nothing(lore_home, run):
    write_config(lore_home, "search:\n  rrf_k: 30\nconversations:\n  session_weight: 0.4\n")
    for args in (["config"], ["learn", "add", "Use uv", "not pip"]):
        res = run(*args)
        assert res.exit_code == 1, res.output
        assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.output
        assert "is a tuning constant kept in the code" in res.stderr
    assert not (lore_home / "lore.db").exists()


@pytest.mark.parametrize(("override", "expect"), [
    ({"search.rrf_k": 0}, "search.rrf_k must be at least 1 (got 0)"),
    ({"search.rrf_k": "fast"}, "search.rrf_k must be a whole number (got 'fast')"),
    ({"search.vector_index": "disk"}, "search.vector_index must be one of auto, memory, sqlite-vec"),
    ({"conversations.decay_weight": 2}, "conversations.decay_weight must be at most 1"),
    ({"learning.detector_threshold": True}, "learning.detector_threshold must be a number"),
])
def test_a_bad_override_is_one_line_and_changes_nothing(lore_home, override, expect):
    s = make_settings(lore_home, tuning=override)
    with pytest.raises(ConfigError) as exc:
        Lore.open(s, embedder=FakeEmbedder())
    assert str(exc.value).startswith(f"tuning: {expect}")
    assert "\n" not in str(exc.value)
    assert not (lore_home / "lore.db").exists() or _lessons(lore_home) == 0


def _lessons(home: Path) -> int:
    import sqlite3

    with sqlite3.connect(home / "lore.db") as db:
        return db.execute("SELECT count(*) FROM lessons").fetchone()[0]


def test_a_measurement_varies_a_constant_through_the_same_path():
    from lore.errors import ConfigError
    from lore.recall.hybrid import SEARCH
    from lore.tuning import replace, tuned

    assert tuned(SEARCH, {"search.rrf_k": 20}).rrf_k == 20
    assert tuned(SEARCH, {"search.candidates": 50}).candidates == 50
    assert tuned(SEARCH, {"conversations.candidates": 50}) is SEARCH  # another room's
    assert replace(SEARCH, {"min_similarity": 0}).min_similarity == 0.0
    with pytest.raises(ConfigError, match="^tuning: unknown tuning constant 'lore.recall.hybrid"
                                          ".SearchTuning.rrf'"):
        replace(SEARCH, {"rrf": 20})
    with pytest.raises(ConfigError, match="^tuning: search.usage_saturation must be at least 1"):
        tuned(SEARCH, {"search.usage_saturation": 0})
    assert SEARCH.rrf_k == 60  # the defaults never change


@given(st.one_of(st.integers(), st.floats(allow_nan=False), st.text(max_size=5), st.booleans(),
                 st.none()))
def test_any_override_is_applied_exactly_or_refused_in_one_line(value):
    from lore.errors import ConfigError
    from lore.recall.conversations import CONVERSATIONS
    from lore.tuning import tuned

    try:
        got = tuned(CONVERSATIONS, {"conversations.decay_weight": value}).decay_weight
    except ConfigError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("tuning: conversations.decay_weight ")
    else:
        assert not isinstance(value, bool) and 0 <= value <= 1 and got == value


def test_config_show_lists_constants_only_when_asked_or_set(lore_home, run):
    shown = json.loads(run("config", "--json").stdout)
    keys = {row["key"] for row in shown["settings"]}
    assert "search.default_limit" in keys and "search.rrf_k" not in keys and shown["tuning"] == []
    every = json.loads(run("config", "--all", "--json").stdout)
    tuning = {row["key"]: row for row in every["tuning"]}
    assert tuning["search.rrf_k"] == {
        "key": "search.rrf_k", "value": 60, "source": "default",
        "lives_in": "lore.recall.hybrid.SearchTuning.rrf_k", "bench": "bench/search_bench.py",
        "figures": "docs/benchmarks.md#Results (2026-11-23)"}
    assert tuning["apply.skill_min_size"]["bench"] is None  # set by hand: said so
    from lore.config import TUNING

    assert set(tuning) == set(TUNING)
    table = run("config", "--all")
    assert table.exit_code == 0 and "SearchTuning.rrf_k" in table.stdout


def test_admin_init_writes_no_tuning_constant(lore_home, run):
    import yaml

    from lore.config import TUNING, _flatten

    assert run("admin", "init").exit_code == 0
    text = (lore_home / "config.yaml").read_text()
    written = yaml.safe_load(text) or {}
    assert not set(_flatten(written)) & set(TUNING)
    import re

    from lore.config import Config

    shown = set(re.findall(r"^#\s+(\w+):", text, re.MULTILINE))  # the commented-out keys
    settings = {k.rsplit(".", 1)[-1] for k in _flatten(Config().model_dump())}
    assert shown and not shown & ({k.rsplit(".", 1)[-1] for k in TUNING} - settings)


# ---- nothing set: no validation, no pydantic, no YAML ------------------------------------

SRC = Path(__file__).resolve().parents[2] / "src"
# Runs one CLI command in a fresh interpreter and prints, last, which of the heavy imports it made.
PROBE = """
import runpy, sys
sys.argv = ["lore", *sys.argv[1:]]
try:
    runpy.run_module("lore", run_name="__main__")
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print("IMPORTED", sorted(m for m in ("pydantic", "yaml", "lore.config_models") if m in sys.modules))
print("EXIT", code)
"""


def probe(*args: str) -> tuple[list[str], str, str]:
    """(the heavy modules a `lore *args` process imported, its exit code, its stderr)."""
    import ast
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(SRC), *filter(None, [os.environ.get("PYTHONPATH")])])}
    res = subprocess.run([sys.executable, "-c", PROBE, *args], env=env, capture_output=True,
                         text=True, timeout=120, check=False)
    lines = res.stdout.splitlines()
    imported = ast.literal_eval(lines[-2].removeprefix("IMPORTED "))
    return imported, lines[-1].removeprefix("EXIT "), res.stderr


@pytest.mark.parametrize("command", [("review",), ("status",)])
def test_commands_reading_no_setting_import_neither_pydantic_nor_yaml(lore_home, command):
    imported, code, err = probe(*command)  # a fresh home: no file, no database yet
    assert code in ("0", "None"), err
    assert imported == []
    assert (lore_home / "lore.db").exists()  # the command did its work


def test_the_file_admin_init_writes_keeps_the_fast_path_and_loads_to_the_defaults(lore_home):
    import yaml

    imported, code, err = probe("admin", "init")
    assert code in ("0", "None"), err
    text = (lore_home / "config.yaml").read_text(encoding="utf-8")
    assert all(not line.strip() or line.startswith("#") for line in text.splitlines())
    assert yaml.safe_load(text) is None  # valid YAML: uncommenting keys gives a config
    s = load_config()
    assert s.sources == {} and s.config == Config()
    for command in (("review",), ("status",), ("worker", "status")):
        imported, code, err = probe(*command)
        assert imported == [], command
    # Uncommenting a key (and its section) sets it.
    (lore_home / "config.yaml").write_text(
        text.replace("# search:", "search:").replace("#   default_limit: 10", "  default_limit: 7"),
        encoding="utf-8")
    assert load_config().config.search.default_limit == 7


@pytest.mark.parametrize("command", [("review",), ("status",), ("config",)])
def test_an_unchanged_config_is_read_back_without_pydantic_or_yaml(lore_home, command):
    write_config(lore_home, "user: bob\nsearch:\n  default_limit: 7\n")
    imported, code, err = probe(*command)  # validates, and keeps the result
    assert code in ("0", "None"), err
    assert imported == ["lore.config_models", "pydantic", "yaml"]
    imported, code, err_again = probe(*command)
    assert code in ("0", "None"), err_again
    assert imported == []  # answered from the validated cache
    assert err_again == err


def test_config_show_with_nothing_set_reads_the_defaults_back(lore_home):
    lore_home.mkdir()
    imported, code, err = probe("config")  # builds the defaults, and keeps them
    assert code in ("0", "None"), err
    assert imported == ["lore.config_models", "pydantic"]
    imported, code, err = probe("config")
    assert code in ("0", "None"), err
    assert imported == []


@pytest.mark.parametrize("command", [("review",), ("status",), ("worker", "status")])
def test_a_set_key_is_still_validated_eagerly_with_the_same_error_line(lore_home, command):
    path = write_config(lore_home, 'search:\n  default_limit: "ten"\n')
    imported, code, err = probe(*command)
    assert code == "1"
    line = err.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in err
    assert line == f"Error: config {path}: search.default_limit: Input should be a valid integer, " \
                   "unable to parse string as an integer (got 'ten')"
    assert not (lore_home / "lore.db").exists()


def test_a_variable_naming_a_key_is_validated_eagerly(lore_home, monkeypatch):
    monkeypatch.setenv("LORE_EMBEDDING_DIMENSIONS", "many")
    with pytest.raises(ConfigError, match="embedding.dimensions"):
        load_config()
    monkeypatch.setenv("LORE_EMBEDDING_DIMENSIONS", "384")
    assert load_config().config.embedding.dimensions == 384


def test_settings_answer_without_building_the_config_when_nothing_is_set(lore_home):
    write_config(lore_home, "# only a comment\n\n   # and an indented one\n")
    s = load_config()
    assert s.db_path == lore_home / "lore.db" and not s.db_is_url
    assert s.db_location == s.db_shown == str(lore_home / "lore.db")
    assert s.review_folder == lore_home / "review"
    assert s.user and s.llm_provider is None
    assert s._config is None  # nothing built so far
    assert s.config == Config()  # built on first access, once
    assert s.config is s.config


def test_settings_read_the_validated_config_when_a_key_is_set(lore_home, tmp_path):
    write_config(lore_home, f"database: {tmp_path / 'x.db'}\nuser: ada\n"
                            "review:\n  folder: ~/vault\nllm:\n  provider: claude-cli\n")
    s = load_config()
    assert s._config is not None  # validated when loaded
    assert s.db_path == tmp_path / "x.db" and s.user == "ada"
    assert s.review_folder == Path("~/vault").expanduser() and s.llm_provider == "claude-cli"


def test_every_model_is_importable_from_lore_config():
    import lore.config
    import lore.config_models

    for name in lore.config._MODELS:
        assert getattr(lore.config, name) is getattr(lore.config_models, name)
    with pytest.raises(AttributeError):
        lore.config.NoSuchConfig  # noqa: B018


@given(st.lists(st.one_of(
    st.just(""), st.text(" \t", max_size=3),
    st.builds(lambda pad, body: pad + "#" + body, st.text(" \t", max_size=3),
              st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)),
    st.sampled_from(["search:", "  default_limit: 5", "---", "x: 1 # note", "[1, 2"]),
), max_size=8))
def test_comment_only_files_are_read_as_yaml_reads_them(lines):
    import yaml

    from lore.config import _sets_nothing

    text = "\n".join(lines)
    if _sets_nothing(text):
        assert yaml.safe_load(text) is None
    if _sets_nothing(text + "\r\n"):
        assert yaml.safe_load(text + "\r\n") is None


def test_a_database_given_on_the_command_line_needs_no_config(lore_home, tmp_path):
    s = load_config()
    s.use_database(str(tmp_path / "other.db"), "--db")
    assert s.db_path == tmp_path / "other.db" and s.sources["database"] == "--db"
    assert s._config is None
    assert s.config.database == str(tmp_path / "other.db")  # kept when the config is built
    s.use_database(str(tmp_path / "third.db"), "--db")
    assert s.config.database == str(tmp_path / "third.db") and s.db_path == tmp_path / "third.db"
    imported, code, err = probe("--db", str(tmp_path / "cli.db"), "status")
    assert code in ("0", "None"), err
    assert imported == [] and (tmp_path / "cli.db").exists()
    imported, code, err = probe("--db", str(tmp_path / "missing" / "x.db"), "status")
    assert code == "1" and "does not exist" in err and len(err.strip().splitlines()) == 1


def test_the_embedding_defaults_status_assumes_without_the_models_are_the_models_defaults():
    # `lore status` with nothing configured names the configured model without building the
    # config: it must name the same model the built config would.
    from lore.config_models import EmbeddingConfig
    from lore.embed import DEFAULT_MODEL

    defaults = EmbeddingConfig()
    assert (defaults.backend, defaults.model, defaults.dimensions) == ("fastembed", DEFAULT_MODEL,
                                                                        None)
