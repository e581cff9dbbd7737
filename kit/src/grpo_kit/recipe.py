"""The recipe: one typed object read by every command, from layers merged in one place.

A recipe is one flat mapping whose keys are fields of five dataclasses: `ScriptArguments`
(below: data, prompts, rewards, health), the task's arguments (`Task.arguments`, the project's
task.py), the backend's (`backends`), TRL's `GRPOConfig` (training) and `ModelConfig` (model,
LoRA). `parse_recipe(argv)` builds it from these layers, each overriding the ones before it:

1. the dataclasses' defaults (each default exists once, in its dataclass), then the task's (its
   data mapping, system prompt, rewards and weights: `Task.recipe_defaults`);
2. the recipe file: `configs/grpo.yaml`, unless `--config PATH` (or `--config=PATH`) names one;
3. `configs/local.yaml`, yours (regeneration never touches it), on top of the generated recipe;
4. one more layer a command adds: a stage's keys (`commands/stages.py`), or the sample data
   with its own columns (reward_debug);
5. the offline overrides: `--smoke` (tiny local model, the sample data with its own columns, CPU,
   two steps), so any recipe runs offline; or `--trial` (the same on YOUR data: a few steps on
   the CPU that check your data, prompts and rewards end to end before a GPU run);
6. `use_cpu: true` for commands that only read the recipe (infer, merge, report...), so a GPU
   recipe can be read on a laptop;
7. the command line (`--learning_rate 1e-5`, any field).

The merged values become the parser's defaults and the command line is parsed on top, by TRL's
own `TrlParser`; no temporary file, no rewriting of arguments. A key that the installed TRL does
not know fails with the layer that holds it, which is how stale tutorial fields are caught early.
The parsed `Recipe` carries the `Project` it was parsed for (`recipe.project`, with its task).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from . import backends
from .errors import UserError
from .project import Project
from .project import load as load_project

DEFAULT_RECIPE = Path("configs/grpo.yaml")
# Yours: the template never writes it, so regenerating the project (cruft update, replay) keeps
# it. Its keys are applied on top of the generated recipe: your data mapping, prompts, steps.
LOCAL_RECIPE = Path("configs/local.yaml")


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
        default="test", metadata={"help": "Held out for evaluation (make evaluate)."}
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
    reward_funcs: list[str] = field(
        default_factory=list,
        metadata={"help": "the task's rewards by name (task.py), or a dotted path module.function"},
    )
    reward_model: str | None = field(
        default=None,
        metadata={
            "help": "a sequence-classification reward model (Hub id or folder), scored with the "
            "functions; add its weight last to reward_weights"
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
    resume: bool = field(
        default=True,
        metadata={"help": "Resume from the last checkpoint in output_dir (--no-resume: fresh)."},
    )
    smoke: bool = field(
        default=False,
        metadata={"help": "Offline run on the tiny local model, CPU (set by --smoke/--trial)."},
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


def smoke_values(project: Project, fields: set[str]) -> dict:
    """The smoke layer: the sample data and the overrides above."""
    values = {**sample_data_values(project), **SMOKE_OVERRIDES, **project.task.smoke}
    return {key: value for key, value in values.items() if key in fields}


# --- the trial layer (`--trial`, `make try`): the smoke run on your own data --------------------

TRIAL_OUTPUT_DIR = Path("outputs/trial")
TRIAL_OVERRIDES: dict[str, object] = {
    "output_dir": str(TRIAL_OUTPUT_DIR),
    "max_steps": 4,
    "max_train_samples": 32,
}


def trial_values(project: Project, fields: set[str]) -> dict:
    """The trial layer: the smoke overrides on the recipe's own data mapping (yours)."""
    values = {**SMOKE_OVERRIDES, **project.task.smoke, **TRIAL_OVERRIDES}
    return {key: value for key, value in values.items() if key in fields}


OFFLINE_LAYERS = {"smoke": smoke_values, "trial": trial_values}


class Recipe(NamedTuple):
    """A parsed recipe: one object per dataclass, and the project it was parsed for."""

    script: ScriptArguments
    task: object  # the task's arguments (Task.arguments)
    backend: object  # the backend's arguments (backends.ARGUMENTS)
    training: object  # trl.GRPOConfig
    model: object  # trl.ModelConfig
    project: Project

    def reward_settings(self) -> dict:
        """What parameterised rewards take from the recipe (bound by `rewards.resolve`)."""
        return {
            "max_completion_length": self.training.max_completion_length,
            **self.project.task.reward_settings(self.task),
        }


