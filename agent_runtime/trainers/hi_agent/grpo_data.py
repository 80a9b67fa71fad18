"""Hi-Agent's single-step data from SimPhone's oracle, and its two levels' prompts (Hi-Agent §4.3, App. C).

Each expert step (:func:`~.experts.collect_expert_steps`) becomes one :class:`GRPORecord`, the
paper's reward-dataset record: ``image_path``, ``problem`` (the task goal), ``instruction`` (the
subgoal: a short instruction derived from the expert action and the element it touches, e.g.
``Tap "Wi-Fi".``) and ``solution`` (``action_type``, ``touch_point``/``lift_point`` normalised to
[0, 1], ``typed_text``). SimPhone is deterministic, so the oracle's episode *is* the hierarchical
oracle of the paper: no 72B model is needed to label subgoals.

Two prompt builders (the ``hi_agent`` graph's role templates, :mod:`agent_runtime.roles.hi_agent`,
so a trained adapter plays in that graph unchanged) turn a record into a TRL GRPO row (``prompt``
conversational, ``image`` the screenshot resized to the model's image budget, the record's fields
as further columns for the reward functions): the **high level** (our Manager's place) writes
``<reasoning>…</reasoning><instruction>Instruction: …</instruction>`` from screenshot + task
(Hi-Agent App. C.3's simplified prompt); the **low level** (our Worker's place) writes one action
JSON for screenshot + instruction. ``image_size`` is the extent of the coordinate space the low
level answers in (:class:`~.worker_prompts.PromptSettings`), so its points normalise exactly.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from agent_runtime.errors import TrainingError
from agent_runtime.roles.hi_agent import HISTORY_STEPS, high_text, low_text
from agent_runtime.trainers.data.worker_prompts import PromptSettings

if TYPE_CHECKING:
    from datasets import Dataset

    from agent_runtime.trainers.demos.experts import ExpertSet, ExpertStep

Level = Literal["high", "low"]
RECORDS_FILE = "grpo.jsonl"


class Solution(BaseModel):
    """The oracle action in Hi-Agent's form: normalised points, plus its argument."""

    action_type: str
    touch_point: tuple[float, float] | None = None
    lift_point: tuple[float, float] | None = None
    typed_text: str = Field("", description="text typed/answered/app opened, button pressed, or final status")


class GRPORecord(BaseModel):
    """One single-step sample (Hi-Agent's reward-dataset record plus where it came from)."""

    image_path: str
    problem: str = Field(description="the task goal")
    instruction: str = Field(description="the subgoal for this step (see instruction_by)")
    solution: Solution
    image_size: tuple[float, float] = Field(description="extent of the low level's coordinate space")
    image_seen: tuple[int, int] = Field(description="the size the screenshot is shown at (image budget)")
    previous_actions: list[str] = Field(default_factory=list)
    task_name: str = ""
    seed: int = 0
    step: int = 0
    instruction_by: Literal["oracle", "high_level"] = Field(
        "oracle", description="who wrote the instruction: the oracle, or π_h (eq. 5's low-level data)"
    )


def solution_of(action: dict[str, Any], screen: Sequence[int]) -> Solution:
    """A screen-pixel agent-runtime action → Hi-Agent's solution (points divided by the screen size).

    >>> solution_of({"action": "click", "coordinate": [540, 1200]}, (1080, 2400))
    Solution(action_type='click', touch_point=(0.5, 0.5), lift_point=(0.5, 0.5), typed_text='')
    """
    w, h = float(screen[0]), float(screen[1])

    def norm(point: Sequence[float] | None) -> tuple[float, float] | None:
        return None if point is None else (float(point[0]) / w, float(point[1]) / h)

    touch = norm(action.get("coordinate"))
    lift = norm(action.get("coordinate2")) or touch  # AitW repeats the touch point for taps
    argument = action.get("text") or action.get("button") or action.get("status") or ""
    return Solution(
        action_type=str(action["action"]), touch_point=touch, lift_point=lift, typed_text=str(argument)
    )


def record_of(step: ExpertStep, settings: PromptSettings) -> GRPORecord:
    """The record of one expert step; the subgoal is the step's description (``Tap "Wi-Fi".``)."""
    extent = settings.mapper(step.screen).from_screen(step.screen.width, step.screen.height)
    seen = settings.budget.resized(step.screen)
    return GRPORecord(
        image_path=str((Path(step.root) / step.screen_ref).resolve()),
        problem=step.goal,
        instruction=step.description,
        solution=solution_of(step.action, step.screen),
        image_size=(round(extent[0], 6), round(extent[1], 6)),
        image_seen=(seen.width, seen.height),
        previous_actions=[h.description for h in step.history][-HISTORY_STEPS:],
        task_name=step.task_name,
        seed=step.seed,
        step=step.step,
    )


