"""The configuration's pydantic models: imported only when a config sets something (or a
command reads a setting), so commands that read none start without pydantic.

Import them from :mod:`lore.config`, which re-exports them.
"""

from __future__ import annotations

import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from lore.errors import ConfigError


def _registered(group: str, name: str) -> str:
    from lore import plugins

    if not plugins.is_known(group, name):
        known = ", ".join(sorted(plugins.available(group)))
        raise ValueError(f"unknown name '{name}'; valid: {known} (a plugin package adds more)")
    return name


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, defer_build=True)


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


def validate(merged: dict[str, Any], path: Path) -> Config:
    """The validated :class:`Config` of ``merged``; ConfigError (one line naming the key) if not."""
    try:
        return Config.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(_explain(exc, path)) from None


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
