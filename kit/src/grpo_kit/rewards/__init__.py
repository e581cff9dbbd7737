"""Rewards: the contract every reward follows (`reward`, in base.py), the kit's reusable rewards
(`formats`), and `resolve`, which turns the recipe's `reward_funcs` into callables.

A name in `reward_funcs` is looked up in the task's reward table (`Task.rewards`, the explicit
list in the project's task.py), or is a dotted path `module.function` importable from the project
root, as `trl grpo` allows.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from pathlib import Path

from ..errors import UserError
from .base import (
    ERROR_METRIC,
    TIMEOUT_METRIC,
    RewardFunc,
    RewardRange,
    RewardTimeout,
    bind,
    call_like_trl,
    completion_messages,
    completion_text,
    reward,
    time_budget,
)

__all__ = [
    "ERROR_METRIC",
    "TIMEOUT_METRIC",
    "RewardFunc",
    "RewardRange",
    "RewardTimeout",
    "bind",
    "call_like_trl",
    "completion_messages",
    "completion_text",
    "resolve",
    "reward",
    "time_budget",
]


def resolve(
    names: list[str], table: Mapping[str, RewardFunc], settings: dict | None = None
) -> list[RewardFunc]:
    """Callables for the recipe's `reward_funcs`, in order, looked up in `table` (the task's
    rewards), with the recipe settings they take (`Recipe.reward_settings()`) bound."""
    if not names:
        raise UserError(
            "reward_funcs is empty: the task's rewards are TASK.rewards in src/<package>/task.py"
        )
    funcs = []
    for name in names:
        func = _resolve_one(name, table)
        try:
            funcs.append(bind(func, settings or {}))
        except KeyError as err:
            raise UserError(f"{err.args[0]}; they come from the recipe") from err
    return funcs


def _resolve_one(name: str, table: Mapping[str, RewardFunc]) -> RewardFunc:
    if name in table:
        return table[name]
    if "." not in name:
        known = ", ".join(table)
        raise UserError(
            f"unknown reward '{name}': use one of the task's rewards ({known}), or a dotted path "
            "module.function"
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
