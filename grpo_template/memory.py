"""Peak memory of one GRPO training process, with its breakdown.

A first-order model, good enough to pick a configuration that fits and to refuse one that cannot:

* weights: parameters x bytes, every one resident: a mixture of experts keeps all experts, a
  vision-language checkpoint its towers (4-bit NF4 linear layers at 4.5 bits with double
  quantisation; embeddings, towers and experts stored as 3-D tensors stay 16-bit);
* gradients and AdamW state for the trainable parameters (PEFT keeps LoRA weights in fp32;
  torch AdamW keeps its two moments in the parameter dtype; bitsandbytes 8-bit: 1 byte each);
* training activations per micro-batch: with checkpointing one saved hidden state per layer plus
  one layer's intermediates; without it every layer's intermediates (FlashAttention/SDPA, so no
  sequence^2 term; TRL's fused LM head never materialises the full logits); a mixture of experts
  counts the MLP width a token passes through (its active experts), not all experts; a hybrid
  model's linear-attention, convolution or Mamba layers count what transformers' PyTorch
  fallback holds (`ModelSpec.fallback_bytes_per_token`, measured) unless the shape says the fast
  kernels are installed (`TrainingShape.fast_kernels`: the plans assume they are not, since the
  `[kernels]` extra is optional and builds CUDA code);
* generation cache for the whole per-process generation batch (transformers `generate`): K/V
  for the full-attention layers only (a hybrid's linear-attention, convolution or Mamba layers
  keep a fixed state per sequence instead, sliding-window layers at most their window), or the
  fixed share vLLM reserves when it is colocated (nothing when a vLLM server on other GPUs
  generates);
* Unsloth: checkpointed activations offloaded to CPU RAM, and with `fast_inference` a vLLM engine
  that shares the weights and sleeps while training (so only its KV cache competes, with the
  training activations);
* a reference model copy only when `beta > 0` and the model is fully fine-tuned;
* distribution (`TrainingShape.distributed`, see `SHARDED`):
  - DDP keeps a second copy of the gradients in its communication buckets: torch's
    `gradient_as_bucket_view` defaults to False, and transformers 5.24's Trainer builds
    `DistributedDataParallelKwargs` without it (`Trainer._build_accelerator_args` passes only
    find_unused_parameters, `ddp_bucket_cap_mb`, broadcast_buffers, static_graph; a smaller
    bucket cap only cuts the same total into more buckets), so no recipe field removes the copy;
  - DeepSpeed ZeRO with bf16/fp16 keeps fp32 master weights and fp32 Adam moments for the trainable
    parameters (12 bytes per parameter, sharded over the processes) instead of the 4 bytes of
    torch AdamW's bf16 moments;
  - DeepSpeed's communication buffers (`deepspeed_buffer_bytes`), at the sizes the project's
    configs/accelerate/zero*.json set: "auto", which transformers 5.24 fills from the model's
    hidden size (`trainer_config_finalize`: reduce_bucket_size = hidden^2, ZeRO-3
    stage3_prefetch_bucket_size = 0.9 hidden^2); without those files DeepSpeed's defaults
    (5e8 elements, ~0.9 GiB in bf16, per bucket) would apply. ZeRO-2 allocates one reduce bucket
    per backward, two with overlap_comm (deepspeed 0.18.6 stage_1_and_2.py `setup_buckets`);
    ZeRO-3 one per communication dtype at start (stage3.py), plus, while training, the largest
    module gathered whole (the embedding) and the prefetch bucket; the all-gather bucket costs
    nothing with NCCL (`all_gather_into_tensor`, runtime/utils.py `all_gather_dp_groups`);
  - ZeRO-3 gathers the whole model on every process around generation: `transformers.generate`
    with TRL's default `ds3_gather_for_generation=True`, and, with LoRA, the weight sync to vLLM
    (TRL gathers every parameter at once to merge the adapter);
* TRL's fused LM head on a device without Triton (the CPU): `trl.kernels.ChunkedLogProbFunction`
  scores every position (prompt included) in tiles of up to `TRL_TOKEN_CHUNK` tokens x
  `TRL_VOCAB_CHUNK` vocabulary entries in fp32, and its torch fallback (`_forward_tile`,
  `_backward_tile`) holds about `CPU_LOGPROB_TILES` such tiles at once in the backward, while every
  activation is still saved (`logprob_head_bytes`); with Triton (CUDA) one tile over the completion
  tokens only, left out;
* CUDA context plus 10% allocator fragmentation; on the CPU the process's runtime (Python, torch,
  transformers, TRL, datasets, the kit: `CPU_RUNTIME_BYTES`) plus `CPU_ALLOCATOR_SHARE` of the
  step's activations and tiles, since glibc keeps their freed memory and the backward's
  temporaries in the process (10% of the weights and optimizer state, as on a GPU).

The CPU terms were measured on SmolLM2-135M-Instruct, fp32, LoRA r16, transformers 5.24 / TRL
1.16 / torch 2.13 (peak RSS; benchmarks/memory_peak.py prints the plan beside a real run).

Generation and the backward pass do not overlap, so the peak takes the larger of the two.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from .catalog import ModelSpec

GIB = 1024**3
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
NF4_BYTES_PER_PARAM = 4.5 / 8  # NF4 weights + absmax with double quantisation
CUDA_CONTEXT_BYTES = 0.75 * GIB
FRAGMENTATION = 0.10
# The CPU process (on_gpu False), measured: RSS after importing the kit, TRL, transformers, peft,
# datasets and the task, before the weights load (0.51 GiB).
CPU_RUNTIME_BYTES = 0.5 * GIB
# What the CPU allocator holds beyond a step's live activations and fused-head tiles, as a share
# of them (the weights and optimizer state, allocated once, take FRAGMENTATION): one forward +
# backward of SmolLM2 (LoRA r16, fp32) peaked at 2.57 GiB for 460 tokens and 7.08 GiB for
# 4 x 460, 1.45x and 1.40x the saved activations + tiles above the runtime and weights.
CPU_ALLOCATOR_SHARE = 0.4
# TRL 1.16's fused LM head (tests/test_memory.py checks these against the installed TRL):
# tokens per tile (trl/kernels/chunked_logprob.py TOKEN_CHUNK_SIZE) and vocabulary per tile
# (trl/trainer/utils.py _CHUNKED_LOGPROB_CHUNK_SIZE); its torch fallback's peak in fp32 tiles,
# measured on ChunkedLogProbFunction alone: ~4 in the forward, 9.4 (1840 tokens) to 12.7 (460
# tokens) in the backward.
TRL_TOKEN_CHUNK = 4096
TRL_VOCAB_CHUNK = 32768
CPU_LOGPROB_TILES = 10
DEEPSPEED_MASTER_BYTES = 4  # fp32 copy of each trainable parameter under bf16/fp16 ZeRO
DEEPSPEED_MOMENT_BYTES = 8  # Adam's two moments, fp32 (they live on the fp32 master partition)
# The ZeRO settings of the project's configs/accelerate/zero{2,3}.json (tests/test_plans_deepspeed
# checks the files say the same): overlap_comm per stage (DeepSpeed's own default: on for ZeRO-3
# only), and the bucket sizes left to transformers' hidden-size rule ("auto").
DEEPSPEED_OVERLAP_COMM = {"zero2": False, "zero3": True}
DEEPSPEED_AUTO_BUCKETS = (
    "reduce_bucket_size",
    "stage3_prefetch_bucket_size",
    "stage3_param_persistence_threshold",
)
DEEPSPEED_PREFETCH_FRACTION = 0.9  # transformers: stage3_prefetch_bucket_size = 0.9 hidden^2
SINGLE = "none"  # one training process
# Each distribution strategy, cheapest first, and how it splits a process's state:
# (weights sharded, gradients and optimizer state sharded).
SHARDED: dict[str, tuple[bool, bool]] = {
    SINGLE: (False, False),
    "ddp": (False, False),
    "zero2": (False, True),
    "zero3": (True, True),
}
STRATEGIES = tuple(s for s in SHARDED if s != SINGLE)  # for several training processes


def shards(distributed: str, processes: int) -> tuple[int, int]:
    """(weight_shards, state_shards) of a TrainingShape for this strategy and process count."""
    weights, state = SHARDED[distributed]
    return (processes if weights else 1), (processes if state else 1)


def is_deepspeed(distributed: str) -> bool:
    return distributed.startswith("zero")


@dataclass(frozen=True)
class TrainingShape:
    """What the memory depends on, besides the model."""

    mode: str  # "full", "lora" or "qlora"
    dtype: str  # weights / compute dtype
    optim: str  # an HF `optim` name
    per_device_batch: int  # completions per micro-batch
    generation_batch: int  # completions generated per process per generation round
    prompt_tokens: int
    completion_tokens: int
    gradient_checkpointing: bool
    lora_r: int = 0
    beta: float = 0.0
    vllm_reserved_bytes: float = 0.0  # colocated vLLM's share of the GPU
    generation_elsewhere: bool = False  # a vLLM server on other GPUs generates
    shared_vllm_bytes: float = 0.0  # Unsloth fast_inference: vLLM's KV cache and buffers; the
    # weights are shared with training and vLLM sleeps while it trains (standby)
    offload_checkpoints: bool = False  # Unsloth's checkpointing keeps saved activations in RAM
    on_gpu: bool = True
    fast_kernels: bool = False  # a hybrid model's fast kernels installed (else its fallback)
    distributed: str = SINGLE  # none (one process), ddp, zero2 or zero3: a key of SHARDED
    weight_shards: int = 1  # ZeRO-3 / FSDP: processes sharing the weights
    state_shards: int = 1  # ZeRO-2/3 / FSDP: processes sharing gradients and optimizer state

    def __post_init__(self):
        if self.distributed not in SHARDED:
            raise ValueError(f"distributed {self.distributed!r} is not one of {list(SHARDED)}")

    @property
    def uses_vllm(self) -> bool:
        return self.vllm_reserved_bytes > 0 or self.generation_elsewhere


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes per training process; `peak` is what must fit on one device."""

    weights: float
    gradients: float
    optimizer: float
    activations: float
    generation: float
    vllm: float
    reference: float
    overhead: float
    gradient_buckets: float = 0.0  # DDP: the second gradient copy in its buckets
    master_weights: float = 0.0  # DeepSpeed: fp32 master copy of the trainable parameters
    gathered_weights: float = 0.0  # ZeRO-3: the other processes' weight shards, gathered for
    # generation or the LoRA weight sync (generation phase only)
    deepspeed_buffers: float = 0.0  # DeepSpeed: reduce buckets (ZeRO-3: + prefetch, gathered
    # module while training)
    logprob_head: float = 0.0  # the CPU: TRL's fused LM head tiles, beside the activations

    @property
    def peak(self) -> float:
        return (
            self.weights
            + self.gradients
            + self.gradient_buckets
            + self.optimizer
            + self.master_weights
            + self.deepspeed_buffers
            + max(self.activations + self.logprob_head, self.generation + self.gathered_weights)
            + self.vllm
            + self.reference
            + self.overhead
        )

    @property
    def peak_gib(self) -> float:
        return self.peak / GIB

    def breakdown_gib(self) -> dict[str, float]:
        parts = {k: round(v / GIB, 2) for k, v in asdict(self).items()}
        parts["peak"] = round(self.peak_gib, 2)
        return parts

    def summary(self) -> str:
        b = self.breakdown_gib()
        generation = f"generation KV {b['generation']:.1f}"
        if self.gathered_weights:
            generation += f" + gathered ZeRO-3 weights {b['gathered_weights']:.1f}"
        parts = [f"weights {b['weights']:.1f}", f"gradients {b['gradients']:.1f}"]
        if self.gradient_buckets:  # the distribution terms are named only where they apply
            parts.append(f"DDP gradient buckets {b['gradient_buckets']:.1f}")
        parts.append(f"optimizer {b['optimizer']:.1f}")
        if self.master_weights:
            parts.append(f"fp32 master weights {b['master_weights']:.1f}")
        if self.deepspeed_buffers:
            parts.append(f"DeepSpeed buffers {b['deepspeed_buffers']:.1f}")
        training = f"activations {b['activations']:.1f}"
        if self.logprob_head:
            training += f" + log-prob tiles {b['logprob_head']:.1f}"
        parts += [
            f"max({training}, {generation})",
            f"vLLM {b['vllm']:.1f}",
            f"reference {b['reference']:.1f}",
            f"overhead {b['overhead']:.1f}",
        ]
        return f"~{b['peak']:.1f} GiB peak = " + " + ".join(parts)


