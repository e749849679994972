"""The benchmarks still run: every speed benchmark of `make bench` and every quality measurement
at toy size, each as its own process, writing its JSON results into a folder of the test's.
Nothing is timed here (figures belong in docs/benchmarks.md); what is checked is that each one
runs to the end and records what it measured."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from bench import harness, tables
from bench.__main__ import SUITE

ROOT = Path(__file__).resolve().parents[2]
TRANSCRIPTS = "tests/fixtures/transcripts"


CACHES: list[Path] = []  # the benchmarks' caches, one folder for the whole run (see below)


@pytest.fixture(scope="session", autouse=True)
def bench_cache(tmp_path_factory) -> None:
    """The embeddings the benchmarks cache (the corpus, the base vectors of the scale corpus)
    are made once for every benchmark of the run, as they are on a developer's machine."""
    CACHES.append(tmp_path_factory.mktemp("bench-cache"))


def bench(tmp_path: Path, *argv: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    # The benchmark's temporary folders go in one of the test's, removed after it: a short path,
    # as a Unix socket's (the Postgres server's) must be.
    scratch = Path(tempfile.mkdtemp(prefix="lb-"))
    try:
        return run_bench(tmp_path, scratch, argv, timeout)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_bench(tmp_path: Path, scratch: Path, argv: tuple[str, ...], timeout: int
              ) -> subprocess.CompletedProcess[str]:
    # A benchmark that runs hooks as a user's session does may start a home's worker: it exits
    # two seconds after its queue is empty, not ten minutes.
    env = {**os.environ, "LORE_HOME": str(tmp_path / "home"), "TMPDIR": str(scratch),
           "LORE_WORKER_IDLE_EXIT": "2",
           "LORE_BENCH_RESULTS": str(tmp_path / "results"),
           "LORE_BENCH_CACHE": str(CACHES[-1] / "scale"),
           "LORE_BENCH_CORPUS_CACHE": str(CACHES[-1] / "corpus"),
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    return subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=timeout)


# ---- the harness ---------------------------------------------------------------------------------

def test_pct_is_a_measured_value_by_nearest_rank():
    values = [5.0, 1.0, 4.0, 2.0, 3.0, 10.0, 6.0, 9.0, 7.0, 8.0]
    assert harness.pct(values, 0.5) in values and harness.pct(values, 0.9) == 9.0
    assert harness.pct(values, 0) == 1.0 and harness.pct(values, 1) == 10.0
    assert harness.stats([3.0, 1.0, 2.0]) == {"runs": 3, "median": 2.0, "p90": 3.0}
    with pytest.raises(ValueError):
        harness.pct([], 0.9)


def test_a_report_writes_its_rows_baseline_and_machine_as_json(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LORE_BENCH_RESULTS", str(tmp_path / "out"))
    report = harness.Report("toy_bench", size=10)
    report.add("work", [2.0, 4.0, 3.0], baseline="nothing")
    report.add("nothing", [1.0, 1.0, 1.0], quiet=True)
    report.value("database size", 12, unit="MB")
    report.record({"embed": [1.0, 2.0], "recall": 0.98, "notes": ["a"]}, "10 lessons")
    path = report.write()
    data = json.loads(path.read_text())
    assert path == tmp_path / "out" / "toy_bench.json"
    assert data["bench"] == "toy_bench" and data["params"] == {"size": 10}
    assert data["machine"]["cpus"] == os.cpu_count()
    rows = {r["label"]: r for r in data["rows"]}
    assert rows["work"] == {"label": "work", "runs": 3, "median": 3.0, "p90": 4.0, "unit": "ms",
                            "baseline": "nothing"}
    assert rows["database size"]["value"] == 12
    assert rows["embed, 10 lessons"]["runs"] == 2 and rows["recall, 10 lessons"]["value"] == 0.98
    assert "notes, 10 lessons" not in rows  # not a figure
    out = capsys.readouterr().out
    assert "- work: median 3.0, p90 4.0 ms (baseline: nothing)" in out and "- nothing" not in out


def test_the_runner_refuses_an_unknown_benchmark_in_one_line(tmp_path):
    done = bench(tmp_path, "bench", "no_such_bench")
    assert done.returncode == 2
    assert done.stderr.strip() == "unknown benchmark: no_such_bench (python -m bench --list)"
    listed = bench(tmp_path, "bench", "--list")
    assert listed.stdout.split() == list(SUITE)


# ---- every speed benchmark, at toy size -----------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in SUITE if not n.startswith("postgres")])
def test_a_speed_benchmark_runs_at_toy_size_and_writes_its_results(tmp_path, name):
    done = bench(tmp_path, "bench", name, "--toy")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    data = json.loads((tmp_path / "results" / f"{name}.json").read_text())
    assert data["bench"] == name and data["rows"]
    for row in data["rows"]:
        assert ("median" in row and row["runs"] >= 1 and row["p90"] >= row["median"]) \
            or "value" in row, row
    baselines = {r["baseline"] for r in data["rows"] if r.get("baseline")}
    assert baselines <= {r["label"] for r in data["rows"]}  # a baseline is a row of the run


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.parametrize("name", [n for n in SUITE if n.startswith("postgres")])
def test_a_postgres_benchmark_runs_at_toy_size(tmp_path, name):
    pytest.importorskip("pgserver")
    done = bench(tmp_path, "bench", name, "--toy")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert json.loads((tmp_path / "results" / f"{name}.json").read_text())["rows"]


# ---- the quality measurements, on the repository's fixtures and a tiny LoCoMo file ---------------

def turn(speaker: str, dia_id: str, text: str) -> dict[str, str]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text}


def tiny_locomo(path: Path) -> Path:
    """Five conversations (the LoCoMo scripts choose leave-one-conversation-out)."""
    pets, hobbies = ["Pixel", "Biscuit", "Nova", "Rex", "Mochi"], ["pottery", "chess", "climbing",
                                                                    "baking", "sailing"]
    data = []
    for i, (pet, hobby) in enumerate(zip(pets, hobbies, strict=True)):
        a, b = f"Ann{i}", f"Bo{i}"
        data.append({"sample_id": f"conv-{i}", "conversation": {
            "speaker_a": a, "speaker_b": b,
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [turn(a, "D1:1", f"I adopted a greyhound called {pet}."),
                          turn(b, "D1:2", f"Lovely! I started {hobby} classes."),
                          turn(a, "D1:3", "The weather was grey all week.")],
            "session_2_date_time": "10:00 am on 9 June, 2023",
            "session_2": [turn(a, "D2:1", f"{pet} learned to sit this week."),
                          turn(b, "D2:2", f"My {hobby} teacher moved to Lisbon?")]},
            "qa": [{"question": f"What is the name of {a}'s dog?", "answer": pet,
                    "evidence": ["D1:1"], "category": 4},
                   {"question": f"What hobby did {b} start?", "answer": hobby, "evidence": ["D1:2"],
                    "category": 1},
                   {"question": f"Where did {b}'s teacher move?", "answer": "Lisbon",
                    "evidence": ["D2:2"], "category": 2},
                   {"question": f"What did {pet} learn, and when?", "answer": "to sit",
                    "evidence": ["D1:1", "D2:1"], "category": 3},
                   {"question": f"Did {a} start {hobby}?", "answer": "no", "evidence": ["D1:2"],
                    "category": 5}]})
    path.write_text(json.dumps(data))
    return path


QUALITY = {
    "apply_race": (["bench.quality.apply_race", "--rounds", "1", "--runs", "2"], "0 of"),
    "check_replay": (["bench.quality.check_replay", TRANSCRIPTS], "|"),
    "judge_tokens": (["bench.quality.judge_tokens", TRANSCRIPTS], "tokens a day"),
    "learning_curve": (["bench.quality.learning_curve", "--synthetic", "--sessions", "8",
                        "--approve-after", "4"], "followed"),
    "session_pass": (["bench.quality.session_pass", TRANSCRIPTS], "pattern pass"),
    # Lore's own HTTP providers only: the Claude Code ones need its CLI (the e2e tests have it)
    "model_wire": (["bench.quality.model_wire", TRANSCRIPTS, "--providers", "anthropic,openai"],
                   "| anthropic |"),
}
LOCOMO = {"explore": [], "loco": ["--product"], "rerank": ["--ceiling"]}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(QUALITY))
def test_a_quality_measurement_runs_on_the_fixtures(tmp_path, name):
    argv, said = QUALITY[name]
    done = bench(tmp_path, *argv)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert said in done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("name", list(LOCOMO))
