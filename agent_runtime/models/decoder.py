"""One forward per token for a whole batch: a Llama-family decoder with a row-per-sequence KV cache.

Hugging Face ``generate`` spends ~100 ms per token on a 30-layer 135M model on two CPU cores,
almost all of it per-module Python and per-call overhead, and decodes one request at a time.
:class:`SlotDecoder` runs the same layers with as few tensor operations as the maths needs,
for every running sequence at once, over a pre-allocated cache (:class:`KVRows`): row ``i`` holds
the keys and values of one sequence, rows ``0 .. B-1`` are the running batch (views, no gather),
the rows after them keep finished sequences' tokens so the next prompt that shares a prefix
(the same role's instructions, a group of rollouts of one task) starts from it.

Two ways to hold the weights (:class:`Precision`):

* ``"exact"`` calls the model's own modules (norms, projections with any PEFT LoRA wrapped around
  them, the MLP) in the model's dtype, so the log-probabilities it reports are the trainer's
  forward pass to float rounding: the online-RL rollouts sample from it and their on-policy
  importance ratio stays 1. The LoRA weights are read live: an optimizer step is seen at once.
* ``"fast"`` (frozen weights: ``run``, ``eval``, ``serve``) packs them for the CPU it runs on, in
  the number formats :mod:`agent_runtime.models.cpu_formats` chose for that processor
  (:class:`~agent_runtime.models.cpu_formats.KernelFormats`). Dense products (prefill, and decode
  products of other weights) run in ``formats.matmul``: bfloat16 where the processor has it
  natively, else float32 — then the packs *are* the model's own float32 weights (one product per
  projection), so the fast path holds no second dense copy. With ``formats.int4_decode``, a
  projection whose weights lie on a 4-bit grid of 32-wide groups (a GGUF Q4 base such as the
  demo model's, dequantised) is also kept as 4 bits — the base's own values — and decode steps
  multiply it with
  ``_weight_int4pack_mm_for_cpu`` (bfloat16 activations in: that kernel's fast path). A LoRA
  adapter is applied beside the packed base (its two small matrices per projection, scaling
  folded in, float32), never merged into it, so the base stays on its grid. The residual stream,
  norms, softmax and the cache stay float32. Greedy decisions are those of the float model except
  where two candidates are within bfloat16 rounding of each other (``benchmarks/demo_model.py``
  counts agreement); with float32 products and no 4-bit grid they are the float model's.

Supported: decoder layers of the Llama shape (``llama``, ``qwen2``, ``qwen3``, ``mistral`` text
models: RMSNorm, rotary positions of a fixed table, grouped-query attention, a gated SiLU MLP).
:func:`supports` says no for anything else (sliding windows, length-dependent rotary scaling,
vision-language models), and the engine keeps ``generate`` for it.

This module imports torch at import time; import it lazily.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
from dataclasses import dataclass
from typing import Any, Literal

import torch
import torch.nn.functional as F  # noqa: N812 - the usual name

from agent_runtime.models.cpu_formats import KernelFormats

Precision = Literal["exact", "fast"]
PRECISIONS: tuple[Precision, ...] = ("exact", "fast")

_MODEL_TYPES = {"llama", "qwen2", "qwen3", "mistral"}
_STATIC_ROPE = {None, "default", "linear", "llama3", "yarn"}
#: 4-bit groups along the input dimension (GGUF's Q4_0/Q4_1 block size).
GROUP = 32
#: Products over at most this many rows (decode steps) use the 4-bit pack; more (prefill) dense.
_PACKED_ROWS = 16
#: Rows of a weight checked for a 4-bit grid at a time (:func:`_on_int4_grid`).
_GRID_ROWS = 1024
#: Rows of the cache grow in steps of this many positions.
_CAP_STEP = 256
#: The cache grows by this many rows at a time (each growth reallocates every layer).
_ROW_STEP = 4


def inner_model(model: Any) -> Any:
    """The causal LM under any PEFT wrapper (``PeftModel`` → its ``LlamaForCausalLM``)."""
    get_base = getattr(model, "get_base_model", None)
    return get_base() if callable(get_base) else model


def supports(model: Any) -> str | None:
    """None when :class:`SlotDecoder` can run ``model``, else why not (one line)."""
    lm = inner_model(model)
    cfg = getattr(lm, "config", None)
    kind = getattr(cfg, "model_type", None)
    if kind not in _MODEL_TYPES:
        return f"model type {kind!r} is not a Llama-family text model"
    if getattr(cfg, "use_sliding_window", False) or any(
        t != "full_attention" for t in (getattr(cfg, "layer_types", None) or [])
    ):
        return "sliding-window attention"
    rope = getattr(cfg, "rope_parameters", None) or getattr(cfg, "rope_scaling", None) or {}
    if rope.get("rope_type", rope.get("type")) not in _STATIC_ROPE:
        return f"rotary scaling {rope.get('rope_type')!r} depends on the length"
    body = getattr(lm, "model", None)
    layers = getattr(body, "layers", None)
    if layers is None or getattr(body, "rotary_emb", None) is None or getattr(lm, "lm_head", None) is None:
        return "no decoder layers / rotary embedding / lm_head where a Llama model has them"
    for layer in layers:
        attn, mlp = layer.self_attn, layer.mlp
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            if not hasattr(attn, name):
                return f"attention without {name}"
        for name in ("gate_proj", "up_proj", "down_proj"):
            if not hasattr(mlp, name):
                return f"MLP without {name}"
        if type(mlp.act_fn).__name__ not in ("SiLU", "SiLUActivation"):
            return f"MLP activation {type(mlp.act_fn).__name__}"
    return None


# --- weights ----------------------------------------------------------------------------------


def _on_int4_grid(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
    """(levels 0..15, scale, minimum) per group of :data:`GROUP` inputs when ``weight`` lies on
    such a grid exactly (to float rounding), else None.

    The grid is read as GGUF's Q4_1 writes it: a group's minimum is level 0 and its maximum
    level 15 (a weight quantised otherwise is kept dense, never re-quantised). Rows are checked a
    block at a time, so the temporaries stay small (peak memory) and a weight off the grid (the
    output layer) is rejected at its first block.
    """
    out, width = weight.shape
    if width % GROUP:
        return None
    parts: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []
    for first in range(0, out, _GRID_ROWS):
        w = weight[first : first + _GRID_ROWS].detach().float().reshape(-1, width // GROUP, GROUP)
        low = w.amin(-1)
        scale = (w.amax(-1) - low) / 15
        safe = torch.where(scale > 0, scale, torch.ones_like(scale))
        levels = torch.round((w - low[..., None]) / safe[..., None]).clamp(0, 15)
        rebuilt = levels * scale[..., None] + low[..., None]
        if bool(((rebuilt - w).abs() > 1e-4 * safe[..., None] + 1e-7).any()):
            return None
        parts.append((levels.reshape(-1, width).to(torch.int32), scale, low))
    levels, scale, low = (torch.cat([p[k] for p in parts]) for k in range(3))
    return levels, scale, low


class _Packed:
    """Frozen projections of one input, ``y = x [W₁ W₂ …]ᵀ (+ b)``, stored for fast CPU products,
    float32 in and out.

    Decode steps (a few rows) read the 4-bit pack (all projections in one) when the weights have
    one and the formats use it: they are bound by memory traffic. Prefill (hundreds of rows) is
    bound by arithmetic, where a dense product is faster than unpacking 4 bits per tile; it runs
    in ``formats.matmul``. In float32 the dense weights are the model's own tensors, one product
    each (their outputs concatenated): a concatenated copy would double the resident weights, as
    a model loaded from safetensors keeps its file's pages mapped.
    """

    def __init__(
        self, weights: list[torch.Tensor], bias: torch.Tensor | None, formats: KernelFormats
    ) -> None:
        self.dtype = torch.bfloat16 if formats.matmul == "bfloat16" else torch.float32
        weights = [w.detach() for w in weights]
        if self.dtype == torch.float32 and all(w.dtype == torch.float32 for w in weights):
            self.dense = [w.contiguous() for w in weights]
        else:
            self.dense = [torch.cat([w.to(self.dtype) for w in weights]).contiguous()]
        self.bias = None if bias is None else bias.detach().to(self.dtype)
        self.int4: torch.Tensor | None = None
        grids = [_on_int4_grid(w) for w in weights] if formats.int4_decode else [None]
        if all(g is not None for g in grids):
            levels, scale, low = (torch.cat([g[k] for g in grids if g is not None]) for k in range(3))
            self.int4 = torch.ops.aten._convert_weight_to_int4pack_for_cpu(levels.contiguous(), 1)
            # The kernel computes (level - 8) * scale + zero: zero = low + 8 * scale.
            self.scales = torch.stack([scale.T, (low + 8 * scale).T], -1).contiguous().to(torch.bfloat16)
            self.int4_bias = None if bias is None else bias.detach().float()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """``x``: (N, in) float32 → (N, out) float32."""
        if self.int4 is not None and x.shape[0] <= _PACKED_ROWS:
            y = torch.ops.aten._weight_int4pack_mm_for_cpu(
                x.to(torch.bfloat16), self.int4, GROUP, self.scales
            ).float()
            return y if self.int4_bias is None else y + self.int4_bias
        xd = x.to(self.dtype)
        if len(self.dense) == 1:
            return F.linear(xd, self.dense[0], self.bias).float()
        y = torch.cat([F.linear(xd, w) for w in self.dense], -1)
        return (y if self.bias is None else y + self.bias).float()


def _lora_parts(module: Any, adapter: str | None) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(A, B·scaling) of the active LoRA adapter around a projection, or None."""
    if adapter is None or not hasattr(module, "lora_A") or adapter not in module.lora_A:
        return None
    if getattr(module, "use_dora", {}).get(adapter, False):
        raise ValueError("DoRA adapters are not supported by the fast decoder")
    a = module.lora_A[adapter].weight.detach().float()
    b = module.lora_B[adapter].weight.detach().float() * float(module.scaling[adapter])
    return a, b


