"""Training with GRPO: the kit's trainer (`build_trainer`, what `grpo train` builds), the steps it
composes (a project's own train script, after `grpo eject train`, composes the same ones), and
the run around it (`run`).

Order matters for fast failure: the recipe is parsed, the rewards are resolved and the data is
loaded and checked before the (slow) model load. Before it, the signal preflight (preflight.py,
`preflight_first`) samples the model on a few prompts and refuses a run whose rewards vary within
no group (recipe fields `preflight`, `preflight_refuse`, `preflight_prompts`). A run resumes
from the last checkpoint in `output_dir` unless `--no-resume` is given; SIGINT/SIGTERM save a
checkpoint and stop (exit 130/143), so the same command continues the run, with the callbacks'
state of the checkpoint (adaptive reward weights, active health findings). While training, the
health monitor warns on what the logs show (`output_dir/health.jsonl`); with `eval_strategy:
steps`, `eval_prompts` held-out prompts are scored every `eval_steps` (`evaluation_prompts`). At
the end the adapter (or full model), the tokenizer, `trainer_state.json` and `run_record.json`
are in `output_dir`; a run the health monitor stopped on NaN weights saves no model (its last
good checkpoint stays).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
from collections.abc import Callable, Sequence

from . import backends, data, heldout, rewards
from .errors import Interrupted, ModelError, UserError, hub_hint
from .recipe import Layer, Recipe, offline_data_note, parse_recipe
from .text import guard_trl_sample_print

logger = logging.getLogger(__name__)

# The trainers of a distributed process, kept until `exit_now`: freeing one frees its DDP reducer,
# whose teardown can hang (see exit_now), so nothing may drop the last reference before it.
_UNTIL_EXIT: list = []

BuildTrainer = Callable[..., object]  # (recipe, record=None) -> GRPOTrainer

__all__ = [
    "BuildTrainer",
    "add_callbacks",
    "agent_arguments",
    "build_trainer",
    "evaluation_prompts",
    "load_tokenizer",
    "main",
    "model_arguments",
    "reward_functions",
    "run",
    "training_prompts",
]


# --- the kit's trainer, and the steps it composes ---------------------------------------------


def build_trainer(recipe: Recipe, record=None):
    """TRL's GRPOTrainer for the recipe: the task's rewards and prompts, the model (with LoRA).
    What `grpo train` builds unless the project declares a train script of its own
    (`grpo eject train` writes one that starts as this function)."""
    from trl import GRPOTrainer  # here: with the Unsloth backend, unsloth must load before trl

    funcs = reward_functions(recipe)  # reward_funcs, guarded and watched per group
    tokenizer = load_tokenizer(recipe)
    trainer = GRPOTrainer(
        args=recipe.training,  # TRL's GRPOConfig: every training field of the recipe
        reward_funcs=funcs,
        train_dataset=training_prompts(recipe, tokenizer, record),  # checked rows, chat prompts
        eval_dataset=evaluation_prompts(recipe, tokenizer, record),  # None: no eval
        processing_class=tokenizer,
        **model_arguments(recipe),  # model (a name, or Unsloth's) and peft_config
        **agent_arguments(recipe),  # the tools task: environment_factory
    )
    add_callbacks(trainer, recipe, funcs)  # health, adaptive weights, the task's (curriculum)
    return trainer


def reward_functions(recipe: Recipe) -> list:
    """The recipe's `reward_funcs` from the task's reward table, with their settings bound and
    each one's per-group spread logged (`rewards/<name>/frac_zero_std`); the reward model's name
    last when the recipe has one (TRL loads it). Checked against `reward_weights`."""
    from .callbacks.health import watch_group_spread

    script_args, training_args = recipe.script, recipe.training
    funcs = rewards.resolve(
        script_args.reward_funcs, recipe.project.task.reward_table, recipe.reward_settings()
    )
    check_reward_weights(
        script_args.reward_funcs, training_args.reward_weights, script_args.reward_model
    )
    watched = [watch_group_spread(func, training_args.num_generations) for func in funcs]
    return [*watched, script_args.reward_model] if script_args.reward_model else watched


def load_tokenizer(recipe: Recipe):
    """The model's tokenizer, ready for GRPO (pad token, left padding, a chat template); for an
    agent task, checked with TRL's own tool-calling checks."""
    from .tokenizer import load_tokenizer as load

    ensure_offline_model(recipe)
    tokenizer = load(recipe.model, recipe.training.trust_remote_code)
    if recipe.project.task.environments is not None:
        check_tool_template(tokenizer, recipe.model.model_name_or_path)
    return tokenizer


