"""The online RL loop behind ``distill --method trpo|dgrpo``: rollouts → update → refresh, N times.

One iteration:

1. the method picks task instances (DGRPO: the failure curriculum; TRPO: all, or a seeded draw);
2. G rollouts per instance are played by the runtime graph on SimPhone, K at a time
   (:mod:`.rollouts`; threads, or Ray actors with ``ray_address``), the trained role sampling
   from the current policy version (:mod:`.policy`);
3. the method turns the groups into an update batch (:mod:`.trpo_trainer`, :mod:`.dgrpo_trainer`);
4. one :func:`~.policy_gradient.policy_gradient_step` on the LoRA weights;
5. the adapter is saved to ``OUT/iter_NNNN/`` with a ``manifest.json`` and ``rl_state.pt``
   (optimizer, running statistics, buffers, curriculum, metrics), then published to the rollout
   policy;
6. one metrics line is printed and appended to ``OUT/metrics.jsonl``.

The folders, resume and metrics file are :mod:`agent_runtime.trainers.iterations`'s, shared with
Hi-Agent's GRPO. ``OUT/iter_0000/`` holds the starting adapter (version 0). ``resume=True``
continues after the last iteration whose manifest and state were written — a crash
mid-iteration replays that iteration from its start, with the same task draw and sampling seeds.
Any failure of an update (steps 3–4: rescoring, the method's batch, the policy-gradient step)
is a :class:`~agent_runtime.errors.TrainingError` of one paragraph that says so — the CLI prints
it without a traceback — and leaves the iteration unsaved, hence resumable.

**Behaviour log-probs.** Servers return log-probs of the raw distribution; the loss uses the
tempered one (:mod:`.policy_gradient`). At temperature 1 they coincide; otherwise
(``behaviour_logprobs="auto"``) or always (``"recompute"``) the trainer rescores every fresh
step with the policy that sampled it — exact, since no update happened in between, and it also
absorbs numeric differences between a bf16 server and the trainer. A call the trace records as
sampled at another temperature (a re-ask at a runtime config's ``reask_temperature``; the
rollout worker prevents it, a trace from elsewhere may not) is kept out of the loss
(:meth:`~.samples.Trajectory.step_samples`); ``off_temperature_calls`` in the metrics counts them.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from agent_runtime.errors import ConfigError, DependencyError, TrainingError
from agent_runtime.models.refs import resolve_model_ref
from agent_runtime.trainers.artifacts import DataSummary, LossPoint, TrainingSummary, write_manifest
from agent_runtime.trainers.iterations import Echo, Iterations, copy_adapter, lora_manifest
from agent_runtime.trainers.online.config import OnlineRLConfig

STATE_FILE = "rl_state.pt"
#: Name of the frozen copy of the starting adapter, the KL reference (see ``_load``).
REF_ADAPTER = "reference"
RL_METHODS = ("trpo", "dgrpo")


class RLOptions(BaseModel):
    """Where rollouts happen and how many (every field is a ``distill`` option)."""

    env: Literal["simphone"] = Field("simphone", description="environment the rollouts run in")
    tasks: str | None = Field(None, description="SimPhone task pattern (glob or re:REGEX); None: all")
    split: Literal["train", "test", "all"] = Field("train", description="SimPhone split of the instances")
    episodes: int = Field(1, ge=1, description="task instances per template")
    iterations: int = Field(10, ge=1, description="rollout → update iterations in total (resume counts on)")
    tasks_per_iteration: int | None = Field(
        None, ge=1, description="task instances played per iteration (None: all active ones)"
    )
    rollout_workers: int | None = Field(
        None,
        ge=1,
        description="K: rollouts played at once (default: G with the in-process policy, whose "
        "concurrent rollouts decode in one batch; 1 with a policy server)",
    )
    server_url: str | None = Field(
        None, description="OpenAI-compatible server that serves the policy (None: in-process)"
    )
    served_name: str = Field("policy", description="adapter name on the server (versions: NAME-vNNNN)")
    ray_address: str | None = Field(None, description="run rollout workers as Ray actors on this cluster")
    runtime_config: Path | None = Field(None, description="runtime config (TOML) for the other roles")
    behaviour_logprobs: Literal["auto", "rollout", "recompute"] = Field(
        "auto", description="use the server's log-probs, or rescore them (auto: when temperature != 1)"
    )
    resume: bool = Field(False, description="continue after the last finished iteration")


def make_method(method: str, cfg: OnlineRLConfig) -> Any:
    from agent_runtime.trainers.online.dgrpo_config import DGRPOConfig
    from agent_runtime.trainers.online.trpo_config import TRPOConfig

    if method == "trpo":
        from agent_runtime.trainers.online.trpo_trainer import TRPOMethod

        return TRPOMethod(cfg if isinstance(cfg, TRPOConfig) else TRPOConfig(**cfg.model_dump()))
    if method == "dgrpo":
        from agent_runtime.trainers.online.dgrpo_trainer import DGRPOMethod

        return DGRPOMethod(cfg if isinstance(cfg, DGRPOConfig) else DGRPOConfig(**cfg.model_dump()))
    raise ConfigError(f"{method!r} is not an online RL method", hint=f"use one of: {', '.join(RL_METHODS)}")


def task_pool(opts: RLOptions, seed: int) -> dict[str, tuple[str, int]]:
    """Task id → (template, seed) of every instance the run trains on."""
    from agent_runtime.simphone.tasks import select
    from agent_runtime.simphone.tasks.registry import task_instances
    from agent_runtime.trainers.online.rollouts import task_id

    names = select(opts.tasks)
    if not names:
        raise ConfigError(f"no SimPhone task matches {opts.tasks!r}", hint="see: agent-runtime eval --list")
    instances = task_instances(names, split=opts.split, episodes=opts.episodes, seed=seed)
    return {task_id(t): (t.name, t.seed) for t in instances}


def _summarise(values: list[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "std": 0.0, "min": 0.0, "max": 0.0}
    mean = sum(values) / len(values)
    std = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
    return {"mean": mean, "std": std, "min": min(values), "max": max(values)}


def metrics_line(m: dict[str, Any]) -> str:
    """The live one-line summary of an iteration."""
    update = m.get("update") or {}
    loss = f"{update['loss']:+.4f}" if update else "skipped"
    return (
        f"iter {m['iteration']}: success {m['success_rate']:.2f} ({m['successes']}/{m['rollouts']}), "
        f"reward {m['mean_reward']:+.3f}, adv {m['advantage']['mean']:+.2f}±{m['advantage']['std']:.2f}, "
        f"buffer {m['buffer_size']}, kl {update.get('kl', 0.0):.2e}, loss {loss}, "
        f"{m['time_rollouts_s']:.1f}s rollouts + {m['time_update_s']:.1f}s update"
    )


def rollout_workers(opts: Any, group_size: int) -> int:
    """K: ``opts.rollout_workers``, else the group size for the in-process policy (a group's
    rollouts then share each forward of the batched engine) and 1 for a server or Ray."""
    if opts.rollout_workers is not None:
        return int(opts.rollout_workers)
    return 1 if opts.server_url or opts.ray_address else group_size


class OnlineTrainer:
    """Owns the policy model, the optimizer, the method state and the rollout machinery."""

    def __init__(
        self,
        method: str,
        cfg: OnlineRLConfig,
        opts: RLOptions,
        *,
        other_models: dict[str, Any] | None = None,
        runtime: Any = None,
        overwrite: bool = False,
        echo: Echo | None = None,
    ) -> None:
        if not cfg.lora:
            raise ConfigError("online RL trains a LoRA adapter", hint="drop --full")
        if cfg.top_k > 0 and opts.server_url:
            raise ConfigError(
                f"top_k = {cfg.top_k} cannot reach a policy server: the HTTP chat model sends only "
                "OpenAI's fields, and vLLM's top_k is not one of them",
                hint="set top_k to 0 with --server-url, or drop --server-url (the in-process policy "
                "samples with top_k)",
            )
        if opts.ray_address and not opts.server_url:
            raise ConfigError(
                "Ray rollout workers sample from a policy server",
                hint="pass --server-url (vLLM or agent-runtime serve) with --ray",
            )
        if opts.ray_address:
            import importlib.util

            if importlib.util.find_spec("ray") is None:
                raise DependencyError("ray", "ray", "--ray (rollout workers as Ray actors)")
        self.method_name = method
        self.cfg = cfg
        self.opts = opts
        self.echo = echo or (lambda _text: None)
        self.out = Path(cfg.output_dir).resolve()
        self.other_models = other_models
        self.runtime = runtime
        self.method = make_method(method, cfg)
        self.pool = task_pool(opts, cfg.seed)
        self.iterations = Iterations(
            self.out,
            what="RL",
            state_file=STATE_FILE,
            resume=opts.resume,
            overwrite=overwrite,
            also=("rollouts", *self.method.run_files()),
        )
        self.resolved = resolve_model_ref(cfg.base)
        self.metrics: list[dict[str, Any]] = []

    # -- setup ----------------------------------------------------------------------------------

    def _load(self) -> None:
        import torch
        from peft import PeftModel

        from agent_runtime.models.engine import TransformersEngine
        from agent_runtime.trainers.hf import _dtype
        from agent_runtime.trainers.online.policy_gradient import add_lora, make_optimizer

        start = self.iterations.start
        self.engine = TransformersEngine(self.resolved.base, dtype=_dtype())
        base = self.engine.model
        if start > 0:
            model = PeftModel.from_pretrained(base, str(self.iterations.dir(start)), is_trainable=True)
        elif self.resolved.adapter is not None:
            model = PeftModel.from_pretrained(base, str(self.resolved.adapter), is_trainable=True)
        else:
            model = add_lora(base, self.cfg)
        if start == 0:
            self.iterations.dir(0).mkdir(parents=True, exist_ok=True)
            model.save_pretrained(str(self.iterations.dir(0)))
        self.ref_adapter: str | None = None
        if self.cfg.beta > 0.0 and self.resolved.adapter is not None:
            # The KL reference is the policy RL started from (the SFT adapter, iteration 0), not
            # the base with the adapter disabled: a frozen copy under another name, never saved.
            model.load_adapter(str(self.iterations.dir(0)), adapter_name=REF_ADAPTER, is_trainable=False)
            model.set_adapter("default")
            self.ref_adapter = REF_ADAPTER
        # Eval mode for good: rollouts sample without dropout and the loss scores in eval mode
        # too (policy_gradient.sampler_mode), so both see the same function.
        model.eval()
        self.engine.model = model
        self.model = model
        self.processor = self.engine.processor
        self.optimizer = make_optimizer(model, self.cfg.learning_rate)
        if start > 0:
            state = torch.load(self.iterations.dir(start) / STATE_FILE, weights_only=False)
            self.optimizer.load_state_dict(state["optimizer"])
            self.method.load_state_dict(state["method"])
            self.metrics = state["metrics"]
        self.iterations.announce(self.echo)

    def _policy(self) -> Any:
        from agent_runtime.trainers.online.policy import InProcessPolicy, ServerPolicy

        cfg = self.cfg
        if self.opts.server_url:
            return ServerPolicy(
                self.opts.server_url,
                self.opts.served_name,
                temperature=cfg.temperature,
                top_p=cfg.top_p,
                max_tokens=cfg.max_new_tokens,
            )
        return InProcessPolicy(
            self.engine,
            self.opts.served_name,
            temperature=cfg.temperature,
            top_p=cfg.top_p,
            top_k=cfg.top_k,
            max_tokens=cfg.max_new_tokens,
        )

    def _runner(self) -> Any:
        workers = rollout_workers(self.opts, self.cfg.num_generations)
        if self.opts.ray_address:
            from agent_runtime.trainers.online.ray_rollouts import RayRollouts

            return RayRollouts(self.opts.ray_address, workers)
        from agent_runtime.trainers.online.rollouts import LocalRollouts

        return LocalRollouts(workers)

    def _runtime_config(self) -> Any:
        from agent_runtime.config import RuntimeConfig, load_config

        if self.runtime is not None:
            return self.runtime
        return load_config(self.opts.runtime_config) if self.opts.runtime_config else RuntimeConfig()

    # -- the loop -------------------------------------------------------------------------------

    def run(self) -> tuple[DataSummary, TrainingSummary, dict[str, Any]]:
        started = time.perf_counter()
        self._load()
        runtime_config = self._runtime_config()
        policy = self._policy()
        runner = self._runner()
        try:
            policy.publish(self.iterations.start, self.iterations.dir(self.iterations.start))
            for it in self.iterations.remaining(self.opts.iterations):
                m = self._iteration(it, policy, runner, runtime_config)
                self.echo(metrics_line(m))
                policy.publish(it, self.iterations.dir(it))
        finally:
            runner.close()
            policy.close()
        copy_adapter(self.iterations.last(self.opts.iterations), self.out)
        return self._summaries(time.perf_counter() - started)

    def _iteration(self, it: int, policy: Any, runner: Any, runtime_config: Any) -> dict[str, Any]:
        import shutil

        from agent_runtime.trainers.online.policy_gradient import LossSettings, policy_gradient_step
        from agent_runtime.trainers.online.rollouts import RolloutWorker, group_requests
        from agent_runtime.trainers.online.samples import flatten

        runs_dir = self.out / "rollouts" / f"iter_{it:04d}"
        if runs_dir.exists():  # a resumed run replays an iteration that did not finish: start clean
            shutil.rmtree(runs_dir)
        rng = random.Random(f"{self.cfg.seed}/{it}")
        active = self._active_tasks()
        chosen = self.method.select_tasks(active, self.opts.tasks_per_iteration, rng)
        requests = group_requests([self.pool[t] for t in chosen], self.cfg.num_generations, it, self.cfg.seed)
        worker = RolloutWorker(
            runtime_config,
            self.cfg.role,
            policy.chat_model,
            self.processor,
            runs_dir,
            other_models=self.other_models,
            max_turns=self.cfg.max_turns,
        )
        t0 = time.perf_counter()
        if self.opts.ray_address:
            results = runner.play_remote(policy.spec(), self._worker_spec(runtime_config, it), requests)
        else:
            results = runner.play(worker, requests)
        t_rollouts = time.perf_counter() - t0
        groups: dict[str, list[Any]] = {}
        errors = [r.episode.error for r in results if r.trajectory is None]
        for r in results:
            if r.trajectory is not None:
                groups.setdefault(r.episode.task_id, []).append(r.trajectory)
        fresh = [t for g in groups.values() for t in g]
        if not fresh:
            raise TrainingError(
                f"every rollout of iteration {it} failed: {errors[0] if errors else 'no rollouts'}",
                hint="check the models of the other roles and the policy server",
            )
        t1 = time.perf_counter()
        try:
            self._maybe_rescore(fresh)
            batch, method_metrics = self.method.build_batch(groups, it, self._kl_of)
            samples = flatten(batch, self.cfg.temperature)
            update = None
            if samples:
                stats = policy_gradient_step(
                    self.model,
                    self.optimizer,
                    samples,
                    LossSettings.from_config(self.cfg),
                    ref_adapter=self.ref_adapter,
                )
                update = {k: v for k, v in vars(stats).items()}
        except Exception as exc:  # noqa: BLE001 - every failure becomes one message, never a traceback
            raise self._update_failed(it, exc) from exc
        rewards_by_task = {tid: [float(t.reward or 0.0) for t in g] for tid, g in groups.items()}
        self.method.end_iteration(rewards_by_task)
        t_update = time.perf_counter() - t1
        episodes = [r.episode for r in results]
        m: dict[str, Any] = {
            "iteration": it,
            "policy_version": policy.current,
            "tasks": len(chosen),
            "active_tasks": len(active),
            "rollouts": len(results),
            "rollout_errors": len(errors),
            "successes": sum(1 for t in fresh if t.success),
            "success_rate": sum(1 for t in fresh if t.success) / len(fresh),
            "mean_reward": sum(float(t.reward or 0.0) for t in fresh) / len(fresh),
            "advantage": _summarise([t.adv() for t in batch]),
            "mean_policy_calls": sum(t.length for t in fresh) / len(fresh),
            "malformed_rate": sum(e.malformed for e in episodes)
            / max(1, sum(e.policy_calls for e in episodes)),
            "truncated": sum(e.truncated for e in episodes),
            "off_temperature_calls": sum(t.length for t in batch) - len(samples),
            "batch_trajectories": len(batch),
            "update": update,
            "time_rollouts_s": round(t_rollouts, 3),
            "time_update_s": round(t_update, 3),
            **method_metrics,
        }
        self.metrics.append(m)
        self._save_iteration(it, m, episodes)
        return m

    def _update_failed(self, it: int, exc: Exception) -> TrainingError:
        """One paragraph for a failed update of iteration ``it`` (nothing of it was saved).

        An iteration is written only after its update, so the run resumes after the last
        finished one and replays ``it`` from its start, with the same task draw and seeds.
        """
        if isinstance(exc, TrainingError):
            what, hint = exc.message, exc.hint
        else:
            detail = " ".join(str(exc).split()) or "no message"
            what = f"{type(exc).__name__}: {detail[:400]}"
            hint = None
            if "out of memory" in detail.lower():
                hint = "lower --micro-batch-size (steps per forward/backward pass) or --max-new-tokens"
        done = it - 1
        message = (
            f"the policy update of iteration {it} failed ({what.rstrip('.')}). Its rollouts are in "
            f"{self.out / 'rollouts' / f'iter_{it:04d}'}; nothing of iteration {it} was saved, so the "
            f"run is resumable: the same command with --resume continues after iteration {done} and "
            f"replays iteration {it} from its start."
        )
        return TrainingError(message, hint=hint)

    def _active_tasks(self) -> list[str]:
        ids = list(self.pool)
        active = self.method.active_tasks(ids) if hasattr(self.method, "active_tasks") else ids
        if not active:
            raise TrainingError(
                "every task has been removed by Failure Curriculum Filtering",
                hint="add tasks, delete the FCF history file, or pass --no-fcf",
            )
        return active

    def _rescore_needed(self) -> bool:
        mode = self.opts.behaviour_logprobs
        return mode == "recompute" or (mode == "auto" and self.cfg.temperature != 1.0)

    def _maybe_rescore(self, trajectories: list[Any]) -> None:
        import dataclasses

        from agent_runtime.trainers.online.policy_gradient import score_logprobs

        if not self._rescore_needed():
            return
        for t in trajectories:
            scored = score_logprobs(
                self.model,
                t.steps,
                temperature=self.cfg.temperature,
                micro_batch_size=self.cfg.micro_batch_size,
            )
            t.steps = [
                dataclasses.replace(s, behaviour_logprobs=tuple(min(x, 0.0) for x in lp))
                for s, lp in zip(t.steps, scored, strict=True)
            ]

    def _kl_of(self, trajectory: Any) -> float:
        from agent_runtime.trainers.online.policy_gradient import score_logprobs, trajectory_kl

        current = score_logprobs(
            self.model,
            trajectory.steps,
            temperature=self.cfg.temperature,
            micro_batch_size=self.cfg.micro_batch_size,
        )
        return trajectory_kl(current, [s.behaviour_logprobs for s in trajectory.steps])

    def _worker_spec(self, runtime_config: Any, it: int) -> dict[str, Any]:
        return {
            "config": runtime_config.model_dump(mode="json"),
            "role": self.cfg.role,
            "base": str(self.resolved.base),
            "runs_dir": str(self.out / "rollouts" / f"iter_{it:04d}"),
            "max_turns": self.cfg.max_turns,
        }

    # -- outputs --------------------------------------------------------------------------------

    def _save_iteration(self, it: int, m: dict[str, Any], episodes: list[Any]) -> None:
        import torch

        where = self.iterations.dir(it)
        where.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(str(where), selected_adapters=["default"])
        (where / "episodes.jsonl").write_text(
            "".join(e.model_dump_json() + "\n" for e in episodes), encoding="utf-8"
        )
        state = {
            "optimizer": self.optimizer.state_dict(),
            "method": self.method.state_dict(),
            "metrics": self.metrics,
        }
        tmp = where / (STATE_FILE + ".tmp")
        torch.save(state, tmp)
        tmp.replace(where / STATE_FILE)
        data, training, _ = self._summaries(None)
        write_manifest(
            lora_manifest(
                self.method_name, self.cfg, self.opts, self.resolved, where, data=data, training=training
            )
        )
        self.iterations.append_metrics(m)

    def _summaries(self, runtime_s: float | None) -> tuple[DataSummary, TrainingSummary, dict[str, Any]]:
        rollouts = sum(m["rollouts"] for m in self.metrics)
        data = DataSummary(
            samples_before=rollouts,
            samples_after=sum(m["batch_trajectories"] for m in self.metrics),
            train_rows=sum((m["update"] or {}).get("samples", 0) for m in self.metrics),
            extra={"tasks": len(self.pool), "env": self.opts.env, "task_pattern": self.opts.tasks},
        )
        training = TrainingSummary(
            losses=[
                LossPoint(step=m["iteration"], loss=m["update"]["loss"]) for m in self.metrics if m["update"]
            ],
            steps=sum(1 for m in self.metrics if m["update"]),
            runtime_s=round(
                runtime_s or sum(m["time_rollouts_s"] + m["time_update_s"] for m in self.metrics), 3
            ),
            extra={"iterations": self.metrics},
        )
        return data, training, {"iterations": len(self.metrics)}


def train_online(
    method: str,
    cfg: OnlineRLConfig,
    opts: RLOptions,
    *,
    other_models: dict[str, Any] | None = None,
    runtime: Any = None,
    overwrite: bool = False,
    echo: Echo | None = None,
) -> tuple[DataSummary, TrainingSummary, dict[str, Any]]:
    """Run the loop (module docstring); returns what ``distill`` puts in the final manifest.

    ``runtime`` (a :class:`~agent_runtime.config.RuntimeConfig`) configures the other roles
    instead of ``opts.runtime_config``: embedders and benchmarks build it in code (the demo model's).
    """
    trainer = OnlineTrainer(
        method, cfg, opts, other_models=other_models, runtime=runtime, overwrite=overwrite, echo=echo
    )
    return trainer.run()
