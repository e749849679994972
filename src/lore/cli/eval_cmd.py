"""`lore eval`: retrieval quality on public benchmarks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from lore.cli.common import LoreGroup, emit_json, json_option, progress_bar, settings, table


def _tunings(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, Any]:
    """--tune KEY=VALUE: a tuning constant varied for this measurement (checked when used)."""
    import yaml

    out: dict[str, Any] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"'{item}' is not KEY=VALUE, e.g. search.rrf_k=30", ctx, param)
        try:
            out[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError:
            out[key.strip()] = value
    return out


@click.group("eval", cls=LoreGroup)
@click.option("--tune", multiple=True, callback=_tunings, metavar="KEY=VALUE",
              help="Vary a tuning constant for this measurement (docs/configuration.md"
                   "#tuning-constants), e.g. conversations.session_weight=0; repeatable.")
@click.pass_context
def eval_group(ctx: click.Context, tune: dict[str, Any]) -> None:
    """Measure retrieval and correction detection on labelled data.

    \b
    Examples:
      lore eval locomo locomo10.json
      lore eval --tune conversations.session_weight=0 locomo locomo10.json
      lore eval corrections labelled.jsonl
    """
    ctx.ensure_object(dict)
    ctx.find_root().obj["tuning"] = tune


@eval_group.command("locomo")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--as-of-last-session", is_flag=True,
              help="Age memories from each conversation's last session instead of now.")
@click.option("--rerank", is_flag=True,
              help="Also have the configured language model re-order each search (one call a "
                   "question) and report it beside the default.")
@click.option("--rerank-prompts", type=click.Path(path_type=Path, file_okay=False),
              help="Write every re-ranking request, one file per question, into this new or "
                   "empty folder, and stop.")
@click.option("--rerank-replies", type=click.Path(path_type=Path, file_okay=False),
              help="Read the reply to each re-ranking request from this folder (same file "
                   "names) and score the re-ordered search against the default.")
@json_option
@click.pass_context
def eval_locomo(ctx: click.Context, file: Path, as_of_last_session: bool, rerank: bool,
                rerank_prompts: Path | None, rerank_replies: Path | None, json_: bool) -> None:
    """Evidence recall@5 and @10 on a LoCoMo file, with keyword-only and vector-only baselines.

    Each conversation is indexed as conversation memory, one turn per unit, in a
    temporary database; your own database is not touched.

    \b
    Examples:
      lore eval locomo data/locomo10.json --json
      lore eval locomo data/locomo10.json --rerank
      lore eval locomo data/locomo10.json --rerank-prompts prompts/
      lore eval locomo data/locomo10.json --rerank-replies replies/

    --rerank-prompts writes the request the re-ranking model would be sent for each
    question (NNNN-<conversation>.md: a SYSTEM part, then a USER part; nothing in it says
    which turns are evidence). Have any model answer each file on its own and save the
    reply as replies/<same name>.md; --rerank-replies then scores both orders.
    """
    from lore.measure.locomo import evaluate, rerank_figures, write_rerank_prompts

    if sum((rerank, rerank_prompts is not None, rerank_replies is not None)) > 1:
        raise click.UsageError("give one of --rerank, --rerank-prompts and --rerank-replies")
    embedder = (ctx.find_root().obj or {}).get("embedder")
    bar, update = progress_bar("questions")
    if rerank_prompts is not None:
        with bar:
            written = write_rerank_prompts(file, settings(ctx), rerank_prompts, embedder, update)
        if json_:
            emit_json(written)
            return
        click.echo(f"wrote {written['requests']} requests (about {written['input_tokens']} input "
                   f"tokens) to {written['folder']}; save the reply to NAME.md as NAME.md in the "
                   "replies folder")
        return
    if rerank_replies is not None:
        with bar:
            got = rerank_figures(file, settings(ctx), rerank_replies, embedder, update)
        if json_:
            emit_json(got)
            return
        d, r = got["default"], got["reranked"]
        table(f"LoCoMo evidence recall, {got['questions']} questions: the search and its "
              "re-ordering", ["run", "@5", "@10"],
              [["default (hybrid)", d["recall@5"], d["recall@10"]],
               [f"re-ranked (the best {got['rerank_candidates']})", r["recall@5"], r["recall@10"]]])
        _categories(d, r)
        t = got["tokens"]
        click.echo(f"replies read {got['replies_read']}, missing {len(got['replies_missing'])}, "
                   f"unreadable {len(got['replies_unreadable'])}; tokens per request "
                   f"({t['approximation']}): input {t['input_per_request']}, output "
                   f"{t['output_per_request']}")
        return
    with bar:
        result = evaluate(file, settings(ctx), embedder, update, as_of_last_session, rerank)
    if json_:
        emit_json(result)
        return
    rows = [["default (hybrid)", result["recall@5"], result["recall@10"]]]
    if rerank:
        r = result["reranked"]
        rows.append([f"re-ranked by the model ({r['failed']} calls failed)", r["recall@5"],
                     r["recall@10"]])
    for name, b in result["baselines"].items():
        rows.append([f"{name} only", b["recall@5"], b["recall@10"]])
    table(f"LoCoMo evidence recall, {result['questions']} questions", ["run", "@5", "@10"], rows)
    _categories(result, result.get("reranked"))
    table(None, ["conversation", "questions", "@5", "@10"],
          [[c, v["questions"], v["recall@5"], v["recall@10"]]
           for c, v in result["conversations"].items()])


def _categories(default: dict[str, Any], reranked: dict[str, Any] | None) -> None:
    head = ["category", "questions", "@5", "@10"] + (["re-ranked @5", "@10"] if reranked else [])
    rows = []
    for c, v in default["categories"].items():
        row = [c, v["questions"], v["recall@5"], v["recall@10"]]
        if reranked:
            rv = reranked["categories"].get(c, {})
            row += [rv.get("recall@5", ""), rv.get("recall@10", "")]
        rows.append(row)
    table(None, head, rows)


@eval_group.command("corrections")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--show-errors", is_flag=True, help="List the misclassified messages.")
@click.option("--detector", type=click.Choice(["full", "prefilter"]), default="full",
              show_default=True, help="The worker's detector or the hooks' pre-filter.")
@click.option("--threshold", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              help="Probability above which a message counts (default: the trained one).")
@click.option("--judge-prompts", type=click.Path(path_type=Path, file_okay=False),
              help="Write every request the judge would be sent, one file per request, into this "
                   "new or empty folder, and stop.")
@click.option("--judge-replies", type=click.Path(path_type=Path, file_okay=False),
              help="Read the judge's reply to each request from this folder (same file names) and "
                   "score detector + judge against the detector alone.")
@json_option
def eval_corrections(files: tuple[Path, ...], show_errors: bool, detector: str, threshold: float | None,
                     judge_prompts: Path | None, judge_replies: Path | None, json_: bool) -> None:
    """Precision, recall and F1 of correction detection on labelled JSON Lines files.

    Several files are scored together. Each line: {"text": ..., "label":
    "correction|preference|none", "durable": bool, "prev_agent": "the agent's turn before,
    or null"}. Positive = correction or preference.

    \b
    Examples:
      lore eval corrections corrections-dev.jsonl --show-errors
      lore eval corrections corrections-dev.jsonl --detector prefilter --json
      lore eval corrections first.jsonl second.jsonl
      lore eval corrections labelled.jsonl --judge-prompts prompts/
      lore eval corrections labelled.jsonl --judge-replies replies/

    With --judge-prompts, each session's messages that pass the detector's filter
    threshold are written as the judge's request, exactly as Lore would send it
    (NNN-<session>.md: a SYSTEM part, then a USER part). Have any model answer each
    file on its own and save the reply as replies/<same name>.md; --judge-replies
    then reports both figures. Tokens are estimated at 4 characters a token.
    """
    from lore.measure.corrections import evaluate, judge_figures, write_judge_prompts

    if judge_prompts is not None and judge_replies is not None:
        raise click.UsageError("give --judge-prompts or --judge-replies, not both")
    if judge_prompts is not None:
        written = write_judge_prompts(list(files), judge_prompts)
        if json_:
            emit_json(written)
            return
        click.echo(f"wrote {written['requests']} requests ({written['messages_judged']} of "
                   f"{written['messages']} messages, about {written['input_tokens']} input tokens) "
                   f"to {written['folder']}; save the reply to NAME.md as NAME.md in the replies folder")
        return
    if judge_replies is not None:
        got = judge_figures(list(files), judge_replies)
        if not show_errors:
            got["error_count"] = len(got.pop("errors"))
            got.pop("rules")
        if json_:
            emit_json(got)
            return
        d, j = got["detector"], got["detector_and_judge"]
        table(f"Correction detection, {got['messages']} messages: detector alone and with the judge",
              ["", "P", "R", "F1", "durable P", "durable R"],
              [["detector", d["precision"], d["recall"], d["f1"], d["durable"]["precision"],
                d["durable"]["recall"]],
               ["detector + judge", j["precision"], j["recall"], j["f1"], j["durable"]["precision"],
                j["durable"]["recall"]]])
        t = got["tokens"]
        click.echo(f"judged {got['messages_judged']} messages (filter threshold "
                   f"{got['filter_threshold']}, {got['positives_reaching_the_judge']} of the positives) "
                   f"in {got['requests']} requests; replies read {got['replies_read']}, missing "
                   f"{len(got['replies_missing'])}, unreadable {len(got['replies_unreadable'])}; items "
                   f"dropped for an invented quote {got['items_with_invented_quotes']}, messages "
                   f"unanswered {got['messages_unanswered']}")
        click.echo(f"tokens per judged message ({t['approximation']}): input "
                   f"{t['input_per_judged_message']}, output {t['output_per_judged_message']}")
        for e in got.get("errors", []):
            click.echo(f"[{e['label']} judged {e['judged']}] {e['text']}")
        for r in got.get("rules", []):
            click.echo(f"rule: {r['rule']}  <- {r['text'][:120]}")
        return

    result = evaluate(list(files), detector, threshold)
    if not show_errors:
        errors = result.pop("errors")
        result["error_count"] = len(errors)
    if json_:
        emit_json(result)
        return
    table(f"Correction detection, {result['messages']} messages ({result['detector']})",
          ["", "precision", "recall", "F1"],
          [["correction + preference", result["precision"], result["recall"], result["f1"]],
           ["durable", result["durable"]["precision"], result["durable"]["recall"],
            result["durable"]["f1"]]])
    table(None, ["true label -> predicted", "messages"], list(result["confusion"].items()))
    pre = result["prefilter"]
    click.echo(f"pre-filter: recall {pre['recall']}, passes {pre['negatives_passed']} of the "
               f"negatives; set aside: " + (", ".join(f"{k} {v}" for k, v in pre["set_aside"].items())
                                            or "nothing"))
    for e in result.get("errors", []):
        why = f" ({e['reason']})" if e.get("reason") else ""
        click.echo(f"[{e['label']} predicted {e['predicted']} p={e['probability']}{why}] "
                   f"{e['text']}")


@eval_group.command("history")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--no-review", is_flag=True,
              help="No simulated reviewer: proposals wait, nothing is approved or applied.")
@click.option("--judge-replies", type=click.Path(path_type=Path, file_okay=False),
              help="Judge each session's messages at its end, the judge's replies read from "
                   "this folder (NAME.md answers the request NAME.md).")
@click.option("--judge-prompts", type=click.Path(path_type=Path, file_okay=False),
              help="Write every request the judge is sent into this new or empty folder.")
@json_option
@click.pass_context
def eval_history(ctx: click.Context, files: tuple[Path, ...], no_review: bool,
                 judge_replies: Path | None, judge_prompts: Path | None, json_: bool) -> None:
    """Replay labelled histories in order and report the lessons developers repeated.

    Each repository is a project; its sessions are replayed in the order they were
    written, each message through the product's own path (capture, detector, judge,
    merge, scores, review queue). Between sessions a simulated reviewer approves a
    proposal whose evidence holds a message labelled durable, rejects the rest, and
    `lore apply` writes the approved rules. At every later occurrence of a
    `repeat_group`, the report says whether a rule for it was in front of the agent
    (CLAUDE.md or the session's context), only proposed, a candidate, or absent.
    The format is in docs/json.md; a temporary home is used, yours is not touched.

    \b
    Examples:
      lore eval history histories.jsonl
      lore eval history histories.jsonl --judge-prompts prompts/
      lore eval history histories.jsonl --judge-replies replies/ --json
    """
    from lore.measure.history import evaluate

    embedder = (ctx.find_root().obj or {}).get("embedder")
    got = evaluate(list(files), settings(ctx), embedder, reviewer=not no_review,
                   judge_replies=judge_replies, judge_prompts=judge_prompts)
    if json_:
        emit_json(got)
        return
    rows = []
    for name, part in (("in a later session", got["later_session"]),
                       ("  of a lesson taught before", got["later_session_taught"]),
                       ("within one session", got["same_session"]),
                       ("  of a lesson taught before", got["same_session_taught"])):
        rows.append([name, part["repeats"], part["front"], part["proposed"], part["candidate"],
                     part["absent"]])
    table(f"Repeated lessons: {got['groups']} groups in {got['repositories']} repositories, "
          f"{got['sessions']} sessions", ["repeat", "repeats", "in front", "only proposed",
                                          "candidate", "absent"], rows)
    r, k = got["review"], got["lessons"]
    click.echo(f"review: {r['proposals']} proposals ({r['proposals_per_session']} a session), "
               f"{r['approved']} approved, {r['rejected']} rejected (kept {r['precision']})")
    click.echo(f"lasting lessons: {k['learned']} of {k['lasting']} proposed or approved "
               f"({k['recall']}), {k['candidate_only']} only as candidates")
    j = got.get("judge")
    if j:
        click.echo(f"judge: {j['requests']} requests, {j['missing_replies']} without a reply"
                   + (f" (first: {', '.join(j['first_missing'])})" if j["first_missing"] else "")
                   + (f"; requests written to {j['prompts']}" if j["prompts"] else ""))
