"""Cost and latency per role: what a run spent, and the budgets that end a run once spent.

A trace already holds everything needed: every call's role, token usage and latency
(``calls.jsonl``), every step's timing per part (``steps.jsonl``) and every role's model config,
prices included (``run.json``'s ``models``). :func:`run_costs` folds them into a
:class:`RunCosts` — per role: calls, tokens, total latency, the time the role held up the steps'
critical paths and its share of them, and money when the role's model has prices — which
``run``'s summary, ``traces show``, the viewer and ``eval``'s report all show.

A role's *critical time* is the step timing part named like the role (``manager``, ``worker``,
``high``, ``low``, ``single``, ``reflector``); the Notetaker runs beside the Reflector, so only
the part of its call that outlasted the Reflector (``notetaker_wait``) is on the path. Together
they are the steps' ``model_critical``; the rest of ``critical_path`` is the device and overhead.
The Manager's first plan and RAG come before any step and are on no step's path.

:func:`spent_budget` is the live side: the graphs ask it between steps whether a ``[budget]``
(tokens, wall time, money) is spent, from this session's totals in the run context.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, Field, computed_field

from agent_runtime.config import CURRENCY, ModelConfig, RuntimeConfig
from agent_runtime.traces import LoadedRun, StepTimings, Usage

if TYPE_CHECKING:
    from rich.table import Table

#: role -> the step timing part that is that role's time on the step's critical path.
CRITICAL_PARTS: dict[str, str] = {
    "manager": "manager",
    "worker": "worker",
    "reflector": "reflector",
    "notetaker": "notetaker_wait",
    "high": "high",
    "low": "low",
    "single": "single",
}


class RoleCost(BaseModel):
    """What one role (or the whole run, as ``RunCosts.total``) spent."""

    calls: int = Field(0, description="model calls, re-asks included")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = Field(0.0, description="summed latency of the calls")
    critical_ms: float = Field(0.0, description="time on the steps' critical paths")
    critical_share: float | None = Field(
        None, description="critical_ms / the steps' summed critical paths (None: no step recorded one)"
    )
    money: float | None = Field(None, description=f"{CURRENCY}; None when the model has no prices")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class RunCosts(BaseModel):
    """Per-role and whole-run totals of one run, or of several (:meth:`combine`)."""

    currency: str = CURRENCY
    roles: dict[str, RoleCost] = Field(default_factory=dict)
    total: RoleCost = RoleCost()
    critical_path_ms: float = Field(0.0, description="the steps' critical paths, summed")
    unpriced: list[str] = Field(
        default_factory=list, description="roles that made calls without prices: not in total.money"
    )

    @property
    def priced(self) -> bool:
        """Whether any role has a price (then money is shown)."""
        return self.total.money is not None

    @classmethod
    def combine(cls, runs: Iterable[RunCosts]) -> RunCosts:
        """The totals over several runs (an evaluation's episodes); shares are recomputed from
        the summed times, so a long episode weighs more than a short one."""
        sums: dict[str, dict[str, Any]] = {}
        path_ms = 0.0
        unpriced: set[str] = set()
        for run in runs:
            path_ms += run.critical_path_ms
            unpriced.update(run.unpriced)
            for role, cost in run.roles.items():
                acc = sums.setdefault(role, _empty())
                _add(acc, cost.calls, cost.prompt_tokens, cost.completion_tokens, cost.latency_ms)
                acc["critical_ms"] += cost.critical_ms
                if cost.money is not None:
                    acc["money"] = (acc["money"] or 0.0) + cost.money
        return _build(sums, path_ms, sorted(unpriced))


def _empty() -> dict[str, Any]:
    return {
        "calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "latency_ms": 0.0,
        "critical_ms": 0.0,
        "money": None,
    }


def _add(acc: dict[str, Any], calls: int, prompt: int, completion: int, latency_ms: float) -> None:
    acc["calls"] += calls
    acc["prompt_tokens"] += prompt
    acc["completion_tokens"] += completion
    acc["latency_ms"] += latency_ms


def _share(critical_ms: float, path_ms: float) -> float | None:
    return round(critical_ms / path_ms, 4) if path_ms > 0 else None


def _build(sums: dict[str, dict[str, Any]], path_ms: float, unpriced: list[str]) -> RunCosts:
    roles = {
        role: RoleCost(**acc, critical_share=_share(acc["critical_ms"], path_ms))
        for role, acc in sums.items()
    }
    total = _empty()
    for cost in roles.values():
        _add(total, cost.calls, cost.prompt_tokens, cost.completion_tokens, cost.latency_ms)
        total["critical_ms"] += cost.critical_ms
        if cost.money is not None:
            total["money"] = (total["money"] or 0.0) + cost.money
    return RunCosts(
        roles=roles,
        total=RoleCost(**total, critical_share=_share(total["critical_ms"], path_ms)),
        critical_path_ms=path_ms,
        unpriced=unpriced,
    )


def money_of(usage: Usage, price_input: float | None, price_output: float | None) -> float | None:
    """What ``usage`` costs at prices per million tokens (None: not priced).

    >>> money_of(Usage(prompt_tokens=2_000_000, completion_tokens=500_000), 0.4, 1.6)
    1.6
    """
    if price_input is None or price_output is None:
        return None
    return (usage.prompt_tokens * price_input + usage.completion_tokens * price_output) / 1_000_000


def _prices(model: Mapping[str, Any]) -> tuple[float | None, float | None]:
    return model.get("price_input_per_mtok"), model.get("price_output_per_mtok")


def run_costs(run: LoadedRun) -> RunCosts:
    """Per-role and whole-run totals of a loaded run (see the module docstring)."""
    sums: dict[str, dict[str, Any]] = {}
    for call in run.calls:
        _add(sums.setdefault(call.role, _empty()), 1, *_usage(call.usage), call.latency_ms)
    path_ms = 0.0
    for step in run.steps:
        timings = StepTimings.from_ms(step.timings_ms)
        path_ms += timings.ms("critical_path")
        for role, part in CRITICAL_PARTS.items():
            if getattr(timings, part) is not None:
                sums.setdefault(role, _empty())["critical_ms"] += timings.ms(part)
    unpriced = []
    for role, acc in sums.items():
        tokens = Usage(prompt_tokens=acc["prompt_tokens"], completion_tokens=acc["completion_tokens"])
        acc["money"] = money_of(tokens, *_prices(run.run.models.get(role, {})))
        if acc["money"] is None and acc["calls"]:
            unpriced.append(role)
    return _build(sums, path_ms, sorted(unpriced))


def _usage(usage: Usage) -> tuple[int, int]:
    return usage.prompt_tokens, usage.completion_tokens


def costs_of(run_dirs: Iterable[Path | str]) -> RunCosts:
    """The combined totals of the runs in ``run_dirs`` (an evaluation's episodes)."""
    from agent_runtime.traces import load_run

    return RunCosts.combine(run_costs(load_run(d)) for d in run_dirs)


class Session(Protocol):
    """What :func:`spent_budget` reads of the session playing a run (the graphs' run context,
    :class:`~agent_runtime.graphs.context.RunContext`, which imports this module: hence a
    protocol, not that class)."""

    config: RuntimeConfig
    #: When this session started (``time.monotonic``).
    started: float

    def totals(self) -> tuple[Usage, dict[str, float]]: ...

    def role_totals(self) -> dict[str, Usage]: ...

    def model(self, role: str) -> ModelConfig: ...


def spent_budget(ctx: Session) -> str | None:
    """The reason the run must end now because a ``[budget]`` is spent, or None.

    Counts this session (a resumed run: since the resume): its tokens, wall time since it
    started, and its tokens per role at each role's prices.
    """
    budget = ctx.config.budget
    if budget.tokens is None and budget.time_s is None and budget.money is None:
        return None
    if budget.tokens is not None:
        used = ctx.totals()[0].total_tokens
        if used >= budget.tokens:
            return f"token budget of {budget.tokens} spent ({used} tokens)"
    if budget.time_s is not None:
        elapsed = time.monotonic() - ctx.started
        if elapsed >= budget.time_s:
            return f"time budget of {budget.time_s:g} s spent ({elapsed:.1f} s)"
    if budget.money is not None:
        money = 0.0
        for role, usage in ctx.role_totals().items():
            cfg = ctx.model(role)
            money += money_of(usage, cfg.price_input_per_mtok, cfg.price_output_per_mtok) or 0.0
        if money >= budget.money:
            return f"money budget of {format_money(budget.money)} spent ({format_money(money)})"
    return None


def format_money(amount: float, currency: str = CURRENCY) -> str:
    """An amount to the cent, or to a hundredth of a cent below one cent.

    >>> format_money(0.5), format_money(0.00123), format_money(12.345)
    ('0.50 USD', '0.0012 USD', '12.35 USD')
    """
    digits = 4 if 0 < abs(amount) < 0.01 else 2
    return f"{amount:.{digits}f} {currency}"


def _seconds(ms: float) -> str:
    return f"{ms / 1000:.1f} s"


def costs_table(costs: RunCosts, title: str = "cost and latency per role") -> Table:
    """The per-role table ``run``, ``traces show`` and ``eval`` print (money only when priced)."""
    from rich.table import Table

    table = Table(title=title)
    columns = ["role", "calls", "tokens in", "tokens out", "latency", "critical path", "share"]
    for col in columns + (["money"] if costs.priced else []):
        table.add_column(col, justify="left" if col == "role" else "right")
    for name, cost in [*costs.roles.items(), ("total", costs.total)]:
        row = [
            f"[bold]{name}[/]" if name == "total" else name,
            str(cost.calls),
            str(cost.prompt_tokens),
            str(cost.completion_tokens),
            _seconds(cost.latency_ms),
            _seconds(cost.critical_ms),
            f"{100 * cost.critical_share:.0f}%" if cost.critical_share is not None else "-",
        ]
        if costs.priced:
            row.append(format_money(cost.money, costs.currency) if cost.money is not None else "-")
        table.add_row(*row)
    if costs.priced and costs.unpriced:
        table.caption = f"no prices for {', '.join(costs.unpriced)}: not in the total"
    return table
