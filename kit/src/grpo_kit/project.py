"""The project a command runs for: the `[tool.grpo]` table of its `pyproject.toml`.

grpo-template writes that table when it generates a project: which package holds the project's
task (`<package>.task.TASK`), rewards and scripts, the backend, the model it was generated for and
what the template derived for it (the tiny offline model's architecture and chat template, the
model card's sampling), and the tier's plan (GPUs, processes, distribution, the memory
estimate). Commands run from the project folder and read it from there; nothing here is a
global: `load()` returns a `Project`, and commands pass it (or the recipe holding it) on.

`grpo train`, `merge` and `infer` run the kit's own flow (`training.build_trainer`,
`merging.merge`, `answering.infer`). A project that wants a script of its own runs `grpo eject
train` (merge, infer): the starter script is copied into its package and declared under
`[tool.grpo.scripts]`, and from then on the kit calls that module's one documented function
(`TrainScript`, `MergeScript`, `InferScript` below) and nothing else of it. A script file left
in the package but not declared is refused, never silently ignored.

    [tool.grpo]
    package = "my_grpo_project"
    backend = "transformers"
    model = "Qwen/Qwen3.5-2B"
    ...
    [tool.grpo.tier]
    name = "24GB"
    ...
    [tool.grpo.scripts]           # only after `grpo eject train`
    train = "my_grpo_project.train"
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

from .errors import UserError

__all__ = ["InferScript", "MergeScript", "Project", "SCRIPTS", "Tier", "TrainScript", "load"]

PYPROJECT = "pyproject.toml"
BACKENDS = ("transformers", "unsloth")


@runtime_checkable
class TrainScript(Protocol):
    """A declared train script (`[tool.grpo.scripts] train`): `grpo train`, `smoke`, `stages`,
    `launch` and `try` build their trainer with its `build_trainer` (TRL's GRPOTrainer, or one
    that trains like it)."""

    def build_trainer(self, recipe: Any, record: Any = None) -> Any: ...


@runtime_checkable
class MergeScript(Protocol):
    """A declared merge script: `grpo merge`, `smoke` and `stages` call its `merge(argv)`, which
    returns the merged model's folder."""

    def merge(self, argv: Sequence[str] | None = None) -> Path: ...


@runtime_checkable
class InferScript(Protocol):
    """A declared infer script: `grpo infer` and `smoke` call its `infer(argv)`, which returns
    the answers (a string each; an agent task's rollout as a list of messages)."""

    def infer(self, argv: Sequence[str] | None = None) -> list: ...


# script name -> (the function the kit calls, its Protocol)
SCRIPTS: dict[str, tuple[str, type]] = {
    "train": ("build_trainer", TrainScript),
    "merge": ("merge", MergeScript),
    "infer": ("infer", InferScript),
}


@dataclass(frozen=True)
class Tier:
    """The hardware the recipe was tuned for, and how training is spread over it."""

    name: str = "cpu"
    memory_gib: float = 16.0  # per GPU (RAM for the cpu tier)
    gpus_per_node: int = 0
    nodes: int = 1
    processes: int = 1  # training processes over all nodes
    distributed: str = "none"  # none (one process), ddp, zero2, zero3
    accelerate_config: str = ""  # for accelerate launch ("": unused)
    vllm_server_gpus: int = 0
    estimated_peak_gib: float = 0.0  # per device, from the template's memory model

    @property
    def is_gpu(self) -> bool:
        return self.name != "cpu"


