"""`lore llm`: check the configured language model and see today's use of it."""

from __future__ import annotations

from typing import Any

import click

from lore.cli.common import LoreCommand, emit_json, json_option, settings, table
from lore.normalize import clip_words


@click.command("llm", cls=LoreCommand)
@click.argument("action", type=click.Choice(["check", "usage"]))
@json_option
@click.pass_context
def llm_group(ctx: click.Context, action: str, json_: bool) -> None:
    """The optional language model (docs/llm.md): check the setup, or see today's use.

    check makes one tiny call to the configured model and prints provider, model, latency and
    tokens. With the judge on (learning.judge, the default), it is also asked about one plain
    correction and must keep it with a rule line quoting the message; a reply it cannot read
    or a wrong verdict fails the check. usage lists today's (UTC) calls, tokens and cost per
    provider, from $LORE_HOME/logs/llm.jsonl.

    \b
    Examples:
      ANTHROPIC_API_KEY=... lore llm check
      lore llm usage --json
    """
    if action == "usage":
        _usage(ctx, json_)
    else:
        _check(ctx, json_)


def _check(ctx: click.Context, json_: bool) -> None:
    from lore.llm import Request, open_provider

    s = settings(ctx)
    provider = open_provider(s.config.llm, s.home)
    request = Request.ask("Reply with the single word: ok", max_tokens=16, purpose="check")
    done = provider.complete(request)
    reply = clip_words(done.text, 60)
    judged = _judge_probe(provider) if s.config.learning.judge else None
    if json_:
        emit_json({"provider": provider.name, "model": done.model, "latency_s": round(done.latency_s, 3),
                   "input_tokens": done.input_tokens, "output_tokens": done.output_tokens,
                   "estimated": done.estimated, "attempts": done.attempts, "reply": reply,
                   "judge": judged})
        return
    guess = " (estimated)" if done.estimated else ""
    click.echo(f"provider {provider.name}  model {done.model}  latency {done.latency_s:.2f} s  "
               f"tokens {done.input_tokens} in / {done.output_tokens} out{guess}  reply {reply!r}")
    if judged is not None:
        click.echo(f"judge: {judged['verdict']}  ({judged['input_tokens']} tokens in"
                   f"{' (estimated)' if judged['estimated'] else ''} for a prompt of about "
                   f"{judged['prompt_tokens']}, {judged['output_tokens']} out, "
                   f"{judged['latency_s']:.2f} s)")


# One exchange every judge must get right: a correction naming the alternative and a reason.
PROBE_TURN = "I added a Redis container to docker-compose for the session store."
PROBE_MESSAGE = "no, don't use Redis for sessions, use local files: we deploy on a single box"


def _judge_probe(provider: Any) -> dict[str, Any]:
    """Ask the judge about one known correction; a reply it cannot read or a wrong verdict is
    an error (the judge would decide badly on real sessions too)."""
    import time

    from lore.errors import UnusableReply
    from lore.llm.base import estimate_tokens
    from lore.llm.judge import Candidate, batches, parse

    [batch] = batches([Candidate("probe", PROBE_MESSAGE, PROBE_TURN)])
    started = time.monotonic()
    done = provider.complete(batch.request)
    took = time.monotonic() - started
    try:
        got = parse(done.text, batch)
    except ValueError as exc:
        raise UnusableReply(f"{provider.name}: the judge's reply could not be read ({exc}); try a "
                            "larger model (llm.model)") from None
    if got.invented or not got.verdicts or not got.verdicts[0].positive or not got.verdicts[0].rule:
        why = ("it quoted words that are not in the message" if got.invented else
               "it did not keep the correction or wrote no rule")
        raise UnusableReply(f"{provider.name}: the judge got a plain correction wrong ({why}); try a "
                            "larger model (llm.model)")
    v = got.verdicts[0]
    # The tokens the provider counted for the request it sent (what is billed), beside Lore's
    # estimate of the prompt it built: a provider that adds much of its own shows here.
    return {"verdict": f"{v.label}, durable: {v.rule!r}", "rule": v.rule, "label": v.label,
            "input_tokens": done.input_tokens, "prompt_tokens": batch.input_tokens,
            "estimated": done.estimated,
            "output_tokens": done.output_tokens or estimate_tokens(done.text),
            "latency_s": round(took, 3)}


def _usage(ctx: click.Context, json_: bool) -> None:
    from lore.llm import usage_today

    s = settings(ctx)
    rows = sorted(usage_today(s.home).values(), key=lambda u: u.provider)
    budget = s.config.llm.daily_token_budget
    if json_:
        emit_json({"daily_token_budget": budget, "daily_cost_budget": s.config.llm.daily_cost_budget,
                   "providers": [{"provider": u.provider, "calls": u.calls, "failures": u.failures,
                                  "input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                                  "cost_usd": round(u.cost_usd, 6)} for u in rows]})
        return
    if not rows:
        click.echo("no language-model calls today", err=True)
        return
    table(None, ["provider", "calls", "failures", "tokens in", "tokens out", "cost $"],
          [[u.provider, u.calls, u.failures, u.input_tokens, u.output_tokens, f"{u.cost_usd:.4f}"]
           for u in rows])
    if budget is not None:
        click.echo(f"# daily token budget per provider: {budget:,}", err=True)
