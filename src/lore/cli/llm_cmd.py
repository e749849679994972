"""`lore llm`: check the configured language model and see today's use of it."""

from __future__ import annotations

import click

from lore.cli.common import LoreGroup, emit_json, json_option, settings, table
from lore.normalize import clip_words


@click.group("llm", cls=LoreGroup)
def llm_group() -> None:
    """The optional language model: check the setup, see today's use (docs/llm.md).

    \b
    Example:
      lore llm check
    """


@llm_group.command("check")
@json_option
@click.pass_context
def llm_check(ctx: click.Context, json_: bool) -> None:
    """Make one tiny call to the configured model; print provider, model, latency and tokens.

    \b
    Example:
      ANTHROPIC_API_KEY=... lore llm check
    """
    from lore.llm import Request, open_provider

    s = settings(ctx)
    provider = open_provider(s.config.llm, s.home)
    request = Request.ask("Reply with the single word: ok", max_tokens=16, purpose="check")
    done = provider.complete(request)
    reply = clip_words(done.text, 60)
    if json_:
        emit_json({"provider": provider.name, "model": done.model, "latency_s": round(done.latency_s, 3),
                   "input_tokens": done.input_tokens, "output_tokens": done.output_tokens,
                   "estimated": done.estimated, "attempts": done.attempts, "reply": reply})
        return
    guess = " (estimated)" if done.estimated else ""
    click.echo(f"provider {provider.name}  model {done.model}  latency {done.latency_s:.2f} s  "
               f"tokens {done.input_tokens} in / {done.output_tokens} out{guess}  reply {reply!r}")


@llm_group.command("usage")
@json_option
@click.pass_context
def llm_usage(ctx: click.Context, json_: bool) -> None:
    """Today's (UTC) calls, tokens and cost per provider, from $LORE_HOME/logs/llm.jsonl.

    \b
    Example:
      lore llm usage --json
    """
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