def _base_of(module: Any) -> Any:
    return getattr(module, "base_layer", module)


def _pack(bases: list[Any], formats: KernelFormats) -> _Packed:
    """The frozen base projections of one input, packed as one (:class:`_Packed`)."""
    weights = [b.weight for b in bases]
    biases = [b.bias for b in bases]
    if all(b is None for b in biases):
        return _Packed(weights, None, formats)
    bias = torch.cat(
        [
            b.detach().float() if b is not None else torch.zeros(m.weight.shape[0])
            for b, m in zip(biases, bases, strict=True)
        ]
    )
    return _Packed(weights, bias, formats)


class _Fused:
    """Several projections of one input as one packed product (shared by every adapter),
    plus the adapter's LoRA beside it."""

    def __init__(self, modules: list[Any], adapter: str | None, base: _Packed) -> None:
        bases = [_base_of(m) for m in modules]
        self.base = base
        self.lora_a: torch.Tensor | None = None
        parts = [_lora_parts(m, adapter) for m in modules]
        if any(p is not None for p in parts):
            rows = [b.weight.shape[0] for b in bases]
            rank = sum(p[0].shape[0] for p in parts if p is not None)
            a = torch.cat([p[0] for p in parts if p is not None])
            b = torch.zeros(sum(rows), rank)
            r0 = c0 = 0
            for p, n in zip(parts, rows, strict=True):
                if p is not None:
                    b[r0 : r0 + n, c0 : c0 + p[0].shape[0]] = p[1]
                    c0 += p[0].shape[0]
                r0 += n
            # float32: bfloat16 products this small cost more than the packed base itself
            self.lora_a = a.contiguous()
            self.lora_bt = b.T.contiguous()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """``x``: (N, in) float32 → (N, out) float32."""
        y = self.base(x)
        if self.lora_a is not None:
            y = torch.addmm(y, F.linear(x, self.lora_a), self.lora_bt)
        return y


