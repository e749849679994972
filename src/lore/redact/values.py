"""What a match becomes: the functions that turn a rule's match into its redacted text,
keeping the names around a secret readable (a key, a flag, a URL's host, a sentence's words)
and leaving prose, paths and references alone."""

from __future__ import annotations

from lore.redact import patterns as p
from lore.redact.rule import IGNORECASE, MARK, Rule

TYPE_CHECKING = False  # typing is not imported: the hooks pay for every import
if TYPE_CHECKING:
    import re


def marked(kind: str) -> str:
    return f"{MARK}{kind}]"


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


def is_path(value: str) -> bool:
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


def assign_kind(key: str) -> str:
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


def assignment(m: re.Match[str]) -> str:
    import re  # loaded by the rule that called this

    word, sep, value = m.group("key"), m.group("sep"), m.group("value")
    start = m.start()
    while start > 0 and m.string[start - 1] in _KEY_CHARS and m.start() - start < 41:
        start -= 1
    key = m.string[start:m.start()] + word
    if not KEY_RULE.pattern().fullmatch(key):
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
    if MARK in inner or reference(inner):
        return m.group(0)
    kl = key.lower()
    if kl.endswith("pwd") and is_path(inner):  # PWD=/home/me/src: the working directory
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
    return f"{word}{sep}{quote}{marked(assign_kind(key))}{tail}"


def prose_password(m: re.Match[str]) -> str:
    import re  # loaded by the rule that called this

    value = m.group("value")
    quote = value[0] if value[0] in "\"'`" else ""
    inner = value[1:-1] if quote else value
    if not inner.strip() or MARK in inner or reference(inner):
        return m.group(0)
    if m.group("head")[:3].lower() == "pwd" and is_path(inner):  # "pwd: /home/me/src"
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
        return m.group("head") + marked("password") + tail
    return m.group("head") + quote + marked("password") + quote


def bearer(m: re.Match[str]) -> str:
    value = m.group("value")
    if MARK in value:
        return m.group(0)
    # A token has digits, or mixed case at length; "Bearer authentication" is prose.
    has_digit = any(c.isdigit() for c in value)
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    if not (has_digit or (mixed and len(value) >= 16)):
        return m.group(0)
    return m.group("head") + marked("token")


def auth_header(m: re.Match[str]) -> str:
    value = m.group("value")
    if MARK in value or reference(value) or len(value) < 6:
        return m.group(0)
    return m.group("head") + marked("token")


def cli(m: re.Match[str]) -> str:
    value = m.group("value")
    quote = value[0] if value[0] in "\"'" else ""
    inner = value[1:-1] if quote else value
    if not inner.strip() or MARK in inner or reference(inner):
        return value
    flag = m.group("head")[-24:].lower()
    kind = "token" if "pass" not in flag and any(w in flag for w in ("token", "key", "secret")) \
        else "password"
    return quote + marked(kind) + quote


def _setter_value(value: str, kind: str) -> str:
    """A value given to a command that stores it: redacted unless it names where the secret
    lives (``$VAR``, ``<placeholder>``, ``@file``, ``-`` for stdin) or is a flag's true/false."""
    quote = value[0] if value[:1] in ("'", '"') and value[-1:] == value[:1] and len(value) > 1 else ""
    inner = value[1:-1] if quote else value
    v = inner.strip()
    if (not v or MARK in v or reference(v) or v.startswith("@") or v == "-"
            or v.lower() in ("true", "false", "yes", "no", "on", "off")):
        return value
    return quote + marked(kind) + quote


def _secret_name(name: str) -> bool:
    """``aws_secret_access_key``, ``//registry.npmjs.org/:_authToken``, ``github.token``."""
    last = name.strip("'\"").replace(":", "/").replace(".", "/").rsplit("/", 1)[-1]
    return bool(last) and secret_field(last)


def setter(m: re.Match[str]) -> str:
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
            done = _setter_value(value, assign_kind(name))
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
            done = _setter_value(w.group("w"), assign_kind(name.strip("'\"")))
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


def i18n_password(m: re.Match[str]) -> str:
    """A password after its word in another language (the new value): quoted, or shaped like
    one (a digit or a symbol with letters, mixed case), or digits after "is" / ":"."""
    value = m.group("value")
    left, inner, right = _quoted(value)
    tail = ""
    if not left:
        inner = value.rstrip(".,;:!?)]}")
        tail = value[len(inner):]
    v = inner.strip()
    if not v or MARK in v or reference(v) or (not left and any(c in v for c in "([{")):
        return value  # password: form.get(...) is code
    if not left and not (_password_shaped(v) or (m.group("c") and v.isdigit() and len(v) >= 4
                                                 and not _year_in_a_sentence(m))):
        return value
    return left + marked("password") + right + tail


