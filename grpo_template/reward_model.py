"""Render `configs/reward_model.yaml`: a reward model trained on preference pairs, tuned per tier.

The generated command (`make reward-model`, `src/<package>/reward_model.py`) trains the project's
model as a sequence classifier with TRL's `RewardTrainer` (Bradley-Terry loss on chosen/rejected
pairs). Its recipe is TRL's own format: one flat mapping of `RewardConfig` and `ModelConfig`
fields plus the command's `RewardScriptArguments`, read by `TrlParser`.

Starting point, the size table of the seed guide's reward-modeling reference ("Hyperparameters"),
for full fine-tuning:

| model size | learning rate | batch size (pairs) | epochs |
| --- | ---: | ---: | ---: |
| < 1B | 2e-5 | 4-8 | 1-2 |
| 1-7B | 1e-5 | 2-4 | 1 |
| 7-13B | 5e-6 | 1-2 | 1 |

Models above 13B take the last row. How the recipe uses it:

* learning rate: the row's rate for full fine-tuning; LoRA and QLoRA take it times the same
  LoRA/full ratio the GRPO recipe uses (`tuning.LEARNING_RATE`, ~10x: adapters need it);
* batch: the row's upper end is the pairs per optimizer step on one device; the micro-batch is the
  largest divisor of it that fits the memory model, gradient accumulation makes up the rest (a
  micro-batch below the row's lower end is noted);
* epochs: the row's lower end (a reward model overfits its pairs quickly; raise it for small data).

The memory model is the GRPO one (`memory.estimate`), for a sequence classifier: the LM head is
replaced by a one-output score head (an untied model loses its vocab x hidden head), every pair is
two sequences (chosen and rejected) of up to `max_length` tokens in one micro-batch, there is no
generation (no KV cache) and no reference model. `max_length` is the GRPO recipe's prompt plus
completion tokens: what the reward model scores during GRPO. Modes are tried in the order full
fine-tuning (bf16 GPU tiers), LoRA, QLoRA (only where the project installs bitsandbytes, i.e. where
the GRPO plan needs it); CPU trains LoRA. The command trains in one process on one device; when the
project's model does not fit one device even with QLoRA, the largest catalog model that fits is
the base (noted: a reward model need not share the policy's tokenizer or size).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from . import memory, stack, tuning
from .catalog import CATALOG, ModelSpec
from .recipe import Entry, Section, checkpointing_key, kit_entries, render_file
from .tiers import Tier

CENTER_REWARDS = 0.01  # TRL's recommended center_rewards_coefficient (arXiv 2312.09244, Eq. 2)
LENGTH_FRACTIONS = (1.0, 0.75, 0.5)  # max_length tried, as fractions of the GRPO sequence length
MIN_LENGTH = 256


@dataclass(frozen=True)
class SizeRow:
    """One row of the size table: models up to `max_params` parameters."""

    max_params: float
    learning_rate: float  # full fine-tuning
    batch: tuple[int, int]  # pairs per optimizer step (low, high)
    epochs: tuple[int, int]
    label: str


SIZE_TABLE: tuple[SizeRow, ...] = (
    SizeRow(1e9, 2e-5, (4, 8), (1, 2), "< 1B"),
    SizeRow(7e9, 1e-5, (2, 4), (1, 1), "1-7B"),
    SizeRow(13e9, 5e-6, (1, 2), (1, 1), "7-13B"),
)
LORA_LR_FACTOR = tuning.LEARNING_RATE["lora"] / tuning.LEARNING_RATE["full"]


def size_row(params: float) -> SizeRow:
    """The table row for a model size (the last row beyond the table)."""
    return next((row for row in SIZE_TABLE if params < row.max_params), SIZE_TABLE[-1])


def classifier_spec(model: ModelSpec) -> ModelSpec:
    """The model as `AutoModelForSequenceClassification` loads it: no LM head (an untied model
    loses vocab x hidden parameters), a one-output score head instead."""
    head = 0 if model.tied_embeddings else model.vocab * model.hidden
    return dataclasses.replace(
        model,
        params=model.params - head + model.hidden,
        non_embedding_params=model.non_embedding_params + model.hidden,
    )


@dataclass(frozen=True)
class RewardPlan:
    """The reward-model recipe's tuned values, with the estimate behind them."""

    model: ModelSpec  # the base model (the project's, or a smaller one when it cannot fit)
    tier: Tier
    mode: str  # full, lora or qlora
    dtype: str
    optim: str
    learning_rate: float
    per_device_train_batch_size: int  # pairs per micro-batch (two sequences each)
    gradient_accumulation_steps: int
    num_train_epochs: int
    max_length: int
    gradient_checkpointing: bool
    lora_r: int
    lora_alpha: int
    memory: memory.MemoryEstimate
    row: SizeRow
    notes: tuple[str, ...] = ()

    @property
    def use_peft(self) -> bool:
        return self.mode in ("lora", "qlora")

    @property
    def pairs_per_step(self) -> int:
        return self.per_device_train_batch_size * self.gradient_accumulation_steps


