"""Agent Skills from clusters of approved lessons: a folder with SKILL.md and reference.md.

SKILL.md follows the portable Agent Skills format (agentskills.io, Claude Code, the Skills
API): YAML frontmatter with ``name`` (1-64 lowercase letters, digits and single hyphens, the
folder's name, without the reserved words "anthropic" and "claude") and ``description``
(1-1024 characters saying what the skill does and when to use it, no angle brackets), then a
short body. The lessons in full, with examples and trade-offs, go to reference.md, which the
model opens only when the skill is in use.

A folder Lore wrote carries ``metadata: {generated-by: lore}`` in its SKILL.md. Lore rewrites
only such folders; a user's skill of the same name is left alone and Lore picks another name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from lore import normalize
from lore.apply import files
from lore.apply.blocks import FRONTMATTER
from lore.apply.rules import jaccard, words
from lore.errors import InvalidInput
from lore.tuning import Bench, constant

NAME_MAX = 64
DESCRIPTION_MAX = 1024
COMPATIBILITY_MAX = 500
BODY_MAX_LINES = 500  # longer bodies belong in reference files (authoring guidance)
RESERVED = ("anthropic", "claude")
PORTABLE_KEYS = frozenset({"name", "description", "license", "compatibility", "metadata",
                           "allowed-tools"})
GENERATED_BY = "lore"
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_ANGLE = re.compile(r"[<>]")


@dataclass(frozen=True, slots=True)
class SkillLesson:
    """An approved lesson, as plain values."""

    id: str
    title: str
    content: str
    tags: tuple[str, ...] = ()
    project: str = ""
    examples: tuple[str, ...] = ()  # code or worked examples, shown as code blocks
    trade_offs: tuple[str, ...] = ()
    when_to_use: str = ""
    when_not_to_use: str = ""


@dataclass(frozen=True, slots=True)
class Cluster:
    """Lessons that share a tag and a project and say related things."""

    tag: str
    project: str
    lessons: tuple[SkillLesson, ...]


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    files: dict[str, str] = field(default_factory=dict)  # file name -> text


Similarity = Callable[[SkillLesson, SkillLesson], float]


def lexical_similarity(a: SkillLesson, b: SkillLesson) -> float:
    """Word overlap of title, content and tags (the default; pass embeddings for meaning)."""
    return jaccard(_lesson_words(a), _lesson_words(b))


def _lesson_words(lesson: SkillLesson) -> frozenset[str]:
    return words(" ".join([lesson.title, lesson.content, *lesson.tags]))


@dataclass(frozen=True)
class SkillTuning:
    """When approved lessons become a proposed skill (lore.tuning), by their former config keys.
    Not chosen by a benchmark: 0.3 separated a CI-caching lesson from four pytest lessons
    in the tests (docs/apply.md, Skills)."""

    # mean embedding cosine (all-MiniLM-L6-v2) a lesson needs to join a group
    skill_similarity: float = constant(0.3, ge=-1, le=1, by=Bench("", "docs/apply.md#Skills"))
    skill_min_size: int = constant(3, ge=2, le=100, by=Bench("", "docs/apply.md#Skills"))


SKILLS = SkillTuning()


def cluster_lessons(lessons: Iterable[SkillLesson], *, similarity: Similarity | None = None,
                    threshold: float = 0.05, min_size: int = 3) -> list[Cluster]:
    """Groups of at least ``min_size`` lessons worth a skill, largest first.

    Lessons are bucketed by tag and project; inside a bucket a lesson joins the first group
    whose members it resembles on average at ``threshold`` or more. Each lesson ends up in
    one group at most: the largest that still has ``min_size`` lessons without it being taken.

    The default similarity is word overlap, a weak signal: the shared tag does most of the
    grouping and the low default threshold only splits off lessons with nothing in common.
    For grouping by meaning pass the embedding cosine (about 0.3 with all-MiniLM-L6-v2).
    """
    sim = similarity or lexical_similarity
    buckets: dict[tuple[str, str], list[SkillLesson]] = {}
    for lesson in sorted({x.id: x for x in lessons}.values(), key=lambda x: x.id):
        for t in normalize.tags(lesson.tags):
            buckets.setdefault((t, lesson.project), []).append(lesson)
    candidates: list[Cluster] = []
    for (tag, project), members in buckets.items():
        groups: list[list[SkillLesson]] = []
        for lesson in members:
            for group in groups:
                if sum(sim(lesson, other) for other in group) / len(group) >= threshold:
                    group.append(lesson)
                    break
            else:
                groups.append([lesson])
        candidates += [Cluster(tag, project, tuple(g)) for g in groups if len(g) >= min_size]
    used: set[str] = set()
    out: list[Cluster] = []
    for c in sorted(candidates, key=lambda c: (-len(c.lessons), c.tag, c.project)):
        rest = tuple(x for x in c.lessons if x.id not in used)
        if len(rest) >= min_size:
            out.append(Cluster(c.tag, c.project, rest))
            used.update(x.id for x in rest)
    return out


def skill_name(tag: str) -> str:
    """A valid skill name for a tag: "Claude Code / Testing" -> "learned-code-testing"."""
    parts = [p for p in re.split(r"[^a-z0-9]+", tag.casefold())
             if p and not any(r in p for r in RESERVED)]
    name = "-".join(["learned", *parts]) if parts else "learned-lessons"
    return name[:NAME_MAX].rstrip("-")


def build_skill(cluster: Cluster, name: str | None = None) -> Skill:
    """SKILL.md and reference.md for a cluster of lessons."""
    if not cluster.lessons:
        raise InvalidInput("a skill needs at least one lesson")
    name = name or skill_name(cluster.tag)
    lessons = sorted(cluster.lessons, key=lambda x: x.id)
    description = _description(cluster.tag, cluster.project, lessons)
    meta = {"generated-by": GENERATED_BY, "lessons": " ".join(x.id for x in lessons)}
    front = yaml.safe_dump({"name": name, "description": description, "metadata": meta},
                           sort_keys=False, allow_unicode=True, width=10_000)
    return Skill(name, description, {"SKILL.md": f"---\n{front}---\n\n{_body(cluster, lessons)}",
                                     "reference.md": _reference(cluster, lessons)})


def _description(tag: str, project: str, lessons: Sequence[SkillLesson]) -> str:
    where = f" in {Path(project).name}" if project else ""
    when = "; ".join(_one_line(x.when_to_use) for x in lessons if x.when_to_use.strip())
    tail = f" Use when working on {tag}{where}" + (f", in particular: {when}" if when else "") + "."
    head = f"Lessons learned about {tag}{where}, from past work: "
    titles = [_one_line(x.title).rstrip(".") for x in lessons]
    while titles and len(head + "; ".join(titles) + "." + tail) > DESCRIPTION_MAX:
        titles.pop()
    text = head + "; ".join(titles) + "." + tail
    if len(text) > DESCRIPTION_MAX:  # the "when" part alone is too long
        text = text[: DESCRIPTION_MAX - 1].rstrip() + "…"
    return _ANGLE.sub("", text)


def _body(cluster: Cluster, lessons: Sequence[SkillLesson]) -> str:
    out = [f"# Lessons: {cluster.tag}", "",
           f"What was learned about {cluster.tag}"
           + (f" in {cluster.project}" if cluster.project else "")
           + ". Apply these when the task touches it. Details, examples and trade-offs for each "
             "lesson are in [reference.md](reference.md).", "", "## Lessons", ""]
    for i, x in enumerate(lessons, start=1):
        summary = _one_line(x.content)
        summary = summary if len(summary) <= 200 else summary[:199].rstrip() + "…"
        out.append(f"{i}. **{_one_line(x.title)}** {summary}")
    nots = [f"- {_one_line(x.title)}: {_one_line(x.when_not_to_use)}" for x in lessons
            if x.when_not_to_use.strip()]
    if nots:
        out += ["", "## When not to apply", "", *nots]
    return "\n".join(out) + "\n"


def _reference(cluster: Cluster, lessons: Sequence[SkillLesson]) -> str:
    out = [f"# Lessons: {cluster.tag} (reference)", "", "## Contents", ""]
    out += [f"{i}. {_one_line(x.title)}" for i, x in enumerate(lessons, start=1)]
    for i, x in enumerate(lessons, start=1):
        out += ["", f"## {i}. {_one_line(x.title)}", "", x.content.strip()]
        if x.tags:
            out += ["", "Tags: " + ", ".join(x.tags)]
        if x.when_to_use.strip():
            out += ["", "### When to apply", "", x.when_to_use.strip()]
        if x.when_not_to_use.strip():
            out += ["", "### When not to apply", "", x.when_not_to_use.strip()]
        if x.trade_offs:
            out += ["", "### Trade-offs", "", *(f"- {_one_line(t)}" for t in x.trade_offs)]
        for j, example in enumerate(x.examples, start=1):
            fence = "`" * max(3, _longest_backtick_run(example) + 1)
            out += ["", f"### Example {j}", "", fence, example.rstrip("\n"), fence]
    return "\n".join(out) + "\n"


def plan_skill(skill: Skill, skills_dir: Path, root: Path, *, max_bytes: int = files.MAX_BYTES,
               allow_outside: bool = False) -> tuple[Skill, files.Plan]:
    """Where the skill goes under ``skills_dir`` (``.claude/skills`` or ``~/.claude/skills``)
    and the file changes. A folder that is not Lore's keeps its name: the skill is renamed
    ``name-2``, ``name-3``… and returned with the name it got."""
    base = skill.name
    for i in range(1, 1000):
        name = base if i == 1 else f"{base[: NAME_MAX - len(str(i)) - 1]}-{i}"
        folder = skills_dir / name
        if not folder.exists() and not folder.is_symlink() or _generated_by_lore(folder):
            break
    else:
        raise InvalidInput(f"{skills_dir}: no free folder name for skill {base}")
    if name != skill.name:
        skill = _renamed(skill, name)
    changes = []
    for file_name, text in skill.files.items():
        path = folder / file_name
        real = files.resolve(path, root, allow_outside)
        old = files.read(path, real, max_bytes)
        changes.append(files.change(path, real, old, text, max_bytes=max_bytes))
    return skill, files.Plan(tuple(changes))


def _renamed(skill: Skill, name: str) -> Skill:
    text = skill.files["SKILL.md"].replace(f"\nname: {skill.name}\n", f"\nname: {name}\n", 1)
    return Skill(name, skill.description, {**skill.files, "SKILL.md": text})


def _generated_by_lore(folder: Path) -> bool:
    """A real folder (not a link) whose SKILL.md says Lore generated it."""
    skill_md = folder / "SKILL.md"
    if folder.is_symlink() or not skill_md.is_file() or skill_md.is_symlink():
        return False
    front, _ = _frontmatter(skill_md.read_text("utf-8", errors="replace"))
    meta = front.get("metadata") if isinstance(front, dict) else None
    return isinstance(meta, dict) and meta.get("generated-by") == GENERATED_BY


def _frontmatter(text: str) -> tuple[object, str]:
    m = FRONTMATTER.match(text)
    if not m:
        return None, text
    try:
        return yaml.safe_load(m.group(1)), text[m.end():]
    except yaml.YAMLError:
        return None, text[m.end():]


def validate_skill(folder: Path, portable: bool = True) -> list[str]:
    """The problems that would keep the skill folder from loading or from being found; empty
    when it is valid. ``portable`` also flags frontmatter keys outside the Agent Skills set,
    which claude.ai and the Skills API reject (Claude Code accepts more)."""
    skill_md = folder / "SKILL.md"
    if not skill_md.is_file():
        return [f"{folder}: no SKILL.md"]
    raw = skill_md.read_bytes()
    if raw.startswith(b"\xef\xbb\xbf"):
        return ["SKILL.md: starts with a byte-order mark, so the frontmatter is not recognised; "
                "save it as UTF-8 without BOM"]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return ["SKILL.md: not UTF-8 text"]
    m = FRONTMATTER.match(text)
    if not m:
        return ["SKILL.md: no YAML frontmatter between '---' lines at the top"]
    try:
        front = yaml.safe_load(m.group(1))
    except yaml.YAMLError as e:
        return [f"SKILL.md: frontmatter is not valid YAML ({' '.join(str(e).split())})"]
    if not isinstance(front, dict):
        return ["SKILL.md: frontmatter is not a mapping of keys to values"]
    problems = _check_name(front.get("name"), folder.name) + _check_description(
        front.get("description"))
    problems += _check_optional(front, portable)
    body = text[m.end():]
    if not body.strip():
        problems.append("SKILL.md: the body after the frontmatter is empty")
    elif len(body.splitlines()) > BODY_MAX_LINES:
        problems.append(f"SKILL.md: body has {len(body.splitlines())} lines, over "
                        f"{BODY_MAX_LINES}; move detail into reference files")
    for link in re.findall(r"\]\(([^)#\s]+)\)", body):
        if "://" not in link and not (folder / link).exists():
            problems.append(f"SKILL.md: links to {link}, which is not in the folder")
    return problems


def _check_name(name: object, folder_name: str) -> list[str]:
    if not isinstance(name, str) or not name:
        return ["name: missing (required)"]
    out = []
    if len(name) > NAME_MAX:
        out.append(f"name: {len(name)} characters, over {NAME_MAX}")
    if not _NAME.fullmatch(name):
        out.append(f"name: {name!r} may hold only lowercase letters, digits and single hyphens, "
                   "not at the start or end")
    out += [f"name: contains the reserved word {r!r}" for r in RESERVED if r in name]
    if name != folder_name:
        out.append(f"name: {name!r} differs from the folder name {folder_name!r}")
    return out


def _check_description(description: object) -> list[str]:
    if not isinstance(description, str) or not description.strip():
        return ["description: missing or empty (required: what the skill does and when to use it)"]
    out = []
    if len(description) > DESCRIPTION_MAX:
        out.append(f"description: {len(description)} characters, over {DESCRIPTION_MAX}")
    if _ANGLE.search(description):
        out.append("description: contains < or > (no XML tags in frontmatter)")
    if not re.search(r"\bwhen\b", description, re.I):
        out.append("description: does not say when to use the skill (add 'Use when …')")
    return out


def _check_optional(front: dict, portable: bool) -> list[str]:
    out = []
    if portable:
        out += [f"{k}: not an Agent Skills frontmatter key (claude.ai and the Skills API reject it)"
                for k in front if k not in PORTABLE_KEYS]
    compat = front.get("compatibility")
    if compat is not None and (not isinstance(compat, str) or not 1 <= len(compat) <= COMPATIBILITY_MAX):
        out.append(f"compatibility: must be 1-{COMPATIBILITY_MAX} characters of text")
    meta = front.get("metadata")
    if meta is not None and not (isinstance(meta, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in meta.items())):
        out.append("metadata: must map text keys to text values")
    return out


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _longest_backtick_run(text: str) -> int:
    return max((len(m) for m in re.findall(r"`+", text)), default=0)
