"""Configuration: ``$LORE_HOME/config.yaml`` with ``${ENV}`` interpolation, validated on load
when it sets something (else built, all defaults, on first read: see :class:`Settings`).

Only entry points (CLI, MCP server, web app, worker) call :func:`load_config`;
everything below receives the resulting :class:`Config`.

Precedence, lowest first: built-in defaults, the YAML file, ``LORE_*`` variables.
:func:`load_config` remembers where each effective value came from for
``lore config``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.errors import ConfigError
from lore.home import is_url, lore_home, mask_url

if TYPE_CHECKING:
    from lore.config_cache import Cached
    from lore.config_models import (
        Config,
    )

# The pydantic models live in lore.config_models and are imported on first use: a command that
# reads no setting, with nothing configured, never imports pydantic.
_MODELS = frozenset({
    "AnalysisConfig", "ApplyConfig", "Config", "ContextConfig", "ConversationsConfig",
    "EmbeddingConfig", "LearningConfig", "LLMConfig", "LLMCostConfig", "RecencyConfig",
    "ReviewConfig", "ScheduleConfig", "SearchConfig", "SyncConfig", "check_cron",
})


def __getattr__(name: str) -> Any:
    if name in _MODELS:
        from lore import config_models

        return getattr(config_models, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


ENV_PATTERN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


# Tuning constants: values chosen by measurement. They live in the code beside the code that
# uses them, each field naming the benchmark (bench/...) that chose it and the page with its
# figures (lore.tuning). They are not settings: config.yaml cannot set them (the loader refuses
# one in one line, as it refuses an unknown key), `lore admin init` and `lore config` leave
# them out (`lore config --all` lists them). Each is known by the config key it once had,
# here with the place it lives now; a measurement varies one through Settings.tuning.
_SEARCH = "lore.recall.hybrid.SearchTuning"
_CONVERSATIONS = "lore.recall.conversations.ConversationTuning"
_LEARNING = "lore.core.learner.LearningTuning"
TUNING: dict[str, str] = {
    **{f"search.{k}": f"{_SEARCH}.{k}" for k in (
        "vector_weight", "fts_weight", "rrf_k", "candidates", "min_similarity",
        "confidence_bonus", "usage_bonus", "usage_saturation", "title_weight", "tags_weight",
        "content_weight", "anti_context_factor", "vector_index", "memory_below", "exact_below",
        "keyword_max_postings")},
    "search.recency.weight": f"{_SEARCH}.recency_weight",
    "search.recency.scale_days": f"{_SEARCH}.recency_scale_days",
    **{f"conversations.{k}": f"{_CONVERSATIONS}.{k}" for k in (
        "candidates", "keyword_weight", "vector_weight", "text_weight", "date_weight",
        "context_weight", "context_turns", "named_speaker_bonus", "session_weight",
        "keyword_max_postings", "length_weight", "length_cap_words", "question_penalty",
        "decay_weight", "decay_scale_days", "rerank_candidates")},
    **{f"learning.{k}": f"{_LEARNING}.{k}" for k in (
        "detector_threshold", "judge_threshold", "same_rule_similarity", "recent_days",
        "second_opinion_band")},
    "learning.inject_proposed_min_seen":
        "lore.apply.session_context.ContextTuning.inject_proposed_min_seen",
    "apply.skill_similarity": "lore.apply.skills.SkillTuning.skill_similarity",
    "apply.skill_min_size": "lore.apply.skills.SkillTuning.skill_min_size",
    "analysis.related_similarity": "lore.core.analyzer.AnalysisTuning.related_similarity",
}


# Environment variables that override config keys.
ENV_KEYS: dict[str, str] = {
    "LORE_DATABASE_URL": "database",
    "LORE_DB": "database",  # after the URL: the more specific of the two wins, as --db does
    "LORE_USER": "user",
    "LORE_EMBEDDING_BACKEND": "embedding.backend",
    "LORE_EMBEDDING_MODEL": "embedding.model",
    "LORE_EMBEDDING_DIMENSIONS": "embedding.dimensions",
    "LORE_EMBEDDING_BASE_URL": "embedding.base_url",
    "LORE_EMBEDDING_API_KEY": "embedding.api_key",
    "LORE_MODEL_CACHE": "embedding.cache_dir",
    "LORE_SYNC_SERVER": "sync.server",
}


class Settings:
    """The config plus the paths and the origin of every value.

    The :class:`Config` is validated when ``load_config`` finds something set (a key in the
    file, a ``LORE_*`` variable); with nothing set it is built (all defaults) on first access
    of ``config``, and the paths and the user answer without it. From the validated cache
    (``cached``, :mod:`lore.config_cache`) it is built on first access too, and the settings
    read below answer from the cached values.
    """

    __slots__ = ("_config", "_cached", "_database", "home", "config_path", "sources", "tuning")

    def __init__(self, config: Config | None = None, *, home: Path, config_path: Path,
                 sources: dict[str, str] | None = None,
                 tuning: dict[str, Any] | None = None, cached: Cached | None = None) -> None:
        self._config = config
        self._cached = None if config is not None else cached
        self._database: str | None = None  # use_database before the config is built
        self.home = home
        self.config_path = config_path
        self.sources: dict[str, str] = dict(sources or {})
        # Overrides of tuning constants by name (a key of TUNING): what a measurement varies
        # (never config.yaml); lore.tuning.tuned applies and checks them.
        self.tuning: dict[str, Any] = dict(tuning or {})

    def __repr__(self) -> str:
        return f"Settings(home={self.home!r}, config_path={self.config_path!r})"

    @property
    def config(self) -> Config:
        """The validated config (defaults only, built now, when nothing was set)."""
        if self._config is None:
            if self._cached is not None:
                self._config = self._cached.build()
            else:
                from lore.config_models import Config

                self._config = Config()
            if self._database is not None:
                self._config.database = self._database
        return self._config

    @config.setter
    def config(self, value: Config) -> None:
        self._config = value

    @property
    def built(self) -> bool:
        """The config models were built (or given): reading ``config`` costs nothing more."""
        return self._config is not None

    def use_database(self, location: str, source: str) -> None:
        """Point at another database (``--db``), without building the config if not built."""
        if self._config is None:
            self._database = location
        else:
            self._config.database = location
        self.sources["database"] = source

    def _get(self, section: str, key: str | None = None) -> Any:
        """A setting's value without building the config when nothing was set (then None: the
        default of every setting read this way, but a database given to ``use_database``)."""
        if self._config is None:
            if self._cached is None or (section == "database" and self._database is not None):
                return self._database if section == "database" else None
            value = self._cached.values[section]
            return value[key] if key else value
        value = getattr(self._config, section)
        return getattr(value, key) if key else value

    def section(self, name: str) -> Any:
        """A section's plain values (a dict) from the cache, or the built model, without
        building the config; None when nothing was set (the section's defaults apply)."""
        return self._get(name)

    def dump(self) -> dict[str, Any]:
        """The effective config as plain values (``Config.model_dump()``), from the cached
        values when the config was not built (with nothing set: the defaults' cache entry)."""
        if self._config is None:
            from lore import config_cache

            cached = self._cached or config_cache.defaults(self.home)
            values: dict[str, Any] = json.loads(json.dumps(cached.values))
            if self._database is not None:
                values["database"] = self._database
            return values
        return self.config.model_dump()

    @property
    def database(self) -> str | None:
        """The configured ``database`` (file path or URL), None for the default."""
        value: str | None = self._get("database")
        return value

    @property
    def llm_provider(self) -> str | None:
        """The language model's provider (``llm.provider``); None: Lore never calls a model."""
        value: str | None = self._get("llm", "provider")
        return value

    @property
    def db_path(self) -> Path:
        """The database file (a URL's database has none: its location is ``db_location``)."""
        db = self.database
        if db and not is_url(db):
            return Path(db).expanduser()
        return self.home / "lore.db"

    @property
    def db_is_url(self) -> bool:
        return is_url(self.database)

    @property
    def review_folder(self) -> Path:
        """The markdown review folder: ``review.folder``, else ``review`` in the home."""
        folder = self._get("review", "folder")
        return Path(folder).expanduser() if folder else self.home / "review"

    @property
    def db_location(self) -> str:
        """Where the store lives as given: a file path, or a backend's URL (``scheme://…``)."""
        db = self.database
        return db if db and is_url(db) else str(self.db_path)

    @property
    def db_shown(self) -> str:
        """The database location for people to read: a URL's password masked."""
        return mask_url(self.db_location)

    @property
    def user(self) -> str:
        """Who writes: config ``user`` (or $LORE_USER), else the OS login."""
        configured: str | None = self._get("user")
        if configured:
            return configured
        import getpass

        try:
            return getpass.getuser()
        except (KeyError, OSError):
            return "unknown"


def config_file() -> Path:
    env = os.environ.get("LORE_CONFIG")
    return Path(env).expanduser() if env else lore_home() / "config.yaml"


def load_config(path: Path | None = None) -> Settings:
    """Read, interpolate and validate the config; raise ConfigError naming the bad key.

    With nothing set (no file, a file of comments only, no ``LORE_*`` variable naming a key)
    nothing is validated now: ``Settings.config`` builds the defaults on first access.
    The user's config (``path`` not given: the file and the ``LORE_*`` variables), validated
    once, is read back from the validated cache until the file or a variable changes
    (:mod:`lore.config_cache`)."""
    home = lore_home()
    cache = path is None  # a file given by path (a probe of a change) is only validated
    path = path or config_file()
    cache_key = None
    raw: dict[str, Any] = {}
    try:
        exists = path.exists()
    except OSError as exc:  # a home without read permission
        raise ConfigError(f"cannot read config {path}: {exc.strerror}; check the permissions "
                          f"of {path.parent} (ls -ld)") from None
    text = _read_text(path) if exists else ""
    file_sets = not _sets_nothing(text)
    env = {var: os.environ.get(var) or None for var in ENV_KEYS}
    if cache and (file_sets or any(env.values())):
        from lore import config_cache

        if config_cache.cacheable(text, env, ENV_PATTERN):
            cache_key = config_cache.key(path, text, env)
        hit = config_cache.read(home, cache_key) if cache_key else None
        if hit is not None:
            settings = Settings(home=home, config_path=path, sources=hit.sources, cached=hit)
            check_database_path(settings)
            return settings
    if file_sets:
        raw = _parse_yaml(text, path)
    raw = _interpolate(raw, path)
    merged, sources = _merge(raw, path)
    refuse_tuning(merged, path)
    config = None
    if merged:
        from lore.config_models import validate

        config = validate(merged, path)
    settings = Settings(config, home=home, config_path=path, sources=sources)
    check_database_path(settings)
    if cache_key and config is not None:
        from lore import config_cache

        config_cache.write(home, cache_key, config, sources)
    return settings


def check_database_path(settings: Settings) -> None:
    """A database path that was configured (config file, $LORE_DB, --db) must sit in an
    existing folder: a typo must not create folders and an empty database somewhere.
    Only the default home is created on first use."""
    if not settings.database or settings.db_is_url:
        return
    folder = settings.db_path.parent
    if folder.is_dir():
        return
    source = settings.sources.get("database", "config")
    where = source if source.startswith(("$", "--")) else f"config {source}: database"
    what = "is a file, not a folder" if folder.exists() else "does not exist"
    raise ConfigError(f"{where} is {settings.database!r}, whose folder {folder} {what}; "
                      "fix the path or create the folder")


def default_settings(home: Path | None = None) -> Settings:
    """Defaults only: for tests and for code that must not read the user's file."""
    home = home or lore_home()
    return Settings(home=home, config_path=home / "config.yaml")


def effective(settings: Settings) -> list[tuple[str, Any, str]]:
    """(dotted key, value, where it came from) for every leaf of the effective config: the
    settings a person sets (the tuning constants are in the code: lore.tuning)."""
    return [(key, _mask(key, value), settings.sources.get(key, "default"))
            for key, value in _flatten(settings.dump()).items()]


def _read_text(path: Path) -> str:
    """The config's text, read only when the file may steer Lore (:mod:`lore.trusted`: a
    regular file of the user or root, in a folder others cannot write); ConfigError otherwise."""
    from lore import trusted

    try:
        raw = trusted.read(str(path), trusted.CONFIG_BYTES, "config", follow=True)
    except trusted.Untrusted as exc:
        raise ConfigError(str(exc)) from None
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror or exc}") from None
    if raw is None:
        return ""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config {path} is not UTF-8 text (byte {exc.start}); save it as "
                          "UTF-8") from None


