"""The reward contract: TRL's calling convention, a guard, settings and time budgets.

TRL calls a reward function as `f(prompts=..., completions=..., completion_ids=..., **columns)`
where each dataset column arrives as a list aligned with the completions, and expects one float
(or `None`, "not applicable") per completion. The `reward` decorator lets a task write the
per-completion logic as `f(text, **row) -> float | None` and adds the guarantees TRL does not:
it never raises because of a completion, never returns NaN/inf, and clamps to the documented range.

Rewards with parameters (the label set, sandbox limits, max_completion_length) name them in
`@reward(..., settings=(...))` and take them as keyword-only arguments. They are passed in when
the recipe's rewards are resolved (`resolve(names, table, settings)`, settings from
`Recipe.reward_settings()`), never stored in module globals.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import math
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

RewardFunc = Callable[..., list[float | None]]

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


def completion_messages(completion: Any) -> list[dict]:
    """One completion as a list of messages (an agent rollout: assistant turns, their
    `tool_calls`, and the tool results); a plain text is one assistant message. Anything else
    TRL could hand over becomes text, never an error."""
    if isinstance(completion, list | tuple):
        messages = []
        for message in completion:
            if isinstance(message, dict):
                messages.append(message)
            else:
                messages.append({"role": "assistant", "content": str(message)})
        return messages
    return [{"role": "assistant", "content": completion_text(completion)}]


def reward(
    low: float,
    high: float,
    batched: bool = False,
    settings: tuple[str, ...] = (),
    time_budget: float | None = None,
    conversation: bool = False,
    metrics: Callable[[Any], dict[str, float]] | None = None,
) -> Callable[[Callable[..., float | None]], RewardFunc]:
    """Turn a scorer into a TRL reward function (TRL logs it under the scorer's name).

    The scorer receives the completion text first (with `conversation=True`, the completion's
    messages instead: an agent's tool calls and tool results, see `completion_messages`) and the
    row's dataset columns as keyword arguments; with `batched=True` it receives lists (all
    completions and their columns) and returns a list, so it can parallelise. Required keyword
    parameters are checked once per batch: a missing column is a configuration error and raises,
    while anything a completion triggers is scored `low`, alone (a batched scorer that raises
    is called again on each completion by itself, so its neighbours keep their scores), and
    counted: TRL metric `rewards/<name>/errors` on every call, and a warning on each call that
    had any. `settings` names keyword-only parameters that come from the recipe (see `bind`), not
    from the dataset. `time_budget` (CPU seconds) bounds the scorer's work on one completion:
    past it the completion scores `low`, and the event is counted (see `time_budget`).
    `metrics(completion)` gives figures of one completion ({name: value}, the completion as the
    scorer gets it) that are logged as TRL metrics, their mean over the call's completions.
    """
    if not low < high:
        raise ValueError(f"reward range must have low < high, got ({low}, {high})")
    if batched and time_budget is not None:
        raise ValueError("time_budget bounds one completion's work: use it with batched=False")
    if batched and conversation:
        raise ValueError("conversation scorers take one completion: use them with batched=False")

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
            log_metric = kwargs.get("log_metric")
            errors: list[BaseException] = []
            if metrics is not None:
                _report_metrics(metrics, completions, conversation, log_metric)
            if batched:
                scores = _score_batch(scorer, completions, columns, fixed, low, high, errors)
                _report_errors(name, errors, n, low, log_metric)
                return scores
            scores = []
            timeouts = 0
            for i, completion in enumerate(completions):
                row = {key: value[i] for key, value in columns.items()}
                try:
                    with _budget(time_budget):
                        value = _score_one(
                            scorer, completion, {**row, **fixed}, low, high, conversation, errors
                        )
                except RewardTimeout:
                    value, timeouts = low, timeouts + 1
                scores.append(value)
            if time_budget is not None or timeouts:
                _report_timeouts(name, timeouts, n, time_budget, low, log_metric)
            _report_errors(name, errors, n, low, log_metric)
            return scores

        reward_func.reward_range = RewardRange(low, high)  # type: ignore[attr-defined]
        reward_func.required_columns = tuple(required)  # type: ignore[attr-defined]
        reward_func.settings = tuple(settings)  # type: ignore[attr-defined]
        reward_func.time_budget = time_budget  # type: ignore[attr-defined]
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


ERROR_METRIC = "rewards/{name}/errors"  # completions a guard scored low, on every call


def _score_batch(scorer, completions, columns, fixed, low, high, errors) -> list[float | None]:
    """The batched scorer on all completions (`columns`: the rows' columns, lists aligned with
    them; `fixed`: the recipe settings); when it raises or returns the wrong number of scores,
    on each completion alone, so only the ones that fail score `low`."""
    texts = [completion_text(c) for c in completions]
    try:
        values = list(scorer(texts, **columns, **fixed))
        if len(values) != len(texts):
            raise ValueError(f"{len(values)} scores for {len(texts)} completions")
    except Exception as err:  # a batch must never crash training, nor one completion the rest
        if len(texts) == 1:
            errors.append(err)
            return [low]
        return [
            _scored_alone(scorer, text, columns, fixed, i, low, high, errors)
            for i, text in enumerate(texts)
        ]
    return [_clean(value, low, high) for value in values]


def _scored_alone(scorer, text, columns, fixed, index, low, high, errors) -> float | None:
    """A batched scorer's value for the completion at `index`, scored as a batch of one."""
    row = {key: [value[index]] for key, value in columns.items()}
    try:
        values = list(scorer([text], **row, **fixed))
        if len(values) != 1:
            raise ValueError(f"{len(values)} scores for 1 completion")
    except Exception as err:
        errors.append(err)
        return low
    return _clean(values[0], low, high)


def _score_one(
    scorer: Callable[..., float | None],
    completion: Any,
    row: dict,
    low: float,
    high: float,
    conversation: bool = False,
    errors: list | None = None,
) -> float | None:
    try:
        given = completion_messages(completion) if conversation else completion_text(completion)
        value = scorer(given, **row)
    except RewardTimeout:
        raise
    except Exception as err:  # a completion must never crash training
        if errors is not None:
            errors.append(err)
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


# --- time budgets -----------------------------------------------------------------------------
# A parser that can be made to work for minutes (math-verify on `9^{9^{9^{9}}}`, a schema's
# backtracking `pattern`) runs under a budget of CPU time: the machine being busy (other
# processes, the host's load) slows the work down but does not spend its budget, so a verdict
# does not depend on the load. In the main thread, where TRL calls rewards, a SIGALRM timer
# ticks and interrupts the work once its CPU time is spent; elsewhere signals cannot, so the
# budget is checked when the work ends (the completion still scores low and is counted, but its
# time was spent). Work that waits without computing is stopped at WALL_FACTOR x the budget.

TIMEOUT_METRIC = "rewards/{name}/timeouts"  # logged through TRL's `log_metric` on every call
WALL_FACTOR = 10.0  # wall-clock cap of a budget, in budgets (work blocked, not computing)
_RETRY_S = 0.05  # the timer ticks this often once the budget's wall time has passed
_active = threading.local()  # per thread, the budgets open in it (innermost last)


class RewardTimeout(Exception):
    """Work on one completion ran past its time budget."""


class _Interrupt(BaseException):
    # A BaseException, so the `except Exception` clauses of the libraries being interrupted
    # (math-verify, sympy, jsonschema) let it through.
    pass


def time_budget(seconds: float) -> _TimeBudget:
    """A context manager that raises `RewardTimeout` when its block has used more than `seconds`
    of CPU time (the thread's own: `time.thread_time`), or has run for WALL_FACTOR times that
    on the wall clock (work that waits instead of computing).

    In the main thread the block is interrupted (a SIGALRM timer that first fires after
    `seconds` and then every `_RETRY_S`, checking the CPU time spent, and getting through code
    that swallows exceptions); in other threads it runs to the end and the budget is checked
    afterwards. A budget inside another pauses the outer one: the inner block's time is not the
    outer block's (a row's gold answer, parsed once and cached, does not count against the
    completion that first needed it)."""
    return _TimeBudget(seconds)


class _TimeBudget:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.running = False

    def __enter__(self) -> _TimeBudget:
        self.paused_cpu = self.paused_wall = 0.0  # spent in inner budgets
        self.main = threading.current_thread() is threading.main_thread()
        if not hasattr(_active, "budgets"):
            _active.budgets = []
        _active.budgets.append(self)
        self.start_cpu, self.start_wall = time.thread_time(), time.monotonic()
        self.running = True
        if self.main:
            self.previous = signal.signal(signal.SIGALRM, self._alarm)
            self.outer = signal.setitimer(signal.ITIMER_REAL, self.seconds, _RETRY_S)
        return self

    def _alarm(self, signum, frame) -> None:
        # Only the block is interrupted, and only once its CPU time is spent: a timer that
        # fires while __enter__ starts it (the machine being busy) fires again _RETRY_S later,
        # in the block; one that fires as the block ends is too late to matter.
        if not self.running or (frame is not None and frame.f_code in _OWN_CODE):
            return
        cpu = time.thread_time() - self.start_cpu - self.paused_cpu
        wall = time.monotonic() - self.start_wall - self.paused_wall
        if cpu >= self.seconds or wall >= self.seconds * WALL_FACTOR:
            raise _Interrupt

    def __exit__(self, kind, error, traceback) -> bool:
        self.running = False
        if self.main:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)
            if self.outer[0]:  # an enclosing budget (or another timer): resume it where it was
                signal.setitimer(signal.ITIMER_REAL, *self.outer)
        cpu_total = time.thread_time() - self.start_cpu
        wall_total = time.monotonic() - self.start_wall
        budgets = _active.budgets
        if budgets and budgets[-1] is self:
            budgets.pop()
            if budgets:  # the enclosing budget does not pay for this block
                budgets[-1].paused_cpu += cpu_total
                budgets[-1].paused_wall += wall_total
        if kind is _Interrupt:
            raise RewardTimeout(f"interrupted after {self.seconds:g} CPU s") from None
        cpu, wall = cpu_total - self.paused_cpu, wall_total - self.paused_wall
        over = cpu > self.seconds or wall > self.seconds * WALL_FACTOR
        if kind is None and over and not self.main:
            raise RewardTimeout(f"used {cpu:.2f} CPU s ({wall:.2f} s), over {self.seconds:g}")
        return False


