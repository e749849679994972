"""Never twice, measured: labelled histories replayed through the product's own path.

A history file is the labelled message format of ``lore eval corrections`` (JSON Lines:
``text``, ``label``, ``durable``, ``prev_agent``, ``source.repo``) with three optional fields:

- ``session``: the session the message was typed in (any text). Without it, a message whose
  ``prev_agent`` is null opens a new session (the first message of a session answers no agent
  turn), the others continue the one before.
- ``order``: its place among the repository's messages (a number; file order without it).
- ``repeat_group``: the same lesson taught again. Messages that share a group id (within a
  repository) teach the same practice, tool, place or rule (docs/learning.md has the protocol
  the groups are labelled by).

Each repository is a project of its own, in a home of its own (another repository is another
developer, whose global rules are not this one's); its sessions are replayed in order, each message as
the hooks capture it and the worker learns from it (detector, merge, scores, the review queue).
Between sessions a simulated reviewer decides what waits: it approves a proposal whose
evidence holds a message labelled durable (what the developer would keep) and rejects the
rest; then ``lore apply`` writes the approved rules into the project's CLAUDE.md, and the next
session starts with what the SessionStart hook would tell it.

At every later occurrence of a repeat group the report says where the lesson stood: ``front``
(a rule learned from an earlier occurrence was in CLAUDE.md or in the session's context),
``proposed`` (waiting for review, not in front of the agent), ``candidate`` (kept, not yet
proposed) or ``absent``; later-session repeats apart from repeats within one session.
Everything runs on a temporary home; the user's store is not touched.

With a judge (``--judge-replies DIR``), each session's waiting messages are judged at its end
as the worker does, through the product's own request; the reply to a request named NAME is
read from ``DIR/NAME.md`` (NAME is the repository's slug, the session's number and, for a
second call in one session, ``-call2`` …). A missing reply is a provider error: the messages
keep waiting, as they would. ``--judge-prompts DIR`` writes every request the replay sends.
The known rules a request carries depend on the replies to earlier sessions, so the requests
of a repository's later sessions are written once the earlier ones have replies: answer what
was written, run again, and repeat until nothing is missing.
"""

from __future__ import annotations

import logging
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lore.errors import InvalidInput
from lore.measure.corrections import load as load_labelled
from lore.measure.requests import file_stem

if TYPE_CHECKING:
    from lore.api import Lore
    from lore.config import Settings
    from lore.embed import Embedder

STATES = ("front", "proposed", "candidate", "absent")
# The replay's clock ends now, an hour a session and a second a message: a rule's score counts
# a sighting as recent against the wall clock (lore.extract.score), as it does in real use, where
# a correction is scored as it is made. A replay dated in the past scored every refinement 0.1
# short, and left it a hidden candidate where real use proposes it.
_SESSION = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class Message:
    key: str          # the message's id (its file's id, else file:line)
    repo: str
    session: str
    order: float
    text: str
    label: str
    durable: bool
    previous: str | None
    group: str | None

    @property
    def lesson(self) -> bool:
        """What the developer would keep: a correction or preference meant to last."""
        return self.label != "none" and self.durable


@dataclass
class Occurrence:
    group: str
    key: str
    session: int      # the session's number within its repository (1-based)
    later: bool       # a later session than the group's first occurrence
    state: str
    taught: bool = True  # an earlier occurrence is labelled a lasting lesson

    def to_dict(self) -> dict[str, Any]:
        return {"group": self.group, "message": self.key, "session": self.session,
                "later_session": self.later, "state": self.state, "taught": self.taught}


@dataclass
class RepoReport:
    repo: str
    sessions: int = 0
    messages: int = 0
    proposals: int = 0
    rejected: int = 0
    approved: int = 0
    occurrences: list[Occurrence] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"repo": self.repo, "sessions": self.sessions, "messages": self.messages,
                "proposals": self.proposals, "approved": self.approved,
                "rejected": self.rejected,
                "repeats": [o.to_dict() for o in self.occurrences]}


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"{where}: 'order' must be a number")
    return float(value)