@dataclass
class _FastLayer:
    norm1: torch.Tensor
    norm2: torch.Tensor
    qkv: _Fused
    o: _Fused
    gate_up: _Fused
    down: _Fused
    q_norm: torch.Tensor | None
    k_norm: torch.Tensor | None


# --- the cache --------------------------------------------------------------------------------


def _return_freed_memory() -> None:
    """Hand the heap pages a cache growth freed back to the OS. glibc keeps freed blocks below its
    (adaptive) mmap threshold for reuse, and the process's resident memory counts them: without
    this, growing a 16-sequence cache held the old and the new cache at once (~0.5 GB more)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6").malloc_trim(0)


class KVRows:
    """Keys and values per layer, one row per sequence, grown on demand (rows and positions).

    ``k[layer]`` and ``v[layer]`` are (rows, kv_heads, positions, head_dim). Each layer is its own
    tensor so that growing reallocates one layer at a time, returning the old one to the OS
    before the next: the peak memory of a growth is the cache plus one layer, not twice the cache.
    """

    def __init__(
        self,
        layers: int,
        kv_heads: int,
        head_dim: int,
        dtype: torch.dtype,
        device: torch.device | str = "cpu",
    ) -> None:
        self.shape = (layers, kv_heads, head_dim)
        self.dtype = dtype
        self.device = device
        self.rows = 0
        self.cap = 0
        self.k: list[torch.Tensor] = []
        self.v: list[torch.Tensor] = []

    def _grown(self, rows: int, positions: int) -> tuple[int, int]:
        """The (rows, positions) the cache has once it holds ``rows`` × ``positions``."""
        return (
            max(self.rows, -(-rows // _ROW_STEP) * _ROW_STEP),
            max(self.cap, -(-positions // _CAP_STEP) * _CAP_STEP),
        )

    def bytes_for(self, rows: int, positions: int) -> int:
        """The cache's size in bytes once it holds ``rows`` × ``positions`` (it never shrinks)."""
        new_rows, new_cap = self._grown(rows, positions)
        layers, heads, dim = self.shape
        return 2 * layers * new_rows * new_cap * heads * dim * self.dtype.itemsize

    def reserve(self, rows: int, positions: int) -> None:
        """At least ``rows`` rows of ``positions`` positions, keeping what is stored."""
        if rows <= self.rows and positions <= self.cap:
            return
        new_rows, new_cap = self._grown(rows, positions)
        layers, heads, dim = self.shape
        for store in (self.k, self.v):
            for i in range(layers):
                grown = torch.zeros(new_rows, heads, new_cap, dim, dtype=self.dtype, device=self.device)
                if i < len(store):
                    grown[: self.rows, :, : self.cap] = store[i]
                    store[i] = grown
                    _return_freed_memory()  # the old layer, before the next one is allocated
                else:
                    store.append(grown)
        self.rows, self.cap = new_rows, new_cap

    def clear(self) -> None:
        """Drop every row (the memory goes back to the OS); the next reserve starts afresh."""
        self.k, self.v = [], []
        self.rows = self.cap = 0
        _return_freed_memory()

    def _tensors(self) -> list[torch.Tensor]:
        return [*self.k, *self.v]

    def swap(self, a: int, b: int, length: int) -> None:
        """Exchange the first ``length`` positions of rows ``a`` and ``b``."""
        if a == b or length <= 0:
            return
        for t in self._tensors():
            held = t[a, :, :length].clone()
            t[a, :, :length] = t[b, :, :length]
            t[b, :, :length] = held

    def copy(self, src: int, dst: int, length: int) -> None:
        for t in self._tensors():
            t[dst, :, :length] = t[src, :, :length]


