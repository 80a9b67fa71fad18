"""Hi-Agent's foresight reward (Hi-Agent §4.2, App. C) as TRL reward functions.

r_h = λ1·r_fmt(g) + λ2·r_env(s, g, π_ℓ) + λ3·V_judge(s, g), λ = (0.4, 0.3, 0.3). TRL's
``GRPOTrainer`` takes the three functions in ``reward_funcs`` and the weights in
``GRPOConfig.reward_weights`` (see :meth:`.grpo_config.GRPOConfig.trl_kwargs`); each has TRL's
signature ``(completions, **kwargs) -> list[float]``, with the dataset's columns in ``kwargs``.

* :func:`format_reward` — 1 iff the subgoal is ``<reasoning>…</reasoning><instruction>Instruction:
  …</instruction>`` (whitespace between and around the two blocks allowed, nothing else).
* :func:`make_env_reward` — runs the low-level policy π_ℓ on the subgoal (a callable you pass)
  and scores its action against the row's ``solution`` with
  :func:`~agent_runtime.trainers.data.matching.foresight_match`: same action
  type and every coordinate within ε (0.002 in normalised coordinates by default — very strict).
* :func:`action_match_reward` — the same match for the *low-level* model's own completions;
  :func:`make_low_level_reward` adds the same text/button/status (r_ℓ, Hi-Agent eq. 4).
* :func:`make_judge_reward` — a frozen VLM judge (a callable you pass) answering
  ``{"reward": 1}`` or ``{"reward": 0}`` to :func:`judge_prompt`.

Rows follow Hi-Agent's record: ``{"image_path", "problem", "instruction", "solution":
{"action_type", "touch_point": [x, y], "lift_point", "typed_text"}}`` with normalised
coordinates. A ``solution`` or predicted action may also be agent-runtime's action JSON
(``{"action": "click", "coordinate": [x, y]}``); pixel coordinates are normalised by the row's
``image_size`` column (``[width, height]``) when it is present.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agent_runtime.errors import ParseError
from agent_runtime.jsonish import extract_json_object
from agent_runtime.trainers.data.matching import ForesightAction, foresight_match

RewardFunc = Callable[..., list[float]]
#: π_ℓ for r_env: (dataset row, instruction) → its action (ForesightAction, dict or JSON reply).
LowLevelPolicy = Callable[[Mapping[str, Any], str], Any]
#: The judge: (dataset row, prompt text from :func:`judge_prompt`) → the judge model's reply text.
Judge = Callable[[Mapping[str, Any], str], str]

#: r_fmt's pattern (Hi-Agent App. C): a reasoning block, then an instruction block starting "Instruction:".
FORMAT_PATTERN = re.compile(
    r"\s*<reasoning>(?P<reasoning>.+?)</reasoning>\s*"
    r"<instruction>\s*Instruction:(?P<instruction>.+?)</instruction>\s*",
    re.DOTALL,
)

#: The evaluation prompt of Hi-Agent's feasibility judge (App. C), criteria verbatim.
JUDGE_PROMPT = """You are a mobile operation instruction validator. Strictly evaluate if the generated \
instruction is valid for the current step.

# Evaluation Criteria (ALL must be met for reward=1):
1. Atomic Action: Must represent ONE actionable step (e.g., "click X" not "click X then do Y")
2. Context Match: Must logically follow from the current screen state
3. Keyboard State: For text input instructions, keyboard MUST be visible/activated
4. Target Existence: Referenced UI element must be present in current screen

# Evaluation Rules:
- Reward=1 ONLY when ALL criteria are satisfied
- Reward=0 for ANY violation

# Output Format:
{"reward": 1} or {"reward": 0}
NO explanations. Strict JSON format only.

Task: <task>
Instruction: <instruction>"""


def completion_text(completion: Any) -> str:
    """The text of one TRL completion: a plain string, or conversational (a list of messages)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and completion:
        content = completion[-1].get("content", "") if isinstance(completion[-1], Mapping) else ""
        if isinstance(content, str):
            return content
        return "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    return ""


def parse_subgoal(text: str) -> str | None:
    """The instruction of a well-formed subgoal (after "Instruction:"), or None.

    >>> parse_subgoal("<reasoning>Home.</reasoning><instruction>Instruction: tap Search</instruction>")
    'tap Search'
    >>> parse_subgoal("<instruction>Instruction: tap Search</instruction>") is None
    True
    """
    match = FORMAT_PATTERN.fullmatch(text)
    if not match or not match["reasoning"].strip() or not match["instruction"].strip():
        return None
    return match["instruction"].strip()


def format_reward(completions: list[Any], **kwargs: Any) -> list[float]:
    """r_fmt: 1.0 for a well-formed subgoal, else 0.0.

    >>> format_reward([
    ...     "<reasoning>The home screen.</reasoning>\\n<instruction>Instruction: open Chrome</instruction>",
    ...     [{"role": "assistant", "content": "<reasoning>x</reasoning><instruction>tap</instruction>"}],
    ...     "<reasoning>x</reasoning><instruction>Instruction: a</instruction> and more",
    ... ])
    [1.0, 0.0, 0.0]
    """
    return [1.0 if parse_subgoal(completion_text(c)) is not None else 0.0 for c in completions]


def _row(kwargs: Mapping[str, Any], i: int) -> dict[str, Any]:
    """Row ``i`` of TRL's column-wise kwargs (only list columns; trainer objects are skipped)."""
    return {k: v[i] for k, v in kwargs.items() if isinstance(v, list) and len(v) > i}


