"""`lore learn`: create and change lessons and their links."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from lore.cli.common import (
    LoreGroup,
    confirm,
    emit_json,
    json_option,
    notice,
    read_content,
    resolve_project,
    split_multi,
    stdin_text,
    with_lore,
    yes_option,
)

if TYPE_CHECKING:
    from lore.api import Lore

# --set KEY=VALUE: every field of a lesson (docs/json.md's names; the earlier option names are
# accepted too): KEY -> (field, how it is read). A list field takes one value per --set.
TEXT, NUMBER, LIST, SPLIT, PREF, PRO, CON, QUOTE, SESSION, VISIBILITY = range(10)
SET_KEYS: dict[str, tuple[str, int]] = {
    **{k: (k, TEXT) for k in ("kind", "status", "confidence", "source", "source_notes", "summary",
                              "problem_solved", "when_to_apply", "when_not_to_apply", "title")},
    "problem": ("problem_solved", TEXT), "when": ("when_to_apply", TEXT),
    "when_not": ("when_not_to_apply", TEXT), "score": ("score", NUMBER),
    "tags": ("tags", SPLIT), "tag": ("tags", SPLIT), "file_types": ("file_types", SPLIT),
    "file_type": ("file_types", SPLIT), "contexts": ("contexts", LIST),
    "context": ("contexts", LIST), "anti_contexts": ("anti_contexts", LIST),
    "anti_context": ("anti_contexts", LIST),
    **{k: (k, PREF) for k in ("rejected", "preferred", "reasoning")},
    "pref_context": ("context", PREF), "preference.context": ("context", PREF),
    **{f"preference.{k}": (k, PREF) for k in ("rejected", "preferred", "reasoning")},
    "pro": ("pro", PRO), "con": ("con", CON), "evidence": ("evidence", QUOTE),
    "session_id": ("session_id", SESSION), "visibility": ("visibility", VISIBILITY),
}
VISIBILITIES = ("personal", "project", "team")


def _sets(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> list[tuple[str, str]]:
    """--set KEY=VALUE pairs, checked while parsing (before the database is opened)."""
    out = []
    for item in values:
        key, sep, value = item.partition("=")
        name = key.strip().lower().replace("-", "_")
        if not sep or name not in SET_KEYS:
            raise click.BadParameter(f"'{key}' is not a field of a lesson; give KEY=VALUE with KEY "
                                     "one of " + ", ".join(sorted({k for k in SET_KEYS
                                                                   if "." not in k})), ctx, param)
        field, how = SET_KEYS[name]
        if how == NUMBER:
            try:
                float(value)
            except ValueError:
                raise click.BadParameter(f"{name}={value!r}: give a number", ctx, param) from None
        if how == VISIBILITY and value not in VISIBILITIES:
            raise click.BadParameter(f"visibility={value!r}: give one of "
                                     f"{', '.join(VISIBILITIES)}", ctx, param)
        out.append((name, value))
    return out


def lesson_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The options learn add and learn update share; every other field goes through --set."""
    opts: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
        click.option("--content-file", type=click.Path(dir_okay=False),
                     help="Read the content from this file."),
        click.option("--project", help="Project scope (a path; '.' is the current project)."),
        click.option("--global", "global_", is_flag=True, help="No project: it holds everywhere."),
        click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", callback=_sets,
                     help="Any other field, by its name in docs/json.md (repeat; a list field "
                          "takes one value each): status, score, source, source_notes, summary, "
                          "problem_solved, when_to_apply, when_not_to_apply, contexts, "
                          "anti_contexts, file_types, preference.context|rejected|preferred|"
                          "reasoning, pro, con, evidence (a quote), session_id, visibility "
                          "(personal, project or team)."),
        click.option("--example-file", multiple=True, type=click.Path(exists=True, dir_okay=False),
                     help="A code example, language from the extension (repeatable)."),
        click.option("--from-json", "from_json", type=click.File("rb"), callback=_json_object,
                     help="Read all fields from a JSON object (file or '-'), as in docs/json.md."),
        json_option,
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def _json_object(ctx: click.Context, param: click.Parameter, stream: Any) -> dict[str, Any] | None:
    """Read --from-json while parsing, before the database is opened."""
    if stream is None:
        return None
    data = stream.read()
    try:
        value = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise click.BadParameter(f"not valid UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                                 f"{exc.start}); save it as UTF-8", ctx, param) from None
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON ({exc.msg}, line {exc.lineno})", ctx,
                                 param) from None
    if not isinstance(value, dict):
        raise click.BadParameter("must hold one JSON object", ctx, param)
    return value