def modes(tier: Tier, quantization: bool) -> list[str]:
    """Fine-tuning modes to try, preferred first."""
    if not tier.is_gpu:
        return ["lora"]
    found = ["full", "lora"] if tier.bf16 else ["lora"]  # fp16 full fine-tuning is unstable
    return [*found, "qlora"] if quantization else found


def optimizer(tier: Tier) -> str:
    """Torch AdamW (fused on a GPU): no bitsandbytes needed whatever the mode."""
    return "adamw_torch_fused" if tier.is_gpu else "adamw_torch"


def shape(tier: Tier, mode: str, pairs: int, length: int, lora_r: int) -> memory.TrainingShape:
    """The memory model's view of one reward-model micro-batch."""
    return memory.TrainingShape(
        mode=mode,
        dtype=tuning.dtype_for(tier),
        optim=optimizer(tier),
        per_device_batch=2 * pairs,  # chosen and rejected sequences
        generation_batch=0,  # no generation: no KV cache
        prompt_tokens=length,  # the whole scored text: prompt and completion
        completion_tokens=0,
        gradient_checkpointing=tier.is_gpu,
        lora_r=lora_r if mode != "full" else 0,
        on_gpu=tier.is_gpu,
    )


def _divisors(n: int) -> list[int]:
    return [b for b in range(n, 0, -1) if n % b == 0]


def _search(model: ModelSpec, tier: Tier, max_length: int, quantization: bool):
    """(mode, micro-batch, length, estimate) of the first configuration that fits, else None."""
    budget = tier.memory_bytes * tuning.HEADROOM
    lora_r = tuning.POLICIES[tier.name].lora_r
    classifier = classifier_spec(model)
    row = size_row(model.params)
    for fraction in LENGTH_FRACTIONS:
        length = max(MIN_LENGTH, _round_tokens(max_length * fraction))
        if fraction < 1 and length >= max_length:
            break
        for mode in modes(tier, quantization):
            for pairs in _divisors(row.batch[1]):
                estimate = memory.estimate(classifier, shape(tier, mode, pairs, length, lora_r))
                if estimate.peak <= budget:
                    return mode, pairs, length, estimate
    return None


def _round_tokens(n: float) -> int:
    return max(64, int(round(n / 64)) * 64)


def plan(grpo_plan: tuning.Plan) -> RewardPlan:
    """The reward-model plan for a project whose GRPO plan is `grpo_plan` (same model, tier)."""
    tier = grpo_plan.tier
    max_length = grpo_plan.max_prompt_tokens + grpo_plan.max_completion_length
    quantization = stack.BITSANDBYTES in stack.gpu_dependencies(grpo_plan)
    notes = []
    model = grpo_plan.model
    found = _search(model, tier, max_length, quantization) if model.sequence_classifier else None
    if found is None:
        # The largest catalog model below the policy that transformers loads as a sequence
        # classifier, ungated unless the policy is, and that fits.
        smaller = [
            m
            for m in sorted(CATALOG.values(), key=lambda m: m.params, reverse=True)
            if m.params <= model.params
            and m.hub_id != model.hub_id
            and m.sequence_classifier
            and (model.gated or not m.gated)
        ]
        for candidate in smaller:
            found = _search(candidate, tier, max_length, quantization)
            if found is not None:
                how = "even with QLoRA" if quantization else "with LoRA (QLoRA needs bitsandbytes)"
                base = (
                    f"the base is {candidate.hub_id}, the largest catalog model no larger that fits"
                )
                notes.append(
                    f"{model.hub_id} does not fit one {tier.name} device as a reward model {how}: "
                    f"{base} (or train it sharded: accelerate launch with ZeRO-3)"
                    if model.sequence_classifier
                    else f"transformers has no sequence-classification class for {model.hub_id} "
                    f"({model.architecture}): {base}"
                )
                model = candidate
                break
    if found is None:  # unreachable with the catalog's smallest model on any tier
        raise tuning.DoesNotFit(f"no reward model fits the {tier.name} tier")
    mode, pairs, length, estimate = found
    row = size_row(model.params)
    if length < max_length:
        notes.append(
            f"max_length lowered from {max_length} to {length} to fit; longer pairs are dropped"
        )
    if pairs < row.batch[0]:
        notes.append(
            f"micro-batch of {pairs} pair(s), below the size table's {row.batch[0]} for "
            f"{row.label} models, to fit (gradient accumulation keeps {row.batch[1]} per step)"
        )
    rate = row.learning_rate * (LORA_LR_FACTOR if mode != "full" else 1)
    lora_r = tuning.POLICIES[tier.name].lora_r
    return RewardPlan(
        model=model,
        tier=tier,
        mode=mode,
        dtype=tuning.dtype_for(tier),
        optim=optimizer(tier),
        learning_rate=float(f"{rate:.3g}"),
        per_device_train_batch_size=pairs,
        gradient_accumulation_steps=row.batch[1] // pairs,
        num_train_epochs=row.epochs[0],
        max_length=length,
        gradient_checkpointing=tier.is_gpu,
        lora_r=lora_r,
        lora_alpha=2 * lora_r,
        memory=estimate,
        row=row,
        notes=tuple(notes),
    )


