"""The markdown review folder: export, decisions read back from hand-edited files, and the
guarantees (idempotent, no decision lost, nothing written outside the folder)."""

from __future__ import annotations

import json
import os
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lore.api import Lore
from lore.review import folder as fmt

CORRECTIONS = [
    ("No, don't use requests, use httpx instead", "I'll call the API with requests."),
    ("Never use print for logging, use the logging module", "I added print() calls."),
    ("don't do that again", "I rewrote the whole module."),
]


def seed(lore: Lore) -> list[str]:
    ids = []
    for i, (said, turn) in enumerate(CORRECTIONS):
        out = lore.learning.record(said, turn, project="/work/app", session_id=f"s{i}",
                                  at=f"2026-03-0{i + 1}T10:00:00Z")
        assert out.lesson is not None
        ids.append(out.lesson.id)
    assert {i["id"] for i in lore.review.waiting()} == set(ids)
    return ids


def review_file(folder: Path, lesson_id: str) -> Path:
    [path] = [p for p in (folder / "reviews").glob("*.md") if lesson_id[-6:].lower() in p.name]
    return path


def tick(path: Path, action: str, reason: str = "") -> None:
    text = path.read_text(encoding="utf-8").replace(f"- [ ] {action}", f"- [x] {action}")
    if reason:
        text = text.replace("reason: ", f"reason: {reason}")
    path.write_text(text, encoding="utf-8")


def status(lore: Lore, lesson_id: str) -> str:
    return lore.lessons.get(lesson_id).status


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


# ---- export ------------------------------------------------------------------------------
def test_export_writes_a_file_per_waiting_rule_an_index_and_nothing_twice(fake_lore, tmp_path):
    ids = seed(fake_lore)
    folder = tmp_path / "vault" / "Lore"
    report = fake_lore.review.export_folder(folder)
    assert report["waiting"] == 3 and len(list((folder / "reviews").glob("*.md"))) == 3
    text = review_file(folder, ids[0]).read_text(encoding="utf-8")
    assert text.startswith("---\nlore: review\nid: " + ids[0])
    assert "# Use httpx, not requests" in text and "## Rule" in text
    assert "> No, don't use requests, use httpx instead" in text  # the user's words, quoted
    assert "> I'll call the API with requests." in text  # the agent turn they answered
    assert "- [ ] approve\n- [ ] reject\n- [ ] defer" in text and "\nreason: \n" in text
    assert "2026-03-01 — session s0 — /work/app" in text
    name = review_file(folder, ids[0]).name
    assert name.startswith("2026-03-01-use-httpx-not-requests-")
    index = (folder / "index.md").read_text(encoding="utf-8")
    assert "3 waiting" in index and f"(reviews/{name})" in index
    before = tree(folder)
    again = fake_lore.review.export_folder(folder)
    assert again["written"] == [] and tree(folder) == before  # an unchanged rule keeps its file


def test_the_default_folder_is_in_the_home_or_review_folder(fake_lore, lore_home, tmp_path):
    seed(fake_lore)
    assert fake_lore.review.export_folder()["folder"] == str((lore_home / "review").resolve())
    fake_lore.config.review.folder = str(tmp_path / "elsewhere")
    assert Path(fake_lore.review.export_folder()["folder"]) == (tmp_path / "elsewhere").resolve()


# ---- import ------------------------------------------------------------------------------
def test_ticked_boxes_decide_and_a_second_import_changes_nothing(fake_lore, tmp_path):
    ids = seed(fake_lore)
    folder = tmp_path / "review"
    fake_lore.review.export_folder(folder)
    tick(review_file(folder, ids[0]), "approve")
    tick(review_file(folder, ids[1]), "reject", "we print on purpose in this CLI")
    tick(review_file(folder, ids[2]), "defer")
    report = fake_lore.review.import_folder(folder)
    assert (report["approved"], report["rejected"], report["deferred"]) == (1, 1, 1)
    assert report["warnings"] == []
    assert status(fake_lore, ids[0]) == "active" and status(fake_lore, ids[1]) == "rejected"
    meta = fake_lore.lessons.get(ids[1]).metadata["learning"]
    assert meta["rejected_reason"] == "we print on purpose in this CLI"
    assert meta["review"]["via"] == "folder"
    assert fake_lore.review.waiting() == []
    stored = [fake_lore.lessons.get(i).to_dict() for i in ids]
    second = fake_lore.review.import_folder(folder)
    assert second["unchanged"] == 3 and second["warnings"] == [] and second["applied"] == []
    assert [fake_lore.lessons.get(i).to_dict() for i in ids] == stored


