"""Backends from other packages, found through entry points without editing Lore: a store
chosen by the database URL's scheme, an embedder by ``embedding.backend``, an extractor by
``learning.extractor``. The plugin package here is real: a module and its dist-info on the path."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from lore import plugins
from lore.api import Lore
from lore.config import Config, Settings
from lore.errors import ConfigError

PLUGIN = '''
import hashlib
import re

import numpy as np

from lore.extract.shapes import Extracted
from lore.store.sqlite import SQLiteStore


class FileURLStore(SQLiteStore):
    """SQLite behind a URL: shows a store found by its scheme (``lorefile:///path``)."""

    @classmethod
    def open(cls, location, *, create=True):
        return super().open(str(location).removeprefix("lorefile://"), create=create)


class WordsEmbedder:
    name = "words-64"
    dimensions = 64

    def __init__(self, cfg):
        self.cfg = cfg

    def _vec(self, text):
        v = np.zeros(64, dtype=np.float32)
        for w in re.findall(r"\\w+", text.lower()):
            v[int(hashlib.md5(w.encode()).hexdigest(), 16) % 64] += 1.0
        v[0] += 1e-3
        return v / np.linalg.norm(v)

    def embed_documents(self, texts):
        return np.vstack([self._vec(t) for t in texts]) if texts else np.zeros((0, 64))

    def embed_query(self, text):
        return self._vec(text)


class ShoutingExtractor:
    name = "shouting"

    def extract(self, message, proposal=None):
        text = " ".join(message.split())
        if not text:
            return None
        return Extracted(title=text.upper()[:90], rule=text, rejected=None, preferred=None,
                         reasoning=None, context=None, shape="plugin", kind="preference",
                         scope_hint=None)
'''


@pytest.fixture
def plugin_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    (site / "lore_example_plugin.py").write_text(PLUGIN)
    info = site / "lore_example_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: lore-example-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent("""\
        [lore.stores]
        lorefile = lore_example_plugin:FileURLStore

        [lore.embedders]
        words = lore_example_plugin:WordsEmbedder

        [lore.extractors]
        shouting = lore_example_plugin:ShoutingExtractor
        """))
    monkeypatch.syspath_prepend(str(site))
    return site


def test_third_party_backends_are_found_and_used(plugin_package, lore_home, tmp_path):
    assert {"lorefile", "sqlite"} <= set(plugins.available("lore.stores"))
    db = tmp_path / "plugin.db"
    config = Config.model_validate({"database": f"lorefile://{db}",
                                    "embedding": {"backend": "words"},
                                    "learning": {"extractor": "shouting"}})
    settings = Settings(config=config, home=lore_home, config_path=lore_home / "config.yaml")
    with Lore.open(settings) as lore:
        assert type(lore.store).__name__ == "FileURLStore"
        lesson = lore.lessons.add("Use file sessions", "not Redis, for the session store")
        assert lore.search.query("session store", track=False)[0].id == lesson.id
        assert lore.admin.stored_model() == ("words-64", 64)
        out = lore.learning.record("always run the linter before committing")
        assert out.lesson is not None and out.lesson.title == "ALWAYS RUN THE LINTER BEFORE COMMITTING"
    assert db.is_file()  # the plugin's store wrote where its URL pointed


def test_an_unknown_backend_names_the_valid_ones(lore_home):
    with pytest.raises(ConfigError, match="unknown database backend 'nosuch'; valid: .*sqlite"):
        plugins.load("lore.stores", "nosuch", "database backend")
    with pytest.raises(Exception, match="unknown name 'nosuch'; valid: .*fastembed"):
        Config.model_validate({"embedding": {"backend": "nosuch"}})


def test_the_built_in_table_is_what_pyproject_declares():
    """Every group, language-model providers included, is found one way: the table names what
    Lore's own package metadata registers, so a checkout without that metadata finds the same."""
    import tomllib

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    declared = tomllib.loads(pyproject.read_text())["project"]["entry-points"]
    assert set(plugins.GROUPS) == set(declared) == set(plugins.BUILTIN)
    for group in plugins.GROUPS:
        assert plugins.BUILTIN[group] == declared[group], group


def test_providers_load_like_every_backend_without_package_metadata(monkeypatch):
    from lore.llm import registry

    monkeypatch.setattr(plugins, "entry_points", lambda group: [])  # a bare source checkout
    assert registry.factory("claude-cli").__name__ == "ClaudeCliProvider"
    assert set(registry.installed()) == {"anthropic", "openai", "claude-cli"}
    with pytest.raises(ConfigError, match=r"^unknown llm.provider 'gemini' \(installed: "
                                          r"anthropic, claude-cli, openai\)$"):
        registry.factory("gemini")


def test_a_provider_entry_that_is_not_callable_is_a_config_error(plugin_package, monkeypatch):
    from lore.llm import registry

    info = plugin_package / "lore_example_plugin-1.0.dist-info" / "entry_points.txt"
    info.write_text(info.read_text() + "\n[lore.llm_providers]\nconstant = lore_constant:NAME\n")
    (plugin_package / "lore_constant.py").write_text("NAME = 'not a factory'\n")
    with pytest.raises(ConfigError, match="^llm.provider 'constant': lore_constant:NAME is not "
                                          "a provider factory$"):
        registry.factory("constant")
    sys.modules.pop("lore_constant", None)
