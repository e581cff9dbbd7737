"""From (model, tier, backend, task) to a GRPO configuration that fits, or a clear refusal.

The search keeps the training signal first: it tries the tier's target number of generations and
completion length in every fine-tuning mode (full, LoRA, QLoRA), distribution strategy (DDP,
ZeRO-2, ZeRO-3 on several GPUs; each has its accelerate config, `accelerate_config`) and
micro-batch size, with vLLM generation where the tier uses it, and only then gives up vLLM,
generations or length (each compromise is noted in the recipe).
A configuration is accepted when the memory model's peak stays under `HEADROOM` of the device.
Every accepted plan satisfies GRPO's batch arithmetic across processes: each process handles a
whole number of groups (prompts x `num_generations`) per optimizer step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from . import memory
from .catalog import ModelSpec
from .memory import GIB
from .tasks import TaskSpec
from .tiers import TIERS, Tier

HEADROOM = 0.92  # fraction of the device an estimate may use
VLLM_OVERHEAD_BYTES = 2 * GIB  # vLLM's own activations, CUDA graphs and sampler buffers


@dataclass(frozen=True)
class TierPolicy:
    """What a tier aims for before memory forces a compromise."""

    num_generations: int
    groups_per_process: int  # prompts (groups of completions) per process per optimizer step
    length_scale: float  # multiplies the task's typical completion length
    lora_r: int
    full_max_params: float  # full fine-tuning is considered up to this size (0: never)
    max_micro_batch: int | None = None  # the largest per_device_train_batch_size tried (None: any)


# The CPU trains one completion per micro-batch (gradient accumulation makes up the group, and
# TRL still generates the whole group at once: steps_per_generation = gradient_accumulation_steps).
# The activations and TRL's fused log-prob tiles grow with the micro-batch: SmolLM2-135M's
# forward + backward peaked at 2.6 GiB for one 460-token sequence and 7.1 GiB for four
# (memory.CPU_* figures), and a real cpu-tier run at 2.7 vs 6.5 GiB (benchmarks/memory_peak.py).
# A CPU step is mostly generation, which this leaves alone; the forward + backward of four
# sequences took 35-42 s as one micro-batch and 46-95 s as four on the shared, loaded 2-core
# machine (alternated runs; the load, not the batch, set the spread).
CPU_MICRO_BATCH = 1
POLICIES: dict[str, TierPolicy] = {
    "cpu": TierPolicy(4, 1, 0.5, 16, 0, max_micro_batch=CPU_MICRO_BATCH),
    "16GB": TierPolicy(4, 1, 1.0, 16, 0),
    "24GB": TierPolicy(8, 1, 1.0, 32, 0),
    "48GB": TierPolicy(8, 2, 1.5, 64, 2.0e9),
    "80GB": TierPolicy(8, 4, 2.0, 64, 2.0e9),
    "141GB": TierPolicy(16, 4, 2.0, 64, 2.0e9),
    "multi-gpu": TierPolicy(8, 2, 2.0, 64, 9.0e9),
    "multi-node": TierPolicy(8, 2, 2.0, 64, 9.0e9),
}
LEARNING_RATE = {"full": 1e-6, "lora": 1e-5, "qlora": 1e-5}  # LoRA needs ~10x the full-FT rate
# The CPU tier's runs are tens of steps (recipe.max_steps): LoRA there takes the rate of Unsloth's
# short LoRA GRPO notebooks (Gemma 4 E2B, gpt-oss: 5e-5 for 60-100 steps, unsloth-2026.10.md
# section 5), five times the GPU tiers' 1e-5, so a CPU run moves the adapter at all.
SHORT_RUN_LORA_RATE = 5e-5
# TRL 1.16 syncs a PEFT model into vLLM by merging the adapter into the base weights; with 4-bit
# bitsandbytes weights the merged, dequantized tensors do not fit vLLM's packed 4-bit parameters
# (huggingface/trl#4973, open: AssertionError in vLLM's weight_loader) and merging into 4-bit is
# lossy (huggingface/trl#3466). The Transformers backend therefore never plans QLoRA with vLLM:
# 16-bit LoRA with vLLM, or QLoRA with the trainer's own generate. (Unsloth's fast_inference
# shares the 4-bit weights with vLLM and serves the adapter through vLLM's LoRA support, no merge.)
QLORA_VLLM_BROKEN = "huggingface/trl#4973"
SINGLE = memory.SINGLE  # one training process (a vLLM server may use the node's other GPUs)
STRATEGIES = memory.STRATEGIES  # several training processes: ddp, zero2, zero3, cheapest first
ACCELERATE_CONFIG_DIR = "configs/accelerate"  # in the generated project


def accelerate_config(distributed: str) -> str:
    """The project's `accelerate launch --config_file` for a strategy (one file per strategy,
    named after it; `none` is accelerate's single-process `distributed_type: "NO"`)."""
    if distributed not in memory.SHARDED:
        raise ValueError(f"no accelerate config for distributed={distributed!r}")
    return f"{ACCELERATE_CONFIG_DIR}/{distributed}.yaml"


