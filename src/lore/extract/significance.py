"""Is a session's work worth a deeper look? The significance score, part by part, and a
summary of the work written without any model.

The score adds the points of six parts: five or more files (3), 150 or more
changed lines (2), a new pattern (5), a commit message keyword (2), an architectural change
(4), two or more corrections or iterations in the session (1). Every part is kept with its
points and the reason, so ``--explain`` can print how a score came about. Work scoring at
least the threshold (5 by default) goes on to the language-model analysis; below it, the
deterministic summary is all there is, and it says so (``analysed=False``).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lore.capture.git import FileChange, GitChanges
from lore.models import Evidence
from lore.redact import redact

THRESHOLD = 5
MIN_FILES = 5
MIN_LINES = 150
MIN_NEW_CODE_FILES = 2  # added code files in folders that did not exist: a new module
MIN_RENAMES = 3  # files moved at once: a restructuring
MIN_CORRECTIONS = 2
POINTS = {"files": 3, "lines": 2, "new_patterns": 5, "keywords": 2, "architecture": 4, "corrections": 1}

KEYWORDS = re.compile(
    r"\b(refactor\w*|fix(?:es|ed|ing)?|hotfix\w*|bug(?:s|fix\w*)?|optimi[sz]\w*|improv\w*|"
    r"security|secure[sd]?|vulnerab\w*)\b", re.IGNORECASE)
CODE_EXTENSIONS = frozenset(
    ".py .pyi .js .jsx .mjs .cjs .ts .tsx .go .rs .java .kt .kts .scala .rb .php .cs .fs .swift .m .mm "
    ".c .h .cc .cpp .hpp .cxx .ex .exs .erl .hs .ml .clj .lua .dart .r .jl .sh .sql .vue .svelte .zig"
    .split())
TEST_FOLDERS = frozenset({"test", "tests", "__tests__", "spec", "specs", "testdata", "fixtures"})
MANIFESTS = frozenset({
    "pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "Pipfile", "package.json", "Cargo.toml",
    "go.mod", "Gemfile", "pom.xml", "build.gradle", "build.gradle.kts", "settings.gradle", "composer.json",
    "mix.exs", "pubspec.yaml", "CMakeLists.txt", "meson.build", "Makefile", "tsconfig.json",
    "Dockerfile", "docker-compose.yml", "docker-compose.yaml", "compose.yaml", ".gitlab-ci.yml",
})
INTERFACE_EXTENSIONS = frozenset({".proto", ".graphql", ".gql", ".thrift", ".avsc", ".prisma"})
MIGRATION_FOLDERS = frozenset({"migrations", "migration", "alembic", "migrate"})


@dataclass(frozen=True, slots=True)
class ScorePart:
    name: str  # files | lines | new_patterns | keywords | architecture | corrections
    points: int  # what this part added (0 when its condition did not hold)
    max_points: int
    detail: str  # why, in words: "12 files changed (5 or more)"


@dataclass(frozen=True, slots=True)
class Significance:
    score: int
    threshold: int
    parts: tuple[ScorePart, ...]
    forced: bool = False  # a manual trigger: analysed whatever the score

    @property
    def significant(self) -> bool:
        return self.forced or self.score >= self.threshold

    def explain(self) -> list[str]:
        """One line per part, then the verdict (for ``--explain``)."""
        out = [f"{p.name:<13} {f'+{p.points}':>3} of {p.max_points}  {p.detail}" for p in self.parts]
        verdict = "significant" if self.significant else "not significant"
        why = " (manual trigger)" if self.forced else ""
        out.append(f"score {self.score}, threshold {self.threshold}: {verdict}{why}")
        return out


@dataclass(frozen=True, slots=True)
class Correction:
    """A correction the session had: the user's words and the message that holds them."""

    text: str
    message_id: str | None = None


@dataclass(frozen=True, slots=True)
class ProposedLesson:
    """A lesson candidate; ``analysed`` is False when no language model wrote it."""

    title: str
    content: str
    kind: str
    evidence: tuple[Evidence, ...] = ()
    tags: tuple[str, ...] = ()
    analysed: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)


