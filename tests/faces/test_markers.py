"""The markers the quick loop leans on: given by place and fixture (tests/conftest.py), and by
name for the slow tests (tests/slow.txt), which must keep naming tests that exist."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent


def collected(*argv: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", *argv], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 5), done.stdout[-3000:] + done.stderr[-3000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_every_name_in_slow_txt_is_a_test_that_exists():
    names = [line.split("#")[0].strip() for line in (TESTS / "slow.txt").read_text().splitlines()]
    names = [n for n in names if n]
    assert names == sorted(set(names))  # sorted, once each
    for name in names:
        file, _, function = name.partition("::")
        path = TESTS / file
        assert path.is_file() and path.name.startswith("test_"), name
        if function:
            defined = {node.name for node in ast.walk(ast.parse(path.read_text()))
                       if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}
            assert function in defined, f"{name}: no such test (renamed? update tests/slow.txt)"


@pytest.mark.slow  # a pytest process of its own
def test_markers_follow_place_fixture_parameter_and_the_slow_list():
    from conftest import SLOW

    contract, concurrent = "tests/store/test_store_contract.py", "tests/apply/test_apply_concurrent.py"
    files = [contract, concurrent, "tests/e2e/test_wheel.py", "tests/faces/test_docs.py"]
    every = collected(*files)
    left_out = collected("-m", "slow or e2e or postgres or browser", *files)
    listed = {n for n in every if n.split("[")[0].removeprefix("tests/") in SLOW}
    assert f"{concurrent}::test_concurrent_runs_and_an_appending_user_lose_no_line" in listed
    assert set(left_out) == listed | {n for n in every if "[postgresql" in n
                                      or n.startswith("tests/e2e/")}
    assert any("[postgresql" in n for n in left_out) and any("e2e" in n for n in left_out)
    assert any(n.startswith(concurrent) for n in set(every) - set(left_out))  # the rest stay in
