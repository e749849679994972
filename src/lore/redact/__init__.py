"""Secret redaction: every text that enters Lore passes :func:`redact` before it is stored.

:func:`redact` replaces keys, tokens, passwords and private keys with ``[REDACTED:<kind>]``.
Names stay readable: an assignment keeps its key (``password=[REDACTED:password]``), a URL
keeps its scheme, user and host, a sentence keeps its words ("the password is
[REDACTED:password]"), a command keeps its flags (``mysql -p[REDACTED:password]``), a
cookie header its names. Every pattern is anchored on a literal prefix or a run boundary, so
the cost stays linear in the text's length, and a redacted text is left as it is by a second
pass. :func:`redact_value` walks JSON values and redacts a field named like a secret whole;
:func:`redact_clipped` redacts before it cuts, and :func:`clip` never cuts inside a token.

Standard library only, and cheap to import: the hooks call it on every event. Each rule
names the substrings it cannot match without (its triggers) and is compiled on first use; an
anchored rule is compiled only once one of its anchors is found. So a hook whose text holds no
trigger compiles nothing, and a text is scanned only by the rules whose triggers it contains.
It sits below every layer (see docs/architecture.md) because the capture, import and storage
paths all call it. The patterns themselves are :mod:`lore.redact.patterns`, one rule and its
compiling :mod:`lore.redact.rule`, what a match becomes :mod:`lore.redact.values`; which
texts each rule is tried on, in which order, is here.
"""

from __future__ import annotations

from functools import lru_cache

from lore.redact import patterns as p
from lore.redact.rule import DOTALL, IGNORECASE, MARK, MULTILINE, LineRule, Rule
from lore.redact.values import (
    SECRET_FIELDS,
    assign_kind,
    assignment,
    auth_header,
    bearer,
    cli,
    config_value,
    cookie,
    define,
    i18n_password,
    is_path,
    keep_head,
    marked,
    near_keyword,
    pin,
    prose_password,
    reference,
    secret_field,
    setter,
    url,
    whole,
    xml,
)

__all__ = ["clip", "contains_secret", "redact", "redact_clipped", "redact_value", "secret_field"]


def _pin_word(seen: str) -> bool:
    """Whether "pin" stands as a word (not "typing", "mapping", "spinner"; "PIN码" is one), or
    a PIN's word of another script is there."""
    i = seen.find("pin")
    while i >= 0:
        before, after = seen[i - 1:i] if i else "", seen[i + 3:i + 4]
        if not (before.isascii() and before.isalpha()) and not (after.isascii() and after.isalpha()):
            return True
        i = seen.find("pin", i + 1)
    return not seen.isascii() and any(w in seen for w in ("пин", "暗証番号", "핀"))


def _a_line_starts_with_password(seen: str) -> bool:
    """Whether a line opens with the word (a long text is left to the pattern)."""
    if len(seen) > 20000:
        return True
    return any(line.lstrip(" \t").startswith(("password", "passwd", "passphrase"))
               for line in seen.split("\n"))



_PASSWORD_TRIGGERS = ("pass", "pwd", "pw ", "pw:", "pw=", "pw'")
# Each setter holds one of these (`config:set`, `secrets set`, `kv put`, `git config`, ...).
_SETTER_TRIGGERS = ("set ", "set\t", ":set", ":add", "setenv", "set-env", " put", " patch", "create secret",
                    "git config", "secret add", "secrets add", "variable update")
# Each setter's first two words (one blank between them: a command typed with two is missed)
_SETTER_ANCHORS = ("heroku config:", "dokku config:", "fly secrets", "flyctl secrets", "doppler secrets",
                   "supabase secrets", "railway variables", "eb setenv", "firebase functions:",
                   "vault kv", "kubectl create", "oc create", "az webapp", "az functionapp",
                   "az containerapp", "dotnet user-secrets", "netlify env:", "convex env",
                   "glab variable", "travis env", "vercel secret", "cf set-env", "aws configure",
                   "npm config", "pnpm config", "yarn config", "git config", "pulumi config")
