"""The Dockerfile and compose.yaml, checked without Docker (it cannot run on the build machines):
every file the image copies exists, the server runs as a user without privileges on 0.0.0.0
with tokens, the health check asks a route the app has, compose mounts the data and config
volumes, and the example config validates. tests/e2e/test_docker_steps.py runs the image's
steps in a virtual environment."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path

import yaml

from lore.config import Config

ROOT = Path(__file__).resolve().parents[2]


def instructions() -> list[tuple[str, str]]:
    """The Dockerfile as (INSTRUCTION, arguments), continuation lines joined."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def exec_form(args: str) -> list[str]:
    return json.loads(args[args.index("["):])


def test_every_copied_file_exists_and_the_extra_is_real():
    steps = instructions()
    copies = [shlex.split(a) for w, a in steps if w == "COPY" and not a.startswith("--from")]
    assert copies
    for parts in copies:
        for source in parts[:-1]:
            assert (ROOT / source).exists(), f"the Dockerfile copies {source}, which is missing"
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    installs = [a for w, a in steps if w == "RUN" and "pip install" in a]
    assert installs and '".[server]"' in installs[0]
    assert any(dep.startswith("cronsim") for dep in extras["server"])


def test_it_runs_as_a_user_on_every_address_with_tokens_and_checks_its_health():
    steps = instructions()
    words = [w for w, _ in steps]
    final = len(words) - 1 - words[::-1].index("FROM")
    user = [a for w, a in steps[final:] if w == "USER"]
    assert user and user[-1] not in ("root", "0")
    cmd = exec_form(next(a for w, a in steps if w == "CMD"))
    assert cmd[:2] == ["lore", "serve"] and cmd[cmd.index("--host") + 1] == "0.0.0.0"
    health = next(a for w, a in steps if w == "HEALTHCHECK")
    url = re.search(r"http://127\.0\.0\.1:(\d+)(/[\w/]+)", health)
    assert url and url[1] == cmd[cmd.index("--port") + 1]

    from lore.web import api

    assert url[2] in {r.path for r in api.router.routes}  # type: ignore[attr-defined]
    env = next(a for w, a in steps[final:] if w == "ENV")
    assert "LORE_HOME=/data" in env and "LORE_CONFIG=/config/config.yaml" in env
    assert "HF_HUB_OFFLINE=1" in env  # the packaged model, never a download
    assert any(w == "RUN" and "embed_query" in a for w, a in steps[final:])


def test_compose_mounts_data_and_config_and_shares_the_health_check():
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    lore = compose["services"]["lore"]
    assert lore["build"] == "."
    targets = {v.removesuffix(":ro").rsplit(":", 1)[1] for v in lore["volumes"]}
    assert {"/data", "/config", "/claude-data"} <= targets
    assert lore["environment"] == {"LORE_HOME": "/data", "LORE_CONFIG": "/config/config.yaml"}
    assert lore["command"][lore["command"].index("--host") + 1] == "0.0.0.0"
    health = next(a for w, a in instructions() if w == "HEALTHCHECK")
    assert lore["healthcheck"]["test"] == ["CMD", *exec_form(health)]
    assert "8420:8420" in lore["ports"]


def test_the_example_config_validates():
    example = yaml.safe_load((ROOT / "docs" / "examples" / "server-config.yaml").read_text())
    config = Config.model_validate(example)
    assert config.schedule.analysis == "0 3 * * *"
    assert config.schedule.transcripts == ["/claude-data"]