def test_a_locomo_script_runs_on_a_tiny_file(tmp_path, name):
    data = tiny_locomo(tmp_path / "tiny.json")
    done = bench(tmp_path, f"bench.locomo.{name}", str(data), *LOCOMO[name])
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "100.0" in done.stdout  # the tiny file's evidence is found


# What runs on its own without being a benchmark of the suite: the runner, the tables and what
# other benchmarks start.
NOT_A_BENCHMARK = {"bench.__main__", "bench.tables", "bench.mcp_bare_server", "bench.scale_corpus"}


def test_every_runnable_module_of_bench_runs_in_these_tests():
    runnable = {".".join(p.relative_to(ROOT).with_suffix("").parts)
                for p in (ROOT / "bench").rglob("*.py") if "__main__" in p.read_text()}
    covered = ({f"bench.{n}" for n in SUITE} | {argv[0] for argv, _ in QUALITY.values()}
               | {f"bench.locomo.{n}" for n in LOCOMO} | {"bench.quality.repeat_groups"}
               | NOT_A_BENCHMARK)
    assert runnable - covered == set()  # a new script gets a toy run here
    assert not (ROOT / "bench" / "results").is_dir() or all(
        p.suffix == ".json" for p in (ROOT / "bench" / "results").iterdir())


def test_the_tables_read_the_results_with_each_row_against_its_baseline(tmp_path, monkeypatch):
    monkeypatch.setenv("LORE_BENCH_RESULTS", str(tmp_path / "results"))  # where bench() reads
    report = harness.Report("toy_bench", size=10)
    report.add("search", [4.0, 6.0, 5.0], baseline="embedding", quiet=True)
    report.add("embedding", [2.0, 2.0, 3.0], quiet=True)
    report.value("database size", 38, unit="MB")
    report.write()
    done = bench(tmp_path, "bench.tables", "toy_bench")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "| search | 5.0 ms | 6.0 ms | 3 | 2.50 |" in lines
    assert "| embedding | 2.0 ms | 3.0 ms | 3 |  |" in lines
    assert "| database size | 38 MB | | | |" in lines
    missing = bench(tmp_path, "bench.tables", "other_bench")
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.startswith("no results for other_bench in ")


