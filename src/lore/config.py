"""Configuration: ``$LORE_HOME/config.yaml`` with ``${ENV}`` interpolation, validated on load.

Only entry points (CLI, MCP server, web app, worker) call :func:`load_config`;
everything below receives the resulting :class:`Config`.

Precedence, lowest first: built-in defaults, the YAML file, ``LORE_*`` variables.
:func:`load_config` remembers where each effective value came from for
``lore config show``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from lore.errors import ConfigError
from lore.home import is_url, lore_home, mask_url

ENV_PATTERN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _registered(group: str, name: str) -> str:
    from lore import plugins

    if not plugins.is_known(group, name):
        known = ", ".join(sorted(plugins.available(group)))
        raise ValueError(f"unknown name '{name}'; valid: {known} (a plugin package adds more)")
    return name


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class EmbeddingConfig(_Strict):
    backend: str = "fastembed"  # a name in the lore.embedders entry points
    model: str = "all-MiniLM-L6-v2"
    dimensions: int | None = Field(default=None, ge=1, le=8192)
    api_key: str | None = None
    base_url: str | None = None
    batch_size: int = Field(default=64, ge=1, le=2048)
    threads: int | None = Field(default=None, ge=1)
    cache_dir: str | None = None  # where downloaded models go (backends that download)

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        return _registered("lore.embedders", value)


class RecencyConfig(_Strict):
    enabled: bool = False
    weight: float = Field(default=0.1, ge=0, le=1)
    scale_days: float = Field(default=90.0, gt=0)


class SearchConfig(_Strict):
    default_limit: int = Field(default=10, ge=1, le=1000)
    vector_weight: float = Field(default=0.7, ge=0)
    fts_weight: float = Field(default=0.3, ge=0)
    rrf_k: int = Field(default=60, ge=1)
    candidates: int = Field(default=100, ge=1, le=10000)
    min_similarity: float = Field(default=0.2, ge=-1, le=1)
    confidence_bonus: float = Field(default=0.05, ge=0, le=1)
    usage_bonus: float = Field(default=0.05, ge=0, le=1)
    usage_saturation: int = Field(default=100, ge=1)
    title_weight: float = Field(default=3.0, ge=0)
    tags_weight: float = Field(default=2.0, ge=0)
    content_weight: float = Field(default=1.0, ge=0)
    anti_context: Literal["exclude", "demote"] = "exclude"
    anti_context_factor: float = Field(default=0.5, ge=0, le=1)
    vector_index: Literal["auto", "memory", "sqlite-vec"] = "auto"
    memory_below: int = Field(default=20000, ge=0)
    exact_below: int = Field(default=1000, ge=0)
    keyword_max_postings: int = Field(default=2500, ge=100)
    recency: RecencyConfig = Field(default_factory=RecencyConfig)
    track_usage: bool = True

    @model_validator(mode="before")
    @classmethod
    def _seed_names(cls, data: Any) -> Any:
        # Other memory tools name the same two weights hybrid_weight_semantic/keyword.
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for alias, name in (("hybrid_weight_semantic", "vector_weight"),
                            ("hybrid_weight_keyword", "fts_weight")):
            if alias in data:
                value = data.pop(alias)
                if name in data and data[name] != value:
                    raise ValueError(f"{alias} and {name} are the same setting; give one")
                data[name] = value
        return data


class ConversationsConfig(_Strict):
    """Conversation search; defaults chosen on the LoCoMo development half (docs/benchmarks.md)."""

    candidates: int = Field(default=100, ge=1, le=10000)
    keyword_weight: float = Field(default=1.0, ge=0)  # × BM25 / best BM25 of the query
    vector_weight: float = Field(default=2.0, ge=0)  # × cosine similarity (all-MiniLM-L6-v2 range)
    text_weight: float = Field(default=1.0, ge=0)  # BM25 column weights
    date_weight: float = Field(default=1.0, ge=0)
    context_weight: float = Field(default=0.3, ge=0)
    context_turns: int = Field(default=2, ge=0, le=10)  # neighbouring turns on each side
    named_speaker_bonus: float = Field(default=0.1, ge=0)
    # + session_weight × the best relevance among the candidates of the chunk's session: the
    # turns of the session that answers best come forward together (0: off)
    session_weight: float = Field(default=0.5, ge=0)
    keyword_max_postings: int = Field(default=2000, ge=100)
    decay: bool = True
    decay_weight: float = Field(default=0.3, ge=0, le=1)
    decay_scale_days: float = Field(default=90.0, gt=0)


class ContextConfig(_Strict):
    """What SessionStart injects into a new session."""

    max_chars: int = Field(default=4000, ge=200, le=10000)  # Claude Code's hard cap is 10,000
    max_items: int = Field(default=60, ge=1, le=1000)


class ApplyConfig(_Strict):
    """Where ``lore apply`` writes approved rules, and when related lessons become a skill."""

    project_file: Literal["CLAUDE.md", "CLAUDE.local.md"] = "CLAUDE.md"  # local: not checked in
    agents_md: bool = False  # also write every project rule to AGENTS.md
    global_file: bool = True  # write global rules to ~/.claude/CLAUDE.md
    skill_similarity: float = Field(default=0.3, ge=-1, le=1)  # mean embedding cosine to join a group
    skill_min_size: int = Field(default=3, ge=2, le=100)  # lessons a proposed skill needs


class ReviewConfig(_Strict):
    """The markdown review folder (``lore review export|import|sync``, docs/learning.md)."""

    folder: str | None = None  # default: <LORE_HOME>/review; e.g. ~/vault/Lore to review in Obsidian


class LearningConfig(_Strict):
    """Learning from corrections (confidence scoring and thresholds)."""

    active_threshold: float = Field(default=0.85, ge=0, le=1)  # at or above: active
    review_threshold: float = Field(default=0.5, ge=0, le=1)   # at or above: proposed for review
    detector_threshold: float | None = Field(default=None, gt=0, lt=1)  # None: the trained one
    same_rule_similarity: float = Field(default=0.86, gt=0, le=1)  # cosine: a restatement
    recent_days: int = Field(default=7, ge=0)  # reinforced this recently: +0.1
    silent_fixes: bool = True  # compare what the agent wrote with the files later
    extractor: str = "rules"  # reads the rule in a correction (entry points: lore.extractors)
    inject_proposed_min_seen: int = Field(default=2, ge=1)  # a proposed rule reaches SessionStart
    second_opinion_band: float = Field(default=0.2, ge=0, le=1)  # |p - threshold|: ask llm
    # With a language model configured (llm.provider), the judge decides what is a lesson; the
    # detector only passes it the messages at or above judge_threshold (None: the shipped one).
    judge: bool = True
    judge_threshold: float | None = Field(default=None, gt=0, lt=1)

    @field_validator("extractor")
    @classmethod
    def _known_extractor(cls, value: str) -> str:
        return _registered("lore.extractors", value)

    @model_validator(mode="after")
    def _ordered(self) -> LearningConfig:
        if self.review_threshold > self.active_threshold:
            raise ValueError("learning.review_threshold must not exceed learning.active_threshold")
        return self


class AnalysisConfig(_Strict):
    """Learning from the work itself (docs/analysis.md): when a session's changes are analysed."""

    threshold: int = Field(default=5, ge=0, le=100)  # significance score at or above: analysed
    projects: dict[str, int] = Field(default_factory=dict)  # a project's folder: its own threshold
    session_end: bool = True  # analyse each session's work when it ends (in the worker)
    session_learnings: bool = True  # the session pass over its transcript at its end (model or patterns)
    # A learned lesson's related patterns become graph edges to lessons at least this close
    # (cosine of the pattern's name as a query with the lesson), besides those whose title names it.
    related_similarity: float = Field(default=0.45, ge=0.0, le=1.0)

    @field_validator("projects")
    @classmethod
    def _thresholds(cls, value: dict[str, int]) -> dict[str, int]:
        for path, threshold in value.items():
            if not 0 <= threshold <= 100:
                raise ValueError(f"analysis.projects[{path!r}] must be between 0 and 100")
        return value

    def threshold_for(self, project: str | None) -> int:
        """The threshold of the project folder ``project`` (the closest configured folder above it)."""
        if project:
            best: tuple[int, int] | None = None
            target = project.rstrip("/") + "/"
            for path, threshold in self.projects.items():
                root = os.path.expanduser(path).rstrip("/") + "/"
                if target.startswith(root) and (best is None or len(root) > best[0]):
                    best = (len(root), threshold)
            if best is not None:
                return best[1]
        return self.threshold


