"""The reference docs match the code: the CLI reference is current, every config key and every
MCP tool is documented, every config.yaml a page shows loads as it is, and the seed alias table
matches the server's profiles."""

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

from lore.config import Config, default_settings, load_config
from lore.errors import ConfigError

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


def yaml_blocks() -> list[tuple[str, str]]:
    return [(path.name, block) for path in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
            for block in re.findall(r"```ya?ml\n(.*?)```", path.read_text(), re.DOTALL)]


@pytest.mark.parametrize(("page", "block"), [
    pytest.param(page, block, id=f"{page}-{n}") for n, (page, block) in enumerate(yaml_blocks())
    if page != "plugins.md"])  # plugins.md's backend is a plugin's, not installed here
def test_every_config_example_is_accepted(lore_home, tmp_path, page, block):
    """A config.yaml a page shows loads as it is: no tuning constant, no key Lore refuses."""
    path = tmp_path / "config.yaml"
    path.write_text(block, encoding="utf-8")
    load_config(path)


def test_a_config_example_with_a_tuning_constant_is_refused(lore_home, tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("analysis:\n  related_similarity: 0.45\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="tuning constant"):
        load_config(path)


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


def test_the_python_api_page_names_every_part_and_a_lore_holds_nothing_else(fake_lore):
    """docs/python-api.md's table lists exactly the facade's parts, and a Lore offers its
    parts and how it is made, nothing more (no flat methods come back)."""
    from lore.api import PARTS

    page = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    assert re.findall(r"^\| `lore\.(\w+)` \|", page, re.M) == list(PARTS)
    offered = {n for n in (*vars(fake_lore), *dir(type(fake_lore))) if not n.startswith("_")}
    assert offered == {*PARTS, "open", "close", "config", "settings", "store", "engine"}


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


def test_storage_lists_the_migrations_and_the_schema_now():
    """docs/storage.md shows every migration in order and the schema of a database migrated
    now, as scripts/schema_reference.py reads it from `sqlite_master`: a new migration or
    column means regenerating it (`make docs`)."""
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "schema_reference.py")],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    text = (DOCS / "storage.md").read_text()
    start = text.index("<!-- generated by scripts/schema_reference.py")
    end = text.index("<!-- end of the generated schema -->")
    assert text[start:end] + "<!-- end of the generated schema -->\n" == out, (
        "docs/storage.md's migrations or schema are stale: run `make docs`")
    sections = [int(n) for n in re.findall(r"(?m)^## Migration (\d+):", text)]
    assert sections == sorted(sections), "docs/storage.md's migration sections are out of order"


def store_protocols() -> list[str]:
    import ast

    tree = ast.parse((ROOT / "src" / "lore" / "store" / "protocol.py").read_text())
    return [n.name for n in tree.body if isinstance(n, ast.ClassDef)
            and any(getattr(b, "id", None) == "Protocol" for b in n.bases)]


@pytest.mark.parametrize("page", ["architecture.md", "plugins.md", "storage.md"])
def test_every_store_protocol_is_named(page: str):
    """Each of the store's protocols (store/protocol.py) is named where a backend's author or
    a reader of the layers looks for it."""
    text = (DOCS / page).read_text()
    missing = [p for p in store_protocols() if f"`{p}`" not in text]
    assert not missing, f"docs/{page} does not name {missing}"


def test_storage_names_every_module_of_the_sqlite_backend():
    text = (DOCS / "storage.md").read_text()
    modules = sorted(p.name for p in (ROOT / "src" / "lore" / "store" / "sqlite").glob("*.py")
                     if p.name != "__init__.py")
    missing = [m for m in modules if f"`{m}`" not in text]
    assert not missing, f"docs/storage.md's module table lacks {missing}"