def recipe_parser(project: Project):
    """TRL's parser over the five dataclasses of a project's recipe."""
    from trl import GRPOConfig, ModelConfig, TrlParser

    types = (ScriptArguments, project.task.arguments, backends.arguments(project.backend))
    return TrlParser(
        (*types, GRPOConfig, ModelConfig),
        prog=Path(sys.argv[0]).name if sys.argv and sys.argv[0] else None,
        description="Recipe options: --config PATH (default configs/grpo.yaml), --smoke or "
        "--trial, and any recipe field below (--learning_rate 1e-5 ...), over the recipe.",
    )


@dataclass(frozen=True)
class Layer:
    """Recipe values and where they come from (named in errors)."""

    source: str
    values: Mapping[str, object]


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
) -> list[Layer]:
    """The layers below the command line, lowest precedence first (see the module docstring)."""
    defaults = project.task.recipe_defaults()
    layers = [Layer(f"the {project.task.name} task's defaults (task.py)", defaults)]
    if config is not None:
        layers.append(Layer(str(config), _mapping(config)))
        if uses_local(config):
            layers.append(Layer(str(LOCAL_RECIPE), _mapping(LOCAL_RECIPE)))
    if extra is not None:
        layers.append(extra)
    if offline is not None:
        layers.append(Layer(f"--{offline}", OFFLINE_LAYERS[offline](project, fields)))
    if read_only:
        layers.append(Layer("reading the recipe", {"use_cpu": True}))
    return layers


def _split_arguments(argv: Sequence[str]) -> tuple[Path | None, str | None, list[str]]:
    """(--config path, --smoke/--trial, the remaining arguments: field overrides)."""
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--config", type=Path, default=None)
    pre.add_argument("--smoke", action="store_true")
    pre.add_argument("--trial", action="store_true")
    known, rest = pre.parse_known_args(list(argv))
    if known.smoke and known.trial:
        raise UserError("--smoke (the sample data) and --trial (your data) exclude each other")
    offline = "smoke" if known.smoke else "trial" if known.trial else None
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
        help=f"the smoke run's recipe (tiny model, sample data, {SMOKE_OUTPUT_DIR})",
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
) -> Recipe:
    """The recipe named by `add_recipe_options`' arguments, with the field overrides."""
    argv = [*(["--config", str(args.config)] if args.config else []), *overrides]
    argv += ["--smoke"] if args.smoke else ["--trial"] if getattr(args, "trial", False) else []
    return parse_recipe(argv, read_only=read_only, project=project)


def parse_recipe(
    argv: Sequence[str] | None = None,
    *,
    extra: Layer | None = None,
    read_only: bool = False,
    project: Project | None = None,
) -> Recipe:
    """The typed recipe of a command: the layers merged, then the command line on top.

    `argv` holds `--config PATH`, `--smoke`/`--trial` and field overrides (`--max_steps 10`);
    `extra` is one more layer above local.yaml (a stage's keys, the sample data); `read_only`
    is for commands that read the recipe without training (a GPU recipe parses on any machine);
    `project` defaults to the one in the current folder (`project.load`).
    """
    import os

    project = project or load_project()
    backends.load(project.backend)  # first: Unsloth must be imported before trl
    args = list(sys.argv[1:] if argv is None else argv)
    config, offline, rest = _split_arguments(args)
    parser = recipe_parser(project)
    fields = {f.name for t in parser.dataclass_types for f in dataclasses.fields(t)}
    merged: dict[str, object] = {}
    layers = recipe_layers(
        config, project=project, fields=fields, extra=extra, offline=offline, read_only=read_only
    )
    for layer in layers:
        values = dict(layer.values)
        env = values.pop("env", None)
        unknown = sorted(set(values) - fields)
        if unknown:
            raise UserError(
                f"recipe: {layer.source}: unknown field(s) {', '.join(unknown)}: not a field of "
                "the installed TRL or of this project (a stale tutorial field? a typo?)"
            )
        if isinstance(env, dict):  # TRL's `env:` mapping: environment variables for the run
            os.environ.update({str(k): str(v) for k, v in env.items()})
        merged.update(values)
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
    return Recipe(*parsed[:5], project=project)
