"""Synthetic but varied lesson corpus for the benchmarks.

The texts are built from a seeded random walk over topics, symptoms, causes and
fixes, so a 100,000-lesson corpus has a realistic spread of vocabulary and of
embedding directions (random vectors would flatter quantised search).
Embeddings of the corpus are cached under ``bench/.cache`` (``$LORE_BENCH_CORPUS_CACHE`` to put them
elsewhere) because computing them with the real model takes minutes.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path

CACHE = Path(os.environ.get("LORE_BENCH_CORPUS_CACHE") or Path(__file__).parent / ".cache")

TOPICS = [
    "nginx", "postgres", "sqlite", "redis", "docker", "kubernetes", "terraform", "react",
    "vue", "django", "flask", "fastapi", "pytest", "webpack", "vite", "typescript", "rust",
    "go modules", "gradle", "maven", "celery", "kafka", "rabbitmq", "elasticsearch",
    "graphql", "grpc", "oauth", "jwt", "websockets", "s3 uploads", "cloudfront", "lambda",
    "github actions", "gitlab ci", "git rebase", "git submodules", "poetry", "pip", "conda",
    "numpy", "pandas", "matplotlib", "jupyter", "spark", "airflow", "dbt", "snowflake",
    "bigquery", "mongodb", "dynamodb", "cassandra", "prometheus", "grafana", "sentry",
    "logging", "tracing", "rate limiting", "caching", "pagination", "migrations", "cron",
    "systemd", "ssh", "tls certificates", "dns", "cors", "csrf", "unicode", "timezones",
    "floating point", "regex", "bash scripts", "makefiles", "cmake", "llvm", "wasm",
    "electron", "swiftui", "android gradle", "flutter", "unity", "opengl", "ffmpeg",
    "openapi", "protobuf", "yaml config", "env variables", "feature flags", "i18n",
    "accessibility", "css grid", "tailwind", "storybook", "playwright", "selenium",
]
SYMPTOMS = [
    "requests hang until the timeout", "the build fails only in CI", "memory grows without bound",
    "tests pass locally but fail on the server", "the first request after deploy is slow",
    "connections are dropped after a minute of idling", "the container exits with code 137",
    "dates shift by one hour twice a year", "the job runs twice", "the cache never invalidates",
    "uploads above 10 MB are rejected", "the page flickers on load", "queries lock the table",
    "the log file fills the disk", "the service returns 502 behind the proxy",
    "imports resolve to the wrong version", "the lock file keeps changing", "retries make it worse",
    "secrets leak into the logs", "the migration cannot be rolled back", "errors are swallowed",
    "results come back in a random order", "the watcher misses renamed files",
    "non-ASCII names are garbled", "the progress bar never finishes", "CPU spins at 100 percent",
]
CAUSES = [
    "the default timeout is shorter than the upstream keeps the connection",
    "the library reads the environment only at import time", "a global is shared between workers",
    "the ORM opens a transaction per row",
    "the health check hits an endpoint that needs the database",
    "the server and the client disagree on the time zone", "two schedulers run the same job",
    "the cache key omits the user id", "the proxy buffers the whole body in memory",
    "the test relies on dictionary order", "the file handle is never closed",
    "the retry loop has no backoff or jitter", "the dependency floats to a new major version",
    "the query has no index on the foreign key", "the exception handler catches BaseException",
    "the encoding defaults to the locale instead of UTF-8", "the signal handler is installed too late",
    "the batch size is larger than the message limit", "the mock hides a real network call",
]
FIXES = [
    "set the timeout explicitly and make it configurable",
    "read configuration once at start-up and pass it down",
    "use one connection per process and a pool for threads", "wrap the batch in a single transaction",
    "make the health check independent of the database", "store and compare timestamps in UTC",
    "take a lock or use a unique job id", "include every varying input in the cache key",
    "stream the upload instead of buffering it", "sort explicitly before comparing",
    "use a context manager so the handle closes on error", "add exponential backoff with jitter and a cap",
    "pin the major version and upgrade deliberately", "add the missing index and check the query plan",
    "catch the specific exception and re-raise the rest", "open files with encoding='utf-8' everywhere",
    "install the handler before starting the worker threads", "split the batch under the size limit",
    "run the test against a real server on loopback",
]
ADVICE = [
    "Prefer the simple file-based option over running another server.",
    "Write a regression test before changing the code.", "Log the request id with every line.",
    "Document the reason next to the setting.", "Measure before and after the change.",
    "Keep the change small and reviewable.", "Never commit the generated file.",
    "Ask before adding a new dependency.", "Check the changelog of the upstream project.",
]


@dataclass(frozen=True, slots=True)
class Doc:
    title: str
    content: str
    tags: tuple[str, ...]


def make_corpus(n: int, seed: int = 7) -> list[Doc]:
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        topic, other = rng.sample(TOPICS, 2)
        symptom, cause, fix = rng.choice(SYMPTOMS), rng.choice(CAUSES), rng.choice(FIXES)
        title = f"{topic.capitalize()}: {symptom}"
        content = (
            f"With {topic} and {other}, {symptom}. The cause was that {cause}. "
            f"Fix: {fix}. {rng.choice(ADVICE)} (case {i})"
        )
        docs.append(Doc(title, content, (topic.replace(" ", "-"), other.replace(" ", "-"))))
    return docs


def make_queries(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        topic = rng.choice(TOPICS)
        style = rng.randrange(3)
        if style == 0:
            out.append(f"{topic} {rng.choice(SYMPTOMS)}")
        elif style == 1:
            out.append(f"why does {topic} fail when {rng.choice(CAUSES)}")
        else:
            out.append(f"how to {rng.choice(FIXES)}")
    return out


def corpus_vectors(docs: list[Doc], embedder, name: str):
    """Embeddings of ``docs`` (title + blank line + content), cached by name and size."""
    import numpy as np

    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"{name}-{len(docs)}.npy"
    if path.exists():
        return np.load(path)
    # make_corpus(n) is a prefix of make_corpus(m) for n < m: reuse a larger cache.
    for bigger in sorted(CACHE.glob(f"{name}-*.npy")):
        size = int(bigger.stem.rsplit("-", 1)[1])
        if size > len(docs):
            return np.load(bigger, mmap_mode="r")[: len(docs)].copy()
    vecs = embedder.embed_documents([f"{d.title}\n\n{d.content}" for d in docs])
    arr = np.asarray(vecs, dtype=np.float32)
    np.save(path, arr)
    return arr
