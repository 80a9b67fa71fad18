"""SimPhone tasks in android_world's shape, their expert (oracle) policies, and the split.

Templates live one module per app; importing this package registers them all. Use
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
    register,
    registry,
    select,
    split_of,
    task_instances,
)

# Importing the template modules registers their tasks.
from agent_runtime.simphone.tasks import settings as _settings  # noqa: E402, F401  isort: skip
from agent_runtime.simphone.tasks import clock as _clock  # noqa: E402, F401  isort: skip
from agent_runtime.simphone.tasks import contacts as _contacts  # noqa: E402, F401  isort: skip
from agent_runtime.simphone.tasks import messages as _messages  # noqa: E402, F401  isort: skip
from agent_runtime.simphone.tasks import calendar as _calendar  # noqa: E402, F401  isort: skip
from agent_runtime.simphone.tasks import browser as _browser  # noqa: E402, F401  isort: skip
from agent_runtime.simphone.tasks import notes as _notes  # noqa: E402, F401  isort: skip
from agent_runtime.simphone.tasks import expenses as _expenses  # noqa: E402, F401  isort: skip
from agent_runtime.simphone.tasks import shop as _shop  # noqa: E402, F401  isort: skip
from agent_runtime.simphone.tasks import files as _files  # noqa: E402, F401  isort: skip
from agent_runtime.simphone.tasks import gallery as _gallery  # noqa: E402, F401  isort: skip
from agent_runtime.simphone.tasks import music as _music  # noqa: E402, F401  isort: skip
from agent_runtime.simphone.tasks import recorder as _recorder  # noqa: E402, F401  isort: skip
from agent_runtime.simphone.tasks import dialer as _dialer  # noqa: E402, F401  isort: skip
from agent_runtime.simphone.tasks import mail as _mail  # noqa: E402, F401  isort: skip
from agent_runtime.simphone.tasks import maps as _maps  # noqa: E402, F401  isort: skip
from agent_runtime.simphone.tasks import weather as _weather  # noqa: E402, F401  isort: skip
from agent_runtime.simphone.tasks import crossapp as _crossapp  # noqa: E402, F401  isort: skip

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
    "register",
    "registry",
    "select",
    "split_of",
    "task_instances",
]
