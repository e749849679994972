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

from lore.redact import contains_secret, redact, redact_value

CORPUS = [json.loads(line) for line in
          (Path(__file__).parent / "data" / "secrets_corpus.jsonl").read_text().splitlines()]
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
