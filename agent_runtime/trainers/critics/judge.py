"""Judge a finished run with the step and trajectory critics and store their labels.

:class:`Judge` drives the calls (through :class:`~agent_runtime.roles.caller.RoleCaller`, so the
critics get the same re-ask on malformed replies as every role) and :func:`store` writes the
labels next to the trace: step labels appended to ``critic.jsonl``, the trajectory verdict into
``run.json`` (see :mod:`agent_runtime.trainers.critics.labels`). ``steps.jsonl`` is never touched.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from agent_runtime.coords import CoordMapper
from agent_runtime.roles.caller import ImageInput, RoleCaller
from agent_runtime.roles.worker import screen_note
from agent_runtime.traces import LoadedRun, StepRecord
from agent_runtime.trainers.critics.labels import (
    StepCriticLabel,
    TrajectoryCriticLabel,
    append_step_labels,
    read_step_labels,
    write_trajectory_label,
)
from agent_runtime.trainers.critics.step import SECTIONS as STEP_SECTIONS
from agent_runtime.trainers.critics.step import (
    StepCriticInputs,
    action_json,
    image_size,
    mark_action,
    parse_step_critic,
)
from agent_runtime.trainers.critics.trajectory import (
    SECTIONS as TRAJECTORY_SECTIONS,
)
from agent_runtime.trainers.critics.trajectory import (
    TrajectoryStep,
    parse_caption,
    parse_trajectory_verdict,
    pick_images,
)

if TYPE_CHECKING:
    from agent_runtime.config import ModelConfig, RuntimeConfig

Progress = Callable[[str], None]


class JudgeReport(BaseModel):
    """What judging one run produced."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    run_id: str
    step_labels: list[StepCriticLabel] = Field(default_factory=list)
    skipped_steps: dict[int, str] = Field(default_factory=dict, description="step -> why it has no label")
    trajectory: TrajectoryCriticLabel | None = None
    trajectory_error: str | None = None


class Judge:
    """The critics of one ``judge`` invocation; any of them may be left out (None)."""

    def __init__(
        self,
        *,
        step: RoleCaller | None = None,
        caption: RoleCaller | None = None,
        text: RoleCaller | None = None,
        multimodal: RoleCaller | None = None,
        max_images: int = 8,
        device_word: str = "phone",
    ) -> None:
        if (text is None) != (multimodal is None) or (text is not None and caption is None):
            raise ValueError("the trajectory critic needs the caption, text and multimodal callers together")
        self.step = step
        self.caption = caption
        self.text = text
        self.multimodal = multimodal
        self.max_images = max_images
        self.device_word = device_word

    def judge(self, run: LoadedRun, on_progress: Progress | None = None) -> JudgeReport:
        report = JudgeReport(run_id=run.run.run_id)
        if self.step is not None:
            self._judge_steps(run, report, on_progress)
        if self.text is not None:
            self._judge_trajectory(run, report, on_progress)
        return report

    # -- step level ---------------------------------------------------------------------------

    def _judge_steps(self, run: LoadedRun, report: JudgeReport, on_progress: Progress | None) -> None:
        assert self.step is not None
        cfg = self.step.model_config
        history: list[str] = []
        for s in run.steps:
            if on_progress is not None:
                on_progress(f"step {s.step}")
            why = _unjudgeable(s)
            if why is not None:
                report.skipped_steps[s.step] = why
                history.append(s.description or "(no action)")
                continue
            before = run.screen(s.before_screen)  # type: ignore[arg-type]
            after = run.screen(s.after_screen)  # type: ignore[arg-type]
            screen = image_size(before)
            mapper = CoordMapper(space=cfg.coords, screen=screen, budget=cfg.budget)
            inputs = StepCriticInputs(
                task=run.run.task,
                device_word=self.device_word,
                history=list(history),
                action=action_json(s.action_screen or {}, mapper),
                description=s.description,
                screen_note=screen_note(cfg.coords, screen, cfg.budget),
            )
            result = self.step.call(
                inputs.model_dump(),
                parse_step_critic,
                images=[
                    ImageInput(mark_action(before, s.action_screen), s.before_screen or ""),
                    ImageInput(after, s.after_screen or ""),
                ],
                step=s.step,
                sections=STEP_SECTIONS,
            )
            if result.output is None:
                report.skipped_steps[s.step] = f"critic reply never parsed: {result.error}"
                history.append(s.description or "(no summary)")
                continue
            out = result.output
            report.step_labels.append(
                StepCriticLabel(
                    step=s.step,
                    annotation=out.annotation,
                    summary=out.summary,
                    analysis=out.analysis,
                    model=self.step.model_id,
                )
            )
            history.append(out.summary or s.description)

    # -- trajectory level ---------------------------------------------------------------------

    def _judge_trajectory(self, run: LoadedRun, report: JudgeReport, on_progress: Progress | None) -> None:
        assert self.caption is not None and self.text is not None and self.multimodal is not None
        labels = {label.step: label for label in report.step_labels} or read_step_labels(run.dir)
        acted = [s for s in run.steps if s.before_screen]
        if not acted:
            report.trajectory_error = "the run has no screenshots"
            return
        refs = [s.before_screen for s in acted]
        final_ref = acted[-1].after_screen or acted[-1].before_screen
        screens: list[str] = [r for r in refs if r] + ([final_ref] if final_ref else [])
        captions: dict[str, str] = {}
        for i, ref in enumerate(dict.fromkeys(screens)):
            if on_progress is not None:
                on_progress(f"caption {i + 1}")
            result = self.caption.call(
                {"device_word": self.device_word},
                parse_caption,
                images=[ImageInput(run.screen(ref), ref)],
                step=-1,
            )
            if result.output is None:
                report.trajectory_error = f"caption of {ref} never parsed: {result.error}"
                return
            captions[ref] = result.output.text
        steps = [
            TrajectoryStep(
                index=n + 1,
                action=_action_text(s),
                summary=labels[s.step].summary if s.step in labels else (s.description or "(no description)"),
                annotation=labels[s.step].annotation if s.step in labels else "",
                caption=captions.get(s.before_screen or "", ""),
            )
            for n, s in enumerate(acted)
        ]
        if on_progress is not None:
            on_progress("text channel")
        text = self.text.call(
            {
                "task": run.run.task,
                "device_word": self.device_word,
                "steps": [s.model_dump() for s in steps],
                "final_caption": captions.get(final_ref or "", ""),
            },
            parse_trajectory_verdict,
            step=-1,
            sections=TRAJECTORY_SECTIONS,
        )
        picked = [screens[i] for i in pick_images(len(screens), self.max_images)]
        notes = [
            "the final screen" if i == len(screens) - 1 else f"the screen before step {i + 1}"
            for i in pick_images(len(screens), self.max_images)
        ]
        if on_progress is not None:
            on_progress("multimodal channel")
        mm = self.multimodal.call(
            {
                "task": run.run.task,
                "device_word": self.device_word,
                "steps": [s.model_dump() for s in steps],
                "image_notes": notes,
            },
            parse_trajectory_verdict,
            images=[ImageInput(run.screen(ref), ref) for ref in picked],
            step=-1,
            sections=TRAJECTORY_SECTIONS,
        )
        if text.output is None or mm.output is None:
            channel = "text" if text.output is None else "multimodal"
            report.trajectory_error = (
                f"the {channel} channel's reply never parsed: {(text if text.output is None else mm).error}"
            )
            return
        counts = Counter(label.annotation for label in labels.values())
        report.trajectory = TrajectoryCriticLabel(
            text=text.output.verdict,
            multimodal=mm.output.verdict,
            text_reasoning=text.output.reasoning,
            multimodal_reasoning=mm.output.reasoning,
            steps=dict(counts),
            models={"text": self.text.model_id, "multimodal": self.multimodal.model_id},
        )


