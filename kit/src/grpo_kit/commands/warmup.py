"""`grpo warmup` (`make warmup`), the format warm-up: a short supervised fine-tune on a few dozen
completions in the task's format, so that GRPO starts from a model that writes it.

    grpo warmup                                       # the training prompts' ideal completions
    grpo warmup --completions data/my_answers.jsonl   # yours: {"prompt": ..., "completion": ...}
    grpo warmup --smoke                               # offline: tiny model, sample data

GRPO learns from differences within a group of completions; a model that never writes the
format the rewards read (a small or unfamiliar model: `grpo preflight` says so) gives every
completion the same zero, and no run can teach it. Practitioners teach the format first (Unsloth's
GRPO notebooks pre-finetune it; open-r1 starts from SFT-distilled models). This command does it
with TRL's `SFTTrainer` on the recipe's model, backend, LoRA settings and tier settings (device,
precision, optimizer): `--examples` training prompts (the recipe's data and system prompt,
rendered as training renders them), each with the task's ideal completion (`Task.ideal_completion`:
the format with the gold answer) or the completion your `--completions` file gives for it, for
`--epochs` epochs at `--learning-rate`. The loss is on the completions only.

Its batch is its own (`--batch-size`, default `stage_options.warmup_batch(examples)`: a quarter
of the examples, at most 8; gradient accumulation 1), so its step count follows from the number
of examples and epochs, never from GRPO's per_device_train_batch_size (32 examples at GRPO's
batch 16 were 6 steps, too few to learn the format). It stops before it collapses the policy:
when the token entropy of its completions (TRL's logged `entropy`) falls below `--min-entropy`
(default: the recipe's health_entropy_min x `stage_options.WARMUP_ENTROPY_MARGIN`; 0 turns it
off), since GRPO needs completions that differ (callbacks/entropy_floor.py).

It writes to `--output-dir` (default `<output_dir>-warmup`): the adapter (or the full model), its
`merged/` model, `warmup.jsonl` (the examples it trained on) and `run_record.json` (its `warmup`
entry: examples, epochs, learning rate, batch size, entropy floor, steps, the entropy first and
last logged, whether the floor stopped it; the health monitor of a GRPO run started from the
merged model reads it). GRPO then
starts from the merged folder: `make train ARGS="--model_name_or_path <dir>/merged"`, or
`model_name_or_path: <dir>/merged` in configs/local.yaml, or a `warmup: true` stage first in
configs/stages.yaml. `grpo preflight --model_name_or_path <dir>/merged` shows whether the
format rewards now vary within a group.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
from collections.abc import Sequence
from pathlib import Path

from ..errors import UserError
from ..recipe import Layer, parse_recipe
from ..runner import run
from ..stage_options import WARMUP, WARMUP_ENTROPY_MARGIN, warmup_batch

logger = logging.getLogger(__name__)

# The defaults (stage_options.py): completions trained on, epochs, learning rate.
EXAMPLES, EPOCHS, LEARNING_RATE = WARMUP["examples"], WARMUP["epochs"], WARMUP["learning_rate"]
EXAMPLES_FILE = "warmup.jsonl"
SUFFIX = "-warmup"  # the default output folder: the recipe's output_dir + this


def parse_args(argv: Sequence[str] | None):
    parser = argparse.ArgumentParser(
        prog="grpo warmup",
        description="Teach the task's format before GRPO: a short supervised fine-tune on "
        "completions in the format (the task's ideal completions, or yours).",
        epilog="Other options are recipe overrides (--model_name_or_path, --dataset_name, ...).",
    )
    parser.add_argument(
        "--completions",
        type=Path,
        help="JSONL of {prompt, completion} (prompt: the user message, or the recipe's "
        "prompt_column); default: the task's ideal completion of each training prompt",
    )
    parser.add_argument(
        "--examples", type=int, default=EXAMPLES, help=f"completions to train on ({EXAMPLES})"
    )
    parser.add_argument("--epochs", type=float, default=EPOCHS, help=f"default {EPOCHS:g}")
    parser.add_argument(
        "--learning-rate", type=float, default=LEARNING_RATE, help=f"default {LEARNING_RATE:g}"
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        help="completions per step (default: a quarter of the examples, 1 to 8; not the GRPO "
        "recipe's batch)",
    )
    parser.add_argument(
        "--min-entropy",
        type=float,
        help="stop when the completions' token entropy falls below this (default: the recipe's "
        f"health_entropy_min x {WARMUP_ENTROPY_MARGIN:g}; 0: never)",
    )
    parser.add_argument("--output-dir", type=Path, help=f"default: <output_dir>{SUFFIX}")
    parser.add_argument("--config", type=Path, default=None, help="the recipe")
    offline = parser.add_mutually_exclusive_group()
    offline.add_argument("--smoke", action="store_true", help="offline: tiny model, sample data")
    offline.add_argument("--trial", action="store_true", help="offline: tiny model, your data")
    args, overrides = parser.parse_known_args(argv)
    if args.examples < 1 or args.epochs <= 0 or args.learning_rate <= 0:
        parser.error("--examples, --epochs and --learning-rate must be above 0")
    if args.batch_size is not None and args.batch_size < 1:
        parser.error("--batch-size must be at least 1")
    if args.min_entropy is not None and not args.min_entropy >= 0:
        parser.error("--min-entropy must be a number >= 0 (0: no floor)")
    return args, overrides


def planned_steps(examples: int, batch_size: int, epochs: float) -> int:
    """The warm-up's optimizer steps, as the Trainer counts them (one process, gradient
    accumulation 1): ceil(epochs x batches per epoch)."""
    return math.ceil(epochs * math.ceil(examples / batch_size))


def min_entropy(args, recipe) -> float:
    """--min-entropy, else the health monitor's entropy minimum with the warm-up's margin."""
    if args.min_entropy is not None:
        return args.min_entropy
    return recipe.script.health_entropy_min * WARMUP_ENTROPY_MARGIN


def user_completions(path: Path, prompt_column: str) -> dict[str, str]:
    """{user message: completion} from a JSONL file, each line checked."""
    from ..task import message_text

    if not path.is_file():
        raise UserError(f"--completions {path}: no such file")
    found = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as err:
            raise UserError(f"{path} line {number}: not JSON ({err})") from err
        prompt = item.get("prompt", item.get(prompt_column)) if isinstance(item, dict) else None
        completion = item.get("completion") if isinstance(item, dict) else None
        if prompt is None or not isinstance(completion, str) or not completion.strip():
            raise UserError(
                f'{path} line {number}: needs a prompt ("prompt" or "{prompt_column}") and '
                'a non-empty "completion" text'
            )
        found[message_text(prompt)] = completion
    if not found:
        raise UserError(f"{path}: no completions in it")
    return found


def examples(recipe, tokenizer, count: int, completions: Path | None = None) -> list[dict]:
    """SFT rows {prompt: the training prompt's messages, completion: [assistant message],
    chat_template_kwargs}: the first `count` training prompts with their completion."""
    from .. import data, heldout
    from ..task import message_text

    script, task_args, task = recipe.script, recipe.task, recipe.project.task
    if task.environments is not None:
        raise UserError(
            f"the {task.name} task's answers are tool-calling rollouts: the warm-up trains text "
            "completions; show a worked call in system_prompt instead"
        )
    rows = heldout.training_rows(script, task_args, task)  # never evaluate's rows
    kwargs = recipe.training.chat_template_kwargs or {}
    rows, _ = data.prepare(rows, tokenizer, script, task_args, task, kwargs)
    given = user_completions(completions, script.prompt_column) if completions else None
    found = []
    for row in rows:
        if len(found) >= count:
            break
        if given is None:
            answer = task.ideal_completion(dict(row), task_args)
        else:
            answer = given.get(message_text(row["prompt"]))
            if answer is None:
                continue
        found.append(
            {"prompt": row["prompt"], "completion": [{"role": "assistant", "content": answer}],
             "chat_template_kwargs": kwargs}
        )  # fmt: skip
    if not found:
        raise UserError(
            f"--completions {completions}: none of its prompts is a training prompt of "
            f"{script.dataset_name} (they are matched on the user message)"
        )
    return found


def sft_config(recipe, out: Path, args, batch_size: int):
    """TRL's SFTConfig with the recipe's tier settings (device, precision, optimizer, seed,
    gradient checkpointing) and the warm-up's own epochs, learning rate and batch (`batch_size`,
    gradient accumulation 1: GRPO's batch is no measure of a few dozen SFT examples)."""
    from trl import SFTConfig

    training = recipe.training
    same = ("use_cpu", "bf16", "fp16", "seed", "optim", "gradient_checkpointing",
            "activation_checkpointing", "model_init_kwargs",
            "trust_remote_code", "dataloader_num_workers")  # fmt: skip
    values = {name: getattr(training, name) for name in same if hasattr(training, name)}
    return SFTConfig(
        output_dir=str(out),
        num_train_epochs=args.epochs,
        learning_rate=args.learning_rate,
        per_device_train_batch_size=batch_size,
        gradient_accumulation_steps=1,
        lr_scheduler_type="constant",
        warmup_steps=0,
        max_length=recipe.script.max_prompt_tokens + training.max_completion_length,
        completion_only_loss=True,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        **values,
    )