def lora_parameters(model: ModelSpec, r: int) -> int:
    """LoRA parameters when every linear layer of the language model is adapted (rank r); the
    catalog's exact count per rank where its layers differ from q/k/v/o + a gated MLP (hybrid
    attention, mixture of experts)."""
    if model.lora_params_per_rank is not None:
        return r * model.lora_params_per_rank
    h, i = model.hidden, model.intermediate
    q_out = model.heads * model.head_dim
    kv_out = model.kv_heads * model.head_dim
    per_layer = (h + q_out) + 2 * (h + kv_out) + (q_out + h) + 3 * (h + i)
    return r * per_layer * model.layers


def weight_bytes(model: ModelSpec, shape: TrainingShape) -> float:
    if shape.mode == "qlora":  # bitsandbytes quantizes nn.Linear weights, not 3-D expert tensors
        quantized = model.non_embedding_params - model.expert_params
        return quantized * NF4_BYTES_PER_PARAM + (model.params - quantized) * 2
    return model.params * DTYPE_BYTES[shape.dtype]


def trainable_parameters(model: ModelSpec, shape: TrainingShape) -> int:
    return model.params if shape.mode == "full" else lora_parameters(model, shape.lora_r)


def optimizer_bytes_per_param(shape: TrainingShape) -> float:
    if "8bit" in shape.optim:
        return 2.0
    if is_deepspeed(shape.distributed):
        return DEEPSPEED_MOMENT_BYTES
    if shape.mode == "full":
        return 2 * DTYPE_BYTES[shape.dtype]  # torch AdamW: two moments in the parameter dtype
    return 8.0  # fp32 LoRA weights: two fp32 moments


