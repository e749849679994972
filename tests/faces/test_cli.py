"""The `lore` command as a user runs it (click's CliRunner, the real model)."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

from lore.cli import cli

ROOT = Path(__file__).resolve().parents[2]


def all_commands(group: click.Group = cli, prefix: tuple[str, ...] = ()):
    for name, cmd in sorted(group.commands.items()):
        path = (*prefix, name)
        yield path, cmd
        if isinstance(cmd, click.Group):
            yield from all_commands(cmd, path)


COMMANDS = [" ".join(p) for p, _ in all_commands()]


@pytest.mark.parametrize("path", COMMANDS)
def test_every_command_has_help_with_an_example(run, path):
    result = run(*path.split(), "--help")
    assert result.exit_code == 0
    assert "Usage:" in result.output
    assert "Example" in result.output, f"`lore {path} --help` shows no example"


@pytest.mark.parametrize("path", COMMANDS)
def test_every_command_is_documented(path):
    docs = (ROOT / "README.md").read_text() + (ROOT / "docs" / "cli.md").read_text()
    assert f"lore {path}" in docs, f"`lore {path}` is in neither README.md nor docs/cli.md"


def test_issue_command_list_exists():
    wanted = [
        "admin init", "admin stats", "admin export", "admin import", "admin merge-tags",
        "admin reembed", "admin doctor", "learn add", "learn update", "learn delete",
        "learn link", "learn unlink", "recall search", "recall show", "recall related",
        "recall path", "recall tags", "recall sources", "recall confidence-levels",
        "recall kinds", "config show", "config path",
    ]
    from lore.cli.common import MOVED

    for path in wanted:  # each is a command, or refused naming the command that does it now
        assert path in COMMANDS or MOVED[path].split()[1] in COMMANDS, path


def add(run, *args, input=None):
    result = run("learn", "add", *args, input=input)
    assert result.exit_code == 0, result.output
    return result.stdout.strip()


def test_add_from_argument_file_and_stdin(run, tmp_path):
    a = add(run, "From an argument", "argument content", "--tag", "cli,demo")
    note = tmp_path / "note.md"
    note.write_text("file content\nwith two lines\n")
    b = add(run, "From a file", "--content-file", str(note))
    c = add(run, "From stdin", "-", input="stdin content")
    shown = {i: json.loads(run("recall", "show", i, "--json").stdout) for i in (a, b, c)}
    assert shown[a]["content"] == "argument content" and shown[a]["tags"] == ["cli", "demo"]
    assert shown[b]["content"] == "file content\nwith two lines\n"
    assert shown[c]["content"] == "stdin content"


def test_add_full_json_and_every_option(run, tmp_path):
    example = tmp_path / "settings.py"
    example.write_text("SESSION_ENGINE = 'file'\n")
    out = run("learn", "add", "Use file sessions", "Not Redis.", "--kind", "preference",
              "--confidence", "high", "--set", "source=correction", "--project", str(tmp_path),
              "--context", "small deployments", "--set", "anti_contexts=multi-region",
              "--set", "file-type=py", "--set", "rejected=Redis", "--set", "preferred=files",
              "--set", "preference.reasoning=simplicity", "--set", "pro=no server",
              "--set", "con=one host", "--example-file", str(example),
              "--set", "evidence=No, don't use Redis", "--set", "session_id=s-1",
              "--set", "summary=S", "--set", "problem=P", "--set", "when_to_apply=W",
              "--set", "when-not=WN", "--set", "score=0.9", "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["project"] == str(tmp_path.resolve())
    assert data["preference"] == {"context": "", "rejected": "Redis", "preferred": "files",
                                  "reasoning": "simplicity"} | {"context": ""}
    assert data["examples"][0]["language"] == "py"
    assert data["evidence"][0] == {"quote": "No, don't use Redis", "session_id": "s-1",
                                   "message_id": None, "observed_at": None, "source": None,
                                   "context": None}
    assert (data["summary"], data["problem_solved"], data["when_to_apply"],
            data["when_not_to_apply"]) == ("S", "P", "W", "WN")


def test_add_from_json_object(run, tmp_path):
    spec = tmp_path / "lesson.json"
    spec.write_text(json.dumps({"title": "Structured", "content": "body", "tags": ["x"],
                                "trade_offs": [{"type": "pro", "description": "fast"}]}))
    out = run("learn", "add", "ignored title", "--from-json", str(spec), "--json")
    data = json.loads(out.stdout)
    assert data["title"] == "Structured" and data["trade_offs"][0]["type"] == "pro"


def test_update_and_delete(run):
    lid = add(run, "Old title", "old", "--tag", "a,b")
    out = run("learn", "update", lid, "--title", "New title", "--add-tag", "c",
              "--remove-tag", "a", "--json")
    data = json.loads(out.stdout)
    assert data["title"] == "New title" and data["tags"] == ["b", "c"]
    assert run("learn", "update", lid).exit_code == 2  # nothing to change: usage error
    out = run("learn", "delete", lid, "--yes", "--json")
    assert json.loads(out.stdout) == {"deleted": lid, "title": "New title"}
    gone = run("recall", "show", lid)
    assert gone.exit_code == 1 and "no lesson with id" in gone.stderr


def test_search_json_shape_and_explain(run):
    lid = add(run, "Websocket idle timeout behind nginx", "Set proxy_read_timeout 3600s.")
    out = run("search", "why do websockets disconnect", "--json", "--explain")
    data = json.loads(out.stdout)
    assert data["query"] == "why do websockets disconnect"
    hit = data["results"][0]
    assert hit["id"] == lid
    assert set(hit) == {"id", "title", "snippet", "score", "kind", "confidence", "explain"}
    assert set(hit["explain"]) >= {"vector_rank", "similarity", "keyword_rank", "bm25", "rrf",
                                   "confidence_bonus", "usage_bonus", "recency_bonus", "total"}
    table = run("search", "websocket timeout", "--explain")
    assert "rrf/max" in table.stdout and lid in table.stdout
    assert run("search", "nothing matches zzqx", "--mode", "keyword").stderr.startswith(
        "no lessons found")


def test_search_filters_from_the_command_line(run):
    add(run, "Deploy with blue green", "deploy script", "--tag", "deploy", "--kind", "project_rule")
    add(run, "Deploy docs", "deploy docs", "--tag", "docs", "--confidence", "low")
    out = json.loads(run("search", "deploy", "--tag", "deploy", "--json").stdout)
    assert [r["title"] for r in out["results"]] == ["Deploy with blue green"]
    out = json.loads(run("search", "deploy", "--filter", "min-confidence=medium",
                         "--kind", "project_rule", "--json").stdout)
    assert [r["title"] for r in out["results"]] == ["Deploy with blue green"]
    bad = run("search", "deploy", "--filter", "min-confidence=huge")
    assert bad.exit_code == 1
    assert bad.stderr.strip() == ("Error: invalid confidence level 'huge'; valid: very-low, low, "
                                  "medium, high, very-high")


@pytest.mark.parametrize("args, needle", [
    (["learn", "add", "", "x"], "title must not be empty"),
    (["learn", "add", "T", "x", "--confidence", "sure"], "valid: very-low"),
    (["learn", "add", "T", "x", "--set", "source=rumour"], "invalid source 'rumour'; valid:"),
    (["learn", "add", "T", "--content-file", "/nonexistent/file.md"], "cannot read"),
    (["recall", "show", "01JD8X3Q5M0000000000000000"], "no lesson with id"),
    (["recall", "related", "01JD8X3Q5M0000000000000000"], "no lesson with id"),
    (["learn", "link", "01JD8X3Q5M0000000000000000", "01JD8X3Q5M0000000000000001"],
     "no lesson with id"),
])
def test_bad_input_is_one_line_exit_1_and_changes_nothing(run, args, needle):
    before = run("stats", "--counts", "--json")
    result = run(*args)
    assert result.exit_code == 1
    assert needle in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output
    after = run("stats", "--counts", "--json")
    assert json.loads(before.stdout)["lessons"] == json.loads(after.stdout)["lessons"]


def test_not_a_database_and_newer_database(run, tmp_path):
    junk = tmp_path / "notes.db"
    junk.write_text("just text")
    out = run("--db", str(junk), "recall", "values", "tags")
    assert out.exit_code == 1 and "not a Lore database" in out.stderr
    assert junk.read_text() == "just text"


def test_admin_commands(run, tmp_path):
    init = run("admin", "init", "--json")
    data = json.loads(init.stdout)
    assert data["created"] is True and Path(data["config"]).exists()
    a = add(run, "Alpha", "one", "--tag", "javascript")  # the template config sets nothing
    add(run, "Beta", "two", "--tag", "frontend")
    assert json.loads(run("recall", "show", a, "--json").stdout)["tags"] == ["javascript"]
    merged = run("admin", "merge-tags", "frontend", "javascript", "--yes", "--json")
    assert json.loads(merged.stdout)["lessons"] == 1
    tags = json.loads(run("recall", "values", "tags", "--counts", "--json").stdout)
    assert tags == [{"tag": "javascript", "count": 2}]
    missing = run("admin", "merge-tags", "nope", "javascript", "--yes")
    assert missing.exit_code == 1 and "no lesson is tagged 'nope'" in missing.stderr
    re = run("admin", "reembed", "--force", "--json")
    assert json.loads(re.stdout) == {"embedded": 2, "lessons": 2, "chunks": 0,
                                     "restarted": True, "resumed": False, "complete": True,
                                     "model": "all-MiniLM-L6-v2", "dimensions": 384}
    doctor = run("doctor", "--json")
    assert doctor.exit_code == 0, doctor.output
    checks = {c["check"]: c for c in json.loads(doctor.stdout)}
    assert {"sqlite driver", "fts5", "sqlite-vec", "config", "embedding model", "database",
            "embeddings"} <= set(checks)
    assert all(c["ok"] for c in checks.values())
    stats = json.loads(run("stats", "--counts", "--json").stdout)
    assert stats["lessons"] == 2 and stats["embedding_model"] == "all-MiniLM-L6-v2"
    assert run("recall", "show", a).exit_code == 0


def test_doctor_reports_a_broken_config_with_a_fix(run, lore_home):
    lore_home.mkdir(parents=True, exist_ok=True)
    (lore_home / "config.yaml").write_text("search:\n  vectr_weight: 2\n")
    out = run("doctor", "--json")
    assert out.exit_code == 1
    bad = [c for c in json.loads(out.stdout) if not c["ok"]]
    assert bad[0]["check"] == "config" and "search.vectr_weight" in bad[0]["detail"]
    assert bad[0]["fix"]


def test_reference_listings(run):
    kinds = json.loads(run("recall", "values", "kinds", "--json").stdout)
    assert "preference" in [k["name"] for k in kinds]
    levels = json.loads(run("recall", "values", "confidence-levels", "--json").stdout)
    assert [lvl["ordinal"] for lvl in levels] == [1, 2, 3, 4, 5]
    assert "typical confidence" in run("recall", "values", "sources").stdout


def test_demo_runs_in_its_own_home(run, tmp_path, lore_home):
    folder = tmp_path / "demo"
    out = run("demo", "--home", str(folder))
    assert out.exit_code == 0, out.output
    assert "Seeded" in out.stdout and "related lessons" in out.stdout
    assert (folder / "lore.db").exists()
    assert not (lore_home / "lore.db").exists()  # the user's home is never touched
