"""`grpo update-base`: before `cruft update` (`make update` runs it first), write the project's
files as the template generated them into its git objects, so that the update merges three ways
and an edited file gets conflict markers, never a `.rej` beside a half-applied task
(grpo_kit.regeneration). Changes nothing in the working tree or the index."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ..errors import UserError
from ..regeneration import record_generated
from .check import project_folder


def main(argv: Sequence[str] | None = None) -> int:
    root = project_folder(
        argv,
        "grpo update-base",
        "Before cruft update: render the template at .cruft.json's commit with the recorded "
        "answers and store each file in the project's git objects, so the update can merge "
        "three ways (`make update` runs it). Nothing in the working tree changes.",
    )
    if root is None:
        return 2
    try:
        count = record_generated(root)
    except UserError as err:
        print(f"update: refused, nothing changed: {err}", file=sys.stderr)
        return 2
    print(f"update: the {count} generated files are in git's objects (three-way merge ready)")
    return 0
