"""Skills from groups of approved lessons: propose the groups, write the one the user chose.

Lessons are grouped by tag and project (``apply.skills.cluster_lessons``) and, inside a tag,
by meaning: the cosine of their stored embeddings, at ``apply.skill_similarity`` or more on
average, in groups of ``apply.skill_min_size`` or more. A proposal is written only when the
user names it; the folder is checked with ``validate_skill`` before anything is written, and a
user's own skill of the same name is never touched (Lore picks another name).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lore.apply.files import Plan
from lore.apply.skills import (
    Cluster,
    Skill,
    SkillLesson,
    SkillTuning,
    build_skill,
    plan_skill,
    validate_skill,
)
from lore.errors import InvalidInput, NotFound
from lore.models import Lesson
from lore.store import Store


@dataclass(frozen=True, slots=True)
class Proposal:
    number: int  # 1-based, in the order proposed (largest group first)
    skill: Skill
    cluster: Cluster

    def to_dict(self) -> dict[str, Any]:
        return {"number": self.number, "name": self.skill.name, "tag": self.cluster.tag,
                "project": self.cluster.project or None, "description": self.skill.description,
                "lessons": [{"id": x.id, "title": x.title} for x in self.cluster.lessons]}


def skill_lesson(lesson: Lesson) -> SkillLesson:
    return SkillLesson(
        id=lesson.id, title=lesson.title, content=lesson.content, tags=lesson.tags,
        project=lesson.project or "", examples=tuple(e.code for e in lesson.examples),
        trade_offs=tuple(f"{t.type}: {t.description}" for t in lesson.trade_offs),
        when_to_use=lesson.when_to_apply or "", when_not_to_use=lesson.when_not_to_apply or "")


def cosine(store: Store, lessons: list[Lesson]) -> Callable[[SkillLesson, SkillLesson], float]:
    """The cosine of two lessons' stored vectors (unit length: a dot product)."""
    seqs = {x.id: store.seq_of(x.id) for x in lessons}
    blobs = dict(store.vectors_for(list(seqs.values())))
    vecs = {i: np.frombuffer(blobs[s], dtype=np.float32) for i, s in seqs.items() if s in blobs}

    def sim(a: SkillLesson, b: SkillLesson) -> float:
        va, vb = vecs.get(a.id), vecs.get(b.id)
        return 0.0 if va is None or vb is None else float(va @ vb)

    return sim


def propose(store: Store, lessons: list[Lesson], tuning: SkillTuning) -> list[Proposal]:
    from lore.apply.skills import cluster_lessons

    clusters = cluster_lessons([skill_lesson(x) for x in lessons], similarity=cosine(store, lessons),
                               threshold=tuning.skill_similarity, min_size=tuning.skill_min_size)
    return [Proposal(i, build_skill(c), c) for i, c in enumerate(clusters, start=1)]


def choose(proposals: list[Proposal], choice: str) -> Proposal:
    """A proposal by its number or its name."""
    value = choice.strip()
    for p in proposals:
        if value == str(p.number) or value == p.skill.name:
            return p
    if not proposals:
        raise NotFound("no skill is proposed: too few approved lessons share a tag and a meaning "
                       "(the tuning constant apply.skill_min_size); `lore skills` shows "
                       "the groups")
    raise NotFound(f"no proposed skill is numbered or named '{choice}'; `lore skills` "
                   "lists them")


def plan_write(proposal: Proposal, home: Path, *, to_global: bool) -> tuple[Skill, Plan]:
    """Check the skill as a folder first (``validate_skill``), then plan its files under the
    project's ``.claude/skills`` (``~/.claude/skills`` for a global group or ``to_global``)."""
    skill = proposal.skill
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / skill.name
        folder.mkdir()
        for name, text in skill.files.items():
            (folder / name).write_text(text, encoding="utf-8")
        problems = validate_skill(folder)
    if problems:
        raise InvalidInput(f"skill {skill.name} would not load: {'; '.join(problems)}")
    project = proposal.cluster.project
    if to_global or not project:
        root = home
        skills_dir = home / ".claude" / "skills"
    else:
        root = Path(project)
        if not root.is_dir():
            raise InvalidInput(f"the project {project} of skill {skill.name} is not a folder "
                               "here; write it with --global")
        skills_dir = root / ".claude" / "skills"
    return plan_skill(skill, skills_dir, root)