def gradient_bytes_per_param(shape: TrainingShape) -> float:
    """Full fine-tuning: gradients in the weights' dtype; PEFT: fp32 LoRA gradients (DeepSpeed
    casts the trainable parameters to the compute dtype and keeps fp32 only in its master copy)."""
    if shape.mode == "full" or is_deepspeed(shape.distributed):
        return DTYPE_BYTES[shape.dtype]
    return 4


def gradient_bucket_bytes(model: ModelSpec, shape: TrainingShape) -> float:
    """DDP's buckets hold a flat copy of every trainable gradient (gradient_as_bucket_view off)."""
    if shape.distributed != "ddp":
        return 0.0
    return trainable_parameters(model, shape) * gradient_bytes_per_param(shape)


def master_weight_bytes(model: ModelSpec, shape: TrainingShape) -> float:
    """DeepSpeed's fp32 master copy of the trainable parameters (sharded from ZeRO-1 on)."""
    if not is_deepspeed(shape.distributed) or shape.dtype == "float32":
        return 0.0
    return trainable_parameters(model, shape) * DEEPSPEED_MASTER_BYTES / shape.state_shards


def gathered_weight_bytes(model: ModelSpec, shape: TrainingShape) -> float:
    """ZeRO-3: the weights gathered on top of this process's shard while generating with
    `transformers.generate` (ds3_gather_for_generation) or syncing merged LoRA weights to vLLM."""
    if shape.distributed != "zero3" or shape.weight_shards <= 1:
        return 0.0
    if shape.uses_vllm and shape.mode == "full":
        return 0.0  # full weights go to vLLM one parameter at a time
    return weight_bytes(model, shape) * (1 - 1 / shape.weight_shards)


