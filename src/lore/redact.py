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
paths all call it. The patterns themselves are :mod:`lore.redact_patterns`; what a match
becomes, and which texts each is tried on, is here.
"""

from __future__ import annotations

from functools import lru_cache

from lore import redact_patterns as p

TYPE_CHECKING = False  # typing is not imported: the hooks pay for every import
if TYPE_CHECKING:
    import re
    from collections.abc import Callable

__all__ = ["clip", "contains_secret", "redact", "redact_clipped", "redact_value", "secret_field"]

_I = 2  # re.IGNORECASE, spelled out: ``re`` is imported only when a rule first runs
_MULTILINE = 8  # re.MULTILINE
_DOTALL = 16  # re.DOTALL
_MARK = "[REDACTED:"


def _tag(kind: str) -> str:
    return f"{_MARK}{kind}]"


_PROSE = frozenset(
    "a an the is are was were be been being it its it's this that these those not no yes and or "
    "in on for to of from with by as at if so see use set same your my our their his her "
    "required optional empty missing string str int field value should must will can "
    "hashed encrypted stored never always only here there below above "
    "wrong right correct incorrect invalid valid expired too very still now then also just "
    "changed reset rotated saved sent shown hidden masked weak strong long short ok okay fine "
    "good bad different generated managed kept used needed checked validated verified entered "
    "typed provided given known unknown available unavailable ignored accepted rejected "
    "updated removed deleted cleared blank case-sensitive mandatory manager managers "
    "protected policy policies prompt prompts dialog form field fields box input inputs "
    "reset flow flows hash hashes hashing length rules rule change changes changing "
    "expiry expiration strength complexity requirements requirement check checks "
    "validation confirmation recovery login logins storage store handling auth "
    "authentication protection less free based only what which who how where when why "
    "something anything nothing everything somewhere elsewhere mine yours ours theirs "
    "there's isn't wasn't won't can't doesn't didn't "
    # /etc/nsswitch.conf: "passwd: files systemd"
    "files compat sss systemd nis nisplus winbind".split()
)
_PLAIN_SUFFIXES = ("ed", "ing", "ly", "able", "ible", "tion", "ment", "ness", "less")


def _plain_word(value: str) -> bool:
    """Prose, not a password: a lower-case dictionary-shaped word, or a code reference."""
    v = value.rstrip(".,!?;:)]}")
    if not v:
        return True
    if v.lower() in _PROSE:
        return True
    if v.isalpha() and v.islower() and v.endswith(_PLAIN_SUFFIXES):
        return True
    return False


def _password_shaped(value: str) -> bool:
    """A word that reads as a password on its own: a digit or a symbol with letters, or
    mixed case inside the word (Tr0ub4dor&3, Hunter2Staging!, correctHorse)."""
    import re  # loaded by the rule that called this

    v = value.rstrip(".,!?;:)]}")
    if len(v) < 4 or not any(c.isalpha() for c in v):
        return False
    has_digit = any(c.isdigit() for c in v)
    has_symbol = any(not c.isalnum() for c in v)
    inner_upper = any(c.isupper() for c in v[1:]) and any(c.islower() for c in v)
    # "v1.2", "3.12", "/etc/passwd", "password_hash" (an identifier), a file name
    if re.fullmatch(r"v?\d+(?:\.\d+)+\w*", v) or "/" in v or re.fullmatch(r"[a-z]+(?:_[a-z]+)+", v):
        return False
    if re.fullmatch(r"[\w-]+\.(?:py|js|ts|md|txt|json|yaml|yml|toml|cfg|ini|sh|go|rs|rb|java)", v):
        return False
    return has_digit or has_symbol or inner_upper


def _is_path(value: str) -> bool:
    """A directory or file path (what ``pwd`` prints), not a password."""
    if value.startswith(("/", "~/", "./", "../")) or value == "~":
        return " " not in value.strip()
    return len(value) > 2 and value[0].isalpha() and value[1] == ":" and value[2] in "\\/"


def _identifier_word(key: str) -> str:
    """The secret word a key ends with: db_password -> password, apiKey -> key."""
    for word in ("password", "passwd", "secret", "token", "key", "pwd", "pass", "credential"):
        if key.endswith(word) or key.endswith(word + "s"):
            return word
    return key


def _assign_kind(key: str) -> str:
    k = key.lower()
    if k.startswith("aws"):
        return "aws-key"
    if "private" in k:
        return "private-key"
    if "pass" in k or "pwd" in k or "psk" in k:
        return "password"
    if "token" in k:
        return "token"
    if "api" in k or "access" in k or "accountkey" in k:
        return "api-key"
    return "secret"


_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _assignment(m: re.Match[str]) -> str:
    import re  # loaded by the rule that called this

    word, sep, value = m.group("key"), m.group("sep"), m.group("value")
    start = m.start()
    while start > 0 and m.string[start - 1] in _KEY_CHARS and m.start() - start < 41:
        start -= 1
    key = m.string[start:m.start()] + word
    if not _KEY_RULE.pattern().fullmatch(key):
        return m.group(0)  # cache_key=..., tokenizer=...: not a secret's name
    quote = value[0] if value[0] in "\"'`" else ""
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
        if "=" not in sep and _plain_word(inner):
            return m.group(0)
        if not any(c.isalnum() for c in inner):  # "password: //", "token = --"
            return m.group(0)
    if _MARK in inner or _reference(inner):
        return m.group(0)
    kl = key.lower()
    if kl.endswith("pwd") and _is_path(inner):  # PWD=/home/me/src: the working directory
        return m.group(0)
    # token: tokens[index], csrfToken = document.querySelector(...): code, not a value
    if not quote and any(c in inner for c in "([{"):
        return m.group(0)
    # password=password, api_key=api_key, token=new_token: a variable passed on, not a value
    if (not quote and not any(c.isdigit() for c in inner)
            and re.fullmatch(r"[A-Za-z_][\w.]*", inner) and _identifier_word(kl) in inner.lower()):
        return m.group(0)
    # "pass"/"credential" alone are common words: only as a named setting (db_pass=, PASS=)
    if kl in ("pass", "credential", "credentials") and ("=" not in sep or not inner.strip()):
        return m.group(0)
    # "sshpass: command not found", "bypass: true": a word ending in "pass", not a setting
    if (word.lower() == "pass" and len(key) > 4 and key[-5].islower() and key[-4] == "p"
            and "=" not in sep):
        return m.group(0)
    # A bare word after "token:" or "secret:" in prose ("token: none", "secret: yes")
    if "=" not in sep and not quote and inner.isalpha() and inner.islower() and len(inner) < 5:
        return m.group(0)
    tail = value[len(quote) + len(inner):] if not quote else quote
    return f"{word}{sep}{quote}{_tag(_assign_kind(key))}{tail}"


def _prose_password(m: re.Match[str]) -> str:
    import re  # loaded by the rule that called this

    value = m.group("value")
    quote = value[0] if value[0] in "\"'`" else ""
    inner = value[1:-1] if quote else value
    if not inner.strip() or _MARK in inner or _reference(inner):
        return m.group(0)
    if m.group("head")[:3].lower() == "pwd" and _is_path(inner):  # "pwd: /home/me/src"
        return m.group(0)
    if not quote:
        if any(c in inner for c in "([{"):  # password: form.get(...) is code
            return m.group(0)
        inner = inner.rstrip(".,;:)]}") or inner  # f(password=password): the ")" is code
        if re.fullmatch(r"--?[a-z][a-z-]*", inner):  # `--password --interactive`: the next flag
            return m.group(0)
        if m.group("c1") is not None or m.group("c2") is not None:
            # "the password is swordfish" — any word but prose.
            if _plain_word(inner) or not any(c.isalnum() for c in inner):
                return m.group(0)
            if re.fullmatch(r"[a-z]+(?:_[a-z]+)+", inner):  # an identifier: password_hash
                return m.group(0)
            low = inner.lower()
            if (re.fullmatch(r"[A-Za-z_][\w.]*", inner) and not any(c.isdigit() for c in inner)
                    and ("pass" in low or "pwd" in low)):  # password = password: a variable
                return m.group(0)
        elif not _password_shaped(inner):
            # "use password X" with no "is": only a word shaped like a password.
            return m.group(0)
        tail = value[len(inner):]
        return m.group("head") + _tag("password") + tail
    return m.group("head") + quote + _tag("password") + quote


def _bearer(m: re.Match[str]) -> str:
    value = m.group("value")
    if _MARK in value:
        return m.group(0)
    # A token has digits, or mixed case at length; "Bearer authentication" is prose.
    has_digit = any(c.isdigit() for c in value)
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    if not (has_digit or (mixed and len(value) >= 16)):
        return m.group(0)
    return m.group("head") + _tag("token")


def _auth_header(m: re.Match[str]) -> str:
    value = m.group("value")
    if _MARK in value or _reference(value) or len(value) < 6:
        return m.group(0)
    return m.group("head") + _tag("token")


def _cli(m: re.Match[str]) -> str:
    value = m.group("value")
    quote = value[0] if value[0] in "\"'" else ""
    inner = value[1:-1] if quote else value
    if not inner.strip() or _MARK in inner or _reference(inner):
        return value
    flag = m.group("head")[-24:].lower()
    kind = "token" if "pass" not in flag and any(w in flag for w in ("token", "key", "secret")) \
        else "password"
    return quote + _tag(kind) + quote


def _setter_value(value: str, kind: str) -> str:
    """A value given to a command that stores it: redacted unless it names where the secret
    lives (``$VAR``, ``<placeholder>``, ``@file``, ``-`` for stdin) or is a flag's true/false."""
    quote = value[0] if value[:1] in ("'", '"') and value[-1:] == value[:1] and len(value) > 1 else ""
    inner = value[1:-1] if quote else value
    v = inner.strip()
    if (not v or _MARK in v or _reference(v) or v.startswith("@") or v == "-"
            or v.lower() in ("true", "false", "yes", "no", "on", "off")):
        return value
    return quote + _tag(kind) + quote


