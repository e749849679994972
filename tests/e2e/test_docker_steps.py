"""The Dockerfile's steps without Docker: the checkout as the image's build stage copies it,
`pip install ".[server]"` into a fresh virtual environment, the image's model check (the
packaged model, offline), then its command and its health check on a free port: the server
refuses 0.0.0.0 without a token, starts with one, answers the health check (the image's own
command, run as written) and refuses an API call without the token."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_docker import exec_form, instructions  # noqa: E402

from server_util import free_port  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_the_image_steps_in_a_virtual_environment(tmp_path):
    steps = instructions()
    src = tmp_path / "src"
    src.mkdir()
    for word, args in steps:
        if word == "COPY" and not args.startswith("--from"):
            *sources, _ = shlex.split(args)
            for s in sources:
                if (ROOT / s).is_dir():
                    shutil.copytree(ROOT / s, src / s,
                                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
                else:
                    shutil.copy2(ROOT / s, src / s)
    venv = tmp_path / "opt-lore"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    pip = next(a for w, a in steps if w == "RUN" and "pip install" in a)
    target = shlex.split(pip.split("pip install", 1)[1])[-1]  # ".[server]"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
         "--quiet", "--no-compile", target], capture_output=True, text=True, timeout=1200, cwd=src)
    assert installed.returncode == 0, installed.stderr[-3000:]

    home, config = tmp_path / "data", tmp_path / "config"
    home.mkdir()
    config.mkdir()
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("LORE_", "PYTHON", "VIRTUAL_ENV"))}
    env = {**keep, "PATH": f"{venv / 'bin'}{os.pathsep}{keep.get('PATH', '')}", "LORE_HOME": str(home),
           "LORE_CONFIG": str(config / "config.yaml"), "HF_HUB_OFFLINE": "1"}

    check = next(a for w, a in steps if w == "RUN" and "embed_query" in a)
    ran = subprocess.run(shlex.split(check), capture_output=True, text=True, env=env, timeout=300,
                         cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-2000:]

    port = str(free_port())
    cmd = [port if part == "8420" else part for part in exec_form(next(a for w, a in steps if w == "CMD"))]
    refused = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert refused.returncode == 1 and "needs a token" in refused.stderr
    made = subprocess.run(["lore", "serve", "token", "create", "--scope", "read", "--json"],
                          capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    token = json.loads(made.stdout)["token"]
    health = [p.replace("8420", port) for p in exec_form(next(a for w, a in steps if w == "HEALTHCHECK"))]
    server = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            probe = subprocess.run(health, capture_output=True, text=True, env=env, timeout=30)
            if probe.returncode == 0:
                break
            assert server.poll() is None, server.stderr.read().decode()[-2000:] if server.stderr else ""
            assert time.monotonic() < deadline, probe.stderr[-1000:]
            time.sleep(0.5)
        base = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{base}/api/v1/stats").status_code == 401
        answer = httpx.get(f"{base}/api/v1/schedule", headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 200 and answer.json()["enabled"] is False
    finally:
        server.terminate()
        server.wait(30)