_OWN_CODE = (
    _TimeBudget.__enter__.__code__,
    _TimeBudget.__exit__.__code__,
    _TimeBudget._alarm.__code__,
)


def _budget(seconds: float | None) -> contextlib.AbstractContextManager:
    return contextlib.nullcontext() if seconds is None else time_budget(seconds)


def _report_timeouts(
    name: str, timeouts: int, total: int, seconds: float | None, low: float, log_metric
) -> None:
    """Count the completions that ran out of time: a TRL metric on every call (0 included, so
    its average per logging step means something) and a warning when there were any."""
    if callable(log_metric):
        log_metric(TIMEOUT_METRIC.format(name=name), float(timeouts))
    if timeouts:
        logger.warning(
            "reward %s: %d of %d completion(s) ran past their time budget%s and scored %s",
            name,
            timeouts,
            total,
            f" of {seconds:g} s" if seconds is not None else "",
            low,
        )


def _report_errors(name: str, errors: list, total: int, low: float, log_metric) -> None:
    """Count the completions a guard scored `low` (the scorer raised on them): a TRL metric on
    every call (0 included) and a warning, with the first error, on each call that had any."""
    if callable(log_metric):
        log_metric(ERROR_METRIC.format(name=name), float(len(errors)))
    if errors:
        logger.warning(
            "reward %s failed on %d of %d completion(s) (first: %r); scored %s",
            name,
            len(errors),
            total,
            errors[0],
            low,
        )


