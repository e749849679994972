"""`lore doctor`: check each moving part and say how to fix what is broken."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lore.errors import LoreError, StorageError
from lore.extras import add_extra, package_command

# Below this much free space SQLite's writes (WAL, checkpoints, VACUUM) start to fail.
LOW_SPACE = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""

    @property
    def label(self) -> str:
        """ok, note (works, with a suggestion) or FAIL."""
        return ("note" if self.fix else "ok") if self.ok else "FAIL"

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.name, "ok": self.ok, "detail": self.detail, "fix": self.fix}


def run_checks(load_settings: Callable[[], Any]) -> list[Check]:
    checks: list[Check] = []
    settings = None
    try:
        settings = load_settings()
        checks.append(Check("config", True, str(settings.config_path) +
                            ("" if settings.config_path.exists() else " (not present: defaults)")))
    except LoreError as exc:
        checks.append(Check("config", False, str(exc), "fix the key named above or move the "
                            "file away; `lore config` prints the effective values"))
    if settings is None:
        from lore.config import lore_home

        return _backend(str(lore_home() / "lore.db")) + checks + _home(lore_home(), lore_home())
    checks = _backend(settings.db_location) + checks
    checks.append(_model(settings))
    checks += claude_code_checks(Path.home(), Path.cwd())
    checks.append(worker_check(settings.home))
    checks.append(checks_file_check(settings.home))
    checks.append(model_provider_check(settings))
    if settings.db_is_url:
        home = _home(settings.home, settings.home) if settings.home.exists() else []
        return checks + home + _database(settings)
    home = _home(Path(settings.db_path).parent, settings.home)
    checks += home
    checks += _database(settings, home_ok=all(c.ok for c in home))
    return checks


def _home(folder: Path, home: Path) -> list[Check]:
    """The folder holding the database: a folder at all, readable, writable, not full."""
    name = "home" if folder == home else "database folder"
    try:
        st = folder.stat()
    except (FileNotFoundError, NotADirectoryError):
        parent = next(p for p in folder.parents if p.exists() or p == p.parent)
        if not parent.is_dir():
            return [Check(name, False, f"{folder} cannot be created: {parent} is a file",
                          "move that file away, or point LORE_HOME (or --db) at a folder")]
        if not os.access(parent, os.W_OK | os.X_OK):
            return [Check(name, False, f"{folder} does not exist and {parent} is not writable",
                          f"create {folder} yourself, or point LORE_HOME (or --db) elsewhere")]
        return [Check(name, True, f"{folder} does not exist yet (created on first use)"),
                _free_space(parent)]
    except OSError as exc:
        return [Check(name, False, f"cannot look at {folder}: {exc.strerror}",
                      "check the permissions of the folders above it")]
    if not stat.S_ISDIR(st.st_mode):
        return [Check(name, False, f"{folder} is a file, not a folder",
                      "move the file away, or point LORE_HOME (or --db) at a folder")]
    if not os.access(folder, os.R_OK | os.X_OK):
        return [Check(name, False, f"{folder} is not readable (mode {oct(stat.S_IMODE(st.st_mode))})",
                      f"chmod u+rwx {folder} as its owner, or point LORE_HOME elsewhere")]
    if os.statvfs(folder).f_flag & os.ST_RDONLY:
        checks = [Check(name, False, f"{folder} is on a read-only file system: read commands "
                        "work, commands that write fail", "remount it read-write, or point "
                        "LORE_HOME (or --db) at a writable folder")]
    elif not os.access(folder, os.W_OK):
        checks = [Check(name, False, f"{folder} is not writable: read commands work, commands "
                        "that write fail", f"chmod u+w {folder} as its owner")]
    else:
        checks = [Check(name, True, f"{folder} (readable, writable)")]
    return [*checks, _free_space(folder)]


def _free_space(folder: Path) -> Check:
    vfs = os.statvfs(folder)
    free = vfs.f_bavail * vfs.f_frsize
    shown = f"{free / 1024**3:.1f} GB" if free >= 1024**3 else f"{free / 1024**2:.1f} MB"
    if free < LOW_SPACE:
        return Check("disk space", False, f"{shown} free on the disk holding {folder}: writes "
                     "will fail", "free some space (df -h shows where it went)")
    return Check("disk space", True, f"{shown} free")


def _backend(location: str) -> list[Check]:
    """The backend's own checks (the SQLite driver, FTS5 and sqlite-vec; or psycopg and
    pgvector), through the store package rather than a backend's modules."""
    from lore.store import diagnose

    return [Check(*c) for c in diagnose(location)]