_RULES: list[Rule] = [
    Rule(("-----BEGIN",), p.PEM, DOTALL, whole("private-key")),
    Rule(("://",), p.URL_CREDENTIALS, 0, url),
    *(Rule(t, source, DOTALL if t[0].startswith("PuTTY") else 0, whole(k), in_runs=True)
      for k, t, source in p.FORMATS),
    Rule(("aws",), p.AWS_SECRET, IGNORECASE, keep_head("aws-key")),
    # every flag follows a blank (" -p", "\t-a"); compiled only where a command's name is
    Rule((" -", "\t-", "chpasswd", "net user", "rabbitmqctl", "mc alias", "mc config", "nmcli"), p.CLI,
          0, cli, anchors=p.CLI_ANCHORS, values=True, words=True),
    Rule(("pass", "token", "secret", "key"), p.LONG_FLAG, 0, cli, anchors=("--",), values=True),
    Rule(("echo", "printf"), p.PIPED, 0, cli, anchors=("echo", "printf"), values=True),
    Rule(("<<<",), p.HERE_STRING, 0, cli, values=True),
    Rule(("cookie", "curl"), p.COOKIE, IGNORECASE, cookie,
         anchors=("set-cookie", "cookie", "--cookie", "curl"), values=True),
    Rule(("sig", "x-amz-", "x-goog-"), p.URL_SIGNATURE, IGNORECASE, keep_head("signature")),
    # PayPal/Braintree: "$" splits it into runs the fixed formats would not see whole
    Rule(("access_token$",), r"access_token\$(?:production|sandbox)\$[0-9a-z]{16}\$[0-9a-f]{32}",
          0, whole("token")),
    Rule(("</",), p.XML, IGNORECASE, xml, anchors=("<",)),
    Rule(("authorization",), p.AUTH_HEADER, IGNORECASE, auth_header),
    Rule(("x-",), p.KEY_HEADER, IGNORECASE, auth_header, anchors=("x-",)),
    Rule(("bearer",), p.BEARER, IGNORECASE, bearer),
    Rule(("pass", "pwd", "secret", "token", "key", "credential", "_auth", "psk"), p.ASSIGN, IGNORECASE,
          assignment, anchors=("pass", "pwd", "secret", "token", "key", "credential", "_auth", "psk")),
    # ~/.docker/config.json: "auth": "<base64 of user:password>"
    Rule(('"auth"',), r'(?P<head>"auth"[ \t]*:[ \t]*")(?P<value>[A-Za-z0-9+/]{12,}={0,2})(?=")', 0,
          keep_head("credentials")),
    Rule(("machine", "default login", "default password", "default account"), p.NETRC, 0,
          config_value, anchors=("machine", "default"), gate=lambda s: "password" in s, words=True),
    Rule(("password", "passwd", "passphrase"), p.PASSWORD_LINE, MULTILINE, config_value,
          gate=_a_line_starts_with_password),
    LineRule(p.PGPASS, keep_head("password"), colons=4),
    Rule(("define",), p.DEFINE, IGNORECASE, define, anchors=("define",)),
    Rule(("client-key-data",), p.KUBE_KEY, 0, keep_head("private-key")),
    Rule(_PASSWORD_TRIGGERS, p.PROSE_PASSWORD, IGNORECASE, prose_password, anchors=("pass", "pwd", "pw")),
    # English "password" is the rule above's: only Italian's "password è" brings it here
    Rule(p.I18N_TRIGGERS, p.PROSE_PASSWORD_I18N, IGNORECASE, i18n_password, anchors=p.I18N_ANCHORS,
         values=True,
          wide=("password è", "password é", *(a for a in p.I18N_ANCHORS if not a.isascii()))),
    Rule(("pin",), p.PIN, IGNORECASE, pin, anchors=("pin", "пин", "暗証番号", "핀"),
          wide=("пин", "暗証番号", "핀"), gate=_pin_word),
    # last: a setter's words are read as the other rules left them, so a second pass reads
    # the same words
    Rule(_SETTER_TRIGGERS, p.SETTER, 0, setter, anchors=_SETTER_ANCHORS, words=True),
    Rule(("key", "token", "secret", "passw", "credential"), p.NEAR_KEYWORD, IGNORECASE, near_keyword,
          anchors=("key", "token", "secret", "passw", "credential", "api")),
]




# Every fixed format is a run of at least 15 of these characters (the shortest, a Slack token,
# is 15): their triggers are looked up in those runs only, and a text without one (a path, a
# short command, a sentence) skips all of them at the cost of one scan.
_RUNS = Rule((), r"[\w.~+/=:-]{15,}", 0, None)
_FORMAT_RULES = [r for r in _RULES if r.in_runs]
# The rules in order, the fixed formats (consecutive in _RULES) as one step, None.
_STEPS: list[Rule | None] = [None if r is _FORMAT_RULES[0] else r for r in _RULES
                              if not r.in_runs or r is _FORMAT_RULES[0]]


def _escape(literal: str) -> str:
    return "".join("\\" + c if not c.isalnum() and c != "_" else c for c in literal)


# Any trigger of any fixed format (longest first), as one pattern: the gate before them all.
_FORMAT_TRIGGERS = sorted({t for r in _FORMAT_RULES for t in r.triggers}, key=len, reverse=True)
_ANY_FORMAT_TRIGGER = Rule((), "|".join(_escape(t) for t in _FORMAT_TRIGGERS), 0, None)



