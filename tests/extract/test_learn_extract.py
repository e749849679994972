"""Lesson fields from a correction (lore.extract.shapes) and secret redaction (lore.redact)."""

from __future__ import annotations

import time

import pytest

from lore.extract.shapes import Extracted, extract
from lore.redact import contains_secret, redact

# ---- extract: one test per shape ----------------------------------------------------


def test_dont_use_instead():
    e = extract("no, don't use Redis, use local file sessions instead")
    assert e.shape == "dont_use_instead"
    assert e.rejected == "Redis"
    assert e.preferred == "local file sessions"
    assert e.kind == "preference"
    assert e.title == "Use local file sessions, not Redis"
    assert e.rule == "Use local file sessions instead of Redis."
    assert e.reasoning is None


def test_dont_use_instead_across_sentences_and_clauses():
    e = extract("Don't use moment.js, it pulls in every locale; use date-fns instead.")
    assert (e.shape, e.rejected, e.preferred) == ("dont_use_instead", "moment.js", "date-fns")
    assert e.title == "Use date-fns, not moment.js"
    assert e.reasoning == "it pulls in every locale"


def test_dont_do_x_do_y_instead():
    e = extract("don't mock the payment gateway, hit the sandbox API instead")
    assert e.shape == "dont_use_instead"
    assert e.rejected == "mock the payment gateway"
    assert e.preferred == "hit the sandbox API"
    assert e.kind == "preference"
    assert e.title == "Hit the sandbox API, don't mock the payment gateway"
    assert e.rule == "Don't mock the payment gateway; hit the sandbox API instead."


def test_use_instead_of():
    e = extract("use pathlib instead of os.path for the new loader")
    assert e.shape == "use_instead_of"
    assert e.preferred == "pathlib"
    assert e.rejected == "os.path"  # the rejected side; the rule keeps what it was for
    assert e.rule == "Use pathlib instead of os.path for the new loader."
    assert e.kind == "preference"
    assert e.title.startswith("Use pathlib, not os.path")


def test_instead_of_first():
    e = extract("Instead of hardcoding the port, read it from the PORT env var.")
    assert e.shape == "use_instead_of"
    assert e.rejected == "hardcoding the port"
    assert e.preferred == "read it from the PORT env var"
    assert e.title == "Read it from the PORT env var instead of hardcoding the port"


def test_use_instead_of_gerund():
    e = extract("please use a tmp_path fixture instead of writing into the repo")
    assert (e.preferred, e.rejected) == ("a tmp_path fixture", "writing into the repo")
    assert e.title == "Use a tmp_path fixture instead of writing into the repo"


def test_use_instead_takes_rejected_from_proposal():
    proposal = ("I looked at the CLI entry point. Let me use inquirer for the interactive prompts "
                "and wire it into the init command.")
    e = extract("use `@clack/prompts` instead", proposal)
    assert e.shape == "use_instead"
    assert e.preferred == "@clack/prompts"
    assert e.rejected == "inquirer"
    assert e.kind == "preference"
    assert e.title == "Use @clack/prompts, not inquirer"


def test_use_instead_without_proposal():
    e = extract("pnpm instead")
    assert e.shape == "use_instead"
    assert e.preferred == "pnpm"
    assert e.rejected is None
    assert e.title == "Use pnpm"


def test_use_instead_verb_phrase():
    e = extract("just return an empty list instead")
    assert e.shape == "use_instead"
    assert e.preferred == "return an empty list"
    assert e.title == "Return an empty list"


@pytest.mark.parametrize(
    ("message", "preferred", "rejected"),
    [
        ("I prefer pytest to unittest", "pytest", "unittest"),
        ("I prefer tabs over spaces in the Makefile", "tabs", "spaces in the Makefile"),
        ("prefer dataclasses rather than namedtuples", "dataclasses", "namedtuples"),
        ("I'd rather you use httpx than requests", "httpx", "requests"),
    ],
)
def test_prefer_over(message: str, preferred: str, rejected: str):
    e = extract(message)
    assert e.shape == "prefer_over"
    assert (e.preferred, e.rejected) == (preferred, rejected)
    assert e.kind == "preference"
    assert e.title == f"Prefer {preferred} over {rejected}"


def test_prefer_alone():
    e = extract("I'd prefer a single squashed commit")
    assert e.shape == "prefer_over"
    assert e.preferred == "a single squashed commit"
    assert e.rejected is None
    assert e.title == "Prefer a single squashed commit"