def test_sync_archives_decided_rules_and_lists_approved_ones(fake_lore, tmp_path):
    ids = seed(fake_lore)
    folder = tmp_path / "review"
    first = fake_lore.review.sync_folder(folder)  # a new folder: nothing to import, then the export
    assert first["imported"]["undecided"] == 0 and first["exported"]["waiting"] == 3
    tick(review_file(folder, ids[0]), "approve")
    report = fake_lore.review.sync_folder(folder)
    assert report["imported"]["approved"] == 1
    assert report["exported"]["waiting"] == 2 and report["exported"]["approved"] == 1
    assert not [p for p in (folder / "reviews").glob("*.md") if ids[0][-6:].lower() in p.name]
    [archived] = (folder / "archive").rglob("*.md")
    assert "**Decision:** approve" in archived.read_text(encoding="utf-8")
    rules = (folder / "rules" / "app.md").read_text(encoding="utf-8")
    assert "## Use httpx, not requests" in rules and "Use httpx instead of requests." in rules
    assert "rules/app.md" in (folder / "index.md").read_text(encoding="utf-8")
    again = fake_lore.review.sync_folder(folder)
    assert again["imported"]["applied"] == [] and again["exported"]["written"] == []


def test_an_edited_rule_text_is_approved_as_edited(fake_lore, tmp_path):
    ids = seed(fake_lore)
    folder = tmp_path / "review"
    fake_lore.review.export_folder(folder)
    path = review_file(folder, ids[0])
    text = path.read_text(encoding="utf-8")
    text = text.replace("# Use httpx, not requests", "# Use httpx for HTTP, never requests")
    text = text.replace("Use httpx instead of requests.", "Use httpx (async) for every HTTP call.")
    path.write_text(text, encoding="utf-8")
    report = fake_lore.review.import_folder(folder)
    assert report["edited"] == 1 and report["applied"][0]["decision"] == "edited"
    lesson = fake_lore.lessons.get(ids[0])
    assert lesson.status == "active" and lesson.title == "Use httpx for HTTP, never requests"
    assert lesson.content == "Use httpx (async) for every HTTP call."
    assert fake_lore.review.import_folder(folder)["unchanged"] == 1


def test_hand_edits_are_tolerated(fake_lore, tmp_path):
    """CRLF line ends, a byte-order mark, sections moved, notes added, an upper-case X, the
    reason on the checkbox line, unicode: all still read as the person meant."""
    ids = seed(fake_lore)
    folder = tmp_path / "review"
    fake_lore.review.export_folder(folder)
    path = review_file(folder, ids[1])
    text = path.read_text(encoding="utf-8")
    head, _, rest = text.partition("## Rule")
    rule, _, rest = rest.partition("## Evidence")
    evidence, _, decision = rest.partition("## Decision")
    decision = decision.replace("- [ ] reject", "- [X] reject — déjà vu, ça arrive 🙂")
    moved = (head + "## Decision" + decision + "\nMy own note: looked at it twice.\n"
             + "## Evidence" + evidence + "## Rule" + rule)
    path.write_bytes(("\ufeff" + moved).replace("\n", "\r\n").encode("utf-8"))
    report = fake_lore.review.import_folder(folder)
    assert report["rejected"] == 1 and report["warnings"] == []
    meta = fake_lore.lessons.get(ids[1]).metadata["learning"]
    assert meta["rejected_reason"] == "déjà vu, ça arrive 🙂"


def test_two_boxes_a_deleted_file_and_an_unknown_id_decide_nothing(fake_lore, tmp_path):
    ids = seed(fake_lore)
    folder = tmp_path / "review"
    fake_lore.review.export_folder(folder)
    both = review_file(folder, ids[0])
    tick(both, "approve")
    tick(both, "reject")
    review_file(folder, ids[1]).unlink()
    stranger = folder / "reviews" / "copied.md"
    stranger.write_text(review_file(folder, ids[2]).read_text(encoding="utf-8").replace(
        ids[2], "01JD0000000000000000000000").replace("- [ ] approve", "- [x] approve"),
        encoding="utf-8")
    report = fake_lore.review.import_folder(folder)
    assert report["approved"] == report["rejected"] == 0
    [two, unknown] = sorted(report["warnings"])
    assert "approve and reject are both ticked; tick one; no decision taken" in two
    assert both.name in two and "no rule has the id 01JD0000000000000000000000" in unknown
    assert {status(fake_lore, i) for i in ids} <= {"candidate", "proposed"}
    assert {i["id"] for i in fake_lore.review.waiting()} == set(ids)