def deepspeed_config(distributed: str) -> str:
    """The DeepSpeed JSON a ZeRO strategy's accelerate config names (`deepspeed_config_file`):
    its stage, overlap_comm and "auto" bucket sizes, which memory.deepspeed_buffer_bytes counts."""
    if not memory.is_deepspeed(distributed):
        raise ValueError(f"no DeepSpeed config for distributed={distributed!r}")
    return f"{ACCELERATE_CONFIG_DIR}/{distributed}.json"


DEEPSPEED_CONFIGS = tuple(deepspeed_config(s) for s in memory.STRATEGIES if memory.is_deepspeed(s))


@dataclass(frozen=True)
class Plan:
    """Everything the recipe needs from tuning, plus the memory estimate behind it."""

    model: ModelSpec
    tier: Tier
    task: TaskSpec
    backend: str
    mode: str
    dtype: str
    per_device_train_batch_size: int
    gradient_accumulation_steps: int
    num_generations: int
    max_completion_length: int
    max_prompt_tokens: int
    gradient_checkpointing: bool
    optim: str
    learning_rate: float
    lora_r: int
    lora_alpha: int
    memory: memory.MemoryEstimate
    processes: int = 1  # training processes in total (one per training GPU)
    distributed: str = SINGLE  # none (one process), ddp, zero2, zero3
    vllm_mode: str | None = None  # None (transformers generate), colocate or server
    vllm_gpu_memory_utilization: float = 0.0  # colocate: share of each GPU vLLM takes
    vllm_server_gpus: int = 0  # server: GPUs set aside for the vLLM server
    fast_inference: bool = False  # Unsloth: vLLM sharing the model's weights
    notes: tuple[str, ...] = field(default=())

    @property
    def use_vllm(self) -> bool:
        return self.vllm_mode is not None

    @property
    def thinking(self) -> bool:
        """Whether the recipe's chat template renders the model's thinking mode (see `thinks`)."""
        return thinks(self.model, self.task)

    @property
    def chat_template_kwargs(self) -> dict:
        """The recipe's `chat_template_kwargs`: the thinking switch set to `thinking`."""
        switch = self.model.thinking_switch
        return {switch: self.thinking} if switch else {}

    @property
    def vllm_max_model_length(self) -> int:
        return self.max_prompt_tokens + self.max_completion_length

    @property
    def generation_batch_size(self) -> int:
        """Completions generated per round across all processes (steps_per_generation = GA)."""
        return self.per_device_train_batch_size * self.processes * self.gradient_accumulation_steps

    @property
    def prompts_per_step(self) -> int:
        return self.generation_batch_size // self.num_generations

    @property
    def use_peft(self) -> bool:
        return self.mode in ("lora", "qlora")

    @property
    def ddp_find_unused_parameters(self) -> bool:
        """Whether DDP must look for parameters without a gradient each step: when the whole of a
        vision-language checkpoint is trained on text, its towers get none, and with activation
        checkpointing transformers leaves the search off (find_unused_parameters = not
        checkpointing), so DDP fails at the second step ("Expected to have finished reduction
        in the prior iteration"). TRL 1.16 turns it on itself only for a processor (a
        multimodal dataset); the project passes a tokenizer. Written on every such plan: a
        one-process plan ignores it, and `make smoke-distributed` runs it under DDP."""
        return self.mode == "full" and self.model.text_leaves_unused_parameters

    @property
    def launched_by_accelerate(self) -> bool:
        """Every tier with several GPUs starts training through `accelerate launch` (even one
        training process beside a vLLM server); single-GPU and CPU tiers run the script."""
        return self.tier.gpus > 1

    @property
    def accelerate_config(self) -> str | None:
        """The project's accelerate config file for this plan, or None when none is used."""
        return accelerate_config(self.distributed) if self.launched_by_accelerate else None


class DoesNotFit(ValueError):
    """No configuration of this model fits this tier; the message says what would."""


def task_reasons(task: TaskSpec) -> bool:
    """Whether the task's answer format has a reasoning block: its system prompt asks for
    `<think> </think>` (math, code, classification, custom), unlike JSON-only output."""
    return "<think>" in task.system_prompt


