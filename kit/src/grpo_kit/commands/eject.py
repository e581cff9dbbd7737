"""`grpo eject train|merge|infer`: make one of the kit's scripts the project's own.

    grpo eject train

By default `grpo train` builds the kit's trainer (`grpo_kit.training.build_trainer`), `grpo
merge` runs `grpo_kit.merging.merge` and `grpo infer` runs `grpo_kit.answering.infer`. Ejecting
copies the kit's starter script (the same flow, short and read top to bottom, calling only the
kit's public API: `grpo docs api`) into `src/<package>/<name>.py` and declares it in
pyproject.toml:

    [tool.grpo.scripts]
    train = "my_grpo_project.train"

From then on the kit calls that module's one documented function (train: `build_trainer(recipe,
record=None)`, merge: `merge(argv) -> Path`, infer: `infer(argv) -> list`; the Protocols in
grpo_kit.project) wherever it trains, merges or answers (`grpo train`, `smoke`, `stages`,
`launch`, `try`), and nothing else of it. An existing file is never overwritten; only the
`[tool.grpo.scripts]` lines are added to pyproject.toml, the rest of it is left as it is. To go
back to the kit's own, delete the file and its line.
"""

from __future__ import annotations

import argparse
import re
import tomllib
from collections.abc import Sequence
from pathlib import Path

from ..errors import UserError
from ..project import PYPROJECT, SCRIPTS, from_table
from ..project import load as load_project
from ..runner import run

STARTER_SCRIPTS = Path(__file__).resolve().parents[1] / "starters" / "scripts"
TABLE = "[tool.grpo.scripts]"
KIT_DEFAULT = {
    "train": "grpo_kit.training.build_trainer",
    "merge": "grpo_kit.merging.merge",
    "infer": "grpo_kit.answering.infer",
}
USED_BY = {
    "train": "grpo train, smoke, stages, launch and try build the trainer with",
    "merge": "grpo merge, smoke and stages merge with",
    "infer": "grpo infer and smoke answer with",
}
SIGNATURE = {
    "train": "build_trainer(recipe, record=None)",
    "merge": "merge(argv) -> Path",
    "infer": "infer(argv) -> list",
}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="grpo eject",
        description="Copy the kit's train, merge or infer script into src/<package>/ and declare "
        "it in pyproject.toml ([tool.grpo.scripts]), so the kit calls your copy's one function "
        "(train: build_trainer(recipe, record=None); merge: merge(argv); infer: infer(argv)) "
        "instead of its own.",
        epilog="An existing file is never overwritten. To return to the kit's own script, "
        "delete the file and its line under [tool.grpo.scripts].",
    )
    parser.add_argument("script", choices=list(SCRIPTS), help="the script to make your own")
    return parser.parse_args(argv)


def with_declaration(text: str, name: str, module: str) -> str:
    """pyproject.toml's text with `name = "module"` under [tool.grpo.scripts] (the table added at
    the end when it is not there yet); every other line is kept as it was."""
    line = f'{name} = "{module}"\n'
    lines = text.splitlines(keepends=True)
    header = next((i for i, x in enumerate(lines) if x.strip() == TABLE), None)
    if header is None:
        ending = "" if not text or text.endswith("\n") else "\n"
        return f"{text}{ending}\n{TABLE}\n{line}"
    end = header + 1  # after the table's last key: before the next header (or blank lines)
    for i in range(header + 1, len(lines)):
        if re.match(r"\s*\[", lines[i]):
            break
        if lines[i].strip():
            end = i + 1
    if not lines[end - 1].endswith("\n"):
        lines[end - 1] += "\n"
    return "".join([*lines[:end], line, *lines[end:]])


def eject(argv: Sequence[str] | None = None) -> Path:
    """Copy the starter script in and declare it; returns the file written."""
    args = parse_args(argv)
    name = args.script
    project = load_project()
    package_dir = project.root / "src" / Path(*project.package.split("."))
    target = package_dir / f"{name}.py"
    module = f"{project.package}.{name}"
    if name in project.scripts:
        raise UserError(
            f"{PYPROJECT} already declares {name} = {project.scripts[name]!r} under {TABLE}: "
            "that module is your script already"
        )
    if target.exists():
        raise UserError(
            f"{target} already exists: not overwriting it; declare it (add `{name} = "
            f'"{module}"` under {TABLE} in {PYPROJECT}) or move it away and run this again'
        )
    if not package_dir.is_dir():
        raise UserError(
            f"no package folder {package_dir} ([tool.grpo] package = {project.package!r}): "
            "grpo eject writes the script into the project's own package under src/"
        )
    path = project.root / PYPROJECT
    text = with_declaration(path.read_text(encoding="utf-8"), name, module)
    try:
        table = tomllib.loads(text)["tool"]["grpo"]
        declared = from_table(table, project.root).scripts.get(name)
    except (tomllib.TOMLDecodeError, KeyError) as err:
        raise UserError(
            f'{path}: could not add `{name} = "{module}"` under {TABLE} ({err}); add it by hand'
        ) from err
    if declared != module:
        raise UserError(f"{path}: could not declare {name} under {TABLE}; add it by hand")
    target.write_bytes((STARTER_SCRIPTS / f"{name}.py").read_bytes())
    path.write_text(text, encoding="utf-8")
    relative = target.relative_to(project.root)
    print(f"wrote {relative} (the kit's {name} script, now yours to edit)")
    print(f'declared {name} = "{module}" under {TABLE} in {PYPROJECT}')
    print(
        f"{USED_BY[name]} {module}.{SIGNATURE[name]} now, instead of the kit's "
        f"{KIT_DEFAULT[name]}; to go back, delete {relative} and that line"
    )
    return target


def main(argv: Sequence[str] | None = None) -> int:
    return run(eject, argv)
