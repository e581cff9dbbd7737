"""The signal preflight: whether GRPO can learn anything from this recipe on this model, checked
before the first (paid) step.

GRPO's advantage is a completion's reward minus the mean of its group (the `num_generations`
completions of one prompt). A group whose completions all score alike teaches nothing, and a run
in which every group of every reward scores alike trains nothing at all: "reward is always 0",
"loss is 0", the most common complaint about GRPO runs, usually met with a small or unfamiliar
model that never writes the format the rewards read, or whose every completion is cut off at
`max_completion_length`. The health monitor sees it from the logs, but only after the model has
loaded and the first steps have been paid for.

`check(recipe, tokenizer)` samples the base model on a few training prompts (`prompts`, chosen
with the recipe's seed) x `num_generations` completions, with the recipe's own sampling
(temperature, top_p, top_k, min_p, repetition_penalty, generation_kwargs, chat_template_kwargs,
max_completion_length), scores every reward of the recipe, and returns a `Signal`: per reward
its mean and the share of groups whose completions differ, with the clip rate and the
completion-length percentiles. `Signal.table()` shows it in one table; `Signal.learns` says
whether training can learn: some group is a *teaching* group, one whose weighted total of the
rewards that teach the task (every reward but the length rewards) differs within it. A length
reward's spread never counts: length alone trains completion length and nothing else, and the
verdict counts the teaching groups (`teaching_spread`), not the total reward's, so it agrees with
the table. `advice()` says what to change when it cannot, naming the cause: completions cut off
(raise max_completion_length, turn thinking off), the format never written (warm it up first
with `grpo warmup`, show it in the system prompt: the correctness reward cannot score an answer
it cannot find, so filtering or a larger model is not the cure), or prompts never solved though
the format is written (too hard: pick prompts with `grpo filter`, or a larger model). `refuse`
turns a run without signal into one `NoSignal` error with that advice; `grpo preflight` is the
command, and `training.run` calls `check` first unless the recipe says `preflight: false`.
"""

from __future__ import annotations

import gc
import logging
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import sampling
from .errors import UserError
from .sampling import Completion, Sampler

logger = logging.getLogger(__name__)

LENGTH_MARGIN = 1.25  # max_completion_length advised: the p95 length x this, rounded up
LENGTH_STEP = 64  # ... to a multiple of this
CLIPPED_ADVICE = 0.3  # a clip rate above this gets the length advice (the health check's default)
BATCH_COMPLETIONS = 64  # completions per generate call, at most (whole groups)


@dataclass(frozen=True)
class RewardSignal:
    """One reward over the sampled groups."""

    name: str
    kind: str  # correctness, format, length (Reward.kind), or "other"
    weight: float
    mean: float | None  # over the completions it scored (None: it scored none)
    spread: int  # groups whose scores differ
    low: float | None = None  # the reward's range, when it declares one
    high: float | None = None

    @property
    def at_bottom(self) -> bool:
        return self.mean is not None and self.low is not None and self.mean <= self.low + 1e-9

    @property
    def at_top(self) -> bool:
        return self.mean is not None and self.high is not None and self.mean >= self.high - 1e-9