def thinks(model: ModelSpec, task: TaskSpec) -> bool:
    """The model's default thinking mode, switched off (where the template has a switch) for a
    task whose answer has no reasoning block: a thinking template opens `<think>` in the prompt,
    and the completion could then never be JSON only."""
    if model.thinking and model.thinking_switch and not task_reasons(task):
        return False
    return model.thinking


def dtype_for(tier: Tier) -> str:
    if not tier.is_gpu:
        return "float32"
    return "bfloat16" if tier.bf16 else "float16"


def modes_for(model: ModelSpec, tier: Tier, policy: TierPolicy, backend: str) -> list[str]:
    if not tier.is_gpu:
        return ["lora"]
    modes = ["lora", "qlora"] if model.qlora else ["lora"]
    if backend == "unsloth":
        return modes  # Unsloth does not support full fine-tuning with GRPO
    if tier.bf16 and model.params <= policy.full_max_params:
        modes.insert(0, "full")
    return modes


def learning_rate(mode: str, tier: Tier) -> float:
    """The plan's learning rate: the mode's, or the short CPU run's for LoRA on the CPU tier."""
    if not tier.is_gpu and mode == "lora":
        return SHORT_RUN_LORA_RATE
    return LEARNING_RATE[mode]


def optimizer_for(mode: str, tier: Tier, sharded: bool, backend: str = "transformers") -> str:
    if not tier.is_gpu:
        # Unsloth's CPU mode switches every optimizer to the fused AdamW anyway.
        return "adamw_torch_fused" if backend == "unsloth" else "adamw_torch"
    if backend == "unsloth":
        return "adamw_8bit"  # Unsloth's default; bitsandbytes comes with it
    if mode == "full" and tier.memory_gib < 70 and not sharded:
        return "adamw_8bit"  # bitsandbytes: 2 bytes of state per parameter instead of 4
    return "adamw_torch_fused"


def server_gpus(model: ModelSpec, tier: Tier) -> int:
    """GPUs the vLLM server needs for the bf16 weights it loads (tensor parallel if > 1)."""
    weights = memory.vllm_weight_bytes(model)
    return max(1, math.ceil(weights * 1.3 / (0.9 * tier.memory_bytes)))


def vllm_share(model: ModelSpec, tier: Tier, sequences: int, tokens: int) -> float:
    """gpu_memory_utilization for a colocated vLLM: the bf16 weights it loads (towers
    included, `memory.vllm_weight_bytes`), the KV cache of one generation round, and vLLM's own
    overhead, with 10% slack, in steps of 0.05."""
    need = (
        memory.vllm_weight_bytes(model)
        + memory.kv_cache_bytes(model, sequences, tokens)
        + VLLM_OVERHEAD_BYTES
    )
    return min(0.9, max(0.1, math.ceil(need * 1.1 / tier.memory_bytes * 20) / 20))


def _round_tokens(n: float) -> int:
    return max(64, int(round(n / 64)) * 64)


def plan(model: ModelSpec, tier: Tier, task: TaskSpec, backend: str = "transformers") -> Plan:
    """The configuration to bake, or `DoesNotFit` with the estimate and what would fit."""
    found, smallest = _search(model, tier, task, backend)
    if found is None:
        raise DoesNotFit(_refusal(model, tier, task, backend, smallest))
    return found


def _search(model: ModelSpec, tier: Tier, task: TaskSpec, backend: str):
    """(the first plan that fits or None, the smallest estimate seen)."""
    policy = POLICIES[tier.name]
    budget = tier.memory_bytes * HEADROOM
    thinking = 2 if thinks(model, task) else 1
    target = _round_tokens(task.completion_tokens * policy.length_scale * thinking)
    target = min(target, model.context - task.prompt_tokens)
    vllm_modes = _generation_modes(model, tier, backend)
    smallest = None
    for generations, completion, quality_note in _quality_levels(
        policy, target, task.completion_floor
    ):
        for vllm_mode in vllm_modes:
            for candidate in _candidates(
                model, tier, task, policy, generations, completion, vllm_mode, backend
            ):
                estimate = memory.estimate(model, candidate["shape"])
                if smallest is None or estimate.peak < smallest.peak:
                    smallest = estimate
                if estimate.peak <= budget:
                    notes = [n for n in (quality_note, candidate["note"]) if n]
                    if vllm_modes[0] and vllm_mode is None:
                        notes.append(_vllm_off_note(candidate["mode"], backend))
                    fallback = memory.fallback_bytes(model, candidate["shape"])
                    if fallback > 0:
                        notes.append(_fallback_note(model, fallback, tier))
                    return _plan(
                        model, tier, task, backend, policy, candidate, estimate, notes
                    ), smallest
    return None, smallest