def _secret_name(name: str) -> bool:
    """``aws_secret_access_key``, ``//registry.npmjs.org/:_authToken``, ``github.token``."""
    last = name.strip("'\"").replace(":", "/").replace(".", "/").rsplit("/", 1)[-1]
    return bool(last) and secret_field(last)


def _setter(m: re.Match[str]) -> str:
    import re  # loaded by the rule that called this

    mode = next(p.SETTER_MODES[i] for i in p.SETTER_MODES if m.group(f"s{i}") is not None)
    args = m.group("args")
    words = list(re.finditer(r"(?:[ \t]|\\\r?\n)+(?P<w>" + p.WORD + ")", args))
    plain: list[re.Match[str]] = []  # the words that are not flags nor a flag's value
    skip = False
    for w in words:
        word = w.group("w")
        if skip:
            skip = False
        elif word.startswith("-") and mode != "pairs":
            skip = word in p.VALUE_FLAGS
        else:
            plain.append(w)
    new: dict[int, tuple[int, str]] = {}  # a word's start in args -> (its end, its new text)
    if mode == "pairs":
        for w in words:
            word = w.group("w")
            flag = re.match(r"--(?:from-literal|set|settings|secrets)=", word)
            if word.startswith("-") and not flag:
                continue
            body = word[flag.end():] if flag else word
            quote = body[0] if body[:1] in ("'", '"') and body[-1:] == body[:1] else ""
            name, eq, value = body.strip(quote).partition("=") if quote else body.partition("=")
            if not eq or not re.fullmatch(r"[A-Za-z_][\w.:/-]{0,100}", name):
                continue
            done = _setter_value(value, _assign_kind(name))
            if done != value:
                new[w.start("w")] = (w.end("w"), (word[:flag.end()] if flag else "") + quote + name
                                     + eq + done + quote)
    else:
        at = mode - 1 if isinstance(mode, int) else 1
        if mode == "secret-name":
            if not plain or not _secret_name(plain[0].group("w")):
                return m.group(0)
        elif mode == "if-secret":
            flagged = any(w.group("w") == "--secret" for w in words)
            if not plain or not (flagged or _secret_name(plain[0].group("w"))):
                return m.group(0)
        if len(plain) > at:
            w = plain[at]
            name = plain[0].group("w") if at else "secret"
            done = _setter_value(w.group("w"), _assign_kind(name.strip("'\"")))
            if done != w.group("w"):
                new[w.start("w")] = (w.end("w"), done)
    if not new:
        return m.group(0)
    out: list[str] = []
    last = 0
    for start in sorted(new):
        end, text = new[start]
        out += (args[last:start], text)
        last = end
    out.append(args[last:])
    return m.group(0)[:m.start("args") - m.start()] + "".join(out)