def _report_metrics(metrics, completions: list, conversation: bool, log_metric) -> None:
    """The mean over the completions of each figure `metrics(completion)` gives, logged through
    TRL's `log_metric` (a completion whose figures cannot be had counts 0)."""
    if not callable(log_metric) or not completions:
        return
    totals: dict[str, float] = {}
    for completion in completions:
        given = completion_messages(completion) if conversation else completion_text(completion)
        try:
            figures = dict(metrics(given))
        except Exception:  # figures are for the logs; they never fail a reward
            continue
        for key, value in figures.items():
            try:
                number = float(value)
            except (TypeError, ValueError):
                continue
            if math.isfinite(number):
                totals[key] = totals.get(key, 0.0) + number
    for key in sorted(totals):
        log_metric(key, totals[key] / len(completions))


def call_like_trl(func: RewardFunc, completions: list, rows: list[dict]) -> list:
    """Call a reward the way GRPOTrainer does: conversational completions (a text becomes one
    assistant message; an agent rollout, a list of messages, is passed as it is), TRL's extra
    keyword arguments, and every dataset column except the prompt as a list aligned with
    completions. Used by the reward debug command and the tests."""
    columns = {
        key: [row[key] for row in rows] for key in rows[0] if key not in TRL_RESERVED_COLUMNS
    }
    return func(
        prompts=[row.get("prompt", []) for row in rows],
        completions=[
            c if isinstance(c, list) else [{"role": "assistant", "content": c}] for c in completions
        ],
        completion_ids=[None] * len(completions),
        trainer_state=None,
        log_extra=lambda *args, **kwargs: None,
        log_metric=lambda *args, **kwargs: None,
        **columns,
    )
