"""Structured answers from free text: find the JSON, mend the usual slips, validate, retry.

Models wrap JSON in code fences, put prose around it, leave trailing commas, use
single quotes or Python's True/None. :func:`extract_json` takes the first complete
JSON object or array out of such a reply. :func:`complete_json` validates it with a
pydantic model and, when that fails, asks again showing the model its error.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from lore.errors import UnusableReply
from lore.llm.base import MAX_DEPTH, Message, Provider, Request, TooDeep, loads

M = TypeVar("M", bound=BaseModel)

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_OPENERS = {"{": "}", "[": "]"}
_BARE = {"True": "true", "False": "false", "None": "null"}
MAX_STARTS = 20  # candidate openings tried before giving up on a reply


class NoJSON(ValueError):
    """The reply holds no complete JSON value; the message says why, for the model to read."""


def extract_json(text: str) -> Any:
    """The first JSON object or array in ``text`` (fenced blocks first), mended if needed."""
    if not text or not text.strip():
        raise NoJSON("the reply was empty")
    sources = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    truncated = False
    for source in sources:
        starts = [i for i, ch in enumerate(source) if ch in _OPENERS][:MAX_STARTS]
        for start in starts:
            span = _balanced(source, start)
            if span is None:
                truncated = True
                continue
            value = _loads(source[start:span])
            if value is not _FAILED:
                return value
    if truncated:
        raise NoJSON("the JSON was not closed (the reply looks cut off); reply with the whole object")
    raise NoJSON("no JSON object or array was found in the reply")


_FAILED = object()


def _balanced(text: str, start: int) -> int | None:
    """Index just past the bracket closing the one at ``start``, skipping strings; None if open.
    NoJSON when the brackets nest deeper than :data:`lore.llm.base.MAX_DEPTH`."""
    stack: list[str] = []
    quote = ""
    i = start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'" and not (ch == "'" and _apostrophe(text, i)):
            quote = ch
        elif ch in _OPENERS:
            stack.append(_OPENERS[ch])
            if len(stack) > MAX_DEPTH:
                raise NoJSON(f"the JSON is nested deeper than {MAX_DEPTH} levels; reply with a "
                             "flat object")
        elif ch in "}]":
            if not stack or stack.pop() != ch:
                return None
            if not stack:
                return i + 1
        i += 1
    return None


def _apostrophe(text: str, i: int) -> bool:
    """A ' between two letters (don't, it's) outside any string is not a quote."""
    return 0 < i < len(text) - 1 and text[i - 1].isalpha() and text[i + 1].isalpha()


def _loads(candidate: str) -> Any:
    for attempt in (candidate, _mend(candidate)):
        try:
            return loads(attempt)
        except TooDeep as exc:
            raise NoJSON(f"{exc}; reply with a flat object") from None
        except ValueError:
            continue
    return _FAILED


def _mend(text: str) -> str:
    """Trailing commas dropped, 'single-quoted' strings and True/False/None made JSON.

    Walks the text once, keeping track of strings, so nothing inside a string changes.
    """
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            end = _string_end(text, i, '"')
            out.append(text[i:end])
            i = end
        elif ch == "'":
            end = _string_end(text, i, "'")
            body = text[i + 1:end - 1].replace("\\'", "'")
            out.append(json.dumps(body))
            i = end
        elif ch == ",":
            rest = text[i + 1:].lstrip()
            if not rest.startswith(("}", "]")):
                out.append(ch)
            i += 1
        elif ch.isalpha():
            word = re.match(r"[A-Za-z_]+", text[i:])
            assert word
            out.append(_BARE.get(word.group(0), word.group(0)))
            i += len(word.group(0))
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _string_end(text: str, start: int, quote: str) -> int:
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == quote:
            return i + 1
        i += 1
    return len(text)


def listed(value: Any, names: tuple[str, ...], single: str | None = None) -> list[Any]:
    """The list a reply's JSON gives: the JSON itself, or the first of ``names`` its object
    holds (the object alone, when it has the key ``single``); ValueError in one line otherwise."""
    if isinstance(value, list):
        return value
    if not isinstance(value, dict):
        raise ValueError("the reply's JSON is neither an object nor a list")
    for name in names:
        if isinstance(value.get(name), list):
            return list(value[name])
    if single is not None and single in value:
        return [value]
    raise ValueError(f'the reply\'s JSON object has no "{names[0]}" list')


def parse_reply(text: str, schema: type[M]) -> M:
    """Extract and validate; ValueError with a short reason the model can act on."""
    value = extract_json(text)
    try:
        return schema.model_validate(value)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}"
                             for e in exc.errors()[:5])
        raise ValueError(f"the JSON did not match the expected shape ({problems})") from None


def complete_json(provider: Provider, request: Request, schema: type[M], *, retries: int = 2) -> M:
    """Ask, parse, validate; on failure ask again (up to ``retries`` times) showing the error."""
    reason = ""
    for _ in range(retries + 1):
        completion = provider.complete(request)
        try:
            return parse_reply(completion.text, schema)
        except ValueError as exc:
            reason = str(exc)
        request = replace(request, messages=request.messages + (
            Message("assistant", completion.text[-2000:] or "(empty)"),
            Message("user", f"Your reply could not be used: {reason}. Reply again with only the JSON, "
                            "no prose and no code fence."),
        ))
    raise UnusableReply(f"{provider.name}: no usable JSON after {retries + 1} replies ({reason}); "
                        "try a larger model or check llm.model")
