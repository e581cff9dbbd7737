"""Multi-stage training: the recipe run in stages, each starting from the previous one's weights.

    grpo stages [configs/stages.yaml] [--smoke] [recipe overrides for every stage]

The stages file names a base recipe and a list of stages; each stage is that recipe with the
stage's keys replaced (any recipe field: rewards and weights, max_steps, learning_rate, ...).
Stage N trains in `<output_dir>/stage-N-<name>`; stages after the first start from the previous
stage's weights (its merged model when it trained an adapter). A finished stage is skipped on a
rerun, an interrupted one resumes from its last checkpoint, so the command can simply be run
again. The usual first stage rewards only the format, so that the correctness reward has
answers to read in the next one. Each stage trains with the kit's trainer and merges with the
kit's merge, or with the scripts the project declares (`grpo eject`, `[tool.grpo.scripts]`).

A stage with `refilter` first re-runs the difficulty filter (`grpo filter`, commands/filter.py)
with the model it starts from (the previous stage's), on the stage's recipe, and trains on the
prompts whose pass rate is still in the band: groups that all pass or all fail teach nothing,
and what the previous stage learned moves prompts out of the band (TRL samples no replacement
groups, so this is the between-stages form of dynamic sampling):

    stages:
      - {name: format, reward_funcs: [strict_format], reward_weights: [1.0], max_steps: 50}
      - name: correctness
        refilter: {k: 8, min: 0.1, max: 0.9}     # or `refilter: true` for these defaults

It writes to `<stage folder>/filter/` (pass rates, histogram, `train_filtered.jsonl`); a rerun
of an interrupted stage reuses that file, so the stage resumes on the same prompts.

A stage with `warmup` is the format warm-up (`grpo warmup`, commands/warmup.py) instead of a GRPO
stage: a short supervised fine-tune on completions in the task's format, for a model that never
writes it (`grpo preflight` says so); the next stage starts from its merged model:

    stages:
      - {name: warmup, warmup: true}             # or {examples: 32, epochs: 3,
                                                 #     learning_rate: 0.0005, completions: FILE}
      - {name: format, reward_funcs: [strict_format], reward_weights: [1.0], max_steps: 50}
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Sequence
from pathlib import Path

from ..callbacks.run_record import RECORD
from ..errors import UserError
from ..project import Project
from ..project import load as load_project
from ..recipe import DEFAULT_RECIPE, Layer, parse_recipe
from ..runner import run

logger = logging.getLogger(__name__)


def parse_args(argv: Sequence[str] | None):
    parser = argparse.ArgumentParser(
        prog="grpo stages",
        description="Train the recipe in stages (e.g. format first, then correctness).",
        epilog="Other options are recipe overrides applied to every stage.",
    )
    parser.add_argument("stages_file", type=Path, nargs="?", default=Path("configs/stages.yaml"))
    parser.add_argument(
        "--smoke", action="store_true", help="offline: tiny model, CPU, the data as smoke reads it"
    )
    return parser.parse_known_args(argv)


STAGE_KEYS = ("name", "refilter", "warmup")  # a stage's own keys; the others are recipe keys
REFILTER_KEYS = ("k", "min", "max", "limit", "temperature", "max_new_tokens")


def stage_mapping(where: str, value, keys: tuple[str, ...], example: str) -> dict | None:
    """A stage key that is off (absent, false), on (true: {}) or a mapping of `keys`, checked;
    None when off."""
    if value is None or value is False:
        return None
    if value is True:
        return {}
    if not isinstance(value, dict):
        raise UserError(f"{where} is true or a mapping such as {example}")
    unknown = sorted(set(value) - set(keys))
    if unknown:
        raise UserError(f"{where}: unknown key(s) {', '.join(unknown)}; use {', '.join(keys)}")
    return value


def refilter_options(path: Path, number: int, value) -> dict | None:
    """A stage's `refilter` (true, or a mapping of the filter's options), checked, with the
    filter's defaults filled in; None when the stage does not refilter."""
    from .filter import DEFAULTS, option_problem

    where = f"{path}: stage {number}: refilter"
    value = stage_mapping(where, value, REFILTER_KEYS, "{k: 8, min: 0.1, max: 0.9}")
    if value is None:
        return None
    options = {**DEFAULTS, **value}
    try:
        problem = option_problem(
            int(options["k"]), float(options["min"]), float(options["max"]),
            options.get("limit"), options.get("temperature"),
        )  # fmt: skip
    except (TypeError, ValueError):
        problem = f"numbers expected, got {value}"
    if problem:
        raise UserError(f"{where}: {problem.replace('--', '')}")
    return options


WARMUP_KEYS = ("examples", "epochs", "learning_rate", "batch_size", "min_entropy", "completions")


def warmup_options(path: Path, number: int, value) -> list[str] | None:
    """A stage's `warmup` (true, or a mapping of the warm-up's options) as `grpo warmup`'s
    arguments, checked; None when the stage is a GRPO stage."""
    where = f"{path}: stage {number}: warmup"
    value = stage_mapping(where, value, WARMUP_KEYS, "{examples: 32, epochs: 3}")
    if value is None:
        return None
    positive = ("examples", "epochs", "learning_rate", "batch_size")
    try:
        numbers = [float(value[k]) for k in positive if k in value]
        floor = float(value.get("min_entropy", 0))
    except (TypeError, ValueError):
        numbers, floor = [0.0], 0.0
    if any(not n > 0 for n in numbers) or not floor >= 0:
        raise UserError(
            f"{where}: examples, epochs, learning_rate and batch_size are numbers above 0, "
            "min_entropy a number >= 0"
        )
    return [part for key, item in value.items()
            for part in (f"--{key.replace('_', '-')}", str(item))]  # fmt: skip