def deepspeed_buffer_bytes(model: ModelSpec, shape: TrainingShape) -> float:
    """DeepSpeed's communication buffers at the project's bucket sizes (hidden^2 elements, in
    the compute dtype): ZeRO-2's reduce bucket(s); ZeRO-3's reduce bucket, prefetch bucket and
    the largest module it gathers whole while training (the embedding, vocab x hidden)."""
    if not is_deepspeed(shape.distributed):
        return 0.0
    element = DTYPE_BYTES[shape.dtype]
    bucket = model.hidden * model.hidden
    if shape.distributed == "zero2":  # allocated per backward; a second one with overlap_comm
        return bucket * (2 if DEEPSPEED_OVERLAP_COMM["zero2"] else 1) * element
    # ZeRO-3: one reduce bucket per communication dtype, allocated at start (whatever
    # overlap_comm says), the prefetch bucket, and the embedding (or untied head) gathered whole.
    prefetch = DEEPSPEED_PREFETCH_FRACTION * bucket
    gathered = model.vocab * model.hidden
    return (bucket + prefetch + gathered) * element


def activation_bytes(model: ModelSpec, shape: TrainingShape) -> float:
    act = 2 if shape.dtype != "float32" else 4
    tokens = shape.per_device_batch * (shape.prompt_tokens + shape.completion_tokens)
    one_layer = act * (10 * model.hidden + 3 * model.mlp_width)  # per token
    # A hybrid layer on transformers' PyTorch fallback holds its measured peak instead.
    fallback = 0 if shape.fast_kernels else model.fallback_bytes_per_token
    hybrid_layer = max(one_layer, fallback) if model.hybrid_layers else one_layer
    if shape.gradient_checkpointing and shape.offload_checkpoints:
        per_token = hybrid_layer  # one layer recomputed at a time
    elif shape.gradient_checkpointing:
        per_token = model.layers * model.hidden * act + hybrid_layer
    else:
        hybrid = model.hybrid_layers
        per_token = (model.layers - hybrid) * one_layer + hybrid * hybrid_layer
    logprob_buffers = 3 * 4  # per-token fp32 log-probs, advantages, masks
    return tokens * (per_token + logprob_buffers)


