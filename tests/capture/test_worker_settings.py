"""A running worker follows config.yaml: a judge added, changed or removed is the one the next
event meets, and `lore doctor` and `lore status` name the judge the worker uses."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import FakeEmbedder
from lore.api import Lore
from lore.cli import cli
from lore.config import load_config
from lore.home import model_in_use
from lore.worker import Worker

CLAUDE = "llm:\n  provider: claude-cli\n  model: haiku\n"
OPENAI = "llm:\n  provider: openai\n  model: qwen2.5:7b\n  base_url: http://127.0.0.1:9/v1\n"


def write(config: Path, text: str) -> None:
    """A new version of the file as an editor or `lore install` leaves it (a new inode)."""
    tmp = config.with_name(".config.tmp")
    tmp.write_text(text)
    os.replace(tmp, config)


def doctor_line(runner: CliRunner) -> str:
    checks = json.loads(runner.invoke(cli, ["doctor", "--json"]).output)
    return next(c["detail"] for c in checks if c["check"] == "language model")


@pytest.fixture
def fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from test_llm_claude import install_fake

    install_fake(tmp_path, monkeypatch)


def test_the_worker_follows_the_config_and_says_which_judge_it_uses(
        lore_home: Path, fake_claude: None) -> None:
    lore_home.mkdir(parents=True, exist_ok=True)
    config = lore_home / "config.yaml"
    write(config, "search:\n  default_limit: 7\n")
    worker = Worker(load_config())
    worker._lore = Lore.open(worker.settings, embedder=FakeEmbedder())  # as `lore` opens it, faster
    runner = CliRunner()
    try:
        worker.acquire()
        worker.record_model()
        assert model_in_use(lore_home)["provider"] is None
        assert worker.lore.learning.judge is None and not worker.follow_config()  # nothing changed
        assert doctor_line(runner).endswith(f"the running worker (pid {os.getpid()}) uses none")

        write(config, CLAUDE)  # `lore install --judge claude-cli` while the worker runs
        assert "claude-cli (haiku) configured" not in doctor_line(runner)
        assert "still uses none: it reads the change before its next event" in doctor_line(runner)
        assert worker.follow_config()
        assert worker._lore is None  # the facade, and its judge, are opened anew
        assert worker.lore.learning.judge is not None
        assert worker.settings.config.llm.model == "haiku"
        assert model_in_use(lore_home) == {"pid": os.getpid(), "provider": "claude-cli", "model": "haiku",
                                          "judge": True}
        assert doctor_line(runner).endswith(f"the running worker (pid {os.getpid()}) uses claude-cli (haiku)")
        status = runner.invoke(cli, ["status"], obj={"embedder": FakeEmbedder()}).output
        assert f"Judge          claude-cli (haiku); the running worker (pid {os.getpid()})" in status

        time.sleep(0.01)
        write(config, OPENAI)  # changed
        assert worker.follow_config() and worker.settings.config.llm.provider == "openai"
        assert model_in_use(lore_home)["model"] == "qwen2.5:7b"

        write(config, "llm:\n  provider: [not, a, name]\n")  # broken: the settings in use stay
        assert not worker.follow_config() and worker.settings.config.llm.provider == "openai"
        assert "does not load" in (lore_home / "logs" / "worker.log").read_text()

        write(config, "search:\n  default_limit: 7\n")  # removed
        assert worker.follow_config() and worker.lore.learning.judge is None
        assert model_in_use(lore_home)["provider"] is None
    finally:
        worker.release()
    assert model_in_use(lore_home) is None  # no worker runs: nothing is claimed
    assert "running worker" not in doctor_line(runner)


def test_install_says_which_judge_stays(lore_home: Path, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    lore_home.mkdir(parents=True, exist_ok=True)
    write(lore_home / "config.yaml", CLAUDE)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    runner = CliRunner()
    out = runner.invoke(cli, ["install", "--dry-run"])
    assert out.exit_code == 0, out.output
    assert "the judge is not set up" not in out.output
    assert "the judge stays claude-cli (haiku), as" in out.output
    out = runner.invoke(cli, ["install", "--judge", "none", "--dry-run"])
    assert "the judge stays claude-cli (haiku)" in out.output and "remove the llm: section" in out.output
