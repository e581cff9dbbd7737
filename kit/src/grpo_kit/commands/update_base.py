"""`grpo update-base`: the guards of `make update` around `cruft update`.

Before it (`grpo update-base [--variables-to-update JSON]`): refuse, nothing changed, when a file
the update drops was edited (git cannot apply its removal, and cruft's fallback would
half-apply the whole update); else write the project's files as the template generated them
into its git objects, so that the update merges three ways and an edited file gets conflict
markers, never a `.rej` beside a half-applied task (grpo_kit.regeneration). Changes nothing in
the working tree or the index.

After it (`grpo update-base --undo-rejected`): where cruft still left `*.rej` files, put the
half-applied update aside (`git stash`), back to the commit `make update` started from, and
say so (exit 1)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from ..errors import UserError
from ..regeneration import record_generated, undo_rejected
from .check import project_folder

DESCRIPTION = (
    "The guards of make update. Before cruft update: refuse when a file the update drops was "
    "edited, else render the template at .cruft.json's commit with the recorded answers and "
    "store each file in the project's git objects, so the update merges three ways (nothing "
    "in the working tree changes). With --undo-rejected, after it: put a half-applied update "
    "(*.rej files) aside with git stash."
)


def _options(parser) -> None:
    parser.add_argument(
        "--variables-to-update",
        type=_json_object,
        metavar="JSON",
        help="the answers the update changes, as cruft's option of that name (make update's VARS)",
    )
    parser.add_argument(
        "--undo-rejected",
        action="store_true",
        help="after cruft update: put a half-applied update (*.rej files) aside with git stash",
    )


def _json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(
            f'{text!r}: not a JSON object, e.g. \'{{"task_type": "code"}}\''
        )
    return value


def main(argv: Sequence[str] | None = None) -> int:
    root, args = project_folder(argv, "grpo update-base", DESCRIPTION, _options)
    if root is None:
        return 2
    if args.undo_rejected:
        try:
            rejects = undo_rejected(root)
        except UserError as err:
            print(f"update: {err}", file=sys.stderr)
            return 1
        if rejects:
            print(
                f"update: undone: cruft could not merge three ways and left {', '.join(rejects)} "
                "(a half-applied update). Your tree is back at your last commit; the "
                "half-applied result is in `git stash list` (git stash show -p to read it, "
                "git stash drop to discard it). Most often a file the update changes was "
                "edited in a way git cannot merge: see cruft's messages above",
                file=sys.stderr,
            )
            return 1
        return 0
    try:
        count = record_generated(root, args.variables_to_update)
    except UserError as err:
        print(f"update: refused, nothing changed: {err}", file=sys.stderr)
        return 2
    print(f"update: the {count} generated files are in git's objects (three-way merge ready)")
    return 0
