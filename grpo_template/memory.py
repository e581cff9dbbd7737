"""Peak memory of one GRPO training process, with its breakdown.

A first-order model, good enough to pick a configuration that fits and to refuse one that cannot:

* weights: parameters x bytes (4-bit NF4 linear layers at 4.5 bits with double quantisation;
  embeddings stay 16-bit);
* gradients and AdamW state for the trainable parameters (PEFT keeps LoRA weights in fp32;
  torch AdamW keeps its two moments in the parameter dtype; bitsandbytes 8-bit: 1 byte each);
* training activations per micro-batch: with checkpointing one saved hidden state per layer plus
  one layer's intermediates; without it every layer's intermediates (FlashAttention/SDPA, so no
  sequence^2 term; TRL's fused LM head never materialises the full logits);
* generation KV cache for the whole per-process generation batch (transformers `generate`), or the
  fixed share vLLM reserves when it is colocated (nothing when a vLLM server on other GPUs
  generates);
* Unsloth: checkpointed activations offloaded to CPU RAM, and with `fast_inference` a vLLM engine
  that shares the weights and sleeps while training (so only its KV cache competes, with the
  training activations);
* a reference model copy only when `beta > 0` and the model is fully fine-tuned;
* CUDA context plus 10% allocator fragmentation.

Generation and the backward pass do not overlap, so the peak takes the larger of the two.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .catalog import ModelSpec

GIB = 1024**3
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
NF4_BYTES_PER_PARAM = 4.5 / 8  # NF4 weights + absmax with double quantisation
CUDA_CONTEXT_BYTES = 0.75 * GIB
FRAGMENTATION = 0.10


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
    weight_shards: int = 1  # ZeRO-3 / FSDP: processes sharing the weights
    state_shards: int = 1  # ZeRO-2/3 / FSDP: processes sharing gradients and optimizer state


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

    @property
    def peak(self) -> float:
        return (
            self.weights
            + self.gradients
            + self.optimizer
            + max(self.activations, self.generation)
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
        parts = [
            f"weights {b['weights']:.1f}",
            f"gradients {b['gradients']:.1f}",
            f"optimizer {b['optimizer']:.1f}",
            f"max(activations {b['activations']:.1f}, generation KV {b['generation']:.1f})",
            f"vLLM {b['vllm']:.1f}",
            f"reference {b['reference']:.1f}",
            f"overhead {b['overhead']:.1f}",
        ]
        return f"~{b['peak']:.1f} GiB peak = " + " + ".join(parts)


def lora_parameters(model: ModelSpec, r: int) -> int:
    """LoRA parameters when every linear layer of the language model is adapted (rank r)."""
    h, i = model.hidden, model.intermediate
    q_out = model.heads * model.head_dim
    kv_out = model.kv_heads * model.head_dim
    per_layer = (h + q_out) + 2 * (h + kv_out) + (q_out + h) + 3 * (h + i)
    return r * per_layer * model.layers


def weight_bytes(model: ModelSpec, shape: TrainingShape) -> float:
    if shape.mode == "qlora":
        return model.non_embedding_params * NF4_BYTES_PER_PARAM + model.embedding_params * 2
    return model.params * DTYPE_BYTES[shape.dtype]


def trainable_parameters(model: ModelSpec, shape: TrainingShape) -> int:
    return model.params if shape.mode == "full" else lora_parameters(model, shape.lora_r)


def optimizer_bytes_per_param(shape: TrainingShape) -> float:
    if "8bit" in shape.optim:
        return 2.0
    if shape.mode == "full":
        return 2 * DTYPE_BYTES[shape.dtype]  # torch AdamW: two moments in the parameter dtype
    return 8.0  # fp32 LoRA weights: two fp32 moments


def activation_bytes(model: ModelSpec, shape: TrainingShape) -> float:
    act = 2 if shape.dtype != "float32" else 4
    tokens = shape.per_device_batch * (shape.prompt_tokens + shape.completion_tokens)
    one_layer = act * (10 * model.hidden + 3 * model.intermediate)  # per token
    if shape.gradient_checkpointing and shape.offload_checkpoints:
        per_token = one_layer
    elif shape.gradient_checkpointing:
        per_token = model.layers * model.hidden * act + one_layer
    else:
        per_token = model.layers * one_layer
    logprob_buffers = 3 * 4  # per-token fp32 log-probs, advantages, masks
    return tokens * (per_token + logprob_buffers)


def kv_cache_bytes(model: ModelSpec, sequences: int, tokens: int, dtype: str = "bfloat16") -> float:
    per_token = (
        2 * model.layers * model.kv_heads * model.head_dim * (2 if dtype != "float32" else 4)
    )
    return sequences * tokens * per_token


def estimate(model: ModelSpec, shape: TrainingShape) -> MemoryEstimate:
    weights = weight_bytes(model, shape) / shape.weight_shards
    trainable = trainable_parameters(model, shape)
    grad_bytes = DTYPE_BYTES[shape.dtype] if shape.mode == "full" else 4
    gradients = trainable * grad_bytes / shape.state_shards
    optimizer = trainable * optimizer_bytes_per_param(shape) / shape.state_shards
    activations = activation_bytes(model, shape)
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
    dynamic = weights + gradients + optimizer + max(activations, generation) + reference
    overhead = FRAGMENTATION * dynamic + (CUDA_CONTEXT_BYTES if shape.on_gpu else 0.0)
    return MemoryEstimate(
        weights=weights,
        gradients=gradients,
        optimizer=optimizer,
        activations=activations,
        generation=generation,
        vllm=shape.vllm_reserved_bytes,
        reference=reference,
        overhead=overhead,
    )