def _model(settings: Any) -> Check:
    cfg = settings.config.embedding
    if cfg.backend != "fastembed":
        return Check("embedding model", True, f"{cfg.backend}: {cfg.model} (not checked offline)")
    from importlib.util import find_spec

    from lore.embed import DEFAULT_MODEL, canonical_model
    from lore.embed.packaged import packaged_model_file

    if canonical_model(cfg.model) != DEFAULT_MODEL:
        if find_spec("fastembed") is None:
            return Check("embedding model", False,
                         f"{cfg.model} needs fastembed, which is not installed",
                         add_extra("fastembed"))
        known = fastembed_models()
        if cfg.model.lower() not in known:
            return Check("embedding model", False, f"fastembed knows no model named {cfg.model}",
                         f"one of: {', '.join(sorted(known.values())[:6])} … (embedding.model)")
        return Check("embedding model", True,
                     f"{cfg.model} via fastembed (downloaded on first use, needs network once)")
    if find_spec("onnxruntime") is None:  # the tokenizer is Lore's own (lore.embed.wordpiece)
        return Check("embedding model", False, "onnxruntime is not installed",
                     package_command("reinstall"))
    try:
        path = packaged_model_file()
    except LoreError as exc:
        return Check("embedding model", False, str(exc),
                     package_command("reinstall"))
    size = path.stat().st_size // (1024 * 1024)
    return Check("embedding model", True,
                 f"{DEFAULT_MODEL} int8 ONNX ({size} MB, sha256 verified) installed, offline")


def fastembed_models() -> dict[str, str]:
    """The models fastembed can fetch, from its own list (no network): lowercased -> name."""
    from fastembed import TextEmbedding

    return {m["model"].lower(): m["model"] for m in TextEmbedding.list_supported_models()}


def embeddings_check(st: dict[str, Any]) -> Check:
    """Whether the vectors match the configured model (Lore.admin.embedding_state)."""
    left = st["missing"]
    waiting = f"{left['lessons']} lessons and {left['chunks']} conversation chunks"
    if st["state"] == "needed":
        return Check("embeddings", False, f"database has {st['model']} ({st['dimensions']} dims), "
                     f"config asks for {st['configured_model']}", "lore admin reembed")
    if st["state"] == "half done":
        return Check("embeddings", True, f"re-embedding with {st['model']} half done: {waiting} "
                     "still without a vector (found by keywords until then)",
                     "lore admin reembed (continues where it stopped)")
    return Check("embeddings", st["state"] == "ok",
                 f"{st['model'] or st['configured_model']}: {left['lessons']} lessons without an "
                 "up-to-date vector" + (f", {left['chunks']} conversation chunks waiting"
                                        if left["chunks"] else ""),
                 "" if st["state"] == "ok" else "lore admin reembed")


def _database(settings: Any, home_ok: bool = True) -> list[Check]:
    from lore.api import Lore, storage_error

    remote = settings.db_is_url
    path = settings.db_shown if remote else Path(settings.db_path)
    if not remote and not home_ok and not Path(path).is_file():
        return [Check("database", False, f"{path} cannot be opened or created: see the check "
                      "above", "fix the folder first")]
    if not remote and not Path(path).exists():
        return [Check("database", True, f"{path} does not exist yet (created on first use)")]
    out: list[Check] = []
    try:
        with Lore.open(settings, create=False) as lore:
            integrity = lore.admin.integrity()
            ro = " (opened read-only)" if lore.admin.read_only else ""
            out.append(Check("database", integrity == "ok",
                             f"{path}: {lore.lessons.count()} lessons, integrity {integrity}{ro}",
                             "" if integrity == "ok" else
                             "restore from an export: lore admin import BACKUP.jsonl"))
            out.append(embeddings_check(lore.admin.embedding_state()))
    except StorageError as exc:
        return [*out, Check("database", False, exc.problem, exc.fix)]
    except LoreError as exc:  # not a Lore database, or one of a newer Lore
        return [*out, Check("database", False, str(exc),
                            "point LORE_DB/--db at a Lore database, or move the file away")]
    except Exception as exc:  # a read-only file that needs a migration, a full disk …
        found = storage_error(exc, settings.db_location)
        if found is None:
            raise
        return [*out, Check("database", False, found.problem, found.fix)]
    if os.name == "posix" and not remote:
        mode = stat.S_IMODE(path.stat().st_mode)
        out.append(Check("permissions", mode & 0o077 == 0, f"{path} mode {oct(mode)}",
                         "" if mode & 0o077 == 0 else f"chmod 600 {path}"))
    return out