def collect_fields(opts: dict[str, Any]) -> dict[str, Any]:
    """Turn command options into API fields; only the options actually given. A visibility
    given with --set is returned as "visibility" for the caller to set after saving."""
    fields: dict[str, Any] = dict(opts.get("from_json") or {})
    for opt in ("kind", "status", "confidence"):
        if opts.get(opt) is not None:
            fields[opt] = opts[opt]
    if opts.get("global_"):
        fields["project"] = ""
    elif opts.get("project") is not None:
        fields["project"] = resolve_project(opts["project"])
    for opt, name in (("tag", "tags"), ("context", "contexts")):
        values = split_multi(opts.get(opt) or ()) if opt == "tag" else list(opts.get(opt) or ())
        if values:
            fields[name] = values
    session_id = None
    lists: dict[str, list[Any]] = {}
    for key, value in opts.get("sets") or ():
        field, how = SET_KEYS[key]
        if how == TEXT or how == VISIBILITY:
            fields[field] = value
        elif how == NUMBER:
            fields[field] = float(value)
        elif how in (LIST, SPLIT):
            lists.setdefault(field, []).extend(split_multi([value]) if how == SPLIT else [value])
        elif how == PREF:
            fields.setdefault("preference", {})[field] = value
        elif how in (PRO, CON):
            lists.setdefault("trade_offs", []).append({"type": field, "description": value})
        elif how == QUOTE:
            lists.setdefault("evidence", []).append({"quote": value})
        else:
            session_id = value
    for quote in lists.get("evidence", []):
        quote["session_id"] = session_id
    for field, values in lists.items():
        fields[field] = [*(fields.get(field) or []), *values]
    if opts.get("example_file"):
        fields["examples"] = [_example(p) for p in opts["example_file"]]
    return fields


def _example(path: str) -> dict[str, str]:
    from pathlib import Path

    p = Path(path)
    try:
        code = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise click.ClickException(f"{path} is not UTF-8 text") from None
    return {"code": code, "language": p.suffix.lstrip("."), "context": p.name}


def show_saved(lesson: Any, verb: str, json_: bool) -> None:
    if json_:
        emit_json(lesson.to_dict())
    else:
        click.echo(lesson.id)
        notice(f"{verb} lesson {lesson.id}: {lesson.title}")


@click.group(cls=LoreGroup)
def learn() -> None:
    """Create, change and link lessons.

    \b
    Examples:
      lore learn add "Pin the major version" "Floating deps broke CI twice." --tag deps
      lore learn update 01JD… --status archived
      lore learn link 01JD…A 01JD…B --relation supersedes
    """