@dataclass(frozen=True)
class Signal:
    """What the preflight measured (see the module docstring)."""

    model: str
    rewards: tuple[RewardSignal, ...]
    groups: int
    generations: int
    total_spread: int  # groups whose weighted total reward differs
    clip_rate: float | None  # share of completions cut off at max_completion_length
    lengths: tuple[int, int, int] | None  # completion tokens: p50, p95, max
    max_completion_length: int
    sampling: str  # how the completions were sampled, in words
    thinking: bool = False  # the recipe renders prompts with thinking on
    # groups whose weighted total of the teaching rewards (all but the length rewards) differs
    teaching_spread: int = 0

    @property
    def teaching(self) -> tuple[RewardSignal, ...]:
        """The weighted rewards that teach the task: every one but the length rewards."""
        return tuple(r for r in self.rewards if r.weight and r.kind != "length")

    @property
    def learns(self) -> bool:
        """Some group's teaching rewards differ within it (a length reward's spread never
        counts: it trains completion length and nothing else)."""
        return self.teaching_spread > 0

    @property
    def length_only(self) -> bool:
        return not self.learns and any(r.spread and r.weight for r in self.rewards)

    def _counts(self, rewards) -> str:
        """'name n/N, ...': each reward's groups with spread, as the table shows them."""
        return ", ".join(f"{r.name} {r.spread}/{self.groups}" for r in rewards)

    def verdict(self) -> str:
        groups = f"{self.groups} group(s) of {self.generations}"
        lengths = [r for r in self.rewards if r.weight and r.kind == "length" and r.spread]
        if self.learns:
            varied = [r for r in self.teaching if r.spread]
            aside = (
                f"; {self._counts(lengths)} only train{'s' if len(lengths) == 1 else ''} length"
                if lengths
                else ""
            )
            return (
                f"training can learn: the rewards that teach the task vary within "
                f"{self.teaching_spread} of {groups} ({self._counts(varied)}){aside}"
            )
        if self.length_only:
            varied = [r for r in self.rewards if r.spread and r.weight]
            return (
                f"NO SIGNAL beyond length: only {', '.join(r.name for r in varied)} vary within a "
                f"group ({self._counts(varied)}), so a run would train completion length and "
                "nothing else"
            )
        return (
            f"NO SIGNAL: every reward scores the completions of each of {groups} alike, so the "
            "advantages, the loss and the gradient are all zero"
        )

    def table(self) -> str:
        """The one table: every reward, then the completions' clip rate and lengths."""
        head = (
            f"signal preflight: {self.groups} prompts x {self.generations} completions of "
            f"{self.model}, {self.sampling}, max_completion_length {self.max_completion_length}"
        )
        lines = [
            head,
            "",
            "| reward | kind | weight | mean | groups with spread |",
            "| --- | --- | ---: | ---: | ---: |",
        ]
        for r in self.rewards:
            mean = "n/a" if r.mean is None else f"{r.mean:.3f}"
            lines.append(
                f"| {r.name} | {r.kind} | {r.weight:g} | {mean} | {r.spread}/{self.groups} |"
            )
        lines.append(f"| total (weighted) | | | | {self.total_spread}/{self.groups} |")
        lines.append(
            f"| teaching (weighted, no length) | | | | {self.teaching_spread}/{self.groups} |"
        )
        if self.clip_rate is not None:
            lines.append(
                f"| clipped at {self.max_completion_length} tokens | completions | | "
                f"{self.clip_rate:.3f} | |"
            )
        if self.lengths is not None:
            p50, p95, top = self.lengths
            lines.append(f"| length p50 / p95 / max | tokens | | {p50} / {p95} / {top} | |")
        return "\n".join(lines) + f"\n\nverdict: {self.verdict()}\n"

    def advice(self) -> list[str]:
        """What to change, most useful first (also printed when training can learn)."""
        found: list[str] = []
        clipped = self.clip_rate is not None and self.clip_rate > CLIPPED_ADVICE
        if clipped and self.lengths is not None:
            found.append(
                f"{self.clip_rate:.0%} of the completions hit max_completion_length "
                f"({self.max_completion_length}): raise it to {advised_length(self)} (the p95 "
                f"length + {LENGTH_MARGIN - 1:.0%}, or twice the cap when most are cut)"
            )
        if clipped and self.thinking:
            found.append(
                "turn thinking off (chat_template_kwargs: {enable_thinking: false}): the model "
                "spends the budget reasoning before it answers"
            )
        formats = [r for r in self.rewards if r.kind == "format" and r.weight]
        unwritten = self.format_unwritten
        if formats and not any(r.spread for r in formats):
            names = ", ".join(r.name for r in formats)
            if unwritten:
                found.append(
                    f"the base model never writes the format ({names} at their lowest on every "
                    "completion): warm the format up first (grpo warmup: a short supervised "
                    "fine-tune on completions in the format; then train from its merged folder), "
                    "and show a worked example of the format in system_prompt"
                )
            elif not all(r.at_top for r in formats):  # at the top: the format is written
                found.append(
                    f"{names} score every completion of a group alike: show a worked example of "
                    "the format in system_prompt, or warm the format up first (grpo warmup)"
                )
        correctness = [r for r in self.rewards if r.kind == "correctness" and r.weight]
        if correctness and not any(r.spread for r in correctness):
            names = ", ".join(r.name for r in correctness)
            if all(r.at_top for r in correctness):
                found.append(
                    f"{names} has no spread (the prompts are solved on every try: too easy): "
                    "keep the prompts this model solves sometimes with grpo filter (make filter)"
                )
            elif unwritten:
                found.append(
                    f"{names} never scores because no completion is in the format it reads: the "
                    "cause is the format, not the prompts' difficulty: warm the format up (grpo "
                    "warmup), then run make preflight again"
                )
            else:
                found.append(
                    f"{names} has no spread (the prompts are never solved, though the format is "
                    "written: too hard for this model): keep the prompts this model solves "
                    "sometimes with grpo filter (make filter), or a larger model"
                )
        return found

    @property
    def format_unwritten(self) -> bool:
        """The model never writes the format: every weighted format reward scores every
        completion at its lowest (or 0)."""
        formats = [r for r in self.rewards if r.kind == "format" and r.weight]
        return bool(formats) and all(not r.spread and (r.at_bottom or r.mean == 0) for r in formats)


