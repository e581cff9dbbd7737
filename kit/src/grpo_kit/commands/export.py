"""`grpo export --engine verl|openrlhf` (`make export ENGINE=verl`): take the project to a
multi-node RL engine. It writes, to `--output-dir` (default `outputs/export/<engine>`):

- the training data (and the held-out split) in the engine's format, prompts built as training
  builds them (the recipe's system prompt and user message, the task's columns);
- `reward.py`: the engine's reward entry point, calling THIS project's rewards (task.py,
  rewards.py) with the recipe's reward weights and settings, frozen at export; the score is the
  weighted sum TRL trains on (a reward that does not apply counts 0, as in TRL's nansum);
- `launch.sh`: a launch example with the recipe's model and the numbers that map (group size,
  batch, lengths, learning rate, clipping, KL, LoRA, sampling, steps), and what does not map.

    grpo export --engine verl                       # the recipe's data and model
    grpo export --engine openrlhf --output-dir /shared/handoff
    grpo export --engine verl --dataset_name data/sample_math.jsonl   # any recipe override

The engines' contracts (their public source, not their code):

- verl (`verl/utils/dataset/rl_dataset.py`, its reward managers): parquet rows with
  `data_source`, `prompt` (chat messages), `ability`, `reward_model` (`style`, `ground_truth`)
  and `extra_info` (`split`, `index`; here also `columns`, the JSON of every column the rewards
  read); `reward.custom_reward_function.path=reward.py` with `name=compute_score`, called as
  `compute_score(data_source=, solution_str=, ground_truth=, extra_info=)` on the completion
  decoded without special tokens; it may return a dict with `score` and values to log.
- OpenRLHF (`openrlhf/datasets/prompts_dataset.py`, the remote reward function): JSONL rows read
  with `--data.input_key prompt --data.apply_chat_template --data.label_key label`;
  `--reward.remote_url reward.py` (`--remote_rm_url` before OpenRLHF 0.10) whose
  `reward_func(queries, prompts, labels)` gets prompt + completion decoded WITH special tokens
  (they are removed here, as TRL's decoding does) and returns `rewards`, `scores` (0-1, for
  dynamic filtering: the task's correctness) and `extra_logs`.

The reward file imports grpo-kit and the project where the engine's reward workers run. The
engines pin their own training stack (verl 0.9.1: transformers <5.11; OpenRLHF 0.11.2: ==5.15.0),
which the kit's training pins do not fit, and the reward path needs none of it: `pip install
--no-deps grpo-kit` plus REWARD_DEPENDENCIES (and trl for soft_overlong where the engine does not
compute it itself); set GRPO_PROJECT_ROOT when the export folder leaves the project. The file loads
the project's rewards on import and refuses to load without those packages: both engines swallow
errors raised while scoring, and a verifier that cannot import would score its minimum. Checked
with the engines' own code in their pinned environments by kit/tests/test_export_engines.py.
Agent tasks (tools) are not exported: the engines run tools through
their own multi-turn agent loops (verl's tool agent, OpenRLHF's agent_func), which the task's
environments would have to be ported to.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import pprint
import re
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import procedural
from ..errors import UserError
from ..generation import check_model
from ..project import Project
from ..recipe import add_recipe_options, recipe_from, reward_settings
from ..runner import run

ENGINES = ("verl", "openrlhf")
DEFAULT_OUTPUT = Path("outputs/export")
REWARD_FILE = "reward.py"
LAUNCH_FILE = "launch.sh"
DATA_FILES = {"verl": ("train.parquet", "test.parquet"), "openrlhf": ("train.jsonl", "test.jsonl")}
ENTRY_POINTS = {"verl": "compute_score", "openrlhf": "reward_func"}
LABEL_KEY = "label"  # OpenRLHF: --data.label_key
ROOT_VARIABLE = "GRPO_PROJECT_ROOT"  # where the reward file finds the project, if it moved


def parse_args(argv: Sequence[str] | None):
    parser = argparse.ArgumentParser(
        prog="grpo export",
        description="Write the training data, a reward file calling this project's rewards and "
        "a launch example for verl or OpenRLHF.",
        epilog="Other options are recipe overrides, e.g. --dataset_name data/mine.jsonl.",
    )
    parser.add_argument("--engine", required=True, choices=ENGINES, help="the engine to export to")
    parser.add_argument(
        "--output-dir", type=Path, help=f"default {DEFAULT_OUTPUT}/<engine> (replaced)"
    )
    add_recipe_options(parser)
    return parser.parse_known_args(argv)


# --- what the reward file runs (imported by the written reward.py) ------------------------------


# The packages the kit's verifiers import when they first score (math-verify, jsonschema) and
# the one soft_overlong imports (TRL's punishment): a reward that cannot import its verifier
# would score every completion its minimum with only a warning, so the reward file refuses to
# load without them. module -> the requirement to install (grpo-kit's pins).
REWARD_DEPENDENCIES = {"math_verify": "math-verify>=0.9,<0.10", "jsonschema": "jsonschema>=4.20,<5"}
LENGTH_DEPENDENCIES = {"soft_overlong": ("trl", "trl>=1.15,<1.17")}
# Rewards that score with their task's own package: the procedural task's correctness is
# reasoning-gym's generators' `score_answer` (without it, every row would score 0).
TASK_REWARD_DEPENDENCIES = {"procedural_correctness": ("reasoning_gym", procedural.REQUIREMENT)}


def missing_reward_dependencies(names: Sequence[str]) -> list[str]:
    """The requirements of the reward path that cannot be imported here."""
    import importlib.util

    wanted = dict(REWARD_DEPENDENCIES)
    wanted.update(dict(LENGTH_DEPENDENCIES[n] for n in names if n in LENGTH_DEPENDENCIES))
    wanted.update(dict(TASK_REWARD_DEPENDENCIES[n] for n in names if n in TASK_REWARD_DEPENDENCIES))
    return [req for module, req in wanted.items() if importlib.util.find_spec(module) is None]


def require_reward_dependencies(names: Sequence[str]) -> None:
    missing = missing_reward_dependencies(names)
    if missing:
        raise UserError(
            "the exported reward cannot score without "
            + ", ".join(missing)
            + " (its rewards would all score their minimum): pip install "
            + " ".join(f"'{m}'" for m in missing)
            + " where the engine's reward workers run"
        )


@dataclass
class Scorer:
    """The recipe's rewards, bound to its settings, with its weights: what GRPOTrainer sums."""

    names: list[str]
    funcs: list
    weights: list[float]
    correctness: object  # the task's first metric (0-1), OpenRLHF's `scores`
    special_tokens: list[str]
    engine_rewards: tuple[str, ...] = ()  # computed by the engine, not in `score`
    tokenizer: object = None  # counts OpenRLHF's completion tokens (it passes text only)

    @classmethod
    def load(cls, root: Path, snapshot: dict) -> Scorer:
        """The project in `root` and the recipe values `snapshot` (written by the export)."""
        from ..project import load as load_project
        from ..rewards import bind, resolve

        project = load_project(root)
        task = project.task
        engine_rewards = tuple(snapshot.get("engine_rewards", ()))
        require_reward_dependencies(
            [n for n in snapshot["reward_funcs"] if n not in engine_rewards]
        )
        if task.name != snapshot["task"]:
            raise UserError(
                f"{root}: the project's task is {task.name}, the export was written for "
                f"{snapshot['task']}; set {ROOT_VARIABLE} to the exported project's folder"
            )
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))  # rewards named by a dotted path, as training finds them
        task_args = task.arguments(**snapshot["task_arguments"])
        settings = reward_settings(project, task_args, snapshot["max_completion_length"])
        names = list(snapshot["reward_funcs"])
        funcs = resolve(names, task.reward_table, settings)
        correctness = bind(task.metrics[0][1], settings) if task.metrics else None
        weights = [float(w) for w in snapshot["reward_weights"]]
        keep = [i for i, name in enumerate(names) if name not in engine_rewards]
        tokenizer = _tokenizer(snapshot["tokenizer"]) if snapshot.get("tokenizer") else None
        return cls([names[i] for i in keep], [funcs[i] for i in keep],
                   [weights[i] for i in keep], correctness,
                   list(snapshot["special_tokens"]), engine_rewards, tokenizer)  # fmt: skip

    def score(self, completion: str, row: dict, completion_ids=None) -> dict[str, float]:
        """{"score": the weighted sum, each reward's value}; a reward that does not apply
        (None) counts 0 in both. `completion_ids`: the completion's tokens, as TRL passes them
        (length rewards count them; without them they estimate characters / 4)."""
        values = [_call(func, completion, row, completion_ids) for func in self.funcs]
        values = [0.0 if v is None or math.isnan(v) else float(v) for v in values]
        total = sum(w * v for w, v in zip(self.weights, values, strict=True))
        return {"score": total, **dict(zip(self.names, values, strict=True))}

    def correct(self, completion: str, row: dict) -> float:
        from ..rewards import call_like_trl

        if self.correctness is None:
            return 0.0
        value = call_like_trl(self.correctness, [completion], [row])[0]
        return 0.0 if value is None else float(value)

    def verl(self, solution_str: str, ground_truth, extra_info: dict | None) -> dict[str, float]:
        """verl's `compute_score`: the row from `extra_info["columns"]`, the gold answer from
        `ground_truth`."""
        row = json.loads((extra_info or {}).get("columns") or "{}")
        return self.score(solution_str, {**row, "answer": ground_truth})

    def response(self, query: str, prompt: str) -> str:
        """OpenRLHF's query is the prompt and the completion decoded with special tokens: the
        completion alone, special tokens removed (as TRL decodes completions)."""
        start = (
            len(prompt) if query.startswith(prompt) else len(os.path.commonprefix([query, prompt]))
        )
        text = query[start:]
        for token in self.special_tokens:
            text = text.replace(token, "")
        return text

    def token_ids(self, query: str, prompt: str):
        """The completion's token ids, re-encoded from OpenRLHF's query (the completion with
        its special tokens, eos included, as generated); None without a tokenizer."""
        if self.tokenizer is None:
            return None
        start = (
            len(prompt) if query.startswith(prompt) else len(os.path.commonprefix([query, prompt]))
        )
        return self.tokenizer(query[start:], add_special_tokens=False)["input_ids"]

    def openrlhf(self, queries: list[str], prompts: list[str], labels: list[str]) -> dict:
        """OpenRLHF's `reward_func`: rewards (the weighted sum), scores (the task's correctness,
        0-1, what dynamic filtering reads) and each reward in extra_logs."""
        import torch

        results, scores = [], []
        for query, prompt, label in zip(queries, prompts, labels, strict=True):
            row = json.loads(label)
            completion = self.response(query, prompt)
            ids = self.token_ids(query, prompt)
            results.append(self.score(completion, row, ids))
            scores.append(self.correct(completion, row))
        logs = {name: torch.tensor([r[name] for r in results]) for name in self.names}
        return {
            "rewards": torch.tensor([r["score"] for r in results], dtype=torch.float),
            "scores": torch.tensor(scores, dtype=torch.float),
            "extra_logs": logs,
        }