def test_id_rather_with_actions():
    e = extract("I'd rather keep it simple than add a cache layer")
    assert e.shape == "prefer_over"
    assert (e.preferred, e.rejected) == ("keep it simple", "add a cache layer")
    assert e.title == "Keep it simple, don't add a cache layer"


@pytest.mark.parametrize(
    ("message", "preferred", "rejected", "title"),
    [
        ("use structlog rather than the stdlib logging module", "structlog", "the stdlib logging module",
         "Use structlog, not the stdlib logging module"),
        ("not a class, but a plain function", "a plain function", "a class",
         "Use a plain function, not a class"),
        ("not a mixin; rather a small helper module", "a small helper module", "a mixin",
         "Use a small helper module, not a mixin"),
        ("use pathlib, not os.path", "pathlib", "os.path", "Use pathlib, not os.path"),
        ("Rather than a new class, add a method to the existing Parser",
         "add a method to the existing Parser", "a new class",
         "Add a method to the existing Parser, not a new class"),
    ],
)
def test_rather_than(message: str, preferred: str, rejected: str, title: str):
    e = extract(message)
    assert e.shape == "rather_than"
    assert (e.preferred, e.rejected) == (preferred, rejected)
    assert e.kind == "preference"
    assert e.title == title


def test_statement_keeps_its_wording():
    e = extract("Hey Claude, the migrations live under db/migrations, not src/.")
    assert e.title == "The migrations live under db/migrations, not src/"
    assert e.rejected == "src/"


def test_always():
    e = extract("always run ruff before committing")
    assert e.shape == "always"
    assert e.preferred == "run ruff before committing"
    assert e.rejected is None
    assert e.kind == "preference"
    assert e.title == "Always run ruff before committing"
    assert e.rule == "Always run ruff before committing."


def test_always_with_a_never():
    e = extract("Always use pnpm, never npm.")
    assert e.shape == "always"
    assert (e.preferred, e.rejected) == ("pnpm", "npm")
    assert e.title == "Always use pnpm, never npm"


def test_never():
    e = extract("never use grep on JSON output, it's fragile")
    assert e.shape == "never"
    assert e.rejected == "grep on JSON output"
    assert e.preferred is None
    assert e.kind == "anti_pattern"
    assert e.title == "Never use grep on JSON output"
    assert e.reasoning == "it's fragile"


def test_dont_ever():
    e = extract("don't ever force-push to a shared branch")
    assert e.shape == "never"
    assert e.kind == "anti_pattern"
    assert e.title == "Never force-push to a shared branch"


@pytest.mark.parametrize(
    ("message", "rejected"),
    [
        ("stop adding docstrings to every private helper", "adding docstrings to every private helper"),
        ("please stop using print for debugging", "print for debugging"),
        ("quit reformatting files you didn't touch", "reformatting files you didn't touch"),
        ("stop doing drive-by renames in unrelated modules", "drive-by renames in unrelated modules"),
    ],
)
def test_stop_doing(message: str, rejected: str):
    e = extract(message)
    assert e.shape == "stop_doing"
    assert e.rejected == rejected
    assert e.preferred is None
    assert e.kind == "anti_pattern"
    assert e.title.startswith("Avoid ")


def test_from_now_on_with_never():
    e = extract("That's not right. From now on, never push to main without asking.")
    assert e.shape == "from_now_on"
    assert e.kind == "anti_pattern"
    assert e.rejected == "push to main without asking"
    assert e.title == "Never push to main without asking"


def test_from_now_on_trailing_with_pair():
    e = extract("use pnpm from now on, not npm")
    assert e.shape == "from_now_on"
    assert (e.preferred, e.rejected) == ("pnpm", "npm")
    assert e.title == "Use pnpm, not npm"


@pytest.mark.parametrize(
    ("message", "title"),
    [
        ("going forward always write the migration by hand", "Always write the migration by hand"),
        ("next time, run the full test suite before saying it's done",
         "Run the full test suite before saying it's done"),
        ("In the future: keep PR descriptions under ten lines", "Keep PR descriptions under ten lines"),
    ],
)
def test_from_now_on_variants(message: str, title: str):
    e = extract(message)
    assert e.shape == "from_now_on"
    assert e.title == title
    assert e.kind == "preference"
    assert e.preferred