def _solution(row: Mapping[str, Any]) -> ForesightAction:
    if "solution" not in row:
        raise ParseError("the dataset row has no 'solution' column", hint="each row needs the oracle action")
    solution = row["solution"]
    if isinstance(solution, str):
        solution = json.loads(solution) if solution.strip().startswith("{") else solution
    return ForesightAction.coerce(solution, row.get("image_size"))


def _match(predicted: Any, row: Mapping[str, Any], epsilon: float) -> float:
    try:
        mine = ForesightAction.coerce(predicted, row.get("image_size"))
    except ParseError:
        return 0.0  # an unparseable action cannot match: that is the model's failure, not a bug
    return 1.0 if foresight_match(mine, _solution(row), epsilon=epsilon) else 0.0


def action_match_reward(completions: list[Any], *, epsilon: float = 0.002, **kwargs: Any) -> list[float]:
    """r_ℓ: 1.0 when the low-level model's completion (an action) matches the row's ``solution``.

    >>> action_match_reward(
    ...     ['{"action": "click", "coordinate": [540, 1200]}', '{"action": "type", "text": "hi"}'],
    ...     solution=[{"action_type": "click", "touch_point": [0.5, 0.5]}] * 2,
    ...     image_size=[[1080, 2400]] * 2,
    ... )
    [1.0, 0.0]
    """
    return [_match(completion_text(c), _row(kwargs, i), epsilon) for i, c in enumerate(completions)]


def _argument(reply: str) -> str | None:
    """The text/button/status an action carries ("" when none), None when the reply has no action."""
    try:
        obj = extract_json_object(reply)
    except ParseError:
        return None
    if "action_type" in obj:
        return str(obj.get("typed_text") or "")
    return str(obj.get("text") or obj.get("button") or obj.get("status") or "")


def same_text(a: str, b: str) -> bool:
    """Equal up to case and runs of whitespace.

    >>> same_text(" Apt  4B", "apt 4b")
    True
    """
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def make_low_level_reward(*, epsilon: float = 0.002) -> RewardFunc:
    """r_ℓ (eq. 4): :func:`action_match_reward` (type + points within ε) and the
    same argument — typed text, answer, app, button or status — as the oracle's ``typed_text``."""

    def action_match(completions: list[Any], **kwargs: Any) -> list[float]:
        matched = action_match_reward(completions, epsilon=epsilon, **kwargs)
        out = []
        for i, (hit, completion) in enumerate(zip(matched, completions, strict=True)):
            expected = str(json.loads(kwargs["solution"][i]).get("typed_text") or "")
            mine = _argument(completion_text(completion))
            out.append(
                hit if hit and mine is not None and (not expected or same_text(mine, expected)) else 0.0
            )
        return out

    action_match.__name__ = "action_match"
    return action_match


def make_env_reward(low_level: LowLevelPolicy, *, epsilon: float = 0.002) -> RewardFunc:
    """r_env for the high-level model: π_ℓ executes each well-formed subgoal; 1.0 when its action matches.

    A malformed subgoal earns 0 without calling π_ℓ (there is no instruction to execute).
    """

    def env_reward(completions: list[Any], **kwargs: Any) -> list[float]:
        out = []
        for i, c in enumerate(completions):
            instruction = parse_subgoal(completion_text(c))
            if instruction is None:
                out.append(0.0)
                continue
            row = _row(kwargs, i)
            out.append(_match(low_level(row, instruction), row, epsilon))
        return out

    env_reward.__name__ = "env_reward"
    return env_reward


def judge_prompt(task: str, instruction: str) -> str:
    """Hi-Agent's judge prompt for one subgoal (the screenshot goes with it as an image)."""
    return JUDGE_PROMPT.replace("<task>", task).replace("<instruction>", instruction)


def parse_judge_reply(text: str) -> float:
    """The judge's ``{"reward": 1}`` / ``{"reward": 0}`` as 1.0 / 0.0; anything else is a ParseError.

    >>> parse_judge_reply('{"reward": 1}')
    1.0
    >>> parse_judge_reply('```json\\n{"reward": 0}\\n```')
    0.0
    """
    obj = extract_json_object(text)
    value = obj.get("reward")
    if value not in (0, 1) or isinstance(value, bool):
        raise ParseError(f"judge reply has no 0/1 reward: {text[:200]!r}")
    return float(value)


def make_judge_reward(judge: Judge) -> RewardFunc:
    """V_judge for the high-level model. A malformed subgoal, or a judge reply that is not
    ``{"reward": 0|1}``, earns 0: the judge validates nothing it cannot read."""

    def judge_reward(completions: list[Any], **kwargs: Any) -> list[float]:
        out = []
        for i, c in enumerate(completions):
            instruction = parse_subgoal(completion_text(c))
            if instruction is None:
                out.append(0.0)
                continue
            row = _row(kwargs, i)
            try:
                out.append(
                    parse_judge_reply(judge(row, judge_prompt(str(row.get("problem", "")), instruction)))
                )
            except ParseError:
                out.append(0.0)
        return out

    judge_reward.__name__ = "judge_reward"
    return judge_reward


def foresight_reward_funcs(
    low_level: LowLevelPolicy, judge: Judge, *, epsilon: float = 0.002
) -> list[RewardFunc]:
    """[r_fmt, r_env, V_judge] in the order of ``GRPOConfig.reward_weights``."""
    return [format_reward, make_env_reward(low_level, epsilon=epsilon), make_judge_reward(judge)]
