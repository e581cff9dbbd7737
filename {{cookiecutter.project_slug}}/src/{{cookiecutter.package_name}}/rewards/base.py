"""Reward plumbing shared by every task: TRL's calling contract, text helpers and a guard.

TRL calls a reward function as `f(prompts=..., completions=..., completion_ids=..., **columns)`
where each dataset column arrives as a list aligned with the completions, and expects one float
(or `None`, "not applicable") per completion. The `reward` decorator lets a task write the
per-completion logic as `f(text, **row) -> float | None` and adds the guarantees TRL does not:
it never raises because of a completion, never returns NaN/inf, and clamps to the documented range.

Rewards with parameters (the label set, sandbox limits, max_completion_length) name them in
`@reward(..., settings=(...))` and take them as keyword-only arguments. They are passed in when
the recipe's rewards are resolved (`resolve(names, settings)`, settings from
`Recipe.reward_settings()`), never stored in module globals.
"""

from __future__ import annotations

import functools
import inspect
import logging
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

RewardFunc = Callable[..., list[float | None]]

# Reward functions by name. TRL logs each one under its `__name__` (rewards/<name>/mean).
REGISTRY: dict[str, RewardFunc] = {}

# Keyword arguments TRL passes that are not per-row dataset columns.
_TRL_EXTRA_KWARGS = {"trainer_state", "log_extra", "log_metric", "environments", "completion"}
# Dataset columns TRL does not pass to rewards (it passes prompts/completions itself).
TRL_RESERVED_COLUMNS = ("prompt", "completion", "completion_ids")


@dataclass(frozen=True)
class RewardRange:
    """The documented range of a reward; ideal completions reach `high`."""

    low: float
    high: float


def completion_text(completion: Any) -> str:
    """The text of one completion, conversational (list of messages) or plain."""
    if completion is None:
        return ""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        return str(completion.get("content") or "")
    if isinstance(completion, list | tuple):
        parts = []
        for message in completion:
            if isinstance(message, dict):
                if message.get("role", "assistant") == "assistant":
                    parts.append(str(message.get("content") or ""))
            else:
                parts.append(str(message))
        return "".join(parts)
    return str(completion)


def reward(
    low: float, high: float, batched: bool = False, settings: tuple[str, ...] = ()
) -> Callable[[Callable[..., float | None]], RewardFunc]:
    """Turn a scorer into a TRL reward function registered under its name.

    The scorer receives the completion text first and the row's dataset columns as keyword
    arguments; with `batched=True` it receives lists (all completions and their columns) and
    returns a list, so it can parallelise. Required keyword parameters are checked once per
    batch: a missing column is a configuration error and raises, while anything a completion
    triggers is scored `low`. `settings` names keyword-only parameters that come from the recipe
    (see `bind`), not from the dataset.
    """
    if not low < high:
        raise ValueError(f"reward range must have low < high, got ({low}, {high})")

    def decorate(scorer: Callable[..., float | None]) -> RewardFunc:
        required = [c for c in _required_columns(scorer) if c not in settings]
        name = scorer.__name__

        @functools.wraps(scorer)
        def reward_func(
            completions: list[Any], _settings: dict | None = None, **kwargs: Any
        ) -> list[float | None]:
            if settings and _settings is None:
                raise TypeError(
                    f"reward '{name}' needs the settings {list(settings)}: get it from "
                    "rewards.resolve(names, recipe.reward_settings())"
                )
            fixed = _settings or {}
            missing = [column for column in required if column not in kwargs]
            if missing:
                raise KeyError(
                    f"reward '{name}' needs dataset column(s) {missing}; the training data has "
                    f"{sorted(k for k in kwargs if k not in _TRL_EXTRA_KWARGS)}"
                )
            n = len(completions)
            columns = {
                key: value
                for key, value in kwargs.items()
                if key not in _TRL_EXTRA_KWARGS and isinstance(value, list) and len(value) == n
            }
            if batched:
                return _score_batch(scorer, completions, {**columns, **fixed}, low, high)
            scores: list[float | None] = []
            for i, completion in enumerate(completions):
                row = {key: value[i] for key, value in columns.items()}
                scores.append(_score_one(scorer, completion, {**row, **fixed}, low, high))
            return scores

        reward_func.reward_range = RewardRange(low, high)  # type: ignore[attr-defined]
        reward_func.required_columns = tuple(required)  # type: ignore[attr-defined]
        reward_func.settings = tuple(settings)  # type: ignore[attr-defined]
        if name in REGISTRY and REGISTRY[name].__module__ != reward_func.__module__:
            raise ValueError(f"two reward functions are named '{name}'")
        REGISTRY[name] = reward_func
        return reward_func

    return decorate


