"""Stored lessons as rule lines: what ``lore apply`` writes for each approved rule.

A rule's line is its title (the learner writes the rule there: "Use pnpm, not npm"); a
preference also carries what it prefers and rejects, so a bare prohibition can be phrased as
what to do. The topic comes from the first tag, else the kind; the scope from the project
(none: global); the globs from the lesson's file types.
"""

from __future__ import annotations

from lore.apply.rules import AppliedRule
from lore.models import Lesson

KIND_TOPICS = {"preference": "Preferences", "project_rule": "Project rules",
               "anti_pattern": "Things to avoid"}


def applied_rule(lesson: Lesson) -> AppliedRule:
    pref = lesson.preference
    text = " ".join((lesson.title or lesson.content).split())
    topic = lesson.tags[0].replace("-", " ") if lesson.tags else KIND_TOPICS.get(
        lesson.kind, lesson.kind.replace("_", " "))
    return AppliedRule(
        id=lesson.id, text=text, scope="global" if lesson.project is None else "project",
        topic=topic, globs=tuple(lesson.file_types), kind=lesson.kind,
        preferred=pref.preferred if pref else "", rejected=pref.rejected if pref else "")
