"""`grpo update-base`: before `cruft update` (`make update` runs it first), write the project's
files as the template generated them into its git objects, so that the update merges three ways
and an edited file gets conflict markers, never a `.rej` beside a half-applied task
(grpo_kit.regeneration). Changes nothing in the working tree or the index."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ..errors import UserError
from ..project import load
from ..regeneration import record_generated


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="grpo update-base",
        description="Before cruft update: render the template at .cruft.json's commit with the "
        "recorded answers and store each file in the project's git objects, so the update can "
        "merge three ways (`make update` runs it). Nothing in the working tree changes.",
    )
    parser.add_argument("--project", type=Path, default=Path.cwd(), help="the project's folder")
    args = parser.parse_args(argv)
    try:
        load(args.project)  # pyproject.toml's [tool.grpo], read only: nothing is imported
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        count = record_generated(args.project)
    except UserError as err:
        print(f"update: refused, nothing changed: {err}", file=sys.stderr)
        return 2
    print(f"update: the {count} generated files are in git's objects (three-way merge ready)")
    return 0