def redact(text: str) -> str:
    """Replace secrets in ``text`` with ``[REDACTED:<kind>]``; everything else is kept."""
    if not text:
        return text
    if len(text) < 64:
        return _redact(text)
    # Ingest meets the same long text twice (an edit's tool call and its file_edits row).
    return _redact_cached(text)


def _redact(text: str) -> str:
    low = text.lower()
    low_of = text
    for rule in _STEPS:
        if rule is None:
            text = _formats(text)
            continue
        # Case-insensitive rules look for their triggers in the lower-cased text.
        if rule.flags & IGNORECASE:
            if low_of is not text:  # an earlier rule changed the text
                low, low_of = text.lower(), text
            seen = low
        else:
            seen = text
        if rule.wanted(seen):
            text = rule.apply(text, seen)
    return text


def _formats(text: str) -> str:
    """The fixed formats, in order, each where one of its triggers is in a run. One search
    for any trigger comes first: nine texts in ten with runs (paths, hashes) hold none."""
    runs = " ".join(_RUNS.pattern().findall(text))
    if not runs:
        return text
    if len(runs) < 4000:  # a prompt, a command: cheaper than compiling the alternation
        if not any(t in runs for t in _FORMAT_TRIGGERS):
            return text
    elif not _ANY_FORMAT_TRIGGER.pattern().search(runs):
        return text
    for rule in _FORMAT_RULES:
        for t in rule.triggers:
            if t in runs:
                text = rule.apply(text, text)
                break
    return text


_redact_cached = lru_cache(maxsize=64)(_redact)


def contains_secret(text: str) -> bool:
    """Whether :func:`redact` would change ``text``."""
    return bool(text) and redact(text) != text


# Characters a token is made of: a cut inside a run of them could keep a secret's prefix.
_RUN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                       "_-.~+/=:@%!#$&*?^")
# A secret longer than this (a private key block) is redacted to the end when cut inside it.
CLIP_MARGIN = 8192


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, never inside a run of token characters:
    the run the cut falls in is dropped whole, so no prefix of a key survives the cut."""
    if len(text) <= limit:
        return text
    end = limit
    if text[end] in _RUN_CHARS:
        while end > 0 and text[end - 1] in _RUN_CHARS:
            end -= 1
    return text[:end]


def redact_clipped(text: str, limit: int, suffix: str = "…") -> str:
    """:func:`redact` then cut to ``limit`` (plus ``suffix`` when cut). Only the first
    ``limit + CLIP_MARGIN`` characters are read, cut at a run's edge, so a secret that
    straddles ``limit`` is seen whole and redacted before the cut, and the cost stays
    bounded on huge texts."""
    if len(text) <= limit:
        return redact(text)
    out = redact(clip(text, limit + CLIP_MARGIN))
    return clip(out, limit) + suffix if len(out) > limit else out + suffix


def _field_value(name: str, value: str, limit: int | None) -> str:
    """A string held by a secret field: redacted whole, unless it names where the secret
    lives (``$VAR``, ``${{ secrets.X }}``), is empty or a flag, or is a path under ``pwd``."""
    v = value.strip()
    if (not v or MARK in v or reference(v) or v.lower() in ("true", "false", "none", "null")
            or (name.lower().endswith("pwd") and is_path(v))):
        return _text(value, limit)
    return marked(assign_kind(name) if name.lower() not in SECRET_FIELDS else
                "cookie" if "cookie" in name.lower() else "token")


def _text(value: str, limit: int | None) -> str:
    return redact(value) if limit is None else redact_clipped(value, limit)


def redact_value(value: object, limit: int | None = None, _field: str | None = None) -> object:
    """:func:`redact` every string inside a JSON-like value (dicts, lists); keys are kept.

    A string under a field named like a secret (``{"password": "..."}``, ``{"headers":
    {"Authorization": "..."}}``, at any depth) is replaced whole, whatever it looks like, and
    so is the ``value`` of a ``{"name"|"key": "<secret name>", "value": ...}`` pair. With
    ``limit``, each string is redacted, then cut (:func:`redact_clipped`)."""
    if isinstance(value, str):
        return _text(value, limit) if _field is None else _field_value(_field, value, limit)
    if isinstance(value, dict):
        named = next((value[k] for k in ("name", "key", "Name", "Key") if k in value), None)
        pair = isinstance(named, str) and "value" in value and secret_field(named)
        out = {}
        for k, v in value.items():
            field = _field
            if pair and k == "value":
                field = named
            elif isinstance(k, str) and not isinstance(v, (int, float, bool)) and secret_field(k):
                field = k
            out[k] = redact_value(v, limit, field)
        return out
    if isinstance(value, list):
        return [redact_value(v, limit, _field) for v in value]
    return value
