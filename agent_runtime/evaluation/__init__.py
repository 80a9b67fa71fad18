"""Evaluate policies on SimPhone tasks: episodes, the harness, and reports.

>>> from agent_runtime.evaluation import evaluate, oracle_policy
>>> report = evaluate(oracle_policy, tasks="Clock*", split="test", episodes=3)  # doctest: +SKIP
>>> report.success_rate, report.ci95  # doctest: +SKIP

Graph kinds are compared on the same instances with :func:`compare_graphs`.
"""

from agent_runtime.evaluation.compare import GraphComparison, compare_graphs
from agent_runtime.evaluation.episode import (
    AgentPolicy,
    ExpertPolicy,
    Outcome,
    Policy,
    oracle_policy,
    play,
    policy_name,
    tree_observation,
)
from agent_runtime.evaluation.harness import SUITES, evaluate, executor_for, run_episode
from agent_runtime.evaluation.report import EpisodeResult, EvalReport, Stats, TaskStats, wilson_interval

__all__ = [
    "SUITES",
    "AgentPolicy",
    "EpisodeResult",
    "EvalReport",
    "ExpertPolicy",
    "GraphComparison",
    "Outcome",
    "Policy",
    "Stats",
    "TaskStats",
    "compare_graphs",
    "evaluate",
    "executor_for",
    "oracle_policy",
    "play",
    "policy_name",
    "run_episode",
    "tree_observation",
    "wilson_interval",
]
