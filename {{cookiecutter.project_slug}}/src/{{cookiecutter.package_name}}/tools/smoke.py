"""`make smoke`: the whole pipeline offline, in one process: train 2 steps -> merge (with its
check) -> infer, on a tiny local model, the sample data and the CPU.

    python -m {{ cookiecutter.package_name }}.tools.smoke
        [--config configs/grpo.yaml] [--prompt TEXT] [recipe overrides]

Training runs with `--smoke`, the recipe layer that replaces only what a laptop CPU cannot run
without downloads (`SMOKE_OVERRIDES` in config.py): the task, prompts, rewards and LoRA settings
of the recipe stay as they are, so a smoke run exercises the same code path as the real one.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from ..config import SMOKE_OUTPUT_DIR, parse_recipe
from ..errors import UserError
from ..project import EXAMPLE_PROMPT

logger = logging.getLogger(__spec__.name)  # the real name also under `python -m`


def pipeline(argv: Sequence[str] | None = None) -> list[str]:
    """Train -> merge -> infer on the tiny model; returns the generated answers."""
    from .. import infer, merge, train

    parser = argparse.ArgumentParser(
        prog="python -m {{ cookiecutter.package_name }}.tools.smoke",
        description="Offline end-to-end check: tiny model, train -> merge -> infer, on the CPU.",
    )
    parser.add_argument("--config", default="configs/grpo.yaml", help="the recipe to smoke-test")
    parser.add_argument("--prompt", default=None, help="prompt for the inference step")
    args, overrides = parser.parse_known_args(argv)
    recipe_args = ["--config", args.config, "--smoke", *overrides]
    output = Path(parse_recipe(recipe_args, read_only=True).training.output_dir)
    if output.resolve() == SMOKE_OUTPUT_DIR.resolve():
        shutil.rmtree(output, ignore_errors=True)  # the smoke run's own folder: always fresh
    elif output.exists() and any(output.iterdir()):
        raise UserError(f"{output} is not empty: the smoke pipeline needs a fresh output_dir")
    print(f"smoke 1/3: train 2 steps with {args.config} on the tiny model", flush=True)
    train.train(recipe_args)
    print("smoke 2/3: merge the adapter and check the merged model", flush=True)
    merge.merge([str(output), "--max-new-tokens", "8", *recipe_args])
    print("smoke 3/3: generate with the merged model", flush=True)
    prompt = args.prompt or EXAMPLE_PROMPT
    answers = infer.infer(
        ["--model", str(output / "merged"), "--prompt", prompt, "--max-new-tokens", "16",
         *recipe_args]
    )  # fmt: skip
    print(
        f"smoke passed: trained, merged and generated offline in {output} (the tiny random "
        "model's text is noise). Next: make train, or look at this run with make evaluate, "
        "make report or make infer, each with SMOKE=1",
        flush=True,
    )
    return answers


def main(argv: Sequence[str] | None = None) -> int:
    from ..errors import run

    return run(pipeline, argv)


if __name__ == "__main__":
    sys.exit(main())