def training_prompts(recipe: Recipe, tokenizer, record=None):
    """The training rows, checked (file, row and column named on a problem), as chat prompts
    rendered as TRL will render them; prompts over `max_prompt_tokens` dropped and counted.
    Evaluate's held-out rows are never among them (`split_rows`); the run record says which
    rows those are."""
    task = recipe.project.task
    rows, _, _, held_out = _split(recipe)
    kwargs = recipe.training.chat_template_kwargs  # TRL renders the prompts with them too
    rows, stats = data.prepare(rows, tokenizer, recipe.script, recipe.task, task, kwargs)
    data.refuse_unreadable_golds(rows, recipe)  # most gold answers unreadable: no signal
    logger.info("training on %d prompts (%d dropped as too long)", stats.kept, stats.dropped)
    if record is not None:
        record.start(recipe.script, rows, stats, recipe.reward_settings(), held_out)
    return rows


def evaluation_prompts(recipe: Recipe, tokenizer, record=None):
    """GRPOTrainer's `eval_dataset`: `eval_prompts` held-out prompts, prepared like the training
    ones, when the recipe evaluates during training (TRL's `eval_strategy`: steps or epoch);
    None when it does not. Every `eval_steps` TRL samples `num_generations_eval` completions
    per prompt, scores them with the recipe's rewards (the task's metric among them) and logs
    `eval_reward` and `eval_rewards/<name>/mean` beside the training metrics."""
    if not evaluates(recipe):
        return None
    held, source = split_rows(recipe)[1:]
    task = recipe.project.task
    kwargs = recipe.training.chat_template_kwargs
    rows, stats = data.prepare(held, tokenizer, recipe.script, recipe.task, task, kwargs)
    source = {**source, "prompts": stats.kept, "dropped_too_long": stats.dropped}
    logger.info(
        "evaluating during training on %d held-out prompts (%s)", stats.kept, source["from"]
    )
    metric = task.correctness
    if metric and metric not in recipe.script.reward_funcs:
        logger.warning(
            "evaluation during training scores the recipe's rewards: the task's metric %s is "
            "not among reward_funcs, so only they (and eval_reward) are logged for the "
            "held-out prompts",
            metric,
        )
    if record is not None:
        record.evaluation(source)
    return rows


def evaluates(recipe: Recipe) -> bool:
    """Whether the recipe evaluates during training (TRL's eval_strategy is not "no")."""
    return getattr(recipe.training, "eval_strategy", "no") != "no"


def split_rows(recipe: Recipe):
    """(training rows, held-out rows or None, where the held-out rows come from or None).

    The training rows never include evaluate's held-out rows (`heldout.split_rows`: the
    dataset's own test split, else rows held out of the data by a hash of each problem). Without
    evaluation during training, the held-out rows are None; with it, the first `eval_prompts`
    of evaluate's held-out rows. Rows are checked as training rows are."""
    return _split(recipe)[:3]


