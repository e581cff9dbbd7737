"""Multi-stage training: the recipe run in stages, each starting from the previous one's weights.

    grpo stages [configs/stages.yaml] [--smoke] [recipe overrides for every stage]

The stages file names a base recipe and a list of stages; each stage is that recipe with the
stage's keys replaced (any recipe field: rewards and weights, max_steps, learning_rate, ...).
Stage N trains in `<output_dir>/stage-N-<name>`; stages after the first start from the previous
stage's weights (its merged model when it trained an adapter). A finished stage is skipped on a
rerun, an interrupted one resumes from its last checkpoint, so the command can simply be run
again. The usual first stage rewards only the format, so that the correctness reward has
answers to read in the next one. Each stage trains with the project's `build_trainer` (train.py)
and merges with its merge script.
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
    parser.add_argument("--smoke", action="store_true", help="offline: tiny model, sample data")
    return parser.parse_known_args(argv)


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
        project.script("merge").merge([str(folder), "--output", str(merged), *recipe_args])
    return merged


def stages(argv: Sequence[str] | None = None) -> list[Path]:
    from .. import training

    args, overrides = parse_args(argv)
    project = load_project()
    train = project.script("train")
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
                     {k: v for k, v in stage.items() if k != "name"})  # fmt: skip
        chain = ["--output_dir", str(folder)]
        if previous is not None:
            chain += ["--model_name_or_path", str(weights_of(previous, project, base))]
        logger.info("stage %d/%d (%s) -> %s", number, len(plan), name, folder)
        training.run(train.build_trainer, [*base, *chain], stage=keys, project=project)
        previous = folder
    logger.info("all %d stages finished; the last stage's model is in %s", len(plan), previous)
    return folders


def main(argv: Sequence[str] | None = None) -> int:
    return run(stages, argv)
