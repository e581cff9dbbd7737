"""`grpo smoke` (`make smoke`): the whole pipeline offline, in one process: train 2 steps ->
merge (with its check) -> infer, on a tiny local model, the sample data and the CPU.

    grpo smoke [--config configs/grpo.yaml] [--prompt TEXT] [recipe overrides]

Training runs with `--smoke`, the recipe layer that replaces only what a laptop CPU cannot run
without downloads (`SMOKE_OVERRIDES` in recipe.py): the task, prompts, rewards and LoRA settings
of the recipe stay as they are, so a smoke run exercises the same code path as the real one. It
reads the shipped sample while the recipe names the task's default data, and your data (your
columns, labels, schemas) once configs/local.yaml names your own.
A task with judge rewards (`grpo_kit.rewards.judge`) is graded by a real `transformers serve`
on a tiny random judge for the training step (`offline.judge_server.serve_task_judges`).
Each step runs the kit's own (training.build_trainer, merging.merge, answering.infer), or the
script the project declares for it (`grpo eject`, `[tool.grpo.scripts]`).
"""

from __future__ import annotations

import argparse
import itertools
import logging
import shutil
from collections.abc import Sequence
from pathlib import Path

from ..errors import UserError
from ..project import load as load_project
from ..recipe import SMOKE_OUTPUT_DIR, offline_data_note, parse_recipe

logger = logging.getLogger(__name__)


def scripted_turn(trainer, example_call: dict, environment: str) -> list[int]:
    """Token ids of an assistant turn making the environment's example call (the task's
    `example_calls`), as the chat template TRL trains with renders it."""
    from ..environments import tool_calls, tool_methods
    from ..environments.episodes import assistant_turn, chat_kwargs

    tokenizer = trainer.processing_class
    tools = tool_methods(trainer.environment_factories[environment]())
    call = tool_calls([example_call])
    turn = {"role": "assistant", "content": "", "tool_calls": call}
    kwargs = chat_kwargs(tokenizer, trainer.chat_template_kwargs)
    _, text = assistant_turn(tokenizer, [{"role": "user", "content": "?"}], turn, tools, kwargs)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def steer_first_turns(trainer, example_calls: dict) -> None:
    """Smoke runs of an agent task: the random tiny model never writes a well-formed tool call,
    so its first turn in each rollout is replaced by its environment's example call (ids, as
    if generated). Everything after is TRL's real tool loop: the call is parsed, executed on
    the rollout's environment, its result appended and masked, the model generates on, and the
    rewards score the whole exchange. Reads the environment of each rollout from TRL 1.16's
    `_batch_environments`; later turns (the loop's regenerations) are left as generated."""
    import torch

    model = trainer.accelerator.unwrap_model(trainer.model_wrapped)
    generate = model.generate
    pad = trainer.processing_class.pad_token_id
    turns = {
        name: scripted_turn(trainer, example_calls[name], name)
        for name in trainer.environment_factories
    }
    scripted_batch: list = [None]  # the batch whose first turns were scripted

    def scripted_generate(*args, **kwargs):
        output = generate(*args, **kwargs)
        names = getattr(trainer, "_batch_environments", None)
        if not names or names is scripted_batch[0] or len(names) != output.shape[0]:
            return output  # a later turn: the tool loop's regeneration
        scripted_batch[0] = names  # TRL makes a new list per batch
        prompt_length = kwargs["input_ids"].shape[1]
        width = max(len(turns[n]) for n in names)
        rows = [turns[n] + [pad] * (width - len(turns[n])) for n in names]
        scripted = torch.tensor(rows, dtype=output.dtype, device=output.device)
        return torch.cat([output[:, :prompt_length], scripted], dim=1)

    model.generate = scripted_generate


def alternate_environments(trainer) -> None:
    """The training rows reordered so their environments take turns: the smoke run takes them in
    order (the task's smoke layer sets shuffle_dataset: false) and its steps must each run
    another environment, whatever order is left once evaluate's rows are held out (heldout.py)."""
    rows = trainer.train_dataset
    if rows is None or "environment" not in rows.column_names:
        return
    groups: dict[str, list[int]] = {}
    for index, name in enumerate(rows["environment"]):
        groups.setdefault(name, []).append(index)
    turns = itertools.zip_longest(*groups.values())
    trainer.train_dataset = rows.select([i for turn in turns for i in turn if i is not None])


