"""What a Python text imports, read with ``ast`` (for checks on written text, docs/apply.md):
``import os, requests``, ``x = 1; import requests``, ``__import__("requests")`` and
``importlib.import_module("requests")`` each give the line ``import requests``, which a
check's pattern such as ``^\\s*import\\s+requests`` then matches. Text that does not parse
gives None: the check reads the text alone.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_CHARS = 400_000  # longer texts are matched as text
SUFFIXES = (".py", ".pyi", ".pyw")
_DYNAMIC = frozenset({"__import__", "importlib.import_module", "import_module",
                      "importlib.__import__", "builtins.__import__"})


def is_python(path: str | None, tool: str, tool_input: Any) -> bool:
    """Whether the text a file tool writes is Python: a .py/.pyi file or a notebook's code cell."""
    if tool == "NotebookEdit":
        cell = tool_input.get("cell_type") if isinstance(tool_input, dict) else None
        return cell in (None, "code")
    return bool(path) and str(path).lower().endswith(SUFFIXES)


def import_lines(source: str, depth: int = 0) -> list[tuple[str, int]] | None:
    """Each import in ``source`` as one plain statement, with the line it is on (1-based);
    None when the text does not parse as Python (also once its indentation is removed, as an
    Edit's new text inside a function has)."""
    if len(source) > MAX_CHARS or depth > 3:
        return None
    import ast

    tree = None
    for attempt in (source, _dedent(source)):
        try:
            tree = ast.parse(attempt)
            break
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    if tree is None:
        return None
    out: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((f"import {a.name}", node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = "." * (node.level or 0) + (node.module or "")
            names = ", ".join(a.name for a in node.names)
            out.append((f"from {module} import {names}", node.lineno))
        elif isinstance(node, ast.Call) and node.args:
            name = _dotted(node.func)
            arg = node.args[0]
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                continue
            if name in _DYNAMIC:
                out.append((f"import {arg.value}", node.lineno))
            elif name in ("exec", "builtins.exec"):
                inner = import_lines(arg.value, depth + 1) or []
                out.extend((line, node.lineno) for line, _ in inner)
    out.sort(key=lambda x: x[1])
    return out


def _dotted(node: Any) -> str:
    import ast

    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text)
