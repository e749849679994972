"""The layering of docs/architecture.md, checked on the source: imports point down, no cycles,
no private members used across modules, SQL and transactions only in the store, faces never
reach the store.

Every import counts, wherever it is written: at the top, inside a function (lazy) or under
``TYPE_CHECKING`` (a type-only import still couples two modules).
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "lore"

# Lower number = lower layer. A module may import its own layer and the layers below.
LAYERS = [
    # lore.redact is plain text functions (stdlib only) that every door calls; its patterns,
    # rules and replacements are its modules.
    (0, ("lore", "lore.errors", "lore.models", "lore.ids", "lore.normalize", "lore.config",
         "lore.config_models", "lore.config_cache", "lore.tuning",
         "lore.validation", "lore.home", "lore.plugins", "lore.redact",
         "lore.private",
         "lore.trusted", "lore.extras", "lore.projects", "lore.policy")),
    (1, ("lore.store", "lore.embed", "lore.llm")),
    (2, ("lore.capture", "lore.extract", "lore.recall")),
    (3, ("lore.apply",)),
    # The review room sits below the core: the learner reads what a decision is
    # (lore.review.queue); the review's part is handed the core's lesson writer and checks.
    (4, ("lore.review",)),
    (5, ("lore.core",)),
    (6, ("lore.api",)),
    (7, ("lore.worker", "lore.doctor", "lore.install", "lore.demo", "lore.measure",
         "lore.schedule")),
    # The faces: each parses input, calls the facade, renders the result.
    (8, ("lore.mcp", "lore.hooks", "lore.cli", "lore.web", "lore.__main__", "lore.entry",
         "lore.statusline")),
]
FACES = ("lore.cli", "lore.mcp", "lore.hooks", "lore.web", "lore.entry", "lore.__main__",
         "lore.statusline")
INTERFACE_ONLY = {"click": ("lore.cli",), "mcp": ("lore.mcp",), "fastapi": ("lore.web",)}
# SQL and transaction statements, and the WHERE fragments that carry a filter.
SQL = re.compile(r"\b(?:SELECT|INSERT\s+(?:OR\s+\w+\s+)?INTO|UPDATE\s+(?:OR\s+\w+\s+)?\w+\s+SET|"
                 r"DELETE\s+FROM|(?<!-)BEGIN(?:\s+(?:IMMEDIATE|DEFERRED|EXCLUSIVE|TRANSACTION)\b|\s*;|\s*$)|"
                 r"(?:COMMIT|ROLLBACK)(?:\s+TO\b|\s*;|\s*$)|PRAGMA|SAVEPOINT|RELEASE\s+\w+|"
                 r"CREATE\s+(?:VIRTUAL\s+)?(?:TABLE|INDEX)|DROP\s+TABLE|WHERE|JOIN|GROUP\s+BY|"
                 r"ORDER\s+BY)\b")


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


@cache
def modules() -> dict[str, ast.Module]:
    return {module_name(p): ast.parse(p.read_text(), str(p)) for p in SRC.rglob("*.py")}


def is_module(name: str) -> bool:
    return name in modules()


def imports(tree: ast.AST) -> list[str]:
    """Every module imported anywhere in the tree; ``from pkg import sub`` names ``pkg.sub``
    when it is a module of Lore."""
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = [f"{node.module}.{a.name}" for a in node.names]
            found = [s for s in subs if is_module(s)]
            out.extend(found)
            if len(found) < len(subs):
                out.append(node.module)
    return out


def lore_imports(mod: str) -> set[str]:
    return {i for i in imports(modules()[mod]) if i == "lore" or i.startswith("lore.")}


def test_imports_point_down():
    wrong = [f"{mod} imports {imported}"
             for mod in modules() for imported in sorted(lore_imports(mod))
             if layer(imported) > layer(mod)]
    assert not wrong, "imports pointing up the layers:\n" + "\n".join(wrong)


def test_no_import_cycles():
    from scripts.house_map import circles

    pairs = [(mod, i) for mod in modules() for i in lore_imports(mod) if i in modules() and i != mod]
    found = circles(pairs)
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_faces_never_import_the_store():
    wrong = [f"{mod} imports {imported}"
             for mod in modules() if mod.startswith(FACES)
             for imported in sorted(lore_imports(mod))
             if imported == "lore.store" or imported.startswith("lore.store.")]
    assert not wrong, "faces go through the facade (lore.api), never the store:\n" + "\n".join(wrong)


def test_interface_libraries_stay_in_interfaces():
    wrong = []
    for mod, tree in modules().items():
        for imported in imports(tree):
            top = imported.split(".")[0]
            if top in INTERFACE_ONLY and not mod.startswith(INTERFACE_ONLY[top]):
                wrong.append(f"{mod} imports {top}")
    assert not wrong, "\n".join(wrong)


def test_no_private_members_across_modules():
    """``obj._x`` only on self or cls; ``from m import _x`` never (dunders are public)."""
    wrong = []
    for mod, tree in modules().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                owner = node.value
                if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                    wrong.append(f"{mod}:{node.lineno} {ast.unparse(node)}")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lore"):
                wrong += [f"{mod}:{node.lineno} imports {node.module}.{a.name}"
                          for a in node.names if _private(a.name)]
    assert not wrong, "private members used from outside:\n" + "\n".join(wrong)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_sql_only_in_the_store():
    """No SQL, transaction statement or WHERE fragment in a string outside lore.store."""
    offenders = []
    for mod, tree in modules().items():
        if mod == "lore.store" or mod.startswith("lore.store."):
            continue
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef
                                    | ast.AsyncFunctionDef)
                      and n.body and isinstance(n.body[0], ast.Expr)
                      and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and id(node) not in docstrings and SQL.search(node.value)):
                offenders.append(f"{mod}:{node.lineno} {node.value[:60]!r}")
    assert not offenders, "SQL outside lore.store:\n" + "\n".join(offenders)


def test_the_checks_catch_what_they_claim():
    """Each check fails on a sample of what it forbids (so none of them can pass vacuously)."""
    sample = ast.parse("if TYPE_CHECKING:\n    from lore.api import Lore\n"
                       "def f(lore):\n    return lore._row, 'UPDATE lessons SET x = 1'\n")
    assert "lore.api" in imports(sample)
    assert any(isinstance(n, ast.Attribute) and _private(n.attr) for n in ast.walk(sample))
    assert SQL.search("UPDATE lessons SET x = 1") and SQL.search("c.project = ? WHERE 1")
    assert SQL.search("BEGIN IMMEDIATE") and SQL.search("PRAGMA quick_check")
    assert not SQL.search("Select a lesson where the user begins")
    assert not SQL.search("-----BEGIN")  # a PEM header is not a transaction


# What a face (and a service above the facade) may use of a Lore: its parts and how it is made
# and closed (docs/python-api.md). A Lore is a name ``lore``, or an attribute ``….lore``.
FACADE_USERS = (*FACES, "lore.worker", "lore.schedule", "lore.doctor", "lore.install",
                "lore.demo", "lore.measure")
CONSTRUCTION = ("open", "close", "config", "settings")


def facade_uses(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, attribute) of every attribute taken of a Lore other than a part or construction."""
    from lore.api import PARTS

    allowed = {*PARTS, *CONSTRUCTION}
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        owner = node.value
        named = (owner.id if isinstance(owner, ast.Name) else
                 owner.attr if isinstance(owner, ast.Attribute) else None)
        if named in ("lore", "_lore") and node.attr not in allowed \
                and not (node.attr.startswith("__") and node.attr.endswith("__")):
            out.append((node.lineno, ast.unparse(node)))
    return out


def test_faces_use_only_the_facades_parts():
    wrong = [f"{mod}:{line} {text}" for mod, tree in modules().items()
             if mod.startswith(FACADE_USERS) for line, text in facade_uses(tree)]
    assert not wrong, ("faces use a Lore's parts (lore.lessons, lore.search, lore.review …), "
                       "never its engine or store:\n" + "\n".join(wrong))


def test_the_parts_rule_catches_what_it_claims():
    sample = ast.parse("lore.engine.learner.record(x)\nself.lore.store.get(i)\n"
                       "lore.lessons.get(i)\nlore.review.decide(i, 'approve')\nlore.__class__\n")
    assert sorted(text for _, text in facade_uses(sample)) == ["lore.engine", "self.lore.store"]