def _quoted(value: str) -> tuple[str, str, str]:
    """(opening quote, inside, closing quote) of a value, quotes of any script."""
    pairs = {'"': '"', "'": "'", "`": "`", "«": "»", "„": "“”", "“": "”", "「": "」", "『": "』"}
    close = pairs.get(value[:1])
    if close and len(value) > 1 and value[-1] in close:
        return value[0], value[1:-1], value[-1]
    return "", value, ""


def _i18n_password(m: re.Match[str]) -> str:
    """A password after its word in another language (the new value): quoted, or shaped like
    one (a digit or a symbol with letters, mixed case), or digits after "is" / ":"."""
    value = m.group("value")
    left, inner, right = _quoted(value)
    tail = ""
    if not left:
        inner = value.rstrip(".,;:!?)]}")
        tail = value[len(inner):]
    v = inner.strip()
    if not v or _MARK in v or _reference(v) or (not left and any(c in v for c in "([{")):
        return value  # password: form.get(...) is code
    if not left and not (_password_shaped(v) or (m.group("c") and v.isdigit() and len(v) >= 4
                                                 and not _year_in_a_sentence(m))):
        return value
    return left + _tag("password") + right + tail


def _year_in_a_sentence(m: re.Match[str]) -> bool:
    """A year followed by a word: "das Passwort ist 2024 abgelaufen" (expired in 2024)."""
    value = m.group("value")
    rest = m.string[m.end():m.end() + 40].lstrip(" \t")
    return (len(value) == 4 and value[:2] in ("19", "20") and rest[:1].isascii()
            and rest[:1].isalpha())