def logprob_head_bytes(model: ModelSpec, shape: TrainingShape) -> float:
    """TRL's fused LM head without Triton (the CPU): its fp32 tiles of up to TRL_TOKEN_CHUNK
    positions (every position of the micro-batch, prompt included) x TRL_VOCAB_CHUNK vocabulary
    entries, CPU_LOGPROB_TILES of them at the backward's peak. On a GPU TRL's Triton kernels keep
    one tile of completion tokens (not counted)."""
    if shape.on_gpu:
        return 0.0
    positions = min(TRL_TOKEN_CHUNK, shape.per_device_batch * tokens_per_sequence(shape))
    return CPU_LOGPROB_TILES * positions * min(model.vocab, TRL_VOCAB_CHUNK) * 4


def tokens_per_sequence(shape: TrainingShape) -> int:
    return shape.prompt_tokens + shape.completion_tokens


def fallback_bytes(model: ModelSpec, shape: TrainingShape) -> float:
    """What the hybrid layers' PyTorch fallback adds to the activations over the fast kernels
    (0 for a model without hybrid layers): the figure the recipe states."""
    fast = activation_bytes(model, _with_kernels(shape, True))
    return activation_bytes(model, _with_kernels(shape, False)) - fast


def _with_kernels(shape: TrainingShape, fast: bool) -> TrainingShape:
    return replace(shape, fast_kernels=fast)


def vllm_weight_bytes(model: ModelSpec) -> float:
    """What vLLM loads: the checkpoint's class in bf16, a vision-language checkpoint's towers
    included. TRL 1.16 builds `LLM(model=...)` (trl/generation/vllm_generation.py) and its
    `vllm serve` command without `limit_mm_per_prompt`, so vLLM keeps the vision encoder (and
    profiles it at start, inside VLLM_OVERHEAD of tuning.py)."""
    return model.params * DTYPE_BYTES["bfloat16"]