class ScheduleConfig(_Strict):
    """What `lore serve` runs on its own (docs/server.md): cron expressions in the server's
    local time; None: never."""

    analysis: str | None = None  # e.g. "0 3 * * *": ingest, learn, rescore, write the digests
    transcripts: list[str] = Field(default_factory=list)  # folders; none: Claude Code's and Codex's
    digests: bool = True  # write digests/<week>.md and digests/<month>.md into the home

    @field_validator("analysis")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = " ".join(value.split())
        check_cron(value)
        return value


def check_cron(expression: str) -> None:
    """Raise ValueError unless ``expression`` is a five-field cron expression."""
    if len(expression.split()) != 5:
        raise ValueError("a cron expression has five fields: minute hour day-of-month month "
                         "day-of-week, e.g. \"0 3 * * *\"")
    try:
        from cronsim import CronSim, CronSimError
    except ImportError:  # checked again when the server, which needs it, starts
        return
    try:
        CronSim(expression, datetime.now())
    except CronSimError as exc:
        raise ValueError(f"not a valid cron expression ({exc})") from None


class LLMCostConfig(_Strict):
    """Prices in US dollars per million tokens, for the cost budget and the log."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)


class LLMConfig(_Strict):
    """The optional language model (docs/llm.md). No provider: Lore never calls a model."""

    provider: str | None = None  # anthropic | openai | claude-cli | an installed plugin's name
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None  # the NAME of the variable holding the key, never the key
    timeout: float = Field(default=60.0, gt=0, le=3600)  # seconds per attempt
    max_retries: int = Field(default=3, ge=0, le=10)
    max_input_tokens: int = Field(default=8000, ge=100)  # longer prompts are cut (estimate)
    daily_token_budget: int | None = Field(default=200_000, ge=0)  # per provider; None: no limit
    cost_per_mtok: LLMCostConfig | None = None
    daily_cost_budget: float | None = Field(default=None, ge=0)  # US dollars per provider

    @model_validator(mode="after")
    def _key_is_a_name(self) -> LLMConfig:
        if self.api_key_env is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.api_key_env):
            raise ValueError("llm.api_key_env is the NAME of an environment variable holding the key "
                             "(e.g. ANTHROPIC_API_KEY), not the key itself")
        return self


class SyncConfig(_Strict):
    """`lore sync`: the server this home syncs with (docs/server.md)."""

    server: str | None = None  # http(s)://host:port of a `lore serve`
    token_file: str | None = None  # a file (mode 0600) holding the token; LORE_SYNC_TOKEN wins
    batch_size: int = Field(default=500, ge=1, le=1000)  # records per pushed batch
    timeout: float = Field(default=30.0, gt=0, le=600)  # seconds per request

    @field_validator("server")
    @classmethod
    def _http(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"https?://[^/\s]+", value):
            raise ValueError("sync.server must be an http:// or https:// URL, e.g. "
                             "http://192.168.1.10:8420")
        return value


class Config(_Strict):
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    learning: LearningConfig = Field(default_factory=LearningConfig)
    context: ContextConfig = Field(default_factory=ContextConfig)
    apply: ApplyConfig = Field(default_factory=ApplyConfig)
    review: ReviewConfig = Field(default_factory=ReviewConfig)
    search: SearchConfig = Field(default_factory=SearchConfig)
    conversations: ConversationsConfig = Field(default_factory=ConversationsConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    analysis: AnalysisConfig = Field(default_factory=AnalysisConfig)
    sync: SyncConfig = Field(default_factory=SyncConfig)
    schedule: ScheduleConfig = Field(default_factory=ScheduleConfig)
    tag_aliases: dict[str, str] = Field(default_factory=dict)
    known_tags: list[str] = Field(default_factory=list)
    database: str | None = None  # the database file (or a store plugin's URL); default $LORE_HOME/lore.db
    user: str | None = None  # who writes (stamped on rows, owns personal lessons); default: the OS login


# Tuning constants: values chosen by measurement, each by the benchmark named beside it (the
# figures are in docs/benchmarks.md), not settings a person is expected to set. They stay
# readable from config.yaml so a measurement can vary them, and an existing file that sets one
# keeps working (with a one-line notice), but `lore admin init` and `lore config show` leave
# them out (`lore config show --all` lists them).
SEARCH_BENCH = "bench/search_bench.py"
LOCOMO_BENCH = "bench/locomo_explore.py"
TUNING: dict[str, str] = {
    **{f"search.{k}": SEARCH_BENCH for k in (
        "vector_weight", "fts_weight", "rrf_k", "candidates", "min_similarity",
        "confidence_bonus", "usage_bonus", "usage_saturation", "title_weight", "tags_weight",
        "content_weight", "anti_context_factor", "recency.weight", "recency.scale_days")},
    "search.vector_index": "bench/scale_bench.py",
    "search.memory_below": "bench/scale_bench.py",
    "search.exact_below": "bench/scale_bench.py",
    "search.keyword_max_postings": "bench/scale_bench.py",
    **{f"conversations.{k}": LOCOMO_BENCH for k in (
        "candidates", "keyword_weight", "vector_weight", "text_weight", "date_weight",
        "context_weight", "context_turns", "named_speaker_bonus", "decay_weight",
        "decay_scale_days")},
    "conversations.session_weight": "bench/locomo_loco.py",
    "conversations.keyword_max_postings": "bench/scale_bench.py",
    "learning.detector_threshold": "bench/train_detector.py",
    "learning.judge_threshold": "bench/judge_filter.py",
    "learning.same_rule_similarity": "bench/detector_bench.py",
    "learning.recent_days": "bench/learning_curve.py",
    "learning.inject_proposed_min_seen": "bench/learning_curve.py",
    "learning.second_opinion_band": "bench/detector_bench.py",
    "apply.skill_similarity": "bench/apply_bench.py",
    "apply.skill_min_size": "bench/apply_bench.py",
    "analysis.related_similarity": "bench/significance_bench.py",
    "embedding.batch_size": "bench/conversation_bench.py",
    "sync.batch_size": "bench/sync_bench.py",
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


@dataclass(slots=True)
class Settings:
    """The validated config plus the paths and the origin of every value."""

    config: Config
    home: Path
    config_path: Path
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def tuned(self) -> list[str]:
        """Tuning constants (``TUNING``) this config file or environment sets."""
        return sorted(k for k in self.sources if k in TUNING)

    @property
    def db_path(self) -> Path:
        """The database file (a URL's database has none: its location is ``db_location``)."""
        if self.config.database and not is_url(self.config.database):
            return Path(self.config.database).expanduser()
        return self.home / "lore.db"

    @property
    def db_is_url(self) -> bool:
        return is_url(self.config.database)

    @property
    def review_folder(self) -> Path:
        """The markdown review folder: ``review.folder``, else ``review`` in the home."""
        folder = self.config.review.folder
        return Path(folder).expanduser() if folder else self.home / "review"

    @property
    def db_location(self) -> str:
        """Where the store lives as given: a file path, or a backend's URL (``scheme://…``)."""
        db = self.config.database
        return db if db and is_url(db) else str(self.db_path)

    @property
    def db_shown(self) -> str:
        """The database location for people to read: a URL's password masked."""
        return mask_url(self.db_location)

    @property
    def user(self) -> str:
        """Who writes: config ``user`` (or $LORE_USER), else the OS login."""
        if self.config.user:
            return self.config.user
        import getpass

        try:
            return getpass.getuser()
        except (KeyError, OSError):
            return "unknown"


def config_file() -> Path:
    env = os.environ.get("LORE_CONFIG")
    return Path(env).expanduser() if env else lore_home() / "config.yaml"


def load_config(path: Path | None = None) -> Settings:
    """Read, interpolate and validate the config; raise ConfigError naming the bad key."""
    home = lore_home()
    path = path or config_file()
    raw: dict[str, Any] = {}
    try:
        exists = path.exists()
    except OSError as exc:  # a home without read permission
        raise ConfigError(f"cannot read config {path}: {exc.strerror}; check the permissions "
                          f"of {path.parent} (ls -ld)") from None
    if exists:
        raw = _read_yaml(path)
    raw = _interpolate(raw, path)
    merged, sources = _merge(raw, path)
    try:
        config = Config.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(_explain(exc, path)) from None
    settings = Settings(config=config, home=home, config_path=path, sources=sources)
    check_database_path(settings)
    return settings


def check_database_path(settings: Settings) -> None:
    """A database path that was configured (config file, $LORE_DB, --db) must sit in an
    existing folder: a typo must not create folders and an empty database somewhere.
    Only the default home is created on first use."""
    if not settings.config.database or settings.db_is_url:
        return
    folder = settings.db_path.parent
    if folder.is_dir():
        return
    source = settings.sources.get("database", "config")
    where = source if source.startswith(("$", "--")) else f"config {source}: database"
    what = "is a file, not a folder" if folder.exists() else "does not exist"
    raise ConfigError(f"{where} is {settings.config.database!r}, whose folder {folder} {what}; "
                      "fix the path or create the folder")


def default_settings(home: Path | None = None) -> Settings:
    """Defaults only: for tests and for code that must not read the user's file."""
    home = home or lore_home()
    return Settings(config=Config(), home=home, config_path=home / "config.yaml")


def effective(settings: Settings, *, tuning: bool = False) -> list[tuple[str, Any, str]]:
    """(dotted key, value, where it came from) for every leaf of the effective config: the
    settings a person sets, and with ``tuning`` the tuning constants too (those the config sets
    are always listed)."""
    rows: list[tuple[str, Any, str]] = []
    for key, value in _flatten(settings.config.model_dump()).items():
        if key in TUNING and not tuning and key not in settings.sources:
            continue
        rows.append((key, _mask(key, value), settings.sources.get(key, "default")))
    return rows


def _read_yaml(path: Path) -> dict[str, Any]:
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror or exc}") from None
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


def _explain(exc: ValidationError, path: Path) -> str:
    err = exc.errors()[0]
    loc = [str(p) for p in err["loc"]]
    dotted = ".".join(loc) or "(top level)"
    if err["type"] == "extra_forbidden":
        section = _section_model(loc[:-1])
        valid = ", ".join(sorted(section.model_fields)) if section else ""
        return f"config {path}: unknown key '{dotted}' (valid keys here: {valid})"
    got = err.get("input")
    shown = f" (got {got!r})" if got is not None and not isinstance(got, dict) else ""
    return f"config {path}: {dotted}: {err['msg']}{shown}"


def _section_model(loc: list[str]) -> type[BaseModel] | None:
    model: type[BaseModel] = Config
    for part in loc:
        info = model.model_fields.get(part)
        annotation = info.annotation if info else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    return model


def _mask(key: str, value: Any) -> Any:
    if key.endswith("api_key") and value:
        return "***" + str(value)[-4:]
    if key == "database" and isinstance(value, str):
        return mask_url(value)
    return value