def test_a_decision_made_since_the_export_wins_over_the_stale_file(fake_lore, tmp_path):
    ids = seed(fake_lore)
    folder = tmp_path / "review"
    fake_lore.review.export_folder(folder)
    tick(review_file(folder, ids[0]), "reject", "not for this project")
    fake_lore.review.decide(ids[0], "approve")  # in the terminal, after the export
    report = fake_lore.review.import_folder(folder)
    assert report["rejected"] == 0 and report["kept"] == 1
    [warning] = report["warnings"]
    assert "kept the decision made with `lore review`" in warning and "(approve)" in warning
    assert "the file's reject predates it" in warning
    assert status(fake_lore, ids[0]) == "active"


def test_export_never_overwrites_a_decision_not_imported_yet(fake_lore, tmp_path):
    ids = seed(fake_lore)
    folder = tmp_path / "review"
    fake_lore.review.export_folder(folder)
    path = review_file(folder, ids[0])
    tick(path, "approve")
    kept = path.read_bytes()
    fake_lore.learning.record("No, don't use requests, use httpx instead", None,
                             project="/work/app", session_id="s9")  # seen again: file would change
    report = fake_lore.review.export_folder(folder)
    assert report["kept"] == [f"reviews/{path.name}"] and path.read_bytes() == kept
    assert "not imported yet" in report["notes"][0]
    assert fake_lore.review.import_folder(folder)["approved"] == 1


def test_a_person_s_own_files_in_the_folder_are_left_alone(fake_lore, tmp_path):
    seed(fake_lore)
    folder = tmp_path / "review"
    (folder / "reviews").mkdir(parents=True)
    (folder / "rules").mkdir()
    mine = {folder / "reviews" / "my-notes.md": "- [x] approve everything\n",
            folder / "rules" / "by-hand.md": "# rules I keep myself\n", folder / "ideas.md": "x"}
    for path, text in mine.items():
        path.write_text(text, encoding="utf-8")
    fake_lore.review.export_folder(folder)
    assert fake_lore.review.import_folder(folder)["warnings"] == []
    fake_lore.review.sync_folder(folder)
    assert all(path.read_text(encoding="utf-8") == text for path, text in mine.items())


# ---- safety ------------------------------------------------------------------------------
def test_no_id_or_title_can_write_outside_the_folder(fake_lore, tmp_path):
    out = fake_lore.learning.suggest_rule("Use ../../../etc/passwd style paths \\ never /tmp/x",
                                         project="/work/app")
    assert out.lesson is not None
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.md").write_text("mine", encoding="utf-8")
    folder = tmp_path / "review"
    fake_lore.review.export_folder(folder)
    [path] = (folder / "reviews").glob("*.md")
    assert path.parent == folder / "reviews" and set(path.stem) <= set(string.ascii_lowercase
                                                                        + string.digits + "-")
    # A crafted id in a file is not an id; a link out of the folder is not followed.
    crafted = path.read_text(encoding="utf-8").replace(f"id: {out.lesson.id}",
                                                       "id: ../../outside/keep")
    (folder / "reviews" / "crafted.md").write_text(crafted.replace("- [ ] approve",
                                                                   "- [x] approve"))
    (folder / "reviews" / "link.md").symlink_to(outside / "keep.md")
    (folder / "archive").mkdir(exist_ok=True)
    (folder / "archive" / "out").symlink_to(outside, target_is_directory=True)
    fake_lore.review.sync_folder(folder)
    assert tree(outside) == {"keep.md": b"mine"}
    with pytest.raises(Exception, match="not a file name inside the review folder"):
        fmt.Folder(folder).path("../outside/keep.md")
    with pytest.raises(Exception, match="leads outside the review folder"):
        fmt.Folder(folder).write("archive/out/keep.md", "overwritten")
    assert tree(outside) == {"keep.md": b"mine"}
    with pytest.raises(Exception, match="is not a rule id"):
        fmt.review_name("../../x", "title", None)


def test_files_are_replaced_atomically_and_stay_private(fake_lore, tmp_path):
    seed(fake_lore)
    folder = tmp_path / "review"
    fake_lore.review.export_folder(folder)
    assert not [p for p in folder.rglob("*") if p.name.endswith(".lore-tmp")]
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    assert all(p.stat().st_mode & 0o077 == 0 for p in folder.rglob("*.md"))