def test_dont():
    e = extract("do not touch the lockfile")
    assert e.shape == "dont"
    assert e.rejected == "touch the lockfile"
    assert e.preferred is None
    assert e.kind == "anti_pattern"
    assert e.title == "Don't touch the lockfile"


def test_dont_use_alone():
    e = extract("don't use mocks for the repository layer")
    assert e.shape == "dont"
    assert e.rejected == "mocks for the repository layer"
    assert e.title == "Don't use mocks for the repository layer"


def test_no_need_to():
    e = extract("no need to add a migration, the column is nullable")
    assert e.shape == "dont"
    assert e.rejected == "add a migration"
    assert e.title == "Don't add a migration"


def test_i_dont_think_is_not_a_rule():
    assert extract("I don't think that's needed").shape == "generic"


def test_we_use():
    e = extract("we use Poetry for dependency management")
    assert e.shape == "we_use"
    assert e.preferred == "Poetry"
    assert e.rejected is None
    assert e.kind == "project_rule"
    assert e.scope_hint == "project"
    assert e.title == "Use Poetry for dependency management"
    assert e.rule == "Use Poetry for dependency management in this project."


@pytest.mark.parametrize(
    ("message", "preferred", "rejected"),
    [
        ("nope, we're using vitest in this repo not jest", "vitest", "jest"),
        ("the project uses SQLAlchemy 2.0 style queries, not the legacy Query API",
         "SQLAlchemy 2.0 style queries", "the legacy Query API"),
        ("we rely on structlog", "structlog", None),
    ],
)
def test_we_use_variants(message: str, preferred: str, rejected: str | None):
    e = extract(message)
    assert e.shape == "we_use"
    assert (e.preferred, e.rejected) == (preferred, rejected)
    assert e.kind == "project_rule"


def test_we_dont_use():
    e = extract("we don't use ORMs in this service")
    assert e.shape == "we_use"
    assert e.rejected == "ORMs"
    assert e.kind == "project_rule"
    assert e.scope_hint == "project"


def test_generic():
    e = extract("hmm the sidebar still collapses on narrow screens. It should stay open above 900px.")
    assert e.shape == "generic"
    assert e.title == "The sidebar still collapses on narrow screens"
    assert e.rule == "The sidebar still collapses on narrow screens. It should stay open above 900px."
    assert e.rejected is None and e.preferred is None
    assert e.kind == "preference"


def test_generic_drops_a_bare_rejection():
    e = extract("That's not right. The export button belongs in the toolbar.")
    assert e.shape == "generic"
    assert e.title == "The export button belongs in the toolbar"


def test_generic_long_message_is_cut():
    msg = ("the report page should group invoices by customer and then by month with a subtotal row for "
           "each month and a grand total at the bottom of the table. ") * 4
    e = extract(msg)
    assert len(e.title) <= 90
    assert len(e.rule) <= 301
    assert not e.title.endswith(".")


# ---- extract: reasoning, scope, context ---------------------------------------------


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ("No, don't use Redis. Use local file sessions instead, since the app runs on a single box.",
         "the app runs on a single box"),
        ("don't use var, use const because var is function-scoped", "var is function-scoped"),
        ("don't use mocks here, as it hides integration bugs", "it hides integration bugs"),
        ("please use a fixture instead of hardcoding paths so that tests run anywhere",
         "so that tests run anywhere"),
        ("never commit the .env file, it's got the staging credentials", "it's got the staging credentials"),
        ("no, it breaks the CLI tests, use click.echo instead of print", "it breaks the CLI tests"),
        ("This is not necessary, the config already validates it. Don't add the env check.",
         "This is not necessary, the config already validates it"),
    ],
)
def test_reasoning(message: str, reason: str):
    assert extract(message).reasoning == reason


def test_reasoning_joins_the_rule():
    e = extract("No, don't use Redis. Use local file sessions instead, since the app runs on a single box.")
    assert e.rule == "Use local file sessions instead of Redis because the app runs on a single box."


@pytest.mark.parametrize(
    "message",
    [
        "use pathlib instead of os.path",
        "That's not right, use pathlib instead of os.path",
        "as I said, use the existing http_client helper instead of a new session",
    ],
)
def test_no_reasoning(message: str):
    assert extract(message).reasoning is None