def advised_length(signal: Signal) -> int:
    """max_completion_length to try: the p95 completion length plus the margin, rounded up to
    a multiple of LENGTH_STEP; twice the cap when the p95 completion is cut off."""
    assert signal.lengths is not None
    p95 = signal.lengths[1]
    wanted = 2 * signal.max_completion_length if p95 >= signal.max_completion_length else p95
    wanted = max(wanted * LENGTH_MARGIN, signal.max_completion_length + LENGTH_STEP)
    return int(math.ceil(wanted / LENGTH_STEP) * LENGTH_STEP)


class NoSignal(UserError):
    """The recipe cannot train anything on this model (the table was shown before)."""


# --- sampling (sampling.py samples; the model is loaded here as training loads it) ----------------


def load_base_model(recipe):
    """The recipe's model as training loads it (dtype, 4-bit when asked), for generation."""
    import torch
    from trl import get_quantization_config

    from .generation import configure_cpu_threads, default_device, model_class

    model_args, training = recipe.model, recipe.training
    name = model_args.model_name_or_path
    quantization = get_quantization_config(model_args)
    cpu = training.use_cpu or default_device() == "cpu"
    if cpu:
        configure_cpu_threads()
    dtype = (
        model_args.dtype if model_args.dtype in (None, "auto") else getattr(torch, model_args.dtype)
    )
    kwargs = {"dtype": dtype, "trust_remote_code": training.trust_remote_code,
              "revision": model_args.model_revision}  # fmt: skip
    if quantization is not None:
        device = {"": torch.cuda.current_device()} if torch.cuda.is_available() else None
        kwargs.update(quantization_config=quantization, device_map=device)
    try:
        model = model_class(name).from_pretrained(name, **kwargs)
    except OSError as err:
        from .errors import ModelError, hub_hint

        raise ModelError(hub_hint(name, err)) from err
    if quantization is None:
        model = model.to("cpu" if cpu else default_device())
    return model.eval()


# --- the check ------------------------------------------------------------------------------------


def preflight_rows(recipe, tokenizer, count: int) -> list[dict]:
    """`count` training prompts, prepared as training prepares them, chosen with the recipe's
    seed (GRPO draws its prompts at random too)."""
    from . import data, heldout

    script, task_args, task = recipe.script, recipe.task, recipe.project.task
    rows = heldout.training_rows(script, task_args, task)  # never evaluate's rows
    kwargs = recipe.training.chat_template_kwargs
    rows, _ = data.prepare(rows, tokenizer, script, task_args, task, kwargs)
    if len(rows) == 0:
        raise UserError(
            f"preflight: no training prompt of {script.dataset_name} fits max_prompt_tokens "
            f"({script.max_prompt_tokens})"
        )
    order = list(range(len(rows)))
    random.Random(recipe.training.seed).shuffle(order)
    return [dict(rows[i]) for i in order[: max(1, count)]]


def score(func, completions: list[Completion], rows: list[dict]) -> list[float | None]:
    """A reward called as GRPOTrainer calls it (rewards.call_like_trl), with the real token ids,
    so length rewards count tokens as in training."""
    from .rewards.base import TRL_RESERVED_COLUMNS

    columns = {k: [row[k] for row in rows] for k in rows[0] if k not in TRL_RESERVED_COLUMNS}
    texts = [c.text for c in completions]
    return func(
        prompts=[row.get("prompt", []) for row in rows],
        completions=[t if isinstance(t, list) else [{"role": "assistant", "content": t}]
                     for t in texts],
        completion_ids=[c.tokens for c in completions],
        trainer_state=None,
        log_extra=lambda *args, **kwargs: None,
        log_metric=lambda *args, **kwargs: None,
        **columns,
    )  # fmt: skip


def differs(values: Sequence[float | None]) -> bool:
    present = [v for v in values if v is not None]
    return len(present) > 1 and max(present) - min(present) > 1e-9


