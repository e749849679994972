"""A second opinion on a user message the correction detector is unsure of."""

from __future__ import annotations

from importlib.resources import files
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from lore.llm.base import Provider, Request
from lore.llm.jsonreply import complete_json

MAX_TOKENS = 300  # the answer is one small object; a cap keeps a rambling model cheap


class SecondOpinion(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    label: Literal["correction", "preference", "none"]
    durable: bool
    confidence: float = Field(ge=0, le=1)
    rule: str | None = None
    reason: str = ""

    @field_validator("label", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("rule", mode="before")
    @classmethod
    def _blank_is_none(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in ("", "null", "none", "n/a"):
            return None
        return value.strip() if isinstance(value, str) else value


def prompt(name: str) -> str:
    """A prompt shipped in ``lore/llm/prompts/<name>.md``."""
    return (files("lore.llm") / "prompts" / f"{name}.md").read_text(encoding="utf-8")


def second_opinion(provider: Provider, message: str, agent_turn: str | None) -> SecondOpinion:
    """Label ``message`` (correction, preference or none) given the agent turn it answers."""
    before = agent_turn.strip() if agent_turn and agent_turn.strip() else "(no earlier assistant turn)"
    text = (f"<assistant_turn>\n{before}\n</assistant_turn>\n\n"
            f"<user_message>\n{message.strip()}\n</user_message>")
    request = Request.ask(text, system=prompt("second_opinion"), max_tokens=MAX_TOKENS, temperature=0.0,
                          purpose="second_opinion")
    return complete_json(provider, request, SecondOpinion)