def _year_in_a_sentence(m: re.Match[str]) -> bool:
    """A year followed by a word: "das Passwort ist 2024 abgelaufen" (expired in 2024)."""
    value = m.group("value")
    rest = m.string[m.end():m.end() + 40].lstrip(" \t")
    return (len(value) == 4 and value[:2] in ("19", "20") and rest[:1].isascii()
            and rest[:1].isalpha())


def config_value(m: re.Match[str]) -> str:
    """A value in a credential file: any word but a reference or prose ("default password is")."""
    value = m.group("value")
    if MARK in value or reference(value) or _plain_word(value):
        return m.group(0)
    return m.group("head") + marked("password")


# wp-config.php's placeholders: the sample file's values, not secrets.
_WP_PLACEHOLDERS = ("put your unique phrase here", "password_here", "database_name_here",
                    "username_here")


def define(m: re.Match[str]) -> str:
    name, value = m.group("name").upper(), m.group("value")
    inner = value[1:-1]
    if not (name.endswith(("_KEY", "_SALT")) or KEY_RULE.pattern().fullmatch(name)):
        return m.group(0)
    if not inner.strip() or MARK in inner or reference(inner) or inner.lower() in _WP_PLACEHOLDERS:
        return m.group(0)
    kind = "secret" if name.endswith("_SALT") else assign_kind(name)
    return m.group("head") + value[0] + marked(kind) + value[0]


def pin(m: re.Match[str]) -> str:
    return m.group("head") + marked("pin")


def xml(m: re.Match[str]) -> str:
    value = m.group("value")
    if not value.strip() or MARK in value or reference(value.strip()):
        return m.group(0)
    tag = m.group("tag")
    return f"<{tag}>{marked(assign_kind(tag))}</{tag}>"


def cookie(m: re.Match[str]) -> str:
    head, value = m.group("head"), m.group("value")
    first_only = head.lower().lstrip().startswith("set-")  # the rest are attributes (Path=/)
    out = []
    for i, pair in enumerate(value.split(";")):
        name, eq, val = pair.partition("=")
        v = val.strip()
        if (eq and v and (not first_only or i == 0) and MARK not in v and not reference(v)
                and not (len(v) < 6 and v.isalpha()) and " " not in name.strip()):
            pair = name + eq + val[:len(val) - len(val.lstrip())] + marked("cookie")
        out.append(pair)
    return ";".join(out)


def url(m: re.Match[str]) -> str:
    pw = m.group("pw")
    if MARK in m.group(0) or reference(pw):  # "https://[REDACTED:token]@host": done already
        return m.group(0)
    return f"{m.group('head')}:{marked('credentials-url')}@"


# "key" alone names a cache key, a lockfile entry or a public key as often as a secret: a hex or
# base64 value after it is a secret only when a word before it says so ("API key", "secret key").
_SECRET_QUALIFIER = ("secret", "private", "access", "signing", "encryption", "master", "license",
                     "licence", "auth", "session", "client", "deploy", "api", "app", "admin",
                     "account", "storage", "shared", "service", "webhook", "hmac")


def near_keyword(m: re.Match[str]) -> str:
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
    return m.group("head") + marked("token")


def keep_head(kind: str):  # type: ignore[no-untyped-def]
    return lambda m: m.group("head") + marked(kind)


def whole(kind: str):  # type: ignore[no-untyped-def]
    return lambda m: marked(kind)



REFERENCE = Rule((), p.REFERENCE_SOURCE, IGNORECASE, None)
KEY_RULE = Rule((), p.KEY, IGNORECASE, None)


def reference(value: str) -> bool:
    return REFERENCE.pattern().match(value) is not None


# Names of fields whose value is a secret whatever it looks like, besides those the key pattern matches
# (password, db_password, apiKey, client_secret, access_token, ...).
SECRET_FIELDS = frozenset({
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
    if low in SECRET_FIELDS:
        return True
    if (low in _NOT_SECRET_FIELDS or len(name) > 60
            or not any(w in low for w in ("pass", "pwd", "secret", "token", "key", "credential"))):
        return False  # file_path, command, content: no pattern to compile
    key = KEY_RULE.pattern()
    # plurals too: client_secrets, api_keys, credentials
    return key.fullmatch(name) is not None or (low.endswith("s") and key.fullmatch(name[:-1]) is not None)
