"""The recipe: one typed object read by every command, from layers merged in one place.

A recipe is one flat mapping whose keys are fields of five dataclasses: `ScriptArguments`
(below: data, prompts, rewards, health), the task's arguments (`Task.arguments`, the project's
task.py), the backend's (`backends`), TRL's `GRPOConfig` (training) and `ModelConfig` (model,
LoRA). `parse_recipe(argv)` builds it from these layers, each overriding the ones before it:

1. the dataclasses' defaults (each default exists once, in its dataclass), then the task's: its
   data mapping, system prompt, rewards and weights (`Task.recipe_defaults`). Their one home is
   the project's task.py (`TASK_OWNED`, `DATA_FIELDS`): the generated recipe does not restate
   them, and a recipe file that sets one is reported (`shadowed_task_values`);
2. the recipe file: `configs/grpo.yaml`, unless `--config PATH` (or `--config=PATH`) names one;
3. `configs/local.yaml`, yours (regeneration never touches it), on top of the generated recipe:
   the place for YOUR data mapping (it overrides the task's default data);
4. one more layer a command adds: a stage's keys (`commands/stages.py`), or, for a command
   that reads data offline (reward-debug, the project's tests), the sample data with its own
   columns while the recipe still names the task's default data (`offline_data_values`);
5. the offline overrides: `--smoke` (tiny local model, CPU, two steps; the sample data with its
   own columns while the recipe names the task's default data, which needs the Hub, and your
   data, columns and labels once you have set your own), so any recipe runs offline; or
   `--trial` (the same on YOUR data: a few steps on the CPU that check your data, prompts and
   rewards end to end before a GPU run; the sample while the recipe names the task's default
   Hub dataset, as for smoke); or `--smoke-distributed` (`make
   smoke-distributed`: the smoke run that keeps the recipe's checkpointing and DDP settings,
   `DISTRIBUTED_SMOKE_KEEPS`, so only the model's size and the data shrink);
6. `use_cpu: true` for commands that only read the recipe (infer, merge, report...), so a GPU
   recipe can be read on a laptop;
7. the command line (`--learning_rate 1e-5`, any field).

The merged values become the parser's defaults and the command line is parsed on top, by TRL's
own `TrlParser`; no temporary file, no rewriting of arguments. A key that the installed TRL does
not know fails with the layer that holds it, which is how stale tutorial fields are caught early.
The parsed `Recipe` carries the `Project` it was parsed for (`recipe.project`, with its task) and
where each value came from (`recipe.origins`, which `grpo recipe --explain` prints).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

from . import backends, startup
from .errors import UserError
from .project import Project
from .project import load as load_project
from .rows import is_local
from .sampling import PREFLIGHT_PROMPTS

DEFAULT_RECIPE = Path("configs/grpo.yaml")
# Yours: the template never writes it, so regenerating the project (cruft update, replay) keeps
# it. Its keys are applied on top of the generated recipe: your data mapping, prompts, steps.
LOCAL_RECIPE = Path("configs/local.yaml")

# The recipe fields whose one home is the project's task.py (`TASK`: its rewards with their
# weights and the system prompt that states the format they check). A recipe file that sets one
# shadows task.py, and is reported (`shadowed_task_values`); a stage (configs/stages.yaml) picks
# its own rewards by design, and the command line is a one-off.
TASK_OWNED = ("reward_funcs", "reward_weights", "system_prompt")
# The task's default data mapping (`DataDefaults`, in task.py): your data goes in
# configs/local.yaml (or a recipe of your own); the generated configs/grpo.yaml never holds it.
DATA_FIELDS = (
    "dataset_name",
    "dataset_config",
    "dataset_train_split",
    "dataset_test_split",
    "prompt_column",
    "answer_column",
)


@dataclass
class ScriptArguments:
    """Recipe fields of the kit (everything that is not GRPOConfig, ModelConfig, the task's or
    the backend's). The data mapping, system prompt and rewards default to the task's own
    (`Task.recipe_defaults`, applied as the lowest layer)."""

    dataset_name: str = field(
        default="", metadata={"help": "Hub id, or a local .jsonl/.json/.csv/.parquet file."}
    )
    dataset_config: str | None = field(
        default=None, metadata={"help": "Hub dataset configuration (ignored for local files)."}
    )
    dataset_train_split: str = field(default="train", metadata={"help": "Split to train on."})
    dataset_test_split: str = field(
        default="test",
        metadata={"help": "Held out for evaluation (make evaluate; eval during training)."},
    )
    prompt_column: str = field(default="prompt", metadata={"help": "column with the question"})
    answer_column: str = field(default="answer", metadata={"help": "column with the gold answer"})
    system_prompt: str = field(
        default="", metadata={"help": "states the output format the rewards check"}
    )
    max_prompt_tokens: int = field(
        default=512,
        metadata={"help": "Drop rows whose chat-formatted prompt is longer (TRL never truncates)."},
    )
    max_train_samples: int | None = field(
        default=None, metadata={"help": "Use only the first N training rows (quick runs)."}
    )
    eval_prompts: int = field(
        default=32,
        metadata={
            "help": "eval during training (eval_strategy: steps): held-out prompts scored "
            "every eval_steps"
        },
    )
    reward_funcs: list[str] = field(
        default_factory=list,
        metadata={"help": "the task's rewards by name (task.py), or a dotted path module.function"},
    )
    reward_model: str | None = field(
        default=None,
        metadata={
            "help": "a sequence-classification reward model (Hub id or folder), scored with the "
            "functions, weighted by reward_model_weight"
        },
    )
    reward_model_weight: float = field(
        default=1.0,
        metadata={
            "help": "the reward model's weight, after the task's (task.py's weights stay theirs)"
        },
    )
    # --- health checks (callbacks/health.py): thresholds on what TRL logs ---
    health_zero_std_max: float = field(
        default=0.8,
        metadata={
            "help": "warn when this share of groups scores all completions alike (no signal)"
        },
    )
    health_kl_max: float = field(
        default=0.5, metadata={"help": "warn above this kl (logged only when beta > 0)"}
    )
    health_entropy_min: float = field(
        default=0.05, metadata={"help": "warn below this token entropy: collapse"}
    )
    health_clipped_max: float = field(
        default=0.3, metadata={"help": "warn when this share of completions is cut off"}
    )
    health_flat_logs: int = field(
        default=20, metadata={"help": "logs without reward movement that make a plateau"}
    )
    health_flat_delta: float = field(
        default=0.01, metadata={"help": "Reward movement below this counts as flat."}
    )
    health_patience: int = field(
        default=3, metadata={"help": "Consecutive logs before a persistent problem is fatal."}
    )
    health_stop_on_fatal: bool = field(
        default=False,
        metadata={
            "help": "true: checkpoint and stop when a problem persists (e.g. no reward spread)"
        },
    )
    health_tool_warmup_logs: int = field(
        default=5, metadata={"help": "Tool runs: first logs in which calling no tool is normal."}
    )
    health_tool_logs: int = field(
        default=3, metadata={"help": "Tool runs: consecutive logs a tool problem needs to warn."}
    )
    health_tool_failure_max: float = field(
        default=0.5, metadata={"help": "Tool runs: warn when more than this share of calls fails."}
    )
    # --- adaptive reward weights (callbacks/adaptive_weights.py), off by default ---
    adaptive_reward_weights: bool = field(
        default=False,
        metadata={"help": "true: raise weights of rewards rarely met, lower those mastered"},
    )
    adaptive_low: float = field(
        default=0.2, metadata={"help": "Raise a reward's weight while its success is below."}
    )
    adaptive_high: float = field(
        default=0.8, metadata={"help": "Lower a reward's weight while its success is above."}
    )
    adaptive_factor: float = field(
        default=1.25, metadata={"help": "Multiplier per log for a raise (divisor for a cut)."}
    )
    adaptive_min_scale: float = field(
        default=0.25, metadata={"help": "Lowest weight, as a multiple of the recipe's weight."}
    )
    adaptive_max_scale: float = field(
        default=4.0, metadata={"help": "Highest weight, as a multiple of the recipe's weight."}
    )
    # --- signal preflight (preflight.py): sample the base model before the first step ---
    preflight: bool = field(
        default=True,
        metadata={
            "help": "make train samples the base model first and scores every reward (grpo "
            "preflight): false skips it"
        },
    )
    preflight_refuse: bool = field(
        default=True,
        metadata={
            "help": "refuse a run whose rewards vary within no group (nothing to learn); false: "
            "show the table and train anyway"
        },
    )
    preflight_prompts: int = field(
        default=PREFLIGHT_PROMPTS,
        metadata={"help": "training prompts the preflight samples (x num_generations each)"},
    )
    resume: bool = field(
        default=True,
        metadata={"help": "Resume from the last checkpoint in output_dir (--no-resume: fresh)."},
    )
    allow_unreadable_golds: bool = field(
        default=False,
        metadata={
            "help": "Train although most gold answers cannot be read by the task's correctness "
            "reward (data.refuse_unreadable_golds; those rows get no correctness signal)."
        },
    )
    smoke: bool = field(
        default=False,
        metadata={
            "help": "Offline run on the tiny local model, CPU (set by --smoke, --trial and "
            "--smoke-distributed)."
        },
    )


# --- the smoke layer (`--smoke`) --------------------------------------------------------------

TINY_MODEL_DIR = Path("outputs/tiny-model")
SMOKE_OUTPUT_DIR = Path("outputs/smoke")

# What `--smoke` replaces: only what cannot run on a laptop CPU without downloads (model, data,
# precision, GPU-only features, size). The task, prompts, rewards and LoRA settings stay, so a
# smoke run exercises the same code path as the real one. Keys the installed stack lacks (the
# other backend's names) are skipped.
SMOKE_OVERRIDES: dict[str, object] = {
    "smoke": True,
    # A smoke run proves the pipeline on a random model, which has no signal to check.
    "preflight": False,
    "model_name_or_path": str(TINY_MODEL_DIR),
    "max_train_samples": 16,
    "output_dir": str(SMOKE_OUTPUT_DIR),
    # CPU, full precision, no GPU-only features.
    "use_cpu": True,
    "bf16": False,
    "fp16": False,
    "dtype": "float32",
    "load_in_4bit": False,
    "load_in_8bit": False,
    "optim": "adamw_torch",
    "activation_checkpointing": False,  # transformers 5.24 (gradient_checkpointing before)
    "gradient_checkpointing": False,
    "fast_inference": False,  # Unsloth backend
    "max_seq_length": 2048,  # Unsloth backend
    "use_vllm": False,
    "warmup_steps": 0,
    # Small and short: 2 optimizer steps of 4 completions (one prompt x 4 generations).
    "max_steps": 2,
    "per_device_train_batch_size": 4,
    "gradient_accumulation_steps": 1,
    "num_generations": 4,
    "max_completion_length": 16,
    "max_prompt_tokens": 1024,
    # A recipe that evaluates during training does so on 4 held-out prompts, at step 2.
    "eval_prompts": 4,
    "eval_steps": 2,
    "per_device_eval_batch_size": 4,
    "logging_steps": 1,
    "save_strategy": "no",
    "report_to": "none",
    "log_completions": False,
    "dataloader_num_workers": 0,
}


def sample_data_values(project: Project) -> dict:
    """The shipped sample data read with its own columns (the task's defaults), whatever data
    mapping the recipe or local.yaml has: the task's data mapping and the defaults of its column
    and corpus fields, on the sample file."""
    task = project.task
    sample = {
        f.name: f.default
        for f in dataclasses.fields(task.arguments)
        if (f.name.startswith("corpus") or f.name.endswith("_column"))
        and f.default is not dataclasses.MISSING
    }
    return {**task.data.recipe_values(), **sample, "dataset_name": task.data.sample}


def names_default_data(project: Project, values: Mapping[str, object]) -> bool:
    """Whether recipe values (the layers merged so far) name data an offline run replaces with the
    shipped sample: the task's default Hub dataset (`DataDefaults.dataset_name` in task.py, which
    needs the Hub) or the sample itself. A local file named in task.py is read as it is, and a
    recipe naming other data (configs/local.yaml: your file, your Hub dataset) is yours, with
    your columns, labels and schema."""
    data = project.task.data
    name = str(values.get("dataset_name") or data.dataset_name)
    sample = project.root / data.sample
    if (project.root / name).resolve() == sample.resolve():
        return True
    if name == data.dataset_name and not is_local(name):
        return values.get("dataset_config", data.dataset_config) == data.dataset_config
    return False


def offline_data_values(project: Project, values: Mapping[str, object]) -> dict:
    """The data an offline command reads (smoke runs, reward-debug, the project's tests): the
    shipped sample with its own columns while `values` name the task's default data (which needs
    the Hub), or for a task that generates its problems (`Task.generate`, offline) those
    problems, with the task's columns; your data mapping, unchanged, once you have set your own."""
    if not names_default_data(project, values):
        return {}
    found = sample_data_values(project)
    if project.task.generate is not None:
        found["dataset_name"] = project.task.data.dataset_name
    return found


def smoke_values(project: Project, fields: set[str], below: Mapping[str, object]) -> dict:
    """The smoke layer: the overrides above, on the sample data while the recipe (`below`: the
    layers under this one) names the task's default data, else on the recipe's own data."""
    values = {**offline_data_values(project, below), **SMOKE_OVERRIDES, **project.task.smoke}
    return {key: value for key, value in values.items() if key in fields}


def offline_data_note(recipe: Recipe) -> str:
    """The data an offline run (smoke, trial) reads, and why: the shipped sample while the recipe
    names the task's default data (which needs the Hub), your data once you have set your own."""
    script, sample = recipe.script, recipe.project.task.data.sample
    rows = f"the first {script.max_train_samples} rows of " if script.max_train_samples else ""
    if Path(script.dataset_name) == Path(sample):
        return f"{rows}the sample data {sample} (the recipe names the task's default data)"
    task = recipe.project.task
    if task.generate is not None and script.dataset_name == task.data.dataset_name:
        return f"{rows}the problems the task generates (offline)"
    return f"{rows}your data {script.dataset_name} (read with the recipe's columns)"


# --- the trial layer (`--trial`, `make try`): the smoke run on your own data --------------------

TRIAL_OUTPUT_DIR = Path("outputs/trial")
TRIAL_OVERRIDES: dict[str, object] = {
    "output_dir": str(TRIAL_OUTPUT_DIR),
    "max_steps": 4,
    "max_train_samples": 32,
}


def trial_values(project: Project, fields: set[str], below: Mapping[str, object]) -> dict:
    """The trial layer: the smoke overrides on the recipe's own data mapping (yours); on the
    shipped sample, as smoke, while the recipe still names the task's default Hub dataset (a
    fresh project: `make try` then runs offline instead of retrying the Hub)."""
    values = {
        **offline_data_values(project, below),
        **SMOKE_OVERRIDES,
        **project.task.smoke,
        **TRIAL_OVERRIDES,
    }
    return {key: value for key, value in values.items() if key in fields}


# --- the distributed smoke layer (`--smoke-distributed`, `make smoke-distributed`) -------------

SMOKE_DISTRIBUTED_OUTPUT_DIR = Path("outputs/smoke-distributed")
# What the distributed smoke run keeps from the recipe: how the backward pass is recomputed and
# whether DDP searches for parameters without a gradient. Together they decide whether DDP's
# reducer finishes (full fine-tuning of a checkpoint with a vision tower under checkpointing
# fails at step 2 without the search, issue 27), so the CPU run must use the recipe's own.
DISTRIBUTED_SMOKE_KEEPS = (
    "activation_checkpointing",
    "gradient_checkpointing",
    "ddp_find_unused_parameters",
)


def smoke_distributed_values(
    project: Project, fields: set[str], below: Mapping[str, object]
) -> dict:
    """The distributed smoke layer: the smoke layer without `DISTRIBUTED_SMOKE_KEEPS` (the
    recipe's values stand), into its own output folder."""
    values = smoke_values(project, fields, below)
    kept = {key: value for key, value in values.items() if key not in DISTRIBUTED_SMOKE_KEEPS}
    return {**kept, "output_dir": str(SMOKE_DISTRIBUTED_OUTPUT_DIR)}


# The offline layers by flag (`--smoke`, `--trial`, `--smoke-distributed`): at most one applies.
OFFLINE_LAYERS = {
    "smoke": smoke_values,
    "trial": trial_values,
    "smoke-distributed": smoke_distributed_values,
}
# What each one runs, for the error that refuses two of them together.
OFFLINE_PURPOSES = {
    "smoke": "the sample data",
    "trial": "your data",
    "smoke-distributed": "make smoke-distributed",
}


def tokenizer_data(recipe: Recipe) -> Path:
    """The data file the tiny offline model's tokenizer learns (so prompts tokenize compactly):
    the recipe's data when it is a local file (the sample, or yours), else the task's sample."""
    from .rows import is_local

    name = recipe.script.dataset_name
    if is_local(name) and (recipe.project.root / name).is_file():
        return recipe.project.root / name
    return recipe.project.root / recipe.project.task.data.sample


# --- sampling the importance-sampling correction cannot correct -------------------------------

# vLLM returns log-probs after its logits processing (TRL asks for `processed_logprobs`): with
# truncated or penalised sampling they are those of another distribution than the trainer's,
# which recomputes them over the full vocabulary at the recipe's temperature. The ratio TRL's
# importance-sampling correction (and its off-policy mask) takes is then biased by the kept
# probability mass of every token (huggingface/trl#6789, open in TRL 1.16; TRL's proposed
# check, huggingface/trl#6880, warns). These values leave vLLM's distribution as it is.
NEUTRAL_SAMPLING: dict[str, object] = {
    "top_p": 1.0,
    "top_k": 0,
    "min_p": None,
    "repetition_penalty": 1.0,
}


def _neutral(key: str, value) -> bool:
    if key == "top_k":
        return value in (None, 0, -1)  # vLLM: -1 (or 0) is "off"
    if key == "min_p":
        return value in (None, 0, 0.0)
    return value == NEUTRAL_SAMPLING[key]


def sampling_bias(training, vllm: bool | None = None) -> list[tuple[str, object]]:
    """The sampling settings that bias the vLLM importance-sampling ratio, as (field, value):
    top_p/top_k/min_p/repetition_penalty away from `NEUTRAL_SAMPLING`, and a temperature in
    `generation_kwargs` other than the trainer's (`temperature`, which the trainer divides the
    logits by). Empty unless vLLM generates (`vllm`: default `use_vllm`; the Unsloth backend's
    `fast_inference` turns it on too) and its log-probs are used (the correction, or TRL's
    off-policy mask)."""
    on = training.use_vllm if vllm is None else vllm
    used = training.vllm_importance_sampling_correction or (
        getattr(training, "off_policy_mask_threshold", None) is not None
    )
    if not (on and used):
        return []
    overrides = training.generation_kwargs if isinstance(training.generation_kwargs, dict) else {}
    found = []
    for key in NEUTRAL_SAMPLING:
        value = overrides.get(key, getattr(training, key, NEUTRAL_SAMPLING[key]))
        if not _neutral(key, value):
            found.append((key if key not in overrides else f"generation_kwargs.{key}", value))
    temperature = overrides.get("temperature", training.temperature)
    if temperature != training.temperature:
        found.append(("generation_kwargs.temperature", temperature))
    return found


def sampling_bias_message(found: list[tuple[str, object]], origins: Mapping[str, str]) -> str:
    """The one-line warning for `sampling_bias`'s findings, naming where each value is set."""
    listed = ", ".join(
        f"{key}={value!r} ({origins.get(key.split('.')[0], 'the recipe')})" for key, value in found
    )
    return (
        f"recipe: {listed} with vLLM and its importance-sampling correction: vLLM's log-probs are "
        "those of the truncated or reshaped distribution, the trainer's of the full one, so the "
        "correction's ratio is biased by the probability mass sampling cuts off, per token "
        "(huggingface/trl#6789; the sequence-level modes multiply it over the completion). Fix: "
        "train with top_p: 1.0, top_k: 0, min_p: null, repetition_penalty: 1.0 and no "
        "temperature in generation_kwargs (sample as you like in make evaluate / make infer), "
        "or set vllm_importance_sampling_correction: false"
    )


class Recipe(NamedTuple):
    """A parsed recipe: one object per dataclass, and the project it was parsed for."""

    script: ScriptArguments
    task: object  # the task's arguments (Task.arguments)
    backend: object  # the backend's arguments (backends.ARGUMENTS)
    training: object  # trl.GRPOConfig
    model: object  # trl.ModelConfig
    project: Project
    # {field: the layer that set it} for every field a layer or the command line set (the rest
    # are the dataclasses' defaults): what `grpo recipe --explain` prints.
    origins: Mapping[str, str] = MappingProxyType({})

    def reward_settings(self) -> dict:
        """What parameterised rewards take from the recipe (bound by `rewards.resolve`)."""
        return reward_settings(self.project, self.task, self.training.max_completion_length)


def reward_settings(project: Project, task_args, max_completion_length: int) -> dict:
    """The settings parameterised rewards take: the completion budget and the task's own (its
    `reward_settings` of the task arguments). Also what an exported reward file rebuilds."""
    return {
        "max_completion_length": max_completion_length,
        **project.task.reward_settings(task_args),
    }


def recipe_parser(project: Project):
    """TRL's parser over the five dataclasses of a project's recipe."""
    from trl import GRPOConfig, ModelConfig, TrlParser

    types = (ScriptArguments, project.task.arguments, backends.arguments(project.backend))
    return TrlParser(
        (*types, GRPOConfig, ModelConfig),
        prog=Path(sys.argv[0]).name if sys.argv and sys.argv[0] else None,
        description="Recipe options: --config PATH (default configs/grpo.yaml), --smoke, "
        "--trial or --smoke-distributed, and any recipe field below (--learning_rate 1e-5 "
        "...), over the recipe.",
    )


# Layer kinds: which part of the recipe a layer is (`shadowed_task_values` reads them).
TASK_LAYER, FILE_LAYER, LOCAL_LAYER = "task", "file", "local"
COMMAND_LINE = "the command line"


@dataclass(frozen=True)
class Layer:
    """Recipe values and where they come from (named in errors and by `--explain`); `kind`
    says which part of the recipe it is (a recipe file, local.yaml, task.py, anything else)."""

    source: str
    values: Mapping[str, object]
    kind: str = "other"


def task_source(project: Project) -> str:
    """The task's file as a user finds it: `src/<package>/task.py`."""
    module = project.module("task")
    path = Path(getattr(module, "__file__", "") or f"src/{project.package}/task.py")
    try:
        return path.resolve().relative_to(project.root.resolve()).as_posix()
    except ValueError:  # a package installed elsewhere (the kit's own starters, in its tests)
        return f"{project.package.replace('.', '/')}/task.py"


def shadowed_task_values(layers: Sequence[Layer], task_file: str) -> list[str]:
    """One line per recipe file that sets what task.py owns (`TASK_OWNED`; `DATA_FIELDS` too
    when it is the generated recipe, which never holds them: your data goes in local.yaml)."""
    notes = []
    for layer in layers:
        if layer.kind not in (FILE_LAYER, LOCAL_LAYER):
            continue
        owned = TASK_OWNED
        generated = layer.kind == FILE_LAYER and Path(layer.source) == DEFAULT_RECIPE
        if generated:
            owned += DATA_FIELDS
        keys = [key for key in owned if key in layer.values]
        if not keys:
            continue
        where = "configs/local.yaml" if generated else task_file
        data = [k for k in keys if k in DATA_FIELDS]
        notes.append(
            f"recipe: {layer.source} sets {', '.join(keys)}, which {task_file} owns (TASK): "
            f"the run uses {layer.source}'s value, so editing {task_file} changes nothing. "
            f"Set {'the task values' if not data else 'them'} in {task_file}"
            + (f" (your data: {where})" if data else "")
            + f" and remove them from {layer.source} (a one-off run: --{keys[0]} ...)"
        )
    return notes


def left_out_rewards(recipe: Recipe, layers: Sequence[Layer]) -> list[str]:
    """One line when the recipe trains without some of the task's rewards (a recipe file, local.yaml
    or the command line set `reward_funcs` to fewer), or its weights do not match its rewards.
    A stage's own reward set (configs/stages.yaml: another layer) is by design, not reported."""
    notes = []
    origin = recipe.origins.get("reward_funcs", "")
    files = {layer.source for layer in layers if layer.kind in (FILE_LAYER, LOCAL_LAYER)}
    names = list(recipe.script.reward_funcs)
    if origin in files or origin == COMMAND_LINE:
        missing = [r.name for r in recipe.project.task.rewards if r.name not in names]
        if missing:
            notes.append(
                f"recipe: reward_funcs (from {origin or 'the defaults'}) leaves out "
                f"{', '.join(missing)} of the task's rewards: they are not trained"
            )
    weights = recipe.training.reward_weights
    expected = len(names) + (1 if recipe.script.reward_model else 0)
    if weights is not None and len(weights) != expected:
        notes.append(
            f"recipe: reward_weights (from {recipe.origins.get('reward_weights', 'the defaults')}) "
            f"has {len(weights)} values for {expected} rewards: one weight per reward_funcs "
            "entry (and one more, last, for a reward_model)"
        )
    return notes


def _mapping(path: Path) -> dict:
    import yaml

    try:
        values = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise UserError(f"{path}: not valid YAML ({err})") from err
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise UserError(f"{path}: a recipe is a mapping of field: value lines")
    return values


def _merged(layers: Sequence[Layer]) -> dict:
    """The values of `layers` merged, later ones winning (what the layers below a layer say)."""
    merged: dict[str, object] = {}
    for layer in layers:
        merged.update(layer.values)
    return merged


def uses_local(path: Path) -> bool:
    """Whether `configs/local.yaml` applies: it does on top of the generated recipe."""
    return LOCAL_RECIPE.is_file() and path.resolve() == DEFAULT_RECIPE.resolve()


def recipe_layers(
    config: Path | None,
    *,
    project: Project,
    fields: set[str],
    extra: Layer | None = None,
    offline: str | None = None,
    read_only: bool = False,
    offline_data: bool = False,
) -> list[Layer]:
    """The layers below the command line, lowest precedence first (see the module docstring).
    `offline_data`: a command that reads data offline (reward-debug, the project's tests) reads
    the sample while the recipe names the task's default data (`offline_data_values`)."""
    defaults = project.task.recipe_defaults()
    layers = [Layer(task_source(project), defaults, TASK_LAYER)]
    if config is not None:
        layers.append(Layer(str(config), _mapping(config), FILE_LAYER))
        if uses_local(config):
            layers.append(Layer(str(LOCAL_RECIPE), _mapping(LOCAL_RECIPE), LOCAL_LAYER))
    if extra is not None:
        layers.append(extra)
    if offline_data:
        below = _merged(layers)
        source = (
            f"the sample data ({project.task.data.sample}, its own columns)"
            if names_default_data(project, below)
            else "your data"
        )
        layers.append(Layer(source, offline_data_values(project, below)))
    if offline is not None:
        values = OFFLINE_LAYERS[offline](project, fields, _merged(layers))
        layers.append(Layer(f"--{offline}", values))
    if read_only:
        layers.append(Layer("reading the recipe", {"use_cpu": True}))
    return layers


def _split_arguments(argv: Sequence[str]) -> tuple[Path | None, str | None, list[str]]:
    """(--config path, the offline layer's flag: smoke, trial or smoke-distributed, the
    remaining arguments: field overrides)."""
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--config", type=Path, default=None)
    for flag in OFFLINE_LAYERS:
        pre.add_argument(f"--{flag}", action="store_true", dest=flag)
    known, rest = pre.parse_known_args(list(argv))
    given = [flag for flag in OFFLINE_LAYERS if getattr(known, flag)]
    if len(given) > 1:
        named = " and ".join(f"--{flag} ({OFFLINE_PURPOSES[flag]})" for flag in given)
        raise UserError(f"{named} exclude each other: pass one")
    offline = given[0] if given else None
    config = known.config
    if config is None and DEFAULT_RECIPE.is_file():
        config = DEFAULT_RECIPE
    if known.config is not None and not known.config.is_file():
        raise UserError(
            f"recipe not found: {known.config}; pass --config configs/grpo.yaml (or run from "
            "the project folder)"
        )
    return config, offline, rest


def add_recipe_options(parser: argparse.ArgumentParser) -> None:
    """`--config` and `--smoke`/`--trial` for a command that reads the recipe; its other unknown
    options are recipe field overrides (see `recipe_from`)."""
    parser.add_argument(
        "--config", type=Path, default=None, help=f"the recipe (default {DEFAULT_RECIPE})"
    )
    offline = parser.add_mutually_exclusive_group()
    offline.add_argument(
        "--smoke",
        action="store_true",
        help=f"the smoke run's recipe (tiny model, {SMOKE_OUTPUT_DIR}; the sample data while "
        "the recipe names the task's default data, else yours)",
    )
    offline.add_argument(
        "--trial",
        action="store_true",
        help=f"the trial run's recipe (tiny model, your data, {TRIAL_OUTPUT_DIR})",
    )


def recipe_from(
    args: argparse.Namespace,
    overrides: Sequence[str],
    read_only: bool,
    project: Project | None = None,
    extra: Layer | None = None,
) -> Recipe:
    """The recipe named by `add_recipe_options`' arguments, with the field overrides (and
    `extra`, one more layer: see `parse_recipe`)."""
    argv = [*(["--config", str(args.config)] if args.config else []), *overrides]
    argv += ["--smoke"] if args.smoke else ["--trial"] if getattr(args, "trial", False) else []
    return parse_recipe(argv, extra=extra, read_only=read_only, project=project)


def parse_recipe(
    argv: Sequence[str] | None = None,
    *,
    extra: Layer | None = None,
    read_only: bool = False,
    project: Project | None = None,
    offline_data: bool = False,
) -> Recipe:
    """The typed recipe of a command: the layers merged, then the command line on top.

    `argv` holds `--config PATH`, one offline flag (`--smoke`, `--trial` or
    `--smoke-distributed`, see `OFFLINE_LAYERS`) and field overrides (`--max_steps 10`);
    `extra` is one more layer above local.yaml (a stage's keys); `read_only` is for commands
    that read the recipe without training (a GPU recipe parses on any machine); `offline_data`
    for commands that read data offline (the sample while the recipe names the task's default
    data, see `offline_data_values`); `project` defaults to the one in the current folder
    (`project.load`). A recipe that trains is checked for sampling that biases vLLM's
    importance-sampling correction (`sampling_bias`: a warning naming the file that sets it).
    """
    import logging
    import os

    project = project or load_project()
    # The backend first (Unsloth must be imported before trl), then trl and transformers, with
    # the garbage collector paused (startup.py; once per process).
    startup.import_stack(backend=project.backend)
    args = list(sys.argv[1:] if argv is None else argv)
    config, offline, rest = _split_arguments(args)
    parser = recipe_parser(project)
    fields = {f.name for t in parser.dataclass_types for f in dataclasses.fields(t)}
    merged: dict[str, object] = {}
    origins: dict[str, str] = {}  # field: the layer that set it last
    layers = recipe_layers(
        config,
        project=project,
        fields=fields,
        extra=extra,
        offline=offline,
        read_only=read_only,
        offline_data=offline_data,
    )
    for layer in layers:
        values = dict(layer.values)
        env = values.pop("env", None)
        unknown = sorted(set(values) - fields)
        if unknown and layer.kind == LOCAL_LAYER:  # local.yaml from the task before a switch?
            from .consistency import leftover_local

            leftover = leftover_local(project.root, project.task.name)
            if leftover is not None:
                raise UserError(leftover.message(project.task.name))
        if unknown:
            raise UserError(
                f"recipe: {layer.source}: unknown field(s) {', '.join(unknown)}: not a field of "
                "the installed TRL or of this project (a stale tutorial field? a typo?)"
            )
        if isinstance(env, dict):  # TRL's `env:` mapping: environment variables for the run
            os.environ.update({str(k): str(v) for k, v in env.items()})
        merged.update(values)
        origins.update(dict.fromkeys(values, layer.source))
    parser.set_defaults_with_config(**merged)
    try:
        *parsed, unused = parser.parse_args_into_dataclasses(
            args=rest, return_remaining_strings=True
        )
    except ValueError as err:
        hint = ""
        if "bf16/gpu" in str(err) or "requires a GPU" in str(err):
            hint = (
                " This recipe is tuned for a GPU tier: run it on the GPU; on this machine, try "
                "your data with `make try` (--trial), check the pipeline with `make smoke`, or "
                "see what is missing with `make doctor`."
            )
        raise UserError(f"recipe: {err}{hint}") from err
    if unused:
        raise UserError(
            f"recipe: the command line: unknown option(s) {' '.join(unused)}: not a field of the "
            "installed TRL or of this project (a typo? `--help` lists the fields)"
        )
    given = {a.split("=")[0][2:] for a in rest if a.startswith("--")}
    origins.update(dict.fromkeys(given & fields, COMMAND_LINE))
    recipe = Recipe(*parsed[:5], project=project, origins=MappingProxyType(origins))
    _weigh_the_reward_model(recipe)
    if not read_only:
        log = logging.getLogger(__name__)
        notes = shadowed_task_values(layers, layers[0].source) + left_out_rewards(recipe, layers)
        for note in notes:
            _report_once(log, note)
        vllm = recipe.training.use_vllm or bool(getattr(recipe.backend, "fast_inference", False))
        found = sampling_bias(recipe.training, vllm)
        if found:
            log.warning(sampling_bias_message(found, origins))
    return recipe


def _weigh_the_reward_model(recipe: Recipe) -> None:
    """With a reward model, TRL wants one weight per reward function and one for the model,
    last: the task's weights (one per reward) get `reward_model_weight` appended, so turning a
    reward model on never means restating task.py's weights."""
    script, training = recipe.script, recipe.training
    weights = training.reward_weights
    if script.reward_model and weights is not None and len(weights) == len(script.reward_funcs):
        training.reward_weights = [*weights, float(script.reward_model_weight)]


@functools.lru_cache(maxsize=64)
def _report_once(log, note: str) -> None:
    """A recipe note once per process (commands parse the recipe more than once)."""
    log.warning(note)


class Explained(NamedTuple):
    """One value a layer of the recipe sets: where, and whether a later layer overrides it."""

    field: str
    value: object
    source: str
    overridden_by: str | None  # the later layer (or the command line) whose value the run uses


def explain(
    argv: Sequence[str] | None = None, *, project: Project | None = None
) -> tuple[list[Explained], list[str]]:
    """Every value the recipe's layers and the command line set, in layer order, each with the
    file that set it and the later one that overrides it (`grpo recipe --explain`), and the
    recipe's notes (task values a recipe file shadows, rewards left out). The recipe is parsed
    too (read-only), so a value the installed TRL refuses fails here as it would in a run."""
    project = project or load_project()
    args = list(sys.argv[1:] if argv is None else argv)
    recipe = parse_recipe(args, read_only=True, project=project)
    config, offline, rest = _split_arguments(args)
    parser = recipe_parser(project)
    fields = {f.name for t in parser.dataclass_types for f in dataclasses.fields(t)}
    layers = recipe_layers(config, project=project, fields=fields, offline=offline)
    last = {key: layer.source for layer in layers for key in layer.values if key != "env"}
    last.update({k: v for k, v in recipe.origins.items() if v == COMMAND_LINE})
    found = [
        Explained(key, value, layer.source, None if last[key] == layer.source else last[key])
        for layer in layers
        for key, value in layer.values.items()
        if key != "env"
    ]
    parts = [recipe.script, recipe.task, recipe.backend, recipe.training, recipe.model]
    for key, origin in recipe.origins.items():
        if origin == COMMAND_LINE:
            value = next(getattr(part, key) for part in parts if hasattr(part, key))
            found.append(Explained(key, value, COMMAND_LINE, None))
    notes = shadowed_task_values(layers, layers[0].source) + left_out_rewards(recipe, layers)
    return found, notes
