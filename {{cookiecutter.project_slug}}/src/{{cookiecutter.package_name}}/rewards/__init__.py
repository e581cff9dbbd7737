"""Reward registry: every module in this package registers its rewards on import.

`resolve(names)` turns the recipe's `reward_funcs` into callables. A name is either a reward
registered here (see `REGISTRY`) or a dotted path `module.function` importable from the
project root, as `trl grpo` allows. Add your own reward in a new module of this package, or
anywhere importable, and list it in `configs/grpo.yaml`.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

from ..errors import UserError
from .base import (
    REGISTRY,
    RewardFunc,
    RewardRange,
    bind,
    call_like_trl,
    completion_messages,
    completion_text,
    reward,
)

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = [
    "REGISTRY",
    "RewardFunc",
    "RewardRange",
    "call_like_trl",
    "completion_messages",
    "completion_text",
    "bind",
    "resolve",
    "reward",
]


def resolve(names: list[str], settings: dict | None = None) -> list[RewardFunc]:
    """Callables for the recipe's `reward_funcs`, in order, with the recipe settings they take
    (`Recipe.reward_settings()`: max_completion_length and the task's) bound."""
    if not names:
        raise UserError("reward_funcs is empty: list at least one reward in configs/grpo.yaml")
    funcs = []
    for name in names:
        func = _resolve_one(name)
        try:
            funcs.append(bind(func, settings or {}))
        except KeyError as err:
            raise UserError(f"{err.args[0]}; they come from the recipe") from err
    return funcs


def _resolve_one(name: str) -> RewardFunc:
    if name in REGISTRY:
        return REGISTRY[name]
    if "." not in name:
        known = ", ".join(sorted(REGISTRY))
        raise UserError(
            f"unknown reward '{name}': use one of {known}, or a dotted path module.function"
        )
    module_name, _, attribute = name.rpartition(".")
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise UserError(f"reward '{name}': cannot import module '{module_name}' ({err})") from err
    func = getattr(module, attribute, None)
    if not callable(func):
        raise UserError(f"reward '{name}': module '{module_name}' has no function '{attribute}'")
    return func