def run_name(grpo_plan: tuning.Plan, rm: RewardPlan) -> str:
    short = rm.model.hub_id.split("/")[-1].lower()
    return re.sub(r"[^a-z0-9.]+", "-", f"{short}-{grpo_plan.task.name}-reward-model").strip("-")


# The command's own fields the recipe writes (grpo_kit.preferences).
SCRIPT_FIELDS = (
    "dataset_name",
    "dataset_config",
    "dataset_train_split",
    "dataset_test_split",
    "test_size",
    "prompt_column",
    "chosen_column",
    "rejected_column",
    "margin_column",
    "as_chat",
    "accuracy_target",
)


def sections(grpo_plan: tuning.Plan, rm: RewardPlan, tracker: str) -> list[Section]:
    tier, model = rm.tier, rm.model
    from grpo_kit.preferences import RewardScriptArguments

    pairs = {e.key: e for e in kit_entries(RewardScriptArguments, SCRIPT_FIELDS)}
    pairs["dataset_name"] = Entry(
        "dataset_name", pairs["dataset_name"].value, pairs["dataset_name"].comment + " (a sample)"
    )
    data = Section(
        "preference pairs (grpo_kit.preferences.RewardScriptArguments)",
        tuple(pairs.values()),
    )
    model_entries = [
        Entry("model_name_or_path", model.hub_id, _model_comment(grpo_plan, rm)),
        Entry("dtype", rm.dtype, _dtype_comment(rm.dtype)),
    ]
    if rm.use_peft:
        targets = model.lora_targets
        model_entries += [
            Entry("use_peft", True, f"{rm.mode.upper()}: train adapters and the score head"),
            Entry("lora_r", rm.lora_r, f"adapter rank for the {tier.name} tier"),
            Entry("lora_alpha", rm.lora_alpha, "2 x rank"),
            Entry("lora_dropout", 0.0, "disable_dropout turns it off anyway"),
            Entry(
                "lora_target_modules",
                [targets] if isinstance(targets, str) else list(targets),
                "every linear layer of the language model",
            ),
            Entry(
                "lora_task_type",
                "SEQ_CLS",
                "PEFT trains and saves the score head beside the adapters",
            ),
        ]
    if rm.mode == "qlora":
        model_entries += [
            Entry("load_in_4bit", True, "QLoRA: 4-bit NF4 base weights (CUDA GPU + bitsandbytes)"),
            Entry("use_bnb_nested_quant", True, "double quantisation saves ~0.4 bits per weight"),
        ]
    precision = [
        Entry(
            "bf16",
            rm.dtype == "bfloat16",
            "bf16 mixed precision" if rm.dtype == "bfloat16" else "off (TRL defaults it to true)",
        )
    ]
    if rm.dtype == "float16":
        precision.append(Entry("fp16", True, "this GPU has no bf16: fp16 mixed precision"))
    if not tier.is_gpu:
        precision.insert(0, Entry("use_cpu", True, "train on the CPU (no GPU in this tier)"))
    training = Section(
        "training (trl.RewardConfig)",
        (
            Entry(
                "output_dir",
                f"outputs/{run_name(grpo_plan, rm)}",
                "the merged reward model: name this folder as reward_model in configs/grpo.yaml",
            ),
            Entry("learning_rate", rm.learning_rate, _lr_comment(rm)),
            Entry("lr_scheduler_type", "linear", "decay to 0 by the end"),
            Entry("warmup_steps", 0.03, "a float below 1 is a share of the steps"),
            Entry("num_train_epochs", rm.num_train_epochs, _epochs_comment(rm)),
            Entry(
                "per_device_train_batch_size",
                rm.per_device_train_batch_size,
                "pairs per micro-batch (each is two sequences: chosen and rejected)",
            ),
            Entry(
                "gradient_accumulation_steps",
                rm.gradient_accumulation_steps,
                f"{rm.pairs_per_step} pairs per optimizer step ({rm.row.label} row of the size "
                f"table: {_span(rm.row.batch)})",
            ),
            Entry(
                "max_length",
                rm.max_length,
                "tokens of prompt + answer (GRPO's prompt + completion); longer pairs are dropped",
            ),
            Entry(
                "center_rewards_coefficient",
                CENTER_REWARDS,
                "keeps scores near 0, so their weight in reward_weights stays meaningful",
            ),
            Entry("disable_dropout", True, "steadier scores (TRL's default)"),
            *precision,
            Entry(
                checkpointing_key(grpo_plan),
                rm.gradient_checkpointing,
                "recompute activations in backward to save memory"
                if rm.gradient_checkpointing
                else "off: memory is plentiful here and it is faster",
            ),
            Entry(
                "optim",
                rm.optim,
                "fused AdamW on the GPU (no bitsandbytes needed)" if tier.is_gpu else "AdamW",
            ),
            Entry("logging_steps", 10, "watch loss, accuracy and margin"),
            Entry("save_steps", 100, "checkpoint every 100 steps (a rerun resumes from the last)"),
            Entry("save_total_limit", 2, "keep the 2 newest checkpoints"),
            Entry("report_to", tracker, "the same tracker as the GRPO recipe"),
            Entry("seed", 42, "also splits off the held-out pairs"),
        ),
    )
    return [data, Section("model (trl.ModelConfig)", tuple(model_entries)), training]