@learn.command("add")
@click.argument("title", required=False)
@click.argument("content", required=False, callback=stdin_text)
@click.option("--kind", help="Lesson kind (`lore recall values kinds`); default: learning.")
@click.option("--tag", "-t", multiple=True, help="Tag (repeat, or comma-separate).")
@click.option("--context", multiple=True, help="A situation where the lesson applies (repeat).")
@click.option("--confidence", help="very-low … very-high (`lore recall values confidence-levels`).")
@click.option("--status", help="proposed, active, rejected, superseded or archived.")
@lesson_options
@with_lore
def learn_add(lore: Lore, title: str | None, content: str | None, json_: bool,
              **opts: Any) -> None:
    """Add a lesson: a title and its content (argument, --content-file, or '-' for stdin).

    It holds in the current project (the git top level of the folder, else the folder) unless
    --project names another or --global makes it hold everywhere. Any other field is given
    with --set KEY=VALUE.

    With --from-json, TITLE may be left out: the object's "title" is used (and wins over
    TITLE when both are given).

    \b
    Examples:
      lore learn add "Use file sessions, not Redis" "Redis was rejected for auth." \\
          --kind preference --tag auth --context "small deployments" \\
          --set rejected="Redis sessions" --set preferred="file sessions"
      git log -1 --format=%B | lore learn add "Why we pin numpy" - --set source=git
      lore learn add --from-json lesson.json
    """
    fields = collect_fields(opts)
    if "project" not in fields:  # every way of adding a rule: the current project by default
        fields["project"] = resolve_project(".")
    fields["title"] = fields.get("title") or title
    if fields["title"] is None:
        raise click.UsageError("give a TITLE (or a \"title\" in the --from-json object)")
    text = read_content(content, opts.get("content_file"))
    if text is not None:
        fields["content"] = text
    fields.setdefault("content", "")
    for tag in lore.lessons.unknown_tags(fields.get("tags", [])):
        notice(f"warning: tag '{tag}' is not in known_tags")
    visibility = fields.pop("visibility", None)
    lesson = lore.lessons.add(**fields)
    if visibility is not None:
        lore.lessons.set_visibility(lesson.id, visibility)
    show_saved(lesson, "added", json_)


@learn.command("update")
@click.argument("lesson_id")
@click.option("--title", help="New title.")
@click.option("--content", "content_text", callback=stdin_text,
              help="New content ('-' reads stdin).")
@click.option("--add-tag", multiple=True, help="Add a tag, keeping the others.")
@click.option("--remove-tag", multiple=True, help="Remove a tag.")
@click.option("--status", help="proposed, active, rejected, superseded or archived.")
@lesson_options
@with_lore
def learn_update(lore: Lore, lesson_id: str, title: str | None, content_text: str | None,
                 add_tag: tuple[str, ...], remove_tag: tuple[str, ...], json_: bool,
                 **opts: Any) -> None:
    """Change some fields of a lesson; a list given with --set replaces the old list.

    --project moves a lesson or rule to another project (a folder means its project: the git
    top level of the folder, else the folder), --global makes it hold everywhere; run `lore
    apply` afterwards to write the rule where it now belongs.

    \b
    Examples:
      lore learn update 01JD… --set confidence=high --add-tag security
      lore learn update 01JD… --content-file notes.md
      lore learn update 01JD… --status archived
      lore learn update 01JD… --global
      lore learn update 01JD… --set visibility=team
    """
    from lore import normalize

    where = opts.get("project")
    if opts.get("global_") and where is not None:
        raise click.UsageError("give --global or --project PATH, not both")
    if where is not None and where not in (".", "here") and not os.path.isdir(
            os.path.expanduser(where)):
        raise click.BadParameter(f"no such folder: {where}", param_hint="--project")
    fields = collect_fields(opts)
    if title is not None:
        fields["title"] = title
    text = read_content(content_text, opts.get("content_file"))
    if text is not None:
        fields["content"] = text
    if add_tag or remove_tag:
        current = list(fields.get("tags") or lore.lessons.get(lesson_id).tags)
        drop = {normalize.tag(t) for t in split_multi(remove_tag)}
        fields["tags"] = [t for t in current + split_multi(add_tag) if normalize.tag(t) not in drop]
    visibility = fields.pop("visibility", None)
    if not fields and visibility is None:
        raise click.UsageError("nothing to change: give at least one option")
    if visibility is not None:
        lore.lessons.set_visibility(lesson_id, visibility)
    lesson = lore.lessons.update(lesson_id, **fields) if fields else lore.lessons.get(lesson_id)
    show_saved(lesson, "updated", json_)
    if "project" in fields and not json_:
        notice(f"it holds in {'every project' if lesson.project is None else lesson.project}")


