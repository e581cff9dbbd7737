"""From (model, tier, backend, task) to a GRPO configuration that fits, or a clear refusal.

The search keeps the training signal first: it tries the tier's target number of generations and
completion length in every fine-tuning mode (full, LoRA, QLoRA) and micro-batch size, and only
then gives up generations or length. A configuration is accepted when the memory model's peak
stays under `HEADROOM` of the device. Every accepted plan satisfies GRPO's batch arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import memory
from .catalog import ModelSpec
from .tasks import TaskSpec
from .tiers import TIERS, Tier

HEADROOM = 0.92  # fraction of the device an estimate may use


@dataclass(frozen=True)
class TierPolicy:
    """What a tier aims for before memory forces a compromise."""

    num_generations: int
    prompts_per_step: int  # prompts (groups) per optimizer step
    length_scale: float  # multiplies the task's typical completion length
    lora_r: int
    allow_full: bool  # full fine-tuning is considered (small models only)


POLICIES: dict[str, TierPolicy] = {
    "cpu": TierPolicy(4, 1, 0.5, 16, False),
    "16GB": TierPolicy(4, 1, 1.0, 16, False),
    "24GB": TierPolicy(8, 1, 1.0, 32, False),
    "48GB": TierPolicy(8, 2, 1.5, 64, True),
    "80GB": TierPolicy(8, 4, 2.0, 64, True),
    "141GB": TierPolicy(16, 4, 2.0, 64, True),
}
FULL_FINETUNE_MAX_PARAMS = 2.0e9  # above this, LoRA learns nearly as well for far less memory
LEARNING_RATE = {"full": 1e-6, "lora": 1e-5, "qlora": 1e-5}  # LoRA needs ~10x the full-FT rate


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
    notes: tuple[str, ...] = field(default=())

    @property
    def processes(self) -> int:
        return self.tier.processes

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


class DoesNotFit(ValueError):
    """No configuration of this model fits this tier; the message says what would."""


def dtype_for(tier: Tier) -> str:
    if not tier.is_gpu:
        return "float32"
    return "bfloat16" if tier.bf16 else "float16"


def modes_for(model: ModelSpec, tier: Tier, policy: TierPolicy) -> list[str]:
    if not tier.is_gpu:
        return ["lora"]
    modes = ["lora", "qlora"]
    if policy.allow_full and tier.bf16 and model.params <= FULL_FINETUNE_MAX_PARAMS:
        modes.insert(0, "full")
    return modes


def optimizer_for(mode: str, tier: Tier) -> str:
    if not tier.is_gpu:
        return "adamw_torch"
    if mode == "full" and tier.memory_gib < 70:
        return "adamw_8bit"  # bitsandbytes: 2 bytes of state per parameter instead of 4
    return "adamw_torch_fused"


def _round_tokens(n: float) -> int:
    return max(64, int(round(n / 64)) * 64)


def _shape(mode, dtype, optim, batch, generation_batch, prompt, completion, lora_r, tier):
    return memory.TrainingShape(
        mode=mode,
        dtype=dtype,
        optim=optim,
        per_device_batch=batch,
        generation_batch=generation_batch,
        prompt_tokens=prompt,
        completion_tokens=completion,
        gradient_checkpointing=tier.is_gpu,
        lora_r=lora_r if mode != "full" else 0,
        on_gpu=tier.is_gpu,
    )


def plan(model: ModelSpec, tier: Tier, task: TaskSpec, backend: str = "transformers") -> Plan:
    """The configuration to bake, or `DoesNotFit` with the estimate and what would fit."""
    found, smallest = _search(model, tier, task, backend)
    if found is None:
        raise DoesNotFit(_refusal(model, tier, task, backend, smallest))
    return found


def _search(model: ModelSpec, tier: Tier, task: TaskSpec, backend: str):
    """(the first plan that fits or None, the smallest estimate seen)."""
    policy = POLICIES[tier.name]
    dtype = dtype_for(tier)
    budget = tier.memory_bytes * HEADROOM
    thinking = 2 if model.thinking else 1
    target_completion = _round_tokens(task.completion_tokens * policy.length_scale * thinking)
    target_completion = min(target_completion, model.context - task.prompt_tokens)
    prompt = task.prompt_tokens
    smallest = None
    for generations, completion, note in _quality_levels(policy, target_completion):
        generation_batch = generations * policy.prompts_per_step  # per process
        for mode in modes_for(model, tier, policy):
            optim = optimizer_for(mode, tier)
            for batch in _micro_batches(generation_batch, generations):
                shape = _shape(
                    mode,
                    dtype,
                    optim,
                    batch,
                    generation_batch,
                    prompt,
                    completion,
                    policy.lora_r,
                    tier,
                )
                estimate = memory.estimate(model, shape)
                if smallest is None or estimate.peak < smallest.peak:
                    smallest = estimate
                if estimate.peak <= budget:
                    notes = (note,) if note else ()
                    found = Plan(
                        model=model,
                        tier=tier,
                        task=task,
                        backend=backend,
                        mode=mode,
                        dtype=dtype,
                        per_device_train_batch_size=batch,
                        gradient_accumulation_steps=generation_batch // batch,
                        num_generations=generations,
                        max_completion_length=completion,
                        max_prompt_tokens=prompt,
                        gradient_checkpointing=shape.gradient_checkpointing,
                        optim=optim,
                        learning_rate=LEARNING_RATE[mode],
                        lora_r=policy.lora_r,
                        lora_alpha=2 * policy.lora_r,
                        memory=estimate,
                        notes=notes,
                    )
                    return found, smallest
    return None, smallest


def _quality_levels(policy: TierPolicy, completion: int):
    """(generations, completion length, note) from the tier's target down to the floor."""
    yield policy.num_generations, completion, ""
    if policy.num_generations > 4:
        yield 4, completion, f"num_generations lowered from {policy.num_generations} to 4 to fit"
    for fraction in (0.75, 0.5):
        shorter = _round_tokens(completion * fraction)
        yield (
            4,
            shorter,
            (
                f"max_completion_length lowered from {completion} to {shorter} to fit; watch "
                "completions/clipped_ratio"
            ),
        )


def _micro_batches(generation_batch: int, generations: int):
    """Micro-batch sizes that divide the generation batch, largest first."""
    return [b for b in range(generation_batch, 0, -1) if generation_batch % b == 0]


def _refusal(model: ModelSpec, tier: Tier, task: TaskSpec, backend: str, smallest) -> str:
    need = f"{smallest.peak_gib:.1f} GiB" if smallest else "more than available"
    bigger = [
        t.name
        for t in TIERS.values()
        if t.memory_gib > tier.memory_gib and _fits(model, t, task, backend)
    ]
    from .catalog import CATALOG

    smaller = [
        m.hub_id
        for m in CATALOG.values()
        if m.params < model.params and _fits(m, tier, task, backend)
    ]
    what = f"{model.hub_id} ({model.params_b:.1f}B) does not fit the {tier.name} tier"
    options = []
    if bigger:
        options.append(f"a bigger tier ({', '.join(bigger)})")
    if smaller:
        options.append(f"a smaller model (e.g. {smaller[-1]})")
    fix = " or ".join(options) if options else "a bigger machine"
    budget = tier.memory_gib * HEADROOM
    return (
        f"{what}: even the smallest configuration (QLoRA where available, micro-batch 1, "
        f"4 generations) needs ~{need} of {budget:.1f} GiB usable; choose {fix}"
    )


def _fits(model: ModelSpec, tier: Tier, task: TaskSpec, backend: str) -> bool:
    return _search(model, tier, task, backend)[0] is not None
