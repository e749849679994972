"""Checks proposed from a rule's words, without a model: the common shapes a rule about an
action takes. Each proposal waits for a person's review (``lore review``, ``lore guard``);
a model (the judge) may propose more through the same shape of answer (``Proposal``).

- a package manager: "Use pnpm, not npm" blocks Bash commands that run ``npm``;
- force-pushing: "never force-push to main" blocks ``git push --force`` (to the branches named);
- generated or vendored files: "don't edit gen/, it is generated" blocks writes under ``gen/``;
- a banned library: "use httpx, not requests" in Python blocks ``import requests``;
- a file type: "TypeScript, not JavaScript" reminds when a new ``.js`` file is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from lore.apply.checks import glob_source, validate


@dataclass(frozen=True, slots=True)
class Proposal:
    """A check proposed for a rule: its fields (checks.FIELDS + mode) and where it came from."""

    fields: dict[str, Any]
    origin: str  # shape:package-manager, shape:force-push … or judge
    note: str  # why it was proposed, in words


# The executable of each package manager, as a command pattern.
MANAGERS = {
    "npm": r"npm(?=\s|$)", "pnpm": r"pnpm(?=\s|$)", "yarn": r"yarn(?=\s|$)",
    "bun": r"bun(?=\s|$)",
    "pip": r"(?:pip[\d.]*|python[\d.]*\s+(?:-\w+\s+)*-m\s*pip[\d.]*)(?=\s|$)",
    "pipenv": r"pipenv(?=\s|$)", "poetry": r"poetry(?=\s|$)", "uv": r"uv(?=\s|$)",
    "conda": r"conda(?=\s|$)", "npx": r"npx(?=\s|$)",
}
# Languages a banned library can be imported in: (file glob, the import line for NAME).
IMPORTS = {
    "python": ("*.{py,pyi}", r"^\s*(?:import|from)\s+{name}(?=[\s.,;]|$)"),
    "javascript": ("*.{js,jsx,mjs,cjs,ts,tsx,mts,cts}",
                   r"(?:from\s+|require\(\s*|import\(\s*|^\s*import\s+)['\"]{name}(?:/[^'\"]*)?['\"]"),
}
LANGUAGE_OF = {"py": "python", "python": "python", "pyi": "python", "js": "javascript",
               "jsx": "javascript", "ts": "javascript", "tsx": "javascript",
               "javascript": "javascript", "typescript": "javascript", "mjs": "javascript"}
# Languages named in a rule, as the files they are written in.
FILE_TYPES = {
    "javascript": "*.{js,jsx,mjs,cjs}", "coffeescript": "*.coffee", "jquery": None,
    "python 2": None, "css": "*.css", "less": "*.less", "sass": "*.{sass,scss}",
    "yaml": "*.{yml,yaml}", "json": "*.json", "toml": "*.toml", "ini": "*.ini",
    "shell": "*.sh", "bash": "*.sh", "makefile": "Makefile", "setup.py": "setup.py",
    "requirements.txt": "requirements*.txt", "pipfile": "Pipfile",
}
_PROTECTED = re.compile(r"\b(?:generated|auto-?generated|codegen|vendored|vendor(?:ed)?|"
                        r"third[- ]party|do(?:n't| not) (?:edit|touch|modify|change|write)|"
                        r"never (?:edit|touch|modify|change|write)|read-only|hand-?edit)\b", re.I)
_PATHISH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)+(?:\*\*?(?:/[\w*.-]+)?|[\w.*-]+)?|"
                      r"\*\*?/[\w*.{},-]+|\*\.[\w{},.]+|[\w-]+\.[a-z]{1,6}(?=[\s,.;:)'\"`]|$))")
# git push that forces: -f, --force, --force-with-lease, a short-flag group with f (-uf), a
# +refspec, --mirror. Matched on each git command with its global options dropped (``git -C
# repo push`` as ``git push``; lore.apply.shell), and on a line's text when it does not parse.
FORCE_PUSH = (r"git\s+push\b(?=[^;&|\n]*\s(?:-[A-Za-z0-9]*f[A-Za-z0-9]*|"
              r"--force(?:-with-lease)?(?:=\S*)?|--mirror|\+\S+)(?=\s|$))")
_FORCE = re.compile(r"force[- ]?push|push\s+(?:-f|--force)|--force(?:-with-lease)?\b", re.I)
_BRANCHES = re.compile(r"\b(main|master|develop|dev|trunk|release(?:/\S+)?|production|prod|"
                       r"staging)\b", re.I)
_LIBRARY = re.compile(r"\b(?:import|imports|library|libraries|package|packages|dependency|"
                      r"dependencies|lib)\b", re.I)
_FILLER = frozenset({"the", "a", "an", "it", "this", "that", "them", "one", "something"})
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{1,40}$")
_USE_NOT = re.compile(r"\buse\s+([\w.+-]+)(?:\s*,)?\s+(?:not|instead of|rather than|over)\s+"
                      r"([\w.+-]+)", re.I)
_NOT_USE = re.compile(r"\b(?:don'?t|do not|never|stop)\s+(?:use|using|import|add)\s+([\w.+-]+)"
                      r"(?:[^.;]*?\b(?:use|prefer)\s+([\w.+-]+))?", re.I)


def choice(rule: Any) -> tuple[str | None, str | None]:
    """(preferred, rejected) of a rule: its preference fields, else read from its title."""
    pref = getattr(rule, "preference", None)
    preferred = (pref.preferred or "").strip() if pref else ""
    rejected = (pref.rejected or "").strip() if pref else ""
    if not rejected:
        for text in (rule.title, rule.content or ""):
            m = _USE_NOT.search(text)
            if m:
                return m.group(1), m.group(2)
            m = _NOT_USE.search(text)
            if m:
                return m.group(2), m.group(1)
    return preferred or None, rejected or None


def _word(term: str | None) -> str | None:
    """A term as one lower-case word ("npm", "requests"), or None for a phrase."""
    if not term:
        return None
    t = term.strip().strip("`'\".,;:").lower()
    return t if _NAME.match(t) and " " not in t else None


def propose(rule: Any) -> list[Proposal]:
    """The checks the rule's words call for (maybe none), each valid."""
    text = f"{rule.title}\n{rule.content or ''}"
    preferred, rejected = choice(rule)
    want, avoid = _word(preferred), _word(rejected)
    out: list[Proposal] = []
    if avoid in MANAGERS and (want is None or want in MANAGERS or want == "pnpm"):
        out.append(Proposal({"command": MANAGERS[avoid], "mode": "block"}, "shape:package-manager",
                            f"the rule prefers {preferred or 'another tool'} to {avoid}; "
                            f"any `{avoid}` command"))
    if _FORCE.search(text):
        branches = sorted({b.lower() for b in _BRANCHES.findall(text)})
        pattern = FORCE_PUSH
        if branches:  # the branch as a refspec's destination (main, HEAD:main, +refs/heads/main)
            pattern += (r"(?=[^;&|\n]*(?:[\s:+](?:refs/heads/)?(?:"
                        + "|".join(re.escape(b) for b in branches)
                        + r")(?=\s|$)|\s--mirror(?=\s|$)))")
        out.append(Proposal({"command": pattern, "mode": "block"}, "shape:force-push",
                            "force-pushing" + (f" to {', '.join(branches)}" if branches else "")))
    protected = [s for s in re.split(r"(?<=[.;!?])\s+|\n", text) if _PROTECTED.search(s)]
    if protected:
        for glob in _paths("\n".join(protected)):
            out.append(Proposal({"path": glob, "mode": "block"}, "shape:protected-path",
                                f"writing files under {glob} (the rule calls them generated, "
                                "vendored or not to be edited)"))
    if avoid and avoid not in MANAGERS and avoid not in FILE_TYPES and not {avoid, want} & _FILLER \
            and not _builtin(avoid):
        langs = sorted({LANGUAGE_OF[t] for t in (rule.file_types or []) if t in LANGUAGE_OF})
        if langs or _LIBRARY.search(text):
            for lang in langs or sorted(IMPORTS):
                glob, line = IMPORTS[lang]
                name = re.escape(avoid)
                out.append(Proposal({"path": glob, "content": line.replace("{name}", name),
                                     "mode": "block"}, "shape:banned-import",
                                    f"importing {avoid} in {lang} files"))
    kind_glob = FILE_TYPES.get(rejected.strip().lower()) if rejected else None
    if rejected and kind_glob:
        glob = kind_glob
        out.append(Proposal({"tool": "Write", "path": glob, "mode": "remind"}, "shape:file-type",
                            f"creating a new {rejected.strip()} file ({glob})"))
    valid = []
    for p in out:
        validate(p.fields)  # a shape that builds a bad pattern is a bug: raise in tests
        valid.append(p)
    return valid


def _builtin(name: str) -> bool:
    """A word of the language itself (print, open, class), not a library one imports."""
    import builtins
    import keyword

    return keyword.iskeyword(name) or hasattr(builtins, name)


def _paths(text: str) -> list[str]:
    """The paths and globs a rule names, as globs (a folder becomes ``folder/``)."""
    found: list[str] = []
    for m in _PATHISH.finditer(text):
        p = m.group(1).strip("`'\".,;:")
        if not p or p.startswith(("http", "//")) or "://" in p:
            continue
        if p.endswith("/") or ("/" in p and "*" not in p and "." not in p.rsplit("/", 1)[-1]):
            p = p.rstrip("/") + "/"
        if p not in found and not any(re.search(glob_source(f), p) for f in found):
            found.append(p)
    return found[:4]