def test_cli_export_import_sync(run, lore_home, tmp_path):
    run("learn", "correction", "No, don't use requests, use httpx instead", "--global")
    folder = tmp_path / "vault"
    exported = run("review", "sync", "--only", "export", str(folder))
    assert exported.exit_code == 0 and "1 waiting" in exported.stdout
    [path] = (folder / "reviews").glob("*.md")
    tick(path, "approve")
    tick(path, "reject")
    both = run("review", "sync", "--only", "import", str(folder))
    assert both.exit_code == 0 and "both ticked" in both.stderr and "approved 0" in both.stdout
    path.write_text(path.read_text(encoding="utf-8").replace("- [x] reject", "- [ ] reject"),
                    encoding="utf-8")
    synced = json.loads(run("review", "sync", str(folder), "--json").stdout)
    assert synced["imported"]["approved"] == 1 and synced["exported"]["approved"] == 1
    bad = run("review", "sync", "--only", "export", str(folder / "index.md"))
    assert bad.exit_code == 2 and "is a file" in bad.stderr and "Traceback" not in bad.stderr
    missing = run("review", "sync", "--only", "import", str(tmp_path / "nowhere"))
    assert missing.exit_code == 1 and len(missing.stderr.strip().splitlines()) == 1
    assert "run `lore review sync --only export` first" in missing.stderr
    assert not (tmp_path / "nowhere").exists()


# ---- the parser, property-based ------------------------------------------------------------
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
               max_size=200)
ID = "01JD" + "0" * 21 + "7"


def _item(title: str, rule: str, said: str, turn: str | None) -> dict:
    return {"id": ID, "title": title, "rule": rule, "status": "proposed", "score": 0.7,
            "occurrences": 2, "sessions": 2, "scope": "/work/app", "file_types": ["py"],
            "conflicts": [], "why_candidate": "", "recorrections": 0,
            "evidence": [{"said": said, "agent_turn": turn, "session": "s1",
                          "date": "2026-03-01T10:00:00Z", "project": "/work/app"}]}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(title=TEXT, rule=TEXT, said=TEXT, turn=st.none() | TEXT)
def test_an_exported_file_reads_back_as_undecided(title, rule, said, turn):
    """Whatever the rule, title and quotes hold (headings, boxes, 'reason:', fences, CRLF),
    an untouched file decides nothing and its rule text reads back as written."""
    parsed = fmt.parse(fmt.render_review(_item(title, rule, said, turn), "2026-03-02T00:00:00Z"))
    assert parsed.id == ID and parsed.ours
    assert parsed.rule == fmt.clean_text(rule)
    assert fmt.decide(parsed, title, rule) == fmt.Decision()


@settings(max_examples=200, deadline=None)
@given(ticks=st.lists(st.sampled_from(fmt.ACTIONS), max_size=3), upper=st.booleans(),
       reason=st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=60),
       crlf=st.booleans())
def test_ticked_boxes_decide_one_action_or_none(ticks, upper, reason, crlf):
    text = fmt.render_review(_item("Use httpx", "Use httpx, not requests.", "no", None),
                             "2026-03-02T00:00:00Z")
    for action in ticks:
        text = text.replace(f"- [ ] {action}", f"- [{'X' if upper else 'x'}] {action}")
    text = text.replace("reason: ", f"reason: {reason}")
    if crlf:
        text = text.replace("\n", "\r\n")
    decision = fmt.decide(fmt.parse(text), "Use httpx", "Use httpx, not requests.")
    distinct = set(ticks)
    if len(distinct) > 1:
        assert decision.action is None and "both ticked" in decision.problem
    elif distinct:
        assert decision.action == ticks[0] and not decision.problem
        assert (decision.reason or "") == reason.strip().strip("_`* ")
    else:
        assert decision.action is None and not decision.problem


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=400))
def test_the_parser_never_fails(text):
    parsed = fmt.parse(text)
    fmt.decide(parsed, "title", "rule")


@given(st.text(max_size=120))
def test_slugs_are_safe_file_names(text):
    s = fmt.slug(text)
    assert s and set(s) <= set(string.ascii_lowercase + string.digits + "-")
    assert len(s) <= 50 and os.sep not in s and s not in (".", "..")


