"""Train with GRPO, your way: `grpo eject train` copies this file into your package and declares
it in pyproject.toml (`[tool.grpo.scripts] train = "<package>.train"`); from then on `grpo
train` (make train), `grpo smoke`, `stages`, `launch` and `try` build their trainer with
`build_trainer` below, the one function the kit calls (grpo_kit.project.TrainScript). Without
it they build the kit's own, the same trainer (grpo_kit.training.build_trainer).

    grpo train --config configs/grpo.yaml [--max_steps 10 ...]

Yours to edit; it uses only the kit's public API (`grpo docs api`). The recipe
(configs/grpo.yaml, then configs/local.yaml, then the command line) holds TRL's GRPOConfig and
ModelConfig fields and the kit's; the task (task.py) turns data rows into chat prompts and names its
rewards (rewards.py). grpo_kit does the checking around TRL: the rewards and data are checked before
the model loads, a health monitor watches the logs, SIGINT/SIGTERM save a checkpoint and the same
command resumes.
"""

from __future__ import annotations

import sys

from grpo_kit import training


def build_trainer(recipe, record=None):
    """TRL's GRPOTrainer for the recipe: the task's rewards and prompts, the model (with LoRA)."""
    from trl import GRPOTrainer  # here: with the Unsloth backend, unsloth must load before trl

    rewards = training.reward_functions(recipe)  # reward_funcs, guarded and watched per group
    tokenizer = training.load_tokenizer(recipe)
    prompts = training.training_prompts(recipe, tokenizer, record)  # checked rows, chat prompts
    trainer = GRPOTrainer(
        args=recipe.training,  # TRL's GRPOConfig: every training field of the recipe
        reward_funcs=rewards,
        train_dataset=prompts,
        eval_dataset=training.evaluation_prompts(recipe, tokenizer, record),  # None: no eval
        processing_class=tokenizer,
        **training.model_arguments(recipe),  # model (a name, or Unsloth's) and peft_config
        **training.agent_arguments(recipe),  # the tools task: environment_factory
    )
    training.add_callbacks(trainer, recipe, rewards)  # health, adaptive weights, the task's
    return trainer


def main(argv=None) -> int:
    """Parse the recipe, build the trainer, train (resuming), save, write the run record."""
    return training.main(build_trainer, argv)


if __name__ == "__main__":
    sys.exit(main())
