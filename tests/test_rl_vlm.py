"""Online RL on the *untrained* tiny VLM: screenshots, random samples, vision special tokens.

An untrained model samples any token id, the vision special tokens (``<|image_pad|>``,
``<|video_pad|>``, ``<|vision_start|>`` …) included; one ``<|image_pad|>`` in a completion used to
crash the update ("Image features and image tokens do not match, tokens: 41, features: 40"),
because the scorer counted image slots over prompt + completion. These tests pin the fixes:
sampling suppresses those tokens, scoring reproduces the sampler exactly even when a completion
holds them (a server that does not suppress), an update failure is one resumable message, and
the runtime config's ``[graph] max_steps`` bounds the episodes.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_runtime.config import GraphConfig, RoleConfig, RuntimeConfig
from tests.doubles import ScriptedOpenAIServer
from tests.rl_helpers import MANAGER_PLAN, SHORT_WORKER_PROMPT, scripted_manager

pytestmark = pytest.mark.train

VISION = ("<|vision_start|>", "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>")
TASK = "ClockReachTab"  # 5 steps of its own budget: [graph] max_steps = 2 must cut it to 2


@pytest.fixture(scope="module")
def engine(tiny_vlm_dir: Path) -> Any:
    import torch

    from agent_runtime.models.engine import TransformersEngine

    torch.set_num_threads(1)
    return TransformersEngine(tiny_vlm_dir, dtype="float32")


def _image(color: tuple[int, int, int] = (30, 120, 200)) -> Any:
    from PIL import Image

    return Image.new("RGB", (100, 180), color)


def _data_url(image: Any) -> str:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _ids(engine: Any, *tokens: str) -> list[int]:
    return [int(engine.tokenizer.convert_tokens_to_ids(t)) for t in tokens]


def _multimodal(inputs: Any) -> dict[str, Any]:
    return {"pixel_values": inputs["pixel_values"], "image_grid_thw": inputs["image_grid_thw"]}


def _prefer_vision_tokens(model: Any, ids: list[int], bias: float = 12.0) -> Any:
    """A hook making the vision tokens the model's favourites (an untrained model at its worst)."""
    import torch

    head = model.get_output_embeddings()
    extra = torch.zeros(head.out_features)
    extra[ids] = bias

    def hook(_module: Any, _inputs: Any, output: Any) -> Any:
        return output + extra.to(output.dtype)

    return head.register_forward_hook(hook)


def _forced_generation_logprobs(engine: Any, inputs: Any, forced: list[int]) -> list[float]:
    """Log-probs of ``forced`` as ``generate`` computes them (KV cache, incremental positions)."""
    import torch
    from transformers import LogitsProcessor, LogitsProcessorList

    n = int(inputs["input_ids"].shape[1])

    class Force(LogitsProcessor):
        def __call__(self, input_ids: Any, scores: Any) -> Any:
            out = torch.full_like(scores, -float("inf"))
            out[:, forced[input_ids.shape[1] - n]] = 0.0
            return out

    with torch.no_grad():
        out = engine.model.generate(
            **inputs,
            max_new_tokens=len(forced),
            do_sample=False,
            logits_processor=LogitsProcessorList([Force()]),
            return_dict_in_generate=True,
            output_logits=True,
            pad_token_id=engine._pad_id,
        )
    assert out.sequences[0, n:].tolist() == forced
    return [float(torch.log_softmax(lg[0].float(), -1)[t]) for lg, t in zip(out.logits, forced, strict=True)]


# -- units -----------------------------------------------------------------------------------------


def test_vision_tokens_are_listed_and_spelled_out_placeholders_are_defused(engine: Any) -> None:
    from agent_runtime.models.engine import to_template_messages
    from agent_runtime.models.hf import defuse_vision_text
    from agent_runtime.models.protocol import ChatMessage
    from agent_runtime.trainers.data.datasets import ImageLoader, assistant, to_conversational

    assert engine.suppressed_ids == sorted(_ids(engine, *VISION))
    hostile = "a screen saying <|image_pad|><|video_pad|> and <|vision_start|>"
    message = ChatMessage.model_validate(
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": _data_url(_image())}},
                {"type": "text", "text": hostile},
            ],
        }
    )
    messages, images = to_template_messages([message])
    inputs = engine._encode(messages, images)
    slots = int(inputs["image_grid_thw"].prod(-1).sum()) // engine.processor.image_processor.merge_size**2
    ids = inputs["input_ids"][0].tolist()
    image_pad, video_pad = _ids(engine, "<|image_pad|>", "<|video_pad|>")
    assert ids.count(image_pad) == slots and video_pad not in ids  # only the image part made slots
    # the training rows defuse the same way, prompts and completions alike
    recorded = [{"role": "user", "content": [{"type": "text", "text": hostile}]}]
    prompt, _ = to_conversational(recorded, ".", ImageLoader())
    assert prompt[0]["content"][0]["text"] == defuse_vision_text(hostile) != hostile
    assert assistant("<|image_pad|>")[0]["content"][0]["text"] == defuse_vision_text("<|image_pad|>")
    assert assistant("<|image_pad|>", text_only=True)[0]["content"] == "<|image_pad|>"


