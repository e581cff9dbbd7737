"""The project a command runs for: the `[tool.grpo]` table of its `pyproject.toml`.

grpo-template writes that table when it generates a project: which package holds the project's
task (`<package>.task.TASK`), rewards and scripts, the backend, the model it was generated for and
what the template derived for it (the tiny offline model's architecture and chat template, the
model card's sampling), and the tier's plan (GPUs, processes, distribution, the memory
estimate). Commands run from the project folder and read it from there; nothing here is a
global: `load()` returns a `Project`, and commands pass it (or the recipe holding it) on.

    [tool.grpo]
    package = "my_grpo_project"
    backend = "transformers"
    model = "Qwen/Qwen3.5-2B"
    ...
    [tool.grpo.tier]
    name = "24GB"
    ...
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import ModuleType

from .errors import UserError

PYPROJECT = "pyproject.toml"
BACKENDS = ("transformers", "unsloth")
SCRIPTS = ("train", "merge", "infer")


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

    package: str  # holds task.py (TASK), rewards.py and the scripts train/merge/infer
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
    root: Path = field(default_factory=Path.cwd)

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise UserError(
                f"{self.root / PYPROJECT}: [tool.grpo] backend = {self.backend!r}; use one of "
                f"{', '.join(BACKENDS)}"
            )

    @cached_property
    def task(self):
        """The project's task: `TASK` of `<package>.task`."""
        module = self.module("task")
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

    def script(self, name: str) -> ModuleType:
        """The project's own script `name` (train, merge, infer), else the kit's starter copy
        (the file the project was generated with)."""
        if name not in SCRIPTS:
            raise ValueError(f"no script named {name!r}")
        return self.module(name) or importlib.import_module(f"grpo_kit.starters.scripts.{name}")

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
    known = {f.name for f in dataclasses.fields(Project)} - {"tier", "root"}
    tier_known = {f.name for f in dataclasses.fields(Tier)}
    unknown = sorted(set(values) - known) + sorted(f"tier.{k}" for k in set(tier) - tier_known)
    if unknown:
        raise UserError(
            f"{root / PYPROJECT}: [tool.grpo] has unknown key(s) {', '.join(unknown)}: remove "
            f"or rename them (known: {', '.join(sorted(known))}; "
            f"tier.{', tier.'.join(sorted(tier_known))})"
        )
    return Project(**values, tier=Tier(**tier), root=root)
