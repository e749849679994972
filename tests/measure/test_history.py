"""`lore eval history`: labelled histories replayed through the product's path, repeats
reported by where the lesson stood when the developer had to say it again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import FakeEmbedder
from lore.cli import cli as main
from lore.errors import InvalidInput
from lore.measure.history import evaluate, load, sessions_of

AGENT = "I'll install the dependencies with npm and run the build."


def rows() -> list[dict]:
    """Two repositories written for this test (no real messages ship with Lore)."""
    def msg(n, repo, text, label="none", durable=False, prev=AGENT, group=None, session=None):
        row = {"id": f"{repo}-{n}", "text": text, "label": label, "durable": durable,
               "prev_agent": prev, "source": {"repo": repo}}
        if group is not None:
            row["repeat_group"] = group
        if session is not None:
            row["session"] = session
        return row

    return [
        # acme/app: a lasting rule taught in session 1, said again in session 2
        msg(1, "acme/app", "Please build the landing page", prev=None),
        msg(2, "acme/app", "No, use pnpm instead of npm, always in this repo",
            "correction", True, group="pm"),
        msg(3, "acme/app", "Now add a footer to the page", prev=None),        # session 2
        msg(4, "acme/app", "use pnpm, not npm — this repo is a pnpm workspace",
            "correction", True, group="pm"),
        msg(5, "acme/app", "thanks, looks good"),
        # acme/app: said twice within one session, nothing before
        msg(6, "acme/app", "Start on the settings screen", prev=None),         # session 3
        msg(7, "acme/app", "never force-push to main", "preference", True, group="push"),
        msg(8, "acme/app", "again: never force-push to main", "preference", True, group="push"),
        # beta/tool: explicit sessions, a lesson that is not lasting
        msg(1, "beta/tool", "Fix the failing test", prev=None, session="a"),
        msg(2, "beta/tool", "no, use httpx instead of requests in this one script",
            "correction", False, session="a"),
    ]


def write(tmp_path: Path, data: list[dict]) -> Path:
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in data), encoding="utf-8")
    return path


def test_sessions_open_at_a_message_that_answers_no_agent_turn(tmp_path):
    messages = load([write(tmp_path, rows())])
    by_repo = sessions_of(messages)
    assert [len(s) for s in by_repo["acme/app"]] == [2, 3, 3]
    assert [len(s) for s in by_repo["beta/tool"]] == [2]
    assert {m.group for m in messages} == {None, "acme/app#pm", "acme/app#push"}


def test_a_rule_approved_after_the_first_session_is_in_front_at_the_repeat(tmp_path, settings):
    got = evaluate([write(tmp_path, rows())], settings, FakeEmbedder())
    assert got["repositories"] == 2 and got["sessions"] == 4 and got["messages"] == 10
    assert got["groups"] == 2
    later, same = got["later_session"], got["same_session"]
    assert later == {"front": 1, "proposed": 0, "candidate": 0, "absent": 0, "repeats": 1}
    assert got["later_session_taught"] == later  # its first occurrence is a lasting lesson
    # said twice in one session: the rule was learned but no reviewer has seen it yet
    assert same["repeats"] == 1 and same["front"] == 0 and same["absent"] == 0
    repo = next(r for r in got["by_repository"] if r["repo"] == "acme/app")
    assert [o["state"] for o in repo["repeats"] if o["later_session"]] == ["front"]
    review = got["review"]
    assert review["approved"] >= 2 and review["approved"] + review["rejected"] == review["proposals"]
    # the restatement in session 2 reads to the detector as a remark, not a new correction
    assert got["lessons"]["lasting"] == 4 and got["lessons"]["learned"] >= 3


def test_without_the_reviewer_the_repeat_finds_the_rule_only_proposed(tmp_path, settings):
    got = evaluate([write(tmp_path, rows())], settings, FakeEmbedder(), reviewer=False)
    assert got["later_session"]["front"] == 0
    assert got["later_session"]["proposed"] == 1
    assert got["review"]["proposals"] == 0


def test_the_reviewer_rejects_a_proposal_the_developer_would_not_keep(tmp_path, settings):
    data = [r for r in rows() if r["source"]["repo"] == "beta/tool"]
    got = evaluate([write(tmp_path, data)], settings, FakeEmbedder())
    assert got["review"]["approved"] == 0
    assert got["review"]["rejected"] == got["review"]["proposals"]


def test_the_users_home_is_not_touched(tmp_path, settings, lore_home):
    before = sorted(p.name for p in lore_home.rglob("*")) if lore_home.exists() else []
    evaluate([write(tmp_path, rows())], settings, FakeEmbedder())
    after = sorted(p.name for p in lore_home.rglob("*")) if lore_home.exists() else []
    assert after == before


def test_judge_requests_are_written_and_missing_replies_leave_messages_waiting(tmp_path, settings):
    prompts = tmp_path / "prompts"
    got = evaluate([write(tmp_path, rows())], settings, FakeEmbedder(), judge_prompts=prompts)
    names = sorted(p.name for p in prompts.iterdir())
    assert names and got["judge"]["requests"] == len(names)
    assert got["judge"]["missing_replies"] == len(names)
    assert all(n.startswith(("acme-app-s", "beta-tool-s")) for n in names)
    text = (prompts / names[0]).read_text(encoding="utf-8")
    assert text.startswith("===== SYSTEM =====") and "===== USER =====" in text
    assert got["review"]["proposals"] == 0  # nothing judged, nothing proposed


def test_judge_replies_are_read_by_request_name(tmp_path, settings):
    prompts = tmp_path / "prompts"
    evaluate([write(tmp_path, rows())], settings, FakeEmbedder(), judge_prompts=prompts)
    replies = tmp_path / "replies"
    replies.mkdir()
    for p in prompts.iterdir():  # a judge that finds nothing to learn anywhere
        keys = [line.split('"')[1] for line in p.read_text().splitlines()
                if line.startswith('<message id="')]
        (replies / p.name).write_text(json.dumps({"verdicts": [
            {"id": k, "label": "none", "durable": False} for k in keys]}), encoding="utf-8")
    got = evaluate([write(tmp_path, rows())], settings, FakeEmbedder(), judge_replies=replies)
    assert got["judge"]["missing_replies"] == 0
    assert got["review"]["proposals"] == 0


@pytest.mark.parametrize("bad, why", [
    ({"order": "first"}, "'order' must be a number"),
    ({"session": ["x"]}, "'session' must be text or a number"),
    ({"repeat_group": {"a": 1}}, "'repeat_group' must be text"),
])
def test_bad_history_fields_are_one_line(tmp_path, bad, why):
    data = rows()
    data[1].update(bad)
    with pytest.raises(InvalidInput, match=why):
        load([write(tmp_path, data)])


def test_a_message_id_twice_is_refused(tmp_path):
    data = rows()
    data[2]["id"] = data[1]["id"]
    with pytest.raises(InvalidInput, match="appears more than once"):
        load([write(tmp_path, data)])


def test_the_command_reports_and_fails_in_one_line(tmp_path):
    path = write(tmp_path, rows())
    ok = CliRunner().invoke(main, ["eval", "history", str(path), "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["later_session"]["repeats"] == 1
    bad = CliRunner().invoke(main, ["eval", "history", str(tmp_path / "missing.jsonl")])
    assert bad.exit_code != 0 and "Traceback" not in bad.output
    assert len(bad.output.strip().splitlines()) == 1


def test_each_repository_is_another_developer(tmp_path, settings):
    """A global rule learned in one repository never reaches another's judge or context."""
    data = [
        {"id": "a-1", "text": "always use jq, never grep, for JSON output, in every project",
         "label": "preference", "durable": True, "prev_agent": "I grepped the JSON.",
         "source": {"repo": "acme/app"}},
        {"id": "b-1", "text": "no, use yarn instead of npm here", "label": "correction",
         "durable": True, "prev_agent": "I ran npm install.", "source": {"repo": "beta/tool"}},
    ]
    path = write(tmp_path, data)
    replies = tmp_path / "replies"
    replies.mkdir()
    (replies / "acme-app-s001.md").write_text(json.dumps({"items": [
        {"id": "m1", "label": "preference", "durable": True, "quote": "always use jq",
         "rule": "Use jq, never grep, for JSON output, in every project."}]}), encoding="utf-8")
    prompts = tmp_path / "prompts"
    evaluate([path], settings, FakeEmbedder(), judge_replies=replies, judge_prompts=prompts)
    beta = (prompts / "beta-tool-s001.md").read_text(encoding="utf-8")
    user = beta.split("===== USER =====", 1)[1]
    assert "<known_rules>" not in user and "jq" not in user