# ---- the tables of docs/benchmarks.md, generated from the committed results ----------------------

PAGE = ROOT / "docs" / "benchmarks.md"


def test_the_docs_tables_are_the_committed_results_of_every_benchmark():
    page = PAGE.read_text()
    assert sorted(tables.blocks(page)) == sorted(SUITE)  # each benchmark's table, once
    committed = {p.stem: json.loads(p.read_text()) for p in harness.RESULTS.glob("*.json")}
    assert sorted(committed) == sorted(SUITE)
    for name, data in committed.items():
        assert data["bench"] == name and data["rows"], name
        # no path of the machine that ran them: the params are what `make bench` passes
        assert not any(isinstance(v, str) and v.startswith("/") for v in data["params"].values())
    assert tables.rewrite(page, harness.RESULTS) == page, \
        "a table differs from its results: python -m bench.tables --write docs/benchmarks.md"


def test_writing_the_tables_replaces_only_the_blocks_and_check_sees_a_stale_one(tmp_path,
                                                                             monkeypatch):
    monkeypatch.setenv("LORE_BENCH_RESULTS", str(tmp_path / "results"))  # where bench() reads
    report = harness.Report("toy_bench", size=10)
    report.add("search", [4.0, 6.0, 5.0], quiet=True)
    report.write()
    page = tmp_path / "page.md"
    text = ("# Page\n\nAnalysis before.\n\n<!-- bench:toy_bench -->\nan old table\n<!-- /bench -->\n"
            "\nAnalysis after.\n")
    page.write_text(text)
    stale = bench(tmp_path, "bench.tables", "--check", str(page))
    assert stale.returncode == 1 and "toy_bench" in stale.stdout and page.read_text() == text
    wrote = bench(tmp_path, "bench.tables", "--write", str(page))
    assert wrote.returncode == 0, wrote.stderr
    new = page.read_text()
    assert new.startswith("# Page\n\nAnalysis before.\n\n<!-- bench:toy_bench -->\n`toy_bench`, ")
    assert new.endswith("| search | 5.0 ms | 6.0 ms | 3 |  |\n<!-- /bench -->\n\nAnalysis after.\n")
    assert "an old table" not in new
    assert bench(tmp_path, "bench.tables", "--check", str(page)).returncode == 0
    assert bench(tmp_path, "bench.tables", "--write", str(page)).stdout.endswith("0 of 1 tables rewritten\n")