def bind(func: RewardFunc, settings: dict) -> RewardFunc:
    """The reward with the recipe settings it names fixed (TRL calls it without them); rewards
    without settings come back as they are."""
    needed = getattr(func, "settings", ())
    if not needed:
        return func
    missing = [key for key in needed if key not in settings]
    if missing:
        raise KeyError(f"reward '{func.__name__}' needs the settings {missing}")
    values = {key: settings[key] for key in needed}

    @functools.wraps(func)
    def bound(completions: list[Any], **kwargs: Any) -> list[float | None]:
        return func(completions, _settings=values, **kwargs)

    bound.settings = ()  # type: ignore[attr-defined]
    return bound


def _required_columns(scorer: Callable[..., Any]) -> list[str]:
    parameters = list(inspect.signature(scorer).parameters.values())[1:]
    return [
        p.name
        for p in parameters
        if p.default is inspect.Parameter.empty
        and p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]


_warned: set[str] = set()


def _warn_once(scorer: Callable, err: Exception, low: float) -> None:
    if scorer.__name__ not in _warned:
        _warned.add(scorer.__name__)
        logger.warning(
            "reward %s failed on a completion (%r); scored %s", scorer.__name__, err, low
        )


def _score_batch(scorer, completions, columns, low, high) -> list[float | None]:
    texts = [completion_text(c) for c in completions]
    try:
        values = list(scorer(texts, **columns))
    except Exception as err:  # a batch must never crash training
        _warn_once(scorer, err, low)
        return [low] * len(texts)
    if len(values) != len(texts):
        _warn_once(scorer, ValueError(f"{len(values)} scores for {len(texts)} completions"), low)
        return [low] * len(texts)
    return [_clean(value, low, high) for value in values]


def _score_one(
    scorer: Callable[..., float | None], completion: Any, row: dict, low: float, high: float
) -> float | None:
    try:
        value = scorer(completion_text(completion), **row)
    except Exception as err:  # a completion must never crash training
        _warn_once(scorer, err, low)
        return low
    return _clean(value, low, high)


def _clean(value, low: float, high: float) -> float | None:
    """None stays None; anything else becomes a finite float in [low, high] (junk -> low)."""
    if value is None:
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return low
    if not math.isfinite(value):
        return low
    return min(max(value, low), high)


def call_like_trl(func: RewardFunc, completions: list[str], rows: list[dict]) -> list:
    """Call a reward the way GRPOTrainer does: conversational completions, TRL's extra keyword
    arguments, and every dataset column except the prompt as a list aligned with completions.
    Used by the reward debug command and the tests."""
    columns = {
        key: [row[key] for row in rows] for key in rows[0] if key not in TRL_RESERVED_COLUMNS
    }
    return func(
        prompts=[row.get("prompt", []) for row in rows],
        completions=[[{"role": "assistant", "content": c}] for c in completions],
        completion_ids=[None] * len(completions),
        trainer_state=None,
        log_extra=lambda *args, **kwargs: None,
        log_metric=lambda *args, **kwargs: None,
        **columns,
    )


# --- text helpers used by several tasks -------------------------------------------------------

_ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def extract_answer(text: str) -> str | None:
    """Content of the last `<answer>...</answer>` block, stripped; `None` when there is none."""
    matches = _ANSWER_RE.findall(text)
    if not matches:
        return None
    return matches[-1].strip()


def tail(text: str, limit: int = 4000) -> str:
    """The last `limit` characters: answers sit at the end, and this bounds parser work."""
    return text[-limit:] if len(text) > limit else text