def load(paths: Sequence[Path]) -> list[Message]:
    """The messages of ``paths`` (validated as ``lore eval corrections`` does, plus the
    history fields), in the order they were written: repository, then ``order``."""
    out: list[Message] = []
    for path in paths:
        rows = load_labelled(path)
        current: dict[str, int] = {}
        for n, row in enumerate(rows, 1):
            where = f"message {n} of {path}"
            src: dict[str, Any] = row["source"] if isinstance(row.get("source"), dict) else {}
            repo = str(src.get("repo") or "").strip() or path.stem
            session = row.get("session")
            if session is not None and not isinstance(session, str | int):
                raise InvalidInput(f"{where}: 'session' must be text or a number")
            group = row.get("repeat_group")
            if group is not None and not isinstance(group, str | int):
                raise InvalidInput(f"{where}: 'repeat_group' must be text, a number or null")
            if session is None:  # a message that answers no agent turn opens a session
                if row.get("prev_agent") is None or repo not in current:
                    current[repo] = current.get(repo, 0) + 1
                session = f"s{current[repo]}"
            order = _number(row["order"], where) if row.get("order") is not None else float(n)
            out.append(Message(key=str(row.get("id") or f"{path.name}:{n}"), repo=repo,
                               session=str(session), order=order, text=row["text"],
                               label=row["label"], durable=bool(row.get("durable")),
                               previous=row.get("prev_agent"),
                               group=None if group is None or group == "" else f"{repo}#{group}"))
    keys = Counter(m.key for m in out)
    doubled = [k for k, c in keys.items() if c > 1]
    if doubled:
        raise InvalidInput(f"message id '{doubled[0]}' appears more than once")
    return out


def sessions_of(messages: Sequence[Message]) -> dict[str, list[list[Message]]]:
    """Each repository's sessions in the order they began, each session's messages in order."""
    repos: dict[str, dict[str, list[Message]]] = {}
    for m in sorted(messages, key=lambda m: m.order):
        repos.setdefault(m.repo, {}).setdefault(m.session, []).append(m)
    return {repo: list(by.values()) for repo, by in repos.items()}


def slug(repo: str) -> str:
    """A repository's name as its project folder and request names use it."""
    return file_stem(repo, "repo")


@contextmanager
def opened(settings: Settings, embedder: Embedder | None = None) -> Iterator[tuple[Lore, Path]]:
    """Lore on a temporary home with ``settings``' configuration, no language model (the
    replay is the default path: detector, merge, scores), and a folder for the projects."""
    from lore.api import Lore
    from lore.config import Settings as _Settings

    with tempfile.TemporaryDirectory(prefix="lore-history-") as tmp:
        root = Path(tmp)
        config = settings.config.model_copy(deep=True)
        config.database = str(root / "lore.db")
        config.llm.provider = None
        s = _Settings(config=config, home=root / "home", config_path=root / "config.yaml",
                      tuning=settings.tuning)
        (root / "home").mkdir(mode=0o700)
        with Lore.open(s, embedder=embedder) as lore:
            yield lore, root


def _learned_from(lore: Lore, project: str, keys: set[str]) -> list[Any]:
    """The live lessons of ``project`` whose evidence holds one of the messages ``keys``."""
    from lore.models import Filters

    statuses = tuple(s.name for s in lore.lessons.reference("status"))
    _, briefs = lore.lessons.list(Filters(statuses=statuses, project=project), limit=100_000)
    out = []
    for brief in briefs:
        lesson = lore.lessons.get(brief["id"])
        if any(e.message_id in keys for e in lesson.evidence):
            out.append(lesson)
    return out


def _front(lore: Lore, project: str, root: Path) -> tuple[str, str]:
    """What the agent has in front of it as a session starts: (the project's CLAUDE.md and the
    user's ~/.claude/CLAUDE.md, the session's context)."""
    written = ""
    for md in (Path(project) / "CLAUDE.md", root / "home" / ".claude" / "CLAUDE.md"):
        if md.is_file():
            written += md.read_text(encoding="utf-8") + "\n"
    return written, lore.apply.session_context(project)


def _state(lessons: Sequence[Any], front: tuple[str, str]) -> str:
    written, context = front
    live = [x for x in lessons if x.status in ("active", "proposed", "candidate")]
    if any(x.title and (" ".join(x.title.split()) in written or x.title in context)
           for x in live):
        return "front"
    if any(x.status in ("proposed", "active") for x in live):
        return "proposed"
    if any(x.status == "candidate" for x in live):
        return "candidate"
    return "absent"


