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
    cache_dir: str | None = None  # downloaded models, and the packaged model's optimised graph

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        return _registered("lore.embedders", value)


class RecencyConfig(_Strict):
    enabled: bool = False  # its weight and scale: lore.recall.hybrid.SearchTuning


class SearchConfig(_Strict):
    """Lesson search. Its weights are tuning constants: lore.recall.hybrid.SearchTuning."""

    default_limit: int = Field(default=10, ge=1, le=1000)
    anti_context: Literal["exclude", "demote"] = "exclude"
    recency: RecencyConfig = Field(default_factory=RecencyConfig)
    track_usage: bool = True


class ConversationsConfig(_Strict):
    """Conversation search. Its weights are tuning constants chosen on the LoCoMo development
    half: lore.recall.conversations.ConversationTuning."""

    decay: bool = True
    # A language model (llm.provider) re-orders the search's best candidates: about 2,500 input
    # tokens and one model call a search (seconds, not milliseconds). docs/conversations.md.
    rerank: bool = False


class ContextConfig(_Strict):
    """What SessionStart injects into a new session."""

    max_chars: int = Field(default=4000, ge=200, le=10000)  # Claude Code's hard cap is 10,000
    max_items: int = Field(default=60, ge=1, le=1000)


class ApplyConfig(_Strict):
    """Where ``lore apply`` writes approved rules, and when related lessons become a skill."""

    project_file: Literal["CLAUDE.md", "CLAUDE.local.md"] = "CLAUDE.md"  # local: not checked in
    agents_md: bool = False  # also write every project rule to AGENTS.md
    global_file: bool = True  # write global rules to ~/.claude/CLAUDE.md


class ReviewConfig(_Strict):
    """The markdown review folder (``lore review sync [--only import|export]``, docs/learning.md)."""

    folder: str | None = None  # default: <LORE_HOME>/review; e.g. ~/vault/Lore to review in Obsidian


class LearningConfig(_Strict):
    """Learning from corrections: the thresholds a person sets (the detector's and the
    learner's constants: lore.core.learner.LearningTuning)."""

    active_threshold: float = Field(default=0.85, ge=0, le=1)  # at or above: active
    review_threshold: float = Field(default=0.5, ge=0, le=1)   # at or above: proposed for review
    silent_fixes: bool = True  # compare what the agent wrote with the files later
    extractor: str = "rules"  # reads the rule in a correction (entry points: lore.extractors)
    # With a language model configured (llm.provider), the judge decides what is a lesson (the
    # detector's thresholds are tuning constants: lore.core.learner.LearningTuning).
    judge: bool = True

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
    timeout: float = Field(default=60.0, gt=0, le=3600)  # seconds per attempt; a call ≤ 2× this
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

    @model_validator(mode="after")
    def _rerank_needs_a_model(self) -> Config:
        if self.conversations.rerank and not self.llm.provider:
            raise ValueError("conversations.rerank needs a language model: set llm.provider "
                             "(see docs/llm.md)")
        return self


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
    msg = err["msg"].removeprefix("Value error, ")  # a validator's own message says enough
    if not loc:  # a rule across sections: its message names the keys
        return f"config {path}: {msg}"
    return f"config {path}: {dotted}: {msg}{shown}"


def _section_model(loc: list[str]) -> type[BaseModel] | None:
    model: type[BaseModel] = Config
    for part in loc:
        info = model.model_fields.get(part)
        annotation = info.annotation if info else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    return model
