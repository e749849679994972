"""`lore review -i`: the review queue one rule at a time in the terminal, single keys.

Each decision is stored as the key is pressed (through the same ``Learner.review`` as
``lore review approve``), so quitting, Ctrl-C or a closed terminal lose nothing decided.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import click

KEYS = {"a": "approve", "e": "edit", "r": "reject", "d": "defer", "s": "skip", "n": "skip",
        " ": "skip", "p": "previous", "?": "help", "h": "help", "q": "quit"}
HELP = ("  a approve   e edit (then approve)   r reject (asks a reason)   d defer (until seen "
        "again)\n  s/n skip    p previous    ? help    q quit")
PROMPT = "[a]pprove [e]dit [r]eject [d]efer [s]kip [p]revious [?] [q]uit > "
DONE = {"approve": "approved", "edit": "edited", "reject": "rejected", "defer": "deferred"}
NOT_A_TERMINAL = ("`lore review -i` needs a terminal; use `lore review` to list what waits and "
                  "`lore review approve|edit|reject|defer ID` to decide")


def is_terminal() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


def item_lines(item: Mapping[str, Any], quotes: int = 3, rule: bool = False,
               width: int = 240) -> list[str]:
    """A waiting rule as lines: id and rule line, what is known, the rule text, the evidence."""
    flags = [item["status"], f"score {item['score']:.2f}" if item["score"] is not None else "",
             f"seen {item['occurrences']}x in {item['sessions']} session(s)",
             f"scope {item['scope']}"]
    if item["file_types"]:
        flags.append(f"file types {', '.join(item['file_types'])}")
    if item["conflicts"]:
        flags.append(f"conflicts with {', '.join(item['conflicts'])}")
    if item["recorrections"]:
        flags.append(f"re-corrected {item['recorrections']}x")
    lines = [f"{item['id']}  {item['title']}", f"  [{', '.join(f for f in flags if f)}]"]
    if item.get("active_by_repetition") and not item.get("needs_approval"):
        lines.append("  ACTIVE BY REPETITION: its score made it active, the agent is told it; "
                     "nobody confirmed it yet (approve to confirm, reject to stop it)")
    if item.get("needs_approval"):
        lines.append(f"  told to the agent only once approved: {item['needs_approval']}")
    if item["why_candidate"]:
        lines.append(f"  needs more evidence: {item['why_candidate']}")
    if rule and item["rule"] and one_line(item["rule"]) != one_line(item["title"]):
        lines.append(f"  rule: {one_line(item['rule'], 400)}")
    for ev in item["evidence"][-quotes:]:
        where = ", ".join(str(x) for x in (ev["date"], ev["session"] and f"session {ev['session']}",
                                           ev["project"]) if x)
        lines.append(f"  said ({where}): {one_line(ev['said'], width)}")
        if ev["agent_turn"]:
            lines.append(f"    answering: {one_line(ev['agent_turn'], width)}")
    return lines


def one_line(text: str, limit: int = 240) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class Session:
    """One walk through the queue: where we are and what was decided."""

    def __init__(self, decide: Callable[..., Any], items: Sequence[dict[str, Any]],
                 getchar: Callable[[], str] = click.getchar,
                 decide_check: Callable[..., Any] | None = None) -> None:
        self.decide = decide  # (lesson_id, action, **fields) -> the lesson
        self.decide_check = decide_check  # (check_id, action) -> the check; items with "check"
        self.items = list(items)
        self.getchar = getchar
        self.at = 0
        self.decided: dict[str, str] = {}

    def summary(self) -> str:
        counts = {v: 0 for v in DONE.values()}
        for action in self.decided.values():
            counts[DONE[action]] += 1
        approved = counts["approved"] + counts["edited"]
        edited = f" ({counts['edited']} edited)" if counts["edited"] else ""
        skipped = len(self.items) - len(self.decided)
        return (f"approved {approved}{edited}, rejected {counts['rejected']}, "
                f"deferred {counts['deferred']}, skipped {skipped}")

    def show(self) -> None:
        item = self.items[self.at]
        click.echo()
        click.echo(f"── {self.at + 1}/{len(self.items)} " + "─" * 50)
        if item.get("check"):
            from lore.cli.guard_cmd import check_lines

            click.echo("check: " + check_lines(item))
        else:
            click.echo("\n".join(item_lines(item, rule=True, width=1000)))
        if item["id"] in self.decided:
            click.echo(f"  (you {DONE[self.decided[item['id']]]} it; a key decides again)")

    def run(self) -> None:
        """Until q, the end of the queue, Ctrl-C (KeyboardInterrupt) or end of input."""
        self.show()
        while self.at < len(self.items):
            click.echo(PROMPT, nl=False)
            key = self.getchar()
            click.echo(key if key.isprintable() else "")
            command = KEYS.get(key.lower())
            if command is None:
                click.echo(f"  '{one_line(key)}' is not a key here; ? shows the keys")
            elif command == "quit":
                return
            elif command == "help":
                click.echo(HELP)
            elif command == "previous":
                if self.at == 0:
                    click.echo("  this is the first rule")
                else:
                    self.at -= 1
                    self.show()
            elif command == "skip" or self.act(command):
                self.at += 1
                if self.at < len(self.items):
                    self.show()
        click.echo("\nthat was the last rule waiting")

    def act(self, action: str) -> bool:
        """Store a decision on the current rule; False when cancelled or refused."""
        item = self.items[self.at]
        if item.get("check"):
            return self.act_on_check(item, action)
        fields: dict[str, Any] = {}
        if action == "edit":
            edited = edit(item["title"], item["rule"] or "")
            if edited is None:
                click.echo("  edit cancelled: nothing changed")
                return False
            fields = {"title": edited[0], "content": edited[1]}
        elif action == "reject":
            reason = ask("  reason (Enter for none): ")
            fields = {"reason": reason or None}
        from lore.errors import LoreError

        try:
            lesson = self.decide(item["id"], action, via="terminal", **fields)
        except LoreError as exc:
            click.echo(f"  not {DONE[action]}: {exc}")
            return False
        item.update(title=lesson.title, rule=lesson.content)
        self.decided[item["id"]] = action
        click.echo(f"  {DONE[action]}: {lesson.title}")
        return True


    def act_on_check(self, item: dict[str, Any], action: str) -> bool:
        """A check is approved or rejected (its mode: `lore guard mode`)."""
        if action not in ("approve", "reject") or self.decide_check is None:
            click.echo("  a check is approved (a) or rejected (r); `lore guard mode ID` "
                       "switches remind and block")
            return False
        from lore.errors import LoreError

        try:
            check = self.decide_check(item["id"], action)
        except LoreError as exc:
            click.echo(f"  not {DONE[action]}: {exc}")
            return False
        self.decided[item["id"]] = action
        click.echo(f"  {DONE[action]}: {check['words']}")
        return True


def ask(prompt: str, prefill: str = "") -> str:
    """One line from the terminal, ``prefill`` already typed (readline, where there is one)."""
    try:
        import readline
    except ImportError:  # pragma: no cover - Windows: the text as a default instead
        return str(click.prompt(prompt.rstrip(" :>"), default=prefill, show_default=bool(prefill)))
    readline.set_startup_hook(lambda: readline.insert_text(prefill))
    try:
        return input(prompt).strip()
    finally:
        readline.set_startup_hook()


def edit(title: str, rule: str) -> tuple[str, str | None] | None:
    """The new title and rule text, or None: cancelled (empty, unchanged or not saved).
    $VISUAL or $EDITOR edits both (the first line is the title); else a one-line prompt
    holds the title, pre-filled."""
    if os.environ.get("VISUAL") or os.environ.get("EDITOR"):
        text = click.edit(f"{title}\n\n{rule}\n", extension=".md", require_save=True)
        if text is None or not text.strip():
            return None
        head, _, body = text.strip().partition("\n")
        body = body.strip()
        if head.strip() == title and body == rule.strip():
            return None
        return head.strip(), (body if body and body != rule.strip() else None)
    new = ask("  rule: ", title)
    if not new or new == title:
        return None
    return new, None