def test_an_export_through_a_linked_archive_writes_nothing_at_all(fake_lore, tmp_path):
    ids = seed(fake_lore)
    folder = tmp_path / "review"
    fake_lore.review.export_folder(folder)
    # Something for every part of the next export: a decided rule (its archive file), a
    # new waiting rule (its review file), the index; and archive/ now leads out.
    fake_lore.review.decide(ids[0], "approve")
    assert fake_lore.learning.suggest_rule("Always pin the Python version in CI",
                                          project="/work/app").lesson is not None
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.md").write_text("mine", encoding="utf-8")
    if (folder / "archive").exists():
        (folder / "archive").rmdir()
    (folder / "archive").symlink_to(outside, target_is_directory=True)
    before = tree(folder)
    stamps = {p: p.stat().st_mtime_ns for p in folder.rglob("*") if not p.is_symlink()}
    with pytest.raises(Exception, match="leads outside the review folder"):
        fake_lore.review.export_folder(folder)
    assert tree(folder) == before and tree(outside) == {"keep.md": b"mine"}
    assert {p: p.stat().st_mtime_ns for p in folder.rglob("*") if not p.is_symlink()} == stamps
    (folder / "archive").unlink()
    done = fake_lore.review.export_folder(folder)  # the link gone, the same export goes through
    assert any(w.startswith("archive/") for w in done["written"])


def test_two_files_claiming_one_rule_decide_nothing_and_are_both_named(fake_lore, tmp_path):
    ids = seed(fake_lore)
    folder = tmp_path / "review"
    fake_lore.review.export_folder(folder)
    original = review_file(folder, ids[0])
    copy = folder / "reviews" / "copy of the review.md"  # as a file sync names a conflict
    copy.write_bytes(original.read_bytes())
    tick(original, "approve")
    tick(copy, "reject", "not ours")
    report = fake_lore.review.import_folder(folder)
    assert ids[0] in {i["id"] for i in fake_lore.review.waiting()}  # still waiting
    [warning] = [w for w in report["warnings"] if ids[0] in w]
    assert original.name in warning and copy.name in warning and "no decision" in warning
    assert report["approved"] == report["rejected"] == 0
    # The export leaves both as the person left them and says so again.
    texts = (original.read_bytes(), copy.read_bytes())
    exported = fake_lore.review.export_folder(folder)
    assert (original.read_bytes(), copy.read_bytes()) == texts
    assert any(original.name in n and copy.name in n for n in exported["notes"])
    # One file deleted: the other decides, as any file would.
    copy.unlink()
    assert fake_lore.review.import_folder(folder)["approved"] == 1


def test_an_edited_rule_text_changes_the_line_agents_receive(fake_lore, tmp_path):
    """Only the rule text edited: the title (the line `lore apply` writes) follows it."""
    ids = seed(fake_lore)
    folder = tmp_path / "review"
    fake_lore.review.export_folder(folder)
    path = review_file(folder, ids[0])
    text = path.read_text(encoding="utf-8")
    assert "# Use httpx, not requests" in text
    path.write_text(text.replace("Use httpx instead of requests.",
                                 "Use httpx for every HTTP call. It is async-ready."),
                    encoding="utf-8")
    report = fake_lore.review.import_folder(folder)
    assert report["edited"] == 1
    lesson = fake_lore.lessons.get(ids[0])
    assert lesson.title == "Use httpx for every HTTP call"
    assert lesson.content == "Use httpx for every HTTP call. It is async-ready."
    plan = fake_lore.apply.plan("/work/app", tmp_path / "home", include_global=True)
    assert "- Use httpx for every HTTP call." in plan.diff()
    assert "not requests" not in plan.diff()


@pytest.mark.parametrize("rule, title", [
    ("Use uv, not pip.", "Use uv, not pip"),
    ("- Always run ruff. Then commit.", "Always run ruff"),
    ("\n\n> Prefer pathlib over os.path\nbecause it reads better", "Prefer pathlib over os.path"),
    ("Version 1.2 is pinned... keep it", "Version 1.2 is pinned... keep it"),
    ("  \n ... \n", ""),
    ("x" * 300, "x" * 160 + "…"),
    ("word " * 60, ("word " * 32).strip() + "…"),
])
def test_title_of_a_rule_text(rule, title):
    assert fmt.title_of(rule) == title


@given(st.text(max_size=400))
def test_title_of_is_one_short_line(text):
    got = fmt.title_of(text)
    assert "\n" not in got and len(got) <= fmt.TITLE_MAX + 1