# ---- the score ----------------------------------------------------------------------------------
def score(changes: GitChanges, *, corrections: int = 0, iterations: int = 0, threshold: int = THRESHOLD,
          force: bool = False) -> Significance:
    """The significance score of ``changes`` plus the session's correction and iteration counts."""
    parts = (
        _files_part(changes), _lines_part(changes), _new_patterns_part(changes), _keywords_part(changes),
        _architecture_part(changes), _corrections_part(corrections, iterations),
    )
    return Significance(sum(p.points for p in parts), threshold, parts, forced=force)


def _part(name: str, hit: bool, detail: str) -> ScorePart:
    return ScorePart(name, POINTS[name] if hit else 0, POINTS[name], detail)


def _files_part(changes: GitChanges) -> ScorePart:
    n = len(changes.files)
    return _part("files", n >= MIN_FILES, f"{n} file{'s' * (n != 1)} changed ({MIN_FILES} or more count)")


def _lines_part(changes: GitChanges) -> ScorePart:
    n = changes.lines_changed
    return _part("lines", n >= MIN_LINES,
                 f"{n} lines changed, +{changes.added} −{changes.removed} ({MIN_LINES} or more count)")


# Paths are split as strings, not PurePosixPath: the score reads every file of a large diff
# several times, and pathlib objects made it four times slower on 2,000 files.
def _split(path: str) -> tuple[list[str], str, str, str]:
    """(folders, name, stem, suffix) of a repository path."""
    *folders, name = path.split("/")
    suffix = suffix_of(name)
    return folders, name, name[:len(name) - len(suffix)], suffix


def suffix_of(name: str) -> str:
    """``posixpath.splitext(name)[1]`` for a file name, at a third of its cost: leading dots
    (``.bashrc``) make no suffix."""
    dot = name.rfind(".")
    return "" if dot <= 0 or not name[:dot].strip(".") else name[dot:]


def is_code(path: str) -> bool:
    return suffix_of(path.rpartition("/")[2]).lower() in CODE_EXTENSIONS


def is_test(path: str) -> bool:
    folders, name, _, _ = _split(path.lower())
    return (any(p in TEST_FOLDERS for p in folders) or name.startswith("test_")
            or re.search(r"[._-](test|spec)\.\w+$", name) is not None)


def _new_patterns_part(changes: GitChanges) -> ScorePart:
    """New code outside tests in folders that did not exist before: a new module or component."""
    new = changes.new_directories
    found = [f.path for f in changes.files
             if f.status in ("added", "renamed", "copied") and is_code(f.path) and not is_test(f.path)
             and any(f.path.startswith(d + "/") for d in new)]
    if len(found) >= MIN_NEW_CODE_FILES:
        folders = sorted({d for d in new if any(p.startswith(d + "/") for p in found)})
        return _part("new_patterns", True,
                     f"{len(found)} new code files in new folders: {', '.join(folders[:3])}")
    return _part("new_patterns", False, f"{len(found)} new code files in new folders "
                                        f"({MIN_NEW_CODE_FILES} or more count)")


def _keywords_part(changes: GitChanges) -> ScorePart:
    for commit in changes.commits:
        m = KEYWORDS.search(f"{commit.subject}\n{commit.body}")
        if m:
            return _part("keywords", True, f"{m.group(0).lower()!r} in commit {commit.short}")
    n = len(changes.commits)
    return _part("keywords", False, f"no refactor/fix/bug/optimize/improve/security in {n} commit message"
                                    f"{'s' * (n != 1)}")


_REQUIREMENTS = re.compile(r"requirements[\w.-]*\.txt")