def _config_value(m: re.Match[str]) -> str:
    """A value in a credential file: any word but a reference or prose ("default password is")."""
    value = m.group("value")
    if _MARK in value or _reference(value) or _plain_word(value):
        return m.group(0)
    return m.group("head") + _tag("password")


# wp-config.php's placeholders: the sample file's values, not secrets.
_WP_PLACEHOLDERS = ("put your unique phrase here", "password_here", "database_name_here",
                    "username_here")


def _define(m: re.Match[str]) -> str:
    name, value = m.group("name").upper(), m.group("value")
    inner = value[1:-1]
    if not (name.endswith(("_KEY", "_SALT")) or _KEY_RULE.pattern().fullmatch(name)):
        return m.group(0)
    if not inner.strip() or _MARK in inner or _reference(inner) or inner.lower() in _WP_PLACEHOLDERS:
        return m.group(0)
    kind = "secret" if name.endswith("_SALT") else _assign_kind(name)
    return m.group("head") + value[0] + _tag(kind) + value[0]


def _pin(m: re.Match[str]) -> str:
    return m.group("head") + _tag("pin")


def _xml(m: re.Match[str]) -> str:
    value = m.group("value")
    if not value.strip() or _MARK in value or _reference(value.strip()):
        return m.group(0)
    tag = m.group("tag")
    return f"<{tag}>{_tag(_assign_kind(tag))}</{tag}>"


