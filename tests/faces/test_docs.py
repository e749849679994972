"""The reference docs match the code: the CLI reference is current, every config key and every
MCP tool is documented, and the seed alias table matches the server's profiles."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from pydantic import BaseModel

from lore.config import Config, default_settings

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_cli_reference_is_current():
    """docs/cli.md is what `make docs` generates now: a changed command means regenerating it."""
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "cli_reference.py")],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out == (DOCS / "cli.md").read_text(), "docs/cli.md is stale: run `make docs`"


def config_keys(model: type[BaseModel], prefix: str = "") -> set[str]:
    keys: set[str] = set()
    for name, info in model.model_fields.items():
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            keys |= config_keys(annotation, f"{prefix}{name}.")
        else:
            keys.add(prefix + name)
    return keys


def flatten(data: Any, prefix: str = "") -> set[str]:
    if not isinstance(data, dict):
        return {prefix.rstrip(".")}
    out: set[str] = set()
    for key, value in data.items():
        if isinstance(value, dict) and value:
            out |= flatten(value, f"{prefix}{key}.")
        else:
            out.add(prefix + str(key))
    return out


def test_every_config_key_is_documented():
    """The YAML block of docs/configuration.md holds every key of the config model, and no key
    the model does not have (a mapping such as tag_aliases is documented by an example)."""
    text = (DOCS / "configuration.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.DOTALL)
    documented: set[str] = set()
    for block in blocks:
        documented |= flatten(yaml.safe_load(block) or {})
    keys = config_keys(Config)

    def covered(key: str) -> bool:
        return key in documented or any(d.startswith(key + ".") for d in documented)

    def known(doc: str) -> bool:
        return doc in keys or any(doc.startswith(k + ".") for k in keys)

    missing = sorted(k for k in keys if not covered(k))
    assert not missing, f"config keys missing from docs/configuration.md: {missing}"
    stale = sorted(d for d in documented if not known(d))
    assert not stale, f"docs/configuration.md documents keys that do not exist: {stale}"


@pytest.fixture(scope="module")
def tool_names() -> dict[str, set[str]]:
    from lore.mcp.server import PROFILES, build_server

    names: dict[str, set[str]] = {}
    for profile in PROFILES:
        server, _ = build_server(default_settings(Path("/nonexistent-lore-home")), profile)
        names[profile] = {t.name for t in anyio.run(server.list_tools)}
    return names


def test_every_mcp_tool_is_documented(tool_names):
    text = (DOCS / "mcp.md").read_text()
    missing = sorted(n for n in tool_names["all"] if f"`{n}`" not in text)
    assert not missing, f"MCP tools missing from docs/mcp.md: {missing}"


def test_seed_alias_table_matches_the_profiles(tool_names):
    from lore.mcp.aliases import SEED_ALIASES

    for profile, aliases in SEED_ALIASES.items():
        assert tool_names[profile] == set(aliases), profile
        for canonical in filter(None, aliases.values()):
            assert canonical in tool_names["canonical"], f"{profile}: {canonical}"


def test_the_python_api_page_runs_as_written(lore_home, tmp_path, monkeypatch):
    """Every Python block of docs/python-api.md, run in order in a fresh home."""
    monkeypatch.chdir(tmp_path)
    page = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    assert len(blocks) >= 2
    scope: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, "docs/python-api.md", "exec"), scope)  # noqa: S102 - our own docs
    assert (lore_home / "lore.db").exists()
