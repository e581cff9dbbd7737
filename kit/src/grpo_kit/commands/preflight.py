"""`grpo preflight` (`make preflight`), the signal preflight: whether training can learn anything,
before paying for a step.

    grpo preflight                                     # 8 prompts x num_generations completions
    grpo preflight --prompts 16
    grpo preflight --model_name_or_path outputs/<run>-warmup/merged   # after `grpo warmup`
    grpo preflight --smoke                             # offline: tiny model, sample data

It samples the recipe's model on a few training prompts x `num_generations` completions with
the recipe's own sampling and completion budget, scores every reward of the recipe, and prints
one table: per reward its mean and the share of groups whose completions it scores differently
(a group scored alike teaches nothing), the share of completions cut off at
max_completion_length and the completion-length percentiles; then the verdict and what to
change (grpo_kit/preflight.py). It exits with an error (code 2) when training cannot learn: no
reward, or only a length reward, varies within any group. `make train` runs the same check
first (recipe field `preflight`, on by default; `preflight_refuse: false` trains anyway).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

from ..recipe import add_recipe_options, recipe_from
from ..runner import run

logger = logging.getLogger(__name__)


def parse_args(argv: Sequence[str] | None):
    from ..sampling import PREFLIGHT_PROMPTS as PROMPTS

    parser = argparse.ArgumentParser(
        prog="grpo preflight",
        description="Sample the base model as training will, score every reward, and say "
        "whether training can learn (and what to change when it cannot).",
        epilog="Other options are recipe overrides, e.g. --max_completion_length 512.",
    )
    parser.add_argument(
        "--prompts", type=int, help=f"training prompts to sample (default: the recipe's, {PROMPTS})"
    )
    parser.add_argument(
        "--generations", type=int, help="completions per prompt (default: num_generations)"
    )
    parser.add_argument("--output", type=Path, help="also write the report to this file")
    add_recipe_options(parser)
    args, overrides = parser.parse_known_args(argv)
    if (args.prompts is not None and args.prompts < 1) or (
        args.generations is not None and args.generations < 2
    ):
        parser.error("--prompts must be at least 1 and --generations at least 2 (a group)")
    return args, overrides


def preflight(argv: Sequence[str] | None = None):
    """Run the check; returns the `Signal` (raises NoSignal when training cannot learn)."""
    from .. import preflight as signal_check
    from ..generation import check_model
    from ..project import load as load_project
    from ..training import load_tokenizer

    args, overrides = parse_args(argv)
    project = load_project()
    recipe = recipe_from(args, overrides, read_only=False, project=project)
    check_model(recipe.model.model_name_or_path, "--model_name_or_path")  # a folder: one line
    tokenizer = load_tokenizer(recipe)  # --smoke/--trial: the tiny model, built on first use
    signal = signal_check.check(
        recipe, tokenizer, prompts=args.prompts, generations=args.generations
    )
    print(signal_check.report(signal, args.output), flush=True)
    signal_check.refuse(signal)
    return signal


def main(argv: Sequence[str] | None = None) -> int:
    return run(preflight, argv)


if __name__ == "__main__":
    import sys

    sys.exit(main())
