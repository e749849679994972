"""Re-ranking conversation search results with a language model (opt-in).

The search's own order (words and meaning) misses turns that answer by inference, and
questions whose answer is spread over several sessions. A model reads the query and the
search's best candidates, numbered in the search's order, and names the ones that help,
most useful first. What it names comes first; every other candidate keeps its place after
them, so a short or partly unreadable reply still leaves a full list.

One request a search, built here exactly as it is sent (each excerpt redacted and cut), so
``lore eval locomo --rerank-prompts`` writes what a model would read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lore.errors import UnusableReply
from lore.llm.base import (
    Built,
    Provider,
    Request,
    cut_middle,
    neutral,
    tag_pattern,
)
from lore.llm.jsonreply import extract_json, listed
from lore.llm.opinion import prompt
from lore.redact import redact

PURPOSE = "rerank"
EXCERPT_CHARS = 600    # a longer chunk keeps its beginning and its end
QUERY_CHARS = 1000
REPLY_TOKENS_BASE = 40
REPLY_TOKENS_PER_PICK = 6
RETRIES = 1  # someone waits for the search: one retry of a passing failure, then its own order
_TAG = tag_pattern("query", "excerpts", "excerpt")


@dataclass(frozen=True, slots=True)
class Excerpt:
    """One candidate: ``key`` is the caller's reference (a chunk id), returned in the order."""

    key: int
    text: str
    date: str | None = None
    speakers: str = ""


@dataclass(frozen=True, slots=True)
class RerankRequest(Built):
    keys: tuple[int, ...]  # excerpt n (1-based) -> keys[n - 1]
    pick: int


def _attr(value: str) -> str:
    return " ".join(value.replace('"', "'").split())


def build(query: str, excerpts: Sequence[Excerpt], pick: int) -> RerankRequest:
    """The request for ``query`` over ``excerpts`` (in the search's order), asking for at
    most ``pick`` of them."""
    if not excerpts:
        raise ValueError("nothing to re-rank")
    pick = max(1, min(pick, len(excerpts)))
    blocks = []
    for n, ex in enumerate(excerpts, 1):
        attrs = f' n="{n}"'
        if ex.date:
            attrs += f' date="{_attr(ex.date[:10])}"'
        if ex.speakers.strip():
            attrs += f' speaker="{_attr(ex.speakers)}"'
        text = neutral(cut_middle(redact(ex.text.strip()), EXCERPT_CHARS), _TAG)
        blocks.append(f"<excerpt{attrs}>\n{text}\n</excerpt>\n")
    asked = neutral(cut_middle(redact(query.strip()), QUERY_CHARS), _TAG)
    user = (f"<query>\n{asked}\n</query>\n\nPick at most {pick} of the {len(excerpts)} "
            f"excerpts.\n\n<excerpts>\n" + "".join(blocks) + "</excerpts>\n")
    request = Request.ask(user, system=prompt("rerank"), temperature=0.0, purpose=PURPOSE,
                          max_tokens=REPLY_TOKENS_BASE + REPLY_TOKENS_PER_PICK * pick,
                          max_retries=RETRIES)
    return RerankRequest(request, tuple(ex.key for ex in excerpts), pick)


def parse(text: str, rr: RerankRequest) -> list[int]:
    """The keys the reply names, most useful first: numbers outside the request, repeats and
    anything past ``pick`` are left out. ValueError when the reply holds no usable JSON."""
    picked: list[int] = []
    for item in listed(extract_json(text), ("ranking", "excerpts", "picked", "order", "results")):
        if isinstance(item, bool):
            continue
        if isinstance(item, str):
            try:
                item = int(item.strip())
            except ValueError:
                continue
        if isinstance(item, float) and item.is_integer():
            item = int(item)
        if not isinstance(item, int) or not 1 <= item <= len(rr.keys):
            continue
        key = rr.keys[item - 1]
        if key not in picked:
            picked.append(key)
        if len(picked) == rr.pick:
            break
    return picked


def order(keys: Sequence[int], picked: Sequence[int]) -> list[int]:
    """``picked`` first, then every other key in its original order."""
    chosen = set(picked)
    return list(picked) + [k for k in keys if k not in chosen]


def rerank(provider: Provider, query: str, excerpts: Sequence[Excerpt], pick: int) -> list[int]:
    """Every excerpt's key, the model's picks first. Provider errors and budget refusals
    propagate; UnusableReply when the reply cannot be read."""
    rr = build(query, excerpts, pick)
    completion = provider.complete(rr.request)
    try:
        picked = parse(completion.text, rr)
    except ValueError as exc:
        raise UnusableReply(f"{provider.name}: the re-ranking reply could not be read ({exc})") from None
    return order(rr.keys, picked)