def build_records(
    out_dir: Path,
    settings: PromptSettings,
    *,
    tasks: str | None,
    split: str,
    episodes: int,
    seed: int,
    on_episode: Callable[[str], None] | None = None,
) -> tuple[list[GRPORecord], ExpertSet]:
    """Play the oracle on the selected SimPhone tasks; one record per step of each successful episode.

    Screenshots and ``experts.jsonl`` go under ``out_dir``, the records to ``out_dir/grpo.jsonl``.
    """
    from agent_runtime.trainers.demos.experts import collect_expert_steps

    experts = collect_expert_steps(
        out_dir, tasks=tasks, split=split, episodes=episodes, seed=seed, on_episode=on_episode
    )
    records = [record_of(s, settings) for s in experts.steps]
    save_records(out_dir / RECORDS_FILE, records)
    return records, experts


def save_records(path: Path, records: Sequence[GRPORecord]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(r.model_dump_json() + "\n" for r in records), encoding="utf-8")


def load_records(path: Path) -> list[GRPORecord]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise TrainingError(f"cannot read the GRPO records {path}: {exc}") from None
    return [GRPORecord.model_validate_json(line) for line in lines if line.strip()]


def high_level_text(record: GRPORecord) -> str:
    """The high level's prompt (the runtime's ``hi_agent`` graph renders the same template)."""
    return high_text(record.problem, record.previous_actions)


def low_level_text(image_size: Sequence[float], instruction: str) -> str:
    """The low level's prompt for ``instruction``, coordinates in the ``image_size`` extent."""
    return low_text(image_size, instruction)


def prompt_text(record: GRPORecord, level: Level) -> str:
    return (
        high_level_text(record) if level == "high" else low_level_text(record.image_size, record.instruction)
    )


def build_dataset(
    records: Sequence[GRPORecord],
    level: Level,
    *,
    max_prompt_tokens: int | None = None,
    tokenizer: Any = None,
) -> tuple[Dataset, int]:
    """TRL GRPO rows for one level, and how many records were dropped for a too long prompt.

    Columns: ``prompt`` (one user message; TRL puts the ``image`` before its text), ``image``,
    and ``problem``, ``instruction``, ``solution`` (JSON), ``image_size``, ``image_path`` for the
    reward functions. With ``tokenizer``, rows whose prompt text exceeds ``max_prompt_tokens``
    tokens are dropped (image tokens are not counted: they are never truncated).
    """
    from datasets import Dataset, Features, Image, List, Value

    from agent_runtime.models.hf import defuse_vision_text
    from agent_runtime.trainers.data.datasets import ImageLoader

    loader = ImageLoader()
    rows: list[dict[str, Any]] = []
    dropped = 0
    for r in records:
        # untrusted text (task, history): a spelled-out <|image_pad|> must not become an image slot
        text = defuse_vision_text(prompt_text(r, level))
        if tokenizer is not None and max_prompt_tokens is not None:
            if len(tokenizer(text, add_special_tokens=False)["input_ids"]) > max_prompt_tokens:
                dropped += 1
                continue
        path = Path(r.image_path)
        rows.append(
            {
                "prompt": [{"role": "user", "content": text}],
                "image": loader.load(path.parent, path.name, r.image_seen),
                "problem": r.problem,
                "instruction": r.instruction,
                "solution": json.dumps(r.solution.model_dump(mode="json")),
                "image_size": list(r.image_size),
                "image_path": r.image_path,
            }
        )
    if not rows:
        raise TrainingError(
            f"no {level}-level GRPO rows"
            + (f" ({dropped} prompts longer than {max_prompt_tokens} tokens)" if dropped else ""),
            hint="select tasks whose oracle succeeds (--tasks), or raise the prompt limit",
        )
    features = Features(
        {
            "prompt": List({"role": Value("string"), "content": Value("string")}),
            "image": Image(),
            "problem": Value("string"),
            "instruction": Value("string"),
            "solution": Value("string"),
            "image_size": List(Value("float64")),
            "image_path": Value("string"),
        }
    )
    return Dataset.from_list(rows, features=features), dropped