def architecture_reasons(files: Sequence[FileChange]) -> list[str]:
    """Why the change touches the architecture: manifests, CI, schemas, interfaces, moves."""
    reasons: list[str] = []
    seen: set[str] = set()

    def add(kind: str, path: str) -> None:
        if kind not in seen:
            seen.add(kind)
            reasons.append(f"{kind} ({path})")

    for f in files:
        folders, name, stem, suffix = _split(f.path)
        stem, suffix = stem.lower(), suffix.lower()
        if name in MANIFESTS or _REQUIREMENTS.fullmatch(name):
            add("build or dependency manifest", f.path)
        elif f.path.startswith((".github/workflows/", ".circleci/")):
            add("CI configuration", f.path)
        elif MIGRATION_FOLDERS.intersection(p.lower() for p in folders) or stem in ("schema", "schemas") \
                or suffix == ".sql":
            add("database schema or migration", f.path)
        elif suffix in INTERFACE_EXTENSIONS or stem in ("openapi", "swagger"):
            add("interface definition", f.path)
    renames = sum(1 for f in files if f.status == "renamed")
    if renames >= MIN_RENAMES:
        reasons.append(f"{renames} files moved")
    return reasons


def _architecture_part(changes: GitChanges) -> ScorePart:
    reasons = architecture_reasons(changes.files)
    if reasons:
        return _part("architecture", True, "; ".join(reasons[:4]))
    return _part("architecture", False, "no manifest, CI, schema, interface or restructuring change")


def _corrections_part(corrections: int, iterations: int) -> ScorePart:
    hit = corrections >= MIN_CORRECTIONS or iterations >= MIN_CORRECTIONS
    return _part("corrections", hit, f"{corrections} correction{'s' * (corrections != 1)}, "
                                     f"{iterations} iteration{'s' * (iterations != 1)} "
                                     f"({MIN_CORRECTIONS} or more of either count)")


# ---- the summary without a model --------------------------------------------------------------
TOP = 5  # folders and files named in the summary
QUOTE_CHARS = 300
TITLE_CHARS = 90


def summarize(changes: GitChanges, significance: Significance | None = None, *,
              corrections: Sequence[Correction] = (), session_id: str | None = None) -> ProposedLesson:
    """What changed, where, in which commits, with which corrections: a lesson candidate that is
    honest about being unanalysed. Commit subjects and quotes are redacted."""
    significance = significance or score(changes, corrections=len(corrections))
    lines = ["Not analysed: summarised from git and the session without a language model.", ""]
    lines += _what(changes)
    lines += _where(changes)
    lines += _commits(changes)
    lines += _extras(changes)
    lines += _corrections(corrections)
    hits = [f"{p.name} +{p.points}" for p in significance.parts if p.points]
    lines += ["", f"Significance {significance.score} (threshold {significance.threshold})"
                  + (f": {', '.join(hits)}." if hits else ".")]
    evidence = tuple(Evidence(quote=redact(c.subject), session_id=session_id, source=f"commit {c.sha}")
                     for c in changes.commits if not c.is_merge)
    evidence += tuple(Evidence(quote=redact(_clip(c.text, QUOTE_CHARS)), session_id=session_id,
                               message_id=c.message_id, source="correction") for c in corrections)
    return ProposedLesson(
        title=_title(changes), content="\n".join(lines).strip(), kind=_kind(changes, significance),
        evidence=evidence, tags=_tags(changes), analysed=False,
        metadata={"lines_changed": changes.lines_changed, "files_changed": len(changes.files),
                  "commits": [c.sha for c in changes.commits], "user_corrections": len(corrections),
                  "significance": significance.score, "branch": changes.branch})


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _title(changes: GitChanges) -> str:
    subjects = [c.subject for c in changes.commits if not c.is_merge and c.subject]
    if len(subjects) == 1:
        return _clip(redact(subjects[0]), TITLE_CHARS)
    if subjects:
        # git log lists the newest first; the first piece of work names the session best.
        more = f" (and {len(subjects) - 1} more commits)"
        return _clip(redact(subjects[-1]), TITLE_CHARS - len(more)) + more
    folder = _folders(changes.files)[:1]
    where = f" in {folder[0][0]}" if folder else ""
    n = len(changes.files)
    return f"Uncommitted changes to {n} file{'s' * (n != 1)}{where}"


