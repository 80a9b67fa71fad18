"""``agent-runtime run``: run one task with a live view, or resume a killed run.

Exit codes: 0 when the run completed successfully; 1 when it failed, gave up, ran out of steps
or stopped on an infrastructure error; 2 for usage and configuration errors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from agent_runtime.cli import guarded
from agent_runtime.events import (
    ActionExecuted,
    Event,
    NotesEvent,
    Notice,
    RoleOutputEvent,
    RunFinished,
    RunStarted,
    StepStarted,
    VerdictEvent,
)

if TYPE_CHECKING:
    from agent_runtime.config import RuntimeConfig
    from agent_runtime.tracing import Redactor


def _short(obj: Any, limit: int = 100) -> str:
    text = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class LiveView:
    """Renders run events as they arrive: step, subgoal, action, verdict, latency."""

    def __init__(self, console: Console, redactor: Redactor) -> None:
        self.console = console
        self.redact = redactor.text
        self.status = console.status("starting…")

    def say(self, text: str) -> None:
        self.console.print(self.redact(text), highlight=False)

    def __enter__(self) -> LiveView:
        self.status.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.status.stop()

    def show(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            verb = "resuming" if event.resumed else "run"
            self.say(f"[bold]{verb} {event.run_id}[/] · {escape(event.task)} · {event.device}")
            self.status.update("retrieving knowledge and planning…")
        elif isinstance(event, Notice):
            color = "yellow" if event.level == "warning" else "dim"
            self.say(f"[{color}]{escape(event.message)}[/]")
        elif isinstance(event, StepStarted):
            self.say(f"[bold cyan]step {event.step}[/] · {escape(event.subgoal)}")
            self.status.update(f"step {event.step}: worker choosing an action…")
        elif isinstance(event, RoleOutputEvent):
            self._role(event)
        elif isinstance(event, ActionExecuted):
            mark = "[green]ok[/]" if event.ok else "[red]failed[/]"
            self.say(
                f"  action    {escape(_short(event.action_screen))} {mark} "
                f"[dim]{escape(_short(event.message, 80))} ({event.duration_ms:.0f} ms)[/]"
            )
            self.status.update(f"step {event.step}: reflecting…")
        elif isinstance(event, VerdictEvent):
            color = "green" if event.success else "red"
            feedback = f" — {escape(_short(event.feedback))}" if event.feedback else ""
            verdict = "SUCCESS" if event.success else "FAILURE"
            self.say(f"  verdict   [{color}]{event.outcome} {verdict}[/]{feedback}")
            self.status.update(f"step {event.step}: updating the plan…")
        elif isinstance(event, NotesEvent) and event.used and event.added:
            self.say(f"  notes     + {escape(_short('; '.join(event.added)))}")

    def _role(self, event: RoleOutputEvent) -> None:
        latency = (
            f"[dim]({event.latency_ms:.0f} ms{f', {event.attempts} tries' if event.attempts > 1 else ''})[/]"
        )
        if event.error:
            self.say(f"  {event.role:<9} [red]unparseable reply[/] {escape(_short(event.error))} {latency}")
            return
        out = event.output or {}
        if event.role == "manager":
            plan = (
                "Finished"
                if out.get("finished")
                else " ".join(f"{i}. {p}" for i, p in enumerate(out.get("plan", []), 1))
            )
            self.say(f"  plan      {escape(_short(plan, 140))} {latency}")
        elif event.role == "worker":
            desc = f" — {escape(_short(out.get('description', ''), 80))}" if out.get("description") else ""
            self.say(f"  worker    {escape(_short(out.get('action')))}{desc} {latency}")
        elif event.role == "rag":
            self.say(f"  knowledge {escape(_short(out.get('knowledge') or '(none)'))}")
        elif event.role == "reflector":
            self.say(f"  reflector {out.get('outcome')} {latency}")


def register(app: typer.Typer) -> None:
    @app.command()
    @guarded
    def run(
        task: Annotated[
            str | None, typer.Argument(help="What the agent should do (omit with --resume).")
        ] = None,
        device: Annotated[
            str | None,
            typer.Option(
                "--device", "-d", help="Device spec: simphone[:SEED] | adb[:SERIAL] | desktop[:DISPLAY]."
            ),
        ] = None,
        config: Annotated[
            Path | None, typer.Option("--config", "-c", help="Config file (default: ./agent-runtime.toml).")
        ] = None,
        max_steps: Annotated[
            int | None,
            typer.Option("--max-steps", min=1, help="Step budget (default: graph.max_steps in the config)."),
        ] = None,
        runs_dir: Annotated[
            Path | None,
            typer.Option("--runs-dir", help="Where run directories go (default: runs.dir in the config)."),
        ] = None,
        resume: Annotated[
            str | None, typer.Option("--resume", help="Continue the killed or errored run with this id.")
        ] = None,
        as_json: Annotated[
            bool,
            typer.Option(
                "--json", help="Print one JSON object {run_id, success, status, answer, steps, run_dir}."
            ),
        ] = False,
    ) -> None:
        """Run a task on a device with the configured roles; stream progress; write a trace."""
        from agent_runtime.config import load_config
        from agent_runtime.errors import ConfigError
        from agent_runtime.runtime import Runtime
        from agent_runtime.tracing import Redactor

        if resume and task:
            raise ConfigError("give either a TASK or --resume RUN_ID, not both")
        if not resume and not task:
            raise ConfigError("missing TASK", hint='agent-runtime run "Turn on Wi-Fi" --device simphone')
        if resume and max_steps is not None:
            raise ConfigError("--max-steps cannot change a resumed run's budget")
        cfg = load_config(config, **({"device.spec": device} if device else {}))
        console = Console(stderr=True)
        if resume and config is None:
            # A resumed run keeps the models and settings it started with; --config overrides.
            cfg = _recorded(resume, cfg, runs_dir, device)
            console.print(
                "[dim]resuming with the models and settings recorded with the run "
                "(--config FILE overrides them)[/]",
                highlight=False,
            )
        if not resume:
            from agent_runtime import demo_model
            from agent_runtime.devices.registry import split_spec

            split_spec(cfg.device.spec)  # a usage error outranks the model fallback
            cfg, demo = demo_model.choose(cfg, config)
            if demo:
                console.print(f"[dim]{demo_model.NOTICE}[/]", highlight=False)
        runtime = Runtime(cfg, runs_dir=runs_dir)
        events = (
            runtime.stream_resume(resume, device=device)
            if resume
            else runtime.stream(task or "", device=device, max_steps=max_steps)
        )
        final: RunFinished | None = None
        if as_json:  # stdout carries the one JSON object; notices (resume, warnings) go to stderr
            for event in events:
                final = event if isinstance(event, RunFinished) else final
                if isinstance(event, Notice):
                    color = "yellow" if event.level == "warning" else "dim"
                    console.print(f"[{color}]{escape(event.message)}[/]", highlight=False)
        else:
            with LiveView(console, Redactor(cfg.memory.sensitive)) as view:
                for event in events:
                    view.show(event)
                    final = event if isinstance(event, RunFinished) else final
        if final is None:  # the generator always ends with RunFinished; guard anyway
            raise typer.Exit(1)
        if as_json:
            print(
                json.dumps(
                    {
                        "run_id": final.run_id,
                        "success": final.success,
                        "status": final.status,
                        "answer": final.answer,
                        "steps": final.steps,
                        "run_dir": final.run_dir,
                    },
                    ensure_ascii=False,
                )
            )
        _report(console, final)
        raise typer.Exit(0 if final.success else 1)


def _recorded(
    run_id: str, current: RuntimeConfig, runs_dir: Path | None, device: str | None
) -> RuntimeConfig:
    """The configuration run ``run_id`` recorded (see :func:`~agent_runtime.runtime.recorded_config`)."""
    from agent_runtime.runtime import recorded_config
    from agent_runtime.traces import find_run, read_run_record

    root = (runs_dir if runs_dir is not None else current.runs.dir).expanduser()
    record = read_run_record(find_run(root, run_id) / "run.json")
    cfg = recorded_config(record, current)
    if device:
        cfg = cfg.model_copy(update={"device": cfg.device.model_copy(update={"spec": device})})
    return cfg


def _report(console: Console, final: RunFinished) -> None:
    if final.status == "error" and final.error:
        console.print(f"[bold red]error:[/] {escape(final.error.get('message', ''))}", highlight=False)
        if final.error.get("hint"):
            console.print(f"  [bold]hint:[/] {escape(final.error['hint'])}", highlight=False)
        console.print(
            f"  the trace so far is in {final.run_dir}; "
            f"continue with: agent-runtime run --resume {final.run_id}",
            highlight=False,
        )
        return
    color = "green" if final.success else "red"
    answer = f" — answer: {escape(final.answer)}" if final.answer else ""
    reason = f" ({escape(final.reason)})" if final.reason else ""
    console.print(
        f"[bold {color}]{final.status}[/] after {final.steps} step{'s' * (final.steps != 1)}{reason}{answer}",
        highlight=False,
    )
    console.print(f"  trace: {final.run_dir}", highlight=False)
