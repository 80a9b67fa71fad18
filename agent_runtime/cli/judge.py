"""``agent-runtime judge``: label runs with the step and trajectory critics (Mobile-Agent-v3 §6.3).

Which models judge: ``--model NAME`` (a ``[models.NAME]`` entry) for the step critic, the captions
and the multimodal channel — by default ``[models.critic]`` when the config has one, else the
Reflector's model; ``--text-model NAME`` for the text channel — by default ``[models.critic_text]``,
else the same model. Labels go to ``critic.jsonl`` and ``run.json`` in each run directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from agent_runtime.cli import guarded

if TYPE_CHECKING:
    from agent_runtime.trainers.critics.judge import JudgeReport


def _summary(reports: list[JudgeReport]) -> Table:
    table = Table(title="judged runs")
    for col in ("run", "GOOD", "NEUTRAL", "HARMFUL", "skipped", "text", "multimodal", "trajectory"):
        table.add_column(col, justify="left" if col == "run" else "right")
    for r in reports:
        counts = {
            a: sum(1 for label in r.step_labels if label.annotation == a)
            for a in ("GOOD", "NEUTRAL", "HARMFUL")
        }
        t = r.trajectory
        verdict = (
            ("Correct" if t.correct else "Incorrect")
            if t
            else (f"error: {r.trajectory_error}" if r.trajectory_error else "-")
        )
        table.add_row(
            r.run_id,
            *(str(v) for v in counts.values()),
            str(len(r.skipped_steps)),
            t.text if t else "-",
            t.multimodal if t else "-",
            verdict,
        )
    return table


def register(app: typer.Typer) -> None:
    @app.command()
    @guarded
    def judge(
        run_id: Annotated[
            str | None, typer.Argument(help="A run id (or unique prefix); omit to judge every run.")
        ] = None,
        runs_dir: Annotated[
            Path | None, typer.Option("--runs-dir", help="Runs directory (default: runs.dir in the config).")
        ] = None,
        config: Annotated[
            Path | None, typer.Option("--config", "-c", help="Config file with the critic models.")
        ] = None,
        model: Annotated[
            str | None,
            typer.Option(
                "--model", help="A models.NAME entry for the step critic, captions and multimodal channel."
            ),
        ] = None,
        text_model: Annotated[
            str | None,
            typer.Option(
                "--text-model", help="A models.NAME entry for the trajectory critic's text channel."
            ),
        ] = None,
        steps: Annotated[bool, typer.Option("--steps/--no-steps", help="Run the step-level critic.")] = True,
        trajectory: Annotated[
            bool,
            typer.Option(
                "--trajectory/--no-trajectory", help="Run the trajectory-level critic (both channels)."
            ),
        ] = True,
        max_images: Annotated[
            int, typer.Option("--max-images", min=1, help="Screenshots the multimodal channel sees at most.")
        ] = 8,
        force: Annotated[
            bool, typer.Option("--force", help="Judge runs that already carry critic labels again.")
        ] = False,
    ) -> None:
        """Label runs with the step critic (GOOD/NEUTRAL/HARMFUL) and the trajectory critic (consensus)."""
        from rich.progress import Progress

        from agent_runtime.config import load_config
        from agent_runtime.errors import ConfigError, TraceError
        from agent_runtime.traces import find_run, iter_runs, load_run
        from agent_runtime.trainers.critics.judge import store
        from agent_runtime.trainers.critics.labels import CRITIC_FILE

        if not steps and not trajectory:
            raise ConfigError("nothing to do: both --no-steps and --no-trajectory were given")
        cfg = load_config(config)
        root = runs_dir or cfg.runs.dir
        if run_id is not None:
            dirs = [find_run(root, run_id)]
        else:
            dirs = list(iter_runs(root))
            if not dirs:
                raise TraceError(f"no runs in {root}", hint="pass --runs-dir DIR, or run an agent first")
        runs = []
        console = Console(stderr=True)
        for d in dirs:
            run = load_run(d)
            if run.run.status == "running":
                if run_id is not None:
                    raise TraceError(
                        f"run {run.run.run_id} is still running", hint="judge it once it has finished"
                    )
                console.print(f"skip {run.run.run_id}: still running")
                continue
            judged = (d / CRITIC_FILE).exists() or run.run.critic is not None
            if judged and run_id is None and not force:
                console.print(f"skip {run.run.run_id}: already judged (--force to judge again)")
                continue
            runs.append(run)
        from agent_runtime.trainers.critics.judge import build_judge

        judge_ = build_judge(
            cfg, model=model, text_model=text_model, steps=steps, trajectory=trajectory, max_images=max_images
        )
        reports = []
        with Progress(console=console, transient=True) as progress:
            task = progress.add_task("judging", total=len(runs))
            for run in runs:
                progress.update(task, description=f"{run.run.run_id}")

                def on_progress(what: str, run_id: str = run.run.run_id) -> None:
                    progress.update(task, description=f"{run_id}: {what}")

                report = judge_.judge(run, on_progress=on_progress)
                store(run, report)
                reports.append(report)
                progress.advance(task)
        Console().print(_summary(reports))