def _call(func, completion: str, row: dict, completion_ids=None):
    """One completion scored as GRPOTrainer calls a reward (`rewards.call_like_trl`), with its
    token ids when the engine gives them."""
    from ..rewards import call_like_trl

    if completion_ids is None:
        return call_like_trl(func, [completion], [row])[0]
    from ..rewards.base import TRL_RESERVED_COLUMNS

    columns = {k: [v] for k, v in row.items() if k not in TRL_RESERVED_COLUMNS}
    return func(
        prompts=[row.get("prompt", [])],
        completions=[[{"role": "assistant", "content": completion}]],
        completion_ids=[list(completion_ids)],
        trainer_state=None,
        log_extra=lambda *args, **kwargs: None,
        log_metric=lambda *args, **kwargs: None,
        **columns,
    )[0]


def _tokenizer(name: str):
    """The model's tokenizer (OpenRLHF's token counts); a clear error when it cannot load."""
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(name)
    except Exception as err:  # noqa: BLE001 - one line naming the fix
        raise UserError(
            f"the exported reward counts completion tokens with {name}'s tokenizer, which cannot "
            f"be loaded here ({type(err).__name__}): make the model reachable where the reward "
            "workers run"
        ) from err


# --- the data -----------------------------------------------------------------------------------


def export_rows(recipe, held: bool) -> list[dict]:
    """Rows as training reads them (checked; chat prompts, gold answer, the task's columns), as
    plain dicts: the training rows (cut to max_train_samples, as training does), or `held`: the
    rows `grpo evaluate` scores (heldout.py: the dataset's test split, or the rows held out of a
    single file), which the training rows never hold."""
    from .. import data, heldout

    script, task = recipe.script, recipe.project.task
    if held:
        rows, _ = heldout.evaluation_rows(script, recipe.task, task)
    else:
        rows = heldout.training_rows(script, recipe.task, task)
    return data.to_conversations(rows, script, recipe.task, task).to_list()