def claude_code_checks(home: Path, project: Path) -> list[Check]:
    """Whether Claude Code will run Lore's hooks and start its MCP server, in any scope:
    through `lore install` (settings) or the plugin, and never both at once."""
    from lore.install import SCOPES, installed_scopes, plugin_scopes

    try:
        hooks, mcp = installed_scopes(home, project)
        plugin = plugin_scopes(home, project)
    except LoreError as exc:
        return [Check("claude code", False, str(exc), "fix the file named above")]
    fix = "lore install (or lore install --scope project), or Claude Code's plugin lore"
    scopes = f" ({', '.join(SCOPES)} scopes looked at)"
    if plugin and (hooks or mcp):
        where = ", ".join(sorted({*hooks, *mcp}))
        return [Check("claude code", False,
                      f"installed twice: by `lore install` ({where}) and the plugin lore "
                      f"({', '.join(plugin)}); every hook would run twice",
                      " ; ".join(f"lore uninstall --scope {s}" for s in sorted({*hooks, *mcp}))
                      + " (keeps the plugin), or `claude plugin uninstall lore@lore`")]
    if plugin:
        by = "by the plugin lore: " + ", ".join(plugin)
        return [Check("hooks", True, "installed " + by), Check("mcp server", True, "registered " + by)]
    # Not installed is a choice (Lore works from the CLI and MCP alone), so a note, not a failure.
    return [Check("hooks", True, "installed: " + ", ".join(hooks) if hooks
                  else "not installed in Claude Code" + scopes, "" if hooks else fix),
            Check("mcp server", True, "registered: " + ", ".join(mcp) if mcp
                  else "not registered with Claude Code" + scopes, "" if mcp else fix)]


def worker_check(home: Path) -> Check:
    from lore.home import alive, read_pid

    pid = read_pid(home / "worker.pid")
    pending = home / "queue" / "pending"
    try:
        waiting = sum(1 for p in pending.iterdir() if p.suffix == ".json") if pending.is_dir() else 0
    except OSError:
        waiting = 0
    if pid is not None and alive(pid):
        return Check("worker", True, f"running (pid {pid}), {waiting} event(s) waiting")
    if waiting:
        return Check("worker", False, f"not running and {waiting} event(s) wait in the queue",
                     "lore worker start")
    return Check("worker", True, "not running, nothing waiting (the next hook starts it)")


def checks_file_check(home: Path) -> Check:
    """Whether the PreToolUse hook reads the checks file (lore.trusted): a file another user
    owns, or in a home others can write, is ignored by the hooks, which say so only in
    hooks.log."""
    from lore.apply.check_hook import compiled_path, read_compiled, refused

    path = compiled_path(str(home))
    why = refused(path)
    if why:
        return Check("checks", False, f"the hooks ignore the checks: {why}",
                     "do as the line says, then `lore guard compile`")
    if not os.path.lexists(path):
        return Check("checks", True, "none approved (the PreToolUse hook returns at once)")
    return Check("checks", True, f"{len(read_compiled(path))} the PreToolUse hook enforces ({path})")


def model_provider_check(settings: Any) -> Check:
    llm = settings.config.llm
    if not llm.provider:
        return Check("language model", True, "none configured: the detector decides alone "
                     f"(docs/llm.md says how to add one){in_worker(settings)}")
    from lore.llm.registry import installed

    if llm.provider not in installed():
        return Check("language model", False, f"provider '{llm.provider}' is not installed",
                     f"one of: {', '.join(sorted(installed()))} (lore config)")
    rerank = ", re-ranks conversation search" if settings.config.conversations.rerank else ""
    return Check("language model", True, f"{llm.provider} configured{rerank} "
                 f"(`lore llm check` calls it){in_worker(settings)}")


def model_name(provider: object, model: object) -> str:
    """A language model as the user reads it: ``claude-cli (haiku)``, or ``none``."""
    if not provider:
        return "none"
    return f"{provider} ({model})" if model else f"{provider} (its default model)"


def in_worker(settings: Any) -> str:
    """'; the running worker uses …' when a worker runs (what it recorded, which differs from
    the config only until its next look at the file), else ''."""
    from lore.home import model_in_use

    used = model_in_use(settings.home)
    if used is None:
        return ""
    llm = settings.config.llm
    now = model_name(used.get("provider"), used.get("model"))
    if now == model_name(llm.provider, llm.model):
        return f"; the running worker (pid {used['pid']}) uses {now}"
    return (f"; the running worker (pid {used['pid']}) still uses {now}: it reads the change "
            "before its next event")