def _vllm_off_note(mode: str, backend: str) -> str:
    if mode == "qlora" and backend == "transformers":
        return (
            "vLLM is off: 16-bit LoRA with vLLM does not fit beside training, and TRL cannot "
            f"sync QLoRA's 4-bit weights into vLLM ({QLORA_VLLM_BROKEN})"
        )
    return "vLLM is off: it does not fit beside training"


def _fallback_note(model: ModelSpec, fallback: float, tier: Tier) -> str:
    """The recipe's note on a hybrid model's kernels: what their absence costs, counted."""
    layers = f"{model.hybrid_layers} linear-attention/convolution/Mamba layers"
    extra = f"+{fallback / GIB:.1f} GiB"
    if not tier.is_gpu:
        return (
            f"the CPU runs transformers' PyTorch code for the {layers} ({extra}, counted); "
            f"their fast kernels ({', '.join(model.kernels)}) need a CUDA GPU"
        )
    return (
        f"the estimate counts transformers' PyTorch fallback for the {layers} ({extra}, and "
        f"much slower) since their fast kernels ({', '.join(model.kernels)}) are optional: "
        "pip install --no-build-isolation -e '.[kernels]'"
    )


def _qlora_with_vllm(mode: str, vllm_mode: str | None) -> bool:
    """A combination the Transformers backend never plans (QLORA_VLLM_BROKEN)."""
    return mode == "qlora" and vllm_mode in ("colocate", "server")


def _generation_modes(model: ModelSpec, tier: Tier, backend: str) -> list[str | None]:
    """How rollouts are generated, preferred first: vLLM (colocated, a server, or Unsloth's
    fast_inference sharing the weights, where Unsloth's vLLM path serves the architecture), then
    the trainer's own generate."""
    if backend == "unsloth":
        fast = tier.is_gpu and model.unsloth_fast_inference
        return ["fast_inference", None] if fast else [None]
    return [tier.vllm, None] if tier.vllm else [None]


def _candidates(model, tier, task, policy, generations, completion, vllm_mode, backend):
    """Configurations in order of preference at one quality level."""
    dtype = dtype_for(tier)
    reserved_gpus = server_gpus(model, tier) if vllm_mode == "server" else 0
    processes = max(1, tier.gpus - reserved_gpus)
    per_process = generations * policy.groups_per_process  # completions per process per step
    tokens = task.prompt_tokens + completion
    strategies = STRATEGIES if processes > 1 else (SINGLE,)
    unsloth = backend == "unsloth"
    for mode in modes_for(model, tier, policy, backend):
        if _qlora_with_vllm(mode, vllm_mode):
            continue  # TRL cannot sync 4-bit weights into vLLM (QLORA_VLLM_BROKEN)
        for strategy in strategies:
            if strategy == "zero2" and mode != "full":
                continue  # adapters are tiny: sharding their state buys nothing
            if strategy == "zero3" and mode == "qlora":
                # ZeRO-3 shards float tensors only: 4-bit weights need bnb_4bit_quant_storage set
                # to the compute dtype (PEFT's "QLoRA and DeepSpeed ZeRO-3" guide); the recipe
                # does not set it, so QLoRA stays unsharded.
                continue
            weight_shards, state_shards = memory.shards(strategy, processes)
            optim = optimizer_for(mode, tier, state_shards > 1, backend)
            for batch in _divisors(per_process, policy.max_micro_batch):
                share = vllm_share(model, tier, per_process, tokens) if vllm_mode else 0.0
                shared = 0.0
                if vllm_mode == "fast_inference":
                    kv = memory.kv_cache_bytes(model, per_process, tokens)
                    shared = kv + VLLM_OVERHEAD_BYTES
                shape = memory.TrainingShape(
                    mode=mode,
                    dtype=dtype,
                    optim=optim,
                    per_device_batch=batch,
                    generation_batch=per_process,
                    prompt_tokens=task.prompt_tokens,
                    completion_tokens=completion,
                    gradient_checkpointing=tier.is_gpu,
                    lora_r=policy.lora_r if mode != "full" else 0,
                    vllm_reserved_bytes=share * tier.memory_bytes
                    if vllm_mode == "colocate"
                    else 0.0,
                    generation_elsewhere=vllm_mode == "server",
                    shared_vllm_bytes=shared,
                    offload_checkpoints=unsloth and tier.is_gpu,
                    on_gpu=tier.is_gpu,
                    distributed=strategy,
                    weight_shards=weight_shards,
                    state_shards=state_shards,
                )
                yield {
                    "shape": shape,
                    "mode": mode,
                    "optim": optim,
                    "batch": batch,
                    "accumulation": per_process // batch,
                    "generations": generations,
                    "completion": completion,
                    "processes": processes,
                    "distributed": strategy,
                    "vllm_mode": vllm_mode,
                    "vllm_share": share,
                    "server_gpus": reserved_gpus,
                    "note": "",
                }