def _split(recipe: Recipe):
    """`split_rows`, and what the run record keeps of evaluate's held-out rows."""
    script, task_args, task = recipe.script, recipe.task, recipe.project.task
    found = heldout.split_rows(script, task_args, task)
    if not evaluates(recipe):
        return found.train, None, None, found.record()
    wanted = script.eval_prompts
    if wanted < 1:
        raise UserError(
            f"eval_prompts is {wanted}: evaluating during training (eval_strategy "
            f"{recipe.training.eval_strategy}) needs at least 1 held-out prompt; or set "
            "eval_strategy: no"
        )
    if found.held is None:  # the dataset's own test split
        whole = dataclasses.replace(script, max_train_samples=None)
        held = data.load_training_rows(whole, task_args, task, script.dataset_test_split)
        held = held.select(range(min(wanted, len(held))))
        where = f"{script.dataset_name}[{script.dataset_test_split}]"
        source = {"from": where, "held_out_of_training_data": False}
        return found.train, held, source, found.record()
    if len(found.held) == 0:
        raise UserError(
            f"{script.dataset_name} has {found.total} row(s): none can be held out for "
            "evaluation during training; add rows, or set eval_strategy: no"
        )
    chosen = list(range(min(wanted, len(found.held))))
    if wanted > len(found.held):
        logger.warning(
            "eval_prompts is %d but %d rows are held out of %s: evaluating on those %d",
            wanted, len(found.held), script.dataset_name, len(found.held),
        )  # fmt: skip
    source = {
        "from": f"the first {len(chosen)} held-out rows of {found.source}",
        "held_out_of_training_data": True,
        "rows": [found.held_rows[i] for i in chosen],
    }
    return found.train, found.held.select(chosen), source, found.record()


def model_arguments(recipe: Recipe) -> dict:
    """GRPOTrainer's model arguments for the project's backend: the model (its name, which TRL
    loads with the recipe's dtype and quantization, or Unsloth's loaded model) and the LoRA
    config (`peft_config`; None: full fine-tuning). GPU-only settings are checked first."""
    backend = backends.load(recipe.project.backend)
    backend.check_gpu_packages(recipe)
    ensure_offline_model(recipe)
    return backend.trainer_model(recipe)


def agent_arguments(recipe: Recipe) -> dict:
    """For an agent task, TRL's `environment_factory` (the task's environments); else nothing."""
    task = recipe.project.task
    if task.environments is None:
        return {}
    return {"environment_factory": task.environments(recipe.task)}


def add_callbacks(trainer, recipe: Recipe, funcs: list) -> None:
    """The health monitor, (when the recipe asks) the adaptive reward weights and the task's own
    callbacks (`Task.callbacks`: a procedural task's curriculum); the backend's check of the
    trainer it got; for an agent task, the context length TRL's tool loop reads."""
    backends.load(recipe.project.backend).check_trainer(trainer)
    if recipe.project.task.environments is not None:
        expose_context_length(trainer.model.config)
    for callback in callbacks_for(trainer, recipe, funcs):
        trainer.add_callback(callback)


def ensure_offline_model(recipe: Recipe) -> None:
    """An offline run's tiny model, built on first use (outputs/tiny-model)."""
    if recipe.script.smoke:
        from .offline.tiny_model import ensure_tiny_model

        ensure_tiny_model(recipe)


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
            f"template TRL {trl_version()} trains tool calls with (the README lists the catalog's)"
        )


def trl_version() -> str:
    """The installed TRL's version, major.minor (what a message about TRL's behaviour names)."""
    from importlib.metadata import version

    return ".".join(version("trl").split(".")[:2])


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
    """The health monitor, the adaptive reward weights when the recipe asks for them (`funcs`:
    the resolved reward functions, in the recipe's order), and the task's own callbacks
    (`Task.callbacks`)."""
    from .callbacks.adaptive_weights import AdaptiveRewardWeights, Policy
    from .callbacks.health import HealthMonitor, limits_from, warmup_origin
    from .generation import run_record_of

    script_args, training_args = recipe.script, recipe.training
    correctness = recipe.project.task.correctness
    limits = limits_from(
        script_args,
        beta=training_args.beta,
        max_completion_length=training_args.max_completion_length,
        max_tool_calling_iterations=training_args.max_tool_calling_iterations,
        correctness=correctness if correctness in script_args.reward_funcs else None,
        fp16=training_args.fp16,
        warmup=warmup_origin(run_record_of(recipe.model.model_name_or_path)),
    )
    output_dir = training_args.output_dir
    found = [HealthMonitor(limits, output_dir, script_args.health_stop_on_fatal)]
    if script_args.adaptive_reward_weights:
        names = [f.__name__ if callable(f) else str(f).rstrip("/").split("/")[-1] for f in funcs]
        ranges = [getattr(f, "reward_range", None) for f in funcs]
        policy = Policy(
            low=script_args.adaptive_low,
            high=script_args.adaptive_high,
            factor=script_args.adaptive_factor,
            min_scale=script_args.adaptive_min_scale,
            max_scale=script_args.adaptive_max_scale,
        )
        found.append(AdaptiveRewardWeights(trainer, names, ranges, policy, output_dir))
    return [*found, *recipe.project.task.callbacks(trainer, recipe)]  # e.g. a curriculum