def tool_calls_per_environment(trainer) -> dict[str, tuple[int, int]]:
    """{environment: (calls executed, calls that failed)} over the run's environment instances
    (TRL keeps them in a pool per environment and reuses them across rollouts)."""
    pool = getattr(trainer, "_environment_pool", None) or {}
    return {
        str(name): (
            sum(getattr(e, "calls", 0) for e in instances),
            sum(getattr(e, "failures", 0) for e in instances),
        )
        for name, instances in pool.items()
    }


def check_tool_calls(trainer) -> None:
    """An agent smoke run proves TRL's tool loop ran: every environment executed a call."""
    counts = tool_calls_per_environment(trainer)
    listed = ", ".join(f"{n} {c} ({f} failed)" for n, (c, f) in sorted(counts.items()))
    print(f"smoke: tool calls executed per environment: {listed}", flush=True)
    idle = sorted(name for name, (calls, _) in counts.items() if not calls)
    if idle or not counts:
        raise UserError(
            f"smoke: no tool call ran in environment(s) {', '.join(idle) or 'any'}: the smoke "
            "run scripts each rollout's first call (steer_first_turns) and takes the training "
            "rows with their environments in turn, so check that the data has rows of each"
        )


def data_note(recipe) -> str:
    """The data a smoke run reads, and why (`recipe.offline_data_note`)."""
    return offline_data_note(recipe)


def pipeline(argv: Sequence[str] | None = None) -> list[str]:
    """Train -> merge -> infer on the tiny model, with the kit's own steps or the project's
    declared scripts; returns the generated answers."""
    from .. import answering, merging, training
    from ..offline import judge_server

    project = load_project()
    build_trainer = project.function("train", training.build_trainer)
    merge = project.function("merge", merging.merge)
    infer = project.function("infer", answering.infer)
    parser = argparse.ArgumentParser(
        prog="grpo smoke",
        description="Offline end-to-end check: tiny model, train -> merge -> infer, on the CPU.",
    )
    parser.add_argument("--config", default="configs/grpo.yaml", help="the recipe to smoke-test")
    parser.add_argument("--prompt", default=None, help="prompt for the inference step")
    args, overrides = parser.parse_known_args(argv)
    recipe_args = ["--config", args.config, "--smoke", *overrides]
    recipe = parse_recipe(recipe_args, read_only=True, project=project)
    output = Path(recipe.training.output_dir)
    if output.resolve() == SMOKE_OUTPUT_DIR.resolve():
        shutil.rmtree(output, ignore_errors=True)  # the smoke run's own folder: always fresh
    elif output.exists() and any(output.iterdir()):
        raise UserError(f"{output} is not empty: the smoke pipeline needs a fresh output_dir")
    print(
        f"smoke 1/3: train {recipe.training.max_steps} steps with {args.config} on the tiny "
        f"model, on {data_note(recipe)}",
        flush=True,
    )
    task = project.task
    agent = task.environments is not None

    def steer(trainer) -> None:
        alternate_environments(trainer)
        steer_first_turns(trainer, dict(task.example_calls))

    # A judge task's rewards are graded by a real local server on a tiny random judge (its
    # replies are noise too: parse errors, rows None), never a mock; the overrides point them
    # at it.
    with judge_server.serve_task_judges(project) as judge_args:
        trainer = training.run(
            build_trainer,
            [*recipe_args, *judge_args],
            prepare=steer if agent else None,
            project=project,
        )
    if agent:
        check_tool_calls(trainer)
    print("smoke 2/3: merge the adapter and check the merged model", flush=True)
    merge([str(output), "--max-new-tokens", "8", *recipe_args])
    print("smoke 3/3: generate with the merged model", flush=True)
    prompt = args.prompt or answering.example_prompt(recipe)  # your data's first row, once yours
    answers = infer(
        ["--model", str(output / "merged"), "--prompt", prompt, "--max-new-tokens", "16",
         "--seed", "0",
         *recipe_args]
    )  # fmt: skip
    answers = [answering.transcript(a) if isinstance(a, list) else a for a in answers]  # agents
    print(
        f"smoke passed: trained, merged and generated offline in {output} (the tiny random "
        "model's text is noise). Next: make train, or look at this run with make evaluate, "
        "make report or make infer, each with SMOKE=1",
        flush=True,
    )
    return answers


def main(argv: Sequence[str] | None = None) -> int:
    from ..runner import run

    return run(pipeline, argv)