@pytest.mark.parametrize(
    ("message", "scope"),
    [
        ("never add emoji to commit messages, globally", "global"),
        ("make this a global rule: always run the formatter", "global"),
        ("in all my projects use ruff, not black", "global"),
        ("every project should pin its Python version", "global"),
        ("Not just for lore - use conventional commits", "global"),
        ("In general, don't leave TODO comments in code you write", "global"),
        ("in this project, never import from the internal package", "project"),
        ("don't edit generated files in this repo", "project"),
        ("for this codebase prefer small modules", "project"),
        ("here we keep fixtures next to the tests", "project"),
        ("don't touch the lockfile", None),
    ],
)
def test_scope_hint(message: str, scope: str | None):
    assert extract(message).scope_hint == scope


def test_scope_phrase_is_not_part_of_the_rejected_thing():
    e = extract("don't use Redis in this project")
    assert e.rejected == "Redis"
    assert e.scope_hint == "project"


def test_context_takes_the_plan_sentence():
    proposal = ("The session store is in app/sessions.py. It currently keeps everything in memory. "
                "I'll add Redis as the session backend and update the settings. Sound good?")
    e = extract("no, don't use Redis, use local file sessions instead", proposal)
    assert e.context == "I'll add Redis as the session backend and update the settings."


def test_context_takes_the_last_plan_sentence():
    proposal = ("Let me look at the failing test. The fixture leaks state between runs. "
                "Would you like me to rewrite the fixture with a fresh database per test?")
    e = extract("no, just reset the tables", proposal)
    assert e.context == "Would you like me to rewrite the fixture with a fresh database per test?"


def test_context_falls_back_to_the_first_sentence_and_is_cut():
    proposal = ("The build fails because the generated client is out of date with the OpenAPI schema that "
                "was changed in the last commit, and the CI job regenerates it with a different version "
                "of the generator. Nothing else changed.")
    e = extract("don't regenerate it by hand", proposal)
    assert e.context is not None
    assert len(e.context) <= 160
    assert e.context.startswith("The build fails because the generated client")
    assert proposal.startswith(e.context)


def test_no_proposal_no_context():
    assert extract("don't touch the lockfile").context is None
    assert extract("don't touch the lockfile", "   ").context is None


# ---- extract: normalisation and robustness ------------------------------------------


def test_curly_apostrophes():
    e = extract("No, don\u2019t use Redis \u2014 use SQLite instead, thanks!")
    assert (e.shape, e.rejected, e.preferred) == ("dont_use_instead", "Redis", "SQLite")
    e = extract("I\u2019d rather you use \u201chttpx\u201d than requests")
    assert (e.preferred, e.rejected) == ("httpx", "requests")


@pytest.mark.parametrize(
    "message",
    [
        "don't use Redis, use SQLite instead",
        "dont use Redis, use SQLite instead",
        "do not use Redis, use SQLite instead",
        "No, don't use Redis, use SQLite instead",
        "nope, don't use Redis, use SQLite instead please",
        "Actually, don't use Redis, use SQLite instead.",
        "Hey Claude, don't use Redis, use SQLite instead. Thanks!",
        "please don't use Redis, use SQLite instead",
    ],
)
def test_openers_and_politeness(message: str):
    e = extract(message)
    assert (e.shape, e.rejected, e.preferred) == ("dont_use_instead", "Redis", "SQLite")
    assert e.title == "Use SQLite, not Redis"


def test_backticks_and_quotes_are_stripped_from_names():
    e = extract("Please don't use `requests` here, use \"httpx\" instead.")
    assert (e.rejected, e.preferred) == ("requests", "httpx")


def test_phrases_are_bounded():
    long_name = " ".join(["very"] * 60) + " long thing"
    e = extract(f"don't use {long_name}, use the short one instead")
    assert e.rejected is not None and len(e.rejected) <= 80
    assert len(e.title) <= 90


@pytest.mark.parametrize(
    "message",
    [
        "no, don't use Redis, use local file sessions instead",
        "use pathlib instead of os.path",
        "I prefer pytest to unittest",
        "never use grep on JSON output",
        "stop adding docstrings to every private helper",
        "we use Poetry for dependency management",
        "hmm the tests are still failing on CI.",
        "no",
        "thanks!",
        "```python\nprint('hi')\n```",
    ],
)
def test_title_is_short_capitalised_without_period(message: str):
    e = extract(message)
    assert isinstance(e, Extracted)
    assert 0 < len(e.title) <= 90
    assert not e.title.endswith(".")
    assert not e.title[0].islower()
    assert e.rule
    assert e.kind in ("preference", "anti_pattern", "project_rule")