def _what(changes: GitChanges) -> list[str]:
    n, c = len(changes.files), len(changes.commits)
    on = f" on {changes.branch}" if changes.branch else " on a detached HEAD" if changes.detached else ""
    commits = f" in {c} commit{'s' * (c != 1)}{on}" if c else f"{on}, not committed"
    return [f"Changed {n} file{'s' * (n != 1)} (+{changes.added} −{changes.removed} lines){commits}."]


def _folder(path: str, depth: int = 3) -> str:
    parts = path.split("/")[:-1]
    return "/".join(parts[:depth]) or "(top level)"


def _folders(files: Sequence[FileChange]) -> list[tuple[str, int, int, int]]:
    """(folder, files, added, removed), the most changed first."""
    stats: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for f in files:
        s = stats[_folder(f.path)]
        s[0] += 1
        s[1] += f.added
        s[2] += f.removed
    return sorted(((k, *v) for k, v in stats.items()), key=lambda t: (-(t[2] + t[3]), -t[1], t[0]))  # type: ignore[misc]


def _where(changes: GitChanges) -> list[str]:
    if not changes.files:
        return []
    folders = [f"{name} ({n} file{'s' * (n != 1)}, +{a} −{r})"
               for name, n, a, r in _folders(changes.files)[:TOP]]
    top = sorted(changes.files, key=lambda f: (-f.lines, f.path))[:TOP]
    return [f"Where: {'; '.join(folders)}.",
            "Most changed: " + "; ".join(f"{f.path} (+{f.added} −{f.removed})" for f in top) + "."]


def _commits(changes: GitChanges) -> list[str]:
    if not changes.commits:
        return []
    shown = changes.commits[:10]
    out = ["", "Commits:"] + [f"- {c.short} {redact(c.subject)}{' (merge)' if c.is_merge else ''}"
                              for c in shown]
    if len(changes.commits) > len(shown):
        out.append(f"- … and {len(changes.commits) - len(shown)} more")
    return out


def _extras(changes: GitChanges) -> list[str]:
    out: list[str] = []
    if changes.renames:
        moved = [f"{f.old_path} → {f.path}" for f in changes.renames[:TOP]]
        out.append(f"Renamed: {'; '.join(moved)}" + (" …" if len(changes.renames) > TOP else "") + ".")
    if changes.new_directories:
        out.append(f"New folders: {', '.join(changes.new_directories[:TOP])}.")
    if changes.binary_files:
        out.append(f"Binary files (counted, not read): {len(changes.binary_files)}.")
    for s in changes.submodules:
        old, new = (s.old_commit or "")[:10] or "added", (s.new_commit or "")[:10] or "removed"
        out.append(f"Submodule {s.path}: {old} → {new}.")
    if changes.skipped:
        by_reason = Counter(s.reason for s in changes.skipped)
        n = len(changes.skipped)
        out.append(f"Not counted: {n} file{'s' * (n != 1)} ("
                   + ", ".join(f"{n} {reason}" for reason, n in sorted(by_reason.items())) + ").")
    if changes.unavailable:
        out.append(f"Git could not be read ({changes.unavailable}): {changes.detail}")
    return [""] + out if out else []


def _corrections(corrections: Sequence[Correction]) -> list[str]:
    if not corrections:
        return []
    n = len(corrections)
    return ["", f"Corrections in the session ({n}):"] + [
        f"- \"{redact(_clip(c.text, QUOTE_CHARS))}\"" + (f" (message {c.message_id})" if c.message_id else "")
        for c in corrections]


_FIX = re.compile(r"\b(fix(es|ed)?|bug(s|fix)?|hotfix)\b", re.IGNORECASE)


def _kind(changes: GitChanges, significance: Significance) -> str:
    parts = {p.name: p.points for p in significance.parts}
    if parts.get("architecture"):
        return "architecture"
    if any(_FIX.search(c.subject) for c in changes.commits):
        return "bug_fix"
    return "learning"


def _tags(changes: GitChanges) -> tuple[str, ...]:
    languages = Counter(suffix_of(f.path.rpartition("/")[2]).lower().lstrip(".")
                        for f in changes.files if is_code(f.path))
    return tuple(["git"] + [lang for lang, _ in languages.most_common(3)])