class ReplayedJudge:
    """A provider whose replies are read from files, one per request (module docstring)."""

    name = "replies"
    model = "replies"

    def __init__(self, replies: Path | None, prompts: Path | None) -> None:
        self.replies, self.prompts = replies, prompts
        self.session = ""
        self.calls = 0
        self.requests = 0
        self.missing: list[str] = []

    def start(self, session: str) -> None:
        self.session, self.calls = session, 0

    def complete(self, request: Any) -> Any:
        from lore.errors import ProviderError
        from lore.llm.base import Completion, as_file, estimate_tokens, request_tokens
        from lore.measure.requests import write_request

        self.calls += 1
        self.requests += 1
        name = self.session + (f"-call{self.calls}" if self.calls > 1 else "")
        if self.prompts is not None:
            write_request(self.prompts, f"{name}.md", as_file(request))
        file = self.replies / f"{name}.md" if self.replies is not None else None
        if file is None or not file.is_file():
            self.missing.append(name)
            raise ProviderError(f"no reply to {name}")
        text = file.read_text(encoding="utf-8", errors="replace")
        return Completion(text=text, input_tokens=request_tokens(request),
                          output_tokens=estimate_tokens(text), model=self.model,
                          latency_s=0.0, estimated=True)


def _review(lore: Lore, project: str, lessons_of: dict[str, Message], report: RepoReport,
            seen: set[str]) -> None:
    """The simulated reviewer: approve a proposal whose evidence holds a lasting lesson,
    reject the rest. Candidates are not proposals and are left to wait."""
    for item in lore.review.waiting(project, all_projects=False, limit=10_000):
        if item["status"] not in ("proposed", "active") or item["id"] in seen:
            continue
        seen.add(item["id"])
        lesson = lore.lessons.get(item["id"])
        report.proposals += 1
        keep = any((m := lessons_of.get(e.message_id or "")) is not None and m.lesson
                   for e in lesson.evidence)
        if keep:
            lore.review.decide(lesson.id, "approve", via="replay")
            report.approved += 1
        else:
            lore.review.decide(lesson.id, "reject", reason="not kept", via="replay")
            report.rejected += 1


def replay(lore: Lore, root: Path, repo: str, sessions: Sequence[Sequence[Message]], *,
           reviewer: bool = True, judge: ReplayedJudge | None = None,
           progress: Any = None) -> tuple[RepoReport, dict[str, str]]:
    """Replay one repository's sessions in order on ``lore`` (a home of its own: another
    repository is another developer, whose global rules are not this one's). Returns its
    report and, for each message, the best status of a lesson it is evidence of."""
    by_key = {m.key: m for s in sessions for m in s}
    quiet = logging.getLogger("lore.history.replay")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    lore.learning.log = quiet  # a missing reply is reported once, in the summary
    if judge is not None:  # the learner opens its provider from this on first use
        lore.learning.judge = lambda: judge
    project = root / "projects" / slug(repo)
    project.mkdir(parents=True, exist_ok=True)
    report = RepoReport(repo)
    first_session: dict[str, int] = {}
    taught: dict[str, set[str]] = {}   # group → keys of its earlier occurrences
    lesson_before: dict[str, bool] = {}  # group → an earlier occurrence is a lasting lesson
    decided: set[str] = set()
    start = datetime.now(UTC) - _SESSION * (len(sessions) + 1)
    for number, session in enumerate(sessions, 1):
        day = start + _SESSION * number
        sid = f"{slug(repo)}-{number}"
        front = _front(lore, str(project), root)
        report.sessions += 1
        for k, m in enumerate(session):
            report.messages += 1
            if m.group is not None:
                if m.group in taught:
                    lessons = _learned_from(lore, str(project), taught[m.group])
                    state = _state(lessons, front)
                    report.occurrences.append(Occurrence(
                        m.group, m.key, number, number > first_session[m.group], state,
                        lesson_before[m.group]))
                else:
                    first_session[m.group] = number
                taught.setdefault(m.group, set()).add(m.key)
                lesson_before[m.group] = lesson_before.get(m.group, False) or m.lesson
            at = (day + timedelta(seconds=k)).isoformat(timespec="seconds")
            lore.learning.capture(m.text, m.previous, project=str(project), session_id=sid,
                                 message_uuid=m.key, at=at, origin="hook")
            lore.learning.process_pending()
            if progress is not None:
                progress()
        if judge is not None:
            judge.start(f"{slug(repo)}-s{number:03d}")
            lore.learning.judge_waiting(session_id=sid)
        if reviewer:
            _review(lore, str(project), by_key, report, decided)
            lore.apply.plan(str(project), root / "home", include_global=True).write()
    found: dict[str, str] = {}
    rank = {"active": 3, "proposed": 2, "candidate": 1}
    for lesson in _learned_from(lore, str(project), set(by_key)):
        for e in lesson.evidence:
            key = e.message_id or ""
            if rank.get(lesson.status, 0) > rank.get(found.get(key, ""), 0):
                found[key] = lesson.status
    return report, found