def test_huge_input_is_cut_and_fast():
    message = "no, don't use Redis, use local file sessions instead. " + "x " * 50_000
    assert len(message) > 100_000
    start = time.perf_counter()
    e = extract(message, "Let me add Redis. " * 6000)
    assert time.perf_counter() - start < 10  # only backtracking would come near (see below)
    assert e.rejected == "Redis"


@pytest.mark.parametrize(
    "chunk", ["don't use ", "instead ", "not x but ", "- ", "a" * 7, "use X instead of Y, ", "`", "stop "]
)
def test_repetitive_input_is_fast(chunk: str):
    message = chunk * (100_000 // len(chunk) + 1)
    start = time.perf_counter()
    extract(message, message)
    # Not a timing claim: a linear pass takes milliseconds, catastrophic backtracking on
    # 100,000 characters takes minutes. 10 s separates the two on any machine, however busy.
    assert time.perf_counter() - start < 10


@pytest.mark.parametrize("message", ["", "   ", "\n\t \n"])
def test_empty_message_gives_nothing(message: str):
    assert extract(message) is None


# ---- redact ---------------------------------------------------------------------------

# Built from pieces so that no literal key-shaped string sits in the source.
OPENAI_KEY = "sk-" + "proj-" + "Q7vX2mLp9RtK4wZb8NcY3hJd6FsA1gEu"
ANTHROPIC_KEY = "sk-" + "ant-api03-" + "Zt8qL2xW9vB4nM7kP1cR6yH3jD5fG0sA"
GITHUB_TOKEN = "ghp" + "_" + "R2d2C3p0L8k4M7n1B5v9X6z3Q0w4E8t2Y6u1"
GITHUB_PAT = "github_pat" + "_" + "11AQ4ZT7Y0mXk2Lp9RtK4w_Zb8NcY3hJd6FsA1gEuQ7vX2"
AWS_KEY_ID = "AKIA" + "Z7Q2M4XK9TBR3WPL"
AWS_SECRET = "Xq9" + "vR2mT7/Lp4kW8zN+c3Yb6Hj1Fs5Gd0Aa2Ue9Ki"
GOOGLE_KEY = "AIza" + "Sy" + "B3x9Qm2Lp7Rt4Kw8Zb1Nc6Yh0Jd5Fs9Ga"
SLACK_TOKEN = "xoxb" + "-2048-4096-" + "Qm7Lp2Rt9Kw4"
STRIPE_KEY = "sk_live" + "_" + "51Hq7Lp2Rt9Kw4Zb8NcY3hJd"
JWT = ("eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9" + ".eyJzdWIiOiJkZXYtNDIiLCJyb2xlIjoiYWRtaW4ifQ"
       + ".Hq7Lp2Rt9Kw4Zb8NcY3hJd6FsA1gEuQ7vX2mLp9RtK4")


@pytest.mark.parametrize(
    ("secret", "kind"),
    [
        (OPENAI_KEY, "api-key"),
        (ANTHROPIC_KEY, "api-key"),
        (GITHUB_TOKEN, "token"),
        (GITHUB_PAT, "token"),
        (AWS_KEY_ID, "aws-key"),
        (GOOGLE_KEY, "api-key"),
        (SLACK_TOKEN, "token"),
        (STRIPE_KEY, "api-key"),
        (JWT, "jwt"),
    ],
)
def test_redact_fixed_formats(secret: str, kind: str):
    text = f"the deploy failed with {secret} in the log, please rotate it"
    out = redact(text)
    assert secret not in out
    assert out == f"the deploy failed with [REDACTED:{kind}] in the log, please rotate it"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("set password=hunter22 in the test env", "set password=[REDACTED:password] in the test env"),
        ("passwd: s3cret-Pass then restart", "passwd: [REDACTED:password] then restart"),
        ("CREATE USER app WITH PASSWORD 'open sesame 7';",
         "CREATE USER app WITH PASSWORD '[REDACTED:password]';"),
        ('api_key = "c0ffee-b4b3-key" in settings', 'api_key = "[REDACTED:api-key]" in settings'),
        ("secret: tr0ub4dor&3 is in the yaml", "secret: [REDACTED:secret] is in the yaml"),
        ("run it with token=ab12cd34 and see", "run it with token=[REDACTED:token] and see"),
        ('{"client_secret": "cs-99812-live"}', '{"client_secret": "[REDACTED:secret]"}'),
        ("export DB_PASSWORD=Pa55word!", "export DB_PASSWORD=[REDACTED:password]"),
        (f"aws_secret_access_key = {AWS_SECRET}", "aws_secret_access_key = [REDACTED:aws-key]"),
    ],
)
def test_redact_assignments_keep_the_key(text: str, expected: str):
    assert redact(text) == expected


