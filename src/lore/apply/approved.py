"""Stored lessons as rule lines: what ``lore apply`` writes for each approved rule.

A rule's line is its title (the learner writes the rule there: "Use pnpm, not npm"); a
preference also carries what it prefers and rejects, so a bare prohibition can be phrased as
what to do. The scope comes from the project (none: global); the globs from the lesson's file
types.

The topic is the heading a reader sees above the rule, and the name of the
``.claude/rules/<topic>.md`` file a file-bound rule goes to, so it says what the rules under it
cover: the first tag a person gave (tags Lore adds itself, such as "learned", say nothing
about the rule), else the file types a rule is for ("Python files"), else what the rule names
(a package manager, a test runner, git …), else its kind ("Preferences").
"""

from __future__ import annotations

import re

from lore.apply.rules import AppliedRule
from lore.models import Lesson

KIND_TOPICS = {"preference": "Preferences", "project_rule": "Project rules",
               "anti_pattern": "Things to avoid"}
# Tags that record where a lesson came from, not what it is about.
GENERIC_TAGS = frozenset({"learned", "correction", "corrections", "suggested", "manual",
                          "imported", "claude-memory", "memory", "session", "rule", "rules"})
LANGUAGES = {
    "py": "Python", "pyi": "Python", "ts": "TypeScript", "tsx": "TypeScript", "js": "JavaScript",
    "jsx": "JavaScript", "mjs": "JavaScript", "cjs": "JavaScript", "go": "Go", "rs": "Rust",
    "rb": "Ruby", "java": "Java", "kt": "Kotlin", "swift": "Swift", "c": "C", "h": "C",
    "cc": "C++", "cpp": "C++", "hpp": "C++", "cs": "C#", "php": "PHP", "scala": "Scala",
    "sh": "Shell", "bash": "Shell", "zsh": "Shell", "sql": "SQL", "md": "Markdown",
    "mdx": "Markdown", "yml": "YAML", "yaml": "YAML", "json": "JSON", "toml": "TOML",
    "html": "HTML", "css": "CSS", "scss": "SCSS", "vue": "Vue", "svelte": "Svelte",
    "dart": "Dart", "ex": "Elixir", "exs": "Elixir", "tf": "Terraform", "lua": "Lua",
    "r": "R", "jl": "Julia", "dockerfile": "Dockerfile",
}
# What a rule names, as words of its line: the first group with a word in it is its topic.
SUBJECTS: tuple[tuple[str, frozenset[str]], ...] = (
    ("Package management", frozenset(
        "npm pnpm yarn bun pip pipx poetry uv conda cargo gem bundler composer maven gradle "
        "lockfile lockfiles".split())),
    ("Testing", frozenset(
        "test tests testing pytest unittest jest vitest mocha cypress playwright fixture "
        "fixtures coverage".split())),
    ("Linting and formatting", frozenset(
        "lint linter linting ruff black flake8 pylint isort eslint prettier format formatter "
        "formatting mypy pyright typecheck".split())),
    ("Git and commits", frozenset(
        "git commit commits committing branch branches rebase merge push pull force-push "
        "squash".split())),
    ("HTTP and APIs", frozenset("http https requests httpx aiohttp axios fetch api apis rest "
                                "graphql endpoint endpoints".split())),
    ("Data and storage", frozenset("database databases sql sqlite postgres postgresql mysql "
                                   "redis mongo mongodb orm migration migrations "
                                   "sessions cache".split())),
    ("Builds and deployment", frozenset("docker dockerfile compose kubernetes deploy deploys "
                                        "deployment ci build builds release releases "
                                        "makefile".split())),
    ("Dependencies", frozenset("dependency dependencies library libraries package packages "
                               "version versions pin pinned".split())),
    ("Security", frozenset("secret secrets token tokens password passwords credential "
                           "credentials key keys auth authentication".split())),
    ("Documentation", frozenset("docs documentation readme docstring docstrings comment "
                                "comments changelog".split())),
)
_WORD = re.compile(r"[\w+#.-]+")


def applied_rule(lesson: Lesson) -> AppliedRule:
    pref = lesson.preference
    text = " ".join((lesson.title or lesson.content).split())
    return AppliedRule(
        id=lesson.id, text=text, scope="global" if lesson.project is None else "project",
        topic=topic(lesson, text), globs=tuple(lesson.file_types), kind=lesson.kind,
        preferred=pref.preferred if pref else "", rejected=pref.rejected if pref else "",
        reason=_reason(lesson))


def _reason(lesson: Lesson) -> str:
    """The user's reason for a rule, unless a person rewrote the rule in review (their words
    then say all they want said)."""
    review = (lesson.metadata.get("learning") or {}).get("review") or {}
    if isinstance(review, dict) and review.get("action") == "edit":
        return ""
    pref = lesson.preference
    return pref.reasoning if pref and pref.reasoning else ""


def topic(lesson: Lesson, text: str) -> str:
    """The heading the rule goes under (see the module's docstring)."""
    for tag in lesson.tags:
        if tag.lower() not in GENERIC_TAGS:
            return tag.replace("-", " ").replace("_", " ")
    if lesson.file_types:
        return file_types_topic(lesson.file_types)
    pref = lesson.preference
    said = " ".join([text, pref.preferred if pref else "", pref.rejected if pref else ""])
    words = {w.strip(".").lower() for w in _WORD.findall(said)}
    for name, vocabulary in SUBJECTS:
        if words & vocabulary:
            return name
    return KIND_TOPICS.get(lesson.kind, lesson.kind.replace("_", " ").capitalize())


def file_types_topic(file_types: tuple[str, ...] | list[str]) -> str:
    """"Python files", "TypeScript and JavaScript files", "`.proto` files"."""
    names: list[str] = []
    for ft in file_types:
        key = ft.strip().lstrip("*.").lower()
        name = LANGUAGES.get(key) or (f"`.{key}`" if re.fullmatch(r"[\w+-]+", key) else ft)
        if name not in names:
            names.append(name)
    if len(names) > 1:
        return ", ".join(names[:-1]) + " and " + names[-1] + " files"
    return f"{names[0]} files" if names else "General"