def test_sampling_suppresses_vision_tokens_and_scores_equal_behaviour(engine: Any) -> None:
    """On-policy: the scorer's log-probs of the sampled tokens are the sampler's (ratio 1)."""
    from agent_runtime.models.engine import to_template_messages
    from agent_runtime.models.protocol import ChatCompletionRequest
    from agent_runtime.trainers.online.policy_gradient import score_logprobs
    from agent_runtime.trainers.online.samples import StepTokens

    vision = _ids(engine, *VISION)
    handle = _prefer_vision_tokens(engine.model, vision)
    try:
        steps = []
        for seed, color in ((1, (30, 120, 200)), (2, (200, 40, 40))):
            request = ChatCompletionRequest.model_validate(
                {
                    "model": engine.served_name,
                    "messages": [
                        {
                            "role": "user",
                            "content": [
                                {"type": "image_url", "image_url": {"url": _data_url(_image(color))}},
                                {"type": "text", "text": "Open the clock"},
                            ],
                        }
                    ],
                    "temperature": 1.0,
                    "max_tokens": 12,
                    "seed": seed,
                    "logprobs": True,
                    "return_token_ids": True,
                }
            )
            reply = engine.chat(request)
            choice = reply.choices[0]
            assert choice.token_ids and not set(choice.token_ids) & set(vision)
            assert choice.logprobs is not None
            behaviour = [t.logprob for t in choice.logprobs.content]
            inputs = engine._encode(*to_template_messages(request.messages))  # the pixels it saw
            assert inputs["input_ids"][0].tolist() == reply.prompt_token_ids
            steps.append(StepTokens(reply.prompt_token_ids, choice.token_ids, behaviour, _multimodal(inputs)))
        scored = score_logprobs(engine.model, steps)  # one left-padded batch of both
    finally:
        handle.remove()
    for step, lp in zip(steps, scored, strict=True):
        assert lp == pytest.approx(list(step.behaviour_logprobs), abs=1e-4)


def test_completion_holding_vision_tokens_scores_like_the_sampler(engine: Any) -> None:
    """A server that does not suppress them: scoring matches generation and the update runs."""
    import torch

    from agent_runtime.trainers.online.policy_gradient import (
        LossSettings,
        make_optimizer,
        policy_gradient_step,
        score_logprobs,
    )
    from agent_runtime.trainers.online.samples import StepSample, StepTokens

    image_pad, video_pad, start, end = _ids(engine, "<|image_pad|>", "<|video_pad|>", *VISION[:2])
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "tap the clock"}]}]
    inputs = engine._encode(messages, [_image()])
    forced = [image_pad, 50, video_pad, start, 60, image_pad, end, 70]
    behaviour = _forced_generation_logprobs(engine, inputs, forced)
    prompt = inputs["input_ids"][0].tolist()
    step = StepTokens(prompt, forced, behaviour, _multimodal(inputs))
    plain = StepTokens(prompt, [50, 51, 52], [-5.0, -5.0, -5.0], _multimodal(inputs))
    scored = score_logprobs(engine.model, [plain, step])
    assert scored[1] == pytest.approx(behaviour, abs=1e-4)

    from peft import LoraConfig, get_peft_model

    model = get_peft_model(
        engine.model, LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"], lora_dropout=0.0)
    )
    try:
        stats = policy_gradient_step(
            model,
            make_optimizer(model, 1e-3),
            [StepSample(step, advantage=1.0, trajectory_steps=1), StepSample(step, -1.0, 2)],
            LossSettings(),
        )
    finally:
        model.unload()  # hands the engine's model back without the adapter
    assert stats.tokens == 2 * len(forced) and stats.ratio_mean == pytest.approx(1.0, abs=1e-4)
    assert torch.isfinite(torch.tensor([stats.loss, stats.grad_norm])).all()


# -- one iteration of each method, from the untrained VLM ----------------------------------------


def _runtime(tmp_path: Path) -> RuntimeConfig:
    prompt = tmp_path / "worker_short.j2"
    prompt.write_text(SHORT_WORKER_PROMPT, encoding="utf-8")
    off = RoleConfig(enabled=False)
    return RuntimeConfig(
        roles={"rag": off, "reflector": off, "notetaker": off, "worker": RoleConfig(prompt=prompt)},
        graph=GraphConfig(reask=0, max_steps=2),
    )