def kv_cache_bytes(model: ModelSpec, sequences: int, tokens: int, dtype: str = "bfloat16") -> float:
    """The generation cache of `sequences` sequences of `tokens` tokens: keys and values of the
    full-attention layers, of the sliding-window layers up to their window, and the fixed state
    of linear-attention / convolution / Mamba layers."""
    element = DTYPE_BYTES[dtype]
    full_dim = model.full_head_dim or model.head_dim
    full = 2 * model.kv_layers * model.kv_heads * full_dim * element * tokens
    sliding = 2 * model.sliding_layers * model.kv_heads * model.head_dim * element
    sliding *= min(tokens, model.sliding_window)
    state = model.linear_state.bytes_per_sequence(element) if model.linear_state else 0
    return sequences * (full + sliding + state)


def estimate(model: ModelSpec, shape: TrainingShape) -> MemoryEstimate:
    weights = weight_bytes(model, shape) / shape.weight_shards
    trainable = trainable_parameters(model, shape)
    gradients = trainable * gradient_bytes_per_param(shape) / shape.state_shards
    buckets = gradient_bucket_bytes(model, shape)
    optimizer = trainable * optimizer_bytes_per_param(shape) / shape.state_shards
    master = master_weight_bytes(model, shape)
    gathered = gathered_weight_bytes(model, shape)
    buffers = deepspeed_buffer_bytes(model, shape)
    activations = activation_bytes(model, shape)
    head = logprob_head_bytes(model, shape)
    generation = shape.shared_vllm_bytes
    if shape.vllm_reserved_bytes == 0 and not shape.generation_elsewhere and not generation:
        generation = kv_cache_bytes(
            model,
            shape.generation_batch,
            shape.prompt_tokens + shape.completion_tokens,
            shape.dtype,
        )
    reference = 0.0
    if shape.beta > 0 and shape.mode == "full":
        reference = model.params * DTYPE_BYTES[shape.dtype] / shape.weight_shards
    dynamic = (
        weights
        + gradients
        + buckets
        + optimizer
        + master
        + buffers
        + max(activations + head, generation + gathered)
        + reference
    )
    if shape.on_gpu:
        overhead = FRAGMENTATION * dynamic + CUDA_CONTEXT_BYTES
    else:  # the step's churn (activations, tiles, temporaries) is what glibc holds on to
        churn = max(activations + head, generation + gathered)
        overhead = (
            FRAGMENTATION * (dynamic - churn) + CPU_ALLOCATOR_SHARE * churn + CPU_RUNTIME_BYTES
        )
    return MemoryEstimate(
        weights=weights,
        gradients=gradients,
        optimizer=optimizer,
        activations=activations,
        generation=generation,
        vllm=shape.vllm_reserved_bytes,
        reference=reference,
        overhead=overhead,
        gradient_buckets=buckets,
        master_weights=master,
        gathered_weights=gathered,
        deepspeed_buffers=buffers,
        logprob_head=head,
    )


# Unsloth's vLLM memory share under UNSLOTH_VLLM_STANDBY=1 (which grpo_kit.backends.unsloth
# sets): unsloth_zoo/vllm_utils.py (2026.10.9) replaces `gpu_memory_utilization` by a target from
# the card's size (a tenth of its GiB), times 0.95 on vLLM >= 0.11, unless
# UNSLOTH_VLLM_STANDBY_UTIL_OVERRIDE is set.
_STANDBY_TIERS = ((4.0, 0.925), (2.5, 0.9), (2.0, 0.825), (1.4, 0.8), (1.0, 0.775))


def unsloth_standby_share(memory_gib: float) -> float:
    """The `gpu_memory_utilization` Unsloth's standby mode uses on a card of this size."""
    tenth = memory_gib * 0.1
    target = next((share for low, share in _STANDBY_TIERS if tenth >= low), 0.75)
    return round(target * 0.95, 3)