def _cookie(m: re.Match[str]) -> str:
    head, value = m.group("head"), m.group("value")
    first_only = head.lower().lstrip().startswith("set-")  # the rest are attributes (Path=/)
    out = []
    for i, pair in enumerate(value.split(";")):
        name, eq, val = pair.partition("=")
        v = val.strip()
        if (eq and v and (not first_only or i == 0) and _MARK not in v and not _reference(v)
                and not (len(v) < 6 and v.isalpha()) and " " not in name.strip()):
            pair = name + eq + val[:len(val) - len(val.lstrip())] + _tag("cookie")
        out.append(pair)
    return ";".join(out)


def _url(m: re.Match[str]) -> str:
    pw = m.group("pw")
    if _MARK in m.group(0) or _reference(pw):  # "https://[REDACTED:token]@host": done already
        return m.group(0)
    return f"{m.group('head')}:{_tag('credentials-url')}@"


# "key" alone names a cache key, a lockfile entry or a public key as often as a secret: a hex or
# base64 value after it is a secret only when a word before it says so ("API key", "secret key").
_SECRET_QUALIFIER = ("secret", "private", "access", "signing", "encryption", "master", "license",
                     "licence", "auth", "session", "client", "deploy", "api", "app", "admin",
                     "account", "storage", "shared", "service", "webhook", "hmac")


def _near_keyword(m: re.Match[str]) -> str:
    import re  # loaded by the rule that called this

    value = m.group("value")
    if m.group("word").lower() in ("key", "keys"):
        before = m.string[max(0, m.start() - 24):m.start()].lower()
        last = re.findall(r"[a-z]+", before)
        if not last or last[-1] not in _SECRET_QUALIFIER:
            return m.group(0)
    is_hex = re.fullmatch(r"[0-9a-fA-F]+", value) is not None
    if not is_hex:
        # base64: letters of both cases and a digit, and not a file path.
        if not (any(c.isdigit() for c in value) and any(c.isupper() for c in value)
                and any(c.islower() for c in value)):
            return m.group(0)
        if "/" in value and re.search(r"\.[A-Za-z]{1,5}$", value):
            return m.group(0)
    return m.group("head") + _tag("token")


def _head(kind: str):  # type: ignore[no-untyped-def]
    return lambda m: m.group("head") + _tag(kind)


def _fixed(kind: str):  # type: ignore[no-untyped-def]
    return lambda m: _tag(kind)