def warm_up(argv: Sequence[str] | None = None, *, stage: Layer | None = None, project=None) -> Path:
    """Train the warm-up and merge it; returns the merged folder GRPO starts from. `stage`: one
    more recipe layer (a stage's keys, commands/stages.py)."""
    from .. import backends, heldout
    from ..callbacks.entropy_floor import EntropyFloor
    from ..callbacks.run_record import RunRecord
    from ..generation import check_model, configure_cpu_threads
    from ..preflight import release
    from ..project import load as load_project
    from ..training import load_tokenizer

    args, overrides = parse_args(argv)
    project = project or load_project()
    recipe_argv = [*(["--config", str(args.config)] if args.config else []), *overrides]
    recipe_argv += ["--smoke"] if args.smoke else ["--trial"] if args.trial else []
    recipe = parse_recipe(recipe_argv, extra=stage, project=project)
    training = recipe.training
    out = args.output_dir or Path(f"{training.output_dir.rstrip('/')}{SUFFIX}")
    training.output_dir = str(out)  # where the run record goes
    backend = backends.load(project.backend)
    backend.check_gpu_packages(recipe)
    check_model(recipe.model.model_name_or_path, "--model_name_or_path")  # a folder: one line
    tokenizer = load_tokenizer(recipe)  # the tiny offline model built first for --smoke/--trial
    rows = examples(recipe, tokenizer, args.examples, args.completions)
    out.mkdir(parents=True, exist_ok=True)
    with (out / EXAMPLES_FILE).open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    if training.use_cpu:
        configure_cpu_threads()
    batch = args.batch_size or warmup_batch(len(rows))
    floor = min_entropy(args, recipe)
    record = RunRecord(recipe, list(argv or []))
    record.data["command"] = [*record.data["command"][:3], "warmup", *(argv or [])]
    source = str(args.completions or "the task's ideal completions")
    record.data["warmup"] = {
        "examples": len(rows), "epochs": args.epochs, "learning_rate": args.learning_rate,
        "completions": source, "batch_size": batch, "min_entropy": floor,
        "planned_steps": planned_steps(len(rows), batch, args.epochs),
    }  # fmt: skip
    split = heldout.split_rows(recipe.script, recipe.task, project.task)
    record.data["held_out"] = split.record()  # evaluate's rows: not among the examples
    logger.info(
        "warm-up: %d completions x %g epochs at batch %d (%d steps) on %s (lr %g, stops below "
        "entropy %g) -> %s",
        len(rows), args.epochs, batch, record.data["warmup"]["planned_steps"],
        recipe.model.model_name_or_path, args.learning_rate, floor, out,
    )  # fmt: skip
    trainer = sft_trainer(recipe, tokenizer, rows, out, args, batch)
    stopper = EntropyFloor(floor)
    trainer.add_callback(stopper)
    trainer.train()
    trainer.save_model(str(out))
    tokenizer.save_pretrained(str(out))
    state = trainer.state
    losses = [entry["loss"] for entry in state.log_history if "loss" in entry]
    record.data["warmup"].update(
        loss={"first": losses[0], "last": losses[-1]} if losses else {},
        steps=state.global_step,
        entropy={"first": stopper.first, "last": stopper.last},
        stopped_early=stopper.stopped_at is not None,
    )
    merged = out
    if recipe.model.use_peft:  # merged as `make merge` merges: the adapter on the full base
        del trainer
        release()
        merged = out / "merged"
        model, merge_tokenizer = backend.load_for_merge(str(out), recipe.model.dtype or "auto")
        backend.save_merged(model, merge_tokenizer, str(merged))
    record.finish(state, "finished")
    first = f"{losses[0]:.3f} -> {losses[-1]:.3f}" if losses else "n/a"
    stopped = (
        f" (stopped at step {stopper.stopped_at} of {record.data['warmup']['planned_steps']}: "
        f"token entropy {stopper.last:.3g} < --min-entropy {floor:g})"
        if stopper.stopped_at is not None
        else ""
    )
    print(
        f"warm-up done: {len(rows)} completions, {state.global_step} steps at batch {batch}"
        f"{stopped}, loss {first}; "
        f"the model is in {merged}. Check the format's signal with `grpo preflight "
        f"--model_name_or_path {merged}`, then train from it: make train "
        f'ARGS="--model_name_or_path {merged}" (or model_name_or_path: {merged} in '
        "configs/local.yaml)",
        flush=True,
    )
    return merged


def sft_trainer(recipe, tokenizer, rows: list[dict], out: Path, args, batch_size: int):
    """TRL's SFTTrainer on the recipe's model and LoRA, as the backend builds them for GRPO,
    at the warm-up's own `batch_size`."""
    from datasets import Dataset
    from trl import SFTTrainer

    from .. import backends

    backend = backends.load(recipe.project.backend)
    model = backend.trainer_model(recipe)  # sets recipe.training.model_init_kwargs (transformers)
    config = sft_config(recipe, out, args, batch_size)
    return SFTTrainer(
        args=config, train_dataset=Dataset.from_list(rows), processing_class=tokenizer, **model
    )


def main(argv: Sequence[str] | None = None) -> int:
    return run(warm_up, argv)


if __name__ == "__main__":
    import sys

    sys.exit(main())