@dataclass(frozen=True)
class Project:
    """What a command needs to know about the project besides its recipe."""

    package: str  # holds task.py (TASK), rewards.py (and the scripts it declares)
    backend: str = "transformers"
    model: str = ""  # the model the project was generated for (the recipe may override it)
    gated: bool = False  # its licence must be accepted on the Hub
    tiny_arch: str = "qwen2"  # the offline tiny model's architecture (LoRA targets match)
    chat_template: str = ""  # TRL's (or the kit's vendored) template name ("": ChatML stand-in)
    reward_tiny_arch: str = "qwen2"  # the reward-model recipe's base, likewise
    reward_chat_template: str = ""
    # The model card's recommended sampling for the chat mode the recipe renders (evaluate and
    # infer decode with it by default); None: the card gives none, decode greedily.
    recommended_sampling: dict | None = None
    tier: Tier = field(default_factory=Tier)
    # [tool.grpo.scripts]: {script: module} of the scripts the project owns (`grpo eject`)
    scripts: dict[str, str] = field(default_factory=dict)
    root: Path = field(default_factory=Path.cwd)

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise UserError(
                f"{self.root / PYPROJECT}: [tool.grpo] backend = {self.backend!r}; use one of "
                f"{', '.join(BACKENDS)}"
            )
        for name, module in self.scripts.items():
            if name not in SCRIPTS or not isinstance(module, str) or not module:
                raise UserError(
                    f"{self.root / PYPROJECT}: [tool.grpo.scripts] {name} = {module!r}: declare "
                    f'a script as `{next(iter(SCRIPTS))} = "<package>.<module>"`, one of '
                    f"{', '.join(SCRIPTS)} (grpo eject writes it)"
                )

    @cached_property
    def task(self):
        """The project's task: `TASK` of `<package>.task`. A task.py that fails to import
        because the project disagrees with itself (a half-applied `cruft update`: task.py of one
        task, rewards.py of another) is one line naming that, not a traceback."""
        try:
            module = self.module("task")
        except (AttributeError, ImportError) as err:
            from .consistency import problems

            found = problems(self.root)
            if not found or isinstance(err, ModuleNotFoundError):
                raise
            more = f" ({len(found) - 1} more: grpo check lists them)" if len(found) > 1 else ""
            message = f"{self.package}.task does not import ({err}): {found[0]}{more}"
            raise UserError(message) from err
        if module is None or not hasattr(module, "TASK"):
            raise UserError(
                f"{self.package}.task has no TASK: the project's task module defines it "
                "(src/<package>/task.py)"
            )
        return module.TASK

    def module(self, name: str) -> ModuleType | None:
        """`<package>.<name>` (None when the project has no such module)."""
        self._importable()
        full = f"{self.package}.{name}"
        try:
            return importlib.import_module(full)
        except ModuleNotFoundError as err:
            if err.name not in (full, self.package):
                raise
            if err.name == self.package:
                raise UserError(
                    f"cannot import the project's package '{self.package}' ([tool.grpo] package "
                    f"in {PYPROJECT}): run `make install`, or run from the project folder"
                ) from err
            return None

    def script(self, name: str) -> ModuleType | None:
        """The project's declared script `name` (train, merge, infer: `[tool.grpo.scripts]`),
        checked against its Protocol; None when the project declares none (the kit's own flow
        runs). A script file in the package that is not declared is refused."""
        if name not in SCRIPTS:
            raise ValueError(f"no script named {name!r}")
        self.refuse_undeclared_scripts()
        if name not in self.scripts:
            return None
        function, protocol = SCRIPTS[name]
        declared = self.scripts[name]
        self._importable()
        try:
            module = importlib.import_module(declared)
        except ModuleNotFoundError as err:
            if err.name is None or not declared.startswith(err.name):
                raise
            raise UserError(
                f"{self.root / PYPROJECT}: [tool.grpo.scripts] {name} = {declared!r} cannot be "
                f"imported: restore the module, or remove the line to run the kit's own {name}"
            ) from err
        if not isinstance(module, protocol) or not callable(getattr(module, function)):
            raise UserError(
                f"{declared} ([tool.grpo.scripts] {name}) has no function {function}(): define "
                f"it as the kit's starter does (grpo_kit.project.{protocol.__name__}), or remove "
                "the declaration"
            )
        return module

    def function(self, name: str, default: Callable) -> Callable:
        """The one function the kit calls of the declared script `name` (`SCRIPTS`), else
        `default`, the kit's own (training.build_trainer, merging.merge, answering.infer)."""
        module = self.script(name)
        return default if module is None else getattr(module, SCRIPTS[name][0])

    def refuse_undeclared_scripts(self) -> None:
        """A `train.py` (merge.py, infer.py) in the package that `[tool.grpo.scripts]` does not
        declare (a project generated before grpo-kit 0.3.0, after `cruft update`): one line
        saying to declare it or delete it, since the kit would not run it."""
        self._importable()
        for name in SCRIPTS:
            module = f"{self.package}.{name}"
            if self.scripts.get(name) == module:
                continue
            try:
                found = importlib.util.find_spec(module)
            except ModuleNotFoundError:
                found = None
            if found is not None:
                raise UserError(
                    f"{found.origin} is not declared, so the kit would not run it: declare it "
                    f'(add `{name} = "{module}"` under [tool.grpo.scripts] in {PYPROJECT}, as '
                    f"`grpo eject {name}` does) or delete it to run the kit's own {name}"
                )

    def _importable(self) -> None:
        """A project run from its folder without `pip install -e .` still imports (src/ layout)."""
        source = self.root / "src"
        if source.is_dir() and str(source) not in sys.path:
            sys.path.insert(0, str(source))


def load(root: Path | None = None) -> Project:
    """The project in `root` (default: the current folder), from its pyproject.toml."""
    import tomllib

    root = Path.cwd() if root is None else Path(root)
    path = root / PYPROJECT
    if not path.is_file():
        raise UserError(
            f"no {PYPROJECT} in {root}: run grpo from your project's folder (the one with "
            "configs/ and pyproject.toml)"
        )
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("grpo")
    except tomllib.TOMLDecodeError as err:
        raise UserError(f"{path}: not valid TOML ({err})") from err
    if not isinstance(table, dict) or "package" not in table:
        raise UserError(
            f"{path} has no [tool.grpo] table with the project's package: grpo-template writes "
            'it when it generates a project (add `[tool.grpo]` with `package = "<your package>"`)'
        )
    return from_table(table, root)


def from_table(table: dict, root: Path) -> Project:
    """A `Project` from a `[tool.grpo]` table; unknown keys are refused with their names."""
    values = dict(table)
    tier = values.pop("tier", {}) or {}
    scripts = values.pop("scripts", {}) or {}
    if not isinstance(scripts, dict):
        raise UserError(
            f"{root / PYPROJECT}: [tool.grpo] scripts must be a table ([tool.grpo.scripts])"
        )
    known = {f.name for f in dataclasses.fields(Project)} - {"tier", "root", "scripts"}
    tier_known = {f.name for f in dataclasses.fields(Tier)}
    unknown = sorted(set(values) - known) + sorted(f"tier.{k}" for k in set(tier) - tier_known)
    if unknown:
        raise UserError(
            f"{root / PYPROJECT}: [tool.grpo] has unknown key(s) {', '.join(unknown)}: remove "
            f"or rename them (known: {', '.join(sorted(known))}; "
            f"tier.{', tier.'.join(sorted(tier_known))}; scripts.{', scripts.'.join(SCRIPTS)})"
        )
    return Project(**values, tier=Tier(**tier), scripts=dict(scripts), root=root)