def header(grpo_plan: tuning.Plan, rm: RewardPlan) -> str:
    row = rm.row
    return (
        f"Reward-model recipe: {rm.model.hub_id} as a sequence classifier (one score per text) "
        f"on the {rm.tier.name} tier, {grpo_plan.task.name} task, {grpo_plan.backend} backend.\n"
        "Train: make reward-model (grpo reward-model --config configs/reward_model.yaml), "
        "on one device;\n"
        "then set reward_model: <output_dir> in configs/local.yaml (its weight:\n"
        "reward_model_weight). The system prompt is the task's (task.py).\n"
        "Every key is a field of grpo_kit's RewardScriptArguments, "
        "trl.RewardConfig or trl.ModelConfig;\n"
        "override any of them on the command line, e.g. --learning_rate 1e-5 --max_steps 100.\n"
        f"Size table row {row.label}: learning rate {row.learning_rate:g} (full fine-tuning), "
        f"{_span(row.batch)} pairs per step, {_span(row.epochs)} epoch(s)."
    )


def render(grpo_plan: tuning.Plan, tracker: str) -> str:
    """The whole `configs/reward_model.yaml`."""
    rm = plan(grpo_plan)
    parts = sections(grpo_plan, rm, tracker)
    return render_file(header(grpo_plan, rm), rm.memory.summary(), rm.notes, parts)


def values(grpo_plan: tuning.Plan, tracker: str) -> dict:
    """The recipe as a dict (what `yaml.safe_load` of the rendered file must give)."""
    rm = plan(grpo_plan)
    return {e.key: e.value for s in sections(grpo_plan, rm, tracker) for e in s.entries}


def _model_comment(grpo_plan: tuning.Plan, rm: RewardPlan) -> str:
    same = rm.model.hub_id == grpo_plan.model.hub_id
    base = "the policy's base model" if same else "not the policy's base model (see NOTE)"
    gated = "; gated: accept its licence on the Hub first" if rm.model.gated else ""
    return f"{base}, loaded with a one-output score head{gated}"


def _lr_comment(rm: RewardPlan) -> str:
    full = f"size table: {rm.row.learning_rate:g} for {rm.row.label} models"
    if rm.mode == "full":
        return f"{full} (full fine-tuning)"
    return f"{full}, x{LORA_LR_FACTOR:g} for adapters"


def _span(bounds: tuple[int, int]) -> str:
    low, high = bounds
    return f"{low}-{high}" if high != low else f"{low}"


def _epochs_comment(rm: RewardPlan) -> str:
    return f"size table: {_span(rm.row.epochs)}; more overfits the pairs (raise it for small data)"


def _dtype_comment(dtype: str) -> str:
    if dtype == "float32":
        return "CPU: full precision"
    if dtype == "float16":
        return "fp16 weights (no bf16 on this GPU)"
    return "bf16 weights (TRL would otherwise load float32, twice the memory)"
