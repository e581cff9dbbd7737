"""Training health: what TRL logs, read each logging step, turned into warnings with the fix.

GRPO fails quietly: the loss says nothing (it is about 0 by construction), so the signs are in
`reward_std`, `frac_reward_zero_std`, `kl`, `entropy`, the clipped ratio and the reward curves.
`assess(history, limits)` is a pure function over the logged rows (unit-tested); `HealthMonitor`
calls it at every log, reports each new finding once (and when it clears), appends the events
to `output_dir/health.jsonl`, and stops the run (after saving a checkpoint, unless its weights
are not finite) on a fatal finding when the recipe sets `health_stop_on_fatal: true`.

Two signals TRL does not log as such are made here:
- the correctness reward's own spread per group. TRL logs `frac_reward_zero_std` on the total
  reward and `rewards/<name>/std` over the whole batch; a group whose completions all fail (or
  all pass) the correctness check still has total-reward spread from the format and length
  rewards, so it trains format while looking healthy ("phantom gradients").
  `watch_group_spread` wraps each reward function to log, through TRL's `log_metric`, the share
  of its groups whose scores are all equal (`rewards/<name>/frac_zero_std`);
- the vLLM rollout correction (`sampling/*`): a large trainer/vLLM logprob gap or an importance
  ratio far from 1 means rollouts are down-weighted or dropped.

A NaN or infinite `loss`, `kl`, `entropy` or `grad_norm` is the loudest finding (`non_finite`,
fatal): the weights or the loss have overflowed and every later step trains on garbage. TRL
averages NaN values out of its metrics and logs None when nothing finite is left, and the
Trainer's `logging_nan_inf_filter` hides a NaN loss, so a None or NaN in any of these four
counts. With fp16 mixed precision, an infinite `grad_norm` is the loss scaler skipping a step,
normal now and then: there it is a warning, fatal when it lasts `health_patience` logs. A stop on
`non_finite` saves no checkpoint (its weights are not finite): the rerun resumes from the last
checkpoint before it.

Every event goes to `health.jsonl`: `started` (the step training began at: 0, or the checkpoint's
step on a resume), `raised` (with the message) and `cleared`. `read_events` drops the events a
resume replays (those after the checkpoint's step, written before the resume); `fired` sums them
up per check, for the run record and the report. The findings active at a checkpoint are saved in
it (`trainer_state.json`, `stateful_callbacks`), so a resumed run does not raise them again.

Tool-calling runs (`environment_factory`/`tools`): TRL logs `tools/call_frequency` (tool calls
per rollout, batch mean) and `tools/failure_frequency` (failed calls / calls, 0 without calls).
Only when a log holds them, three more checks watch for a model that never calls a tool, one that
calls until `max_tool_calling_iterations` cuts it off, and calls that mostly fail; and when the
`tool_call_errors` reward logs `tools/budget_cuts` (calls cut by the tools' time budget, per
rollout), any cut warns (`tool_budget_cuts`).

A run whose model is a format warm-up's (`grpo warmup`; its run record says so) whose entropy is
below `health_entropy_min` from the first log gets a warning that blames the warm-up (it overfit
its examples: re-run it with a higher `--min-entropy` or fewer epochs), not GRPO's learning rate.

The reward layer's guards (rewards/base.py) log, on every call, the completions they scored low:
`rewards/<name>/errors` (the scorer raised on them) and `rewards/<name>/timeouts` (they ran past
the reward's time budget). Any log where one is above 0 warns, naming the rewards
(`reward_errors`, `reward_timeouts`): training goes on, but a correct completion may have
scored low.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import logging
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from transformers import TrainerCallback

from ..environments import BUDGET_CUTS_METRIC
from ..rewards import ERROR_METRIC, TIMEOUT_METRIC
from .run_record import strict

logger = logging.getLogger(__name__)

HEALTH_LOG = "health.jsonl"


@dataclass(frozen=True)
class HealthLimits:
    """Thresholds (the recipe's `health_*` fields, whose defaults are in recipe.ScriptArguments)
    and what the checks need to know."""

    zero_std_max: float  # share of groups whose completions all scored the same
    kl_max: float  # only checked when beta > 0 (TRL logs kl only then)
    entropy_min: float  # mean token entropy (nats) below which the policy has collapsed
    clipped_max: float  # share of completions cut at max_completion_length
    flat_logs: int  # logs over which a reward that does not move is a plateau
    flat_delta: float
    patience: int  # consecutive logs before a persistent problem is fatal
    tool_warmup_logs: int  # tool runs: first logs in which calling no tool is normal
    tool_logs: int  # tool runs: consecutive logs a tool-use problem lasts before it warns
    tool_failure_max: float  # tool runs: share of tool calls that may fail
    beta: float = 0.0
    correctness: str | None = None  # the task's correctness reward (hacking, per-group spread)
    max_completion_length: int = 0
    # vLLM rollouts (sampling/* metrics): mean |trainer - vLLM| logprob per token (nats), and how
    # far the mean importance ratio may sit from 1 (below: rollouts down-weighted or dropped).
    logp_difference_max: float = 0.05
    importance_ratio_tolerance: float = 0.1
    max_tool_calling_iterations: int | None = None  # the recipe's cap on tool turns (None: none)
    fp16: bool = False  # fp16 mixed precision: an infinite grad_norm is a skipped step
    # the format warm-up the run's model came from, in words (`warmup_origin`; None: none): an
    # entropy low from the first log is that warm-up's overfit, not GRPO's learning rate
    warmup: str | None = None


@dataclass(frozen=True)
class Finding:
    check: str
    severity: str  # "warning" or "fatal"
    step: int
    value: float
    limit: float
    message: str  # what it means and what to change


SPREAD_METRIC = "rewards/{name}/frac_zero_std"
# Logged values that must be finite: a NaN or an infinity in any of them is fatal.
FINITE_KEYS = ("loss", "grad_norm", "kl", "entropy")
NON_FINITE = "non_finite"
STATE_KEY = "grpo_kit.health"  # the active findings, in trainer_state.json's stateful_callbacks
TOOL_CALLS = "tools/call_frequency"  # TRL: tool calls per rollout, mean over the batch
TOOL_FAILURES = "tools/failure_frequency"  # TRL: failed calls / calls (0 when no call)


def spread_metric(name: str) -> str:
    """The metric `watch_group_spread` logs for a reward: its share of zero-spread groups."""
    return SPREAD_METRIC.format(name=name)


def uses_tools(rows: list[dict]) -> bool:
    """Whether the logs come from a tool-calling run (TRL logs the tool metrics only then)."""
    return any(TOOL_CALLS in row for row in rows)


def training_rows(history: list[dict]) -> list[dict]:
    """The training logs among `state.log_history` (not evaluation or the final summary)."""
    return [row for row in history if "reward" in row and "train_runtime" not in row]


def _number(row: dict, key: str) -> float | None:
    value = row.get(key)
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


def _series(rows: list[dict], key: str) -> list[float]:
    return [v for v in (_number(r, key) for r in rows) if v is not None]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def assess(history: list[dict], limits: HealthLimits) -> list[Finding]:
    """The problems the latest logs show, worst first."""
    rows = training_rows(history)
    if not rows:
        return []
    last, step = rows[-1], int(rows[-1].get("step", len(rows)))
    findings = [
        f
        for f in (
            _non_finite(rows, last, step, limits),
            _zero_std(rows, last, step, limits),
            _correctness_spread(rows, last, step, limits),
            _kl(rows, last, step, limits),
            _entropy(rows, last, step, limits),
            _clipped(last, step, limits),
            _flat(rows, step, limits),
            _hacking(rows, step, limits),
            _sampling(rows, last, step, limits),
            _no_tool_calls(rows, step, limits),
            _tool_cap(rows, step, limits),
            _tool_failures(rows, step, limits),
            _reward_errors(last, step),
            _reward_timeouts(last, step),
            _tool_budget_cuts(last, step),
        )
        if f is not None
    ]
    return sorted(findings, key=lambda f: f.severity != "fatal")


def non_finite_values(row: dict) -> dict[str, float]:
    """{key: value} of the `FINITE_KEYS` a log row holds that are not finite numbers (TRL logs
    None for a metric whose every value was NaN: it counts as NaN)."""
    bad = {}
    for key in FINITE_KEYS:
        if key not in row:
            continue
        value = row[key]
        if value is None:
            bad[key] = math.nan
        elif isinstance(value, int | float) and not math.isfinite(value):
            bad[key] = float(value)
    return bad


def _non_finite(rows, last, step, limits: HealthLimits) -> Finding | None:
    bad = non_finite_values(last)
    if not bad:
        return None
    recent = rows[-limits.patience :]
    lasting = len(recent) == limits.patience and all(
        "grad_norm" in non_finite_values(r) for r in recent
    )
    skipped = limits.fp16 and set(bad) == {"grad_norm"} and not lasting
    values = ", ".join(f"{key} {value}" for key, value in bad.items())
    if skipped:
        return Finding(
            NON_FINITE,
            "warning",
            step,
            bad["grad_norm"],
            0.0,
            f"{values}: with fp16 the loss scaler skipped this step (its gradients overflowed); "
            f"normal now and then, fatal when it lasts {limits.patience} logs. If it lasts: "
            "train in bf16 where the GPU has it, or lower learning_rate.",
        )
    return Finding(
        NON_FINITE,
        "fatal",
        step,
        next(iter(bad.values())),
        0.0,
        f"{values} at step {step}: the loss or the weights have overflowed, so every later "
        "step trains on garbage (or generation fails). Lower learning_rate (e.g. 10x), keep "
        "max_grad_norm at 1.0 or lower, train in bf16 rather than fp16 (fp16 overflows), check "
        "that every reward returns finite numbers (make reward-debug), then rerun: it resumes "
        "from the last checkpoint saved before this step (with health_stop_on_fatal: true no "
        "checkpoint is saved after it).",
    )


def _zero_std(rows, last, step, limits: HealthLimits) -> Finding | None:
    zero = _number(last, "frac_reward_zero_std")
    std = _number(last, "reward_std")
    if zero is None and std is None:
        return None
    value = zero if zero is not None else 0.0
    if value < limits.zero_std_max and not (std is not None and std < 1e-6):
        return None
    recent = rows[-limits.patience :]
    dead = len(recent) == limits.patience and all(
        (_number(r, "reward_std") or 0.0) < 1e-6 for r in recent
    )
    return Finding(
        "reward_std",
        "fatal" if dead else "warning",
        step,
        value,
        limits.zero_std_max,
        f"{value:.0%} of prompt groups scored all their completions the same (reward_std "
        f"{std if std is not None else float('nan'):.3g}): those groups teach nothing. Check the "
        "rewards on real completions (make reward-debug), keep prompts the model sometimes but "
        "not always solves (make filter), or raise num_generations / temperature.",
    )


def _correctness_spread(rows, last, step, limits: HealthLimits) -> Finding | None:
    """The correctness reward alone: groups where every completion scored the same."""
    if not limits.correctness:
        return None
    key = spread_metric(limits.correctness)
    value = _number(last, key)
    if value is None or value < limits.zero_std_max:
        return None
    recent = _series(rows[-limits.flat_logs :], key)
    dead = len(recent) == limits.flat_logs and all(v >= 1.0 - 1e-9 for v in recent)
    total = _number(last, "frac_reward_zero_std")
    phantom = ""
    if total is not None and total < value - 1e-9:
        varying = varying_rewards(last, exclude=limits.correctness)
        named = _listed(varying) if varying else "the other rewards"
        phantom = (
            f"; only {total:.0%} have no spread in the total reward: {named} still "
            f"{'varies' if len(varying) == 1 else 'vary'}, so those groups train "
            f"{_listed(varying) if varying else 'them'} while {limits.correctness} gets no "
            "gradient (phantom gradients)"
        )
    return Finding(
        "correctness_spread",
        "fatal" if dead else "warning",
        step,
        value,
        limits.zero_std_max,
        f"{value:.0%} of prompt groups gave every completion the same {limits.correctness} "
        f"score{phantom}. Train on prompts the model solves sometimes but not always: `make "
        "filter` measures each prompt's pass rate and writes the ones in a band; or raise "
        "num_generations / temperature, or train the format first (make stages).",
    )


def varying_rewards(row: dict, exclude: str | None = None) -> list[str]:
    """The rewards whose scores differed within at least one group of this log (their logged
    `rewards/<name>/frac_zero_std` is below 1), in logged order; `exclude` left out."""
    prefix, suffix = SPREAD_METRIC.split("{name}")
    names = []
    for key in row:
        if not (key.startswith(prefix) and key.endswith(suffix)):
            continue
        name = key[len(prefix) : -len(suffix)]
        value = _number(row, key)
        if name != exclude and value is not None and value < 1.0 - 1e-9:
            names.append(name)
    return names


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _kl(rows, last, step, limits: HealthLimits) -> Finding | None:
    kl = _number(last, "kl")
    if limits.beta <= 0 or kl is None or kl <= limits.kl_max:
        return None
    recent = _series(rows[-limits.patience :], "kl")
    far = len(recent) == limits.patience and all(v > 2 * limits.kl_max for v in recent)
    return Finding(
        "kl",
        "fatal" if far else "warning",
        step,
        kl,
        limits.kl_max,
        f"kl {kl:.3g} > {limits.kl_max:g}: the policy has moved far from the reference model. "
        "Lower learning_rate, or raise beta to hold it closer.",
    )


def _entropy(rows, last, step, limits: HealthLimits) -> Finding | None:
    entropy = _number(last, "entropy")
    if entropy is None or entropy >= limits.entropy_min:
        return None
    if limits.warmup and all(v < limits.entropy_min for v in _series(rows, "entropy")):
        return Finding(
            "entropy",
            "warning",
            step,
            entropy,
            limits.entropy_min,
            f"token entropy {entropy:.3g} < {limits.entropy_min:g} from the first log: the run "
            f"started from {limits.warmup}, which left the policy nearly deterministic before "
            "GRPO's first step (it overfit its examples), so a group's completions cannot "
            "differ. GRPO's learning rate is not the cause: re-run make warmup with a higher "
            "--min-entropy (it stops the fine-tune there) or fewer --epochs, and train from "
            "its merged model.",
        )
    return Finding(
        "entropy",
        "warning",
        step,
        entropy,
        limits.entropy_min,
        f"token entropy {entropy:.3g} < {limits.entropy_min:g}: the policy has become nearly "
        "deterministic, so a group's completions stop differing. Lower learning_rate, raise "
        "temperature, or keep an earlier checkpoint.",
    )


def _clipped(last, step, limits: HealthLimits) -> Finding | None:
    clipped = _number(last, "completions/clipped_ratio")
    if clipped is None or clipped <= limits.clipped_max:
        return None
    length = f" ({limits.max_completion_length} tokens)" if limits.max_completion_length else ""
    return Finding(
        "clipped_ratio",
        "warning",
        step,
        clipped,
        limits.clipped_max,
        f"{clipped:.0%} of completions were cut at max_completion_length{length}, so their "
        "answers are missing and correctness reads 0. Raise max_completion_length, or weight a "
        "length penalty (soft_overlong) higher.",
    )


def _flat(rows, step, limits: HealthLimits) -> Finding | None:
    window = _series(rows[-limits.flat_logs :], "reward")
    if len(rows) < limits.flat_logs or len(window) < limits.flat_logs:
        return None
    spread = max(window) - min(window)
    if spread >= limits.flat_delta:
        return None
    return Finding(
        "plateau",
        "warning",
        step,
        spread,
        limits.flat_delta,
        f"the reward has stayed within {spread:.3g} of {window[-1]:.3g} for {limits.flat_logs} "
        "logs: a plateau. Far from the best score: raise learning_rate or use easier prompts; "
        "near it: training is done, stop and evaluate.",
    )


def _hacking(rows, step, limits: HealthLimits) -> Finding | None:
    if not limits.correctness:
        return None
    key = f"rewards/{limits.correctness}/mean"
    half = max(limits.flat_logs // 2, 2)
    recent = rows[-2 * half :]
    lengths = _series(recent, "completions/mean_length")
    scores = _series(recent, key)
    if len(lengths) < 2 * half or len(scores) < 2 * half:
        return None
    before, after = _mean(lengths[:half]), _mean(lengths[half:])
    gained = _mean(scores[half:]) - _mean(scores[:half])
    if before <= 0 or after < 1.2 * before or gained > 0.01:
        return None
    growth = after / before - 1
    return Finding(
        "reward_hacking",
        "warning",
        step,
        growth,
        0.2,
        f"completions grew {growth:.0%} longer over the last {2 * half} logs while "
        f"{limits.correctness} did not improve ({gained:+.3f}): the policy may be gaming a "
        "format or length reward. Read recent completions (make report), lower those rewards' "
        "weights or add a length penalty.",
    )


def _sampling(rows, last, step, limits: HealthLimits) -> Finding | None:
    """vLLM rollouts that the trainer scores differently: down-weighted or dropped updates."""
    gap = _number(last, "sampling/sampling_logp_difference/mean")
    ratio = _number(last, "sampling/importance_sampling_ratio/mean")
    recent = rows[-limits.patience :]
    dropped = len(recent) == limits.patience and all(
        _number(r, "sampling/importance_sampling_ratio/min") == 0.0 for r in recent
    )
    signs = []
    if gap is not None and gap > limits.logp_difference_max:
        signs.append(f"vLLM's token logprobs differ from the trainer's by {gap:.3g} nats")
    if ratio is not None and abs(ratio - 1.0) > limits.importance_ratio_tolerance:
        signs.append(f"the mean importance ratio is {ratio:.3g} (1 when they agree)")
    if dropped:
        signs.append(f"some rollouts were masked out in each of the last {limits.patience} logs")
    if not signs:
        return None
    return Finding(
        "sampling",
        "warning",
        step,
        gap if gap is not None else (ratio if ratio is not None else 0.0),
        limits.logp_difference_max,
        "; ".join(signs) + ": the rollouts come from a model the trainer does not match, so their "
        "updates are shrunk or dropped. Check that vLLM is within TRL's supported range (make "
        "doctor) and generates with the trained weights in the training dtype, and drop "
        "top_k/top_p/min_p truncation (it biases vLLM's logprobs). Keep "
        "vllm_importance_sampling_mode: token_truncate (every algorithm preset's): the sequence "
        "modes multiply the gap over a whole completion and mask long ones.",
    )


def _lasting(rows, key: str, limits: HealthLimits, start: int = 0) -> list[float] | None:
    """`key` over the last `tool_logs` logs when they all hold it and all come at or after log
    number `start` (0-based); else None (a tool check has nothing to judge yet)."""
    n = limits.tool_logs
    if n < 1 or len(rows) < start + n:
        return None
    window = _series(rows[-n:], key)
    return window if len(window) == n else None


def _no_tool_calls(rows, step, limits: HealthLimits) -> Finding | None:
    """Past the warm-up, no tool call at all for `tool_logs` logs in a row."""
    window = _lasting(rows, TOOL_CALLS, limits, start=limits.tool_warmup_logs)
    if window is None or any(v > 0 for v in window):
        return None
    return Finding(
        "no_tool_calls",
        "warning",
        step,
        0.0,
        0.0,
        f"the model made no tool call in the last {limits.tool_logs} logs "
        f"({TOOL_CALLS} 0): it answers without its tools, so tool use earns no reward. Use a "
        "model whose chat template supports tools, describe the tools in the system prompt, "
        "reward well-formed tool calls, or train longer or from a warm start (SFT on "
        "tool-use transcripts).",
    )


def _tool_cap(rows, step, limits: HealthLimits) -> Finding | None:
    """Rollouts that keep calling tools until max_tool_calling_iterations stops them."""
    cap = limits.max_tool_calling_iterations
    if not cap or cap < 1:
        return None
    window = _lasting(rows, TOOL_CALLS, limits)
    if window is None or any(v < cap - 1e-6 for v in window):
        return None
    return Finding(
        "tool_call_cap",
        "warning",
        step,
        window[-1],
        float(cap),
        f"rollouts made {window[-1]:.3g} tool calls on average for {limits.tool_logs} logs, at "
        f"the cap (max_tool_calling_iterations {cap}): the model loops on its tools until cut "
        "off. Give each call a small cost in the reward, raise max_tool_calling_iterations, "
        "and check that the tool results help answer.",
    )


def _tool_failures(rows, step, limits: HealthLimits) -> Finding | None:
    """Most tool calls failing (a wrong name or arguments, or the tool raising)."""
    window = _lasting(rows, TOOL_FAILURES, limits)
    if window is None or any(v <= limits.tool_failure_max for v in window):
        return None
    return Finding(
        "tool_failures",
        "warning",
        step,
        window[-1],
        limits.tool_failure_max,
        f"{window[-1]:.0%} of tool calls failed ({TOOL_FAILURES} above "
        f"{limits.tool_failure_max:g} for {limits.tool_logs} logs): the calls name a missing "
        "tool, pass wrong arguments or make the tool raise. Read the failing calls in the "
        "completions (log_completions: true, make report) and make the tool docstrings and "
        "argument names say exactly what each tool takes.",
    )


def per_reward(row: dict, metric: str) -> dict[str, float]:
    """{reward name: value} of a per-reward metric (`metric`, e.g. ERROR_METRIC, with `{name}`)
    that a log row holds above 0, in logged order."""
    prefix, suffix = metric.split("{name}")
    found = {}
    for key in row:
        if key.startswith(prefix) and key.endswith(suffix) and len(key) > len(prefix + suffix):
            value = _number(row, key)
            if value is not None and value > 0:
                found[key[len(prefix) : -len(suffix)]] = value
    return found


def _counted(found: dict[str, float]) -> str:
    """'name N, other M' (completions per reward call, the log's average)."""
    return ", ".join(f"{name} {value:.3g}" for name, value in found.items())


def _reward_errors(last, step) -> Finding | None:
    """A reward's guard scored completions low because the scorer raised on them."""
    found = per_reward(last, ERROR_METRIC)
    if not found:
        return None
    names = _listed(list(found))
    return Finding(
        "reward_errors",
        "warning",
        step,
        max(found.values()),
        0.0,
        f"a completion made reward {names} raise (completions per call: {_counted(found)}; the "
        "training log's warning names the first error). The reward scores it low and training "
        "continues, but a correct answer may have earned nothing: log the completions "
        "(log_completions: true), run make reward-debug --completions on them to see which, "
        "and fix the reward.",
    )


def _reward_timeouts(last, step) -> Finding | None:
    """A reward's guard scored completions low because they ran past its time budget."""
    found = per_reward(last, TIMEOUT_METRIC)
    if not found:
        return None
    names = _listed(list(found))
    return Finding(
        "reward_timeouts",
        "warning",
        step,
        max(found.values()),
        0.0,
        f"a completion made reward {names} time out: it ran past the reward's time budget "
        f"(completions per call: {_counted(found)}). The reward scores it low and training "
        "continues; log the completions (log_completions: true) and run make reward-debug "
        "--completions on them: if a correct answer times out, raise the reward's time_budget "
        "(CPU seconds, its @reward in rewards.py).",
    )


def _tool_budget_cuts(last, step) -> Finding | None:
    """Tool calls not run because their turn's or rollout's time was spent."""
    cuts = _number(last, BUDGET_CUTS_METRIC)
    if cuts is None or cuts <= 0:
        return None
    return Finding(
        "tool_budget_cuts",
        "warning",
        step,
        cuts,
        0.0,
        f"tool calls ran out of time: {cuts:.3g} calls per rollout were cut by the tools' time "
        f"budget ({BUDGET_CUTS_METRIC} above 0), and the model got an error instead of their "
        "result. Lower max_tool_calling_iterations, or raise tool_turn_seconds / "
        "tool_rollout_seconds / tool_step_seconds.",
    )


def _group_zero_spread(values: list, prompts: list, size: int) -> float | None:
    """Share of complete groups (runs of `size` completions of one prompt) whose scores are all
    equal; None when the batch is not made of whole groups (e.g. a group split across
    processes) or no group was scored."""
    if size < 2 or not values or len(values) % size or len(prompts) != len(values):
        return None
    flat = 0
    counted = 0
    for start in range(0, len(values), size):
        group = [str(p) for p in prompts[start : start + size]]
        if any(p != group[0] for p in group):
            return None
        scores = [float(v) for v in values[start : start + size] if _finite(v)]
        if not scores:
            continue  # every completion unscorable: TRL leaves the group out too
        counted += 1
        flat += max(scores) - min(scores) < 1e-6
    return flat / counted if counted else None


def _finite(value) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def watch_group_spread(func, num_generations: int):
    """The reward function, also logging (TRL's `log_metric`) the share of its prompt groups
    whose completions all scored the same: `rewards/<name>/frac_zero_std`. Same name and
    attributes as `func`, so TRL logs it as before; async functions stay async."""
    if not callable(func) or isinstance(func, str):
        return func
    key = spread_metric(getattr(func, "__name__", "reward"))

    def report(values, kwargs) -> None:
        log_metric = kwargs.get("log_metric")
        share = _group_zero_spread(list(values or []), list(kwargs.get("prompts") or []),
                                   num_generations)  # fmt: skip
        if log_metric is not None and share is not None:
            log_metric(key, share)

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def watched_async(*args, **kwargs):
            values = await func(*args, **kwargs)
            report(values, kwargs)
            return values

        return watched_async

    @functools.wraps(func)
    def watched(*args, **kwargs):
        values = func(*args, **kwargs)
        report(values, kwargs)
        return values

    return watched


class HealthMonitor(TrainerCallback):
    """Runs `assess` at every log on every process (the logged metrics are already gathered, so
    all processes agree and stop together); only the main process writes."""

    def __init__(self, limits: HealthLimits, output_dir: str, stop_on_fatal: bool = False):
        self.limits = limits
        self.path = Path(output_dir) / HEALTH_LOG
        self.stop_on_fatal = stop_on_fatal
        self.active: dict[str, Finding] = {}
        self.stopped_on: list[str] = []  # the fatal checks that stopped the run

    def on_train_begin(self, args, state, control, **kwargs):
        """A resumed run takes back the findings active at its checkpoint (so they are not
        raised twice); every run marks where it began in health.jsonl."""
        saved = (getattr(state, "stateful_callbacks", None) or {}).get(STATE_KEY) or {}
        self.active = {f.check: f for f in map(_finding, saved.get("active", [])) if f}
        if state.is_world_process_zero:
            self._write({"check": None, "event": "started", "step": state.global_step,
                         "active": sorted(self.active)})  # fmt: skip
        self._remember(state)
        return control

    def on_log(self, args, state, control, logs=None, **kwargs):
        findings = {f.check: f for f in assess(state.log_history, self.limits)}
        main = state.is_world_process_zero
        for check, finding in findings.items():
            if check not in self.active and main:
                log = logger.error if finding.severity == "fatal" else logger.warning
                log("health [%s] step %d: %s", check, finding.step, finding.message)
                self._write({**asdict(finding), "event": "raised"})
        for check in set(self.active) - set(findings):
            if main:
                logger.info("health [%s] step %d: cleared", check, state.global_step)
                self._write({"check": check, "step": state.global_step, "event": "cleared"})
        self.active = findings
        self._remember(state)
        fatal = [f for f in findings.values() if f.severity == "fatal"]
        if fatal and self.stop_on_fatal:
            first = not self.stopped_on
            self.stopped_on = [f.check for f in fatal]
            garbage = NON_FINITE in self.stopped_on  # weights not worth a checkpoint
            if main and first:
                logger.error(
                    "health: stopping at step %d on %s (health_stop_on_fatal); %s",
                    state.global_step,
                    ", ".join(self.stopped_on),
                    "no checkpoint of these weights is saved: fix the cause and rerun to resume "
                    "from the last checkpoint before it"
                    if garbage
                    else "a checkpoint is saved, fix the cause and rerun to resume",
                )
            control.should_save = not garbage
            control.should_training_stop = True
        return control

    def _remember(self, state) -> None:
        """The active findings, in the state a checkpoint saves (trainer_state.json)."""
        if getattr(state, "stateful_callbacks", None) is None:
            state.stateful_callbacks = {}
        state.stateful_callbacks[STATE_KEY] = {
            "active": [strict(asdict(f)) for f in self.active.values()]
        }

    def _write(self, event: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(strict(event)) + "\n")


def _finding(saved) -> Finding | None:
    """A finding saved in a checkpoint's state (None when it is not one)."""
    names = {f.name for f in dataclasses.fields(Finding)}
    if not isinstance(saved, dict) or not names <= set(saved):
        return None
    try:
        values = {name: saved[name] for name in names}
        values.update(value=float(values["value"]), limit=float(values["limit"]))
        return Finding(**values)
    except (TypeError, ValueError):
        return None


def read_events(path: Path) -> list[dict]:
    """The events of `health.jsonl` that describe the run as it stands: at each `started` event
    (a resume, or a fresh run in the same folder), the earlier events after its step are
    dropped (a resume trains those steps again). Lines that are not JSON objects are skipped."""
    events: list[dict] = []
    if not path.is_file():
        return events
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        if event.get("event") == "started":
            begin = event.get("step") or 0
            events = [e for e in events if (e.get("step") or 0) <= begin]
        events.append(event)
    return events


def fired(events: list[dict]) -> dict[str, dict]:
    """Per check that was raised, in order of first raise: its worst severity, how often it was
    raised, the first and last step it was raised at, whether it was still active at the end,
    and its last message."""
    summary: dict[str, dict] = {}
    for event in events:
        check, kind = event.get("check"), event.get("event")
        if not check:
            continue
        if kind == "raised":
            entry = summary.setdefault(
                check, {"severity": "warning", "raised": 0, "first_step": event.get("step")}
            )
            if event.get("severity") == "fatal":
                entry["severity"] = "fatal"
            entry["raised"] += 1
            entry.update(last_step=event.get("step"), active=True, message=event.get("message"))
        elif kind == "cleared" and check in summary:
            summary[check].update(active=False, cleared_step=event.get("step"))
    return summary


def warmup_origin(record: dict | None) -> str | None:
    """The format warm-up a model came from, in words, from the run record of the folder it
    was loaded from (`generation.run_record_of`; a `grpo warmup` record has a `warmup` entry);
    None when the model is no warm-up's."""
    warmup = (record or {}).get("warmup")
    if not isinstance(warmup, dict):
        return None
    folder = (record.get("recipe") or {}).get("output_dir") or "a warm-up"
    said = []
    if isinstance(warmup.get("steps"), int):
        batch = warmup.get("batch_size")
        said.append(f"{warmup['steps']} steps" + (f" at batch {batch}" if batch else ""))
    last = (warmup.get("entropy") or {}).get("last")
    if isinstance(last, int | float):
        said.append(f"its completions' entropy ending at {last:.3g}")
    floor = warmup.get("min_entropy")
    if isinstance(floor, int | float):
        said.append(f"--min-entropy {floor:g}")
    return f"the warm-up in {folder}" + (f" ({', '.join(said)})" if said else "")


def limits_from(
    script,
    *,
    beta: float = 0.0,
    max_completion_length: int = 0,
    correctness: str | None = None,
    max_tool_calling_iterations: int | None = None,
    fp16: bool = False,
    warmup: str | None = None,
) -> HealthLimits:
    """The health limits from the recipe's `health_*` fields (a recipe.ScriptArguments), `beta`,
    `max_completion_length`, `max_tool_calling_iterations` (GRPOConfig's; None: no cap),
    `fp16` (mixed precision with a loss scaler) and `warmup` (the warm-up the model came from,
    `warmup_origin`). An offline run (`smoke`) chose its short completions, so clipping is
    expected there and not checked."""
    return HealthLimits(
        zero_std_max=script.health_zero_std_max,
        kl_max=script.health_kl_max,
        entropy_min=script.health_entropy_min,
        clipped_max=1.0 if script.smoke else script.health_clipped_max,
        flat_logs=script.health_flat_logs,
        flat_delta=script.health_flat_delta,
        patience=script.health_patience,
        tool_warmup_logs=script.health_tool_warmup_logs,
        tool_logs=script.health_tool_logs,
        tool_failure_max=script.health_tool_failure_max,
        beta=beta or 0.0,
        correctness=correctness,
        max_completion_length=max_completion_length or 0,
        max_tool_calling_iterations=max_tool_calling_iterations or None,
        fp16=bool(fp16),
        warmup=warmup or None,
    )


def default_limits(**changes) -> HealthLimits:
    """The default thresholds (the recipe dataclass's), with `changes` applied."""
    from ..recipe import ScriptArguments

    return dataclasses.replace(limits_from(ScriptArguments()), **changes)