def _plan(model, tier, task, backend, policy, c, estimate, notes) -> Plan:
    return Plan(
        model=model,
        tier=tier,
        task=task,
        backend=backend,
        mode=c["mode"],
        dtype=dtype_for(tier),
        per_device_train_batch_size=c["batch"],
        gradient_accumulation_steps=c["accumulation"],
        num_generations=c["generations"],
        max_completion_length=c["completion"],
        max_prompt_tokens=task.prompt_tokens,
        gradient_checkpointing=tier.is_gpu,
        optim=c["optim"],
        learning_rate=learning_rate(c["mode"], tier),
        lora_r=policy.lora_r,
        lora_alpha=2 * policy.lora_r,
        memory=estimate,
        processes=c["processes"],
        distributed=c["distributed"],
        vllm_mode=c["vllm_mode"] if c["vllm_mode"] != "fast_inference" else None,
        fast_inference=c["vllm_mode"] == "fast_inference",
        vllm_gpu_memory_utilization=c["vllm_share"],
        vllm_server_gpus=c["server_gpus"],
        notes=tuple(notes),
    )


def _quality_levels(policy: TierPolicy, completion: int, floor: int = 0):
    """(generations, completion length, note) from the tier's target down to the floor: never a
    completion length below `floor` (the task's `completion_floor`: shorter, its own ideal
    completions would be punished as overlong, and the project's checks fail)."""
    yield policy.num_generations, completion, ""
    if policy.num_generations > 4:
        yield 4, completion, f"num_generations lowered from {policy.num_generations} to 4 to fit"
    for fraction in (0.75, 0.5):
        shorter = _round_tokens(completion * fraction)
        if shorter < floor:
            return
        yield (
            4,
            shorter,
            (
                f"max_completion_length lowered from {completion} to {shorter} to fit; watch "
                "completions/clipped_ratio"
            ),
        )


def _divisors(n: int, largest: int | None = None) -> list[int]:
    """Micro-batch sizes that divide the per-process generation batch, largest first (up to
    `largest` where the tier's policy caps it)."""
    return [b for b in range(min(n, largest or n), 0, -1) if n % b == 0]


def _refusal(model: ModelSpec, tier: Tier, task: TaskSpec, backend: str, smallest) -> str:
    from .catalog import CATALOG

    need = f"{smallest.peak_gib:.1f} GiB" if smallest else "more than available"
    # Every other single-machine tier that fits (a 16GB GPU with QLoRA can beat a 16 GiB CPU).
    bigger = [
        t.name
        for t in TIERS.values()
        if t.name != tier.name and not t.scalable and _fits(model, t, task, backend)
    ]
    smaller = [  # the largest that fits last
        m.hub_id
        for m in sorted(CATALOG.values(), key=lambda m: m.params)
        if m.params < model.params
        and not (backend == "unsloth" and m.unsloth)
        and _fits(m, tier, task, backend)
    ]
    what = f"{model.hub_id} ({model.params_b:.1f}B) does not fit the {tier.name} tier"
    options = []
    if bigger:
        options.append(f"a bigger tier ({', '.join(bigger)})")
    if smaller:
        options.append(f"a smaller model (e.g. {smaller[-1]})")
    fix = " or ".join(options) if options else "a bigger machine (multi-gpu or multi-node)"
    budget = tier.memory_gib * HEADROOM
    return (
        f"{what}: even the smallest configuration (QLoRA where available, micro-batch 1, "
        f"4 generations{floor_note(task)}) needs ~{need} of {budget:.1f} GiB usable per device; "
        f"choose {fix}"
    )


def floor_note(task: TaskSpec) -> str:
    """Why the refusal's completions are no shorter, where the task's floor says so."""
    if task.completion_floor <= 64:
        return ""
    return (
        f", completions no shorter than {task.completion_floor} tokens: the {task.name} task's "
        "own ideal completions need them"
    )


def _fits(model: ModelSpec, tier: Tier, task: TaskSpec, backend: str) -> bool:
    return _search(model, tier, task, backend)[0] is not None
