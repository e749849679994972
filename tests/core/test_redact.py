"""The redactor against a corpus of secret formats and look-alikes, and its properties.

tests/data/secrets_corpus.jsonl: one JSON object a line. ``expect: redacted`` lines carry a
fake value in a published format (provider keys and tokens, private key blocks, connection
strings, .env assignments, auth headers, passwords in sentences) that must not survive;
``expect: kept`` lines are look-alikes (commit hashes, UUIDs, checksums, base64 images,
version strings, the word "password" in ordinary prose and code) that must come back unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.secret_corpus import (
    LOOK_ALIKES,
    STRUCTURED,
    WHOLE_LINE,
    look_alike_cases,
    render,
    secret_cases,
    structured_case,
)
from bench.secret_corpus import SECRETS as FORMATS
from lore.redact import contains_secret, redact, redact_value

CORPUS = [json.loads(line) for line in
          (Path(__file__).parents[1] / "data" / "secrets_corpus.jsonl").read_text().splitlines()]
SECRETS = [r for r in CORPUS if r["expect"] == "redacted"]
ORDINARY = [r for r in CORPUS if r["expect"] == "kept"]


def test_corpus_size():
    assert len(SECRETS) >= 200
    assert len(ORDINARY) >= 200
    assert len({r["format"] for r in SECRETS}) >= 80


@pytest.mark.parametrize("row", SECRETS, ids=lambda r: r["format"])
def test_secret_is_caught(row: dict[str, str]):
    out = redact(row["text"])
    assert row["secret"] not in out
    assert "[REDACTED:" in out
    assert contains_secret(row["text"])


@pytest.mark.parametrize("row", ORDINARY, ids=lambda r: r["format"])
def test_look_alike_survives(row: dict[str, str]):
    assert redact(row["text"]) == row["text"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("No, use the password Tr0ub4dor&3 for the staging box, not the default",
         "No, use the password [REDACTED:password] for the staging box, not the default"),
        ("the staging db password is Hunter2Staging!",
         "the staging db password is [REDACTED:password]"),
        ("the password for the staging box is q8Lm2x.",
         "the password for the staging box is [REDACTED:password]."),
        ("the wifi password is swordfish", "the wifi password is [REDACTED:password]"),
        ("pwd: Xy9!kk then restart", "pwd: [REDACTED:password] then restart"),
        ("the password reset flow", "the password reset flow"),
        ("the password is required", "the password is required"),
    ],
)
def test_passwords_in_prose(text: str, expected: str):
    assert redact(text) == expected


def test_redact_value_walks_json():
    value = {"prompt": "the password is Tr0ub4dor&3", "n": 3,
             "list": ["token=ab12cd34ef", {"k": "plain"}], "none": None}
    out = redact_value(value)
    assert out == {"prompt": "the password is [REDACTED:password]", "n": 3,
                   "list": ["token=[REDACTED:token]", {"k": "plain"}], "none": None}


# Text built from the pieces secrets and prose are made of, so the generator reaches the
# patterns' edges (quotes, separators, prefixes, tags from an earlier pass).
_PIECES = st.sampled_from([
    "password", "pwd", " is ", ": ", "=", "'", '"', "`", "sk-", "ghp_", "AKIA", "eyJ", ".", "-",
    "_", "://", "@", "Bearer ", "Authorization: ", "[REDACTED:token]", "[REDACTED:", "]",
    "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----", "token", "secret", "key",
    "for the staging box", " ", "\n", "Hunter2!", "x", "Q7vX2mLp9RtK4wZb8NcY3hJd6FsA1gEu", "0",
    "a3f9", "use ", "the ", "$", "{{", "…",
    # the command-line, cookie, URL-signature, XML and JSON rules
    "mysql ", " -p", "sshpass", " -a ", "redis-cli", "Cookie: ", "a=b", "; ", "--password ",
    "--token ", "curl ", " -u ", "u:", "echo ", " | ", "--password-stdin", "sudo -S",
    "<password>", "</password>", "：", "net user ", "chpasswd <<< ", '"auth": "', "_auth=",
    "?sig=", "&X-Amz-Signature=", "zip ", " -P ",
])
_TEXT = st.one_of(st.text(max_size=300),
                  st.lists(st.one_of(_PIECES, st.text(max_size=8)), max_size=40).map("".join))


@settings(max_examples=400, deadline=None)
@given(_TEXT)
def test_redaction_is_idempotent_and_never_raises(text: str):
    once = redact(text)
    assert isinstance(once, str)
    assert redact(once) == once
    assert contains_secret(once) is False


# ---- the generated corpus (bench/secret_corpus.py): every format drawn with several seeds ----


def test_generated_corpus_size():
    assert len({name for name, _ in FORMATS}) == len(FORMATS) >= 350
    assert len({name for name, _ in LOOK_ALIKES}) == len(LOOK_ALIKES) >= 300
    drawn = {secret for _, _, secret in secret_cases(3)}
    assert len(drawn) == 3 * len(FORMATS)  # every draw is a different secret


@pytest.mark.parametrize(("fmt", "text", "secret"), secret_cases(3), ids=lambda v: v[:40])
def test_generated_secret_is_caught(fmt: str, text: str, secret: str):
    out = redact(text)
    assert secret not in out, out
    assert "[REDACTED:" in out
    assert redact(out) == out


@pytest.mark.parametrize(("name", "text"), look_alike_cases(3), ids=lambda v: v[:40])
def test_generated_look_alike_is_kept(name: str, text: str):
    assert redact(text) == text


# Surroundings a secret is pasted into: a sentence, a shell line, a JSON string, a Markdown list.
_AROUND = st.sampled_from(["{}", "see {} here", "$ {}\n", "- {}\n- next", "> {}", "\n\n{}\n\n",
                           "({})", "ok. {}. done", "{}\n" + "x" * 30])


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(FORMATS), st.integers(0, 10**9), _AROUND)
def test_any_draw_of_any_format_is_caught_in_any_surroundings(fmt, seed: int, around: str):
    text, secret = render(fmt[1], seed)
    if fmt[0] in WHOLE_LINE:  # a config line ends where it ends
        around = around.replace("{}", "{}\n")
    out = redact(around.format(text))
    assert secret not in out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FORMATS), min_size=2, max_size=6), st.integers(0, 10**9),
       st.sampled_from([" ", "; ", " && ", "\n", " | ", ", "]))
def test_secrets_side_by_side_are_all_caught(fmts, seed: int, sep: str):
    """Several commands, headers or assignments on one line: each rule still sees each one."""
    if "\n" not in sep:
        fmts = [f for f in fmts if f[0] not in WHOLE_LINE]
    drawn = [render(f[1], seed + i) for i, f in enumerate(fmts)]
    out = redact(sep.join(text for text, _ in drawn))
    assert not [secret for _, secret in drawn if secret in out], out


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(LOOK_ALIKES), st.integers(0, 10**9))
def test_any_draw_of_any_look_alike_is_kept(alike, seed: int):
    text, _ = render(alike[1], seed)
    assert redact(text) == text


@pytest.mark.parametrize(("fmt", "value"), STRUCTURED, ids=[s[0] for s in STRUCTURED])
def test_secret_named_fields_are_redacted_at_any_depth(fmt: str, value):
    for seed in range(3):
        drawn, secrets = structured_case(value, seed)
        out = json.dumps(redact_value(drawn))
        assert secrets and not [s for s in secrets if s in out], out
        assert redact_value(redact_value(drawn)) == redact_value(drawn)


def test_fields_that_only_look_like_secret_names_are_kept():
    value = {"max_tokens": 512, "tokens": ["a", "b"], "key": "Enter", "cache_key": "npm-abc",
             "secret_name": "prod-db", "password_min_length": 12, "pwd": "/home/me/src",
             "password": "${DB_PASSWORD}", "token": "", "session_id": "3f2a", "auth": "none"}
    assert redact_value(value) == value


# ---- credential files, secret-setting commands, passwords in other languages, PINs ----------
# (text, redacted text or None when kept): .pgpass, psk, wp-config, .netrc, commands that set a
# secret, passwords in other languages, PINs, and the look-alikes beside them.
CREDENTIAL_FILES_SETTERS_LANGUAGES = [
    ("db.example.com:5432:shop:app:Xq9pLm2Zr7", "db.example.com:5432:shop:app:[REDACTED:password]"),
    ("*:*:*:postgres:hunter", "*:*:*:postgres:[REDACTED:password]"),
    ('network={\n  ssid="home"\n  psk="correcthorse"\n}',
     'network={\n  ssid="home"\n  psk="[REDACTED:password]"\n}'),
    ("define('DB_PASSWORD', 'p4ss');", "define('DB_PASSWORD', '[REDACTED:password]');"),
    ("define( 'NONCE_SALT', 'j<3;kd[a9' );", "define( 'NONCE_SALT', '[REDACTED:secret]' );"),
    ("machine h login me password hunter", "machine h login me password [REDACTED:password]"),
    ("printf 'Hunter22\\n' | passwd --stdin deploy",
     "printf '[REDACTED:password]' | passwd --stdin deploy"),
    ("heroku config:set STRIPE_KEY=abc DEBUG=true -a shop",
     "heroku config:set STRIPE_KEY=[REDACTED:secret] DEBUG=true -a shop"),
    ('dotnet user-secrets set "Movies:ServiceApiKey" "12345"',
     'dotnet user-secrets set "Movies:ServiceApiKey" "[REDACTED:api-key]"'),
    ("aws configure set aws_secret_access_key abcd1234",
     "aws configure set aws_secret_access_key [REDACTED:aws-key]"),
    ("my PIN is 4821", "my PIN is [REDACTED:pin]"),
    ("Das Passwort ist Geheim123", "Das Passwort ist [REDACTED:password]"),
    ("Le mot de passe est soleil42", "Le mot de passe est [REDACTED:password]"),
    ("密码是abc12345。", "密码是[REDACTED:password]。"),
    ("비밀번호는 kimchi77입니다", "비밀번호는 [REDACTED:password]입니다"),
    ("パスワードは「tanuki」です", "パスワードは「[REDACTED:password]」です"),
    ("Le mot de passe est « soleil »", "Le mot de passe est «[REDACTED:password]»"),
    # kept: the sample's placeholders, a non-secret setting, prose, a year, a small pin number
    ("define('AUTH_KEY', 'put your unique phrase here');", None),
    ("aws configure set region us-east-1", None),
    ("heroku config:set API_KEY=$API_KEY", None),
    ("Das Passwort ist falsch", None),
    ("Das Passwort ist 2024 abgelaufen", None),
    ("GPIO pin 17 drives the LED", None),
    ("fe80:0:0:0:1ff:fe23:4567:890a", None),
]



# ---- the shapes that were missed, and the look-alikes that were eaten ----------------------
@pytest.mark.parametrize(("text", "expected"), [
    ("mysql -uroot -pS3cretPass db", "mysql -uroot -p[REDACTED:password] db"),
    ("mysql -u root -p'S3cret Pass' db", "mysql -u root -p'[REDACTED:password]' db"),
    ("sshpass -p 'Hunter2x' ssh me@host", "sshpass -p '[REDACTED:password]' ssh me@host"),
    ("Cookie: sessionid=abc123def456ghi; csrftoken=xyz987",
     "Cookie: sessionid=[REDACTED:cookie]; csrftoken=[REDACTED:cookie]"),
    ("password：Tr0ub4dor", "password：[REDACTED:password]"),
    ("password： swordfish", "password： [REDACTED:password]"),
    # kept: a cache key, a hex public key, the working directory, a prompting -p
    ("key: 3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a", None),
    ("public key: 04a34b99f22c790c4e36b2b3c2c35a36db06226e41c692fc82b8b56ac1c540c5b", None),
    ("pwd: /home/me/src", None),
    ("PWD=/home/me/src", None),
    ("mysql -u root -p shop", None),
    ("mysql -h db -P 3306 -u app -p shop", None),
    *CREDENTIAL_FILES_SETTERS_LANGUAGES,
])
def test_reported_shapes(text: str, expected: str | None):
    assert redact(text) == (text if expected is None else expected)


# ---- cutting after redacting ----------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.sampled_from([f for f in FORMATS if "\n" not in f[1]]), st.integers(0, 10**9),
       st.integers(-120, 5))
def test_a_cut_never_keeps_part_of_a_secret(fmt, seed: int, offset: int):
    """The secret straddles (or ends just before) the limit: what is kept holds none of it."""
    from lore.redact import redact_clipped

    text, secret = render(fmt[1], seed)
    limit = 500
    start = max(0, limit + offset - text.index(secret) - len(secret) // 2)
    doc = "word " * (start // 5) + " " * (start % 5) + text + " tail" * 200
    out = redact_clipped(doc, limit)
    assert len(out) <= limit + 1
    assert secret[:8] not in out, out[-200:]


def test_clip_drops_the_run_it_falls_in():
    from lore.redact import clip

    assert clip("abc def", 5) == "abc "
    assert clip("abc def", 4) == "abc "
    assert clip("abc def", 3) == "abc"
    assert clip("short", 10) == "short"
    assert clip("x" * 50, 20) == ""


def test_the_corpus_speaks_ten_languages():
    languages = {name.split("-")[1] for name, _ in FORMATS if name.startswith("password-")
                 and name.split("-")[1] not in ("in", "for", "is", "digits")}
    assert len(languages) >= 10, languages


_COMMAND_WORDS = st.sampled_from(["heroku config:set", "fly secrets set", "dotnet user-secrets set",
                                  "kubectl create secret generic x", "vault kv put a", "cf set-env",
                                  "aws configure set", "netlify env:set", "passwd --stdin u <<<",
                                  " | passwd --stdin u", "echo", "printf '%s'", "-a", "--app",
                                  "=", "'", '"', "\\\n", "$X", "K=V", "true", " ", "password",
                                  "psk=", "machine h", "Passwort ist", "密码是", "Hasło to", "비밀번호는",
                                  "PIN", "1234", "db.example.com:5432:db:u:", "x9!Ab"])


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(_COMMAND_WORDS, st.text(max_size=6)), max_size=14).map(" ".join))
def test_setter_commands_never_raise_and_settle(text: str):
    """Setters, stdin readers, credential lines and other languages mixed: one pass settles
    (a setter once read a command name as the end of its words, until another rule redacted
    that name; `passwd … --stdin` once reached past the first here-string to the second)."""
    once = redact(text)
    assert redact(once) == once