def test_redact_bearer_tokens():
    assert (redact("curl -H 'Authorization: Bearer qa81Kd92mZ7x' https://api.example.com")
            == "curl -H 'Authorization: Bearer [REDACTED:token]' https://api.example.com")
    assert redact("send Bearer 7fK2pQ9xL4mW8zR1 with it") == "send Bearer [REDACTED:token] with it"
    assert redact(f"Authorization: Bearer {JWT}") == "Authorization: Bearer [REDACTED:jwt]"


def test_redact_url_credentials():
    out = redact("connect to postgres://admin:Sup3rS3cret@db.internal:5432/app now")
    assert out == "connect to postgres://admin:[REDACTED:credentials-url]@db.internal:5432/app now"
    assert redact("redis://:hunter22@cache:6379") == "redis://:[REDACTED:credentials-url]@cache:6379"


def test_redact_private_key_block():
    block = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx7Lp2Rt9Kw4Zb8NcY3hJd6Fs\n"
             "A1gEuQ7vX2mLp9RtK4wZb8NcY3hJd6FsA1gEuQ\n-----END RSA PRIVATE KEY-----")
    out = redact(f"here is the key:\n{block}\nuse it for staging")
    assert out == "here is the key:\n[REDACTED:private-key]\nuse it for staging"


def test_redact_private_key_block_cut_short():
    out = redact("oops: -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ")
    assert out == "oops: [REDACTED:private-key]"


def test_redact_high_entropy_after_keyword():
    hexkey = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b"
    b64 = "Zm9vYmFyQmF6UXV4MTIzNDU2Nzg5MEFCQ0RFRkdISUpL"
    assert redact(f"my api key is {hexkey} thanks") == "my api key is [REDACTED:token] thanks"
    assert redact(f"the secret {b64}") == "the secret [REDACTED:token]"


@pytest.mark.parametrize(
    "text",
    [
        "commit 3f2a9c1e5b7d4a6f8e0c2b4d6f8a0c2e4b6d8f0a fixed the flaky test",
        "the key change is in commit 3f2a9c1e5b7d4a6f8e0c2b4d6f8a0c2e4b6d8f0a",
        "request id 123e4567-e89b-12d3-a456-426614174000 failed",
        "bump fastapi to 0.115.2 and python to 3.12.4",
        "see src/lore/auth/token_refresh.py and docs/secrets.md",
        "use Bearer tokens for the API and rotate the password monthly",
        "the password field should be hashed with argon2",
        "password: the one in the team vault",
        "token == expected in the assertion",
        "max_tokens=4096 is the limit",
        "password=os.environ['DB_PASSWORD']",
        "api_key=${OPENAI_API_KEY}",
        "http://localhost:8080/health",
        "don't use Redis, use local file sessions instead",
    ],
)
def test_redact_leaves_ordinary_text(text: str):
    assert redact(text) == text
    assert not contains_secret(text)


@pytest.mark.parametrize(
    "text",
    [
        f"keys: {OPENAI_KEY} {GITHUB_TOKEN} {AWS_KEY_ID} {JWT}",
        "password=hunter22; token: ab12cd34; postgres://u:p4ss@h/db",
        "Authorization: Bearer qa81Kd92mZ7x and Bearer 7fK2pQ9xL4mW8zR1",
        "-----BEGIN PRIVATE KEY-----\nabc",
        '"api_key": "c0ffee"',
        "plain words only",
    ],
)
def test_redact_is_idempotent(text: str):
    once = redact(text)
    assert redact(once) == once


def test_contains_secret():
    assert contains_secret(f"token {GITHUB_TOKEN}")
    assert contains_secret("password=hunter22")
    assert not contains_secret("")
    assert not contains_secret("no, don't use Redis")
    assert not contains_secret("[REDACTED:token]")


@pytest.mark.parametrize("chunk", ["a-", "sk-", "token ", "password=", "x://", "eyJ.", "key is ab", "a_b-"])
def test_redact_is_linear(chunk: str):
    text = chunk * (100_000 // len(chunk))
    start = time.perf_counter()
    redact(text)
    assert time.perf_counter() - start < 30  # guards against backtracking (minutes), not speed