def test_writing_the_tables_refuses_a_block_without_results_and_changes_nothing(tmp_path):
    page = tmp_path / "page.md"
    text = "<!-- bench:other_bench -->\nkept\n<!-- /bench -->\n"
    page.write_text(text)
    done = bench(tmp_path, "bench.tables", "--write", str(page))
    assert done.returncode == 1 and done.stdout == "" and page.read_text() == text
    assert done.stderr.startswith("no results for other_bench in ") and done.stderr.count("\n") == 1
    (tmp_path / "plain.md").write_text("# No blocks\n")
    none = bench(tmp_path, "bench.tables", "--write", str(tmp_path / "plain.md"))
    assert none.returncode == 1 and "no generated block" in none.stderr
    absent = bench(tmp_path, "bench.tables", "--check", str(tmp_path / "absent.md"))
    assert absent.returncode == 1 and absent.stderr.startswith("no such page: ")


@pytest.mark.slow
def test_repeat_groups_sheets_agreement_and_merge_run_on_a_tiny_history(tmp_path):
    def msg(n: int, text: str, label: str = "correction") -> dict:
        return {"id": f"m{n}", "text": text, "label": label, "durable": label != "none",
                "prev_agent": "I'll run the build with npm.", "source": {"repo": "acme/app"}}

    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text("".join(json.dumps(m) + "\n" for m in [
        msg(1, "No, use pnpm instead of npm"), msg(2, "add a footer", "none"),
        msg(3, "pnpm, not npm: this is a pnpm workspace"), msg(4, "never force-push to main")]))
    done = bench(tmp_path, "bench.quality.repeat_groups", "sheets", str(labelled),
                 "--out", str(tmp_path / "sheets"))
    assert done.returncode == 0, done.stderr
    sheet = next((tmp_path / "sheets").glob("*.md"))
    assert "pnpm workspace" in sheet.read_text() and "correction" not in sheet.read_text()
    for reader, ids in (("A", ["m1", "m3"]), ("B", ["m1", "m3", "m4"])):
        (tmp_path / reader).mkdir()
        (tmp_path / reader / f"{sheet.stem}.jsonl").write_text(
            json.dumps({"group": "pm", "messages": ids, "lesson": "pnpm"}) + "\n")
    agreed = bench(tmp_path, "bench.quality.repeat_groups", "agree", str(labelled), "--a",
                   str(tmp_path / "A"), "--b", str(tmp_path / "B"), "--write",
                   str(tmp_path / "groups.jsonl"))
    assert agreed.returncode == 0, agreed.stderr
    assert json.loads(agreed.stdout)["pairs"]["both"] == 1  # m1-m3; B alone adds m4
    merged = bench(tmp_path, "bench.quality.repeat_groups", "merge", str(labelled), "--groups",
                   str(tmp_path / "groups.jsonl"), "--out", str(tmp_path / "history.jsonl"))
    assert merged.returncode == 0, merged.stderr
    rows = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    grouped = {r["id"] for r in rows if r.get("repeat_group")}
    assert grouped == {"m1", "m3"}
