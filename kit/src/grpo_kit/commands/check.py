"""`grpo check`: does the project agree with itself on its task? After `cruft update` (`make
update` runs it), and whenever a command fails in a way that looks like a mixed project: task.py
and rewards.py of the same task, `.cruft.json`'s task_type that task, the recipe's reward names
defined, no `*.rej` file left, and configs/local.yaml not left over from another task
(grpo_kit.consistency). It reads the files as text: it works where the task no longer imports.
Exit status 1 when something is named."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ..consistency import cruft_task, problems
from ..errors import UserError
from ..project import load


def project_folder(
    argv: Sequence[str] | None, prog: str, description: str, options=None
) -> tuple[Path | None, argparse.Namespace]:
    """(the `--project` folder, the parsed options) of a command that reads a project's files
    as text (check, update-base), its pyproject.toml's [tool.grpo] read (nothing imported);
    the folder is None, the error printed in one line, when there is no project there.
    `options(parser)` adds the command's own."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--project", type=Path, default=Path.cwd(), help="the project's folder")
    if options is not None:
        options(parser)
    args = parser.parse_args(argv)
    try:
        load(args.project)
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return None, args
    return args.project, args


def main(argv: Sequence[str] | None = None) -> int:
    root, _ = project_folder(
        argv,
        "grpo check",
        "Check that task.py, rewards.py, the recipe, configs/local.yaml and .cruft.json agree "
        "on the project's task, and name any *.rej file (run it after cruft update; `make "
        "update` does).",
    )
    if root is None:
        return 2
    found = problems(root)
    for line in found:
        print(f"check: {line}", file=sys.stderr)
    if found:
        print(f"check: {len(found)} problem(s); fix them before training", file=sys.stderr)
        return 1
    task = cruft_task(root)
    print(f"check: the project agrees with itself{f' (the {task} task)' if task else ''}")
    return 0