def _parse_yaml(text: str, path: Path) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise ConfigError(f"config {path}{where} is not valid YAML; fix or delete it") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config {path} must be a mapping of keys, not a {type(data).__name__}")
    return data


def _sets_nothing(text: str) -> bool:
    """A file of comments and blank lines only (what `lore admin init` writes): read without
    YAML. Only plain lines count (spaces, then ``#`` and printable text): anything else, a
    tab or a lone ``---`` included, goes to the YAML parser."""
    for line in text.split("\n"):
        line = line.removesuffix("\r").lstrip(" ")
        if line and not (line.startswith("#") and line.isprintable()):
            return False
    return True


def _interpolate(value: Any, path: Path) -> Any:
    if isinstance(value, dict):
        return {k: _interpolate(v, path) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolate(v, path) for v in value]
    if isinstance(value, str):
        # Shell semantics: ${VAR:-default} also applies the default when VAR is empty.
        return ENV_PATTERN.sub(lambda m: os.environ.get(m.group(1)) or m.group(2) or "", value)
    return value


SEED_NAMES = {"search.hybrid_weight_semantic": "search.vector_weight",
              "search.hybrid_weight_keyword": "search.fts_weight"}


def _drop_nulls(data: Any) -> Any:
    """A key left empty (a section whose entries are all commented out) means the default."""
    if isinstance(data, dict):
        return {k: _drop_nulls(v) for k, v in data.items() if v is not None}
    return data