def test_a_judged_lasting_refinement_is_proposed_as_in_real_use(tmp_path, settings):
    """A correction the judge calls lasting but that states no rule outright (a refinement,
    scored 0.5 only when seen recently) is proposed at once in real use: the replay's clock
    must count it as recent too, or it waits hidden and the repeat finds it only kept."""
    data = [
        {"id": "c-1", "text": "don't hand me the commands, run them yourself",
         "label": "correction", "durable": True, "prev_agent": "Run these commands: make build",
         "source": {"repo": "acme/app"}, "repeat_group": "self"},
        {"id": "c-2", "text": "Add a footer", "label": "none", "durable": False,
         "prev_agent": None, "source": {"repo": "acme/app"}},
        {"id": "c-3", "text": "again, run the commands yourself instead of listing them",
         "label": "correction", "durable": True, "prev_agent": "You can run: make test",
         "source": {"repo": "acme/app"}, "repeat_group": "self"},
    ]
    replies = tmp_path / "replies"
    replies.mkdir()
    (replies / "acme-app-s001.md").write_text(json.dumps({"items": [
        {"id": "m1", "label": "correction", "durable": True, "quote": "run them yourself",
         "rule": "Run the commands yourself instead of handing them to the developer."}]}),
        encoding="utf-8")
    (replies / "acme-app-s002.md").write_text(json.dumps({"items": [
        {"id": "m1", "label": "none"},
        {"id": "m2", "label": "correction", "durable": True, "quote": "run the commands yourself",
         "rule": "Run the commands yourself instead of listing them.", "restates": 1}]}),
        encoding="utf-8")
    got = evaluate([write(tmp_path, data)], settings, FakeEmbedder(), judge_replies=replies,
                   reviewer=False)
    [repeat] = got["by_repository"][0]["repeats"]
    assert repeat["later_session"] and repeat["state"] == "proposed"