# --- the decoder ------------------------------------------------------------------------------


class SlotDecoder:
    """Prefill one sequence into a cache row; decode one token for rows ``0 .. B-1``."""

    def __init__(
        self, model: Any, precision: Precision = "exact", formats: KernelFormats | None = None
    ) -> None:
        """``formats``: the fast path's number formats; None asks this processor
        (:func:`agent_runtime.models.cpu_formats.current`, measured once per machine)."""
        why = supports(model)
        if why is not None:
            raise ValueError(f"the batched decoder cannot run this model: {why}")
        self.model = model
        self.lm = inner_model(model)
        first = next(self.lm.parameters())
        self.device = first.device
        # packed 4-bit products are CPU kernels: elsewhere the model's own modules run
        self.precision: Precision = precision if self.device.type == "cpu" else "exact"
        if formats is None and self.precision == "fast":
            from agent_runtime.models.cpu_formats import current

            formats = current()
        self.formats = formats
        cfg = self.lm.config
        body = self.lm.model
        self.heads = int(cfg.num_attention_heads)
        self.kv_heads = int(getattr(cfg, "num_key_value_heads", None) or self.heads)
        self.head_dim = int(getattr(cfg, "head_dim", None) or cfg.hidden_size // self.heads)
        self.group = self.heads // self.kv_heads
        self.hidden = int(cfg.hidden_size)
        self.eps = float(cfg.rms_norm_eps)
        self.layers = list(body.layers)
        self.embed = body.embed_tokens
        self.vocab = int(self.lm.lm_head.weight.shape[0])
        rotary = body.rotary_emb
        self.inv_freq = rotary.inv_freq.detach().float().to(self.device).clone()
        self.rope_scale = float(getattr(rotary, "attention_scaling", 1.0))
        self.scaling = float(getattr(self.layers[0].self_attn, "scaling", self.head_dim**-0.5))
        self.dtype = first.dtype if self.precision == "exact" else torch.float32
        self.cache = KVRows(len(self.layers), self.kv_heads, self.head_dim, self.dtype, self.device)
        self._cos = torch.empty(0)
        self._sin = torch.empty(0)
        self._fast: dict[str | None, list[_FastLayer]] = {}
        #: Packed base weights by their modules: built once, whatever adapters come and go.
        self._packs: dict[tuple[int, ...], _Packed] = {}
        self._fast_head: _Fused | None = None
        self._fast_norm: torch.Tensor | None = None

    # ..... weights for the fast path

    def _fast_layers(self, adapter: str | None) -> list[_FastLayer]:
        if adapter not in self._fast:
            built: list[_FastLayer] = []
            for layer in self.layers:
                attn, mlp = layer.self_attn, layer.mlp
                qn, kn = getattr(attn, "q_norm", None), getattr(attn, "k_norm", None)
                built.append(
                    _FastLayer(
                        norm1=layer.input_layernorm.weight.detach().float(),
                        norm2=layer.post_attention_layernorm.weight.detach().float(),
                        qkv=self._fused([attn.q_proj, attn.k_proj, attn.v_proj], adapter),
                        o=self._fused([attn.o_proj], adapter),
                        gate_up=self._fused([mlp.gate_proj, mlp.up_proj], adapter),
                        down=self._fused([mlp.down_proj], adapter),
                        q_norm=None if qn is None else qn.weight.detach().float(),
                        k_norm=None if kn is None else kn.weight.detach().float(),
                    )
                )
            self._fast[adapter] = built
        if self._fast_head is None:
            self._fast_head = self._fused([self.lm.lm_head], None)
            self._fast_norm = self.lm.model.norm.weight.detach().float()
        return self._fast[adapter]

    def _fused(self, modules: list[Any], adapter: str | None) -> _Fused:
        bases = [_base_of(m) for m in modules]
        key = tuple(id(b) for b in bases)
        if key not in self._packs:
            assert self.formats is not None  # set whenever the precision is "fast"
            self._packs[key] = _pack(bases, self.formats)
        return _Fused(modules, adapter, self._packs[key])

    def forget_adapter(self, adapter: str | None) -> None:
        """Drop packed weights built for ``adapter`` (unloaded, or reloaded under its name)."""
        self._fast.pop(adapter, None)

    # ..... rotary positions

    def _rope(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sign-folded sin at ``positions`` (see :meth:`_rotate`)."""
        need = int(positions.max()) + 1
        if need > self._cos.shape[0]:
            size = -(-need // _CAP_STEP) * _CAP_STEP
            freqs = torch.arange(size, dtype=torch.float32, device=self.device)[:, None] * self.inv_freq
            cos, sin = freqs.cos() * self.rope_scale, freqs.sin() * self.rope_scale
            self._cos, self._sin = torch.cat([cos, cos], -1), torch.cat([-sin, sin], -1)
        dtype = self.dtype if self.precision == "exact" else torch.float32
        return self._cos[positions].to(dtype), self._sin[positions].to(dtype)

    @staticmethod
    def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """Rotary embedding: ``x·cos + rotate_half(x)·sin`` with the sign folded into ``sin``
        (``rotate_half(x) = (-x₂, x₁)`` is a roll by half the width)."""
        return torch.addcmul(x * cos, x.roll(x.shape[-1] // 2, -1), sin)

    # ..... one layer, both precisions

    def _project_qkv(self, i: int, x: torch.Tensor, adapter: str | None) -> tuple[torch.Tensor, ...]:
        """(N, D) → q (N, H·d), k (N, KV·d), v (N, KV·d), in the cache dtype."""
        if self.precision == "exact":
            layer = self.layers[i]
            h = layer.input_layernorm(x)
            attn = layer.self_attn
            return attn.q_proj(h), attn.k_proj(h), attn.v_proj(h)
        fl = self._fast[adapter][i]
        h = F.rms_norm(x, (self.hidden,), fl.norm1, self.eps)
        q, k, v = fl.qkv(h).split(
            [self.heads * self.head_dim, self.kv_heads * self.head_dim, self.kv_heads * self.head_dim], -1
        )
        return q, k, v

    def _head_norms(
        self, i: int, q: torch.Tensor, k: torch.Tensor, adapter: str | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Qwen3's per-head RMSNorm of queries and keys (before the rotation)."""
        if self.precision == "exact":
            attn = self.layers[i].self_attn
            if getattr(attn, "q_norm", None) is not None:
                q, k = attn.q_norm(q), attn.k_norm(k)
            return q, k
        fl = self._fast[adapter][i]
        if fl.q_norm is not None and fl.k_norm is not None:
            q = F.rms_norm(q, (self.head_dim,), fl.q_norm, self.eps)
            k = F.rms_norm(k, (self.head_dim,), fl.k_norm, self.eps)
        return q, k

    def _finish_layer(
        self, i: int, x: torch.Tensor, attn_out: torch.Tensor, adapter: str | None
    ) -> torch.Tensor:
        """Output projection, residual, MLP, residual: (N, D) → (N, D) in the residual dtype."""
        if self.precision == "exact":
            layer = self.layers[i]
            x = x + layer.self_attn.o_proj(attn_out)
            return x + layer.mlp(layer.post_attention_layernorm(x))
        fl = self._fast[adapter][i]
        x = x + fl.o(attn_out.float())
        gate, up = fl.gate_up(F.rms_norm(x, (self.hidden,), fl.norm2, self.eps)).chunk(2, -1)
        return x + fl.down(F.silu(gate) * up)

    def _logits(self, x: torch.Tensor) -> torch.Tensor:
        """(N, D) → (N, vocab) float32 logits."""
        if self.precision == "exact":
            return self.lm.lm_head(self.lm.model.norm(x)).float()
        assert self._fast_head is not None and self._fast_norm is not None
        return self._fast_head(F.rms_norm(x, (self.hidden,), self._fast_norm, self.eps))

    def _embed(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        return x if self.precision == "exact" else x.float()

    def prepare(self, adapter: str | None) -> None:
        """Build what ``adapter`` needs before a batch uses it (packed weights in fast mode)."""
        if self.precision == "fast":
            self._fast_layers(adapter)

    # ..... prefill and decode

    @torch.inference_mode()
    def prefill(
        self, row: int, ids: list[int], start: int, adapter: str | None, *, every: bool = False
    ) -> torch.Tensor:
        """Write positions ``start ..`` of ``ids`` into ``row`` (positions before ``start`` are
        already there: a shared prefix) and return the logits after the last token (vocab,), or
        with ``every`` after each written token (len(ids) - start, vocab): a draft's check."""
        self.prepare(adapter)
        new = torch.tensor(ids[start:], dtype=torch.long, device=self.device)
        n, total = new.shape[0], len(ids)
        self.cache.reserve(row + 1, total)
        positions = torch.arange(start, total, device=self.device)
        cos, sin = (t[None, :, None, :] for t in self._rope(positions))  # (1, n, 1, d)
        # query i (position start+i) sees keys 0 .. start+i
        mask = torch.ones(n, total, dtype=torch.bool, device=self.device).tril(start) if start else None
        x = self._embed(new)
        kv_shape = (n, self.kv_heads, self.head_dim)
        for i in range(len(self.layers)):
            q, k, v = self._project_qkv(i, x, adapter)
            q, k = self._head_norms(i, q.reshape(n, self.heads, self.head_dim), k.reshape(kv_shape), adapter)
            q = self._rotate(q[None], cos, sin)[0].to(self.dtype)
            k = self._rotate(k[None], cos, sin)[0].to(self.dtype)
            self.cache.k[i][row, :, start:total] = k.transpose(0, 1)
            self.cache.v[i][row, :, start:total] = v.reshape(kv_shape).to(self.dtype).transpose(0, 1)
            keys = self.cache.k[i][row, :, :total]
            values = self.cache.v[i][row, :, :total]
            out = F.scaled_dot_product_attention(
                q.transpose(0, 1)[None],
                keys[None],
                values[None],
                attn_mask=None if start == 0 else mask,
                is_causal=start == 0,  # the fused causal kernel is far cheaper than a mask
                scale=self.scaling,
                enable_gqa=self.group > 1,
            )  # (1, H, n, d)
            x = self._finish_layer(i, x, out[0].transpose(0, 1).reshape(n, -1).to(x.dtype), adapter)
        return self._logits(x) if every else self._logits(x[-1:])[0]

    @torch.inference_mode()
    def decode(self, tokens: list[int], lengths: list[int], adapter: str | None) -> torch.Tensor:
        """Feed ``tokens[b]`` at position ``lengths[b]`` of row ``b`` for rows ``0 .. B-1``;
        return the next-token logits (B, vocab)."""
        self.prepare(adapter)
        batch = len(tokens)
        longest = max(lengths) + 1
        self.cache.reserve(batch, longest)
        pos = torch.tensor(lengths, dtype=torch.long, device=self.device)
        cos, sin = (t[:, None, None, :] for t in self._rope(pos))  # (B, 1, 1, d)
        rows = torch.arange(batch, device=self.device)
        mask = None
        if batch > 1 and min(lengths) + 1 < longest:
            # (B, 1, 1, L): True where a row's key position exists
            mask = (torch.arange(longest, device=self.device)[None, :] <= pos[:, None])[:, None, None, :]
        x = self._embed(torch.tensor(tokens, dtype=torch.long, device=self.device))
        for i in range(len(self.layers)):
            q, k, v = self._project_qkv(i, x, adapter)
            q = q.reshape(batch, self.kv_heads, self.group, self.head_dim)
            k = k.reshape(batch, self.kv_heads, 1, self.head_dim)
            q, k = self._head_norms(i, q, k, adapter)
            q = self._rotate(q, cos, sin).to(self.dtype)
            k = self._rotate(k, cos, sin).to(self.dtype)
            self.cache.k[i][rows, :, pos] = k[:, :, 0]
            self.cache.v[i][rows, :, pos] = v.reshape(batch, self.kv_heads, self.head_dim).to(self.dtype)
            # One query position per sequence: the group's query heads play the query length,
            # so each key/value head is read once (no repeat) and no causal mask is needed.
            out = F.scaled_dot_product_attention(
                q,
                self.cache.k[i][:batch, :, :longest],
                self.cache.v[i][:batch, :, :longest],
                attn_mask=mask,
                scale=self.scaling,
            )  # (B, KV, group, d)
            x = self._finish_layer(i, x, out.reshape(batch, -1).to(x.dtype), adapter)
        return self._logits(x)
