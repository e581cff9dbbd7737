"""`grpo recipe` (`make recipe`): the recipe a run gets, and with `--explain` the file each value
comes from.

    grpo recipe                      # the values the layers set, as the run gets them (YAML)
    grpo recipe --explain            # every value with its file; overridden ones marked
    grpo recipe --explain --smoke    # the smoke run's recipe
    grpo recipe --learning_rate 1e-5 # any recipe override, as for grpo train

A recipe is layers (grpo_kit/recipe.py): the task's values from src/<package>/task.py (its
rewards and weights, system prompt and default data: their one home), configs/grpo.yaml (the
tier's training values), configs/local.yaml (yours: your data, your changes), an offline layer
(--smoke, --trial) and the command line. `--explain` prints each layer's values in that order,
marks the ones a later layer overrides, and ends with the recipe's notes: a recipe file that
shadows what task.py owns, a task reward that reward_funcs leaves out, weights that do not
match the rewards.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..recipe import add_recipe_options, explain
from ..runner import run


def parse_args(argv: Sequence[str] | None):
    parser = argparse.ArgumentParser(
        prog="grpo recipe",
        description="Print the recipe a run gets: the values its layers set (task.py, "
        "configs/grpo.yaml, configs/local.yaml, --smoke/--trial, the command line).",
        epilog="Other options are recipe overrides, e.g. --learning_rate 1e-5.",
    )
    parser.add_argument(
        "--explain",
        action="store_true",
        help="every value with the file that set it; overridden values marked",
    )
    add_recipe_options(parser)
    return parser.parse_known_args(argv)


def _yaml(key: str, value: object) -> str:
    import yaml

    return yaml.safe_dump({key: value}, default_flow_style=True, width=10_000).strip()[1:-1]


def render(found, notes, explained: bool) -> str:
    """The recipe as text: YAML lines, grouped by file when `explained`."""
    lines: list[str] = []
    if explained:
        source = None
        for item in found:
            if item.source != source:
                source = item.source
                lines += [*([""] if lines else []), f"# {source}"]
            text = _yaml(item.field, item.value)
            if item.overridden_by:
                text = f"# {text}  (overridden by {item.overridden_by})"
            lines.append(text)
    else:
        lines = [_yaml(i.field, i.value) for i in found if i.overridden_by is None]
    if notes:
        lines += ["", *(f"# note: {note}" for note in notes)]
    return "\n".join(lines)


def show(argv: Sequence[str] | None = None) -> str:
    args, overrides = parse_args(argv)
    argv = [*(["--config", str(args.config)] if args.config else []), *overrides]
    argv += ["--smoke"] if args.smoke else ["--trial"] if args.trial else []
    found, notes = explain(argv)
    text = render(found, notes, args.explain)
    print(text)
    return text


def main(argv: Sequence[str] | None = None) -> int:
    return run(show, argv)


if __name__ == "__main__":
    sys.exit(main())