def percentile(values: Sequence[int], share: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


def measure(recipe, rows: list[dict], groups: list[list[Completion]], model: str, sampling: str):
    """The `Signal` of sampled groups (one per row), scored with the recipe's rewards."""
    from . import rewards

    script, training, task = recipe.script, recipe.training, recipe.project.task
    funcs = rewards.resolve(script.reward_funcs, task.reward_table, recipe.reward_settings())
    weights = list(training.reward_weights or [1.0] * len(funcs))
    kinds = {r.name: r.kind for r in task.rewards}
    per_reward = []
    totals = [[0.0] * len(group) for group in groups]
    teaching = [[0.0] * len(group) for group in groups]  # the same without the length rewards
    for index, (name, func) in enumerate(zip(script.reward_funcs, funcs, strict=True)):
        weight = float(weights[index]) if index < len(weights) else 1.0
        scored = [
            score(func, group, [row] * len(group)) for row, group in zip(rows, groups, strict=True)
        ]
        values = [v for group in scored for v in group if v is not None]
        kind = kinds.get(str(name), "other")
        for table in (totals,) if kind == "length" else (totals, teaching):
            for total, group in zip(table, scored, strict=True):
                for i, value in enumerate(group):
                    total[i] += weight * (value if value is not None else 0.0)
        span = getattr(func, "reward_range", None)
        per_reward.append(
            RewardSignal(
                name=str(name).rpartition(".")[2],
                kind=kind,
                weight=weight,
                mean=sum(values) / len(values) if values else None,
                spread=sum(differs(group) for group in scored),
                low=getattr(span, "low", None),
                high=getattr(span, "high", None),
            )
        )
    flat = [c for group in groups for c in group]
    counted = [c for c in flat if c.tokens is not None]
    lengths = [len(c.tokens) for c in counted]
    cut = [c.clipped for c in flat if c.clipped is not None]
    kwargs = training.chat_template_kwargs or {}
    return Signal(
        model=model,
        rewards=tuple(per_reward),
        groups=len(groups),
        generations=max((len(g) for g in groups), default=0),
        total_spread=sum(differs(total) for total in totals),
        clip_rate=sum(cut) / len(cut) if cut else None,
        lengths=(percentile(lengths, 0.5), percentile(lengths, 0.95), max(lengths))
        if lengths
        else None,
        max_completion_length=training.max_completion_length,
        sampling=sampling,
        thinking=bool(kwargs.get("enable_thinking")),
        teaching_spread=sum(differs(total) for total in teaching),
    )


def check(
    recipe,
    tokenizer,
    *,
    prompts: int | None = None,
    generations: int | None = None,
    sampler: Sampler | None = None,
) -> Signal:
    """Sample, score and measure (see the module docstring). `prompts` defaults to the recipe's
    `preflight_prompts` (default sampling.PREFLIGHT_PROMPTS), `generations` to its
    num_generations; `sampler` replaces the model (tests)."""
    count = prompts or recipe.script.preflight_prompts
    k = generations or recipe.training.num_generations
    rows = preflight_rows(recipe, tokenizer, count)
    settings = sampling.training_settings(recipe)
    name = recipe.model.model_name_or_path
    logger.info(
        "preflight: sampling %d prompts x %d completions of %s before training", len(rows), k, name
    )
    model = None
    if sampler is None:
        model = load_base_model(recipe)
        task, kwargs = recipe.project.task, recipe.training.chat_template_kwargs
        if task.environments is not None:  # an agent task: whole rollouts, tools really run
            factories = task.environments(recipe.task)
            cap = recipe.training.max_tool_calling_iterations
            sampler = sampling.agent_sampler(
                model, tokenizer, settings, rows, factories, cap, kwargs, batch_size=1
            )
        else:
            sampler = sampling.transformers_sampler(model, tokenizer, settings, kwargs)
    try:
        from transformers import set_seed

        set_seed(recipe.training.seed)
        conversations = [row["prompt"] for row in rows]
        step = max(1, BATCH_COMPLETIONS // k)  # prompts per generate call
        groups = [
            group
            for start in range(0, len(conversations), step)
            for group in sampler(conversations[start : start + step], k)
        ]
    finally:
        sampler = model = None  # the preflight's copy of the model goes before training's loads
        release()
    return measure(recipe, rows, groups, str(name), sampling.describe(settings))


def release() -> None:
    """Free the memory of a model no longer referenced (CPU and GPU)."""
    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def report(signal: Signal, out: Path | None = None) -> str:
    """The table, the verdict and the advice as text (written to `out` when given)."""
    advice = signal.advice()
    text = signal.table()
    if advice:
        text += "\nwhat to change:\n" + "".join(f"- {line}\n" for line in advice)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    return text


def refuse(signal: Signal) -> None:
    """Raise `NoSignal` for a run that cannot learn, with the first advice and how to override."""
    if signal.learns:
        return
    advice = signal.advice()
    first = f"; {advice[0]}" if advice else ""
    raise NoSignal(
        f"preflight: {signal.verdict()}{first}. Run anyway with --preflight_refuse false (or "
        "preflight: false in the recipe)"
    )