class _Rule:
    """One pattern, compiled on first use, run only when one of its triggers is in the text.

    An anchored rule's matches start where one of its ``anchors`` occurs: it is tried only
    there (``str.find`` is much faster than a case-insensitive scan of every position)."""

    __slots__ = ("triggers", "source", "flags", "replace", "anchors", "in_runs", "values",
                 "wide", "gate", "words", "_compiled")

    def __init__(self, triggers: tuple[str, ...], source: str, flags: int, replace,  # type: ignore[no-untyped-def]
                 anchors: tuple[str, ...] = (), in_runs: bool = False,
                 values: bool = False, wide: tuple[str, ...] = (),
                 gate: Callable[[str], bool] | None = None, words: bool = False) -> None:
        self.triggers = triggers
        # triggers looked up only in a text that is not ASCII (words of other scripts)
        self.wide = wide
        # a cheap test the text must pass besides a trigger (.pgpass: four colons)
        self.gate = gate
        # every match starts a word (the pattern opens with \b): an anchor inside a word
        # ("git " in "digit ") is no start, and no start means no compiling
        self.words = words
        self.source = source
        self.flags = flags
        self.replace = replace
        self.anchors = anchors
        self.in_runs = in_runs  # a fixed format: only inside a run of _RUNS
        # ``replace`` gives the new ``value`` group only, and matches may overlap: one command
        # line can hold several commands, each with its own flag (`a -p X && b -w Y`).
        self.values = values
        self._compiled: re.Pattern[str] | None = None

    def pattern(self) -> re.Pattern[str]:
        if self._compiled is None:
            import re

            self._compiled = re.compile(self.source, self.flags)
        return self._compiled

    def wanted(self, seen: str) -> bool:
        """Whether the rule can match ``seen``: a trigger is in it and the gate lets it by."""
        if not (any(t in seen for t in self.triggers)
                or (self.wide and not seen.isascii() and self._wide_in(seen))):
            return False
        return self.gate is None or self.gate(seen)

    def _wide_in(self, seen: str) -> bool:
        # A hook's one text is cheaper to search word by word than to compile a pattern for;
        # past 100 KB (an import, the worker) the pattern pays for itself.
        if _WIDE_SCANNED[0] < 100_000:
            _WIDE_SCANNED[0] += len(seen)
            return any(t in seen for t in self.wide)
        return _wide(self.wide).search(seen) is not None

    def _starts(self, seen: str) -> set[int]:
        starts = set()
        ascii_only = seen.isascii()
        for a in self.anchors:
            if ascii_only and not a.isascii():
                continue
            i = seen.find(a)
            while i >= 0:
                if not (self.words and i and seen[i - 1].isalnum()):
                    starts.add(i)
                i = seen.find(a, i + 1)
        return starts

    def _values(self, pattern: re.Pattern[str], text: str, starts: set[int] | None) -> str:
        found: dict[tuple[int, int], str] = {}
        if starts is None:  # lower-casing moved the offsets: every match, no overlap
            matches = list(pattern.finditer(text))
        else:  # each anchor, even inside an earlier match
            matches = [m for i in sorted(starts) if (m := pattern.match(text, i))]
        for m in matches:
            span = m.span("value")
            if span not in found and not _inside_mark(text, span[0]):
                found[span] = self.replace(m)
        out: list[str] = []
        last = 0
        for (start, end), new in sorted(found.items()):
            if start >= last and new != text[start:end]:
                out += (text[last:start], new)
                last = end
        if not out:
            return text
        out.append(text[last:])
        return "".join(out)

    def apply(self, text: str, seen: str) -> str:
        """Run the rule over ``text``; ``seen`` is the text as the triggers are looked up.
        An anchored rule is compiled only once one of its anchors is found."""
        anchored = bool(self.anchors) and len(seen) == len(text)
        starts = self._starts(seen) if anchored else set()
        if anchored and not starts:
            return text
        pattern = self.pattern()
        if self.values:
            return self._values(pattern, text, starts if anchored else None)
        if not anchored:
            return pattern.sub(self.replace, text)
        out: list[str] = []
        last = 0
        for i in sorted(starts):
            if i < last:
                continue
            m = pattern.match(text, i)
            if m is None or m.end() == i:
                continue
            out += (text[last:i], self.replace(m))
            last = m.end()
        if not out:
            return text
        out.append(text[last:])
        return "".join(out)


_WIDE_SCANNED = [0]  # characters searched word by word so far in this process


@lru_cache(maxsize=8)
def _wide(words: tuple[str, ...]) -> re.Pattern[str]:
    """The words as one pattern: one scan of a long text instead of one a word."""
    import re

    return re.compile("|".join(re.escape(w) for w in words))


class _LineRule(_Rule):
    """A pattern that must match a whole line, tried only on lines with ``colons`` colons or
    more: a scan of every line start costs more than splitting the text."""

    __slots__ = ("colons",)

    def __init__(self, source: str, replace, colons: int) -> None:  # type: ignore[no-untyped-def]
        super().__init__((":",), source, 0, replace, gate=_port_field)
        self.colons = colons

    def apply(self, text: str, seen: str) -> str:
        lines = text.split("\n")
        changed = False
        for i, line in enumerate(lines):
            if line.count(":") < self.colons or not _port_field(line):
                continue
            if m := self.pattern().fullmatch(line):
                new = self.replace(m)
            else:  # pasted into a sentence: the value ends at the next blank
                new = _PGPASS_INLINE.pattern().sub(self.replace, line)
            changed = changed or new != line
            lines[i] = new
        return "\n".join(lines) if changed else text


_PGPASS_INLINE = _Rule((), p.PGPASS_WORDS, 0, None)
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


