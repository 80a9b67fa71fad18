"""``agent-runtime run``: run one task with a live view, or resume a killed run.

Every run ends with two separate findings: what the agent *claimed* (``status``/``success``) and
whether that was *verified*. A run on SimPhone whose task is a SimPhone task instance (its text
is an instance's goal, or ``--task-id TEMPLATE/SEED``) is checked at its end by the task's own
check (:mod:`agent_runtime.checks`); any other run's success is a claim, not verified.

Exit codes (:func:`exit_code`, the one rule): 0 only when a check confirmed the goal; 3 when
the agent claimed success and nothing could check it (the final line starts with "unverified";
``--json`` carries ``"verified": null`` and ``"outcome": "unverified"``); 1 when the run failed,
gave up, ran out of steps, stopped on an infrastructure error, or its check failed (a refuted
claim: the line starts with "failed"); 2 for usage and configuration errors; 130 when
interrupted (Ctrl-C). The check outranks the claim, and a script never reads an unchecked claim
as a success. 75 when another process is playing the run (``--resume`` of a run in flight;
:data:`agent_runtime.cli.EXIT_LOCKED`): nothing was played or written.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Generator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from agent_runtime.checks import TONE_COLOR, outcome, summary_line, tone
from agent_runtime.cli import guarded
from agent_runtime.events import (
    ActionExecuted,
    Event,
    InputAnswered,
    InputRequested,
    NotesEvent,
    Notice,
    RoleOutputEvent,
    RunFinished,
    RunStarted,
    StepStarted,
    VerdictEvent,
)

if TYPE_CHECKING:
    from agent_runtime.config import RuntimeConfig, SafetyConfig
    from agent_runtime.control import InputReply, InputRequest
    from agent_runtime.costs import RunCosts
    from agent_runtime.runtime import Runtime
    from agent_runtime.traces import Verification
    from agent_runtime.tracing import Redactor


#: ``agent-runtime run``'s exit codes (see the module docstring and :func:`exit_code`).
EXIT_SUCCESS, EXIT_FAILURE, EXIT_USAGE, EXIT_UNVERIFIED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def exit_code(status: str, success: bool, verification: Verification | None) -> int:
    """The exit code of a finished run: the check when there was one, else the agent's claim,
    which alone is never a success (:data:`EXIT_UNVERIFIED`).

    >>> from agent_runtime.traces import Verification
    >>> exit_code("completed", True, Verification(checked=True, success=False))
    1
    >>> exit_code("completed", True, Verification(checked=False))
    3
    >>> exit_code("error", False, None)
    1
    """
    if status == "interrupted":
        return EXIT_INTERRUPTED
    if status == "error":
        return EXIT_FAILURE
    if verification is not None and verification.checked:
        return EXIT_SUCCESS if verification.success else EXIT_FAILURE
    return EXIT_UNVERIFIED if success else EXIT_FAILURE


def _short(obj: Any, limit: int = 100) -> str:
    text = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: What each kind of request asks at the terminal (printed as plain text, not rich markup).
_PROMPTS = {
    "confirm": "  approve? [y]es / [n]o [reason] / [t]ake over: ",
    "ask": "  your answer (empty: decline): ",
    "takeover": "  press Enter to hand the device back… ",
}
#: What a confirmation accepts, said when the answer was something else.
_ACCEPTED = "please answer y (run it), n [reason] (do not run it) or t (take over the device)"


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
            self.say(f"[bold]{verb} {event.run_id}[/] · {escape(event.task)} · {escape(event.device)}")
            self.status.update("retrieving knowledge and planning…")
        elif isinstance(event, Notice):
            color = "yellow" if event.level == "warning" else "dim"
            self.say(f"[{color}]{escape(event.message)}[/]")
        elif isinstance(event, StepStarted):
            self.say(f"[bold cyan]step {event.step}[/] · {escape(event.subgoal)}")
            self.status.update(f"step {event.step}: choosing an action…")
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
            if event.source == "screen_diff":  # no Reflector judged the step: only what was seen
                self.say(f"  observed  {'screen changed' if event.success else 'no change'}{feedback}")
            elif event.source == "device":
                self.say(f"  observed  [red]action failed[/]{feedback}")
            else:
                if event.source in ("person", "guard") and event.feedback:  # the reason, whole
                    feedback = f" — {escape(_short(event.feedback, 240))}"
                verdict = "SUCCESS" if event.success else "FAILURE"
                self.say(f"  verdict   [{color}]{event.outcome} {verdict}[/]{feedback}")
            self.status.update(f"step {event.step}: updating the plan…")
        elif isinstance(event, NotesEvent) and event.used and event.added:
            self.say(f"  notes     + {escape(_short('; '.join(event.added)))}")
        elif isinstance(event, InputAnswered):
            who = "" if event.by == "person" else f" [dim](by {event.by})[/]"
            self.say(f"  person    {event.kind}: {event.decision}{who}")

    def ask(self, request: InputRequest, safety: SafetyConfig) -> InputReply:
        """Ask the person at the terminal (stdin): y / n [reason] / t(ake over) for a
        confirmation, a line for a question, Enter to end a pause.

        Whatever is typed cannot crash the run (see :mod:`agent_runtime.cli.typed`): an answer
        the prompt does not accept is asked again, saying what it accepts; a line cut inside a
        character or too long is asked again too, and the reply carries a bounded prefix of it
        for the trace (``InputReply.refused``). At the end of stdin the request is settled as in
        a run no one attends, and the view says so."""
        from agent_runtime.control import MAX_REFUSED, unattended_reply

        self.status.stop()
        refused: list[str] = []
        try:
            self.say(f"[bold magenta]? {escape(request.describe())}[/]")
            if request.kind == "confirm" and request.action is not None:
                self.say(f"  action    {escape(_short(request.action))}")
            while (line := self._line(_PROMPTS[request.kind], refused)) is not None:
                reply = self._reply(request, line)
                if reply is not None:
                    return reply.model_copy(update={"refused": refused[-MAX_REFUSED:]})
                self.say(f"[yellow]  {escape(_ACCEPTED)}[/]")
            reply = unattended_reply(request, safety)
            self.say(f"[yellow]no answer (end of input): {reply.decision}, as in an unattended run[/]")
            return reply.model_copy(update={"refused": refused[-MAX_REFUSED:]})
        finally:
            self.status.start()

    def _reply(self, request: InputRequest, line: str) -> InputReply | None:
        """The reply ``line`` gives to ``request``; None when the prompt does not accept it."""
        from agent_runtime.control import InputReply

        if request.kind == "ask":
            return InputReply.answer(line.strip()) if line.strip() else InputReply.reject()
        if request.kind == "takeover":
            return InputReply.resume()
        word, _, rest = line.strip().partition(" ")
        choice = word.lower().rstrip(":,")
        if choice in ("y", "yes"):
            return InputReply.approve()
        if choice in ("n", "no"):
            return InputReply.reject(rest.strip())
        if choice in ("t", "take", "takeover"):
            self._line("  the device is yours; press Enter when you are done… ", [])
            return InputReply.takeover()
        return None

    def _line(self, prompt: str, refused: list[str]) -> str | None:
        """A line from stdin after ``prompt`` (None at the end of input). A line the reader
        refuses (torn, too long) is noted in ``refused`` and asked for again. The prompt and
        the echo are plain text: ``[y]es`` is not rich markup, nor is what the person typed."""
        import sys

        from agent_runtime.cli.typed import read_line

        while True:
            self.console.print(prompt, end="", markup=False, highlight=False)
            typed = read_line()
            if not (sys.stdin is not None and sys.stdin.isatty()):  # no echo from a pipe: show it
                self.console.print(_short(typed.text, 200) if typed else "", markup=False, highlight=False)
            if typed is None or not typed.refused:
                return typed.text if typed else None
            refused.append(typed.kept)
            self.say(f"[yellow]  that reply was not taken: {escape(typed.refused)}; please type it again[/]")

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
        elif event.role in ("worker", "low", "single"):
            desc = f" — {escape(_short(out.get('description', ''), 80))}" if out.get("description") else ""
            self.say(f"  {event.role:<9} {escape(_short(out.get('action')))}{desc} {latency}")
        elif event.role == "high":
            self.say(f"  subgoal   {escape(_short(out.get('instruction', ''), 140))} {latency}")
        elif event.role == "rag":
            self.say(f"  knowledge {escape(_short(out.get('knowledge') or '(none)'))}")
        elif event.role == "reflector":
            self.say(f"  reflector {escape(str(out.get('outcome')))} {latency}")


#: ``run``'s arguments and options (module level, so the command's signature stays readable).
TaskArg = Annotated[str | None, typer.Argument(help="What the agent should do (omit with --resume).")]
DeviceOpt = Annotated[
    str | None,
    typer.Option("--device", "-d", help="Device spec: simphone[:SEED] | adb[:SERIAL] | desktop[:DISPLAY]."),
]
ConfigOpt = Annotated[
    Path | None, typer.Option("--config", "-c", help="Config file (default: ./agent-runtime.toml).")
]
MaxStepsOpt = Annotated[
    int | None,
    typer.Option("--max-steps", min=1, help="Step budget (default: graph.max_steps in the config)."),
]
GraphOpt = Annotated[
    str | None,
    typer.Option(
        "--graph",
        "-g",
        help="Agent graph: mobile_agent_v3 (Manager, Worker, Reflector, Notetaker), hi_agent "
        "(high + low level), single (GUI-Owl, one call per step) or auto (single, escalating "
        "to mobile_agent_v3). Default: graph.kind in the config.",
    ),
]
RunsDirOpt = Annotated[
    Path | None,
    typer.Option("--runs-dir", help="Where run directories go (default: runs.dir in the config)."),
]
ResumeOpt = Annotated[
    str | None,
    typer.Option("--resume", help="Continue the interrupted, killed or errored run with this id."),
]
TaskIdOpt = Annotated[
    str | None,
    typer.Option(
        "--task-id",
        help="Play SimPhone task instance TEMPLATE[/SEED] instead of a TASK text: its goal is the "
        "task, the phone is set up for it and the result is checked at the end "
        "(list them: agent-runtime simphone tasks).",
    ),
]
JsonOpt = Annotated[
    bool,
    typer.Option(
        "--json",
        help="Print one JSON object {run_id, success, status, verified, verification, answer, "
        "steps, run_dir, costs}; success is the agent's claim, verified the check's (null: not "
        "checked); costs holds per-role and total tokens, latency, critical-path share, money. "
        "No one is asked anything: requests are settled as [safety] says for unattended runs.",
    ),
]
YesOpt = Annotated[
    bool,
    typer.Option(
        "--yes",
        "-y",
        help="Approve every action that would wait for a confirmation, and ask nothing: an "
        "unattended run with [safety] unattended = approve (each step records it).",
    ),
]
TasksFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--tasks",
        help="Play every task of FILE (a task per line, or JSON lines {task, device}) across the "
        "devices, unattended, and print one summary. Exit 0 only if every task was verified; 1 if "
        "any failed; 3 if the rest only claimed success.",
    ),
]
WorkersOpt = Annotated[int, typer.Option("--workers", min=1, help="--tasks: SimPhone tasks played at once.")]
RayOpt = Annotated[
    str | None,
    typer.Option(
        "--ray",
        metavar="local|auto|ADDRESS",
        help="--tasks: play on Ray (default: [cluster] ray_address; docs/scale-out.md).",
    ),
]


def register(app: typer.Typer) -> None:
    @app.command()
    @guarded
    def run(
        task: TaskArg = None,
        device: DeviceOpt = None,
        config: ConfigOpt = None,
        max_steps: MaxStepsOpt = None,
        graph: GraphOpt = None,
        runs_dir: RunsDirOpt = None,
        resume: ResumeOpt = None,
        task_id: TaskIdOpt = None,
        as_json: JsonOpt = False,
        yes: YesOpt = False,
        tasks_file: TasksFileOpt = None,
        workers: WorkersOpt = 1,
        ray: RayOpt = None,
    ) -> None:
        """Run a task on a device with the configured roles; stream progress; write a trace.

        On SimPhone every run is checked when it ends: a SimPhone task instance (its goal's text,
        or --task-id) by its own check; a goal a template can express in other words ("Set an
        alarm for 6:45") by that template's check on this phone; any other goal by what the run
        changed on the phone (said before the run starts, with the closest templates). Exit
        codes: 0 verified success; 1 failure, error or a failed check; 2 usage error; 3 the agent
        says it is done but nothing could check it ("unverified"; a real phone or a desktop);
        130 interrupted.

        A person stays in control: before a sensitive or off-task action the run asks on the
        terminal (y / n [reason] / t to take over), a question from the agent waits for your
        answer, and Ctrl-\\ pauses the run at the next step so you can operate the device (Enter
        hands it back). With --json or --yes no one is asked (see [safety] in the config).
        """
        from agent_runtime.config import load_config
        from agent_runtime.errors import ConfigError
        from agent_runtime.runtime import Runtime

        if tasks_file is not None:
            if task or task_id or resume:
                raise ConfigError("give either --tasks FILE or a TASK (--task-id, --resume), not both")
            _batch(tasks_file, load_config(config, **{"device.spec": device, "graph.kind": graph}), runs_dir,
                   max_steps, workers, ray, as_json)  # fmt: skip
        _refuse_conflicts(task, task_id, resume, max_steps, graph, ray, workers)
        cfg = load_config(config, **{"device.spec": device, "graph.kind": graph})
        if yes:
            cfg.safety = cfg.safety.model_copy(update={"unattended": "approve"})
        if task_id:
            task, device = _task_from_id(task_id, device, cfg.device.spec)
        console = Console(stderr=True)
        if resume and config is None:
            # A resumed run keeps the models and settings it started with; --config overrides.
            cfg = _recorded(resume, cfg, runs_dir, device)
            console.print(
                "[dim]resuming with the models and settings recorded with the run "
                "(--config FILE overrides them)[/]",
                highlight=False,
            )
        # With nothing configured and no server answering, the runtime falls back to the offline
        # demo model and says so in a Notice (agent_runtime.demo_model.choose).
        if resume and yes:
            cfg.safety = cfg.safety.model_copy(update={"unattended": "approve"})
        runtime = Runtime(cfg, runs_dir=runs_dir)
        attended = not (as_json or yes)
        events = (
            runtime.stream_resume(resume, device=device, interactive=attended)
            if resume
            else runtime.stream(task or "", device=device, max_steps=max_steps, interactive=attended)
        )
        final = _follow(runtime, events, console, resume, as_json=as_json, attended=attended)
        _conclude(console, final, as_json)


def _refuse_conflicts(
    task: str | None, task_id: str | None, resume: str | None, max_steps: int | None, graph: str | None,
    ray: str | None, workers: int,
) -> None:  # fmt: skip
    """One run's options that contradict each other, or that a resumed run cannot change."""
    from agent_runtime.errors import ConfigError

    if ray is not None or workers != 1:
        raise ConfigError("--ray and --workers apply to --tasks FILE", hint="add --tasks FILE, or drop them")
    if resume and (task or task_id):
        raise ConfigError("give either a TASK (or --task-id) or --resume RUN_ID, not both")
    if task and task_id:
        raise ConfigError("give either a TASK or --task-id, not both")
    if not resume and not task and not task_id:
        raise ConfigError("missing TASK", hint='agent-runtime run "Turn on Wi-Fi" --device simphone')
    if resume and max_steps is not None:
        raise ConfigError("--max-steps cannot change a resumed run's budget")
    if resume and graph is not None:
        raise ConfigError("--graph cannot change a resumed run's graph (it continues the one it started)")


def _follow(
    runtime: Runtime, events: Generator[Event, None, None], console: Console, resume: str | None, *,
    as_json: bool, attended: bool,
) -> RunFinished | None:  # fmt: skip
    """Play the run ``events`` streams: shown live (answering its requests at the terminal when
    ``attended``), or with ``as_json`` only its notices, on stderr. Returns its ``RunFinished``."""
    from agent_runtime.tracing import Redactor

    final: RunFinished | None = None
    begun: RunStarted | None = None
    restore = _second_ctrl_c_exits()
    unpause = _ctrl_backslash_pauses(runtime, console) if attended else (lambda: None)
    try:
        if as_json:  # stdout carries the one JSON object; notices (resume, warnings) go to stderr
            for event in events:
                final = event if isinstance(event, RunFinished) else final
                begun = event if isinstance(event, RunStarted) else begun
                if isinstance(event, Notice):
                    color = "yellow" if event.level == "warning" else "dim"
                    console.print(f"[{color}]{escape(event.message)}[/]", highlight=False)
        else:
            with LiveView(console, Redactor(runtime.config.memory.sensitive)) as view:
                for event in events:
                    view.show(event)
                    if isinstance(event, InputRequested):
                        runtime.respond(event.request.id, view.ask(event.request, runtime.config.safety))
                    final = event if isinstance(event, RunFinished) else final
                    begun = event if isinstance(event, RunStarted) else begun
    except KeyboardInterrupt as exc:
        events.close()  # Ctrl-C between two events: the run records it now
        _interrupted(console, exc, begun, resume, as_json)  # a second Ctrl-C still exits at once
    except BaseException:
        restore()
        unpause()
        events.close()  # now, not at garbage collection: a run left at a question waits for it
        raise
    restore()
    unpause()
    return final


def _conclude(console: Console, final: RunFinished | None, as_json: bool) -> NoReturn:
    """Print the finished run (its JSON object, or its summary and costs) and exit with its code."""
    from agent_runtime.runtime import finished_summary, finished_verification

    if final is None:  # the generator always ends with RunFinished; guard anyway
        raise typer.Exit(1)
    verification = finished_verification(final)
    costs = _costs(final)
    if as_json:
        summary = finished_summary(final)
        summary["costs"] = costs.model_dump(mode="json") if costs is not None else None
        print(json.dumps(summary, ensure_ascii=False))
    _report(console, final, verification)
    if costs is not None and costs.roles and not as_json:
        from agent_runtime.costs import costs_table

        console.print(costs_table(costs))
    raise typer.Exit(exit_code(final.status, final.success, verification))


def _batch(
    path: Path, cfg: RuntimeConfig, runs_dir: Path | None, max_steps: int | None, workers: int,
    ray: str | None, as_json: bool,
) -> NoReturn:  # fmt: skip
    """``run --tasks FILE``: every task unattended on the backend, one summary, one exit code."""
    from agent_runtime.execution import open_backend
    from agent_runtime.execution.batch import batch_exit_code, dump, read_tasks, run_batch, summary_line

    tasks = read_tasks(path)
    if runs_dir is not None:
        cfg.runs = cfg.runs.model_copy(update={"dir": runs_dir})
    backend = open_backend(
        ray or cfg.cluster.ray_address, workers, schedule_timeout_s=cfg.cluster.schedule_timeout_s
    )
    try:
        outcomes = run_batch(cfg, tasks, backend, max_steps)
    finally:
        backend.close()
    console = Console(stderr=True)
    if as_json:
        print(dump(outcomes))
    for o in outcomes:
        console.print(f"{o.line:>4} {o.outcome:<13} {o.steps:>3} steps  {_short(o.task, 60)}",
                      markup=False, highlight=False)  # fmt: skip
    console.print(summary_line(outcomes), highlight=False)
    raise typer.Exit(batch_exit_code(outcomes))


def _task_from_id(task_id: str, device: str | None, spec: str) -> tuple[str, str]:
    """``--task-id``'s goal and SimPhone spec: the instance's seed is the phone's seed (TEMPLATE
    alone takes the seed of ``--device simphone:SEED``, else 0)."""
    from agent_runtime.devices.registry import split_spec
    from agent_runtime.errors import ConfigError, TaskError
    from agent_runtime.simphone.tasks.registry import make_task, parse_task_id

    try:
        name, seed = parse_task_id(task_id)
    except TaskError as exc:
        raise ConfigError(exc.message, hint=exc.hint) from None
    kind, arg = split_spec(spec)
    if kind != "simphone":
        raise ConfigError(
            f"--task-id plays a SimPhone task, but the device is {spec}",
            hint="use --device simphone (or leave --device out)",
        )
    if arg is not None and not arg.isdigit():
        raise ConfigError(f"SimPhone seed must be an integer, got {arg!r}", hint="use simphone:SEED")
    if device and arg is not None and seed is not None and int(arg) != seed:
        raise ConfigError(
            f"--task-id {task_id} plays on simphone:{seed}, but --device says {device}",
            hint=f"leave --device out, or use --task-id {name}/{arg}",
        )
    if seed is None:
        seed = int(arg) if device and arg is not None else 0
    return make_task(name, seed).goal, f"simphone:{seed}"


def _costs(final: RunFinished) -> RunCosts | None:
    """The finished run's per-role cost and latency, from its trace (None when it cannot be read)."""
    from agent_runtime.costs import run_costs
    from agent_runtime.errors import TraceError
    from agent_runtime.traces import load_run

    try:
        return run_costs(load_run(final.run_dir))
    except TraceError:
        return None


def _recorded(
    run_id: str, current: RuntimeConfig, runs_dir: Path | None, device: str | None
) -> RuntimeConfig:
    """The configuration run ``run_id`` recorded (see :func:`~agent_runtime.resume.recorded_config`)."""
    from agent_runtime.resume import recorded_config
    from agent_runtime.traces import find_run, read_run_record

    root = (runs_dir if runs_dir is not None else current.runs.dir).expanduser()
    record = read_run_record(find_run(root, run_id) / "run.json")
    cfg = recorded_config(record, current)
    if device:
        cfg = cfg.model_copy(update={"device": cfg.device.model_copy(update={"spec": device})})
    return cfg


def _second_ctrl_c_exits() -> Callable[[], None]:
    """While a run is in flight, a second Ctrl-C (one during the first one's clean-up) exits
    at once with 130: run.json is only ever replaced whole, and the checkpoint survives a kill,
    so nothing is lost that ``--resume`` needs. Returns what puts the previous handler back."""
    import os
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):  # SIGINT ignored, or not Python's to handle
        return lambda: None
    pressed = threading.Event()

    def handler(signum: int, frame: Any) -> None:
        if pressed.is_set():
            os.write(2, b"\ninterrupted again: exiting now\n")
            os._exit(EXIT_INTERRUPTED)
        pressed.set()
        previous(signum, frame)

    def restore() -> None:
        signal.signal(signal.SIGINT, previous)

    signal.signal(signal.SIGINT, handler)
    return restore