def _merge(raw: dict[str, Any], path: Path) -> tuple[dict[str, Any], dict[str, str]]:
    raw = _drop_nulls(raw)
    merged: dict[str, Any] = {k: (dict(v) if isinstance(v, dict) else v) for k, v in raw.items()}
    sources = {SEED_NAMES.get(key, key): str(path) for key in _flatten(raw)}
    for var, dotted in ENV_KEYS.items():
        value = os.environ.get(var)
        if value is None or value == "":
            continue
        section, _, leaf = dotted.partition(".")
        if leaf:
            target = merged.setdefault(section, {})
            if not isinstance(target, dict):
                continue  # the validator reports the bad section
            target[leaf] = value
        else:
            merged[section] = value
        sources[dotted] = f"${var}"
    return merged, sources


def refuse_tuning(merged: dict[str, Any], path: Path) -> None:
    """A tuning constant (a key of TUNING, or a seed name of one) is not a setting: ConfigError,
    one line naming where it lives, as for an unknown key."""
    for key in (*TUNING, *SEED_NAMES):
        *sections, leaf = key.split(".")
        node: Any = merged
        for section in sections:
            node = node.get(section) if isinstance(node, dict) else None
        if isinstance(node, dict) and leaf in node:
            name = SEED_NAMES.get(key, key)
            raise ConfigError(f"config {path}: {key} is a tuning constant kept in the code "
                              f"({TUNING[name]}), not a setting; remove it "
                              "(docs/configuration.md#tuning-constants)")


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        # tag_aliases is a free-form mapping: one value, not a section.
        if isinstance(value, dict) and value and dotted not in ("tag_aliases",):
            out.update(_flatten(value, dotted + "."))
        else:
            out[dotted] = value
    return out


def _mask(key: str, value: Any) -> Any:
    if key.endswith("api_key") and value:
        return "***" + str(value)[-4:]
    if key == "database" and isinstance(value, str):
        return mask_url(value)
    return value
