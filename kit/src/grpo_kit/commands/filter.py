"""`grpo filter` (`make filter`), difficulty filtering: keep the training prompts the base model
solves sometimes, not always.

    make filter                                    # k=8 completions per prompt, keep 0.1-0.9
    make filter ARGS="--k 16 --min 0.1 --max 0.6"
    make filter ARGS="--smoke --min 0"             # offline, tiny model

A group whose completions all get the same correctness teaches nothing
about correctness: GRPO's advantage is the reward minus the group's mean, so such a group's
gradient comes from the format and length rewards alone, or is zero. TRL samples no extra groups
to replace them (no dynamic sampling), so this command removes those prompts before training, as
open-r1 does offline (it keeps base pass rates 0.1-0.6; verifiers' rule of thumb: 0% is too hard,
80%+ too easy).

It samples `--k` completions per training prompt from the recipe's base model, with the recipe's
sampling settings (temperature, top_p, top_k, min_p, repetition_penalty, generation_kwargs,
chat_template_kwargs: sampling.py, as the preflight samples), on vLLM when it is
installed and a GPU is present, otherwise with transformers (an agent task samples whole
rollouts through its tool loop, tools really run, with transformers). Each completion is scored
with the task's correctness reward (its first metric); a completion passes at the top of the
reward's range. It writes to `--output-dir` (default `outputs/filter`, `outputs/smoke/filter` with
`--smoke`):

- `pass_rates.jsonl`: one line per prompt: its row among the training rows (evaluate's held-out
  rows left out), pass rate, mean score, kept;
- `pass_rates.png`: the histogram of pass rates, with the band kept;
- `train_filtered.jsonl`: the rows whose pass rate is in [--min, --max], with their original
  columns, so the recipe's column mapping reads it as it is;

and prints the line for `configs/local.yaml` that trains on it. Other options are recipe
overrides (`--dataset_name`, `--max_completion_length`, ...).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from ..recipe import SMOKE_OUTPUT_DIR, Layer, add_recipe_options, recipe_from
from ..runner import run
from ..sampling import Sampler, texts, training_settings
from ..stage_options import FILTER

logger = logging.getLogger(__name__)

DEFAULT_OUTPUT = Path("outputs/filter")
PASS_RATES = "pass_rates.jsonl"
HISTOGRAM = "pass_rates.png"
FILTERED = "train_filtered.jsonl"
DEFAULTS = FILTER  # completions per prompt and the band kept, by default (stage_options.py)
ROW = "_filter_row"  # the data row a prepared prompt came from (removed before scoring)


@dataclass(frozen=True)
class PassRate:
    row: int  # index in the training rows (evaluate's held out; after max_train_samples)
    pass_rate: float  # share of the k completions at the top of the correctness reward's range
    mean_score: float | None  # mean correctness score (None: the reward did not apply)
    kept: bool


def parse_args(argv: Sequence[str] | None):
    parser = argparse.ArgumentParser(
        prog="grpo filter",
        description="Sample k completions per training prompt from the base model, score their "
        "correctness, keep the prompts whose pass rate is in a band.",
        epilog="Other options are recipe overrides, e.g. --dataset_name data/mine.jsonl.",
    )
    parser.add_argument(
        "--k", type=int, default=DEFAULTS["k"], help=f"completions per prompt ({DEFAULTS['k']})"
    )
    parser.add_argument(
        "--min",
        type=float,
        default=DEFAULTS["min"],
        help=f"lowest pass rate kept ({DEFAULTS['min']})",
    )
    parser.add_argument(
        "--max",
        type=float,
        default=DEFAULTS["max"],
        help=f"highest pass rate kept ({DEFAULTS['max']})",
    )
    parser.add_argument("--limit", type=int, help="use only the first N training prompts")
    parser.add_argument("--temperature", type=float, help="default: the recipe's temperature")
    parser.add_argument("--max-new-tokens", type=int, help="default: max_completion_length")
    parser.add_argument("--batch-size", type=int, default=8, help="prompts per generate call")
    parser.add_argument(
        "--engine",
        choices=("auto", "vllm", "transformers"),
        default="auto",
        help="auto: vLLM when installed and a GPU is present, else transformers",
    )
    parser.add_argument(
        "--gpu-memory-utilization", type=float, default=0.9, help="vLLM's share of the GPU"
    )
    parser.add_argument("--output-dir", type=Path, help=f"default {DEFAULT_OUTPUT}")
    add_recipe_options(parser)
    args, overrides = parser.parse_known_args(argv)
    problem = option_problem(args.k, args.min, args.max, args.limit, args.temperature)
    if problem:
        parser.error(problem)
    return args, overrides


def option_problem(
    k: int, low: float, high: float, limit: int | None = None, temperature: float | None = None
) -> str | None:
    """What is wrong with the filter's options (None: nothing); also checks a stage's
    `refilter` (commands/stages.py)."""
    if k < 2:
        return "--k must be at least 2: one completion cannot show a spread"
    if not 0.0 <= low <= high <= 1.0:
        return f"the band needs 0 <= --min <= --max <= 1, got {low} and {high}"
    if limit is not None and limit < 1:
        return "--limit must be at least 1"
    if temperature is not None and temperature <= 0:
        return "--temperature must be above 0: k greedy completions would be identical"
    return None


def correctness_reward(task, settings: dict):
    """(name, reward) of the task's correctness: its first metric, with the recipe's settings."""
    from ..rewards import bind

    if not task.metrics:
        raise UserError(f"the {task.name} task lists no metrics (Task.metrics in task.py)")
    func = task.metrics[0][1]
    return func.__name__, bind(func, settings)


def training_prompts(recipe, tokenizer, limit: int | None):
    """(the data rows, the prompts as training builds them, the data row of each prompt)."""
    from .. import data, heldout

    script_args, task_args, task = recipe.script, recipe.task, recipe.project.task
    rows = heldout.training_rows(script_args, task_args, task)  # never evaluate's rows
    if limit is not None:
        rows = rows.select(range(min(limit, len(rows))))
    rows = rows.add_column(ROW, list(range(len(rows))))
    kwargs = recipe.training.chat_template_kwargs  # prompts measured as training renders them
    prompts, stats = data.prepare(rows, tokenizer, script_args, task_args, task, kwargs)
    origin = list(prompts[ROW])
    logger.info("%d prompts (%d dropped as too long)", stats.kept, stats.dropped)
    return rows.remove_columns(ROW), prompts.remove_columns(ROW), origin


def use_vllm(engine: str) -> bool:
    if engine == "transformers":
        return False
    import torch

    available = importlib.util.find_spec("vllm") is not None and torch.cuda.is_available()
    if engine == "vllm" and not available:
        raise UserError(
            "--engine vllm needs vLLM (pip install -e '.[gpu]') and a CUDA GPU; use --engine "
            "transformers"
        )
    return available


def load_sampler(recipe, tokenizer, settings: dict, prompts, args) -> Sampler:
    """The base model's sampler (sampling.py): an agent task's whole rollouts (tools really run),
    else vLLM when it can run (--engine), else transformers' generate."""
    from .. import sampling
    from ..generation import load_model_for_inference

    model_args, training = recipe.model, recipe.training
    kwargs, task = training.chat_template_kwargs, recipe.project.task
    if task.environments is None and use_vllm(args.engine):
        from vllm import LLM

        llm = LLM(
            model=model_args.model_name_or_path,
            revision=model_args.model_revision,
            dtype=model_args.dtype or "auto",
            trust_remote_code=training.trust_remote_code,
            max_model_len=recipe.script.max_prompt_tokens + settings["max_new_tokens"] + 8,
            gpu_memory_utilization=args.gpu_memory_utilization,
            seed=training.seed,
            **({"quantization": "bitsandbytes"} if model_args.load_in_4bit else {}),
        )
        return sampling.vllm_sampler(llm, tokenizer, settings, kwargs)
    model = load_model_for_inference(
        Path(model_args.model_name_or_path), model_args.dtype or "auto"
    )
    if task.environments is not None:
        return sampling.agent_sampler(
            model, tokenizer, settings, list(prompts), task.environments(recipe.task),
            training.max_tool_calling_iterations, kwargs, batch_size=1, progress="rollouts",
        )  # fmt: skip
    return sampling.transformers_sampler(
        model, tokenizer, settings, kwargs, batch_size=args.batch_size, progress="sampling"
    )