def load_stages(path: Path) -> tuple[Path, list[dict]]:
    """(the base recipe's path, the stages); each stage has a `name` and the keys it changes."""
    import yaml

    if not path.is_file():
        raise UserError(f"{path}: stages file not found")
    spec = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    recipe_path = Path(spec.get("recipe", str(DEFAULT_RECIPE)))
    if not recipe_path.is_file():
        raise UserError(f"{path}: its recipe {recipe_path} does not exist")
    stages = spec.get("stages")
    if not isinstance(stages, list) or not stages:
        raise UserError(f"{path}: 'stages' must be a non-empty list of mappings")
    for number, stage in enumerate(stages, start=1):
        if not isinstance(stage, dict) or not str(stage.get("name", "")).strip():
            raise UserError(f"{path}: stage {number} needs a 'name' (and the keys it changes)")
        if "output_dir" in stage or ("model_name_or_path" in stage and number > 1):
            raise UserError(f"{path}: stage {number} sets output_dir/model_name_or_path; "
                            "stages chain them themselves")  # fmt: skip
        stage["refilter"] = refilter_options(path, number, stage.get("refilter"))
        stage["warmup"] = warmup_options(path, number, stage.get("warmup"))
        if stage["warmup"] is not None and stage["refilter"] is not None:
            raise UserError(
                f"{path}: stage {number}: a warmup stage trains on the task's completions, not "
                "on refiltered prompts: drop its refilter"
            )
    return recipe_path, stages


def stage_dir(output_dir: str, number: int, name: str) -> Path:
    slug = "".join(c if c.isalnum() or c in "-_" else "-" for c in name.strip().lower())
    return Path(output_dir) / f"stage-{number}-{slug}"


def finished(folder: Path) -> bool:
    record = folder / RECORD
    if not record.is_file():
        return False
    return json.loads(record.read_text(encoding="utf-8")).get("status") == "finished"


def weights_of(folder: Path, project: Project, recipe_args: list[str]) -> Path:
    """The model a later stage starts from: the merged model for an adapter run."""
    if not (folder / "adapter_config.json").is_file():
        return folder  # full fine-tuning saved the whole model
    merged = folder / "merged"
    if not (merged / "config.json").is_file():
        from ..merging import merge

        project.function("merge", merge)([str(folder), "--output", str(merged), *recipe_args])
    return merged


def refilter(
    folder: Path, stage: Layer, base: list[str], model: Path | None, options: dict, sampler
) -> Path:
    """The difficulty filter run for a stage, with the model it starts from (`model`; None: the
    recipe's) and the stage's keys; returns the filtered data. An interrupted stage's file is
    reused, so its resumed run trains on the same prompts."""
    from .filter import FILTERED, filter_prompts

    out = folder / "filter"
    if (out / FILTERED).is_file():
        logger.info("%s: the prompts refiltered before, in %s", stage.source, out / FILTERED)
        return out / FILTERED
    band_args = [part for key, value in options.items() if value is not None
                 for part in (f"--{key.replace('_', '-')}", str(value))]  # fmt: skip
    chain = ["--model_name_or_path", str(model)] if model is not None else []
    logger.info(
        "%s: refiltering the prompts with %s (k=%s, keep pass rates %s to %s)",
        stage.source, model or "the recipe's model", options["k"], options["min"], options["max"],
    )  # fmt: skip
    try:
        return filter_prompts(
            [*base, *chain, "--output-dir", str(out), *band_args],
            sampler=sampler, extra=stage, advise=False,
        )  # fmt: skip
    except UserError as err:
        raise UserError(f"{stage.source}: refilter: {err}") from err


def stages(argv: Sequence[str] | None = None, sampler=None) -> list[Path]:
    """Train the stages in turn; returns their folders. `sampler` replaces the model when a
    stage refilters (tests: commands/filter.py `Sampler`)."""
    from .. import training

    args, overrides = parse_args(argv)
    project = load_project()
    build_trainer = project.function("train", training.build_trainer)
    recipe_path, plan = load_stages(args.stages_file)
    smoke = ["--smoke"] if args.smoke else []
    base = ["--config", str(recipe_path), *smoke, *overrides]
    root = parse_recipe(base, read_only=True, project=project).training.output_dir
    folders, previous = [], None
    for number, stage in enumerate(plan, start=1):
        name = str(stage["name"])
        folder = stage_dir(root, number, name)
        folders.append(folder)
        if finished(folder):
            logger.info("stage %d (%s): already finished in %s", number, name, folder)
            previous = folder
            continue
        keys = Layer(f"{args.stages_file} stage {number} ({name})",
                     {k: v for k, v in stage.items() if k not in STAGE_KEYS})  # fmt: skip
        start = weights_of(previous, project, base) if previous is not None else None
        model = ["--model_name_or_path", str(start)] if start is not None else []
        if stage["warmup"] is not None:
            from .warmup import warm_up

            logger.info("stage %d/%d (%s): format warm-up -> %s", number, len(plan), name, folder)
            warm_up([*base, *model, "--output-dir", str(folder), *stage["warmup"]], stage=keys,
                    project=project)  # fmt: skip
            previous = folder
            continue
        chain = ["--output_dir", str(folder), *model]
        if stage["refilter"] is not None:
            data = refilter(folder, keys, base, start, stage["refilter"], sampler)
            chain += ["--dataset_name", str(data)]
        logger.info("stage %d/%d (%s) -> %s", number, len(plan), name, folder)
        training.run(build_trainer, [*base, *chain], stage=keys, project=project)
        previous = folder
    logger.info("all %d stages finished; the last stage's model is in %s", len(plan), previous)
    return folders


def main(argv: Sequence[str] | None = None) -> int:
    return run(stages, argv)