def columns_json(row: dict) -> str:
    """Every column a reward reads (TRL passes them all), the prompt included, as JSON: one text
    column in the engine's data, so rows of different shapes (JSON Schemas, test lists) survive
    parquet's one-schema-per-column."""
    return json.dumps(row, ensure_ascii=False, default=str)


def verl_row(row: dict, index: int, split: str, source: str, task: str) -> dict:
    return {
        "data_source": source,
        "prompt": row["prompt"],
        "ability": task,
        "reward_model": {"style": "rule", "ground_truth": str(row["answer"])},
        "extra_info": {"split": split, "index": index, "columns": columns_json(row)},
    }


def openrlhf_row(row: dict, index: int, split: str, source: str, task: str) -> dict:
    return {"prompt": row["prompt"], LABEL_KEY: columns_json(row), "datasource": source}


ROW_FORMATS = {"verl": verl_row, "openrlhf": openrlhf_row}


def write_rows(path: Path, rows: list[dict]) -> None:
    if path.suffix == ".parquet":
        import pandas as pd

        pd.DataFrame(rows).to_parquet(path, index=False)
        return
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


# --- the reward file ----------------------------------------------------------------------------


def special_tokens(project: Project) -> list[str]:
    """The special tokens the model's chat template writes (removed from OpenRLHF's queries)."""
    from ..offline.tiny_model import TOKENS

    return TOKENS[project.chat_template].all if project.chat_template in TOKENS else []


def snapshot(recipe, out: Path, engine: str) -> dict:
    """The recipe values the reward file needs, frozen now. `engine_rewards`: the rewards the
    engine computes itself (ENGINE_LENGTH_REWARDS), left out of the file's score."""
    project, training = recipe.project, recipe.training
    names = list(recipe.script.reward_funcs)
    weights = list(training.reward_weights or [1.0] * len(names))[: len(names)]
    fields = [f.name for f in dataclasses.fields(recipe.task) if f.init]
    return {
        "project_root": os.path.relpath(project.root.resolve(), out.resolve()),
        "task": project.task.name,
        "reward_funcs": names,
        "reward_weights": [float(w) for w in weights],
        "task_arguments": {name: _plain(getattr(recipe.task, name)) for name in fields},
        "max_completion_length": training.max_completion_length,
        "special_tokens": special_tokens(project),
        "engine_rewards": [n for n in ENGINE_LENGTH_REWARDS[engine] if n in names],
        # OpenRLHF passes text only: length rewards count the model tokenizer's tokens.
        "tokenizer": recipe.model.model_name_or_path
        if engine == "openrlhf" and any(n in LENGTH_DEPENDENCIES for n in names)
        else None,
    }


def _plain(value):
    """A recipe value as a Python literal (tuples as lists, paths as text)."""
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