def _unjudgeable(step: StepRecord) -> str | None:
    if step.action_screen is None and step.action is None:
        return "no action was executed (format failure)"
    if not step.before_screen or not step.after_screen:
        return "no before/after screenshots"
    return None


def _action_text(step: StepRecord) -> str:
    action = step.action or step.action_screen or {}
    return json.dumps(action, ensure_ascii=False) if action else "(no action)"


def store(run: LoadedRun, report: JudgeReport) -> None:
    """Write the report's labels into the run directory (append-only for steps)."""
    if report.step_labels:
        append_step_labels(run.dir, report.step_labels)
    if report.trajectory is not None:
        write_trajectory_label(run, report.trajectory)


# -- building the critics from a config ---------------------------------------------------------

CRITIC_MODEL = "critic"
CRITIC_TEXT_MODEL = "critic_text"


def critic_models(
    config: RuntimeConfig, model: str | None, text_model: str | None
) -> tuple[ModelConfig, ModelConfig]:
    """(multimodal critic, text-channel critic) model configs: ``model`` (a ``[models.NAME]``
    entry) for the step critic, captions and multimodal channel — by default ``[models.critic]``
    when the config has one, else the Reflector's model; ``text_model`` for the text channel —
    by default ``[models.critic_text]``, else the same model."""
    from agent_runtime.errors import ConfigError

    def named(name: str) -> ModelConfig:
        if name not in config.models:
            known = ", ".join(sorted(config.models)) or "none"
            raise ConfigError(
                f"no model named {name!r} in the config (defined: {known})",
                hint=f"add a [models.{name}] table or pass another --model",
            )
        return config.models[name]

    if model is not None:
        mm = named(model)
    elif CRITIC_MODEL in config.models:
        mm = config.models[CRITIC_MODEL]
    else:
        mm = config.model_for("reflector")
    if text_model is not None:
        text = named(text_model)
    else:
        text = config.models.get(CRITIC_TEXT_MODEL, mm)
    return mm, text


def _caller(role: str, cfg: ModelConfig, template: str, reask: int) -> RoleCaller:
    from agent_runtime.models import make_chat_model
    from agent_runtime.roles.caller import RoleCaller
    from agent_runtime.roles.templates import load_template

    return RoleCaller(role, make_chat_model(cfg), cfg, load_template(template), reask=reask)


def build_judge(
    config: RuntimeConfig,
    *,
    model: str | None,
    text_model: str | None,
    steps: bool,
    trajectory: bool,
    max_images: int,
) -> Judge:
    """The critics ``judge`` and ``evolve`` run, from a runtime config (:func:`critic_models`)."""
    from agent_runtime.trainers.critics import step as critic
    from agent_runtime.trainers.critics import trajectory as critic_trajectory

    mm, text = critic_models(config, model, text_model)
    reask = config.graph.reask
    return Judge(
        step=_caller("critic_step", mm, critic.TEMPLATE, reask) if steps else None,
        caption=_caller("critic_caption", mm, critic_trajectory.CAPTION_TEMPLATE, reask)
        if trajectory
        else None,
        text=_caller("critic_text", text, critic_trajectory.TEXT_TEMPLATE, reask) if trajectory else None,
        multimodal=_caller("critic_multimodal", mm, critic_trajectory.MULTIMODAL_TEMPLATE, reask)
        if trajectory
        else None,
        max_images=max_images,
    )
