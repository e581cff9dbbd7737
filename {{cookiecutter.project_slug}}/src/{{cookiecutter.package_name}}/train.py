"""Train with GRPO.

    python -m {{ cookiecutter.package_name }}.train --config configs/grpo.yaml

Order matters for fast failure: the recipe is parsed, the data is loaded and checked, and the
rewards are resolved before the (slow) model load. A run resumes from the last checkpoint in
`output_dir` unless `--no-resume` is given; SIGINT/SIGTERM save a checkpoint and stop (exit
130/143), so the same command continues the run. While training, the health monitor warns on
what the logs show (`output_dir/health.jsonl`); at the end the adapter (or full model), the
tokenizer, `trainer_state.json` and `run_record.json` are in `output_dir`.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
from collections.abc import Sequence

from . import (
    data,
    modeling,  # first: the Unsloth backend patches trl/transformers on import
    rewards,
)
from .config import parse_recipe
from .errors import Interrupted, UserError, run
from .tasks import TASK

logger = logging.getLogger(__spec__.name)  # the real name also under `python -m`


def last_checkpoint(output_dir: str) -> str | None:
    """The newest `checkpoint-*` folder in `output_dir`, if any."""
    from pathlib import Path

    from transformers.trainer_utils import get_last_checkpoint

    if not Path(output_dir).is_dir():
        return None
    return get_last_checkpoint(output_dir)


def check_reward_weights(
    names: list[str], weights: list[float] | None, reward_model: str | None = None
) -> None:
    expected = len(names) + (1 if reward_model else 0)
    if weights is not None and len(weights) != expected:
        listed = ", ".join([*names, *([f"reward model {reward_model}"] if reward_model else [])])
        raise UserError(
            f"reward_weights has {len(weights)} values but there are {expected} rewards: give "
            f"one weight per reward, in order ({listed})"
        )


def check_tool_template(tokenizer, name: str) -> None:
    """TRL's own checks of a chat template for tool calling, before the model loads, as one line:
    it must render a whole tool-calling exchange, and TRL must know how to parse its calls."""
    import copy

    from trl.chat_template_utils import add_response_schema, supports_tool_calling

    problem = None
    if not supports_tool_calling(tokenizer):
        problem = "cannot render a tool-calling conversation"
    else:
        try:
            add_response_schema(copy.copy(tokenizer))
        except ValueError:
            if getattr(tokenizer, "response_template", None) is None:
                problem = "is not one TRL can parse tool calls from"
    if problem:
        raise UserError(
            f"the chat template of '{name}' {problem}: the tools task needs a model whose "
            "template TRL 1.16 trains tool calls with (the README lists the catalog's)"
        )


def expose_context_length(config) -> None:
    """TRL 1.16's tool loop reads `model.config.max_position_embeddings` (its context ceiling)
    unless the processing class is a multimodal processor; a vision-language checkpoint trained
    on text (Qwen3.5, Gemma 4) keeps it in its text config only, so the loop would fail with an
    AttributeError on the first tool call. Copy it up."""
    text = config.get_text_config()
    if text is not config and "max_position_embeddings" not in config.to_dict():
        limit = getattr(text, "max_position_embeddings", None)
        if limit is not None:
            config.max_position_embeddings = limit


def configure_trackers(training_args) -> None:
    """Trackers run offline unless told otherwise: wandb without an API key logs to ./wandb
    (`wandb sync` uploads it later); trackio writes its local database by default."""
    wandb = "wandb" in (training_args.report_to or [])
    if wandb and not os.environ.get("WANDB_API_KEY") and "WANDB_MODE" not in os.environ:
        os.environ["WANDB_MODE"] = "offline"
        logger.info("wandb: offline (no WANDB_API_KEY); upload later with `wandb sync`")


def callbacks_for(trainer, recipe, funcs: list) -> list:
    """The health monitor, and the adaptive reward weights when the recipe asks for them
    (`funcs`: the resolved reward functions, in the recipe's order)."""
    from .training.adaptive_weights import AdaptiveRewardWeights, Policy
    from .training.health import HealthMonitor, limits_from

    script_args, training_args = recipe.script, recipe.training
    correctness = TASK.metrics[0][1] if TASK.metrics else None
    limits = limits_from(
        script_args,
        beta=training_args.beta,
        max_completion_length=training_args.max_completion_length,
        max_tool_calling_iterations=training_args.max_tool_calling_iterations,
        correctness=correctness if correctness in script_args.reward_funcs else None,
    )
    if script_args.smoke:  # the offline run chose its short completions: clipping is expected
        limits = dataclasses.replace(limits, clipped_max=1.0)
    output_dir = training_args.output_dir
    found = [HealthMonitor(limits, output_dir, script_args.health_stop_on_fatal)]
    if script_args.adaptive_reward_weights:
        names = [f.__name__ for f in funcs]
        ranges = [getattr(f, "reward_range", None) for f in funcs]
        if script_args.reward_model:
            names.append(script_args.reward_model.rstrip("/").split("/")[-1])
            ranges.append(None)
        policy = Policy(
            low=script_args.adaptive_low,
            high=script_args.adaptive_high,
            factor=script_args.adaptive_factor,
            min_scale=script_args.adaptive_min_scale,
            max_scale=script_args.adaptive_max_scale,
        )
        found.append(AdaptiveRewardWeights(trainer, names, ranges, policy, output_dir))
    return found


def build_trainer(recipe, record=None):
    """Everything up to a ready `GRPOTrainer` (also used by tests and the learning check)."""
    from trl import GRPOTrainer

    from .training.health import watch_group_spread

    script_args, task_args, training_args, model_args = (
        recipe.script, recipe.task, recipe.training, recipe.model,
    )  # fmt: skip
    modeling.check_gpu_packages(recipe)
    settings = recipe.reward_settings()  # checked here, before the data and the model load
    funcs = rewards.resolve(script_args.reward_funcs, settings)
    reward_funcs = [
        watch_group_spread(func, training_args.num_generations)  # per-group spread, logged
        for func in funcs
    ]
    rows = data.load_training_rows(script_args, task_args)
    check_reward_weights(
        script_args.reward_funcs, training_args.reward_weights, script_args.reward_model
    )
    if script_args.reward_model:
        reward_funcs = [*reward_funcs, script_args.reward_model]  # TRL loads it (num_labels=1)
    tokenizer = modeling.load_tokenizer(model_args, training_args.trust_remote_code)
    kwargs = training_args.chat_template_kwargs  # TRL renders the prompts with them too
    rows, stats = data.prepare(rows, tokenizer, script_args, task_args, kwargs)
    logger.info("training on %d prompts (%d dropped as too long)", stats.kept, stats.dropped)
    if record is not None:
        record.start(script_args, rows, stats, settings)
    agent = {}
    if TASK.environments is not None:  # an agent task: TRL runs the environments' tools
        agent = {"environment_factory": TASK.environments(task_args)}
        check_tool_template(tokenizer, model_args.model_name_or_path)
    try:
        trainer = GRPOTrainer(
            reward_funcs=reward_funcs,
            args=training_args,
            train_dataset=rows,
            processing_class=tokenizer,
            **agent,
            **modeling.trainer_model(recipe),
        )
    except OSError as err:
        name = model_args.model_name_or_path
        if script_args.reward_model and script_args.reward_model in str(err):
            name = script_args.reward_model
        raise modeling.ModelError(modeling.hub_hint(name, err)) from err
    modeling.check_trainer(trainer)
    if agent:
        expose_context_length(trainer.model.config)
    for callback in callbacks_for(trainer, recipe, funcs):
        trainer.add_callback(callback)
    return trainer


def end(trainer) -> None:
    """Close the trackers and the process group at the end of a run, as TRL's own script does
    (`Trainer.end`, transformers >= 5.18; the Unsloth stack's transformers has none)."""
    finish = getattr(trainer, "end", None)
    if callable(finish):
        finish()


def train(argv: Sequence[str] | None = None, stage=None, prepare=None):
    """Parse the recipe (with a stage's layer, from training/stages.py), train, save; returns
    the trainer. `prepare(trainer)` runs before training (the smoke run's steering)."""
    from .training.health import HealthMonitor
    from .training.run_record import RunRecord
    from .training.stopping import StopOnSignal

    argv = list(sys.argv[1:] if argv is None else argv)
    recipe = parse_recipe(argv, extra=stage)
    training_args = recipe.training
    configure_trackers(training_args)
    record = RunRecord(recipe, argv, main_process=training_args.process_index == 0)
    if recipe.script.smoke:
        logger.info(
            "offline run (--smoke/--trial): %s on the CPU for %d steps, into %s; it proves the "
            "data, prompts and rewards run end to end, it does not train a useful model",
            recipe.model.model_name_or_path,
            training_args.max_steps,
            training_args.output_dir,
        )
    trainer = build_trainer(recipe, record)
    if prepare is not None:
        prepare(trainer)
    checkpoint = last_checkpoint(training_args.output_dir) if recipe.script.resume else None
    logger.info("training processes: %d", training_args.world_size)
    if checkpoint:
        logger.info("resuming from %s", checkpoint)
    stopper = StopOnSignal()
    trainer.add_callback(stopper)
    trainer.train(resume_from_checkpoint=checkpoint)
    if stopper.received:
        record.finish(trainer.state, f"stopped by {stopper.received.name}", checkpoint)
        logger.warning(
            "stopped at step %d; the checkpoint is in %s: run the same command to resume",
            trainer.state.global_step,
            training_args.output_dir,
        )
        end(trainer)
        raise Interrupted(stopper.exit_code)
    trainer.save_model(training_args.output_dir)
    trainer.save_state()
    monitor = next(c for c in trainer.callback_handler.callbacks if isinstance(c, HealthMonitor))
    fatal = sorted(c for c, f in monitor.active.items() if f.severity == "fatal")
    stopped = recipe.script.health_stop_on_fatal and fatal
    status = f"stopped by the health check ({', '.join(fatal)})" if stopped else "finished"
    record.finish(trainer.state, status, checkpoint)
    logger.info("saved the trained model to %s", training_args.output_dir)
    end(trainer)
    return trainer


def main(argv: Sequence[str] | None = None) -> int:
    return run(train, argv)


if __name__ == "__main__":
    sys.exit(main())