def pass_rates(func, prompts, completions: list[list], origin, low, high) -> list[PassRate]:
    """Each prompt's pass rate: the share of its completions at the top of the reward's range."""
    from ..rewards import call_like_trl

    top = func.reward_range.high if hasattr(func, "reward_range") else 1.0
    found = []
    for index, group in enumerate(completions):
        row, answers = dict(prompts[index]), texts(group)
        scores = call_like_trl(func, answers, [row] * len(answers))
        present = [s for s in scores if s is not None]
        rate = sum(1 for s in present if s >= top - 1e-9) / len(answers)
        mean = sum(present) / len(present) if present else None
        found.append(PassRate(origin[index], rate, mean, low - 1e-9 <= rate <= high + 1e-9))
    return found


def histogram(results: list[PassRate], k: int, low: float, high: float, title: str, path: Path):
    """Bars per pass rate (k + 1 possible values), the kept band shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    levels = [i / k for i in range(k + 1)]
    counts = [sum(1 for r in results if abs(r.pass_rate - level) < 1e-9) for level in levels]
    figure, axes = plt.subplots(figsize=(7, 4))
    axes.axvspan(low, high, color="tab:green", alpha=0.15, label=f"kept: {low:g} to {high:g}")
    axes.bar(levels, counts, width=0.8 / k, color="tab:blue")
    axes.set(title=title, xlabel=f"pass rate ({k} samples per prompt)", ylabel="prompts")
    axes.set_xlim(-0.5 / k - 0.02, 1 + 0.5 / k + 0.02)
    axes.legend()
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.grid(alpha=0.3, axis="y")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def write_jsonl(path: Path, rows) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")


def summary(results: list[PassRate], low: float, high: float) -> str:
    n = len(results)
    never = sum(1 for r in results if r.pass_rate == 0.0)
    always = sum(1 for r in results if r.pass_rate == 1.0)
    kept = sum(1 for r in results if r.kept)
    return (
        f"{n} prompts: {never} never solved ({never / n:.0%}), {always} always solved "
        f"({always / n:.0%}), {kept} kept in [{low:g}, {high:g}] ({kept / n:.0%})"
    )


def filter_prompts(
    argv: Sequence[str] | None = None,
    sampler: Sampler | None = None,
    extra: Layer | None = None,
    advise: bool = True,
) -> Path:
    """Write pass rates, the histogram and the filtered data; returns the filtered file.
    `sampler` replaces the model (tests); `extra` is one more recipe layer (a stage's keys, when
    `grpo stages` refilters); `advise: False` leaves out how to train on the file (stages
    chain it themselves)."""
    from .. import data
    from ..tokenizer import load_tokenizer
    from ..training import ensure_offline_model

    args, overrides = parse_args(argv)
    recipe = recipe_from(args, overrides, read_only=True, extra=extra)
    task = recipe.project.task
    out = args.output_dir or (
        SMOKE_OUTPUT_DIR / "filter" if recipe.script.smoke else DEFAULT_OUTPUT
    )
    settings = training_settings(
        recipe, temperature=args.temperature, max_new_tokens=args.max_new_tokens
    )
    reward_settings = {
        **recipe.reward_settings(),
        "max_completion_length": settings["max_new_tokens"],
    }
    name, func = correctness_reward(task, reward_settings)
    ensure_offline_model(recipe)
    tokenizer = load_tokenizer(recipe.model, recipe.training.trust_remote_code)
    rows, prompts, origin = training_prompts(recipe, tokenizer, args.limit)
    if sampler is None:
        from transformers import set_seed

        set_seed(recipe.training.seed)
        sampler = load_sampler(recipe, tokenizer, settings, prompts, args)
    model = recipe.model.model_name_or_path
    logger.info(
        "sampling %d completions for each of %d prompts from %s", args.k, len(prompts), model
    )
    completions = sampler(list(prompts["prompt"]), args.k)
    if len(completions) != len(prompts) or any(len(c) != args.k for c in completions):
        raise RuntimeError(f"expected {args.k} completions for each of {len(prompts)} prompts")
    results = pass_rates(func, prompts, completions, origin, args.min, args.max)

    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / PASS_RATES, (vars(r) for r in results))
    title = f"{name}: {Path(str(model)).name}, {len(results)} prompts"
    histogram(results, args.k, args.min, args.max, title, out / HISTOGRAM)
    print(summary(results, args.min, args.max))
    print(f"pass rates: {out / PASS_RATES}; histogram: {out / HISTOGRAM}")
    kept = [r.row for r in results if r.kept]
    if not kept:
        raise UserError(
            f"no prompt has a pass rate in [{args.min:g}, {args.max:g}], so there is nothing to "
            "train on: with every prompt failed the task is too hard for this model (an easier "
            "dataset, a bigger model, a format warm-up: make stages), with every prompt solved "
            "too easy; to keep them anyway, widen the band (--min 0 / --max 1)"
        )
    # The rows as the recipe reads them, class labels as their names (what the rewards compare).
    written = data._label_names(rows, recipe.script.answer_column).select(kept)
    filtered = out / FILTERED
    write_jsonl(filtered, written.to_list())
    print(f"kept {len(kept)} of {len(results)} prompts in {filtered}")
    if not advise:
        return filtered
    if recipe.script.smoke:
        print(f"train on them: make train ARGS='--smoke --dataset_name {filtered}'")
    else:
        print(
            "train on them: add this line to configs/local.yaml (your settings; the recipe's "
            f"column mapping reads the file as it is)\n\n    dataset_name: {filtered}\n\n"
            "`make evaluate` then reads this file too: pass --dataset_name with your held-out data"
        )
    return filtered


def main(argv: Sequence[str] | None = None) -> int:
    return run(filter_prompts, argv)