@learn.command("delete")
@click.argument("lesson_id")
@yes_option("delete the lesson")
@json_option
@with_lore
def learn_delete(lore: Lore, lesson_id: str, yes: bool, json_: bool) -> None:
    """Delete a lesson with its tags, evidence and links.

    Asks first on a terminal; in a script or pipe it refuses unless --yes is given.

    \b
    Example:
      lore learn delete 01JD… --yes
    """
    lesson = lore.lessons.get(lesson_id)
    confirm(yes, f"Delete '{lesson.title}'?")
    lore.lessons.delete(lesson_id)
    if json_:
        emit_json({"deleted": lesson.id, "title": lesson.title})
    else:
        notice(f"deleted lesson {lesson.id}: {lesson.title}")


@learn.command("link")
@click.argument("from_id")
@click.argument("to_id")
@click.option("--relation", "-r",
              help="Free-form relation, e.g. supersedes, contradicts, example_of (default "
                   "related_to; with --remove: every relation).")
@click.option("--remove", is_flag=True, help="Remove the link(s) from FROM to TO instead.")
@click.option("--yes", "-y", is_flag=True,
              help="With --remove: do not ask first; required when standard input is not a "
                   "terminal (scripts, pipes).")
@json_option
@with_lore
def learn_link(lore: Lore, from_id: str, to_id: str, relation: str | None, remove: bool,
               yes: bool, json_: bool) -> None:
    """Link two lessons with a relation (FROM --relation--> TO), or remove their links.

    Removing asks first on a terminal; in a script or pipe it refuses unless --yes is given.

    \b
    Examples:
      lore learn link 01JD…A 01JD…B --relation supersedes
      lore learn link 01JD…A 01JD…B --remove --relation related_to --yes
    """
    if remove:
        if not yes and not sys.stdin.isatty():
            raise click.UsageError("refusing to remove links without confirmation: standard "
                                   "input is not a terminal, so Lore cannot ask; add --yes")
        which = f"'{relation}' links" if relation else "every link"
        confirm(yes, f"Remove {which} from {from_id} to {to_id}?")
        removed = lore.lessons.unlink(from_id, to_id, relation)
        if json_:
            emit_json({"removed": removed})
        else:
            notice(f"removed {removed} link(s)")
        return
    edge = lore.lessons.link(from_id, to_id, relation or "related_to")
    if json_:
        emit_json(edge.to_dict())
    else:
        notice(f"linked {edge.from_id} -[{edge.relation}]-> {edge.to_id}")


@learn.command("correction")
@click.argument("text", callback=stdin_text)
@click.option("--previous", help="What the agent said or proposed that the user corrected.")
@click.option("--project", help="Project it applies to ('.' = current; default: the current one).")
@click.option("--global", "global_", is_flag=True, help="A rule for every project.")
@click.option("--session-id", help="The session it was said in.")
@click.option("--file", "files", multiple=True, help="A file the exchange touched (repeatable).")
@click.option("--force", is_flag=True,
              help="Learn it even if it does not read as a rule (the user's explicit wish).")
