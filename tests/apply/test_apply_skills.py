"""Skills from clusters of lessons: the folder, its validation, clustering, safe writing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from lore.apply.skills import (
    Cluster,
    SkillLesson,
    build_skill,
    cluster_lessons,
    plan_skill,
    skill_name,
    validate_skill,
)

TESTING = [
    SkillLesson("01A", "Use pytest fixtures instead of setUp",
                "Fixtures compose and scope cleanly; setUp methods hide shared state.",
                tags=("testing", "pytest"), project="/src/shop",
                examples=("@pytest.fixture\ndef db(tmp_path):\n    return connect(tmp_path / 'db')",),
                trade_offs=("More indirection for newcomers", "Fixtures are reusable across files"),
                when_to_use="writing or refactoring Python tests",
                when_not_to_use="unittest-only code bases"),
    SkillLesson("01B", "Parametrize tests over input tables",
                "pytest.mark.parametrize keeps one test per behaviour with many cases.",
                tags=("testing",), project="/src/shop",
                examples=("```python\n@pytest.mark.parametrize('x', [1, 2])\n```",)),
    SkillLesson("01C", "Run the tests with pytest -q -x while iterating",
                "Stop at the first failure and keep the output short while fixing tests.",
                tags=("testing",), project="/src/shop"),
    SkillLesson("01D", "Use tmp_path for files in tests",
                "tmp_path gives each test its own folder; never write into the repository.",
                tags=("Testing",), project="/src/shop"),
]
OTHER = [
    SkillLesson("01E", "Deploy with blue-green switches", "Switch the router after health checks.",
                tags=("deploy",), project="/src/shop"),
    SkillLesson("01F", "Tag releases before deploying", "Every deploy names a git tag.",
                tags=("deploy",), project="/src/shop"),
    SkillLesson("01G", "Tests in another project", "pytest fixtures again, elsewhere.",
                tags=("testing",), project="/src/other"),
]


def write(folder: Path, skill) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in skill.files.items():
        (folder / name).write_text(text)


def test_skill_folder_is_valid_and_says_what_and_when(tmp_path):
    skill = build_skill(Cluster("testing", "/src/shop", tuple(TESTING)))
    assert skill.name == "learned-testing"
    write(tmp_path / skill.name, skill)
    assert validate_skill(tmp_path / skill.name) == []
    front = yaml.safe_load(skill.files["SKILL.md"].split("---\n")[1])
    assert front["name"] == "learned-testing"
    assert front["metadata"] == {"generated-by": "lore", "lessons": "01A 01B 01C 01D"}
    d = front["description"]
    assert d.startswith("Lessons learned about testing in shop") and "Use when" in d
    assert "writing or refactoring Python tests" in d and len(d) <= 1024
    body = skill.files["SKILL.md"].split("---\n", 2)[2]
    assert "[reference.md](reference.md)" in body and "unittest-only code bases" in body


def test_reference_holds_lessons_examples_and_trade_offs(tmp_path):
    ref = build_skill(Cluster("testing", "", tuple(TESTING))).files["reference.md"]
    for lesson in TESTING:
        assert lesson.title in ref and lesson.content in ref
    assert "- More indirection for newcomers" in ref and "### When not to apply" in ref
    # An example that holds a fence gets a longer fence, so it stays one code block.
    assert "````\n```python\n@pytest.mark.parametrize('x', [1, 2])\n```\n````" in ref


def test_long_descriptions_are_cut_to_the_limit():
    many = tuple(SkillLesson(f"{i:03d}", "A rather long lesson title number " * 3 + str(i), "x",
                             tags=("t",)) for i in range(60))
    skill = build_skill(Cluster("t", "", many))
    assert len(skill.description) <= 1024 and "Use when" in skill.description


@pytest.mark.parametrize("tag, name", [
    ("testing", "learned-testing"),
    ("Claude Code / Hooks", "learned-code-hooks"),
    ("anthropic-sdk", "learned-sdk"),
    ("C++ & CUDA", "learned-c-cuda"),
    ("", "learned-lessons"),
    ("x" * 100, "learned-" + "x" * 56),
])
def test_names_are_valid(tag, name):
    assert skill_name(tag) == name


BAD = {
    "uppercase name": ("name: Learned-Testing\ndescription: Does x. Use when y.\n", "lowercase"),
    "reserved word": ("name: claude-helper\ndescription: Does x. Use when y.\n", "reserved word 'claude'"),
    "name too long": ("name: " + "a" * 65 + "\ndescription: Does x. Use when y.\n", "over 64"),
    "double hyphen": ("name: a--b\ndescription: Does x. Use when y.\n", "single hyphens"),
    "missing description": ("name: skill\n", "description: missing"),
    "description too long": ("name: skill\ndescription: " + "w " * 600 + "when\n", "over 1024"),
    "xml in description": ("name: skill\ndescription: Does <b>x</b>. Use when y.\n", "< or >"),
    "no when": ("name: skill\ndescription: Does x and y.\n", "when to use"),
    "unknown key": ("name: skill\ndescription: Does x. Use when y.\nmodel: opus\n", "model: not an Agent"),
    "metadata not strings": ("name: skill\ndescription: Use when y.\nmetadata: {a: [1]}\n", "metadata"),
    "bad yaml": ("name: [skill\ndescription: x\n", "not valid YAML"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_validation_finds_each_problem(tmp_path, case):
    front, expected = BAD[case]
    folder = tmp_path / "skill"
    folder.mkdir()
    (folder / "SKILL.md").write_text(f"---\n{front}---\n\n# Body\n")
    problems = validate_skill(folder)
    assert any(expected in p for p in problems), problems


def test_validation_of_folder_level_problems(tmp_path):
    assert validate_skill(tmp_path) == [f"{tmp_path}: no SKILL.md"]
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "SKILL.md").write_bytes(b"\xef\xbb\xbf---\nname: s\ndescription: Use when x.\n---\nb\n")
    assert "byte-order mark" in validate_skill(folder)[0]
    (folder / "SKILL.md").write_text("# No frontmatter\n")
    assert "no YAML frontmatter" in validate_skill(folder)[0]
    (folder / "SKILL.md").write_text("---\nname: other\ndescription: Use when x.\n---\n"
                                     "See [ref](reference.md).\n")
    problems = validate_skill(folder)
    assert any("differs from the folder name" in p for p in problems)
    assert any("links to reference.md" in p for p in problems)
    (folder / "SKILL.md").write_text("---\nname: s\ndescription: Use when x.\n---\n" + "line\n" * 501)
    assert any("over 500" in p for p in validate_skill(folder))
    assert validate_skill(folder, portable=False) == validate_skill(folder)


def test_clusters_group_by_tag_project_and_meaning():
    clusters = cluster_lessons(TESTING + OTHER, min_size=3)
    assert [(c.tag, c.project, [x.id for x in c.lessons]) for c in clusters] == [
        ("testing", "/src/shop", ["01A", "01B", "01C", "01D"])]
    assert cluster_lessons(TESTING + OTHER, min_size=2)[1].tag == "deploy"
    assert cluster_lessons(TESTING, min_size=5) == []


def test_clusters_use_the_given_similarity_and_threshold():
    def by_first_letter(a: SkillLesson, b: SkillLesson) -> float:
        return 1.0 if a.title[0] == b.title[0] else 0.0

    clusters = cluster_lessons(TESTING, similarity=by_first_letter, threshold=0.9, min_size=2)
    assert [[x.id for x in c.lessons] for c in clusters] == [["01A", "01D"]]  # "Use …"


def test_clusters_by_meaning_with_the_real_model(real_embedder):
    lessons = TESTING + [SkillLesson("01H", "Cache the pip wheels in CI",
                                     "Restore ~/.cache/pip between CI runs to save minutes.",
                                     tags=("testing",), project="/src/shop")]
    vectors = {x.id: v for x, v in zip(
        lessons, real_embedder.embed_documents([f"{x.title}\n\n{x.content}" for x in lessons]),
        strict=True)}

    def cosine(a: SkillLesson, b: SkillLesson) -> float:
        return float(np.dot(vectors[a.id], vectors[b.id]))

    clusters = cluster_lessons(lessons, similarity=cosine, threshold=0.3, min_size=3)
    assert len(clusters) == 1
    assert "01H" not in [x.id for x in clusters[0].lessons]
    assert len(clusters[0].lessons) >= 3


def test_writing_never_overwrites_a_users_skill(tmp_path):
    skills = tmp_path / ".claude" / "skills"
    mine = skills / "learned-testing"
    mine.mkdir(parents=True)
    (mine / "SKILL.md").write_text("---\nname: learned-testing\ndescription: Mine. Use when x.\n---\nMine\n")
    skill = build_skill(Cluster("testing", "", tuple(TESTING)))
    placed, p = plan_skill(skill, skills, tmp_path)
    assert placed.name == "learned-testing-2"
    p.write()
    assert (mine / "SKILL.md").read_text().endswith("Mine\n")
    assert validate_skill(skills / "learned-testing-2") == []
    # Lore's own folder is rewritten in place, and an unchanged skill writes nothing.
    again, p2 = plan_skill(skill, skills, tmp_path)
    assert again.name == "learned-testing-2" and p2.changed == ()
    more = build_skill(Cluster("testing", "", tuple(TESTING[:3])))
    placed3, p3 = plan_skill(more, skills, tmp_path)
    assert placed3.name == "learned-testing-2" and "01D" in p3.diff()