def _port_field(seen: str) -> bool:
    """Four colons, and a field between two of them that is a port or `*` (.pgpass)."""
    if seen.count(":") < 4:
        return False
    return any(len(f) <= 5 and (f.isdigit() or f == "*") for f in seen.split(":")[1:-1])


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
_RULES: list[_Rule] = [
    _Rule(("-----BEGIN",), p.PEM, _DOTALL, _fixed("private-key")),
    _Rule(("://",), p.URL_CREDENTIALS, 0, _url),
    *(_Rule(t, source, _DOTALL if t[0].startswith("PuTTY") else 0, _fixed(k), in_runs=True)
      for k, t, source in p.FORMATS),
    _Rule(("aws",), p.AWS_SECRET, _I, _head("aws-key")),
    # every flag follows a blank (" -p", "\t-a"); compiled only where a command's name is
    _Rule((" -", "\t-", "chpasswd", "net user", "rabbitmqctl", "mc alias", "mc config", "nmcli"), p.CLI,
          0, _cli, anchors=p.CLI_ANCHORS, values=True, words=True),
    _Rule(("pass", "token", "secret", "key"), p.LONG_FLAG, 0, _cli, anchors=("--",), values=True),
    _Rule(("echo", "printf"), p.PIPED, 0, _cli, anchors=("echo", "printf"), values=True),
    _Rule(("<<<",), p.HERE_STRING, 0, _cli, values=True),
    _Rule(("cookie", "curl"), p.COOKIE, _I, _cookie, anchors=("set-cookie", "cookie", "--cookie", "curl"),
          values=True),
    _Rule(("sig", "x-amz-", "x-goog-"), p.URL_SIGNATURE, _I, _head("signature")),
    # PayPal/Braintree: "$" splits it into runs the fixed formats would not see whole
    _Rule(("access_token$",), r"access_token\$(?:production|sandbox)\$[0-9a-z]{16}\$[0-9a-f]{32}",
          0, _fixed("token")),
    _Rule(("</",), p.XML, _I, _xml, anchors=("<",)),
    _Rule(("authorization",), p.AUTH_HEADER, _I, _auth_header),
    _Rule(("x-",), p.KEY_HEADER, _I, _auth_header, anchors=("x-",)),
    _Rule(("bearer",), p.BEARER, _I, _bearer),
    _Rule(("pass", "pwd", "secret", "token", "key", "credential", "_auth", "psk"), p.ASSIGN, _I,
          _assignment, anchors=("pass", "pwd", "secret", "token", "key", "credential", "_auth", "psk")),
    # ~/.docker/config.json: "auth": "<base64 of user:password>"
    _Rule(('"auth"',), r'(?P<head>"auth"[ \t]*:[ \t]*")(?P<value>[A-Za-z0-9+/]{12,}={0,2})(?=")', 0,
          _head("credentials")),
    _Rule(("machine", "default login", "default password", "default account"), p.NETRC, 0,
          _config_value, anchors=("machine", "default"), gate=lambda s: "password" in s, words=True),
    _Rule(("password", "passwd", "passphrase"), p.PASSWORD_LINE, _MULTILINE, _config_value,
          gate=_a_line_starts_with_password),
    _LineRule(p.PGPASS, _head("password"), colons=4),
    _Rule(("define",), p.DEFINE, _I, _define, anchors=("define",)),
    _Rule(("client-key-data",), p.KUBE_KEY, 0, _head("private-key")),
    _Rule(_PASSWORD_TRIGGERS, p.PROSE_PASSWORD, _I, _prose_password, anchors=("pass", "pwd", "pw")),
    # English "password" is the rule above's: only Italian's "password è" brings it here
    _Rule(p.I18N_TRIGGERS, p.PROSE_PASSWORD_I18N, _I, _i18n_password, anchors=p.I18N_ANCHORS, values=True,
          wide=("password è", "password é", *(a for a in p.I18N_ANCHORS if not a.isascii()))),
    _Rule(("pin",), p.PIN, _I, _pin, anchors=("pin", "пин", "暗証番号", "핀"),
          wide=("пин", "暗証番号", "핀"), gate=_pin_word),
    # last: a setter's words are read as the other rules left them, so a second pass reads
    # the same words
    _Rule(_SETTER_TRIGGERS, p.SETTER, 0, _setter, anchors=_SETTER_ANCHORS, words=True),
    _Rule(("key", "token", "secret", "passw", "credential"), p.NEAR_KEYWORD, _I, _near_keyword,
          anchors=("key", "token", "secret", "passw", "credential", "api")),
]


