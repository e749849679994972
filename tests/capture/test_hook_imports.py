"""What a hook imports: the hooks run on the agent's critical path, and most of their cost is
the modules they load (docs/benchmarks.md). Two checks, no timing: the import graph of the
hook's modules as written (top-level imports only: a lazy import inside a function or one
under TYPE_CHECKING costs nothing until it runs), and the modules a real `lore hook EVENT`
process has loaded when it is done."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lore

SRC = Path(lore.__file__).resolve().parent
# Each costs a hook more than its own work, or belongs to the worker's side.
HEAVY = ("typing", "pathlib", "dataclasses", "logging", "subprocess", "sqlite3", "yaml",
         "pydantic", "numpy", "click", "traceback", "lore.capture.queue", "lore.config",
         "lore.api", "lore.store", "lore.worker", "lore.cli", "lore.extract", "lore.recall")
ENTRY = ("lore.entry", "lore.hooks")


def _module_file(name: str) -> Path | None:
    parts = name.split(".")[1:]
    base = SRC.joinpath(*parts)
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def top_level_imports(name: str) -> set[str]:
    """The modules ``name`` imports when it is imported: its top-level statements (and the
    branches of top-level ``if``/``try``), not function bodies or TYPE_CHECKING blocks; a
    package's parents are imported with it."""
    path = _module_file(name)
    assert path is not None, name
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def walk(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    mod = f"{base}.{node.module}" if node.module else base
                else:
                    mod = node.module or ""
                if mod == "__future__":
                    continue
                found.add(mod)
                found.update(f"{mod}.{a.name}" for a in node.names
                             if mod.startswith("lore") and _module_file(f"{mod}.{a.name}"))
            elif isinstance(node, ast.If) and not _type_checking(node.test):
                walk(node.body)
                walk(node.orelse)
            elif isinstance(node, ast.Try):
                walk(node.body)
                for handler in node.handlers:
                    walk(handler.body)
                walk(node.orelse)
                walk(node.finalbody)

    walk(tree.body)
    parents = {".".join(m.split(".")[:i]) for m in found for i in range(1, m.count(".") + 1)}
    return found | parents


def closure(roots: tuple[str, ...]) -> dict[str, str]:
    """Every module reached from ``roots`` through top-level imports: module -> the Lore
    module that imports it (Lore's own modules are followed, the standard library's are not)."""
    seen: dict[str, str] = {r: "" for r in roots}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if not name.startswith("lore") or _module_file(name) is None:
            continue
        for mod in top_level_imports(name):
            if mod not in seen:
                seen[mod] = name
                todo.append(mod)
    return seen


def heavy_in(modules: object) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_the_hook_modules_import_nothing_heavy_at_the_top():
    reached = closure(ENTRY)
    assert "lore.capture.enqueue" in reached and "lore.redact" in reached  # the graph is read
    assert {m: reached[m] for m in heavy_in(reached)} == {}


def test_the_graph_sees_an_import_at_the_top_but_not_a_lazy_or_type_only_one(tmp_path):
    # The checker itself: the worker imports the queue at its top, the hook module lazily.
    assert "lore.capture.queue" in top_level_imports("lore.worker")
    assert "lore.apply.session_context" not in top_level_imports("lore.hooks")
    assert "typing" not in top_level_imports("lore.hooks")
    assert heavy_in(closure(("lore.worker",)))


EVENTS = ["session-start", "user-prompt-submit", "post-tool-use", "stop", "subagent-stop",
          "pre-compact", "session-end", "pre-tool-use"]
PROBE = """
import json, sys
from lore.entry import main
sys.argv = ["lore", "hook", sys.argv[1]]
try:
    main()
except SystemExit:
    pass
sys.stderr.write(json.dumps(sorted(sys.modules)))
"""


@pytest.mark.parametrize("event", EVENTS)
def test_a_hook_process_loads_nothing_heavy(event, tmp_path):
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"type": "assistant", "message": {
        "content": [{"type": "text", "text": "I'll use Redis for the sessions."}]}}) + "\n")
    payload = {"session_id": "s1", "cwd": str(tmp_path), "transcript_path": str(transcript),
               "prompt": "No, don't use Redis, use local file sessions instead",
               "tool_name": "Edit", "tool_input": {"file_path": "a.py", "new_string": "x"}}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LORE_", "PYTHON"))}
    env.update(LORE_HOME=str(tmp_path / "home"), LORE_WORKER_AUTOSTART="0",
               PYTHONPATH=str(SRC.parent))
    done = subprocess.run([sys.executable, "-c", PROBE, event], input=json.dumps(payload),
                          capture_output=True, text=True, env=env, timeout=60)
    loaded = json.loads(done.stderr)
    assert heavy_in(loaded) == []
    queued = list((tmp_path / "home" / "queue" / "pending").glob("*.json"))
    assert len(queued) == (0 if event == "pre-tool-use" else 1)  # the hook did its work


def test_a_check_that_blocks_loads_its_matcher_and_nothing_heavy(tmp_path):
    from lore.apply.check_hook import write_compiled
    from lore.apply.checks import needle

    home = tmp_path / "home"
    fields = {"command": r"npm(?=\s|$)"}
    write_compiled(str(home / "guards.json"), [{
        "id": "c1", "lesson_id": "l1", "mode": "block", "rule": "Use pnpm, not npm.",
        "why": "one lock file", "said": "no, pnpm", **fields,
        "needles": {k: n for k, v in fields.items() if (n := needle(k, v))}}], "test")
    payload = {"session_id": "s1", "cwd": str(tmp_path), "tool_name": "Bash",
               "tool_input": {"command": "cd web && npm install left-pad"}}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LORE_", "PYTHON"))}
    env.update(LORE_HOME=str(home), PYTHONPATH=str(SRC.parent))
    done = subprocess.run([sys.executable, "-c", PROBE, "pre-tool-use"], input=json.dumps(payload),
                          capture_output=True, text=True, env=env, timeout=60)
    assert "permissionDecision" in done.stdout  # it blocked
    loaded = json.loads(done.stderr)
    assert "lore.apply.shell" in loaded and "lore.extract.steer" in loaded
    # the rule's wording comes from extract.steer, whose package loads nothing else
    assert heavy_in(m for m in loaded if m not in ("lore.extract", "lore.extract.steer")) == []
    assert len(list((home / "queue" / "pending").glob("*.json"))) == 1  # the match is queued
