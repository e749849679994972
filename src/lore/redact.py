"""Secret redaction for quotes kept as evidence (stdlib only).

:func:`redact` replaces keys, tokens, passwords and private keys with ``[REDACTED:<kind>]``.
Names stay readable: an assignment keeps its key (``password=[REDACTED:password]``), a URL
keeps its scheme, user and host. Every pattern is anchored on a literal prefix or a run
boundary, so the cost stays linear in the text's length, and a redacted text is left as it
is by a second pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["contains_secret", "redact"]

_I = re.IGNORECASE
_MARK = "[REDACTED:"


def _tag(kind: str) -> str:
    return f"{_MARK}{kind}]"


# ---- fixed formats ------------------------------------------------------------------
# (kind, pattern): the whole match is replaced.
_FORMATS: list[tuple[str, re.Pattern[str]]] = [
    # Anthropic before OpenAI: both start with "sk-".
    ("api-key", re.compile(r"(?<![\w-])sk-ant-[A-Za-z0-9_-]{20,}")),
    ("api-key", re.compile(r"(?<![\w-])sk-(?:proj-|svcacct-)?(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}")),
    ("token", re.compile(r"(?<![\w-])gh[pousr]_[A-Za-z0-9]{30,}")),
    ("token", re.compile(r"(?<![\w-])github_pat_[A-Za-z0-9_]{22,}")),
    ("aws-key", re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])")),
    ("api-key", re.compile(r"(?<![\w-])AIza[0-9A-Za-z_-]{35}(?![\w-])")),
    ("token", re.compile(r"(?<![\w-])xox[abposr]-[A-Za-z0-9-]{10,}")),
    ("api-key", re.compile(r"(?<![\w-])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("jwt", re.compile(r"(?<![\w-])eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}")),
]

_PEM = re.compile(
    r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
    re.DOTALL,
)

# user:password@host — the scheme and user stay, the password goes.
_URL_CREDENTIALS = re.compile(
    r"(?<![A-Za-z0-9+.-])(?P<head>[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s:/@?#]*):(?P<pw>[^\s@/?#]+)@"
)

_AWS_SECRET = re.compile(
    r"(?P<head>\baws_secret_access_key[\"']?\s*[:=]\s*[\"']?)(?P<value>[A-Za-z0-9/+=]{30,})", _I
)

# "Authorization: Bearer <token>", "Authorization: Basic <b64>"
_AUTH_HEADER = re.compile(
    r"(?P<head>\bAuthorization[\"']?\s*[:=]\s*[\"']?(?:(?:Bearer|Basic|Token|Bot)\s+)?)"
    r"(?P<value>[^\s\"',;]+)",
    _I,
)
_BEARER = re.compile(r"(?P<head>\bBearer\s+)(?P<value>[A-Za-z0-9._~+/=-]{8,})", _I)

# key = value: the key stays, the value goes. The key may carry a prefix (DB_PASSWORD,
# github_token, client_secret) and be quoted ("password": "...").
_KEY = (
    r"(?:[A-Za-z0-9]{1,30}[_-]){0,4}"
    r"(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|"
    r"secret[_-]?key|private[_-]?key|client[_-]?secret)"
)
_ASSIGN = re.compile(
    r"(?P<key>\b" + _KEY + r")\b(?P<sep>[\"']?[ \t]*(?:=>|:=|=(?!=)|:(?!:))[ \t]*|[ \t]+(?=[\"']))"
    r"(?P<value>\"[^\"\n]{1,300}\"|'[^'\n]{1,300}'|[^\s,;'\"]{1,300})",
    _I,
)

# A long hex or base64 string right after a key/token/secret word ("my API key is 3f9a...").
_NEAR_KEYWORD = re.compile(
    r"(?P<head>\b(?:api[ _-]?)?(?:keys?|tokens?|secrets?|passwords?|passwd|credentials?)\b"
    r"[ \t]*(?:(?:is|was|=|:|->|here|value)[ \t]*){0,2}[\"'`]?)"
    r"(?P<value>(?<![A-Za-z0-9+/_=-])(?:[0-9a-fA-F]{32,}(?![A-Za-z0-9+/_-])|[A-Za-z0-9+/_-]{40,}={0,2}))",
    _I,
)

# Values that name where a secret lives rather than being one.
_REFERENCE = re.compile(
    r"(?:\$|%\(|\{\{|<|\*{3}|x{4}|\.\.\.|os\.environ|os\.getenv|getenv|process\.env|env\(|env\[|"
    r"ENV\[|secrets\.|settings\.|config\.|vault:|none\b|null\b|nil\b|true\b|false\b|undefined\b)",
    _I,
)
_PROSE = frozenset(
    "a an the is are was were be been it its it's this that these those not no yes and or "
    "in on for to of from with by as at if so see use set same your my our their his her "
    "required optional empty missing string str int field value should must will can "
    "hashed encrypted stored never always only here there below above".split()
)


def _assign_kind(key: str) -> str:
    k = key.lower()
    if k.startswith("aws"):
        return "aws-key"
    if "private" in k:
        return "private-key"
    if "pass" in k or "pwd" in k:
        return "password"
    if "token" in k:
        return "token"
    if "api" in k or "access" in k:
        return "api-key"
    return "secret"


def _assignment(m: re.Match[str]) -> str:
    key, sep, value = m.group("key"), m.group("sep"), m.group("value")
    quote = value[0] if value[0] in "\"'" else ""
    inner = value[1:-1] if quote else value
    if quote:
        if not inner.strip():
            return m.group(0)
    else:
        # Keep sentence punctuation that follows an unquoted value outside the redaction.
        stripped = inner.rstrip(".,):]}")
        if not stripped:
            return m.group(0)
        inner = stripped
        # "password: the one in the vault" is prose; "password=hunter2" is not.
        if "=" not in sep and inner.lower() in _PROSE:
            return m.group(0)
    if inner.startswith(_MARK) or _REFERENCE.match(inner):
        return m.group(0)
    tail = value[len(quote) + len(inner):] if not quote else quote
    return f"{key}{sep}{quote}{_tag(_assign_kind(key))}{tail}"


def _bearer(m: re.Match[str]) -> str:
    value = m.group("value")
    # A token has digits, or mixed case at length; "Bearer authentication" is prose.
    has_digit = any(c.isdigit() for c in value)
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    if not (has_digit or (mixed and len(value) >= 16)):
        return m.group(0)
    return m.group("head") + _tag("token")


def _auth_header(m: re.Match[str]) -> str:
    value = m.group("value")
    if value.startswith(_MARK) or _REFERENCE.match(value):
        return m.group(0)
    return m.group("head") + _tag("token")


def _url(m: re.Match[str]) -> str:
    pw = m.group("pw")
    if pw.startswith(_MARK) or _REFERENCE.match(pw):
        return m.group(0)
    return f"{m.group('head')}:{_tag('credentials-url')}@"


def _near_keyword(m: re.Match[str]) -> str:
    value = m.group("value")
    is_hex = re.fullmatch(r"[0-9a-fA-F]+", value) is not None
    if not is_hex:
        # base64: letters of both cases and a digit, and not a file path.
        if not (any(c.isdigit() for c in value) and any(c.isupper() for c in value)
                and any(c.islower() for c in value)):
            return m.group(0)
        if "/" in value and re.search(r"\.[A-Za-z]{1,5}$", value):
            return m.group(0)
    return m.group("head") + _tag("token")


def _fixed(kind: str) -> Callable[[re.Match[str]], str]:
    return lambda m: _tag(kind)


def _aws_secret(m: re.Match[str]) -> str:
    return m.group("head") + _tag("aws-key")


_STEPS: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]] = [
    (_PEM, _fixed("private-key")),
    (_URL_CREDENTIALS, _url),
    *((p, _fixed(k)) for k, p in _FORMATS),
    (_AWS_SECRET, _aws_secret),
    (_AUTH_HEADER, _auth_header),
    (_BEARER, _bearer),
    (_ASSIGN, _assignment),
    (_NEAR_KEYWORD, _near_keyword),
]


def redact(text: str) -> str:
    """Replace secrets in ``text`` with ``[REDACTED:<kind>]``; everything else is kept."""
    if not text:
        return text
    for pattern, replace in _STEPS:
        text = pattern.sub(replace, text)
    return text


def contains_secret(text: str) -> bool:
    """Whether :func:`redact` would change ``text``."""
    return bool(text) and redact(text) != text
