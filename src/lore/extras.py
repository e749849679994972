"""The command that adds an extra (or removes Lore) the way this Lore was installed.

A hint that says ``pip install 'loreloop[server]'`` is wrong for most users: Lore is an
application, installed with pipx or ``uv tool`` into an environment of its own, where a plain
pip installs into some other Python. The way is read from where this interpreter lives:
pipx's and uv's tool folders (``…/pipx/venvs/loreloop``, ``…/uv/tools/loreloop``), a
virtual environment uv made (``uv = …`` in its ``pyvenv.cfg``), another virtual environment,
else the system's pip.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from lore.errors import BackendUnavailable

PACKAGE = "loreloop"


def method(prefix: str | None = None, base_prefix: str | None = None) -> str:
    """pipx, uv-tool, uv-venv, venv or pip."""
    prefix = prefix or sys.prefix
    base_prefix = base_prefix or sys.base_prefix
    parts = Path(prefix).parts
    if "pipx" in parts and "venvs" in parts:
        return "pipx"
    if "uv" in parts and "tools" in parts:
        return "uv-tool"
    if prefix != base_prefix:
        try:
            cfg = (Path(prefix) / "pyvenv.cfg").read_text(encoding="utf-8")
        except OSError:
            cfg = ""
        if any(line.split("=")[0].strip() == "uv" for line in cfg.splitlines()):
            return "uv-venv"
        return "venv"
    return "pip"


def requirements(extra: str) -> list[str]:
    """The packages an extra adds, from the installed metadata (the extra itself when the
    metadata is not there, as in a source checkout)."""
    from importlib import metadata

    try:
        requires = metadata.requires(PACKAGE) or []
    except metadata.PackageNotFoundError:
        return [f"{PACKAGE}[{extra}]"]
    out = []
    for req in requires:
        name, _, marker = req.partition(";")
        if f'extra == "{extra}"' in marker.replace("'", '"'):
            out.append(name.strip().replace(" ", ""))
    return out or [f"{PACKAGE}[{extra}]"]


def _quoted(spec: str) -> str:
    return f"'{spec}'" if any(c in spec for c in "[]<>=!~ ") else spec


def add_extra(extra: str, how: str | None = None) -> str:
    """The one command that adds ``extra`` to this installation."""
    how = how or method()
    spec = _quoted(f"{PACKAGE}[{extra}]")
    if how == "pipx":
        return f"pipx inject {PACKAGE} " + " ".join(_quoted(r) for r in requirements(extra))
    if how == "uv-tool":
        return f"uv tool install {PACKAGE} " + " ".join(
            f"--with {_quoted(r)}" for r in requirements(extra))
    if how == "uv-venv":
        return f"uv pip install {spec}"
    if how == "venv":
        return f"{Path(sys.prefix) / 'bin' / 'python'} -m pip install {spec}"
    return f"pip install {spec}"


def need(module: str, extra: str, what: str, error: type[Exception] = BackendUnavailable) -> Any:
    """``module`` imported, or ``error`` saying ``what`` and the one command that adds ``extra``."""
    try:
        __import__(module)  # through the import statement's hook, as `import module` would
    except ImportError:
        raise error(f"{what}: {add_extra(extra)}") from None
    return sys.modules[module]


def package_command(verb: str, how: str | None = None) -> str:
    """``uninstall``, ``upgrade`` or ``reinstall`` Lore itself, the way it was installed."""
    how = how or method()
    if how == "pipx":
        return f"pipx {verb} {PACKAGE}"
    if how == "uv-tool":  # uv has no `tool reinstall`: install again with --reinstall
        return (f"uv tool install --reinstall {PACKAGE}" if verb == "reinstall"
                else f"uv tool {verb} {PACKAGE}")
    pip = {"uv-venv": "uv pip", "venv": f"{Path(sys.prefix) / 'bin' / 'python'} -m pip"}.get(
        how, "pip")
    flags = {"uninstall": "", "upgrade": "install -U ", "reinstall": "install --force-reinstall "}
    return f"{pip} {flags[verb] or 'uninstall '}{PACKAGE}"