_REFERENCE = _Rule((), p.REFERENCE_SOURCE, _I, None)
# Every fixed format is a run of at least 15 of these characters (the shortest, a Slack token,
# is 15): their triggers are looked up in those runs only, and a text without one (a path, a
# short command, a sentence) skips all of them at the cost of one scan.
_RUNS = _Rule((), r"[\w.~+/=:-]{15,}", 0, None)
_KEY_RULE = _Rule((), p.KEY, _I, None)
_FORMAT_RULES = [r for r in _RULES if r.in_runs]
# The rules in order, the fixed formats (consecutive in _RULES) as one step, None.
_STEPS: list[_Rule | None] = [None if r is _FORMAT_RULES[0] else r for r in _RULES
                              if not r.in_runs or r is _FORMAT_RULES[0]]


def _escape(literal: str) -> str:
    return "".join("\\" + c if not c.isalnum() and c != "_" else c for c in literal)


# Any trigger of any fixed format (longest first), as one pattern: the gate before them all.
_FORMAT_TRIGGERS = sorted({t for r in _FORMAT_RULES for t in r.triggers}, key=len, reverse=True)
_ANY_FORMAT_TRIGGER = _Rule((), "|".join(_escape(t) for t in _FORMAT_TRIGGERS), 0, None)


def _inside_mark(text: str, pos: int) -> bool:
    """Whether ``pos`` falls inside a ``[REDACTED:kind]`` left by an earlier rule."""
    start = text.rfind(_MARK, max(0, pos - 40), pos)
    return start >= 0 and "]" not in text[start:pos]


def _reference(value: str) -> bool:
    return _REFERENCE.pattern().match(value) is not None


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
        if rule.flags & _I:
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


# Names of fields whose value is a secret whatever it looks like, besides those the key pattern matches
# (password, db_password, apiKey, client_secret, access_token, ...).
_SECRET_FIELDS = frozenset({
    "authorization", "proxy-authorization", "proxy_authorization", "auth", "cookie", "cookies",
    "set-cookie", "set_cookie", "x-api-key", "x-auth-token", "x-access-token", "x-vault-token",
    "x-csrf-token", "x-xsrf-token", "pin", "otp", "totp", "mfa_code", "2fa", "sessionid",
    "session_cookie", "connection_string", "connectionstring", "dsn", "pat", "psk", "wpa_psk",
})
# Fields named like a secret that hold something else: counts, names, paths, flags.
_NOT_SECRET_FIELDS = frozenset({"max_tokens", "tokens", "token_count", "key", "keys"})


def secret_field(name: str) -> bool:
    """Whether a JSON field of this name holds a secret: ``password``, ``DB_PASSWORD``,
    ``apiKey``, ``client_secret``, ``Authorization``, ``Cookie`` (any case)."""
    low = name.lower()
    if low in _SECRET_FIELDS:
        return True
    if (low in _NOT_SECRET_FIELDS or len(name) > 60
            or not any(w in low for w in ("pass", "pwd", "secret", "token", "key", "credential"))):
        return False  # file_path, command, content: no pattern to compile
    key = _KEY_RULE.pattern()
    # plurals too: client_secrets, api_keys, credentials
    return key.fullmatch(name) is not None or (low.endswith("s") and key.fullmatch(name[:-1]) is not None)


def _field_value(name: str, value: str, limit: int | None) -> str:
    """A string held by a secret field: redacted whole, unless it names where the secret
    lives (``$VAR``, ``${{ secrets.X }}``), is empty or a flag, or is a path under ``pwd``."""
    v = value.strip()
    if (not v or _MARK in v or _reference(v) or v.lower() in ("true", "false", "none", "null")
            or (name.lower().endswith("pwd") and _is_path(v))):
        return _text(value, limit)
    return _tag(_assign_kind(name) if name.lower() not in _SECRET_FIELDS else
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