@json_option
@with_lore
def learn_correction(lore: Lore, text: str, previous: str | None, project: str | None,
                     global_: bool, session_id: str | None, files: tuple[str, ...], force: bool,
                     json_: bool) -> None:
    """Record a correction the user made (for agents without Lore's hooks).

    TEXT is the user's words ('-' reads standard input). Lore extracts the rule (what was
    rejected, what is preferred, why), merges it with what it knows — a restatement
    reinforces the known rule, a contradiction is flagged — and scores it. Secrets in the
    text are redacted before anything is stored.

    Thanks, questions, pasted text or a statement teach nothing ("not learned: …", exit
    status 0); a rule that names no tool, file type, command, path or concrete practice is
    kept as a candidate for `lore review`. --force learns and proposes it anyway.

    \b
    Examples:
      lore learn correction "No, don't use Redis, use local file sessions instead" \\
          --previous "I'll add Redis for the session store."
      lore learn correction "always run ruff before committing" --global --json
    """
    body = text
    scope = None if global_ else resolve_project(project or ".")
    outcome = lore.learning.record(body, previous, project=scope, session_id=session_id,
                                    files=list(files), origin="manual", force=force)
    if json_:
        emit_json(outcome.to_dict())
        return
    lesson = outcome.lesson
    if lesson is None:
        notice(outcome.notice())
        return
    click.echo(lesson.id)
    verb = {"created": "learned", "reinforced": "reinforced", "conflict": "learned (conflicts with "
            f"{', '.join(outcome.related)})", "superseded": f"learned (supersedes "
            f"{', '.join(outcome.related)})", "duplicate": "already known"}.get(outcome.action,
                                                                                outcome.action)
    verb = "learned again (rejected before, stays rejected)" if outcome.action == "recorrection" \
        else verb
    if outcome.notice():  # kept as a candidate, and why
        notice(f"{outcome.notice()} ({lesson.title}, score {lesson.score:.2f}; see `lore review`)")
        return
    notice(f"{verb}: {lesson.title} [{lesson.status}, score {lesson.score:.2f}]")


def _since(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    from datetime import datetime

    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"'{value}' is not a date (YYYY-MM-DD or an ISO time)") from None
    return value


@learn.command("judge")
@click.option("--session", "session_id", help="Only the messages of this session.")
@click.option("--since", callback=_since, help="Only messages captured on or after this date "
              "(YYYY-MM-DD or an ISO time).")
@click.option("--dry-run", is_flag=True, help="Print each request exactly as it would be sent, "
              "and send nothing.")
@json_option
@with_lore
def learn_judge(lore: Lore, session_id: str | None, since: str | None, dry_run: bool,
                json_: bool) -> None:
    """Have the language model judge the messages that wait for it.

    With a model configured (llm.provider), the detector passes the messages that may
    teach something to the judge, which decides the label, whether it lasts and the rule
    line; the worker asks it when a session ends. Messages a provider error or a spent
    budget left waiting are judged here (`lore worker status` counts them). One request
    per session holds its messages, each with the agent turn it answers, secrets
    redacted and cut to llm.max_input_tokens.

    \b
    Examples:
      lore learn judge --dry-run
      lore learn judge --since 2026-01-01 --json
      lore learn judge --session 5f1c…
    """
    from lore.errors import ProviderError

    # Asked by a person: the messages the judge left unanswered too often are asked about too.
    report = lore.learning.judge_waiting(session_id=session_id, since=since, dry_run=dry_run,
                                        given_up=True)
    if dry_run:
        if json_:
            emit_json({"requests": report.requests})
        elif report.requests:
            click.echo("\n".join(report.requests), nl=False)
        else:
            notice("nothing waits for the judge")
        return
    if json_ and report.error is None:
        emit_json(report.to_dict())
        return
    if report.error is not None:
        raise ProviderError(f"the judge is unavailable ({report.error}); {report.waiting} messages "
                            "keep waiting")
    if not report.messages and not report.waiting:
        notice("nothing waits for the judge")
        return
    actions = ", ".join(f"{n} {a}" for a, n in sorted(report.to_dict()["actions"].items()))
    notice(f"judged {report.messages} messages in {report.sessions} sessions ({actions or 'nothing'})"
           + (f"; {report.invented} dropped for a quote not in the message" if report.invented else "")
           + (f"; {report.waiting} still waiting" if report.waiting else ""))