def _episodes(out: Path, it: int = 1) -> list[dict[str, Any]]:
    lines = (out / f"iter_{it:04d}" / "episodes.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _sampled_ids(out: Path) -> set[int]:
    ids: set[int] = set()
    for calls in (out / "rollouts").glob("iter_*/*/calls.jsonl"):
        for line in calls.read_text().splitlines():
            rl = json.loads(line).get("extra", {}).get("rl")
            if rl:
                ids.update(rl["token_ids"])
    return ids


@pytest.fixture
def unsuppressed_sampler(monkeypatch: pytest.MonkeyPatch, engine: Any) -> list[int]:
    """The trainer's engine samples like a server that does not suppress vision tokens, and
    prefers them: every rollout's completions hold some."""
    import agent_runtime.models.engine as engine_module

    vision = _ids(engine, *VISION)

    class ServerLike(engine_module.TransformersEngine):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.suppressed_ids = []
            _prefer_vision_tokens(self.model, vision, bias=4.0)

    monkeypatch.setattr(engine_module, "TransformersEngine", ServerLike)
    return vision


def test_trpo_iteration_on_untrained_vlm_with_sampled_vision_tokens(
    tiny_vlm_dir: Path, tmp_path: Path, unsuppressed_sampler: list[int]
) -> None:
    from agent_runtime.trainers.online.loop import RLOptions, train_online
    from agent_runtime.trainers.online.trpo_config import TRPOConfig

    out = tmp_path / "out"
    cfg = TRPOConfig(
        base=str(tiny_vlm_dir),
        output_dir=out,
        role="worker",
        num_generations=2,
        max_new_tokens=12,
        lora_r=2,
        lora_alpha=4,
        learning_rate=1e-3,
    )
    opts = RLOptions(tasks=TASK, split="all", iterations=1)
    train_online("trpo", cfg, opts, other_models={"manager": scripted_manager()}, runtime=_runtime(tmp_path))
    assert _sampled_ids(out) & set(unsuppressed_sampler)  # the case that used to crash
    metrics = json.loads((out / "metrics.jsonl").read_text().splitlines()[-1])
    assert metrics["update"] is not None and metrics["update"]["replay_samples"] == 0
    assert metrics["update"]["ratio_mean"] == pytest.approx(1.0, abs=1e-3)  # on-policy
    assert all(0 < e["steps"] <= 2 for e in _episodes(out))  # [graph] max_steps = 2, not the task's 5
    assert (out / "iter_0001" / "manifest.json").is_file()


def test_dgrpo_update_failure_is_one_message_and_resumes(
    tiny_vlm_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the CLI: the documented command shape, a failing update, then ``--resume``."""
    import agent_runtime.trainers.online.policy_gradient as pg
    from agent_runtime.cli import app

    runner = CliRunner()
    out = tmp_path / "out"
    prompt = tmp_path / "worker_short.j2"
    prompt.write_text(SHORT_WORKER_PROMPT, encoding="utf-8")
    real_step = pg.policy_gradient_step

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("Image features and image tokens do not match,\n tokens: 41, features: 40")

    with ScriptedOpenAIServer({"manager": MANAGER_PLAN}) as manager:
        config = tmp_path / "cfg.toml"
        config.write_text(
            f"""
[models.scripted]
base_url = "{manager.base_url}"
model = "scripted-http"

[roles.manager]
model = "scripted"

[roles.worker]
prompt = "{prompt}"

[roles.reflector]
enabled = false

[roles.notetaker]
enabled = false

[roles.rag]
enabled = false

[graph]
max_steps = 2
reask = 0
""",
            encoding="utf-8",
        )
        args = [
            *("distill", "--method", "dgrpo", "--role", "worker", "--env", "simphone", "--tasks", TASK),
            *("--split", "all", "--group-size", "2", "--iterations", "1", "--base", str(tiny_vlm_dir)),
            *("--config", str(config), "--out", str(out), "--max-new-tokens", "12", "--lora-r", "2"),
        ]
        monkeypatch.setattr(pg, "policy_gradient_step", broken)
        failed = runner.invoke(app, args)
        assert failed.exit_code == 1, failed.output
        assert "Traceback" not in failed.output
        text = " ".join(failed.output.split())
        assert "policy update of iteration 1 failed (ValueError: Image features and image tokens do " in text
        assert "not match, tokens: 41, features: 40)" in text and "with --resume continues" in text
        assert not (out / "iter_0001" / "manifest.json").exists()  # nothing of it was saved

        monkeypatch.setattr(pg, "policy_gradient_step", real_step)
        resumed = runner.invoke(app, [*args, "--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert "iter 1: success" in resumed.output
    assert all(0 < e["steps"] <= 2 for e in _episodes(out))
    metrics = json.loads((out / "metrics.jsonl").read_text().splitlines()[-1])
    assert metrics["update"]["ratio_mean"] == pytest.approx(1.0, abs=1e-3)
    assert len(list((out / "rollouts" / "iter_0001").iterdir())) == 2  # the failed attempt's runs cleared