REWARD_SOURCE = '''"""{engine} reward of the {task} project (`grpo export --engine {engine}`).

`{entry}` calls the project's own rewards with the recipe's weights and settings as they were at
export (SNAPSHOT), through grpo-kit's `Scorer` (grpo_kit.commands.export): the score is their
weighted sum, as TRL's GRPOTrainer trains on. Install grpo-kit and the project where the engine's
reward workers run (`pip install -e .` in the project folder); set {variable} to the project
folder if this file is moved out of it.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from grpo_kit.commands.export import Scorer

SNAPSHOT = {snapshot}


@functools.cache
def scorer() -> Scorer:
    here = Path(__file__).resolve().parent
    root = os.environ.get("{variable}") or here / SNAPSHOT["project_root"]
    return Scorer.load(Path(root).resolve(), SNAPSHOT)


{function}


# Loaded now: a missing project or verifier package fails the engine's load of this file (the
# engines swallow errors raised while scoring: a reward would silently score its minimum).
scorer()
'''

VERL_FUNCTION = '''\
def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """verl's custom reward function: {"score": weighted sum, each reward's value}."""
    return scorer().verl(solution_str, ground_truth, extra_info)'''

OPENRLHF_FUNCTION = '''\
def reward_func(queries, prompts, labels, **kwargs):
    """OpenRLHF's reward function: {"rewards", "scores" (correctness, 0-1), "extra_logs"}."""
    return scorer().openrlhf(queries, prompts, labels)'''


def reward_source(engine: str, values: dict) -> str:
    function = VERL_FUNCTION if engine == "verl" else OPENRLHF_FUNCTION
    return REWARD_SOURCE.format(
        engine=engine,
        task=values["task"],
        entry=ENTRY_POINTS[engine],
        variable=ROOT_VARIABLE,
        snapshot=pprint.pformat(values, width=96, sort_dicts=False),
        function=function,
    )


# --- the launch example -------------------------------------------------------------------------


@dataclass(frozen=True)
class Numbers:
    """The recipe's numbers an engine needs, in TRL's terms."""

    model: str
    gpus_per_node: int
    nodes: int
    prompts_per_step: int  # completions per optimizer step / num_generations
    group: int
    micro_batch: int
    epochs: int
    max_prompt: int
    max_completion: int
    learning_rate: float
    warmup_steps: int
    steps: int
    save_steps: int
    seed: int
    clip_low: float
    clip_high: float
    beta: float
    temperature: float
    top_p: float
    top_k: int
    lora_rank: int  # 0: full fine-tuning
    lora_alpha: int
    lora_targets: object
    gradient_checkpointing: bool
    gpu_memory_utilization: float
    chat_template_kwargs: dict
    loss_type: str
    scale_rewards: str
    eval_steps: int  # validate on the held-out file every eval_steps steps (see eval_every)


