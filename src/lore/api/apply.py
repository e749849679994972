"""The ``apply`` part of :class:`lore.api.Lore`: the rules that hold in a project and where
they are written (CLAUDE.md, rules files, AGENTS.md, skills), and what a new session is told."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lore.models import RULE_KINDS, Lesson

if TYPE_CHECKING:
    from pathlib import Path

    from lore.api.engine import Engine
    from lore.apply.files import Plan


class ApplyPart:
    """Approved rules into the files agents read, and into the session's start."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def rules(self, project: str | None) -> list[Lesson]:
        """The rules that hold in ``project`` (its own and global ones), most confident first:
        approved by a person, or active by repetition within the bounds of
        :func:`lore.review.queue.holds`. Every writer of rules goes through here."""
        from lore.normalize import project_root
        from lore.review.queue import holds

        store = self.engine.store
        ids = store.corrections.preferences(project_root(project), all_projects=False,
                                            file_type=None, statuses=("active",),
                                            limit=1_000_000)
        rules = [x for x in (store.get(i) for i in ids) if holds(x)]
        # A rule an active lesson supersedes is not written, as the session context leaves it out.
        seqs = {store.seq_of(x.id): x for x in rules}
        replaced = store.successors(list(seqs))
        return [x for seq, x in seqs.items() if seq not in replaced]

    def left_out(self, project: str | None, *,
                 include_global: bool | None = None) -> list[dict[str, Any]]:
        """The approved rules ``lore apply`` in ``project`` does not write, each with why:
        another project's rule (``lore learn update ID --project PATH`` moves it), or a global rule while the
        global file is off, or a rule a newer active one supersedes. Rules a target file
        already states are the plan's skips."""
        from lore.normalize import project_root
        from lore.review.queue import approved_lessons

        include_global = self.engine.settings.config.apply.global_file if include_global is None \
            else include_global
        here = {x.id for x in self.rules(project)}
        out = []
        for lesson in approved_lessons(self.engine.store):
            if lesson.kind not in RULE_KINDS:
                continue
            if lesson.id in here and (lesson.project is not None or include_global):
                continue
            if lesson.project == project_root(project) or (lesson.project is None
                                                           and include_global):
                reason = ("superseded by a newer active rule (`lore recall related "
                          f"{lesson.id} --relation supersedes` shows it)")
            elif lesson.project is None:
                reason = ("a global rule, and the global file is off (--global or "
                          "apply.global_file writes ~/.claude/CLAUDE.md)")
            else:
                reason = (f"a rule of another project ({lesson.project}); `lore learn update "
                          f"{lesson.id} --project {project_root(project) or '.'}` or --global "
                          "moves it")
            out.append({"id": lesson.id, "title": lesson.title, "project": lesson.project,
                        "reason": reason})
        return out

    def plan(self, project: str | None, home: Path, *, local: bool | None = None,
             agents_md: bool | None = None, include_global: bool | None = None) -> Plan:
        """What ``lore apply`` would change: approved rules as Lore's block in CLAUDE.md (or
        CLAUDE.local.md), ``.claude/rules`` files, AGENTS.md and ``~/.claude/CLAUDE.md``.
        Reads only; ``plan.write()`` writes. Options left None come from ``apply`` config.
        Without the global file, global rules and ``~/.claude/CLAUDE.md`` are left alone."""
        from pathlib import Path as _Path

        from lore.apply.approved import applied_rule
        from lore.apply.files import Plan as _Plan
        from lore.apply.targets import Targets, plan

        cfg = self.engine.settings.config.apply
        local = cfg.project_file == "CLAUDE.local.md" if local is None else local
        agents_md = cfg.agents_md if agents_md is None else agents_md
        include_global = cfg.global_file if include_global is None else include_global
        rules = [applied_rule(lesson) for lesson in self.rules(project)]
        if not include_global:
            rules = [r for r in rules if r.scope != "global"]
        targets = Targets(home=home, project=_Path(project) if project else None, local=local,
                          agents_md=agents_md)
        result = plan(rules, targets)
        if include_global:
            return result
        home_md = home / ".claude" / "CLAUDE.md"

        def without_home(made: _Plan) -> _Plan:
            return _Plan(tuple(c for c in made.changes if c.path != home_md))

        again = result.replan
        return _Plan(without_home(result).changes,
                     replan=None if again is None else lambda: without_home(again()))

    def session_context(self, project: str | None, max_chars: int | None = None,
                        max_items: int | None = None) -> str:
        """What SessionStart tells a new session in ``project`` (empty when nothing applies):
        rules the project's instruction files already state are not repeated."""
        from pathlib import Path as _Path

        from lore.apply.session_context import CONTEXT, build, carried_lines
        from lore.normalize import project_root

        ctx = self.engine.settings.config.context
        project = project_root(project)
        return build(self.engine.store.sessions, project, max_chars or ctx.max_chars,
                     max_items or ctx.max_items, self.engine.tuned(CONTEXT).inject_proposed_min_seen,
                     carried_lines(project, _Path.home()))

    # ---- skills -------------------------------------------------------------------------
    def skills(self) -> list[Any]:
        """Groups of approved lessons worth a skill (``apply.skill_proposals.Proposal``),
        largest first."""
        from lore.apply.skill_proposals import propose
        from lore.apply.skills import SKILLS
        from lore.review.queue import approved_lessons

        store = self.engine.store
        return propose(store, approved_lessons(store), self.engine.tuned(SKILLS))

    def skill_min_size(self) -> int:
        """How many approved lessons a proposal takes at least."""
        from lore.apply.skills import SKILLS

        return self.engine.tuned(SKILLS).skill_min_size

    def skill_plan(self, choice: str, home: Path, *, to_global: bool = False) -> tuple[Any, Plan]:
        """The proposal numbered or named ``choice``: (skill, plan of its files). Reads only."""
        from lore.apply.skill_proposals import choose, plan_write

        return plan_write(choose(self.skills(), choice), home, to_global=to_global)