def _ctrl_backslash_pauses(runtime: Any, console: Console) -> Callable[[], None]:
    """Ctrl-\\ (SIGQUIT) pauses the run at the start of its next step, for the person to take
    over the device. Returns what puts the previous handler back."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGQUIT"):
        return lambda: None
    previous = signal.getsignal(signal.SIGQUIT)

    def handler(signum: int, frame: Any) -> None:
        runtime.pause()
        console.print("[magenta]pausing at the start of the next step…[/]", highlight=False)

    def restore() -> None:
        signal.signal(signal.SIGQUIT, previous)

    signal.signal(signal.SIGQUIT, handler)
    return restore


def _interrupted(
    console: Console, exc: KeyboardInterrupt, begun: RunStarted | None, resume: str | None, as_json: bool
) -> NoReturn:
    """Ctrl-C: say where the run is and how to continue it; exit 130."""
    from agent_runtime.runtime import RunInterrupted

    run_id = exc.run_id if isinstance(exc, RunInterrupted) else begun.run_id if begun else resume
    run_dir = str(exc.run_dir) if isinstance(exc, RunInterrupted) else begun.run_dir if begun else None
    if run_id is None:
        console.print("[yellow]Interrupted[/] before the run started; nothing was saved.", highlight=False)
        raise typer.Exit(EXIT_INTERRUPTED)
    where = f" saved in {run_dir}" if run_dir else " unchanged"
    console.print(
        f"[yellow]Interrupted.[/] Run {run_id}{where}; continue with: agent-runtime run --resume {run_id}",
        highlight=False,
        soft_wrap=True,
    )
    if as_json:
        print(json.dumps({"run_id": run_id, "success": False, "status": "interrupted", "run_dir": run_dir}))
    # The process exits now: spare it the final garbage collection of everything loaded (about
    # 0.6 s of the user's wait with langgraph imported); files and the checkpoint are closed.
    gc.freeze()
    raise typer.Exit(EXIT_INTERRUPTED)


def _report(console: Console, final: RunFinished, verification: Verification | None = None) -> None:
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
    kind = outcome(final.status, final.success, verification)
    line = summary_line(
        final.status,
        final.success,
        final.steps,
        reason=final.reason,
        answer=final.answer,
        verification=verification,
    )
    word, sep, rest = line.partition(" after ")
    console.print(f"[bold {TONE_COLOR[tone(kind)]}]{word}[/]{sep}{escape(rest)}", highlight=False)
    checked = verification is not None and verification.checked
    if verification is not None and verification.detail and (checked or final.success):
        what = "check" if checked else "not checked"
        console.print(f"  {what}: {escape(verification.detail)}", highlight=False)
    console.print(f"  trace: {final.run_dir}", highlight=False)
