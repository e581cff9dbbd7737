"""`grpo evaluate` (`make evaluate`): the task's metric on held-out prompts, for the base model and
the trained one.

    make evaluate                                       # the recipe's base vs its output_dir
    make evaluate ARGS="--model outputs/<run>/merged --limit 200"
    make evaluate ARGS="--pass-k 4"                     # also sample 4 per prompt: pass@4
    make evaluate ARGS="--greedy"                       # greedy decoding for the metrics
    make evaluate ARGS="--smoke"                        # tiny model, sample data, offline

The metric is the task's own (accuracy, test pass rate, schema validity and field F1, label
accuracy), computed by the same reward functions training uses, on one completion per prompt
decoded with the model card's recommended sampling ([tool.grpo] recommended_sampling; greedy
when there is none, or with `--greedy`; `--temperature/--top-p/--top-k` change it). `--pass-k K`
adds pass@K: the share of prompts where at least one of K sampled completions is fully right.
Sampling is seeded (`--seed`), so a rerun gives the same numbers on the same machine. Writes
`predictions.jsonl` and `report.md` (the before/after table, naming the decoding) to
`--output-dir` (default: `<model>/eval`).
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Sequence
from pathlib import Path

from ..callbacks.run_record import RECORD
from ..errors import UserError
from ..generation import (
    Decoding,
    add_decoding_options,
    decoding_from,
    generate,
    load_model_for_inference,
    load_tokenizer_for,
)
from ..project import Project
from ..project import load as load_project
from ..recipe import add_recipe_options, recipe_from
from ..runner import run

logger = logging.getLogger(__name__)


def parse_args(argv: Sequence[str] | None, project: Project):
    parser = argparse.ArgumentParser(
        prog="grpo evaluate",
        description="Task metric on held-out prompts: base model vs trained model.",
        epilog="Other options are recipe overrides, e.g. --dataset_name data/my_eval.jsonl.",
    )
    parser.add_argument("--model", type=Path, help="trained model: output_dir, adapter or merged")
    parser.add_argument("--base", help="base model (default: the recipe's model_name_or_path)")
    parser.add_argument("--no-base", action="store_true", help="evaluate the trained model only")
    parser.add_argument("--split", help="dataset split (default: the recipe's dataset_test_split)")
    parser.add_argument("--limit", type=int, default=100, help="prompts to use (default 100)")
    parser.add_argument(
        "--pass-k",
        type=int,
        default=1,
        help="also sample K per prompt: pass@K (with the decoding when it samples; else with "
        "the model card's sampling, or the recipe's rollout sampling when it has none)",
    )
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    parser.add_argument("--max-new-tokens", type=int, help="default: max_completion_length")
    parser.add_argument("--batch-size", type=int, default=8, help="prompts per generate call")
    parser.add_argument("--output-dir", type=Path, help="default: <model>/eval")
    add_decoding_options(parser, project)
    add_recipe_options(parser)
    args, overrides = parser.parse_known_args(argv)
    if args.pass_k < 1 or args.limit < 1:
        parser.error("--pass-k and --limit must be at least 1")
    return args, overrides


def evaluation_rows(recipe, split: str | None, limit: int):
    """Held-out rows as chat prompts with the columns the metric rewards read."""
    from .. import data
    from ..tokenizer import load_tokenizer

    script_args, task_args, task = recipe.script, recipe.task, recipe.project.task
    split = split or script_args.dataset_test_split
    rows = data.load_training_rows(script_args, task_args, task, split)
    rows = rows.select(range(min(limit, len(rows))))
    tokenizer = load_tokenizer(recipe.model, recipe.training.trust_remote_code)
    kwargs = recipe.training.chat_template_kwargs
    rows, _ = data.prepare(rows, tokenizer, script_args, task_args, task, kwargs)
    return [dict(row) for row in rows]


def held_out(recipe, split: str | None, trained: Path) -> bool:
    """Whether the evaluation data differs from what the model trained on (the run record's
    data, else the recipe's own training data). A local file has no splits: all of it trained."""
    from ..data import is_local

    record = trained / RECORD
    train = json.loads(record.read_text(encoding="utf-8"))["recipe"] if record.is_file() else {}
    train_data = train.get("dataset_name", recipe.script.dataset_name)
    train_split = train.get("dataset_train_split", recipe.script.dataset_train_split)
    data, split = recipe.script.dataset_name, split or recipe.script.dataset_test_split
    if data != train_data:
        return True
    return not is_local(data) and split != train_split


def metric_functions(task, settings: dict):
    """(label, reward) of the task's metrics, with the recipe settings they take bound."""
    from ..rewards import bind

    if not task.metrics:
        raise UserError(f"the {task.name} task lists no metrics (Task.metrics in task.py)")
    return [(label, bind(func, settings)) for label, func in task.metrics]


CALLS = "calls per episode"  # an agent task's extra figure (not a reward: no pass@K)


def pass_k_sampling(decoding: Decoding, recipe) -> Decoding:
    """What pass@K samples with: the metrics' decoding when it samples; when it is greedy, the
    model card's sampling, else the recipe's rollout sampling (what GRPO explores with)."""
    if not decoding.greedy:
        return decoding
    training = recipe.training
    rollouts = Decoding(training.temperature, training.top_p, training.top_k or 0)
    return Decoding.recommended(recipe.project) or rollouts


def completions_for(model_path, rows, args, max_new_tokens: int, decoding, samples: int = 1):
    """`samples` completions per row decoded as `decoding`, from the seed, with a progress bar."""
    from rich.progress import track
    from transformers import set_seed

    tokenizer = load_tokenizer_for(Path(model_path))
    model = load_model_for_inference(Path(model_path))
    set_seed(args.seed)  # each model and pass starts from the same seed: reruns repeat
    batches = [rows[i : i + args.batch_size] for i in range(0, len(rows), args.batch_size)]
    outputs: list[list[str]] = []
    what = "greedy" if decoding.greedy else f"{samples} sampled"
    label = f"{Path(str(model_path)).name}: {what}"
    for batch in track(batches, description=label, transient=True):
        conversations = [row["prompt"] for row in batch for _ in range(samples)]
        if args.agent is not None:  # an agent task: whole rollouts, its tools really called
            texts = agent_rollouts(model, tokenizer, batch, samples, args, max_new_tokens, decoding)
        else:
            texts = generate(
                model, tokenizer, conversations, max_new_tokens, decoding, args.chat_template_kwargs
            )
        outputs += [texts[i : i + samples] for i in range(0, len(texts), samples)]
    return outputs


def agent_rollouts(model, tokenizer, batch, samples, args, max_new_tokens, decoding) -> list:
    """`samples` rollouts per row through the agent loop TRL trains with (environments/
    episodes.py), each on a fresh instance of the row's environment."""
    from ..environments.episodes import run_episodes

    factories, max_iterations = args.agent
    rows = [row for row in batch for _ in range(samples)]
    return run_episodes(
        model, tokenizer, [row["prompt"] for row in rows],
        [factories[row["environment"]]() for row in rows], rows, decoding, max_new_tokens,
        max_iterations, args.chat_template_kwargs,
    )  # fmt: skip


def score(metrics, completions: list[str], rows: list[dict]) -> dict[str, list[float | None]]:
    from ..rewards import call_like_trl

    return {label: call_like_trl(func, completions, rows) for label, func in metrics}


def mean(values) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def evaluate_model(model_path, rows, metrics, args, max_new_tokens) -> tuple[dict, list[dict]]:
    """Summary {metric: value} and one prediction per row."""
    decoded = completions_for(model_path, rows, args, max_new_tokens, args.decoding)
    firsts = [c[0] for c in decoded]
    scores = score(metrics, firsts, rows)
    summary = {label: mean(values) for label, values in scores.items()}
    if args.agent is not None:  # tool calls per episode, beside the metrics
        from ..environments import rollout_calls

        scores[CALLS] = [float(len(rollout_calls(rollout))) for rollout in firsts]
        summary[CALLS] = mean(scores[CALLS])
    predictions = [
        {"prompt": row["prompt"][-1]["content"], "answer": row.get("answer"), "completion": text,
         **{label: scores[label][i] for label in scores}}
        for i, (row, text) in enumerate(zip(rows, firsts, strict=True))
    ]  # fmt: skip
    if args.pass_k > 1:
        label, func = metrics[0]
        top = func.reward_range.high if hasattr(func, "reward_range") else 1.0
        sampled = completions_for(
            model_path, rows, args, max_new_tokens, args.pass_k_decoding, args.pass_k
        )
        solved = []
        for row, texts in zip(rows, sampled, strict=True):
            values = score([(label, func)], texts, [row] * len(texts))[label]
            solved.append(float(any(v is not None and v >= top - 1e-9 for v in values)))
        summary[f"pass@{args.pass_k}"] = mean(solved)
        for prediction, value in zip(predictions, solved, strict=True):
            prediction[f"pass@{args.pass_k}"] = value
    return summary, predictions


def report_table(results: dict[str, dict], rows: int, args) -> str:
    names = list(results)
    metrics = list(next(iter(results.values())))
    how = "greedy" if args.decoding.greedy else "sampled"
    header = ["metric", *names] + (["change"] if len(names) == 2 else [])
    lines = ["| " + " | ".join(header) + " |", "| --- |" + " ---: |" * (len(header) - 1)]
    for metric in metrics:
        values = [results[name].get(metric) for name in names]
        cells = [f"{v:.3f}" if v is not None else "n/a" for v in values]
        if len(values) == 2:
            both = None not in values
            cells.append(f"{values[1] - values[0]:+.3f}" if both else "n/a")
        label = metric if metric.startswith("pass@") else f"{metric} ({how})"
        lines.append("| " + " | ".join([label, *cells]) + " |")
    notes = [f"{rows} held-out prompts"]
    if not args.held_out:
        notes = [
            f"{rows} prompts of the TRAINING data (not held out: pass held-out data with "
            "--dataset_name FILE, or a Hub split with --split)"
        ]
    notes.append(f"metrics decoded: {decoding_note(args.decoding, args.seed, args.project)}")
    if args.pass_k > 1:
        pass_k = decoding_note(args.pass_k_decoding, args.seed, args.project)
        notes.append(f"pass@{args.pass_k}: {args.pass_k} completions per prompt, {pass_k}")
    return "\n".join(lines) + "\n\n" + "".join(f"- {note}\n" for note in notes)


def decoding_note(decoding: Decoding, seed: int, project: Project) -> str:
    """How a report's completions were decoded, with what makes them repeatable."""
    card = Decoding.recommended(project)
    source = " (the model card's recommendation)" if decoding == card else ""
    seeded = "" if decoding.greedy else f", seed {seed}"
    return f"{decoding.describe()}{source}{seeded}"


def evaluate(argv: Sequence[str] | None = None) -> dict[str, dict]:
    from ..training import ensure_offline_model

    project = load_project()
    task = project.task
    args, overrides = parse_args(argv, project)
    recipe = recipe_from(args, overrides, read_only=True, project=project)
    args.project = project
    args.chat_template_kwargs = recipe.training.chat_template_kwargs  # as TRL renders prompts
    args.decoding = decoding_from(args, project)
    args.agent = None  # an agent task: (environment factories, tool-calling turn cap)
    if task.environments is not None:
        cap = recipe.training.max_tool_calling_iterations
        args.agent = (task.environments(recipe.task), cap)
    args.pass_k_decoding = pass_k_sampling(args.decoding, recipe) if args.pass_k > 1 else None
    logger.info("decoding: %s", decoding_note(args.decoding, args.seed, project))
    max_new_tokens = args.max_new_tokens or recipe.training.max_completion_length
    settings = {**recipe.reward_settings(), "max_completion_length": max_new_tokens}
    trained = args.model or Path(recipe.training.output_dir)
    if not Path(trained).exists():
        raise UserError(f"{trained}: no trained model here; train first or pass --model")
    models = {} if args.no_base else {"base": args.base or recipe.model.model_name_or_path}
    models["trained"] = str(trained)
    metrics = metric_functions(task, settings)
    args.held_out = held_out(recipe, args.split, Path(trained))
    if not args.held_out:
        logger.warning(
            "evaluating on the data the model trained on (%s): the scores are not held out; "
            "pass held-out data with --dataset_name FILE (or --split for a Hub dataset)",
            recipe.script.dataset_name,
        )
    ensure_offline_model(recipe)  # --smoke: the tiny model, built on first use
    rows = evaluation_rows(recipe, args.split, args.limit)
    results, predictions = {}, []
    for name, path in models.items():
        logger.info("evaluating %s (%s) on %d prompts", name, path, len(rows))
        results[name], rows_out = evaluate_model(path, rows, metrics, args, max_new_tokens)
        predictions += [{"model": name, **p} for p in rows_out]
    out = args.output_dir or Path(trained) / "eval"
    out.mkdir(parents=True, exist_ok=True)
    with (out / "predictions.jsonl").open("w", encoding="utf-8") as handle:
        for prediction in predictions:
            handle.write(json.dumps(prediction, default=str) + "\n")
    table = report_table(results, len(rows), args)
    title = f"# Evaluation: {task.name} task\n\n" + "\n".join(
        f"- {name}: `{path}`" for name, path in models.items()
    )
    (out / "report.md").write_text(f"{title}\n\n{table}", encoding="utf-8")
    print(table)
    print(f"predictions and report written to {out}")
    return results


def main(argv: Sequence[str] | None = None) -> int:
    return run(evaluate, argv)
