"""Train with GRPO.

    python -m {{ cookiecutter.package_name }}.train --config configs/grpo.yaml

Order matters for fast failure: the recipe is parsed, the data is loaded and checked, and the
rewards are resolved before the (slow) model load. A run resumes from the last checkpoint in
`output_dir` unless `--no-resume` is given; the final adapter (or full model) and tokenizer are
saved to `output_dir`.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

from . import (
    data,
    modeling,  # first: the Unsloth backend patches trl/transformers on import
    rewards,
)
from .config import parse_recipe
from .errors import UserError, run
from .tasks import TASK

logger = logging.getLogger(__spec__.name)  # the real name also under `python -m`


def last_checkpoint(output_dir: str) -> str | None:
    """The newest `checkpoint-*` folder in `output_dir`, if any."""
    from pathlib import Path

    from transformers.trainer_utils import get_last_checkpoint

    if not Path(output_dir).is_dir():
        return None
    return get_last_checkpoint(output_dir)


def check_reward_weights(names: list[str], weights: list[float] | None) -> None:
    if weights is not None and len(weights) != len(names):
        raise UserError(
            f"reward_weights has {len(weights)} values but reward_funcs has {len(names)}: "
            f"give one weight per reward ({', '.join(names)})"
        )


def build_trainer(recipe):
    """Everything up to a ready `GRPOTrainer` (also used by tests and the learning check)."""
    from trl import GRPOTrainer

    script_args, task_args, _, training_args, model_args = recipe
    modeling.check_gpu_packages(recipe)
    TASK.configure(task_args)
    rows = data.load_training_rows(script_args, task_args)
    reward_funcs = rewards.resolve(script_args.reward_funcs)
    check_reward_weights(script_args.reward_funcs, training_args.reward_weights)
    rewards.configure(max_completion_length=training_args.max_completion_length)
    tokenizer = modeling.load_tokenizer(model_args, training_args.trust_remote_code)
    rows, stats = data.prepare(rows, tokenizer, script_args, task_args)
    logger.info("training on %d prompts (%d dropped as too long)", stats.kept, stats.dropped)
    try:
        trainer = GRPOTrainer(
            reward_funcs=reward_funcs,
            args=training_args,
            train_dataset=rows,
            processing_class=tokenizer,
            **modeling.trainer_model(recipe),
        )
    except OSError as err:
        raise modeling.ModelError(modeling.hub_hint(model_args.model_name_or_path, err)) from err
    modeling.check_trainer(trainer)
    return trainer


def train(argv: Sequence[str] | None = None):
    """Parse the recipe, train, save; returns the trainer."""
    recipe = parse_recipe(argv)
    trainer = build_trainer(recipe)
    training_args = recipe.training
    checkpoint = last_checkpoint(training_args.output_dir) if recipe.script.resume else None
    logger.info("training processes: %d", training_args.world_size)
    if checkpoint:
        logger.info("resuming from %s", checkpoint)
    trainer.train(resume_from_checkpoint=checkpoint)
    trainer.save_model(training_args.output_dir)
    logger.info("saved the trained model to %s", training_args.output_dir)
    return trainer


def main(argv: Sequence[str] | None = None) -> int:
    return run(train, argv)


if __name__ == "__main__":
    sys.exit(main())
