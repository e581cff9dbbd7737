"""`grpo reward-model` (`make reward-model`): train a reward model on preference pairs, check
it, and hand it to GRPO as a reward.

    grpo reward-model [--config configs/reward_model.yaml] [--smoke] [recipe fields]

Reward functions score what can be checked (a number, passing tests, a schema); a reward model
scores what people prefer, learned from pairs of answers to the same prompt where `chosen` is
better than `rejected`. TRL's `RewardTrainer` trains the project's model as a sequence classifier
with one output (Bradley-Terry loss: -log sigmoid(score(chosen) - score(rejected))).

Order matters for fast failure: the recipe is parsed, the pairs are loaded and checked (missing
columns, empty text, identical chosen and rejected, mixed text and chat formats: one error naming
the file, row and column) before any model loads. Then:

1. train (a rerun resumes from the last checkpoint in `output_dir` unless `--no-resume`);
2. with LoRA, merge the adapter into the base model (the adapter stays in `output_dir/adapter`)
   and check that the merged model scores like the adapter: `output_dir` then holds a plain
   `AutoModelForSequenceClassification` folder (num_labels=1) with its tokenizer, which is what
   GRPOTrainer loads for `reward_model`;
3. evaluate on held-out pairs, loading that folder as GRPO will: the share of pairs where chosen
   scores above rejected (target 80 %) and the mean margin, printed and written to
   `output_dir/reward_eval.json`, with a warning and what to do when the accuracy is below target.

Pairs may be text or chats, with an explicit `prompt` column or with the prompt inside
chosen/rejected (TRL's preference formats). Text pairs with a prompt become chats
(`as_chat`: system prompt, user prompt, assistant answer): GRPO scores this project's completions
as chats, so the reward model learns on the same text it will score.

`--smoke` trains a tiny local reward model on the sample pairs on the CPU for a few steps
(offline). Use the result in GRPO with `reward_model: <output_dir>` in configs/grpo.yaml (or
configs/local.yaml) and its weight in `reward_model_weight`; `score_pairs` scores
completions with it outside training (the reward debug command uses it).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from .. import data
from ..errors import DataError, ModelError, UserError, hub_hint
from ..merging import MergeCheckFailed
from ..preferences import SAMPLE_PREFERENCES, RewardScriptArguments
from ..runner import run

logger = logging.getLogger(__name__)

DEFAULT_RECIPE = Path("configs/reward_model.yaml")
TINY_REWARD_MODEL_DIR = Path("outputs/tiny-reward-model")
EVAL_FILE = "reward_eval.json"
ADAPTER_DIR = "adapter"
# The smoke layer (`--smoke`): the GRPO smoke overrides that fit this recipe (CPU, full precision,
# no GPU-only features, no tracker, no checkpoints), then the tiny reward model, the sample pairs
# and a few steps with a rate that does move the tiny model.
SMOKE_REWARD_OVERRIDES: dict[str, object] = {
    "smoke": True,
    "model_name_or_path": str(TINY_REWARD_MODEL_DIR),
    "dataset_name": SAMPLE_PREFERENCES,
    "dataset_test_split": None,
    "prompt_column": "prompt",
    "chosen_column": "chosen",
    "rejected_column": "rejected",
    "margin_column": None,
    "max_train_samples": None,
    "output_dir": "outputs/smoke-reward-model",
    "max_steps": 20,
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 1,
    "learning_rate": 1e-3,
    "max_length": 1024,
    "logging_steps": 5,
}


class RewardRecipe(NamedTuple):
    script: RewardScriptArguments
    training: object  # trl.RewardConfig
    model: object  # trl.ModelConfig


def reward_parser():
    from trl import ModelConfig, RewardConfig, TrlParser

    return TrlParser(
        (RewardScriptArguments, RewardConfig, ModelConfig),
        prog=Path(sys.argv[0]).name if sys.argv and sys.argv[0] else None,
        description=f"Reward-model options: --config PATH (default {DEFAULT_RECIPE}), --smoke, "
        "and any recipe field below (--learning_rate 1e-5 ...), applied over the recipe.",
    )


def smoke_overrides() -> dict:
    """The smoke layer: the GRPO smoke overrides, then ours (keys this recipe lacks are skipped).
    The reward model is trained with TRL's own `RewardTrainer` whatever the project's backend
    (this command never loads Unsloth, which patches TRL's trainers on a GPU)."""
    from ..recipe import SMOKE_OVERRIDES

    return {**SMOKE_OVERRIDES, **SMOKE_REWARD_OVERRIDES}


def _recipe_file(path: Path) -> dict:
    import yaml

    try:
        values = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise UserError(f"{path}: not valid YAML ({err})") from err
    if not isinstance(values, dict | None):
        raise UserError(f"{path}: a recipe is a mapping of field: value lines")
    return values or {}


def task_layer() -> list[tuple[str, dict]]:
    """The project's system prompt (task.py, its one home), under the recipe file: the reward
    model learns on the prompts GRPO scores. None outside a project (`grpo reward-model` always
    runs in one; a recipe read elsewhere keeps its own or the default)."""
    from ..project import load as load_project
    from ..recipe import task_source

    try:
        project = load_project()
    except UserError:
        return []
    return [(task_source(project), {"system_prompt": project.task.system_prompt})]


def parse_reward_recipe(argv: Sequence[str] | None = None) -> RewardRecipe:
    """The typed reward-model recipe: the dataclasses' defaults, the task's system prompt
    (task.py), the recipe file
    (`configs/reward_model.yaml` unless `--config PATH`), the smoke layer (`--smoke`), then the
    command line (`--learning_rate 1e-5`, any field), each over the ones before it."""
    import argparse
    import dataclasses

    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--config", type=Path, default=None)
    pre.add_argument("--smoke", action="store_true")
    known, rest = pre.parse_known_args(list(sys.argv[1:] if argv is None else argv))
    config = known.config or (DEFAULT_RECIPE if DEFAULT_RECIPE.is_file() else None)
    if known.config is not None and not known.config.is_file():
        raise UserError(f"recipe not found: {known.config}; pass --config {DEFAULT_RECIPE}")
    smoke = smoke_overrides() if known.smoke else None  # before trl: it may load Unsloth
    parser = reward_parser()
    fields = {f.name for t in parser.dataclass_types for f in dataclasses.fields(t)}
    layers = task_layer()
    layers += [(str(config), _recipe_file(config))] if config else []
    if smoke is not None:
        layers.append(("--smoke", {k: v for k, v in smoke.items() if k in fields}))
    merged: dict[str, object] = {}
    for source, values in layers:
        unknown = sorted(set(values) - fields)
        if unknown:
            raise UserError(
                f"reward-model recipe: {source}: unknown field(s) {', '.join(unknown)}: not a "
                "field of the installed TRL's RewardConfig/ModelConfig or of this command"
            )
        merged.update(values)
    parser.set_defaults_with_config(**merged)
    try:
        return RewardRecipe(*parser.parse_args_into_dataclasses(args=rest))
    except ValueError as err:
        raise UserError(f"reward-model recipe: {err}") from err


# --- the pairs -------------------------------------------------------------------------------


def _kind(value) -> str:
    return "chat" if isinstance(value, list) else "text"


def _same(a, b) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.strip() == b.strip()
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def _columns(script_args) -> dict[str, str]:
    """{recipe field: column} for the columns the pairs use."""
    columns = {"prompt_column": script_args.prompt_column}
    columns |= {
        "chosen_column": script_args.chosen_column,
        "rejected_column": script_args.rejected_column,
        "margin_column": script_args.margin_column,
    }
    return {name: column for name, column in columns.items() if column}


def _row_problem(row: dict, script_args) -> str | None:
    columns = _columns(script_args)
    margin = columns.pop("margin_column", None)
    for column in columns.values():
        problem = data.cell_problem(row[column], text_or_chat=True)
        if problem:
            return f"column '{column}' {problem}"
    chosen, rejected = script_args.chosen_column, script_args.rejected_column
    others = [c for c in columns.values() if c != chosen]
    for other in others:
        if _kind(row[other]) != _kind(row[chosen]):
            return (
                f"column '{other}' is {_kind(row[other])} but column '{chosen}' is "
                f"{_kind(row[chosen])}; use one format per row: all text, or all chat messages"
            )
    if _same(row[chosen], row[rejected]):
        return (
            f"columns '{chosen}' and '{rejected}' are identical; a pair needs a better and a "
            "worse answer (fix the row or remove it)"
        )
    if margin is not None:
        value = row[margin]
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            return f"column '{margin}' is {value!r}, expected a number"
    return None


def check_pairs(rows, source: str, script_args) -> None:
    """Every pair usable by RewardTrainer, or one DataError naming the first bad row."""
    columns = {column: setting for setting, column in _columns(script_args).items()}
    hints = {"prompt_column": " (or prompt_column: null: no prompt column)"}
    data.require_columns(rows, source, columns, str(DEFAULT_RECIPE), hints)
    first, count = None, 0
    for index, row in enumerate(rows):
        problem = _row_problem(row, script_args)
        if problem:
            count += 1
            first = first or f"{source} row {index + 1}: {problem}"
    if first:
        more = f" ({count - 1} more row(s) with problems)" if count > 1 else ""
        raise DataError(first + more)


def to_trl_format(rows, script_args):
    """Columns prompt (if any), chosen, rejected (and margin), as TRL expects; text pairs with a
    prompt become chats when `as_chat` is on."""
    columns = _columns(script_args)
    names = {"prompt_column": "prompt", "chosen_column": "chosen", "rejected_column": "rejected"}
    names["margin_column"] = "margin"
    system = script_args.system_prompt

    def convert(row: dict) -> dict:
        out = {names[setting]: row[column] for setting, column in columns.items()}
        if script_args.as_chat and isinstance(out.get("prompt"), str):
            prompt = [{"role": "user", "content": out["prompt"]}]
            out["prompt"] = [{"role": "system", "content": system}, *prompt] if system else prompt
            for key in ("chosen", "rejected"):
                out[key] = [{"role": "assistant", "content": out[key]}]
        return out

    return rows.map(convert, remove_columns=rows.column_names, desc="Preference pairs")


@dataclass(frozen=True)
class Pairs:
    train: object  # datasets.Dataset in TRL's format
    test: object
    held_out: str  # where the test pairs come from, in words


def load_pairs(script_args, seed: int = 42) -> Pairs:
    """Load, check and split the pairs (no tokenizer or model needed)."""
    name, split = script_args.dataset_name, script_args.dataset_train_split
    local = data.is_local(name)
    rows = data.load_rows(name, script_args.dataset_config, split)
    source = name if local else f"{name}[{split}]"
    check_pairs(rows, source, script_args)
    if script_args.dataset_test_split and not local:
        test_split = script_args.dataset_test_split
        try:
            test = data.load_rows(name, script_args.dataset_config, test_split)
        except DataError as err:
            raise DataError(
                f"{err}; or set dataset_test_split: null to hold out test_size of the pairs"
            ) from err
        check_pairs(test, f"{name}[{test_split}]", script_args)
        train, held_out = rows, f"the {test_split} split"
    else:
        if not 0 < script_args.test_size < 1:
            raise UserError(f"test_size {script_args.test_size} must be between 0 and 1")
        count = max(1, round(len(rows) * script_args.test_size))
        if len(rows) - count < 1:
            raise DataError(
                f"{source}: {len(rows)} pair(s) are too few to hold out {count} for the "
                "evaluation; add pairs or name a test split (dataset_test_split)"
            )
        parts = rows.train_test_split(test_size=count, seed=seed, shuffle=True)
        train, test = parts["train"], parts["test"]
        held_out = f"{count} pairs held out of {len(rows)} (test_size {script_args.test_size})"
    if script_args.max_train_samples is not None:
        train = train.select(range(min(script_args.max_train_samples, len(train))))
    logger.info("loaded %d training pairs from %s; evaluation on %s", len(train), source, held_out)
    return Pairs(to_trl_format(train, script_args), to_trl_format(test, script_args), held_out)


# --- scoring, as GRPOTrainer scores with a reward model -----------------------------------------


def chat_text(tokenizer, prompt, completion) -> str:
    """The text a reward model scores for one completion, built as GRPOTrainer builds it: a chat
    prompt plus the completion as the assistant's message through the chat template, or plain
    prompt + completion for text prompts."""
    if not isinstance(prompt, list) and not isinstance(completion, list):
        return (prompt or "") + completion
    if isinstance(prompt, str):
        prompt = [{"role": "user", "content": prompt}]
    if not isinstance(completion, list):
        completion = [{"role": "assistant", "content": completion}]
    return tokenizer.apply_chat_template(list(prompt or []) + completion, tokenize=False)


def score_texts(model, tokenizer, texts: list[str], batch_size: int = 8) -> list[float]:
    """One score per text: right-padded, no special tokens added, the first logit (as GRPO)."""
    import torch

    device = next(model.parameters()).device
    scores: list[float] = []
    for start in range(0, len(texts), batch_size):
        batch = tokenizer(
            texts[start : start + batch_size],
            return_tensors="pt",
            padding=True,
            padding_side="right",
            add_special_tokens=False,
        ).to(device)
        with torch.inference_mode():
            scores += model(**batch).logits[:, 0].float().tolist()
    return scores


def _torch_dtype(dtype: str | None):
    import torch

    return dtype if dtype in (None, "auto") else getattr(torch, dtype)


def load_reward_model(model_dir, dtype: str | None = None, device: str | None = None):
    """(model, tokenizer) of a reward-model folder or Hub id, loaded as GRPOTrainer loads one:
    AutoModelForSequenceClassification with num_labels=1 and the tokenizer's pad token."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from ..generation import default_device

    device = device or default_device()
    dtype = dtype or ("float32" if device == "cpu" else "auto")
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        model = AutoModelForSequenceClassification.from_pretrained(
            str(model_dir), num_labels=1, dtype=_torch_dtype(dtype)
        )
    except (OSError, ValueError) as err:
        raise ModelError(hub_hint(str(model_dir), err)) from err
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.config.get_text_config().pad_token_id = tokenizer.pad_token_id
    return model.to(device).eval(), tokenizer


def score_pairs(
    model_dir, prompts: Sequence, completions: Sequence[str], batch_size: int = 8
) -> list[float]:
    """Scores of a trained reward model for (prompt, completion) pairs, as GRPO computes them.

    `prompts` are chats (lists of {role, content}, e.g. a training row's `prompt`) or texts;
    `completions` are the answers' texts. Loads the model on every call (cache it yourself for
    repeated use: `load_reward_model` + `chat_text` + `score_texts`).
    """
    if len(prompts) != len(completions):
        raise UserError(f"{len(prompts)} prompts but {len(completions)} completions")
    model, tokenizer = load_reward_model(model_dir)
    texts = [chat_text(tokenizer, p, c) for p, c in zip(prompts, completions, strict=True)]
    return score_texts(model, tokenizer, texts, batch_size)


def evaluate_pairs(model, tokenizer, rows, max_length: int | None, batch_size: int = 8) -> dict:
    """Accuracy (chosen scored above rejected; ties count as wrong) and mean margin on pairs
    no longer than `max_length` tokens (as in training)."""
    prompts = rows["prompt"] if "prompt" in rows.column_names else [None] * len(rows)
    chosen = [chat_text(tokenizer, p, c) for p, c in zip(prompts, rows["chosen"], strict=True)]
    rejected = [chat_text(tokenizer, p, r) for p, r in zip(prompts, rows["rejected"], strict=True)]
    if max_length is not None:
        ids = tokenizer(chosen + rejected, add_special_tokens=False)["input_ids"]
        fits = [
            max(len(a), len(b)) <= max_length
            for a, b in zip(ids[: len(chosen)], ids[len(chosen) :], strict=True)
        ]
        chosen = [t for t, ok in zip(chosen, fits, strict=True) if ok]
        rejected = [t for t, ok in zip(rejected, fits, strict=True) if ok]
    skipped = len(rows) - len(chosen)
    if not chosen:
        raise DataError(
            f"every held-out pair is longer than max_length={max_length}; raise max_length"
        )
    margins = [
        c - r
        for c, r in zip(
            score_texts(model, tokenizer, chosen, batch_size),
            score_texts(model, tokenizer, rejected, batch_size),
            strict=True,
        )
    ]
    return {
        "pairs": len(margins),
        "correct": sum(m > 0 for m in margins),
        "accuracy": sum(m > 0 for m in margins) / len(margins),
        "mean_margin": sum(margins) / len(margins),
        "skipped_too_long": skipped,
    }


# --- training -----------------------------------------------------------------------------------


def _tokenizer(model_args, training_args, conversational: bool):
    from ..tokenizer import open_tokenizer

    name = model_args.model_name_or_path
    tokenizer = open_tokenizer(model_args, training_args.trust_remote_code)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if conversational and not tokenizer.chat_template and not training_args.chat_template_path:
        raise ModelError(
            f"'{name}' has no chat template but the pairs are chats (as_chat turns text pairs "
            "into chats): use an instruct/chat model, set chat_template_path, or as_chat: false"
        )
    return tokenizer


def reward_trainer(recipe: RewardRecipe, pairs: Pairs):
    """A ready `RewardTrainer` (the model is loaded by TRL from its name, as `trl reward` does)."""
    from trl import RewardTrainer, get_peft_config, get_quantization_config

    from ..backends.transformers import check_gpu_packages, set_model_init_kwargs

    training_args, model_args = recipe.training, recipe.model
    check_gpu_packages(recipe, str(DEFAULT_RECIPE))
    conversational = isinstance(pairs.train[0]["chosen"], list)
    tokenizer = _tokenizer(model_args, training_args, conversational)
    set_model_init_kwargs(model_args, training_args)  # TRL loads it as GRPO's backend does
    try:
        trainer = RewardTrainer(
            model=model_args.model_name_or_path,
            args=training_args,
            train_dataset=pairs.train,
            processing_class=tokenizer,
            peft_config=get_peft_config(model_args),
            quantization_config=get_quantization_config(model_args),
        )
    except OSError as err:
        raise ModelError(hub_hint(model_args.model_name_or_path, err)) from err
    kept = len(trainer.train_dataset)
    if kept == 0:
        raise DataError(
            f"every training pair is longer than max_length={training_args.max_length} tokens; "
            "raise max_length"
        )
    if kept < len(pairs.train):
        logger.warning(
            "dropped %d of %d training pairs longer than max_length=%d; raise it to keep them",
            len(pairs.train) - kept,
            len(pairs.train),
            training_args.max_length,
        )
    return trainer


def _free(trainer) -> None:
    import gc

    import torch

    trainer.accelerator.free_memory()
    trainer.model = trainer.model_wrapped = None
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _merge_device(model_args) -> str:
    """Where to merge: the GPU that trained, or the CPU for a 4-bit base (its 16-bit weights may
    not fit the GPU that trained it)."""
    from ..generation import default_device

    quantized = model_args.load_in_4bit or model_args.load_in_8bit
    return "cpu" if quantized else default_device()


def merge_adapter(adapter_dir: Path, out_dir: Path, model_args, tokenizer, check_texts: list[str]):
    """Merge the LoRA adapter (and its trained score head) into the base model, save the merged
    model to `out_dir` and reload it as GRPO will; fails unless it scores like the adapter."""
    from peft import PeftModel
    from transformers import AutoModelForSequenceClassification
    from trl.trainer import reward_trainer

    device = _merge_device(model_args)
    # The base checkpoint has no score head yet: TRL's loader hides that expected warning.
    quiet = getattr(reward_trainer, "suppress_seqcls_warning", contextlib.nullcontext)
    with quiet():
        base = AutoModelForSequenceClassification.from_pretrained(
            model_args.model_name_or_path,
            num_labels=1,
            dtype=_torch_dtype(model_args.dtype),
            revision=model_args.model_revision,
        )
    base.config.get_text_config().pad_token_id = tokenizer.pad_token_id
    model = PeftModel.from_pretrained(base, str(adapter_dir)).to(device).eval()
    expected = score_texts(model, tokenizer, check_texts)
    merged = model.merge_and_unload()
    merged.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    del merged, model, base
    reloaded, _ = load_reward_model(out_dir, model_args.dtype, device)
    got = score_texts(reloaded, tokenizer, check_texts)
    tolerance = 1e-3 if model_args.dtype in ("float32", None) else 5e-2
    worst = max(abs(a - b) / max(1.0, abs(a)) for a, b in zip(expected, got, strict=True))
    if worst > tolerance:
        raise MergeCheckFailed(
            f"the merged reward model in {out_dir} does not score like the adapter in "
            f"{adapter_dir} (relative difference {worst:.3g} > {tolerance:g}); use the adapter "
            "folder's base model and check that peft saved the score head (lora_task_type: SEQ_CLS)"
        )
    logger.info("merged the adapter: scores match within %.3g (%d texts)", worst, len(got))
    return reloaded


def _ensure_tiny_model(recipe: RewardRecipe) -> None:
    """Build the tiny reward model on first use, when a smoke run asks for it where it lives."""
    path, home = Path(recipe.model.model_name_or_path), TINY_REWARD_MODEL_DIR
    if not recipe.script.smoke or path.resolve() != home.resolve():
        return
    if not (home / "config.json").is_file():
        from ..offline.tiny_model import build_tiny_reward_model
        from ..project import load as load_project

        logger.info("smoke: building the tiny offline reward model in %s", home)
        build_tiny_reward_model(home, load_project())


def print_evaluation(evaluation: dict, target: float, path: Path) -> None:
    """Print the evaluation; warn with what to do when the accuracy is below target."""
    print(
        f"held-out accuracy {evaluation['accuracy']:.1%} ({evaluation['correct']}/"
        f"{evaluation['pairs']} pairs score chosen above rejected), mean margin "
        f"{evaluation['mean_margin']:+.3f}; written to {path}",
        flush=True,
    )
    if evaluation["accuracy"] < target:
        logger.warning(
            "held-out accuracy %.1f%% is below the %.0f%% target: the model does not yet tell "
            "chosen from rejected reliably, and GRPO would learn its mistakes. Train longer "
            "(--num_train_epochs 2), add pairs or clean them (chosen must really be better), try "
            "a higher learning_rate, or start from a larger model_name_or_path",
            100 * evaluation["accuracy"],
            100 * target,
        )


def train_reward_model(argv: Sequence[str] | None = None) -> dict:
    """Parse, check the pairs, train, merge (LoRA), evaluate; returns the evaluation."""
    from ..training import last_checkpoint

    recipe = parse_reward_recipe(argv)
    script_args, training_args, model_args = recipe
    if not 0 <= script_args.accuracy_target <= 1:
        raise UserError(f"accuracy_target {script_args.accuracy_target} must be between 0 and 1")
    pairs = load_pairs(script_args, training_args.seed)
    _ensure_tiny_model(recipe)
    trainer = reward_trainer(recipe, pairs)
    output_dir = Path(training_args.output_dir)
    checkpoint = last_checkpoint(str(output_dir)) if script_args.resume else None
    if checkpoint:
        logger.info("resuming from %s", checkpoint)
    trainer.train(resume_from_checkpoint=checkpoint)
    tokenizer = trainer.processing_class
    peft = model_args.use_peft
    trainer.save_model(str(output_dir / ADAPTER_DIR) if peft else str(output_dir))
    trainer.accelerator.wait_for_everyone()
    steps, main_process = trainer.state.global_step, training_args.process_index == 0
    _free(trainer)
    if not main_process:
        return {}
    sample = pairs.test.select(range(min(4, len(pairs.test))))
    check = [chat_text(tokenizer, row.get("prompt"), row["chosen"]) for row in sample]
    if peft:
        model = merge_adapter(output_dir / ADAPTER_DIR, output_dir, model_args, tokenizer, check)
    else:
        model, _ = load_reward_model(output_dir, model_args.dtype, _merge_device(model_args))
    evaluation = evaluate_pairs(
        model, tokenizer, pairs.test, training_args.max_length,
        training_args.per_device_eval_batch_size,
    )  # fmt: skip
    evaluation |= {
        "target": script_args.accuracy_target,
        "passed": evaluation["accuracy"] >= script_args.accuracy_target,
        "held_out": pairs.held_out,
        "dataset": script_args.dataset_name,
        "base_model": model_args.model_name_or_path,
        "model_dir": str(output_dir),
        "adapter_merged": bool(peft),
        "train_pairs": len(pairs.train),
        "steps": steps,
    }
    path = output_dir / EVAL_FILE
    path.write_text(json.dumps(evaluation, indent=2) + "\n", encoding="utf-8")
    merged = f" (merged from its LoRA adapter, kept in {output_dir / ADAPTER_DIR})" if peft else ""
    print(f"reward model saved to {output_dir}{merged}", flush=True)
    print_evaluation(evaluation, script_args.accuracy_target, path)
    print(
        f"use it in GRPO: reward_model: {output_dir} in configs/grpo.yaml (or configs/local.yaml),"
        " and its weight in reward_model_weight",
        flush=True,
    )
    return evaluation


def main(argv: Sequence[str] | None = None) -> int:
    return run(train_reward_model, argv)
