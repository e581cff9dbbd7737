"""Render `configs/grpo.yaml`: the tuning plan as a TRL recipe, one commented line per value.

The recipe is TRL's own format (one flat mapping read by `TrlParser`). Only fields that exist in
the pinned TRL are written; `max_prompt_length` and `warmup_ratio` are gone from TRL 1.16 /
transformers 5, so prompt length is the script argument `max_prompt_tokens` and warmup is in steps.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from . import algorithms, kit, memory, tuning  # noqa: F401 (kit: grpo_kit importable)
from .tuning import Plan
from .yaml_text import yaml_scalar

TRACKER_NOTES = {
    "none": "no tracker: metrics in the console, trainer_state.json and `make report`",
    "tensorboard": "event files in output_dir/runs: tensorboard --logdir outputs",
    "trackio": "local database (TRACKIO_DIR); `trackio show` opens the dashboard",
    "wandb": "offline unless WANDB_API_KEY is set; `wandb sync` uploads later",
}


@dataclass(frozen=True)
class Entry:
    key: str
    value: object
    comment: str = ""


@dataclass(frozen=True)
class Section:
    title: str
    entries: tuple[Entry, ...]
    notes: tuple[str, ...] = ()  # comment lines under the title


# What the recipe leaves to the task (grpo_kit.recipe.TASK_OWNED and DATA_FIELDS: task.py is
# their one home), said once at the top of its data section.
TASK_VALUES_NOTE = (
    "The task's data mapping, system prompt, rewards and their weights live in",
    "src/<package>/task.py (TASK): change them there, their one home. Your own data goes in",
    "configs/local.yaml (dataset_name, prompt_column, answer_column, ...). `make recipe` prints",
    "every value in force and the file that set it.",
)


# Warm-up as a share of the run (transformers 5 has no warmup_ratio): 10 of the GPU tiers' 500
# steps, 1 of the CPU tier's 50, so a short run leaves warm-up at once instead of never.
WARMUP_SHARE = 0.02


def max_steps(plan: Plan) -> int:
    return 50 if not plan.tier.is_gpu else 500


def warmup_steps(plan: Plan) -> int:
    return round(max_steps(plan) * WARMUP_SHARE)


def run_name(plan: Plan) -> str:
    short = plan.model.hub_id.split("/")[-1].lower()
    return re.sub(r"[^a-z0-9.]+", "-", f"{short}-{plan.task.name}-grpo").strip("-")


def sections(plan: Plan, tracker: str, algorithm: str = algorithms.DEFAULT) -> list[Section]:
    task, model, tier = plan.task, plan.model, plan.tier
    notes = list(TASK_VALUES_NOTE)
    if model.system_prompt_handling:
        notes.append(f"The system prompt with {model.hub_id}: {model.system_prompt_handling}.")
    if task.test_split == task.train_split:
        notes.append(
            "The task's default dataset has one split: make evaluate scores the rows held "
            "out of it by a hash of each problem, which training never sees (grpo docs data)."
        )
    data = Section(
        "data and prompts (grpo_kit.recipe.ScriptArguments)",
        (
            Entry(
                "max_prompt_tokens",
                plan.max_prompt_tokens,
                "longer prompts are dropped (and counted); TRL never truncates prompts",
            ),
        ),
        tuple(notes),
    )
    model_entries = [
        Entry("model_name_or_path", model.hub_id, _model_comment(plan)),
        Entry("dtype", plan.dtype, _dtype_comment(plan)),
    ]
    if plan.use_peft:
        targets = model.lora_targets
        model_entries += [
            Entry(
                "use_peft",
                True,
                f"{plan.mode.upper()}: train adapters, not all {model.params_b:.1f}B weights",
            ),
            Entry("lora_r", plan.lora_r, f"adapter rank for the {tier.name} tier"),
            Entry("lora_alpha", plan.lora_alpha, "2 x rank"),
            Entry("lora_dropout", 0.0, "no dropout: RL updates are already noisy"),
            Entry(
                "lora_target_modules",
                [targets] if isinstance(targets, str) else list(targets),
                "every linear layer of the language model",
            ),
        ]
    if plan.mode == "qlora":
        model_entries += [
            Entry(
                "load_in_4bit",
                True,
                "QLoRA: 4-bit NF4 base weights (needs a CUDA GPU + bitsandbytes)"
                + (
                    f"; never with use_vllm, whose weight sync TRL breaks for 4-bit "
                    f"({tuning.QLORA_VLLM_BROKEN})"
                    if plan.backend == "transformers"
                    else ""
                ),
            ),
            Entry("use_bnb_nested_quant", True, "double quantisation saves ~0.4 bits per weight"),
        ]
    precision = [Entry("bf16", plan.dtype == "bfloat16", _precision_comment(plan))]
    if plan.dtype == "float16":
        precision.append(Entry("fp16", True, "this GPU has no bf16: fp16 mixed precision"))
    if not tier.is_gpu:
        precision.insert(0, Entry("use_cpu", True, "train on the CPU (no GPU in this tier)"))
    training = Section(
        "training (trl.GRPOConfig)",
        (
            Entry("output_dir", f"outputs/{run_name(plan)}", "checkpoints, adapter, logs"),
            Entry("learning_rate", plan.learning_rate, _lr_comment(plan)),
            Entry("lr_scheduler_type", "cosine", "decay to 0 by max_steps"),
            Entry(
                "warmup_steps",
                warmup_steps(plan),
                f"{WARMUP_SHARE:.0%} of max_steps (transformers 5 has no warmup_ratio): scale "
                "it with max_steps",
            ),
            Entry("max_steps", max_steps(plan), "optimizer steps; raise for longer runs"),
            Entry(
                "per_device_train_batch_size",
                plan.per_device_train_batch_size,
                "completions (not prompts) per micro-batch",
            ),
            Entry(
                "gradient_accumulation_steps",
                plan.gradient_accumulation_steps,
                f"{plan.prompts_per_step} prompt(s) x {plan.num_generations} completions per step",
            ),
            Entry(
                "num_generations",
                plan.num_generations,
                "completions per prompt (the group GRPO normalises rewards over)",
            ),
            Entry(
                "max_completion_length",
                plan.max_completion_length,
                _completion_comment(plan),
            ),
            *_agent_entries(plan),
            Entry("chat_template_kwargs", plan.chat_template_kwargs, _template_comment(plan)),
            *(_vllm_entries(plan) if plan.backend == "transformers" else []),
            Entry(
                "beta", 0.0, "no KL term (TRL default); 0.001-0.04 keeps the policy near the base"
            ),
            *(Entry(k, v, why) for k, v, why in algorithms.entries(algorithm)),
            *precision,
            Entry(
                checkpointing_key(plan),
                plan.gradient_checkpointing,
                "recompute activations in backward to save memory"
                if plan.gradient_checkpointing
                else "off: memory is plentiful here and it is faster",
            ),
            *_ddp_entries(plan),
            Entry("optim", plan.optim, _optim_comment(plan)),
            Entry("logging_steps", 5, "watch reward, reward_std and completions/clipped_ratio"),
            Entry("save_steps", 50, "checkpoint every 50 steps (a rerun resumes from the last)"),
            Entry("save_total_limit", 3, "keep the 3 newest checkpoints"),
            *_eval_entries(plan),
            Entry("report_to", tracker, TRACKER_NOTES[tracker]),
            Entry(
                "log_completions",
                True,
                "sample completions table + output_dir/completions/*.parquet",
            ),
            Entry("num_completions_to_print", 2, "rows of that table printed per log step"),
            Entry("seed", 42),
        ),
    )
    result = [data, _watch_section()]
    if plan.backend == "unsloth":
        result.append(
            Section("Unsloth (grpo_kit.backends.UnslothArguments)", _unsloth_entries(plan))
        )
    if task.arguments:
        title = f"{task.name} task (TaskArguments, src/<package>/task.py)"
        entries = tuple(Entry(a.key, a.value, a.why) for a in task.arguments)
        result.append(Section(title, entries))
    return [*result, Section("model (trl.ModelConfig)", tuple(model_entries)), training]


def render(plan: Plan, tracker: str, header: str, algorithm: str = algorithms.DEFAULT) -> str:
    """The whole recipe file."""
    parts = sections(plan, tracker, algorithm)
    return render_file(header, plan.memory.summary(), plan.notes, parts)


def render_file(header: str, memory: str, notes, parts: list[Section]) -> str:
    """A commented YAML recipe: the header, the memory estimate and notes, then one
    `key: value  # why` line per entry, section by section (this recipe and the reward
    model's)."""
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    lines += [f"# Memory estimate per device: {memory}."]
    lines += [f"# NOTE: {note}." for note in notes]
    for section in parts:
        lines += ["", f"# --- {section.title} ---", *(f"# {note}" for note in section.notes)]
        for entry in section.entries:
            line = f"{entry.key}: {yaml_scalar(entry.value)}"
            if entry.comment:
                line += f"  # {entry.comment}"
            lines.append(line)
    return "\n".join(lines) + "\n"


def values(plan: Plan, tracker: str, algorithm: str = algorithms.DEFAULT) -> dict:
    """The recipe as a dict (what `yaml.safe_load` of the rendered file must give)."""
    return {e.key: e.value for s in sections(plan, tracker, algorithm) for e in s.entries}


# The kit's recipe fields the recipe writes, in this order, with their default and help text
# (grpo_kit.recipe.ScriptArguments holds both, once).
WATCHED = (
    "preflight",
    "preflight_refuse",
    "health_zero_std_max",
    "health_kl_max",
    "health_entropy_min",
    "health_clipped_max",
    "health_flat_logs",
    "health_stop_on_fatal",
    "adaptive_reward_weights",
    "reward_model",
    "reward_model_weight",
)


def kit_entries(dataclass_type, names: tuple[str, ...] | None = None) -> tuple[Entry, ...]:
    """Entries for fields of a kit dataclass (all, or `names` in that order), each with the
    field's default and its help text as the comment."""
    fields = {f.name: f for f in dataclasses.fields(dataclass_type)}
    entries = []
    for name in names or tuple(fields):
        field = fields[name]
        value = field.default
        if field.default_factory is not dataclasses.MISSING:
            value = field.default_factory()
        entries.append(Entry(name, value, field.metadata.get("help", "")))
    return tuple(entries)


def _watch_section() -> Section:
    """Health checks, reward weighting and an optional reward model (the kit's ScriptArguments)."""
    from grpo_kit.recipe import ScriptArguments

    return Section(
        "signal preflight, health checks and reward weighting (grpo_kit.recipe.ScriptArguments)",
        kit_entries(ScriptArguments, WATCHED),
    )


def _eval_entries(plan: Plan) -> list[Entry]:
    """Evaluation during training: held-out prompts scored every 50 steps on a GPU; off on the
    CPU, where every evaluation costs generations a run cannot spare."""
    from grpo_kit.recipe import ScriptArguments

    if not plan.tier.is_gpu:
        why = "no evaluation during training on a CPU (each costs generations); steps: see README"
        return [Entry("eval_strategy", "no", why)]
    return [
        Entry(
            "eval_strategy",
            "steps",
            "score held-out prompts with the rewards while training (eval_reward, "
            "eval_rewards/<name>/mean)",
        ),
        Entry("eval_steps", 50, "every 50 steps, with the checkpoints"),
        *kit_entries(ScriptArguments, ("eval_prompts",)),
        Entry(
            "per_device_eval_batch_size",
            plan.num_generations,
            "one prompt's group of num_generations completions per evaluation micro-batch",
        ),
    ]


def _ddp_entries(plan: Plan) -> list[Entry]:
    """`ddp_find_unused_parameters` where a text task leaves trainable parameters without a
    gradient (Plan.ddp_find_unused_parameters); elsewhere transformers' default stands."""
    if not plan.ddp_find_unused_parameters:
        return []
    return [
        Entry(
            "ddp_find_unused_parameters",
            True,
            "text never reaches this checkpoint's vision/audio towers, so they get no gradient; "
            "DDP must skip them or it fails at step 2 (transformers turns the search off under "
            "activation checkpointing; TRL turns it on only for image data). Ignored by one "
            "process and by DeepSpeed",
        )
    ]


def _agent_entries(plan: Plan) -> list[Entry]:
    """An agent task's cap on tool-calling turns (TRL's default, None, is no cap)."""
    if not plan.task.tool_iterations:
        return []
    return [
        Entry(
            "max_tool_calling_iterations",
            plan.task.tool_iterations,
            "tool-calling turns per rollout; tool results count in max_completion_length",
        )
    ]


def checkpointing_key(plan: Plan) -> str:
    """The GRPOConfig field that turns on activation checkpointing in the backend's stack."""
    # transformers 5.24 renamed gradient_checkpointing; the Unsloth stack's 5.17 has the old name.
    return "gradient_checkpointing" if plan.backend == "unsloth" else "activation_checkpointing"


def _unsloth_entries(plan: Plan) -> tuple[Entry, ...]:
    entries = [
        Entry("max_seq_length", plan.vllm_max_model_length, "prompt + completion tokens"),
        Entry(
            "fast_inference",
            plan.fast_inference,
            _fast_inference_comment(plan),
        ),
    ]
    entries.append(Entry("max_lora_rank", plan.lora_r, "= lora_r: vLLM refuses larger adapters"))
    return tuple(entries)


def _fast_inference_comment(plan: Plan) -> str:
    """gpu_memory_utilization is not written: with UNSLOTH_VLLM_STANDBY=1 Unsloth replaces it
    by its own share of the card (memory.unsloth_standby_share)."""
    if not plan.fast_inference:
        return "Unsloth's own generation"
    share = memory.unsloth_standby_share(plan.tier.memory_gib)
    return (
        "vLLM sharing the model's weights (pip install -e '.[gpu]'); UNSLOTH_VLLM_STANDBY=1 "
        f"(grpo_kit.backends.unsloth) gives it {share:.0%} of this tier's "
        f"{plan.tier.memory_gib:g} GiB whatever gpu_memory_utilization says, and frees it while "
        "training"
    )


def _vllm_entries(plan: Plan) -> list[Entry]:
    """Generation with vLLM: colocated on each training GPU, or a server on GPUs of its own."""
    if not plan.use_vllm:
        return [Entry("use_vllm", False, _no_vllm_comment(plan))]
    entries = [
        Entry("use_vllm", True, "fast generation with vLLM: pip install -e '.[gpu]'"),
        Entry("vllm_mode", plan.vllm_mode, _vllm_mode_comment(plan)),
    ]
    if plan.vllm_mode == "colocate":
        entries.append(
            Entry(
                "vllm_gpu_memory_utilization",
                plan.vllm_gpu_memory_utilization,
                "share of each GPU vLLM reserves: bf16 weights + KV cache of one round",
            )
        )
        entries.append(
            Entry("vllm_max_model_length", plan.vllm_max_model_length, "prompt + completion tokens")
        )
    else:
        entries += [
            Entry(
                "vllm_server_host",
                "127.0.0.1",
                "the server `grpo launch` starts",
            ),
            Entry("vllm_server_port", 8000, "its port"),
            Entry("vllm_server_timeout", 600.0, "seconds to wait for it to load the model"),
        ]
    return entries


def _no_vllm_comment(plan: Plan) -> str:
    if not plan.tier.vllm:
        return "generate with transformers (this tier plans no vLLM)"
    if plan.mode == "qlora":
        return (
            "generate with transformers: TRL cannot sync QLoRA's 4-bit weights into vLLM "
            f"({tuning.QLORA_VLLM_BROKEN}); 16-bit LoRA with vLLM does not fit here"
        )
    return "generate with transformers (vLLM does not fit here)"


def _vllm_mode_comment(plan: Plan) -> str:
    if plan.vllm_mode == "server":
        gpus = plan.vllm_server_gpus
        return f"a vLLM server on {gpus} GPU(s), training on the other {plan.processes}"
    return "vLLM shares each training GPU"


def _model_comment(plan: Plan) -> str:
    model = plan.model
    gated = "; gated: accept its licence on the Hub first" if model.gated else ""
    size = (
        "size estimated from the parameter count" if model.estimated else f"{model.params_b:.2f}B"
    )
    return f"{size}, {model.license}{gated}"


def _dtype_comment(plan: Plan) -> str:
    if plan.dtype == "float32":
        return "CPU: full precision"
    if plan.dtype == "float16":
        return "fp16 weights (no bf16 on this GPU)"
    return "bf16 weights (TRL would otherwise load float32, twice the memory)"


def _precision_comment(plan: Plan) -> str:
    return "bf16 mixed precision" if plan.dtype == "bfloat16" else "off (TRL defaults bf16 to true)"


def _lr_comment(plan: Plan) -> str:
    if plan.mode == "full":
        return "full fine-tuning rate (TRL default 1e-6)"
    if plan.learning_rate == tuning.SHORT_RUN_LORA_RATE:
        return (
            f"LoRA rate for a short CPU run (Unsloth's 60-100-step LoRA notebooks use "
            f"{tuning.SHORT_RUN_LORA_RATE:g}); the GPU tiers' longer runs use "
            f"{tuning.LEARNING_RATE['lora']:g}"
        )
    return "LoRA rate: ~10x the full fine-tuning rate"


def _completion_comment(plan: Plan) -> str:
    thinking = "; doubled: this model thinks before answering" if plan.thinking else ""
    if plan.task.tool_iterations:
        return (
            "the whole agent exchange: every assistant turn and every tool result (a result "
            f"that would pass it is dropped and the rollout ends){thinking}"
        )
    return f"{plan.task.name} answers; too short truncates answers and zeroes the reward{thinking}"


def _template_comment(plan: Plan) -> str:
    """What the chat template does with these kwargs (train, evaluate, infer and merge render
    every prompt with them; TRL applies them in training)."""
    model = plan.model
    if not model.thinking_switch:
        what = "this chat template has no thinking switch"
    elif plan.thinking:
        what = "thinking on, the model's default"
        if model.prefills_think:
            what += "; the template opens <think> in the prompt, so completions start inside it"
    elif model.thinking:
        what = "thinking off for this task's answer format (the model's default is on)"
    else:
        what = "thinking off, the model's default"
    if not model.system_role:
        what += "; the template folds the system prompt into the first user turn"
    return what + "; every prompt of train, evaluate, infer and merge is rendered with these"


def _optim_comment(plan: Plan) -> str:
    if plan.optim == "adamw_8bit":
        return "8-bit AdamW (bitsandbytes): 2 bytes of state per parameter"
    if plan.optim == "adamw_torch_fused":
        return "fused AdamW on the GPU"
    return "AdamW"
