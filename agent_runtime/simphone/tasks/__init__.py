"""SimPhone tasks in android_world's shape, their expert (oracle) policies, and the split.

Templates live one module per app, listed by :mod:`.registry`. Use
:func:`registry` for the sorted ``name -> class`` map, :func:`make_task` for the instance of a
template at a seed, :func:`select` for name patterns and :func:`task_instances` /
:func:`split_of` for the train/test split (rule in :mod:`.registry`).
"""

from agent_runtime.simphone.tasks.base import (
    STEPS_PER_COMPLEXITY,
    QuestionTask,
    Task,
    answers_match,
    normalise_answer,
)
from agent_runtime.simphone.tasks.oracle import OracleError, OraclePolicy, OracleUI
from agent_runtime.simphone.tasks.registry import (
    SPLITS,
    Split,
    make_task,
    registry,
    select,
    split_of,
    task_instances,
)

__all__ = [
    "SPLITS",
    "STEPS_PER_COMPLEXITY",
    "OracleError",
    "OraclePolicy",
    "OracleUI",
    "QuestionTask",
    "Split",
    "Task",
    "answers_match",
    "make_task",
    "normalise_answer",
    "registry",
    "select",
    "split_of",
    "task_instances",
]