def end(trainer) -> None:
    """Close the trackers and the process group at the end of a run, as TRL's own script does
    (`Trainer.end`, transformers >= 5.18; the Unsloth stack's transformers has none)."""
    finish = getattr(trainer, "end", None)
    if callable(finish):
        finish()


# --- the run ------------------------------------------------------------------------------------

PREFLIGHT_REPORT = "preflight.md"  # in output_dir: the table the run started with


def preflight_first(recipe: Recipe, checkpoint: str | None) -> None:
    """The signal preflight (preflight.py) before the model loads for training: the table,
    printed and written to `output_dir/preflight.md`, then, for a recipe whose rewards vary
    within no group, one `NoSignal` error with the advice (`preflight_refuse: false`: a warning,
    and the run trains anyway). Skipped when the recipe says `preflight: false` (the offline
    runs' layer does: a random model has no signal to check), when the run resumes (it began
    from this model already), and in a distributed run (every process would sample the model:
    run `make preflight` before `make launch`)."""
    from pathlib import Path

    from . import preflight

    if not recipe.script.preflight:
        return
    if checkpoint:
        logger.info("preflight: skipped, the run resumes from %s", checkpoint)
        return
    if recipe.training.world_size > 1:
        logger.info(
            "preflight: skipped in a distributed run (each process would sample the model); "
            "run make preflight (grpo preflight) before launching"
        )
        return
    signal = preflight.check(recipe, load_tokenizer(recipe))
    print(preflight.report(signal, Path(recipe.training.output_dir) / PREFLIGHT_REPORT), flush=True)
    if recipe.script.preflight_refuse:
        preflight.refuse(signal)
    elif not signal.learns:
        logger.warning("preflight: %s; training anyway (preflight_refuse: false)", signal.verdict())


def project_build_trainer(recipe: Recipe, record=None):
    """The project's declared train script's `build_trainer` (`[tool.grpo.scripts] train`),
    else the kit's own (`build_trainer`)."""
    return recipe.project.function("train", build_trainer)(recipe, record)