def numbers(recipe) -> Numbers:
    training, model, script, tier = (
        recipe.training,
        recipe.model,
        recipe.script,
        recipe.project.tier,
    )
    processes = max(1, tier.processes)
    completions = training.per_device_train_batch_size * training.gradient_accumulation_steps
    save = training.save_steps if training.save_strategy == "steps" else -1
    checkpointing = bool(
        getattr(training, "activation_checkpointing", False)
        or getattr(training, "gradient_checkpointing", False)
    )
    return Numbers(
        model=model.model_name_or_path,
        gpus_per_node=max(1, tier.gpus_per_node),
        nodes=max(1, tier.nodes),
        prompts_per_step=max(1, completions * processes // training.num_generations),
        group=training.num_generations,
        micro_batch=training.per_device_train_batch_size,
        epochs=training.num_iterations,
        max_prompt=script.max_prompt_tokens,
        max_completion=training.max_completion_length,
        learning_rate=training.learning_rate,
        warmup_steps=int(training.warmup_steps),
        steps=training.max_steps,
        save_steps=int(save),
        seed=training.seed,
        clip_low=training.epsilon,
        clip_high=training.epsilon_high or training.epsilon,
        beta=training.beta,
        temperature=training.temperature,
        top_p=training.top_p,
        top_k=training.top_k or 0,
        lora_rank=model.lora_r if model.use_peft else 0,
        lora_alpha=model.lora_alpha,
        lora_targets=model.lora_target_modules,
        gradient_checkpointing=checkpointing,
        gpu_memory_utilization=training.vllm_gpu_memory_utilization,
        chat_template_kwargs=dict(training.chat_template_kwargs or {}),
        loss_type=str(training.loss_type),
        scale_rewards=str(training.scale_rewards),
        eval_steps=eval_every(training),
    )


def eval_every(training) -> int:
    """How often the engine validates on the held-out file: the recipe's eval_steps when it
    evaluates during training (a fraction of max_steps as TRL reads it), else once at the end
    (max_steps; both engines also score the held-out file before training when asked)."""
    steps = max(1, int(training.max_steps)) if training.max_steps and training.max_steps > 0 else 1
    if getattr(training, "eval_strategy", "no") in ("no", None) or not training.eval_steps:
        return steps
    value = float(training.eval_steps)
    return max(1, math.ceil(value * steps) if value < 1 else int(value))


# TRL's loss normalisation -> the engines' loss aggregation (None: no equivalent).
VERL_LOSS_AGG = {
    "dapo": "token-mean",
    "bnpo": "token-mean",
    "grpo": "seq-mean-token-mean",
    "dr_grpo": "seq-mean-token-sum-norm",
}
OPENRLHF_LOSS_AGG = {"dapo": "token-mean", "bnpo": "token-mean", "grpo": "seq-mean-token-mean"}


def not_mapped(recipe, engine: str) -> list[str]:
    """Recipe settings the launch example cannot carry over (said in its comments)."""
    training, n = recipe.training, numbers(recipe)
    notes = []
    agg = VERL_LOSS_AGG if engine == "verl" else OPENRLHF_LOSS_AGG
    if n.loss_type not in agg:
        notes.append(f"loss_type {n.loss_type}: no loss aggregation of {engine} matches it")
    if n.scale_rewards not in ("group", "none", "False", "True"):
        notes.append(f"scale_rewards {n.scale_rewards}: {engine} scales within the group or not")
    aggregation = getattr(training, "multi_objective_aggregation", "sum_then_normalize")
    if aggregation != "sum_then_normalize":
        notes.append(
            f"multi_objective_aggregation {aggregation}: the reward file returns the weighted "
            "sum (sum_then_normalize)"
        )
    if recipe.script.reward_model:
        notes.append(
            f"reward_model {recipe.script.reward_model}: not in the reward file (the functions "
            f"only); add it with the engine's reward-model options"
        )
    if training.vllm_importance_sampling_correction:
        notes.append(
            "vllm_importance_sampling_correction: the engines have their own rollout "
            "correction options (verl: algorithm.rollout_correction; OpenRLHF: see its docs)"
        )
    if engine == "openrlhf" and n.lora_rank:
        note = lora_module_names(n.lora_targets, n.model)[1]
        if note:
            notes.append(note)
    length = [name for name in recipe.script.reward_funcs if name in LENGTH_DEPENDENCIES]
    if engine == "openrlhf" and length:
        notes.append(
            f"{', '.join(length)}: OpenRLHF passes the reward function text only, so the reward "
            "file counts the completion's tokens by re-encoding its text (special tokens and eos "
            "included) with the model's tokenizer: the count differs from training's only where "
            "the model sampled a tokenization the tokenizer would not produce"
        )
    if engine == "openrlhf" and n.top_k:
        notes.append(f"top_k {n.top_k}: OpenRLHF's rollout options have no top_k")
    if engine == "openrlhf" and n.chat_template_kwargs:
        notes.append(
            f"chat_template_kwargs {n.chat_template_kwargs}: OpenRLHF renders prompts with the "
            "tokenizer's default template arguments"
        )
    return notes


def _hydra(value) -> str:
    """A value in Hydra's override grammar (verl's command line)."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(_hydra(v) for v in value) + "]"
    text = str(value)
    if re.fullmatch(r"[\w.\-/+]+", text):
        return text
    return "'" + text.replace("'", "\\'") + "'"


def verl_launch(recipe, out: Path, files: tuple[str, str], train_rows: int = 0) -> list[str]:
    """`python3 -m verl.trainer.main_ppo` with GRPO and the recipe's numbers (checked against
    verl 0.9.1: its `ppo_trainer.yaml` and `validate_config`). The reward file goes under
    `reward.custom_reward_function`, the only place `main_ppo` reads it (the top-level
    `custom_reward_function` is migrated only by `fully_async_main`)."""
    n = numbers(recipe)
    actor = "actor_rollout_ref.actor"
    # The reference model (and its log-prob micro batch) exists only when KL is on.
    kl = ([f"{actor}.use_kl_loss=True", f"{actor}.kl_loss_coef={n.beta}",
           f"{actor}.kl_loss_type=low_var_kl",
           f"actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu={n.micro_batch}"]
          if n.beta > 0 else [f"{actor}.use_kl_loss=False"])  # fmt: skip
    lora = (
        [f"actor_rollout_ref.model.lora_rank={n.lora_rank}",
         f"actor_rollout_ref.model.lora_alpha={n.lora_alpha}",
         f"actor_rollout_ref.model.target_modules={_hydra(_targets(n.lora_targets))}"]
        if n.lora_rank else []
    )  # fmt: skip
    template = [f"+data.apply_chat_template_kwargs.{k}={_hydra(v)}"
                for k, v in n.chat_template_kwargs.items()]  # fmt: skip
    agg = VERL_LOSS_AGG.get(n.loss_type)
    return [
        "python3 -m verl.trainer.main_ppo",
        "algorithm.adv_estimator=grpo",
        f"algorithm.norm_adv_by_std_in_grpo={n.scale_rewards not in ('none', 'False')}",
        f"data.train_files={out / files[0]}",
        f"data.val_files={out / files[1]}",
        f"data.train_batch_size={n.prompts_per_step}",
        f"data.max_prompt_length={n.max_prompt}",
        f"data.max_response_length={n.max_completion}",
        "data.filter_overlong_prompts=True",
        *template,
        f"actor_rollout_ref.model.path={n.model}",
        f"actor_rollout_ref.model.enable_gradient_checkpointing={n.gradient_checkpointing}",
        *lora,
        f"actor_rollout_ref.actor.optim.lr={n.learning_rate}",
        f"actor_rollout_ref.actor.optim.lr_warmup_steps={n.warmup_steps}",
        f"actor_rollout_ref.actor.ppo_mini_batch_size={n.prompts_per_step}",
        f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={n.micro_batch}",
        f"actor_rollout_ref.actor.ppo_epochs={n.epochs}",
        f"actor_rollout_ref.actor.clip_ratio_low={n.clip_low}",
        f"actor_rollout_ref.actor.clip_ratio_high={n.clip_high}",
        *([f"actor_rollout_ref.actor.loss_agg_mode={agg}"] if agg else []),
        *kl,
        "actor_rollout_ref.rollout.name=vllm",
        f"actor_rollout_ref.rollout.n={n.group}",
        f"actor_rollout_ref.rollout.temperature={n.temperature}",
        f"actor_rollout_ref.rollout.top_p={n.top_p}",
        f"actor_rollout_ref.rollout.top_k={n.top_k or -1}",
        f"actor_rollout_ref.rollout.gpu_memory_utilization={n.gpu_memory_utilization}",
        f"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu={n.micro_batch}",
        f"reward.custom_reward_function.path={out / REWARD_FILE}",
        f"reward.custom_reward_function.name={ENTRY_POINTS['verl']}",
        *verl_length_rewards(recipe),
        f"trainer.total_training_steps={n.steps}",
        f"trainer.save_freq={n.save_steps}",
        f"trainer.test_freq={n.eval_steps}",
        f"trainer.n_gpus_per_node={n.gpus_per_node}",
        f"trainer.nnodes={n.nodes}",
        f"data.seed={n.seed}",
        "trainer.logger=[console]",
    ]


# Length rewards an engine computes itself from its own token counts (verl: the DAPO reward
# manager's overlong buffer, the same formula as TRL's get_soft_overlong_punishment on the
# response's token count); the reward file leaves them out of its score for that engine.
ENGINE_LENGTH_REWARDS = {"verl": ("soft_overlong",), "openrlhf": ()}


def _weights(recipe) -> dict[str, float]:
    names = list(recipe.script.reward_funcs)
    weights = list(recipe.training.reward_weights or [1.0] * len(names))[: len(names)]
    return {name: float(w) for name, w in zip(names, weights, strict=True)}


def verl_length_rewards(recipe) -> list[str]:
    """soft_overlong through verl's DAPO reward manager: TRL's soft overlong punishment with its
    buffer (the last quarter of max_completion_length) on the response's token count, scaled by
    the reward's weight (penalty_factor), added to the reward file's score."""
    weights = _weights(recipe)
    if "soft_overlong" not in weights:
        return []
    limit = recipe.training.max_completion_length
    kwargs = "+reward.reward_kwargs"
    return [
        "reward.reward_manager.name=dapo",
        f"{kwargs}.max_resp_len={limit}",
        f"{kwargs}.overlong_buffer_cfg.enable=True",
        f"{kwargs}.overlong_buffer_cfg.len={max(1, limit // 4)}",
        f"{kwargs}.overlong_buffer_cfg.penalty_factor={weights['soft_overlong']}",
        f"{kwargs}.overlong_buffer_cfg.log=True",
    ]


def _targets(value):
    """LoRA targets: one pattern (PEFT reads a text as a regular expression), or module names."""
    if isinstance(value, list | tuple) and len(value) == 1:
        return value[0]
    return value


def openrlhf_launch(recipe, out: Path, files: tuple[str, str], train_rows: int) -> list[str]:
    """`python3 -m openrlhf.cli.train_ppo_ray` (OpenRLHF 0.11's dotted options) with group
    normalisation (GRPO) and the recipe's numbers; run it through `ray job submit`."""
    n = numbers(recipe)
    gpus = n.gpus_per_node
    kl = (["--algo.kl.use_loss", f"--algo.kl.init_coef {n.beta}", "--algo.kl.estimator k3"]
          if n.beta > 0 else ["--algo.kl.init_coef 0"])  # fmt: skip
    # --ds.lora.target_modules is nargs="*": PEFT gets a list, whose entries are module names
    # (a pattern or "all-linear" would match nothing), so the recipe's targets are spelled out.
    lora = (
        [f"--ds.lora.rank {n.lora_rank}", f"--ds.lora.alpha {n.lora_alpha}",
          "--ds.lora.target_modules " + " ".join(lora_module_names(n.lora_targets, n.model)[0])]
        if n.lora_rank else []
    )  # fmt: skip
    agg = OPENRLHF_LOSS_AGG.get(n.loss_type)
    warmup = n.warmup_steps / n.steps if n.steps > 0 else 0.0
    # max_steps: the training file holds max_steps x prompts per step rows (repeated over
    # episodes when the data is shorter); --data.max_samples would also cut the held-out file.
    episodes = openrlhf_episodes(n, train_rows)
    return [
        "python3 -m openrlhf.cli.train_ppo_ray",
        f"--actor.model_name_or_path {n.model}",
        f"--actor.num_nodes {n.nodes}",
        f"--actor.num_gpus_per_node {gpus}",
        f"--ref.num_nodes {n.nodes}",
        f"--ref.num_gpus_per_node {gpus}",
        f"--vllm.num_engines {gpus * n.nodes}",
        f"--vllm.gpu_memory_utilization {n.gpu_memory_utilization}",
        "--train.colocate_all",
        f"--data.prompt_dataset {out / files[0]}",
        f"--eval.dataset {out / files[1]}",
        "--data.input_key prompt",
        "--data.apply_chat_template",
        f"--data.label_key {LABEL_KEY}",
        f"--reward.remote_url {out / REWARD_FILE}",
        "--algo.advantage.estimator group_norm",
        *(["--algo.advantage.no_std_norm"] if n.scale_rewards in ("none", "False") else []),
        f"--rollout.n_samples_per_prompt {n.group}",
        f"--rollout.batch_size {n.prompts_per_step}",
        f"--train.batch_size {n.prompts_per_step * n.group}",
        f"--train.micro_batch_size {n.micro_batch}",
        f"--train.max_epochs {n.epochs}",
        f"--train.num_episodes {episodes}",
        f"--eval.steps {n.eval_steps}",
        f"--data.max_len {n.max_prompt + n.max_completion}",
        f"--rollout.max_new_tokens {n.max_completion}",
        f"--rollout.temperature {n.temperature}",
        f"--rollout.top_p {n.top_p}",
        f"--actor.adam.lr {n.learning_rate}",
        f"--actor.lr_warmup_ratio {warmup:g}",
        f"--actor.eps_clip_low_high {n.clip_low} {n.clip_high}",
        *([f"--actor.loss_agg_mode {agg}"] if agg else []),
        *kl,
        *lora,
        *(["--actor.gradient_checkpointing_enable"] if n.gradient_checkpointing else []),
        f"--ckpt.save_steps {n.save_steps}",
        f"--ckpt.output_dir {out / 'checkpoints'}",
        f"--train.seed {n.seed}",
    ]


MAPPING = {
    "verl": (
        "the recipe -> verl: num_generations -> rollout.n; prompts per step (per_device_train_"
        "batch_size x gradient_accumulation_steps x processes / num_generations) -> "
        "data.train_batch_size and ppo_mini_batch_size (one update per batch, as TRL's "
        "num_iterations); max_prompt_tokens / max_completion_length -> data.max_prompt_length / "
        "max_response_length; epsilon / epsilon_high -> clip_ratio_low / high; beta -> "
        "kl_loss_coef (k3: low_var_kl); loss_type -> loss_agg_mode; scale_rewards -> "
        "norm_adv_by_std_in_grpo; lora_r / lora_alpha -> lora_rank / lora_alpha; max_steps -> "
        "total_training_steps; the tier's GPUs -> trainer.n_gpus_per_node / nnodes. "
        "verl's choices: the reward file under reward.custom_reward_function (the key main_ppo "
        "reads); per_device_train_batch_size -> the actor's, the rollout's and (KL on) the "
        "reference's log-prob micro batch per GPU (validate_config demands them); eval_steps "
        "(or max_steps when the recipe does not evaluate) -> trainer.test_freq on data.val_files; "
        "soft_overlong -> the DAPO reward manager's overlong buffer (the same punishment on "
        "verl's response token count, weight -> penalty_factor), so reward.py leaves it out"
    ),
    "openrlhf": (
        "the recipe -> OpenRLHF: num_generations -> rollout.n_samples_per_prompt; prompts per "
        "step -> rollout.batch_size (train.batch_size counts completions); max_completion_length "
        "-> rollout.max_new_tokens, data.max_len = max_prompt_tokens + max_completion_length "
        "(OpenRLHF truncates longer prompts from the left, TRL's project drops them); epsilon / "
        "epsilon_high -> actor.eps_clip_low_high; beta -> algo.kl.init_coef (k3 as a loss); "
        "scale_rewards none -> algo.advantage.no_std_norm; max_steps -> the training file "
        "holds max_steps x prompts per step rows (train.num_episodes repeats a shorter one; "
        "no data.max_samples, which would also cut the held-out file); eval_steps (or "
        "max_steps) -> eval.steps on eval.dataset; warmup_steps -> lr_warmup_ratio; "
        "lora_target_modules -> the names of the layers they select (ds.lora.target_modules "
        "takes a list, which PEFT matches by name, never as a pattern)"
    ),
}


def openrlhf_rows(n: Numbers) -> int:
    """The training rows OpenRLHF reads for max_steps: max_steps x prompts per step (its
    steps are rows x samples per prompt / train batch x episodes)."""
    return max(1, n.prompts_per_step * max(1, n.steps))


def openrlhf_episodes(n: Numbers, train_rows: int) -> int:
    return max(1, math.ceil(openrlhf_rows(n) / max(1, train_rows)))


# Linear layers of the common decoder families: OpenRLHF's targets when the model's config
# cannot be read where the export runs.
COMMON_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def lora_module_names(targets, model: str) -> tuple[list[str], str | None]:
    """(module names, a note or None): the recipe's LoRA targets (all-linear, a pattern, or
    names) as the names of the model's layers they select, what PEFT's list form matches
    (exact names or name suffixes). The model is built on the meta device from its config (no
    weights); without its config, names pass through and a pattern becomes COMMON_LINEAR."""
    from ..backends.transformers import in_tower, matches, model_modules

    found = model_modules(model)
    if found is None:
        if isinstance(targets, list | tuple) and not (
            len(targets) == 1 and targets[0] == "all-linear"
        ):
            return [str(t) for t in targets], None
        return list(COMMON_LINEAR), (
            f"lora_target_modules {targets}: {model}'s config cannot be read here, so OpenRLHF "
            f"gets {' '.join(COMMON_LINEAR)}; check them against the model's layers"
        )
    _, modules = found
    pattern = _targets(targets)
    leaves = sorted(
        {name.rsplit(".", 1)[-1] for name, linear in modules.items()
         if linear and not in_tower(name) and not name.endswith("lm_head")
         and matches(pattern, name)}
    )  # fmt: skip
    if not leaves:
        raise UserError(
            f"lora_target_modules {targets} select no linear layer of {model}: set "
            "lora_target_modules in configs/local.yaml"
        )
    return leaves, None


def _as_list(value) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)]


