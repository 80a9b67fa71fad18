"""Helpers of the online RL tests (only ever used from tests).

The tiny random model never writes a parseable Worker reply, so every rollout would earn the same
reward and every advantage would be 0 — the loop would run but learn nothing checkable.
:func:`build_rl_policy` warm-starts it with a few supervised steps on the Worker's *real*
prompts (recorded by a rollout of the untrained model) towards two replies in equal measure:
the right answer of ``SettingsWifiNetworkQuestion`` (seed 0: "Apt 4B") and a wrong one. Sampled
at temperature 1 the result succeeds on that task about half the time and never on
``ShopCartTotalQuestion``: groups with mixed outcomes (non-zero advantages) and a task that only
fails (FCF).
"""

from __future__ import annotations

import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agent_runtime.config import GraphConfig, RoleConfig, RuntimeConfig
from tests.doubles import ScriptedChatModel, manager_reply

RIGHT = '### Action ###\n{"action": "answer", "text": "Apt 4B"}'
WRONG = '### Action ###\n{"action": "answer", "text": "42"}'
TASKS = "SettingsWifiNetworkQuestion,ShopCartTotalQuestion"
MANAGER_PLAN = manager_reply(["Answer the question"])


#: A short Worker prompt (a prompt override, as users write them): the tiny model learns it in
#: a few steps, where the built-in 1.3k-token prompt would take minutes on CPU.
SHORT_WORKER_PROMPT = "### User Request ###\n{{ task }}\n### Last Action ###\n{{ last_feedback }}\n"


def runtime_config(workdir: Path) -> RuntimeConfig:
    """Manager + Worker only (the graph's optional roles off), the short Worker prompt, one re-ask."""
    prompt = workdir / "worker_short.j2"
    prompt.parent.mkdir(parents=True, exist_ok=True)
    prompt.write_text(SHORT_WORKER_PROMPT, encoding="utf-8")
    off = RoleConfig(enabled=False)
    return RuntimeConfig(
        roles={"rag": off, "reflector": off, "notetaker": off, "worker": RoleConfig(prompt=prompt)},
        graph=GraphConfig(reask=1),
    )


def scripted_manager() -> ScriptedChatModel:
    return ScriptedChatModel(script={"manager": MANAGER_PLAN})


def build_rl_policy(tiny_dir: Path, out_dir: Path, *, steps: int = 60) -> Path:
    """Warm-start the tiny model (module docstring) and save it as a full model directory."""
    import torch

    from agent_runtime.models.engine import TransformersEngine
    from agent_runtime.trainers.online.policy import InProcessPolicy
    from agent_runtime.trainers.online.policy_gradient import collate_for, completion_logprobs
    from agent_runtime.trainers.online.rollouts import RolloutRequest, RolloutWorker
    from agent_runtime.trainers.online.samples import StepTokens

    engine = TransformersEngine(tiny_dir, dtype="float32")
    policy = InProcessPolicy(engine, "warmup", temperature=1.0, top_p=1.0, max_tokens=4)
    worker = RolloutWorker(
        runtime_config(out_dir.parent),
        "worker",
        policy.chat_model,
        engine.processor,
        out_dir.parent / "warmup-runs",
        other_models={"manager": scripted_manager()},
        max_turns=1,
    )
    prompts = []
    for name in TASKS.split(","):
        result = worker.play(RolloutRequest(task_name=name, task_seed=0, sample_seed=0))
        assert result.trajectory is not None, result.episode.error
        prompts.append(result.trajectory.steps[0])  # the first attempt: the clean Worker prompt
    tok = engine.tokenizer
    end = tok.convert_tokens_to_ids("<|im_end|>")
    targets = [tok(text, add_special_tokens=False)["input_ids"] + [end] for text in (RIGHT, WRONG)]
    batch_steps = [
        StepTokens(p.prompt_ids, t, [0.0] * len(t), p.multimodal) for p in prompts for t in targets
    ]
    model = engine.model
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    batch = collate_for(model, batch_steps)
    for _ in range(steps):
        opt.zero_grad()
        logp = completion_logprobs(model, batch)
        loss = -(logp * batch.mask).sum() / batch.mask.sum()
        loss.backward()
        opt.step()
    model.eval()
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    engine.processor.save_pretrained(out_dir)
    return out_dir


def _cli() -> list[str]:
    script = Path(sys.executable).with_name("agent-runtime")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from agent_runtime.cli import main; main()"]


@contextmanager
def served(model_dir: Path) -> Iterator[str]:
    """``agent-runtime serve`` as a real process; yields its /v1 URL."""
    proc = subprocess.Popen(
        [*_cli(), "serve", "--model", str(model_dir), "--port", "0", "--threads", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
    deadline = time.monotonic() + 120
    seen: list[str] = []
    url = None
    try:
        while url is None:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise RuntimeError(f"server did not start: {''.join(seen)[-2000:]}") from None
            seen.append(line)
            if match := re.search(r"listening at (http://\S+/v1)", line):
                url = match.group(1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def lora_weights(adapter_dir: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    return load_file(str(adapter_dir / "adapter_model.safetensors"))
