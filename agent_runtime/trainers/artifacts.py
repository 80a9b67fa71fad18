"""What ``distill`` leaves behind: the adapter or model, and its manifest.

An output directory holds either a PEFT LoRA adapter (``adapter_config.json`` +
``adapter_model.safetensors``, the layout ``vllm serve --lora-modules NAME=DIR`` loads) or a full
model (``config.json`` + weights + processor), plus ``manifest.json`` (:class:`Manifest`): data
counts before/after each filter, hyper-parameters, losses, the base model, the source runs, and
how to serve the result. A distill output is also a model reference
(:mod:`agent_runtime.models.refs`): ``--base OUT`` resolves to its base + adapter.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from agent_runtime.errors import TrainingError
from agent_runtime.models.refs import MANIFEST, TRANSFORMERS_PREFIX
from agent_runtime.trainers.base_config import LANGUAGE_MODEL_LORA_TARGETS
from agent_runtime.trainers.data.filters import FilterReport

MANIFEST_VERSION = 1
#: LoRA targets of a text-only causal LM: its modules are ``model.layers.N.*``, with no
#: ``language_model`` in the name, so the vision-language default would wrap nothing.
TEXT_MODEL_LORA_TARGETS = r".*\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)"


def lora_targets_for(targets: str, *, text_only: bool) -> str:
    """The LoRA target regex to use: the default names the VLM's language model, which a
    text-only model does not have, so there the default becomes every decoder projection.
    An explicitly chosen regex is kept as it is."""
    if text_only and targets == LANGUAGE_MODEL_LORA_TARGETS:
        return TEXT_MODEL_LORA_TARGETS
    return targets


class LossPoint(BaseModel):
    step: int
    loss: float
    round: int | None = Field(None, description="IRR round")


class DataSummary(BaseModel):
    source_runs: list[str] = Field(default_factory=list)
    skipped_runs: dict[str, str] = Field(default_factory=dict)
    samples_before: int = 0
    filters: list[FilterReport] = Field(default_factory=list)
    samples_after: int = 0
    max_samples: int | None = None
    train_rows: int = Field(0, description="rows the trainer saw (samples or preference pairs)")
    extra: dict[str, Any] = Field(
        default_factory=dict, description="method-specific counts (pairs per level, IRR)"
    )


class TrainingSummary(BaseModel):
    losses: list[LossPoint] = Field(default_factory=list)
    steps: int = 0
    runtime_s: float = 0.0
    extra: dict[str, Any] = Field(default_factory=dict)


class ServeInfo(BaseModel):
    vllm: str = Field(description="a vllm serve command line that serves the result")
    server: str = Field(description="the same with agent-runtime's own OpenAI-compatible server")
    model: str = Field(description="the model string for agent-runtime's config (in-process backend)")
    config_toml: str = Field(description="a config snippet binding the role to the result")


class Manifest(BaseModel):
    """A distill output's ``manifest.json``; ``kind``, ``base_model`` and ``output`` also say which
    model it holds (:class:`agent_runtime.models.refs.DistillOutput` reads just those three)."""

    schema_version: int = MANIFEST_VERSION
    kind: Literal["lora", "full"]
    method: str
    role: str
    base_model: str = Field(description="the base model directory (for LoRA: what the adapter applies to)")
    init_adapter: str | None = Field(None, description="the adapter training started from, if any")
    output: str = Field(description="the output directory")
    created_at: float = Field(default_factory=time.time)
    agent_runtime_version: str = ""
    data: DataSummary = DataSummary()
    hyperparameters: dict[str, Any] = Field(default_factory=dict)
    training: TrainingSummary = TrainingSummary()
    serve: ServeInfo


#: LoRA ranks vLLM's ``--max-lora-rank`` accepts.
VLLM_LORA_RANKS = (8, 16, 32, 64, 128, 256, 320, 512)


def serve_info(
    kind: Literal["lora", "full"], role: str, base: Path, out: Path, lora_rank: int | None
) -> ServeInfo:
    """How to serve a distill output: vLLM, agent-runtime's own server, or in-process.

    ``role`` may name several roles (``manager,worker``: one adapter trained on all of them).
    """
    roles = [r for r in role.split(",") if r]
    name = f"{'-'.join(roles)}-distilled"
    if kind == "lora":
        rank = next((r for r in VLLM_LORA_RANKS if r >= (lora_rank or 8)), VLLM_LORA_RANKS[-1])
        vllm = f"vllm serve {base} --enable-lora --lora-modules {name}={out} --max-lora-rank {rank}"
        body = json.dumps({"lora_name": name, "lora_path": str(out)})
        server = (
            f"agent-runtime serve --model {base}  # then: curl -X POST http://127.0.0.1:8000/v1/load_lora_adapter"
            f" -H 'Content-Type: application/json' -d '{body}'"
        )
        model = f"{TRANSFORMERS_PREFIX}{base}?adapter={out}"
    else:
        vllm = f"vllm serve {out} --served-model-name {name}"
        server = f"agent-runtime serve --model {out} --served-model-name {name}"
        model = f"{TRANSFORMERS_PREFIX}{out}"
    table = f"{'_'.join(roles)}_distilled"
    bindings = "".join(f'[roles.{r}]\nmodel = "{table}"\n' for r in roles)
    snippet = (
        f"# served by vLLM or agent-runtime serve (the commands above):\n[models.{table}]\n"
        f'base_url = "http://127.0.0.1:8000/v1"\nmodel = "{name}"\n\n'
        f"# or in-process, no server (use one of the two tables):\n# [models.{table}]\n"
        f'# model = "{model}"\n\n{bindings}'
        f"# keep coords/min_pixels/max_pixels equal to the base model's settings\n"
    )
    return ServeInfo(vllm=vllm, server=server, model=model, config_toml=snippet)


def write_manifest(manifest: Manifest) -> Path:
    path = Path(manifest.output) / MANIFEST
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
    tmp.replace(path)
    return path


def read_manifest(path: Path | str) -> Manifest:
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / MANIFEST
    try:
        return Manifest.model_validate_json(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TrainingError(f"cannot read {p}: {exc}") from None
    except ValidationError as exc:
        raise TrainingError(f"{p} is not a distill manifest: {exc.errors()[0]['msg']}") from None