def launch_script(
    recipe, engine: str, out: Path, files: tuple[str, str], train_rows: int = 0
) -> str:
    command = (verl_launch if engine == "verl" else openrlhf_launch)(recipe, out, files, train_rows)
    notes = not_mapped(recipe, engine)
    lines = [
        "#!/usr/bin/env bash",
        f"# {engine}: a launch example for {recipe.model.model_name_or_path} with the recipe's",
        f"# numbers, written by `grpo export --engine {engine}`. A starting point: check it",
        "# against your engine version's documentation; the paths must exist on every node.",
        "#",
        *(f"# {part}" for part in _wrap(MAPPING[engine])),
        "#",
        "# Not mapped, or scored differently from training:"
        if notes
        else "# Every recipe setting above has a counterpart.",
        *(
            f"#   {'-' if i == 0 else ' '} {line}"
            for note in notes
            for i, line in enumerate(_wrap(note, 84))
        ),
        "set -euo pipefail",
        "",
    ]
    if engine == "openrlhf":
        lines += [
            "# Start Ray first (ray start --head), then:",
            'ray job submit --address="http://127.0.0.1:8265" -- \\',
        ]
    parts = [_shell(part) for part in command[1:]]
    body = [f"  {part} \\" for part in parts]
    body[-1] = body[-1].removesuffix(" \\")
    return "\n".join([*lines, f"{command[0]} \\", *body, ""])