def run(
    build_trainer: BuildTrainer | None = None,
    argv: Sequence[str] | None = None,
    *,
    stage: Layer | None = None,
    prepare: Callable | None = None,
    project=None,
):
    """Parse the recipe (with a stage's layer, from commands/stages.py), build the trainer with
    `build_trainer` (default: the project's declared one, else the kit's), train (resuming from
    the last checkpoint), save; returns the trainer. `prepare(trainer)` runs before training (the
    smoke run's steering)."""
    from pathlib import Path

    from .callbacks.health import HEALTH_LOG, NON_FINITE, HealthMonitor, fired, read_events
    from .callbacks.run_record import RunRecord
    from .callbacks.stopping import StopOnSignal, stop_status

    argv = list(sys.argv[1:] if argv is None else argv)
    recipe = parse_recipe(argv, extra=stage, project=project)
    training_args = recipe.training
    configure_trackers(training_args)
    record = RunRecord(recipe, argv, main_process=training_args.process_index == 0)
    guard_trl_sample_print()  # TRL's printed sample of completions: no terminal escapes
    if recipe.script.smoke:
        logger.info(
            "offline run (--smoke/--trial): %s on the CPU for %d steps on %s, into %s; it proves "
            "the data, prompts and rewards run end to end, it does not train a useful model",
            recipe.model.model_name_or_path,
            training_args.max_steps,
            offline_data_note(recipe),
            training_args.output_dir,
        )
    checkpoint = last_checkpoint(training_args.output_dir) if recipe.script.resume else None
    preflight_first(recipe, checkpoint)
    build = build_trainer or project_build_trainer
    try:
        trainer = build(recipe, record)
    except OSError as err:
        name = recipe.model.model_name_or_path
        if recipe.script.reward_model and recipe.script.reward_model in str(err):
            name = recipe.script.reward_model
        raise ModelError(hub_hint(name, err)) from err
    except ValueError as err:
        if evaluates(recipe) and "eval_dataset" in str(err):
            raise UserError(
                f"the recipe evaluates during training (eval_strategy "
                f"{recipe.training.eval_strategy}) but the train script passes no eval_dataset: "
                "add `eval_dataset=training.evaluation_prompts(recipe, tokenizer, record),` to "
                "GRPOTrainer(...) in your train script (the kit's starter has it), or set "
                "eval_strategy: no"
            ) from err
        raise
    if training_args.world_size > 1:
        _UNTIL_EXIT.append(trainer)
    if prepare is not None:
        prepare(trainer)
    logger.info("training processes: %d", training_args.world_size)
    if checkpoint:
        logger.info("resuming from %s", checkpoint)
    stopper = StopOnSignal()
    trainer.add_callback(stopper)
    trainer.train(resume_from_checkpoint=checkpoint)
    health = fired(read_events(Path(training_args.output_dir) / HEALTH_LOG))
    if stopper.received:
        status = stop_status(stopper.received)
        record.finish(trainer.state, status, checkpoint, health)
        logger.warning(
            "stopped at step %d; the checkpoint is in %s: run the same command to resume",
            trainer.state.global_step,
            training_args.output_dir,
        )
        end(trainer)
        raise Interrupted(stopper.exit_code)
    monitors = [c for c in trainer.callback_handler.callbacks if isinstance(c, HealthMonitor)]
    stopped = sorted({check for m in monitors for check in m.stopped_on})
    if NON_FINITE in stopped:  # the weights are not finite: nothing worth saving as the model
        logger.error(
            "not saving the model: its weights are not finite; the last checkpoint before it "
            "is %s", last_checkpoint(training_args.output_dir) or "none",
        )  # fmt: skip
    else:
        trainer.save_model(training_args.output_dir)
        logger.info("saved the trained model to %s", training_args.output_dir)
    trainer.save_state()
    status = f"stopped by the health check ({', '.join(stopped)})" if stopped else "finished"
    record.finish(trainer.state, status, checkpoint, health)
    end(trainer)
    return trainer


def main(build_trainer: BuildTrainer | None = None, argv: Sequence[str] | None = None) -> int:
    """A train command (`grpo train`; a train script's `main`): `run` with one-line errors (exit
    code 2); `build_trainer` None: the project's declared one, else the kit's. A process of a
    distributed run exits without the interpreter's teardown (`exit_now`)."""
    from .runner import run as run_command

    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return run_command(lambda args: run(build_trainer, args), argv)
    try:
        code = run_command(lambda args: run(build_trainer, args), argv)
    except BaseException:  # a failed step: its traceback, then out while the error holds the
        import traceback  # trainer (unwinding further would free its DDP reducer: exit_now)

        traceback.print_exc()
        exit_now(1)
    exit_now(code)
    return code  # not reached


def command(argv: Sequence[str] | None = None) -> int:
    """`grpo train`: the kit's flow, with the project's declared train script's build_trainer."""
    return main(None, argv)


def exit_now(code: int) -> None:
    """End a distributed training process once its work is saved and its trackers closed, without
    running the interpreter's teardown. That teardown frees the DDP reducer, whose gloo process
    group joins its worker threads while holding the GIL; a worker still finishing an
    asynchronous all-gather needs the GIL to release its tensor, so the two wait on each other
    forever (seen: one rank of 2 hung at exit in about one CPU run in two, under load; py-spy
    shows ~ProcessGroupGloo in std::thread::join and the worker in ~AsyncAllgatherWork waiting for
    the GIL). The same hang met a process whose trainer was freed before this, as `run`'s return
    value was dropped or an error unwound its frames (seen: the surviving rank of a 2-process smoke
    run hung in ~Reducer for the gloo timeout), so a distributed run's trainers stay referenced
    (`_UNTIL_EXIT`) until this ends the process. Everything the run writes is written and flushed
    before this."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