def _where_lessons_went(messages: Sequence[Message], found: dict[str, str]) -> dict[str, Any]:
    """Of the messages labelled a lasting lesson, how many ended as evidence of a rule that
    was proposed or approved, or only of a candidate (recall)."""
    lasting = [m for m in messages if m.lesson]
    learned = sum(found.get(m.key) in ("active", "proposed") for m in lasting)
    candidate = sum(found.get(m.key) == "candidate" for m in lasting)
    return {"lasting": len(lasting), "learned": learned, "candidate_only": candidate,
            "recall": round(learned / len(lasting), 3) if lasting else 0.0}


def summary(reports: Sequence[RepoReport]) -> dict[str, Any]:
    occ = [o for r in reports for o in r.occurrences]

    def counts(xs: Sequence[Occurrence]) -> dict[str, int]:
        c = Counter(o.state for o in xs)
        return {s: c.get(s, 0) for s in STATES} | {"repeats": len(xs)}

    sessions = sum(r.sessions for r in reports)
    proposals = sum(r.proposals for r in reports)
    return {
        "repositories": len(reports),
        "sessions": sessions,
        "messages": sum(r.messages for r in reports),
        "groups": len({o.group for o in occ}),
        "later_session": counts([o for o in occ if o.later]),
        "same_session": counts([o for o in occ if not o.later]),
        # the repeats of a lesson the developer had taught (an earlier occurrence is labelled a
        # lasting correction or preference), the promise's own measure
        "later_session_taught": counts([o for o in occ if o.later and o.taught]),
        "same_session_taught": counts([o for o in occ if not o.later and o.taught]),
        "review": {"proposals": proposals, "approved": sum(r.approved for r in reports),
                   "rejected": sum(r.rejected for r in reports),
                   "proposals_per_session": round(proposals / sessions, 3) if sessions else 0.0},
        "by_repository": [r.to_dict() for r in reports],
    }


def evaluate(paths: Sequence[Path], settings: Settings, embedder: Embedder | None = None,
             *, reviewer: bool = True, judge_replies: Path | None = None,
             judge_prompts: Path | None = None, progress: Any = None) -> dict[str, Any]:
    """Replay the labelled histories ``paths`` (module docstring) and report."""
    from lore.measure.requests import REPLY_RULE, request_folder

    messages = load(paths)
    if judge_replies is not None and not judge_replies.is_dir():
        raise InvalidInput(f"{judge_replies} is not a folder of replies")
    if judge_prompts is not None:
        request_folder(judge_prompts)
    judge = ReplayedJudge(judge_replies, judge_prompts) if (
        judge_replies is not None or judge_prompts is not None) else None
    reports: list[RepoReport] = []
    found: dict[str, str] = {}
    for repo, sessions in sessions_of(messages).items():
        with opened(settings, embedder) as (lore, root):
            embedder = lore.admin.embedder  # loaded once, shared by every repository's home
            report, statuses = replay(lore, root, repo, sessions, reviewer=reviewer,
                                      judge=judge, progress=progress)
        reports.append(report)
        found.update(statuses)
    out = summary(reports)
    out["lessons"] = _where_lessons_went(messages, found)
    out["judge"] = None if judge is None else {
        "requests": judge.requests, "missing_replies": len(judge.missing),
        "first_missing": judge.missing[:5], "reply_rule": REPLY_RULE,
        "prompts": None if judge_prompts is None else str(judge_prompts)}
    review = out["review"]
    decided = review["approved"] + review["rejected"]
    review["precision"] = round(review["approved"] / decided, 3) if decided else 0.0
    return out