def _shell(part: str) -> str:
    """One option of the command, quoted for the shell where it needs it."""
    import shlex

    if part.startswith("--") and " " in part:
        flag, _, rest = part.partition(" ")
        return " ".join([flag, *(_shell(v) for v in rest.split(" "))])
    if "'" in part and not re.search(r'["$`!]|\\\\', part):
        return f'"{part}"'  # a Hydra-quoted value: the shell keeps its single quotes
    return shlex.quote(part)


def _wrap(text: str, width: int = 92) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width)


# --- the command ----------------------------------------------------------------------------------


def prepare_output(out: Path) -> None:
    """`out` may be replaced: missing, empty, or an earlier export (it holds a reward.py)."""
    if out.exists() and any(out.iterdir()) and not (out / REWARD_FILE).is_file():
        raise UserError(
            f"{out} is not empty and holds no earlier export: pass --output-dir with a new or "
            "empty folder"
        )


def export(argv: Sequence[str] | None = None) -> Path:
    """Write the engine's data, reward file and launch example; returns the folder."""
    args, overrides = parse_args(argv)
    recipe = recipe_from(args, overrides, read_only=True)
    check_model(recipe.model.model_name_or_path, "--model_name_or_path")  # a folder: one line
    project, task, engine = recipe.project, recipe.project.task, args.engine
    if task.environments is not None:
        raise UserError(
            f"the {task.name} task's tool calls run in its environments through TRL's tool "
            f"loop; {engine} runs tools in its own multi-turn agent loop, so the export covers "
            "single-turn tasks only: port the environments to verl's tool agent or OpenRLHF's "
            "agent_func"
        )
    out = (args.output_dir or DEFAULT_OUTPUT / engine).resolve()
    prepare_output(out)
    files = DATA_FILES[engine]
    script = recipe.script
    splits = (script.dataset_train_split, script.dataset_test_split)
    train = export_rows(recipe, held=False)
    if engine == "openrlhf":  # the rows max_steps reads, repeated over episodes if fewer
        train = train[: openrlhf_rows(numbers(recipe))]
    test = export_rows(recipe, held=True)  # a Hub dataset without its test split: one clear error
    make = ROW_FORMATS[engine]
    formatted = [
        [make(row, i, split, script.dataset_name, task.name) for i, row in enumerate(rows)]
        for split, rows in zip(splits, (train, test), strict=True)
    ]
    values = snapshot(recipe, out, engine)
    Scorer.load(project.root, values)  # the rewards resolve now, not on the cluster
    staging = out.with_name(f".{out.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name, rows in zip(files, formatted, strict=True):
        write_rows(staging / name, rows)
    (staging / REWARD_FILE).write_text(reward_source(engine, values), encoding="utf-8")
    launch = staging / LAUNCH_FILE
    launch.write_text(
        launch_script(recipe, engine, out, files, len(formatted[0])), encoding="utf-8"
    )
    launch.chmod(0o755)
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)
    print(
        f"export ({engine}): {len(formatted[0])} training rows -> {out / files[0]}, "
        f"{len(formatted[1])} held-out rows -> {out / files[1]}; reward file {out / REWARD_FILE} "
        f"({ENTRY_POINTS[engine]}: {', '.join(values['reward_funcs'])}); launch example "
        f"{out / LAUNCH_FILE}"
    )
    for note in not_mapped(recipe, engine):
        print(f"not mapped: {note}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    return run(export, argv)
