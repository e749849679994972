"""Imports point one way, down the layers of docs/architecture.md."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "lore"

# Lower number = lower layer. A module may import its own layer and the layers below.
LAYERS = [
    # lore.learn.redact is plain text functions (stdlib only) that lower layers may call.
    (0, ("lore", "lore.errors", "lore.models", "lore.ids", "lore.normalize", "lore.config",
         "lore.schema", "lore.private",
         "lore.learn.redact")),  # the redactor (stdlib only) serves every door, capture and llm included
    (1, ("lore.store", "lore.embed", "lore.llm", "lore.capture")),
    (2, ("lore.search", "lore.graph", "lore.extract")),
    (3, ("lore.transfer", "lore.conversations", "lore.publish")),
    (4, ("lore.api",)),
    (5, ("lore.demo", "lore.doctor", "lore.eval", "lore.worker", "lore.install", "lore.learn")),
    (6, ("lore.mcp", "lore.capture.hooks")),  # hooks are an entry point, like the MCP server
    (7, ("lore.cli", "lore.__main__", "lore.entry")),
]
INTERFACE_ONLY = {"click": ("lore.cli",), "mcp": ("lore.mcp",), "fastapi": ("lore.web",)}


def layer(module: str) -> int:
    best = (-1, -1)
    for rank, prefixes in LAYERS:
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best[1]:
                best = (rank, len(p))
    assert best[0] >= 0, f"{module} is in no layer: add it to LAYERS"
    return best[0]


def module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def runtime_imports(tree: ast.AST) -> list[str]:
    """Imports that run: TYPE_CHECKING blocks are only for the type checker."""
    out: list[str] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.Import):
                out.extend(a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                out.append(child.module)
            visit(child)

    visit(tree)
    return out


def test_imports_point_down():
    wrong = []
    for path in SRC.rglob("*.py"):
        mod = module_name(path)
        for imported in runtime_imports(ast.parse(path.read_text())):
            if imported.split(".")[0] != "lore":
                continue
            if layer(imported) > layer(mod):
                wrong.append(f"{mod} imports {imported}")
    assert not wrong, "imports pointing up the layers:\n" + "\n".join(wrong)


def test_interface_libraries_stay_in_interfaces():
    wrong = []
    for path in SRC.rglob("*.py"):
        mod = module_name(path)
        for imported in runtime_imports(ast.parse(path.read_text())):
            top = imported.split(".")[0]
            if top in INTERFACE_ONLY and not mod.startswith(INTERFACE_ONLY[top]):
                wrong.append(f"{mod} imports {top}")
    assert not wrong, "\n".join(wrong)


def test_sql_only_in_the_store():
    keywords = ("SELECT ", "INSERT INTO", "DELETE FROM", "CREATE TABLE", "UPDATE lessons")
    offenders = []
    for path in SRC.rglob("*.py"):
        if "store" in path.parts:
            continue
        text = path.read_text()
        if any(k in text for k in keywords):
            offenders.append(str(path.relative_to(SRC)))
    assert not offenders, f"SQL outside lore.store: {offenders}"