def map_files(text: str) -> list[tuple[str, str]]:
    """(folder, file) of every ``name.py`` in the map of docs/architecture.md (the block that
    starts ``src/lore/``): a name belongs to the folder whose line it follows (``capture/``,
    ``sync/`` inside ``core/``), a file at the top of a line to the top of ``src/lore``."""
    block = text.split("```\nsrc/lore/\n", 1)[1].split("```", 1)[0]
    out: list[tuple[str, str]] = []
    folder = ""
    for line in block.splitlines():
        top = re.match(r"  ([a-z_]+)(/|\.py)", line)
        if top:
            folder = top.group(1) if top.group(2) == "/" else ""
        sub = re.match(r"    ([a-z_]+)/", line)
        out += [(folder if not sub else f"{folder}/{sub.group(1)}", name)
                for name in re.findall(r"(?<![\w/.-])((?:[a-z_]+/)*[a-z_][a-z0-9_]*\.py)\b", line)]
    return out


def test_architecture_names_only_modules_that_exist():
    """Every module docs/architecture.md names exists where it says: a file ``name.py`` of its
    map, in the folder it is listed under (or one below it), and a dotted ``lore.x.y`` of a
    package anywhere. A module that moved or went is not left on the map."""
    text = (DOCS / "architecture.md").read_text()
    src = ROOT / "src" / "lore"

    def there(folder: str, name: str) -> bool:
        if not folder:
            return (src / name).is_file()
        return any(p.as_posix().endswith("/" + name)
                   for p in (src / folder).rglob(name.rsplit("/", 1)[-1]))

    wrong = [f"{folder or 'src/lore'}: {name}" for folder, name in map_files(text)
             if not there(folder, name)]
    assert not wrong, f"docs/architecture.md's map names files that are not there: {wrong}"
    dotted = set(re.findall(r"`(lore(?:\.[a-z_][a-z0-9_]*)+)", text))

    def exists(name: str) -> bool:
        parts = name.split(".")
        for cut in range(len(parts), 1, -1):  # a module, or an attribute of one
            path = src.joinpath(*parts[1:cut])
            if path.with_suffix(".py").is_file() or (path / "__init__.py").is_file():
                return True
        return False

    # ``lore.learning`` and ``lore.stores`` are the facade's parts and entry-point groups: a name
    # is a module's only when its first part after ``lore`` is a module or package of Lore.
    modules = {n for n in dotted if (src / n.split(".")[1]).is_dir()
               or (src / n.split(".")[1]).with_suffix(".py").is_file()}
    gone = sorted(n for n in modules if not exists(n))
    assert not gone, f"docs/architecture.md names modules that do not exist: {gone}"


def test_architecture_layers_match_the_architecture_test():
    """The layer diagram of docs/architecture.md names every module or package of each layer
    of tests/faces/test_architecture.py's LAYERS, on that layer's lines."""
    from test_architecture import LAYERS

    text = (DOCS / "architecture.md").read_text()
    diagram = text.split("## Layers\n\n```\n", 1)[1].split("```", 1)[0]
    rows: dict[int, str] = {}
    rank = -1
    for line in diagram.splitlines():
        number = re.match(r"\s*(\d)\s", line)
        rank = int(number.group(1)) if number else rank
        rows[rank] = rows.get(rank, "") + " " + line
    missing = [f"{rank}: {prefix}" for rank, prefixes in LAYERS for prefix in prefixes
               if prefix != "lore" and not re.search(
                   rf"(?<![\w.]){re.escape(prefix.split('.')[-1])}(?:/|\.py)?(?!\w)",
                   rows.get(rank, ""))]
    assert not missing, f"docs/architecture.md's layer diagram lacks {missing}"


def test_the_changelog_names_this_version_first_and_the_readme_links_it():
    from lore import __version__

    text = (ROOT / "CHANGELOG.md").read_text()
    versions = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", text, re.M)
    assert versions and versions[0][0] == __version__  # the newest release is this one
    assert [v for v, _ in versions] == sorted((v for v, _ in versions), reverse=True,
                                              key=lambda v: tuple(map(int, v.split("."))))
    assert text.index("## [Unreleased]") < text.index(f"## [{__version__}]")
    assert "](CHANGELOG.md)" in (ROOT / "README.md").read_text()
